// The doctor (doctor.hpp) and the interfaces it compares the tables with (interfaces.hpp): its
// input built from Python values, its report as read-only objects, and the live host's
// interfaces (SystemInterfaces) and routes (KernelRoutes) behind examine_host().
//
// Why every list is bounded here: examine() is bounded by its input (tables x interfaces x
// peers), so a Python caller could otherwise make it run for minutes with one call. The bounds
// are the CLI's (kMaxRoutedPeers) or interfaces.hpp's, and generous for any real host.
#include "common.hpp"

#include <gidpolicy/doctor.hpp>
#include <gidpolicy/host_doctor.hpp>
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/kernel_routes.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/system_interfaces.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gidpolicy::python {
namespace {

constexpr std::size_t kMaxTables = 1024;            // ports of one host
constexpr std::size_t kMaxPeers = kMaxRoutedPeers;  // as `gidpolicy doctor` routes at most
constexpr std::size_t kMaxListed = 4096;            // failures, pins, peer addresses, required devices, extra
constexpr std::size_t kMaxTaken = 1024;             // propose_address: 16384 subnets x taken comparisons
constexpr std::size_t kMaxFixLines = 256;           // one finding's commands

template <class T>
const std::vector<T>& bounded(const std::vector<T>& v, std::size_t max, std::string_view what) {
  if (v.size() > max)
    invalid(std::string(what) + ": " + std::to_string(v.size()) + " given, at most " + std::to_string(max));
  return v;
}

std::string severity_name(Severity s) { return std::string(to_string(s)); }

Severity severity_arg(std::string_view name) {
  for (Severity s : {Severity::blocker, Severity::warning, Severity::note})
    if (to_string(s) == name) return s;
  invalid("severity: expected blocker, warning or note, found " + quote_arg(name));
}

// A finding's code names a row of the doctor's table; its severity is that row's (one table
// decides both: a mistyped code would otherwise be ranked last without a word).
FindingCode finding_code_arg(std::string_view name, Severity severity) {
  const std::optional<FindingCode> c = finding_code_from_string(name);
  if (!c) invalid("code: expected one of " + finding_code_names() + ", found " + quote_arg(name));
  if (severity_of(*c) != severity)
    invalid("severity: " + std::string(name) + " is a " + severity_name(severity_of(*c)) + ", not a " +
            severity_name(severity));
  return *c;
}

std::vector<std::uint8_t> bytes_arg(const py::handle& value, std::string_view what) {
  if (!py::isinstance<py::bytes>(value) && !py::isinstance<py::bytearray>(value))
    wrong_type(what, "bytes", value);
  const std::string raw = py::isinstance<py::bytes>(value) ? std::string(value.cast<py::bytes>())
                                                           : std::string(value.cast<py::bytearray>());
  if (raw.size() > 16) invalid(std::string(what) + ": " + std::to_string(raw.size()) + " bytes, at most 16");
  return {raw.begin(), raw.end()};
}

py::bytes to_bytes(const std::vector<std::uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

/// An address as a Gid, its 16 bytes, or text: a dotted IPv4 quad (IPv4-mapped) or IPv6.
Gid address_arg(const py::handle& value, std::string_view what) {
  if (!py::isinstance<py::str>(value)) return to_gid(value, what);
  auto g = parse_address(value.cast<std::string>());
  if (!g) throw Failure{Error(g.error().code, std::string(what) + ": " + g.error().detail)};
  return g.value();
}

PeerAddress peer_arg(const std::string& text) {
  auto a = PeerAddress::parse(text);
  if (!a) throw Failure{Error(a.error().code, "peer " + quote_arg(text) + ": " + a.error().detail)};
  return std::move(a).value();
}

/// The pins: DoctorPin values, or a dict VARIABLE -> value.
std::vector<DoctorPin> pins_arg(const py::handle& value) {
  std::vector<DoctorPin> out;
  if (py::isinstance<py::dict>(value)) {
    for (auto kv : value.cast<py::dict>()) {
      if (!py::isinstance<py::str>(kv.first)) wrong_type("pins (a variable)", "str", kv.first);
      if (!py::isinstance<py::str>(kv.second)) wrong_type("pins (a value)", "str", kv.second);
      out.push_back({kv.first.cast<std::string>(), kv.second.cast<std::string>()});
    }
  } else {
    // A list of DoctorPin, each checked here so a wrong one is named (cast<> would only say no).
    if (!py::isinstance<py::sequence>(value) || py::isinstance<py::str>(value))
      wrong_type("pins", "a dict or a list of DoctorPin", value);
    const auto seq = py::reinterpret_borrow<py::sequence>(value);
    for (std::size_t i = 0; i < seq.size(); ++i) {
      const py::object item = seq[i];
      if (!py::isinstance<DoctorPin>(item)) wrong_type("pins[" + std::to_string(i) + "]", "DoctorPin", item);
      out.push_back(item.cast<DoctorPin>());
    }
  }
  return bounded(out, kMaxListed, "pins");
}

// The peer's route as the doctor reads it: a netdev means the kernel routes it (unicast) through
// that netdev from `source`; none means the lookup failed with `route_error`.
DoctorPeer make_peer(const std::string& address, std::string origin, bool rdma,
                     const std::optional<std::string>& netdev, const py::object& source,
                     std::uint32_t ifindex, const std::optional<std::string>& route_error) {
  DoctorPeer p{peer_arg(address), std::move(origin)};
  p.rdma = rdma;
  if (netdev) {
    if (route_error) invalid("DoctorPeer: give netdev (routed) or route_error (not routed), not both");
    checked_name(*netdev, NameKind::netdev, "DoctorPeer netdev");
    Route r;
    r.peer = p.address;
    r.netdev = *netdev;
    r.ifindex = ifindex;
    if (!source.is_none()) r.source = address_arg(source, "DoctorPeer source");
    p.route = std::move(r);
  } else {
    if (!source.is_none()) invalid("DoctorPeer source: a route's source needs its netdev");
    p.route = fail(errc::no_route, route_error.value_or("not looked up"));
  }
  return p;
}

}  // namespace

void bind_doctor(py::module_& m) {
  // --- interfaces.hpp --------------------------------------------------------------------------
  py::class_<IfAddress>(
      m, "IfAddress",
      "One address of an interface: IPv4 as ::ffff:a.b.c.d, its prefix in its own family's bits.")
      .def(py::init([](const py::object& address, unsigned prefix) {
             IfAddress a{address_arg(address, "IfAddress address"), prefix};
             if (prefix > (a.address.is_ipv4_mapped() ? 32u : 128u))
               invalid("IfAddress prefix: " + std::to_string(prefix) + " is longer than the address");
             return a;
           }),
           py::arg("address"), py::arg("prefix"))
      .def_readonly("address", &IfAddress::address)
      .def_readonly("prefix", &IfAddress::prefix)
      .def("__eq__", [](const IfAddress& a, const IfAddress& b) { return a == b; })
      .def(pickle_by_constructor<IfAddress>(
          [](const IfAddress& a) { return py::make_tuple(a.address, a.prefix); }))
      .def("__repr__", [](const IfAddress& a) {
        return "IfAddress(" + a.address.to_string() + "/" + std::to_string(a.prefix) + ")";
      });

  py::class_<HostInterface>(
      m, "HostInterface",
      "One interface as the doctor compares it: flags, MTU, bridge membership, addresses.")
      .def(py::init([](const std::string& name, std::uint32_t ifindex, bool up, bool running, bool loopback,
                       std::uint32_t mtu, const std::string& bridge, const std::vector<IfAddress>& addresses,
                       const std::string& bridge_unknown) {
             checked_name(name, NameKind::netdev, "HostInterface name");
             if (!bridge.empty()) checked_name(bridge, NameKind::netdev, "HostInterface bridge");
             if (bridge_unknown.size() > 200) invalid("HostInterface bridge_unknown: more than 200 bytes");
             if (!bridge.empty() && !bridge_unknown.empty())
               invalid(
                   "HostInterface bridge_unknown: given with a bridge (membership is either known or not)");
             HostInterface i;
             i.name = name;
             i.ifindex = ifindex;
             i.up = up;
             i.running = running;
             i.loopback = loopback;
             i.mtu = mtu;
             i.bridge = bridge;
             i.bridge_unknown = bridge_unknown;
             i.addresses = bounded(addresses, kMaxAddressesPerInterface, "HostInterface addresses");
             return i;
           }),
           py::arg("name"), py::arg("ifindex") = 0, py::arg("up") = true, py::arg("running") = true,
           py::arg("loopback") = false, py::arg("mtu") = 0, py::arg("bridge") = "",
           py::arg("addresses") = std::vector<IfAddress>{}, py::arg("bridge_unknown") = "")
      .def_readonly("name", &HostInterface::name)
      .def_readonly("ifindex", &HostInterface::ifindex, "0 when the source did not say.")
      .def_readonly("up", &HostInterface::up, "IFF_UP: configured up.")
      .def_readonly("running", &HostInterface::running, "IFF_RUNNING: the link is there.")
      .def_readonly("loopback", &HostInterface::loopback)
      .def_readonly("mtu", &HostInterface::mtu, "Bytes; 0 when unknown.")
      .def_readonly("bridge", &HostInterface::bridge, "The bridge it is a member of; '' for none or unknown.")
      .def_readonly("bridge_unknown", &HostInterface::bridge_unknown,
                    "Why membership could not be read ('' when it could): the doctor notes it.")
      .def_readonly("addresses", &HostInterface::addresses)
      .def("has_ipv4", &HostInterface::has_ipv4, "Holds an IPv4 address (169.254/16 included).")
      .def("has_assigned_ipv4", &HostInterface::has_assigned_ipv4,
           "Holds an IPv4 address outside 169.254/16.")
      .def(
          "holds",
          [](const HostInterface& i, const py::object& a) { return i.holds(address_arg(a, "address")); },
          py::arg("address"), "Holds `address` (IPv4 compared as ::ffff:a.b.c.d).")
      .def("__eq__", [](const HostInterface& a, const HostInterface& b) { return a == b; })
      .def(pickle_by_constructor<HostInterface>([](const HostInterface& i) {
        return py::make_tuple(i.name, i.ifindex, i.up, i.running, i.loopback, i.mtu, i.bridge, i.addresses,
                              i.bridge_unknown);
      }))
      .def("__repr__", [](const HostInterface& i) {
        return "HostInterface(" + i.name + ", " + std::to_string(i.addresses.size()) + " addresses)";
      });

  py::class_<IfAddrRecord>(m, "IfAddrRecord",
                           "One getifaddrs() record with the platform's own numbers (family, flags), "
                           "address and netmask bytes (4 for AF_INET, 16 for AF_INET6, b'' otherwise).")
      .def(py::init([](std::string name, std::uint32_t flags, int family, const py::object& address,
                       const py::object& netmask, std::uint32_t mtu, std::uint32_t ifindex,
                       std::string bridge) {
             return IfAddrRecord{std::move(name),
                                 flags,
                                 family,
                                 bytes_arg(address, "IfAddrRecord address"),
                                 bytes_arg(netmask, "IfAddrRecord netmask"),
                                 mtu,
                                 ifindex,
                                 std::move(bridge)};
           }),
           py::arg("name"), py::arg("flags") = 0, py::arg("family") = 0, py::arg("address") = py::bytes(),
           py::arg("netmask") = py::bytes(), py::arg("mtu") = 0, py::arg("ifindex") = 0,
           py::arg("bridge") = "")
      .def_readonly("name", &IfAddrRecord::name)
      .def_readonly("flags", &IfAddrRecord::flags)
      .def_readonly("family", &IfAddrRecord::family)
      .def_property_readonly("address", [](const IfAddrRecord& r) { return to_bytes(r.address); })
      .def_property_readonly("netmask", [](const IfAddrRecord& r) { return to_bytes(r.netmask); })
      .def_readonly("mtu", &IfAddrRecord::mtu)
      .def_readonly("ifindex", &IfAddrRecord::ifindex)
      .def_readonly("bridge", &IfAddrRecord::bridge)
      .def_readonly("bridge_unknown", &IfAddrRecord::bridge_unknown)
      .def("__repr__", [](const IfAddrRecord& r) {
        return "IfAddrRecord(" + quote_arg(r.name) + ", family=" + std::to_string(r.family) + ", " +
               std::to_string(r.address.size()) + " address bytes)";
      });

  py::class_<IfaddrsNumbers>(
      m, "IfaddrsNumbers", "The numbers of a platform's <sys/socket.h> and <net/if.h> the conversion reads.")
      .def_static(
          "for_platform",
          [](const std::string& platform) { return IfaddrsNumbers::for_platform(platform_arg(platform)); },
          py::arg("platform"), "Linux: AF_INET6 10; Darwin: AF_INET6 30. IFF_* are the same on both.")
      .def_readonly("af_inet", &IfaddrsNumbers::af_inet)
      .def_readonly("af_inet6", &IfaddrsNumbers::af_inet6)
      .def_readonly("iff_up", &IfaddrsNumbers::iff_up)
      .def_readonly("iff_loopback", &IfaddrsNumbers::iff_loopback)
      .def_readonly("iff_running", &IfaddrsNumbers::iff_running)
      .def("__repr__", [](const IfaddrsNumbers& n) {
        return "IfaddrsNumbers(af_inet=" + std::to_string(n.af_inet) +
               ", af_inet6=" + std::to_string(n.af_inet6) + ")";
      });

  m.def(
      "interfaces_from_ifaddrs",
      [](const std::vector<IfAddrRecord>& records, const std::string& platform) {
        return unwrap(interfaces_from_ifaddrs(records, platform_arg(platform)));
      },
      py::arg("records"), py::arg("platform"),
      "The interfaces of getifaddrs() records read with `platform`'s numbers, in first-seen order. Raises "
      "Error "
      "(invalid_argument, naming the record) for too many records, a bad name, address length or netmask.");
  m.def(
      "host_interfaces",
      [] {
        SystemInterfaces system;
        return unwrap(read_interfaces(system));
      },
      "This host's interfaces (of this network namespace), from getifaddrs(). Raises Error on failure.");

  // --- doctor.hpp ------------------------------------------------------------------------------
  py::class_<DeviceFailure>(m, "DeviceFailure",
                            "A device or port that could not be read: a failed or hung verbs call.")
      .def(py::init([](std::string device, std::uint32_t port, std::string call, bool timed_out,
                       std::uint32_t deadline_ms, std::string detail) {
             checked_name(device, NameKind::device, "DeviceFailure device");
             checked_port(port, "DeviceFailure port", /*zero_ok=*/true);
             return DeviceFailure{std::move(device), port,        std::move(call),
                                  timed_out,         deadline_ms, std::move(detail)};
           }),
           py::arg("device"), py::arg("port") = 0, py::arg("call") = "", py::arg("timed_out") = false,
           py::arg("deadline_ms") = 0, py::arg("detail") = "")
      .def_readonly("device", &DeviceFailure::device)
      .def_readonly("port", &DeviceFailure::port, "0: the device as a whole.")
      .def_readonly("call", &DeviceFailure::call)
      .def_readonly("timed_out", &DeviceFailure::timed_out)
      .def_readonly("deadline_ms", &DeviceFailure::deadline_ms)
      .def_readonly("detail", &DeviceFailure::detail)
      .def("__eq__",
           [](const DeviceFailure& a, const DeviceFailure& b) {
             return std::tie(a.device, a.port, a.call, a.timed_out, a.deadline_ms, a.detail) ==
                    std::tie(b.device, b.port, b.call, b.timed_out, b.deadline_ms, b.detail);
           })
      .def(pickle_by_constructor<DeviceFailure>([](const DeviceFailure& f) {
        return py::make_tuple(f.device, f.port, f.call, f.timed_out, f.deadline_ms, f.detail);
      }))
      .def("__repr__", [](const DeviceFailure& f) {
        return "DeviceFailure(" + (f.port == 0 ? f.device : port_name(f.device, f.port)) +
               (f.call.empty() ? "" : ", " + quote_arg(f.call)) + (f.timed_out ? ", timed out" : "") + ")";
      });

  py::class_<DoctorPeer>(m, "DoctorPeer",
                         "A peer to check and the kernel's route to it: netdev (and source) when routed, "
                         "route_error when the lookup failed. rdma=False: reached over TCP only.")
      .def(py::init(&make_peer), py::arg("address"), py::arg("origin") = "", py::arg("rdma") = true,
           py::arg("netdev") = py::none(), py::arg("source") = py::none(), py::arg("ifindex") = 0,
           py::arg("route_error") = py::none())
      .def_property_readonly("address", [](const DoctorPeer& p) { return p.address.to_string(); })
      .def_readonly("origin", &DoctorPeer::origin)
      .def_readonly("rdma", &DoctorPeer::rdma)
      .def_property_readonly("routed", [](const DoctorPeer& p) { return p.route.has_value(); })
      .def_property_readonly(
          "netdev",
          [](const DoctorPeer& p) { return p.route ? std::optional(p.route.value().netdev) : std::nullopt; })
      .def_property_readonly(
          "source", [](const DoctorPeer& p) { return p.route ? p.route.value().source : std::nullopt; })
      .def_property_readonly("route_error",
                             [](const DoctorPeer& p) -> py::object {
                               return p.route ? py::object(py::none()) : error_object(p.route.error());
                             })
      .def("__repr__", [](const DoctorPeer& p) {
        return "DoctorPeer(" + p.address.to_string() +
               (p.route ? ", via " + p.route.value().netdev : ", not routed") + ")";
      });

  py::class_<DoctorPin>(
      m, "DoctorPin",
      "A pinned GID index in the environment: a variable of gidpolicy.stacks()' pins and its value.")
      .def(py::init([](std::string variable, std::string value) {
             return DoctorPin{std::move(variable), std::move(value)};
           }),
           py::arg("variable"), py::arg("value"))
      .def_readonly("variable", &DoctorPin::variable)
      .def_readonly("value", &DoctorPin::value)
      .def("__eq__", [](const DoctorPin& a,
                        const DoctorPin& b) { return a.variable == b.variable && a.value == b.value; })
      .def(pickle_by_constructor<DoctorPin>(
          [](const DoctorPin& p) { return py::make_tuple(p.variable, p.value); }))
      .def("__repr__", [](const DoctorPin& p) {
        return "DoctorPin(" + quote_arg(p.variable) + "=" + quote_arg(p.value) + ")";
      });

  py::class_<Finding>(m, "Finding",
                      "One finding: severity ('blocker', 'warning', 'note'), a stable code, where, the cause "
                      "(text), which program fails how (why) and the commands (fix; '#' lines are comments).")
      .def(py::init([](const std::string& code, const std::string& severity, std::string text,
                       std::string device, std::uint32_t port, std::string netdev, std::string why,
                       std::vector<std::string> fix) {
             const Severity s = severity_arg(severity);
             // '' is "not about one device / netdev", as the doctor's own findings say.
             if (!device.empty()) checked_name(device, NameKind::device, "Finding device");
             if (!netdev.empty()) checked_name(netdev, NameKind::netdev, "Finding netdev");
             checked_port(port, "Finding port", /*zero_ok=*/true);
             return Finding{s,
                            finding_code_arg(code, s),
                            std::move(device),
                            port,
                            std::move(netdev),
                            std::move(text),
                            std::move(why),
                            bounded(fix, kMaxFixLines, "Finding fix")};
           }),
           py::arg("code"), py::arg("severity"), py::arg("text"), py::arg("device") = "", py::arg("port") = 0,
           py::arg("netdev") = "", py::arg("why") = "", py::arg("fix") = std::vector<std::string>{})
      .def_property_readonly("severity", [](const Finding& f) { return severity_name(f.severity); })
      .def_property_readonly(
          "code", [](const Finding& f) { return std::string(to_string(f.code)); },
          "Stable: 'no_ipv4', 'stale_gid', ... (docs/doctor.md lists them).")
      .def_readonly("device", &Finding::device, "'' when not about one device.")
      .def_readonly("port", &Finding::port)
      .def_readonly("netdev", &Finding::netdev)
      .def_readonly("text", &Finding::text)
      .def_readonly("why", &Finding::why)
      .def_readonly("fix", &Finding::fix)
      .def("__eq__",
           [](const Finding& a, const Finding& b) {
             return std::tie(a.severity, a.code, a.device, a.port, a.netdev, a.text, a.why, a.fix) ==
                    std::tie(b.severity, b.code, b.device, b.port, b.netdev, b.text, b.why, b.fix);
           })
      .def(pickle_by_constructor<Finding>([](const Finding& f) {
        return py::make_tuple(std::string(to_string(f.code)), severity_name(f.severity), f.text, f.device,
                              f.port, f.netdev, f.why, f.fix);
      }))
      .def("__repr__", [](const Finding& f) {
        return "Finding(" + severity_name(f.severity) + " " + std::string(to_string(f.code)) + ")";
      });

  py::class_<DoctorInput>(m, "DoctorInput", "Everything the doctor judges (read-only once built).")
      .def(py::init([](const std::vector<GidTable>& tables, const std::vector<HostInterface>& interfaces,
                       const std::string& platform, const std::vector<DeviceFailure>& failures,
                       bool interfaces_known, std::string interfaces_error,
                       const std::vector<DoctorPeer>& peers, const py::list& peer_addresses,
                       const std::vector<std::pair<std::string, std::string>>& required_devices,
                       const py::object& pins, const std::vector<Finding>& extra, bool from_file,
                       std::optional<bool> rdma_enabled, std::string rdma_state_error, bool host_checked) {
             DoctorInput in;
             in.tables = bounded(tables, kMaxTables, "DoctorInput tables");
             in.interfaces = bounded(interfaces, kMaxInterfaces, "DoctorInput interfaces");
             in.platform = platform_arg(platform);
             in.failures = bounded(failures, kMaxListed, "DoctorInput failures");
             in.interfaces_known = interfaces_known;
             in.interfaces_error = std::move(interfaces_error);
             if (interfaces_known && !in.interfaces_error.empty())
               invalid("DoctorInput interfaces_error: given while interfaces_known is True");
             in.peers = bounded(peers, kMaxPeers, "DoctorInput peers");
             if (peer_addresses.size() > kMaxListed)
               invalid("DoctorInput peer_addresses: " + std::to_string(peer_addresses.size()) +
                       " given, at most " + std::to_string(kMaxListed));
             for (const auto& a : peer_addresses)
               in.peer_addresses.push_back(address_arg(a, "DoctorInput peer_addresses"));
             in.required_devices = bounded(required_devices, kMaxListed, "DoctorInput required_devices");
             for (const auto& [device, where] : in.required_devices)
               checked_name(device, NameKind::device, "DoctorInput required_devices");
             in.pins = pins_arg(pins);
             in.extra = bounded(extra, kMaxListed, "DoctorInput extra");
             in.from_file = from_file;
             if (rdma_enabled && !rdma_state_error.empty())
               invalid(
                   "DoctorInput rdma_state_error: given with rdma_enabled (the state is either read or not)");
             if (rdma_state_error.size() > 1000)
               invalid("DoctorInput rdma_state_error: more than 1000 bytes");
             in.rdma_enabled = rdma_enabled;
             in.rdma_state_error = std::move(rdma_state_error);
             in.host_checked = host_checked;
             return in;
           }),
           py::arg("tables"), py::arg("interfaces") = std::vector<HostInterface>{},
           py::arg("platform") = "linux", py::arg("failures") = std::vector<DeviceFailure>{},
           py::arg("interfaces_known") = true, py::arg("interfaces_error") = "",
           py::arg("peers") = std::vector<DoctorPeer>{}, py::arg("peer_addresses") = py::list(),
           py::arg("required_devices") = std::vector<std::pair<std::string, std::string>>{},
           py::arg("pins") = py::list(), py::arg("extra") = std::vector<Finding>{},
           py::arg("from_file") = false, py::arg("rdma_enabled") = py::none(),
           py::arg("rdma_state_error") = "", py::arg("host_checked") = true)
      .def_readonly("tables", &DoctorInput::tables)
      .def_readonly("interfaces", &DoctorInput::interfaces)
      .def_property_readonly("platform",
                             [](const DoctorInput& in) { return std::string(to_string(in.platform)); })
      .def_readonly("failures", &DoctorInput::failures)
      .def_readonly("interfaces_known", &DoctorInput::interfaces_known)
      .def_readonly("interfaces_error", &DoctorInput::interfaces_error)
      .def_readonly("peers", &DoctorInput::peers)
      .def_readonly("peer_addresses", &DoctorInput::peer_addresses)
      .def_readonly("required_devices", &DoctorInput::required_devices,
                    "(device, where it was required) pairs.")
      .def_readonly("pins", &DoctorInput::pins)
      .def_readonly("extra", &DoctorInput::extra)
      .def_readonly("from_file", &DoctorInput::from_file)
      .def_readonly("rdma_enabled", &DoctorInput::rdma_enabled,
                    "macOS: what rdma_ctl status said; None when not asked or not read.")
      .def_readonly("rdma_state_error", &DoctorInput::rdma_state_error)
      .def_readonly("host_checked", &DoctorInput::host_checked,
                    "False: the tables are another host's, judged by themselves (interfaces, peers and "
                    "pins ignored; DoctorReport.not_checked lists them).")
      .def("__repr__", [](const DoctorInput& in) {
        return "DoctorInput(" + std::string(to_string(in.platform)) + ", " +
               std::to_string(in.tables.size()) + " tables, " + std::to_string(in.interfaces.size()) +
               " interfaces, " + std::to_string(in.peers.size()) + " peers)";
      });

  py::class_<PortSummary>(m, "PortSummary", "One port as the report's header shows it.")
      .def_readonly("device", &PortSummary::device)
      .def_readonly("port", &PortSummary::port)
      .def_readonly("state", &PortSummary::state)
      .def_readonly("link_layer", &PortSummary::link_layer)
      .def_readonly("netdevs", &PortSummary::netdevs)
      .def_readonly("gids", &PortSummary::gids, "Usable GIDs.")
      .def_readonly("routable", &PortSummary::routable, "Usable GIDs that are not link-local.")
      .def("__repr__", [](const PortSummary& s) {
        return "PortSummary(" + port_name(s.device, s.port) + ", " + s.state + ", " + s.link_layer + ")";
      });
  py::class_<StackLine>(m, "StackLine", "What one stack picks on one port.")
      .def_readonly("stack", &StackLine::stack)
      .def_readonly("device", &StackLine::device)
      .def_readonly("port", &StackLine::port)
      .def_readonly("chose", &StackLine::chose)
      .def_readonly("index", &StackLine::index)
      .def_readonly("works", &StackLine::works)
      .def_readonly("outcome", &StackLine::outcome)
      .def("__repr__", [](const StackLine& l) {
        return "StackLine(" + l.stack + " on " + port_name(l.device, l.port) + ": " + l.outcome + ")";
      });
  py::class_<PeerLine>(m, "PeerLine", "One peer's route as the report shows it.")
      .def_readonly("peer", &PeerLine::peer)
      .def_readonly("origin", &PeerLine::origin)
      .def_readonly("routed", &PeerLine::routed)
      .def_readonly("netdev", &PeerLine::netdev)
      .def_readonly("source", &PeerLine::source)
      .def_readonly("port", &PeerLine::port, "'rdma_en3 port 1' when the netdev is a port's; '' otherwise.")
      .def_readonly("leaves_host", &PeerLine::leaves_host)
      .def_readonly("summary", &PeerLine::summary)
      .def("__repr__", [](const PeerLine& l) {
        return "PeerLine(" + l.peer + (l.routed ? ", via " + l.netdev : ", not routed") + ")";
      });
  py::class_<DoctorReport>(m, "DoctorReport", "The doctor's verdict: ports, ranked findings, stacks, peers.")
      .def_readonly("ports", &DoctorReport::ports)
      .def_readonly("findings", &DoctorReport::findings,
                    "Blockers first, most likely cause first, then warnings.")
      .def_readonly("stacks", &DoctorReport::stacks)
      .def_readonly("peers", &DoctorReport::peers)
      .def_readonly("not_checked", &DoctorReport::not_checked,
                    "What needed the tables' own host and was not checked: empty for this host's tables.")
      .def("ready", &DoctorReport::ready, "No blockers.")
      .def("blockers", &DoctorReport::blockers)
      .def("__repr__", [](const DoctorReport& r) {
        return "DoctorReport(" + std::to_string(r.findings.size()) + " findings, " +
               std::to_string(r.blockers()) + " blockers)";
      });

  m.def("examine", &examine, py::arg("input"),
        "Judge `input`. Pure: nothing on the host is read or changed.");
  m.def(
      "examine_host",
      [](const std::vector<GidTable>& tables, const std::vector<std::string>& peers, const py::object& pins,
         const std::optional<std::string>& platform, bool from_file) {
        DoctorInput in;
        in.tables = bounded(tables, kMaxTables, "tables");
        in.platform = platform ? platform_arg(*platform) : host_platform();
        in.pins = pins_arg(pins);
        in.from_file = from_file;
        bounded(peers, kMaxPeers, "peers");
        std::vector<PeerAddress> addresses;
        for (const auto& p : peers) addresses.push_back(peer_arg(p));  // all parsed before any lookup
        read_host_interfaces(in);
        for (const PeerAddress& a : addresses) in.peers.push_back(DoctorPeer{a, "examine_host"});
        KernelRoutes kernel;
        route_peers(in, kernel);
        if (!from_file) read_rdma_state(in);
        return py::make_tuple(examine(in), in);
      },
      py::arg("tables"), py::arg("peers") = std::vector<std::string>{}, py::arg("pins") = py::list(),
      py::arg("platform") = py::none(), py::arg("from_file") = true,
      "`tables` against this host as `gidpolicy doctor` reads it: its interfaces (getifaddrs) and the "
      "kernel's "
      "route to each peer. Returns (DoctorReport, DoctorInput). An interface read that fails is reported as "
      "a "
      "finding, not raised; a peer that does not parse raises Error before anything is read.");
  m.def(
      "propose_address",
      [](const std::vector<IfAddress>& taken, unsigned ordinal) {
        return propose_address(bounded(taken, kMaxTaken, "taken"), ordinal);
      },
      py::arg("taken"), py::arg("ordinal") = 0,
      "The /30 address in 192.168/16 the doctor proposes for the ordinal-th interface that needs one, "
      "overlapping none of `taken`; None when every one is taken.");
}

}  // namespace gidpolicy::python
