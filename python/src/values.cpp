// Values: Gid, Cidr, the errc names.
#include "common.hpp"

#include <gidpolicy/gid.hpp>

#include <pybind11/operators.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gidpolicy::python {

void bind_values(py::module_& m) {
  m.def(
      "errc_names",
      [] {
        std::vector<std::string> names;
        for (int i = 1; i < 256; ++i) {
          const std::string_view n = to_string(static_cast<errc>(i));
          if (!n.empty()) names.emplace_back(n);
        }
        return names;
      },
      "Every errc name a gidpolicy.Error can carry, in the library's order.");

  py::class_<Gid>(m, "Gid", "The 16 bytes of an RDMA GID in wire order, as an immutable value.")
      .def(py::init([](const py::object& value) { return to_gid(value); }), py::arg("value"),
           "From its text (any form Gid.parse reads), its 16 bytes, or another Gid.")
      .def_static(
          "parse", [](const std::string& text) { return unwrap(Gid::parse(text)); }, py::arg("text"),
          "Compressed IPv6, ::ffff:a.b.c.d, or the 8x4 hex form; no surrounding whitespace. "
          "Raises Error (invalid_gid_text) naming the position.")
      .def_static(
          "from_bytes", [](const py::object& raw) { return to_gid(raw, "raw"); }, py::arg("raw"),
          "From exactly 16 bytes in wire order (bytes, bytearray, memoryview), e.g. ibv_gid.raw.")
      .def_static(
          "ipv4_mapped",
          [](const py::object& address) {
            if (py::isinstance<py::int_>(address)) {
              const auto v = address.cast<long long>();
              if (v < 0 || v > 0xffffffffLL)
                invalid("ipv4_mapped: an IPv4 address is 0 to 2**32-1, found " + std::to_string(v));
              return Gid::ipv4_mapped(static_cast<std::uint32_t>(v));
            }
            if (!py::isinstance<py::str>(address)) wrong_type("address", "str or int", address);
            const std::string text = address.cast<std::string>();
            auto g = unwrap(parse_address(text));
            if (!g.is_ipv4_mapped())
              invalid("ipv4_mapped: expected an IPv4 address, found " + quote_arg(text));
            return g;
          },
          py::arg("address"), "::ffff:a.b.c.d for an IPv4 address given as 'a.b.c.d' or as an int.")
      .def("__bytes__",
           [](const Gid& g) { return py::bytes(reinterpret_cast<const char*>(g.bytes().data()), 16); })
      .def_property_readonly(
          "raw", [](const Gid& g) { return py::bytes(reinterpret_cast<const char*>(g.bytes().data()), 16); },
          "The 16 bytes, as ibv_gid.raw holds them.")
      .def("__str__", &Gid::to_string)
      .def("__repr__", [](const Gid& g) { return "Gid('" + g.to_string() + "')"; })
      .def("to_string", &Gid::to_string, "Compressed RFC 5952 form; ::ffff:a.b.c.d for IPv4-mapped.")
      .def("to_full_string", &Gid::to_full_string, "8 groups of 4 hex digits, as sysfs prints it.")
      .def_property_readonly("is_zero", &Gid::is_zero, "All 16 bytes zero (an empty slot).")
      .def_property_readonly("is_ipv4_mapped", &Gid::is_ipv4_mapped,
                             "JACCL's rule: bytes 0-9 zero, 10-11 ff.")
      .def_property_readonly("is_link_local", &Gid::is_link_local,
                             "fe80::/10: not routed on RoCE/Thunderbolt.")
      .def_property_readonly("is_ipv4_link_local", &Gid::is_ipv4_link_local, "IPv4-mapped 169.254.0.0/16.")
      .def_property_readonly("is_unique_local", &Gid::is_unique_local, "fc00::/7.")
      .def_property_readonly("interface_id", &Gid::interface_id, "Bytes 8-15 as a big-endian int.")
      .def_property_readonly("subnet_prefix", &Gid::subnet_prefix, "Bytes 0-7 as a big-endian int.")
      .def_property_readonly(
          "ipv4",
          [](const Gid& g) -> std::optional<std::string> {
            if (!g.is_ipv4_mapped()) return std::nullopt;
            return g.ipv4_string();
          },
          "'a.b.c.d' for an IPv4-mapped GID, None otherwise.")
      .def(
          "in_prefix",
          [](const Gid& g, const std::string& cidr) { return unwrap(Cidr::parse(cidr)).contains(g); },
          py::arg("cidr"), "Whether the GID is inside the CIDR ('10.0.0.0/8', 'fd00::/8').")
      .def(py::self == py::self)
      .def(py::self != py::self)
      .def(py::self < py::self)
      .def(py::self <= py::self)
      .def(py::self > py::self)
      .def(py::self >= py::self)
      .def("__hash__", [](const Gid& g) { return std::hash<Gid>{}(g); })
      .def(py::pickle(
          [](const Gid& g) { return py::bytes(reinterpret_cast<const char*>(g.bytes().data()), 16); },
          [](const py::bytes& raw) { return to_gid(raw, "pickled Gid"); }));

  py::class_<Cidr>(m, "Cidr", "An IPv6 or IPv4 prefix over GIDs (IPv4 stored IPv4-mapped).")
      .def(py::init([](const std::string& text) { return unwrap(Cidr::parse(text)); }), py::arg("text"))
      .def_static(
          "parse", [](const std::string& text) { return unwrap(Cidr::parse(text)); }, py::arg("text"),
          "'10.0.0.0/8', 'fd00::/8', '::ffff:10.0.0.0/104'; a bare address is a host route. Raises Error "
          "(invalid_field).")
      .def_readonly("network", &Cidr::network)
      .def_readonly("prefix_len", &Cidr::prefix_len)
      .def(
          "contains", [](const Cidr& c, const py::object& g) { return c.contains(to_gid(g)); },
          py::arg("gid"))
      .def("__contains__", [](const Cidr& c, const py::object& g) { return c.contains(to_gid(g)); })
      .def("__str__", &Cidr::to_string)
      .def("__repr__", [](const Cidr& c) { return "Cidr('" + c.to_string() + "')"; })
      .def(py::self == py::self)
      .def("__hash__", [](const Cidr& c) { return std::hash<Gid>{}(c.network) ^ c.prefix_len; })
      .def(pickle_by_constructor<Cidr>([](const Cidr& c) { return py::make_tuple(c.to_string()); }));

  m.def(
      "parse_address", [](const std::string& text) { return unwrap(parse_address(text)); }, py::arg("text"),
      "An IPv4 dotted quad (returned IPv4-mapped) or an IPv6/GID text, as a Gid.");
}

}  // namespace gidpolicy::python
