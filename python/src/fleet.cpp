// Fleet: host snapshots, JACCL device files, and the judged links of a whole cluster.
#include "common.hpp"

#include <gidpolicy/fleet.hpp>
#include <gidpolicy/link.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::python {
namespace {

using fleet::Analysis;

fleet::Pairing pairing_arg(std::string_view name) {
  for (auto p : {fleet::Pairing::mesh, fleet::Pairing::ring, fleet::Pairing::rail, fleet::Pairing::jaccl})
    if (fleet::to_string(p) == name) return p;
  invalid("topology: expected mesh, ring, rail or jaccl, found " + quote_arg(name));
}

// Links a single links() call returns at most: a mesh of 2,000 hosts has 2 million links, and a
// list of that many Python objects is a memory spike the caller did not mean; page instead.
constexpr std::uint64_t kMaxLinksPerCall = 1'000'000;

void check_link_index(const Analysis& a, std::uint64_t k) {
  if (k >= a.link_count())
    throw py::index_error("link " + std::to_string(k) + ": the fleet has " + std::to_string(a.link_count()) +
                          " links");
}

std::pair<bool, std::string> check_with_why(bool ok, std::string why) {
  return {ok, ok ? std::string() : why};
}

}  // namespace

void bind_fleet(py::module_& m) {
  py::module_ f = m.def_submodule("fleet", "Which links of a whole cluster will connect, and why not.");

  py::class_<fleet::HostSnapshot>(f, "HostSnapshot",
                                  "One host: every port its `gidpolicy show --json` listed.")
      .def(py::init([](std::string host, std::vector<GidTable> ports, std::string source) {
             if (auto why = name_problem(host, NameKind::host))
               invalid("host name " + quote_arg(host) + ": " + *why);
             return fleet::HostSnapshot{std::move(host), std::move(source), std::move(ports)};
           }),
           py::arg("host"), py::arg("ports"), py::arg("source") = "<python>")
      .def_readonly("host", &fleet::HostSnapshot::host)
      .def_readonly("source", &fleet::HostSnapshot::source)
      .def_readonly("ports", &fleet::HostSnapshot::ports)
      .def("__eq__",
           [](const fleet::HostSnapshot& a, const fleet::HostSnapshot& b) {
             return std::tie(a.host, a.source, a.ports) == std::tie(b.host, b.source, b.ports);
           })
      .def(pickle_by_constructor<fleet::HostSnapshot>(
          [](const fleet::HostSnapshot& h) { return py::make_tuple(h.host, h.ports, h.source); }))
      .def("__repr__", [](const fleet::HostSnapshot& h) {
        return "HostSnapshot(" + quote_arg(h.host) + ", " + std::to_string(h.ports.size()) + " ports)";
      });
  f.def(
      "parse_snapshot",
      [](const std::string& text, const std::string& source, const std::string& host) {
        return unwrap(fleet::parse_snapshot(text, source, host));
      },
      py::arg("text"), py::arg("source") = "<input>", py::arg("host") = "",
      "The text `gidpolicy show --json` printed on one host. Raises Error naming source, port, entry, "
      "field.");
  f.def(
      "read_snapshots",
      [](const std::vector<std::string>& args) {
        // The reader refuses a NUL in a file name itself; refused here first, with the same
        // words as every other path the module takes.
        for (const auto& a : args) checked_path(a, "args");
        return unwrap(fleet::read_snapshots(args));
      },
      py::arg("args"), "Hosts from 'FILE', 'HOST=FILE' or a directory of .json files; nothing half-read.");

  py::class_<fleet::JacclDevices>(f, "JacclDevices",
                                  "JACCL's device file: names[i][j] lists rank i's devices to j.")
      .def_readonly("names", &fleet::JacclDevices::names)
      .def_property_readonly("ranks", &fleet::JacclDevices::ranks)
      .def(
          "valid_mesh",
          [](const fleet::JacclDevices& d) {
            std::string why;
            const bool ok = d.valid_mesh(&why);
            return check_with_why(ok, why);
          },
          "(ok, why): JACCL's mesh check.")
      .def(
          "valid_ring",
          [](const fleet::JacclDevices& d) {
            std::string why;
            const bool ok = d.valid_ring(&why);
            return check_with_why(ok, why);
          },
          "(ok, why): JACCL's ring check.")
      .def("__repr__", [](const fleet::JacclDevices& d) {
        return "JacclDevices(" + std::to_string(d.ranks()) + " ranks)";
      });
  f.def(
      "parse_jaccl_devices",
      [](const std::string& text, const std::string& source, std::optional<std::size_t> expected_ranks) {
        return unwrap(fleet::parse_jaccl_devices(text, source, expected_ranks));
      },
      py::arg("text"), py::arg("source") = "<devices>", py::arg("expected_ranks") = py::none(),
      "Parse a device file as JACCL does (at most 4,096 ranks, 16 names per entry).");

  py::class_<fleet::Cause>(f, "Cause", "Why a direction failed.")
      .def_property_readonly("outcome",
                             [](const fleet::Cause& c) { return std::string(to_string(c.outcome)); })
      .def_readonly("device", &fleet::Cause::device)
      .def_readonly("err", &fleet::Cause::err)
      .def_property_readonly("platform",
                             [](const fleet::Cause& c) { return std::string(to_string(c.platform)); })
      .def_readonly("text", &fleet::Cause::text)
      .def("__repr__", [](const fleet::Cause& c) {
        return "Cause(" + std::string(to_string(c.outcome)) + (c.device.empty() ? "" : ", " + c.device) + ")";
      });
  py::class_<fleet::SideInfo>(f, "Side",
                              "One side of a link: a host's device/port, what it advertises and routes from.")
      .def_readonly("host", &fleet::SideInfo::host, "Index into Analysis.hosts.")
      .def_readonly("device", &fleet::SideInfo::device)
      .def_readonly("port", &fleet::SideInfo::port)
      .def_readonly("usable", &fleet::SideInfo::usable)
      .def_readonly("advertised", &fleet::SideInfo::advertised)
      .def_readonly("sgid_index", &fleet::SideInfo::sgid_index)
      .def_property_readonly(
          "conflict",
          [](const fleet::SideInfo& s) {
            return s.conflict == fleet::kNoConflict ? std::optional<std::uint32_t>() : s.conflict;
          },
          "Index into Analysis.conflicts when its advertised GID is held by another host too, else None.")
      .def("__repr__", [](const fleet::SideInfo& s) {
        return "Side(host " + std::to_string(s.host) + ", " + port_name(s.device, s.port) +
               (s.usable ? "" : ", unusable") + ")";
      });
  py::class_<fleet::Direction>(f, "Direction", "One direction of a judged link.")
      .def_property_readonly("outcome",
                             [](const fleet::Direction& d) { return std::string(to_string(d.outcome)); })
      .def_readonly("cause", &fleet::Direction::cause, "Index into Analysis.causes (when not ok).")
      .def_readonly("culprit", &fleet::Direction::culprit, "Index into Analysis.sides (when not ok).")
      .def_property_readonly("ok", &fleet::Direction::ok)
      .def("__repr__", [](const fleet::Direction& d) {
        return "Direction(" + std::string(to_string(d.outcome)) +
               (d.ok()
                    ? ""
                    : ", cause " + std::to_string(d.cause) + ", culprit side " + std::to_string(d.culprit)) +
               ")";
      });
  py::class_<fleet::Link>(f, "Link", "One link of the topology, judged.")
      .def_readonly("index", &fleet::Link::index)
      .def_readonly("a", &fleet::Link::a)
      .def_readonly("b", &fleet::Link::b)
      .def_readonly("lane", &fleet::Link::lane)
      .def_readonly("a_to_b", &fleet::Link::a_to_b)
      .def_readonly("b_to_a", &fleet::Link::b_to_a)
      .def_property_readonly("connected", &fleet::Link::connected)
      .def_property_readonly(
          "conflict",
          [](const fleet::Link& l) {
            return l.conflict == fleet::kNoConflict ? std::optional<std::uint32_t>() : l.conflict;
          },
          "Index into Analysis.conflicts when a side advertises a GID another host holds too, else None.")
      .def_property_readonly("reliable", &fleet::Link::reliable, "Connected, over GIDs no other host holds.")
      .def("__repr__", [](const fleet::Link& l) {
        return "Link(" + std::to_string(l.index) + ": side " + std::to_string(l.a) + " <-> side " +
               std::to_string(l.b) + (l.connected() ? ", connected)" : ", fails)");
      });
  py::class_<fleet::CauseGroup>(f, "CauseGroup", "The failures of one cause.")
      .def_readonly("cause", &fleet::CauseGroup::cause)
      .def_readonly("links", &fleet::CauseGroup::links)
      .def_readonly("hosts", &fleet::CauseGroup::hosts)
      .def_readonly("first_side", &fleet::CauseGroup::first_side)
      .def("__repr__", [](const fleet::CauseGroup& g) {
        return "CauseGroup(cause " + std::to_string(g.cause) + ", " + std::to_string(g.links) + " links, " +
               std::to_string(g.hosts) + " hosts)";
      });
  py::class_<fleet::Summary>(f, "Summary", "Links, connected links, and failures per cause (largest first).")
      .def_readonly("links", &fleet::Summary::links)
      .def_readonly("connected", &fleet::Summary::connected)
      .def_readonly("groups", &fleet::Summary::groups)
      .def_readonly("unreliable", &fleet::Summary::unreliable,
                    "Connected links a conflict touches (connected, not reliably).")
      .def_property_readonly("all_connected", &fleet::Summary::all_connected)
      .def("__repr__", [](const fleet::Summary& s) {
        return "Summary(" + std::to_string(s.connected) + " of " + std::to_string(s.links) +
               " links connected)";
      });

  py::class_<fleet::Conflict>(f, "Conflict",
                              "A fleet-wide fault: one address on several hosts (duplicate_address, fatal), "
                              "or two rails whose IPv4 ranges interleave (rail_subnet_overlap, a warning).")
      .def_property_readonly("kind",
                             [](const fleet::Conflict& c) { return std::string(fleet::to_string(c.kind)); })
      .def_readonly("gids", &fleet::Conflict::gids, "The first 5 GIDs the same hosts share.")
      .def_readonly("gid_count", &fleet::Conflict::gid_count)
      .def_readonly("device", &fleet::Conflict::device)
      .def_readonly("other_device", &fleet::Conflict::other_device)
      .def_readonly("host_count", &fleet::Conflict::host_count)
      .def_readonly("hosts", &fleet::Conflict::hosts, "The first 5 hosts (indices into Analysis.hosts).")
      .def_readonly("links", &fleet::Conflict::links)
      .def_readonly("fatal", &fleet::Conflict::fatal)
      .def_readonly("detail", &fleet::Conflict::detail)
      .def("__repr__", [](const fleet::Conflict& c) {
        return "Conflict(" + std::string(fleet::to_string(c.kind)) + ", " + std::to_string(c.host_count) +
               " hosts)";
      });

  py::class_<Analysis>(f, "Analysis", "A fleet planned and judged.")
      .def_property_readonly("host_count", &Analysis::host_count)
      .def_property_readonly(
          "hosts",
          [](const Analysis& a) {
            std::vector<std::string> names;
            for (std::uint32_t i = 0; i < a.host_count(); ++i) names.push_back(a.host(i).host);
            return names;
          },
          "The host names, in input order (the ranks of a JACCL topology).")
      .def_property_readonly("sides", &Analysis::sides)
      .def_property_readonly("causes", &Analysis::causes)
      .def_property_readonly("conflicts", &Analysis::conflicts,
                             "Fleet-wide faults, duplicate addresses first, each group's largest first.")
      .def_property_readonly("ok", &Analysis::ok, "Every link connects and no conflict is fatal.")
      .def_property_readonly("summary", &Analysis::summary)
      .def_property_readonly("topology_name", &Analysis::topology_name,
                             "jaccl resolves to jaccl-mesh or jaccl-ring.")
      .def_property_readonly("profile_spec", &Analysis::profile_spec)
      .def_property_readonly("link_count", &Analysis::link_count)
      .def(
          "link",
          [](const Analysis& a, std::uint64_t k) {
            check_link_index(a, k);
            return a.link(k);
          },
          py::arg("k"))
      .def(
          "links",
          [](const Analysis& a, std::uint64_t begin, std::optional<std::uint64_t> end) {
            const std::uint64_t stop = end ? std::min(*end, a.link_count()) : a.link_count();
            if (begin > stop) begin = stop;
            if (stop - begin > kMaxLinksPerCall)
              invalid("links: " + std::to_string(stop - begin) + " links asked for, at most " +
                      std::to_string(kMaxLinksPerCall) + " per call: page with begin and end");
            std::vector<fleet::Link> out;
            out.reserve(stop - begin);
            a.for_each_link(begin, stop, [&](const fleet::Link& l) { out.push_back(l); });
            return out;
          },
          py::arg("begin") = 0, py::arg("end") = py::none(),
          "Links [begin, end), at most 1,000,000 per call.")
      .def(
          "describe", [](const Analysis& a, const fleet::CauseGroup& g) { return a.describe(g); },
          py::arg("group"))
      .def(
          "describe_conflict", [](const Analysis& a, const fleet::Conflict& c) { return a.describe(c); },
          py::arg("conflict"))
      .def(
          "describe_direction", [](const Analysis& a, const fleet::Direction& d) { return a.describe(d); },
          py::arg("direction"))
      .def(
          "describe_link", [](const Analysis& a, const fleet::Link& l) { return a.describe_link(l); },
          py::arg("link"))
      .def("__repr__", [](const Analysis& a) {
        return "Analysis(" + a.topology_name() + ", " + std::to_string(a.host_count()) + " hosts, " +
               std::to_string(a.link_count()) + " links)";
      });

  f.def(
      "analyze",
      [](std::vector<fleet::HostSnapshot> hosts, const std::string& topology, const std::string& device,
         std::uint32_t port, const std::vector<std::string>& rails,
         const std::optional<fleet::JacclDevices>& jaccl, bool prefer_ring, const py::object& profile,
         const std::optional<DriverModel>& model, unsigned threads) {
        fleet::Topology t;
        t.pairing = pairing_arg(topology);
        if (!device.empty()) checked_name(device, NameKind::device, "device");  // '': each host's first port
        t.device = device;
        t.port = checked_port(port, "port");
        for (const auto& r : rails) checked_name(r, NameKind::device, "rails");
        t.rails = rails;
        if (jaccl) t.jaccl = *jaccl;
        if (t.pairing == fleet::Pairing::jaccl && !jaccl)
          invalid("topology jaccl: give the device file (jaccl=)");
        t.jaccl_prefer_ring = prefer_ring;
        fleet::Options o;
        o.profile = profile_arg(profile);
        o.driver = model;
        if (threads == 0 || threads > 64)
          invalid("threads: expected 1 to 64, found " + std::to_string(threads));
        o.threads = threads;
        py::gil_scoped_release unlocked;  // the judging takes time on big fleets; it touches no Python object
        return unwrap(Analysis::run(std::move(hosts), t, o));
      },
      py::arg("hosts"), py::arg("topology") = "mesh", py::arg("device") = "", py::arg("port") = 1,
      py::arg("rails") = std::vector<std::string>{}, py::arg("jaccl") = py::none(),
      py::arg("prefer_ring") = false, py::arg("profile") = "auto", py::arg("model") = py::none(),
      py::arg("threads") = 2,
      "Plan every host once and judge every link of the topology, as `gidpolicy fleet` does.");
}

}  // namespace gidpolicy::python
