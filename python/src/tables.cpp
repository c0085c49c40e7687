// Tables: GidEntry, PortInfo, GidTable, reading and writing every table format, the live host.
#include "common.hpp"

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gidpolicy::python {
namespace {

EntryState entry_state_arg(std::string_view name) {
  for (EntryState s : {EntryState::valid, EntryState::empty, EntryState::unreadable})
    if (to_string(s) == name) return s;
  invalid("entry state: expected valid, empty or unreadable, found " + quote_arg(name));
}

PortState port_state_arg(std::string_view name) {
  if (auto s = port_state_from_string(name)) return *s;
  invalid("port state: expected nop, down, init, armed, active or active_defer, found " + quote_arg(name));
}

LinkLayer link_layer_arg(std::string_view name) {
  if (auto l = link_layer_from_string(name)) return *l;
  invalid("link layer: expected infiniband, ethernet, thunderbolt or a number, found " + quote_arg(name));
}

Holes holes_arg(std::string_view name) {
  for (Holes h : {Holes::empty, Holes::not_shown})
    if (to_string(h) == name) return h;
  invalid("holes: expected empty or not_shown, found " + quote_arg(name));
}

formats::Format format_arg(std::string_view name) {
  if (auto f = formats::format_from_string(name)) return *f;
  invalid("format: expected json, devinfo, show_gids or sysfs, found " + quote_arg(name));
}

// A text input as the formats read it: str as UTF-8, bytes as they are (so binary data is
// refused by the readers' own check), capped like a file.
std::string text_arg(const py::object& text, std::size_t max_bytes) {
  std::string out;
  if (py::isinstance<py::bytes>(text) || py::isinstance<py::bytearray>(text)) {
    out = py::isinstance<py::bytes>(text) ? std::string(text.cast<py::bytes>())
                                          : std::string(text.cast<py::bytearray>());
  } else if (py::isinstance<py::str>(text)) {
    out = text.cast<std::string>();
  } else {
    wrong_type("text", "str or bytes", text);
  }
  if (out.size() > max_bytes)
    throw Failure{Error(errc::parse_error, "input of " + std::to_string(out.size()) +
                                               " bytes is larger than " + std::to_string(max_bytes) +
                                               " bytes (max_bytes)")};
  return out;
}

// The library loaded once per process and never unloaded, as a program linked against it keeps
// it: a verbs library may leave threads running (the drop-in fake's table watcher does; providers
// may too) that would run unmapped code after a dlclose, and Python lives on after the call.
// A load that failed is not kept, so a library installed later is found.
// The largest values the JSON reader accepts (formats/json.cpp): an index below 2^31 (as
// GidTable::make requires), an errno of at most 4095 (the kernel's MAX_ERRNO), a gid_tbl_len of at
// most 2^31.
constexpr std::uint32_t kMaxEntryIndex = 0x7fffffff;
constexpr int kMaxErrno = 4095;
constexpr std::uint32_t kMaxGidTblLen = 0x80000000u;

verbs::DlopenApi* loaded_api(const std::optional<std::string>& library) {
  if (library) checked_path(*library, "library");
  static std::map<std::string, std::unique_ptr<verbs::DlopenApi>>* kept =
      new std::map<std::string, std::unique_ptr<verbs::DlopenApi>>();  // never destroyed: see above
  const std::string key = library.value_or("");
  if (auto it = kept->find(key); it != kept->end()) return it->second.get();
  auto api = library ? std::make_unique<verbs::DlopenApi>(*library) : std::make_unique<verbs::DlopenApi>();
  if (!api->loaded()) throw Failure{api->load_error()};
  return kept->emplace(key, std::move(api)).first->second.get();
}

// Every port of every device (or of `device`), as `gidpolicy show` reads them: a port that is not
// active is read too (its state says so), and a device's ports are 1, 2, ... until one fails.
std::vector<GidTable> live_tables(const std::optional<std::string>& device, std::optional<std::uint32_t> port,
                                  const std::optional<std::string>& library) {
  if (device) checked_name(*device, NameKind::device, "device");
  if (port) checked_port(*port, "port");
  verbs::DlopenApi* api = loaded_api(library);
  std::vector<std::string> names;
  if (device) {
    names.push_back(*device);
  } else {
    names = unwrap(api->device_names());
  }
  std::vector<GidTable> out;
  const verbs::SnapshotOptions options{.allow_inactive = true};
  for (const auto& name : names) {
    if (port) {
      auto t = verbs::snapshot(*api, name, *port, options);
      if (!t) throw Failure{Error(t.error().code, name + ": " + t.error().detail)};
      out.push_back(std::move(t).value());
      continue;
    }
    for (std::uint32_t p = 1; p <= 255; ++p) {
      auto t = verbs::snapshot(*api, name, p, options);
      if (!t) {
        if (p == 1) throw Failure{Error(t.error().code, name + ": " + t.error().detail)};
        break;  // past the device's last port
      }
      out.push_back(std::move(t).value());
    }
  }
  return out;
}

// GidEntry(...) from Python, and from a pickle (the same rules either way).
GidEntry make_entry(std::uint32_t index, const py::object& gid, const std::string& type,
                    const std::string& netdev, std::uint32_t ifindex, const std::string& state,
                    int read_error) {
  // The readers' rules (formats/json.cpp): what a value built here holds, write_tables()
  // writes and read_tables() reads back.
  if (index > kMaxEntryIndex)
    invalid("GidEntry index: expected 0 to " + std::to_string(kMaxEntryIndex) + ", found " +
            std::to_string(index));
  if (!netdev.empty()) checked_name(netdev, NameKind::netdev, "GidEntry netdev");
  GidEntry e;
  e.index = index;
  e.state = entry_state_arg(state);
  if (e.state == EntryState::valid) {
    if (gid.is_none()) invalid("GidEntry: a valid entry needs a gid");
    e.gid = to_gid(gid);
  } else if (!gid.is_none() && !to_gid(gid).is_zero()) {
    invalid("GidEntry: an " + state + " entry holds no GID");
  }
  e.type = gid_type_arg(type);
  e.netdev = netdev;
  e.ifindex = ifindex;
  if (e.state == EntryState::unreadable) {
    if (read_error < 0 || read_error > kMaxErrno)
      invalid("GidEntry read_error: expected an errno 0 to " + std::to_string(kMaxErrno) + ", found " +
              std::to_string(read_error));
    e.read_error = std::error_code(read_error, std::generic_category());
  } else if (read_error != 0) {
    invalid("GidEntry read_error: only an unreadable entry has one (state is " + state + ")");
  }
  return e;
}

// PortInfo(...) from Python, and from a pickle.
PortInfo make_port(const std::string& device, std::uint32_t port, const std::string& state,
                   const std::string& link_layer, std::optional<std::uint32_t> gid_tbl_len,
                   unsigned active_mtu, std::uint16_t lid) {
  PortInfo p;
  p.device = checked_name(device, NameKind::device, "PortInfo device");
  p.port = checked_port(port, "PortInfo port");
  if (gid_tbl_len && *gid_tbl_len > kMaxGidTblLen)
    invalid("PortInfo gid_tbl_len: expected 0 to " + std::to_string(kMaxGidTblLen) + ", found " +
            std::to_string(*gid_tbl_len));
  p.state = port_state_arg(state);
  p.link_layer = link_layer_arg(link_layer);
  p.gid_tbl_len = gid_tbl_len;
  const auto mtu = mtu_from_bytes(active_mtu);
  if (!mtu) invalid("active_mtu: expected 256, 512, 1024, 2048 or 4096, found " + std::to_string(active_mtu));
  p.active_mtu = *mtu;
  p.lid = lid;
  return p;
}

}  // namespace

void bind_tables(py::module_& m) {
  m.attr("DEFAULT_MAX_INPUT_BYTES") = formats::kDefaultMaxInputBytes;

  py::class_<GidEntry>(m, "GidEntry", "One slot of a GID table.")
      .def(py::init(&make_entry), py::arg("index"), py::arg("gid") = py::none(), py::arg("type") = "unknown",
           py::arg("netdev") = "", py::arg("ifindex") = 0, py::arg("state") = "valid",
           py::arg("read_error") = 0)
      .def_readonly("index", &GidEntry::index)
      .def_readonly("gid", &GidEntry::gid)
      .def_property_readonly("type", [](const GidEntry& e) { return std::string(to_string(e.type)); })
      .def_readonly("netdev", &GidEntry::netdev)
      .def_readonly("ifindex", &GidEntry::ifindex)
      .def_property_readonly("state", [](const GidEntry& e) { return std::string(to_string(e.state)); })
      .def_property_readonly(
          "read_error",
          [](const GidEntry& e) -> std::optional<int> {
            if (e.state != EntryState::unreadable) return std::nullopt;
            return e.read_error.value();
          },
          "The errno of the failed read of an unreadable slot, else None.")
      .def_property_readonly("usable", &GidEntry::usable, "Holds a non-zero GID.")
      .def("__eq__", [](const GidEntry& a, const GidEntry& b) { return a == b; })
      .def(py::pickle(
          [](const GidEntry& e) {
            const bool valid = e.state == EntryState::valid;
            const bool unreadable = e.state == EntryState::unreadable;
            return py::make_tuple(e.index, valid ? py::cast(e.gid) : py::object(py::none()),
                                  std::string(to_string(e.type)), e.netdev, e.ifindex,
                                  std::string(to_string(e.state)), unreadable ? e.read_error.value() : 0);
          },
          [](const py::tuple& t) {
            pickled(t, 7, "GidEntry");
            return make_entry(t[0].cast<std::uint32_t>(), t[1], t[2].cast<std::string>(),
                              t[3].cast<std::string>(), t[4].cast<std::uint32_t>(), t[5].cast<std::string>(),
                              t[6].cast<int>());
          }))
      .def("__repr__", [](const GidEntry& e) {
        return "GidEntry(index=" + std::to_string(e.index) + ", gid=" + e.gid.to_string() +
               ", type=" + std::string(to_string(e.type)) + ", state=" + std::string(to_string(e.state)) +
               ")";
      });

  py::class_<PortInfo>(m, "PortInfo", "One port's attributes, as far as GID choice and RTR need them.")
      .def(py::init(&make_port), py::arg("device"), py::arg("port") = 1, py::arg("state") = "active",
           py::arg("link_layer") = "ethernet", py::arg("gid_tbl_len") = py::none(),
           py::arg("active_mtu") = 1024, py::arg("lid") = 0)
      .def_readonly("device", &PortInfo::device)
      .def_readonly("port", &PortInfo::port)
      .def_property_readonly("state", [](const PortInfo& p) { return std::string(to_string(p.state)); })
      .def_property_readonly("link_layer", [](const PortInfo& p) { return to_string(p.link_layer); })
      .def_readonly("gid_tbl_len", &PortInfo::gid_tbl_len)
      .def_property_readonly(
          "active_mtu", [](const PortInfo& p) { return mtu_bytes(p.active_mtu); }, "In bytes: 256 ... 4096.")
      .def_readonly("lid", &PortInfo::lid)
      .def_property_readonly(
          "link_rate",
          [](const PortInfo& p) -> std::optional<std::string> {
            if (!p.link_rate) return std::nullopt;
            return to_string(*p.link_rate);
          },
          "The trained link, '4X EDR (100 Gb/s)', or None when the source did not say.")
      .def_property_readonly(
          "link_gbps", [](const PortInfo& p) { return p.link_rate ? p.link_rate->gbps() : std::nullopt; },
          "The link's data rate in Gb/s (lanes x lane rate), or None.")
      .def_property_readonly(
          "name", [](const PortInfo& p) { return port_name(p); }, "'mlx5_0 port 1'.")
      .def("__eq__", [](const PortInfo& a, const PortInfo& b) { return a == b; })
      .def(py::pickle(
          [](const PortInfo& p) {
            // The trained link too, which only the readers fill: (width, speed) as verbs numbers.
            const py::object rate = p.link_rate
                                        ? py::object(py::make_tuple(p.link_rate->width, p.link_rate->speed))
                                        : py::object(py::none());
            return py::make_tuple(p.device, p.port, std::string(to_string(p.state)), to_string(p.link_layer),
                                  p.gid_tbl_len, mtu_bytes(p.active_mtu), p.lid, rate);
          },
          [](const py::tuple& t) {
            pickled(t, 8, "PortInfo");
            PortInfo p =
                make_port(t[0].cast<std::string>(), t[1].cast<std::uint32_t>(), t[2].cast<std::string>(),
                          t[3].cast<std::string>(), t[4].cast<std::optional<std::uint32_t>>(),
                          t[5].cast<unsigned>(), t[6].cast<std::uint16_t>());
            if (!t[7].is_none()) {
              const auto [width, speed] = t[7].cast<std::pair<std::uint8_t, std::uint8_t>>();
              p.link_rate = LinkRate{width, speed};
            }
            return p;
          }))
      .def("__repr__", [](const PortInfo& p) { return "PortInfo(" + port_name(p) + ")"; });

  py::class_<GidTable>(m, "GidTable", "A snapshot of one port's GID table: its PortInfo and entries.")
      .def(py::init([](const PortInfo& port, const std::vector<GidEntry>& entries, const std::string& holes) {
             return unwrap(GidTable::make(port, entries, holes_arg(holes)));
           }),
           py::arg("port"), py::arg("entries"), py::arg("holes") = "empty",
           "Sorted by index. Raises Error (duplicate_index, index_too_large).")
      .def_property_readonly("port", &GidTable::port)
      .def_property_readonly(
          "holes", [](const GidTable& t) { return std::string(to_string(t.holes())); },
          "What an index absent from entries means: 'empty' or 'not_shown'.")
      .def_property_readonly(
          "entries", [](const GidTable& t) { return std::vector<GidEntry>(t.begin(), t.end()); },
          "The entries in index order (holes allowed).")
      .def_property_readonly("length", &GidTable::length,
                             "gid_tbl_len when known, else one past the last index.")
      .def("__len__", &GidTable::size)
      .def("__iter__",
           [](const GidTable& t) { return py::iter(py::cast(std::vector<GidEntry>(t.begin(), t.end()))); })
      .def(
          "find",
          [](const GidTable& t, const py::object& key) -> std::optional<GidEntry> {
            const GidEntry* e = nullptr;
            if (py::isinstance<py::int_>(key)) {
              const auto i = key.cast<long long>();
              if (i >= 0 && i <= 0xffffffffLL) e = t.find(static_cast<std::uint32_t>(i));
            } else {
              e = t.find(to_gid(key, "find"));
            }
            if (e == nullptr) return std::nullopt;
            return *e;
          },
          py::arg("key"), "The entry at an index (int), or the lowest valid entry holding a GID; else None.")
      .def_property_readonly("name", [](const GidTable& t) { return port_name(t); })
      .def("__eq__", [](const GidTable& a, const GidTable& b) { return a == b; })
      .def(py::pickle(
          [](const GidTable& t) {
            return py::make_tuple(t.port(), std::vector<GidEntry>(t.begin(), t.end()),
                                  std::string(to_string(t.holes())));
          },
          [](const py::tuple& t) {
            pickled(t, 3, "GidTable");
            return unwrap(GidTable::make(t[0].cast<PortInfo>(), t[1].cast<std::vector<GidEntry>>(),
                                         holes_arg(t[2].cast<std::string>())));
          }))
      .def("__repr__", [](const GidTable& t) {
        return "GidTable(" + port_name(t) + ", " + std::to_string(t.size()) + " entries)";
      });

  m.def(
      "detect_format",
      [](const py::object& text, const std::string& source, std::size_t max_bytes) {
        return std::string(
            formats::to_string(unwrap(formats::detect_format(text_arg(text, max_bytes), source))));
      },
      py::arg("text"), py::arg("source") = "<input>", py::arg("max_bytes") = formats::kDefaultMaxInputBytes,
      "'json', 'devinfo' or 'show_gids'. Raises Error (unknown_format) saying what was expected.");
  m.def(
      "read_tables",
      [](const py::object& text, const std::string& source, const std::optional<std::string>& format,
         std::size_t max_bytes) {
        const std::string body = text_arg(text, max_bytes);
        if (format) return unwrap(formats::read_tables_as(body, format_arg(*format), source));
        return unwrap(formats::read_tables(body, source));
      },
      py::arg("text"), py::arg("source") = "<input>", py::arg("format") = py::none(),
      py::arg("max_bytes") = formats::kDefaultMaxInputBytes,
      "Every table in a paste (JSON, ibv_devinfo, show_gids), detected from its shape unless format "
      "is given. Nothing is returned unless the whole input was read.");
  m.def(
      "read_tables_file",
      [](const std::string& path, std::size_t max_bytes) {
        return unwrap(formats::read_tables_file(checked_path(path, "path"), max_bytes));
      },
      py::arg("path"), py::arg("max_bytes") = formats::kDefaultMaxInputBytes,
      "A table file in any text format, or a sysfs-like directory (/sys/class/infiniband).");
  m.def(
      "write_tables",
      [](const std::vector<GidTable>& tables, const std::string& format) {
        return unwrap(formats::write_tables(tables, format_arg(format)));
      },
      py::arg("tables"), py::arg("format") = "json", "The tables as 'json', 'devinfo' or 'show_gids' text.");
  m.def("live_tables", &live_tables, py::arg("device") = py::none(), py::arg("port") = py::none(),
        py::arg("library") = py::none(),
        "This host's tables through libibverbs (loaded at run time: `library`, else libibverbs.so.1), "
        "every port of every device or of `device`. Raises Error (library_unavailable, no_devices, "
        "device_not_found...).");
}

}  // namespace gidpolicy::python
