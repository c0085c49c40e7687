// darwin_tools.hpp: what a Mac's own tools print (ifconfig, networksetup, netstat,
// system_profiler, sw_vers), read as values. Pure text in, values out: a Mac is judged from its
// bundle on any machine. Every reader counts lines from 1 in the text it is given and names the
// line and the field it refuses.
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/darwin_tools.hpp>
#include <gidpolicy/names.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>

namespace gidpolicy::darwin {
// Named, not anonymous: the library is a unity build, and other files have helpers of these
// names.
namespace darwin_tools_detail {

/// One line at a time, with its 1-based number; the last line may lack its '\n'.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : rest_(text) {}
  bool next(std::string_view& line) {
    if (rest_.empty()) return false;
    const auto nl = rest_.find('\n');
    line = rest_.substr(0, nl);
    rest_ = nl == std::string_view::npos ? std::string_view{} : rest_.substr(nl + 1);
    ++number_;
    return true;
  }
  [[nodiscard]] std::size_t number() const noexcept { return number_; }

 private:
  std::string_view rest_;
  std::size_t number_ = 0;
};

bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim_blanks(std::string_view s) noexcept {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
    if (s.empty()) return out;
    std::size_t n = 0;
    while (n < s.size() && !is_blank(s[n])) ++n;
    out.push_back(s.substr(0, n));
    s.remove_prefix(n);
  }
}

bool starts_with(std::string_view s, std::string_view p) noexcept { return s.substr(0, p.size()) == p; }

/// A decimal number of 1 to `max_digits` digits, nothing else.
std::optional<std::uint32_t> decimal(std::string_view s, std::size_t max_digits = 9) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  return v;
}

/// "0x" and 1-8 hex digits (ifconfig prints masks and flags with %#x / %x).
std::optional<std::uint32_t> hex(std::string_view s, bool with_0x) {
  if (with_0x) {
    if (!starts_with(s, "0x")) return std::nullopt;
    s.remove_prefix(2);
  }
  if (s.empty() || s.size() > 8) return std::nullopt;
  std::uint32_t v = 0;
  for (char c : s) {
    std::uint32_t d = 0;
    if (c >= '0' && c <= '9')
      d = static_cast<std::uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<std::uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<std::uint32_t>(c - 'A' + 10);
    else
      return std::nullopt;
    v = (v << 4) | d;
  }
  return v;
}

/// 1 to `max_octets` dot-separated decimal octets (0-255), host order, missing octets zero;
/// `count` gets how many were printed.
std::optional<std::uint32_t> octets(std::string_view s, std::size_t min_octets, std::size_t max_octets,
                                    std::size_t& count) {
  std::uint32_t v = 0;
  count = 0;
  while (true) {
    const auto dot = s.find('.');
    auto o = decimal(s.substr(0, dot), 3);
    if (!o || *o > 255 || count == max_octets) return std::nullopt;
    v |= *o << (8 * (3 - count));
    ++count;
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  if (count < min_octets) return std::nullopt;
  return v;
}

/// The prefix length of an IPv4 mask (host order), -1 when it is not 1s then 0s.
int mask_prefix(std::uint32_t mask) noexcept {
  int bits = 0;
  while (bits < 32 && (mask & (0x80000000U >> bits)) != 0) ++bits;
  const std::uint32_t expect = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return mask == expect ? bits : -1;
}

std::uint32_t prefix_mask(unsigned bits) noexcept { return bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits); }

std::string too_big(std::string_view what, std::size_t size) {
  return std::string(what) + ": " + std::to_string(size) + " bytes, more than " +
         std::to_string(kMaxToolOutputBytes);
}

std::string line_at(std::string_view what, std::size_t n) {
  return std::string(what) + " line " + std::to_string(n);
}

/// "AT: WHAT "NAME": WHY" when `name` breaks the rule of `kind`, "" when it is fine.
std::string name_error(std::string_view name, NameKind kind, std::string_view at, std::string_view what) {
  auto why = name_problem(name, kind);
  if (!why) return {};
  std::string m(at);
  m.append(": ").append(what).append(" ").append(quote_name(name)).append(": ").append(*why);
  return m;
}

/// "Key: value" split at the first ':' (value trimmed); nullopt for a line without one.
struct KeyValue {
  std::string_view key, value;
};
std::optional<KeyValue> key_value(std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return KeyValue{trim_blanks(line.substr(0, colon)), trim_blanks(line.substr(colon + 1))};
}

// ---- ifconfig -a ----

constexpr std::string_view kIfconfig = "ifconfig -a";

struct IfconfigState {
  std::vector<HostInterface> out;
  std::vector<bool> inactive;  // "status: inactive" seen, per interface
};

/// "en2: flags=8863<UP,...> mtu 1500 [index 9]".
result<HostInterface> interface_header(std::string_view line, const std::string& at) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return fail(errc::invalid_argument,
                at + ": expected an interface's first line (\"en2: flags=... mtu N\")");
  HostInterface i;
  i.name = std::string(line.substr(0, colon));
  if (auto e = name_error(i.name, NameKind::netdev, at, "interface"); !e.empty())
    return fail(errc::invalid_argument, e);
  const auto w = words(line.substr(colon + 1));
  if (w.empty() || !starts_with(w[0], "flags="))
    return fail(errc::invalid_argument, at + ": interface " + i.name + ": no flags=HEX<NAMES> field");
  std::string_view f = w[0].substr(6);
  const auto lt = f.find('<');
  const auto value = hex(f.substr(0, lt), false);
  if (lt == std::string_view::npos || f.back() != '>' || !value)
    return fail(errc::invalid_argument,
                at + ": interface " + i.name + ": flags " + quote_name(f) + " are not HEX<NAMES>");
  std::string_view names = f.substr(lt + 1, f.size() - lt - 2);
  bool up = false, running = false, loopback = false;
  while (!names.empty()) {
    const auto comma = names.find(',');
    const std::string_view n = names.substr(0, comma);
    up = up || n == "UP";
    running = running || n == "RUNNING";
    loopback = loopback || n == "LOOPBACK";
    names = comma == std::string_view::npos ? std::string_view{} : names.substr(comma + 1);
  }
  // IFF_UP 0x1, IFF_LOOPBACK 0x8, IFF_RUNNING 0x40: ifconfig prints the names from the number,
  // so a disagreement means the text was altered.
  if (up != ((*value & 0x1) != 0) || loopback != ((*value & 0x8) != 0) || running != ((*value & 0x40) != 0))
    return fail(errc::invalid_argument, at + ": interface " + i.name + ": flags " + quote_name(f) +
                                            ": the number and the names disagree on UP, LOOPBACK or RUNNING");
  i.up = up;
  i.running = running;
  i.loopback = loopback;
  bool mtu_seen = false;
  for (std::size_t k = 1; k + 1 < w.size(); k += 2) {
    if (w[k] == "mtu") {
      auto m = decimal(w[k + 1]);
      if (!m)
        return fail(errc::invalid_argument, at + ": interface " + i.name + ": mtu " + quote_name(w[k + 1]));
      i.mtu = *m;
      mtu_seen = true;
    } else if (w[k] == "index") {
      auto x = decimal(w[k + 1]);
      if (!x)
        return fail(errc::invalid_argument, at + ": interface " + i.name + ": index " + quote_name(w[k + 1]));
      i.ifindex = *x;
    }
  }
  if (!mtu_seen) return fail(errc::invalid_argument, at + ": interface " + i.name + ": no mtu field");
  return i;
}

/// "inet 192.168.200.1 netmask 0xfffffffc broadcast 192.168.200.3" (or "--> PEER").
result<IfAddress> inet_line(const std::vector<std::string_view>& w, const std::string& at) {
  std::size_t n = 0;
  const auto a = w.size() > 1 ? octets(w[1], 4, 4, n) : std::nullopt;
  if (!a)
    return fail(errc::invalid_argument,
                at + ": inet address " + quote_name(w.size() > 1 ? w[1] : "") + " is not a.b.c.d");
  for (std::size_t k = 2; k + 1 < w.size(); ++k) {
    if (w[k] != "netmask") continue;
    const auto m = hex(w[k + 1], true);
    if (!m) return fail(errc::invalid_argument, at + ": netmask " + quote_name(w[k + 1]) + " is not 0xHEX");
    const int p = mask_prefix(*m);
    if (p < 0)
      return fail(errc::invalid_argument,
                  at + ": netmask " + quote_name(w[k + 1]) + " is not a prefix (1s, then 0s)");
    return IfAddress{Gid::ipv4_mapped(*a), static_cast<unsigned>(p)};
  }
  return fail(errc::invalid_argument, at + ": inet " + quote_name(w[1]) + " has no netmask field");
}

/// "inet6 fe80::1%en2 prefixlen 64 secured scopeid 0x9".
result<IfAddress> inet6_line(const std::vector<std::string_view>& w, const std::string& at) {
  std::string_view text = w.size() > 1 ? w[1] : std::string_view{};
  text = text.substr(0, text.find('%'));  // the scope (%en2) is the interface itself
  auto g = Gid::parse(text);
  if (text.find(':') == std::string_view::npos || !g)
    return fail(errc::invalid_argument,
                at + ": inet6 address " + quote_name(w.size() > 1 ? w[1] : "") + " is not an IPv6 address");
  for (std::size_t k = 2; k + 1 < w.size(); ++k) {
    if (w[k] != "prefixlen") continue;
    const auto p = decimal(w[k + 1], 3);
    if (!p || *p > 128) return fail(errc::invalid_argument, at + ": prefixlen " + quote_name(w[k + 1]));
    return IfAddress{g.value(), *p};
  }
  return fail(errc::invalid_argument, at + ": inet6 " + quote_name(w[1]) + " has no prefixlen field");
}

// ---- netstat -rn ----

constexpr std::string_view kNetstat = "netstat -rn";
constexpr std::size_t kMaxRoutes = kMaxInterfaces * 64;

/// A destination as netstat's p_sockaddr() prints it (see the header).
result<RouteLine> route_destination(std::string_view dest, bool host, const std::string& at) {
  RouteLine r;
  auto bad = [&](const std::string& why) {
    return fail(errc::invalid_argument, at + ": destination " + quote_name(dest) + ": " + why);
  };
  if (dest == "default") {
    r.is_default = true;
    r.destination = {Gid::ipv4_mapped(0), 0};
    return r;
  }
  const auto cut = dest.find_first_of("/&");
  const std::string_view addr = dest.substr(0, cut);
  std::size_t count = 0;
  const auto a = octets(addr, 1, 4, count);
  if (!a) return bad("not 1 to 4 dot-separated octets of 0-255");
  if (host) {
    // routename(): a host route (RTF_HOST) prints all four octets and no mask.
    if (count != 4 || cut != std::string_view::npos)
      return bad("a host route (flag H) prints a.b.c.d, no mask");
    r.destination = {Gid::ipv4_mapped(*a), 32};
    return r;
  }
  // netname(): octets are dropped only down to the address's class (A: 1, B: 2, C and above: 3),
  // and domask() prints no mask when it is the classful one (forgemask()).
  const unsigned first = *a >> 24;
  const std::size_t class_octets = first < 128 ? 1 : first < 192 ? 2 : 3;
  if (count < class_octets)
    return bad("netstat prints at least " + std::to_string(class_octets) + " octets of this address's class");
  unsigned prefix = static_cast<unsigned>(class_octets * 8);
  if (cut != std::string_view::npos) {
    const std::string_view suffix = dest.substr(cut + 1);
    if (dest[cut] == '&') {
      const auto m = hex(suffix, true);
      if (!m) return bad("mask " + quote_name(suffix) + " is not 0xHEX");
      // domask() writes "&0x..." only for a mask that is not 1s then 0s.
      if (mask_prefix(*m) < 0) return bad("mask " + quote_name(suffix) + " is not a prefix (1s, then 0s)");
      prefix = static_cast<unsigned>(mask_prefix(*m));
    } else {
      const auto p = decimal(suffix, 2);
      if (!p || *p > 32) return bad("prefix length " + quote_name(suffix) + " is not 0-32");
      prefix = *p;
    }
  }
  if ((*a & ~prefix_mask(prefix)) != 0) return bad("bits set past its /" + std::to_string(prefix));
  r.destination = {Gid::ipv4_mapped(*a), prefix};
  return r;
}

// ---- system_profiler SPThunderboltDataType ----

constexpr std::string_view kProfiler = "system_profiler SPThunderboltDataType";
constexpr std::size_t kMaxBuses = 64, kMaxBusPorts = 64;

bool is_bus_heading(std::string_view h) noexcept {
  // "Thunderbolt/USB4 Bus 2" (Apple silicon), "Thunderbolt Bus 0" / "Thunderbolt Bus" (Intel).
  return starts_with(h, "Thunderbolt") && (h.find(" Bus ") != std::string_view::npos || h.ends_with(" Bus"));
}

/// "Up to 40 Gb/s x1", "80 Gb/s", "Up to 120 Gb/s".
bool speed(std::string_view v, ThunderboltPort& p) {
  p.speed = std::string(v);
  p.capability = starts_with(v, "Up to ");
  if (p.capability) v.remove_prefix(6);
  const auto sp = v.find(' ');
  const auto n = decimal(v.substr(0, sp), 4);
  if (!n || *n == 0 || sp == std::string_view::npos) return false;
  v.remove_prefix(sp);
  if (!starts_with(v, " Gb/s")) return false;
  v.remove_prefix(5);
  p.gbps = *n;
  p.lanes = 1;
  if (v.empty()) return true;
  if (!starts_with(v, " x")) return false;
  const auto l = decimal(v.substr(2), 2);
  if (!l || *l == 0) return false;
  p.lanes = *l;
  return true;
}

// ---- sw_vers ----

/// 1-3 dot-separated numbers of at most 5 digits.
std::optional<std::vector<std::uint32_t>> version_numbers(std::string_view v) {
  std::vector<std::uint32_t> out;
  while (true) {
    const auto dot = v.find('.');
    auto n = decimal(v.substr(0, dot), 5);
    if (!n || out.size() == 3) return std::nullopt;
    out.push_back(*n);
    if (dot == std::string_view::npos) return out;
    v.remove_prefix(dot + 1);
  }
}

}  // namespace darwin_tools_detail

namespace dt = darwin_tools_detail;

result<std::vector<HostInterface>> ifconfig_interfaces(std::string_view ifconfig_a) {
  if (ifconfig_a.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument, dt::too_big(dt::kIfconfig, ifconfig_a.size()));
  // Members first: bridge_members() refuses a member line before any interface and a member
  // name that breaks the rule, with the line.
  auto members = bridge_members(ifconfig_a);
  if (!members) return members.error();
  dt::IfconfigState s;
  dt::LineReader lines(ifconfig_a);
  std::string_view line;
  while (lines.next(line)) {
    const std::string at = dt::line_at(dt::kIfconfig, lines.number());
    if (dt::trim_blanks(line).empty()) continue;
    if (!dt::is_blank(line.front())) {
      auto i = dt::interface_header(line, at);
      if (!i) return i.error();
      if (s.out.size() == kMaxInterfaces)
        return fail(errc::invalid_argument,
                    at + ": more than " + std::to_string(kMaxInterfaces) + " interfaces");
      for (const auto& o : s.out)
        if (o.name == i.value().name)
          return fail(errc::invalid_argument, at + ": interface " + o.name + " is listed twice");
      s.out.push_back(std::move(i).value());
      s.inactive.push_back(false);
      continue;
    }
    const auto w = dt::words(line);
    if (s.out.empty())
      return fail(errc::invalid_argument, at + ": " + quote_name(w[0]) + " line before any interface");
    HostInterface& cur = s.out.back();
    if (w[0] == "inet" || w[0] == "inet6") {
      auto a = w[0] == "inet" ? dt::inet_line(w, at + " (" + cur.name + ")")
                              : dt::inet6_line(w, at + " (" + cur.name + ")");
      if (!a) return a.error();
      if (cur.addresses.size() == kMaxAddressesPerInterface)
        return fail(errc::invalid_argument, at + ": " + cur.name + " has more than " +
                                                std::to_string(kMaxAddressesPerInterface) + " addresses");
      cur.addresses.push_back(a.value());
      // "scopeid 0x9": a scoped (link-local) address's scope is its interface's index (KAME).
      for (std::size_t k = 2; w[0] == "inet6" && k + 1 < w.size(); ++k) {
        if (w[k] != "scopeid") continue;
        const auto id = dt::hex(w[k + 1], true);
        if (!id || *id == 0)
          return fail(errc::invalid_argument, at + " (" + cur.name + "): scopeid " + quote_name(w[k + 1]));
        if (cur.ifindex != 0 && cur.ifindex != *id)
          return fail(errc::invalid_argument, at + " (" + cur.name + "): scopeid " + quote_name(w[k + 1]) +
                                                  " is not its index " + std::to_string(cur.ifindex));
        cur.ifindex = *id;
      }
    } else if (w[0] == "status:") {
      // macOS keeps RUNNING on a Thunderbolt port without a cable; the media status is the link.
      if (w.size() > 1 && w[1] == "inactive") s.inactive.back() = true;
    }
    // options=, ether, media:, nd6, member: (read above) and the rest: not what the doctor compares.
  }
  for (std::size_t k = 0; k < s.out.size(); ++k) {
    if (s.inactive[k]) s.out[k].running = false;
    if (auto m = members.value().find(s.out[k].name); m != members.value().end()) s.out[k].bridge = m->second;
  }
  return std::move(s.out);
}

result<std::vector<HardwarePort>> hardware_ports(std::string_view listallhardwareports) {
  constexpr std::string_view kWhat = "networksetup -listallhardwareports";
  if (listallhardwareports.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument, dt::too_big(kWhat, listallhardwareports.size()));
  std::vector<HardwarePort> out;
  bool open = false, address_seen = false;
  std::size_t opened_at = 0;
  auto close = [&]() -> result<void> {
    if (open && out.back().device.empty())
      return fail(errc::invalid_argument, dt::line_at(kWhat, opened_at) + ": hardware port " +
                                              quote_name(out.back().port) + " has no Device line");
    open = false;
    return success();
  };
  dt::LineReader lines(listallhardwareports);
  std::string_view line;
  while (lines.next(line)) {
    const std::string at = dt::line_at(kWhat, lines.number());
    const std::string_view t = dt::trim_blanks(line);
    if (t.empty()) continue;
    if (t == "VLAN Configurations") break;  // the tail: VLANs are not RDMA ports
    const auto kv = dt::key_value(t);
    if (!kv) return fail(errc::invalid_argument, at + ": " + quote_name(t) + " is not \"Key: value\"");
    if (kv->key == "Hardware Port") {
      if (auto c = close(); !c) return c.error();
      if (out.size() == kMaxInterfaces)
        return fail(errc::invalid_argument,
                    at + ": more than " + std::to_string(kMaxInterfaces) + " hardware ports");
      if (auto e = dt::name_error(kv->value, NameKind::host, at, "hardware port"); !e.empty())
        return fail(errc::invalid_argument, e);
      out.push_back({std::string(kv->value), {}, {}});
      open = true;
      address_seen = false;
      opened_at = lines.number();
    } else if (kv->key == "Device" || kv->key == "Ethernet Address") {
      if (!open)
        return fail(errc::invalid_argument,
                    at + ": a " + std::string(kv->key) + " line before any Hardware Port line");
      HardwarePort& p = out.back();
      if (kv->key == "Device") {
        if (!p.device.empty())
          return fail(errc::invalid_argument, at + ": a second Device line for " + p.port);
        if (auto e = dt::name_error(kv->value, NameKind::netdev, at, "device"); !e.empty())
          return fail(errc::invalid_argument, e);
        p.device = std::string(kv->value);
      } else {
        if (address_seen)
          return fail(errc::invalid_argument, at + ": a second Ethernet Address line for " + p.port);
        // Six hex bytes ("36:d9:a8:3e:97:00"), or "N/A" for a port without one.
        bool ok = kv->value == "N/A";
        if (!ok) {
          std::string_view v = kv->value;
          std::size_t groups = 0;
          ok = true;
          while (ok) {
            const auto c = v.find(':');
            const std::string_view g = v.substr(0, c);
            ok = !g.empty() && g.size() <= 2 && dt::hex(g, false).has_value() && ++groups <= 6;
            if (c == std::string_view::npos) break;
            v.remove_prefix(c + 1);
          }
          ok = ok && groups == 6;
        }
        if (!ok)
          return fail(errc::invalid_argument,
                      at + ": Ethernet Address " + quote_name(kv->value) + " is not six hex bytes or N/A");
        p.address = std::string(kv->value);
        address_seen = true;
      }
    }
    // Another "Key: value" line: not what is read.
  }
  if (auto c = close(); !c) return c.error();
  return out;
}

bool is_thunderbolt_port(const HardwarePort& p) noexcept {
  constexpr std::string_view kPrefix = "Thunderbolt ";
  const std::string_view name = p.port;
  return dt::starts_with(name, kPrefix) && dt::decimal(name.substr(kPrefix.size()), 2).has_value();
}

result<std::vector<NetworkService>> network_services(std::string_view listnetworkserviceorder) {
  constexpr std::string_view kWhat = "networksetup -listnetworkserviceorder";
  constexpr std::string_view kHeader = "An asterisk (*) denotes that a network service is disabled.";
  constexpr std::string_view kPort = "(Hardware Port: ";
  constexpr std::string_view kDevice = ", Device: ";
  if (listnetworkserviceorder.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument, dt::too_big(kWhat, listnetworkserviceorder.size()));
  std::vector<NetworkService> out;
  bool waiting = false;  // a service line read, its Hardware Port line not yet
  std::size_t service_line = 0;
  dt::LineReader lines(listnetworkserviceorder);
  std::string_view line;
  while (lines.next(line)) {
    const std::string at = dt::line_at(kWhat, lines.number());
    const std::string_view t = dt::trim_blanks(line);
    if (t.empty() || t == kHeader) continue;
    if (dt::starts_with(t, kPort)) {
      const auto dev = t.rfind(kDevice);
      if (t.back() != ')' || dev == std::string_view::npos || dev < kPort.size())
        return fail(errc::invalid_argument, at + ": expected \"(Hardware Port: PORT, Device: DEV)\"");
      if (!waiting)
        return fail(errc::invalid_argument, at + ": a Hardware Port line without a service line before it");
      NetworkService& s = out.back();
      s.port = std::string(t.substr(kPort.size(), dev - kPort.size()));
      s.device =
          std::string(dt::trim_blanks(t.substr(dev + kDevice.size(), t.size() - 1 - dev - kDevice.size())));
      if (auto e = dt::name_error(s.port, NameKind::host, at, "hardware port"); !e.empty())
        return fail(errc::invalid_argument, e);
      // A service over no device (a VPN) prints "Device: )".
      if (!s.device.empty())
        if (auto e = dt::name_error(s.device, NameKind::netdev, at, "device"); !e.empty())
          return fail(errc::invalid_argument, e);
      waiting = false;
      continue;
    }
    const auto close = t.find(") ");
    if (t.front() != '(' || close == std::string_view::npos)
      return fail(errc::invalid_argument,
                  at + ": " + quote_name(t) + " is not \"(N) Name\", \"(*) Name\" or a Hardware Port line");
    if (waiting)
      return fail(errc::invalid_argument, dt::line_at(kWhat, service_line) + ": service " +
                                              quote_name(out.back().name) + " has no Hardware Port line");
    if (out.size() == kMaxInterfaces)
      return fail(errc::invalid_argument, at + ": more than " + std::to_string(kMaxInterfaces) + " services");
    NetworkService s;
    const std::string_view number = t.substr(1, close - 1);
    if (number == "*") {
      s.enabled = false;
    } else {
      const auto n = dt::decimal(number, 3);
      if (!n || *n == 0)
        return fail(errc::invalid_argument, at + ": service number " + quote_name(number) + " is not 1-999");
      s.order = *n;
    }
    s.name = std::string(dt::trim_blanks(t.substr(close + 2)));
    if (auto e = dt::name_error(s.name, NameKind::host, at, "service name"); !e.empty())
      return fail(errc::invalid_argument, e);
    out.push_back(std::move(s));
    waiting = true;
    service_line = lines.number();
  }
  if (waiting)
    return fail(errc::invalid_argument, dt::line_at(kWhat, service_line) + ": service " +
                                            quote_name(out.back().name) + " has no Hardware Port line");
  return out;
}

result<std::vector<RouteLine>> netstat_routes(std::string_view netstat_rn) {
  if (netstat_rn.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument, dt::too_big(dt::kNetstat, netstat_rn.size()));
  std::vector<RouteLine> out;
  bool section = false;          // after "Internet:"
  std::size_t netif_column = 0;  // 0 until the column header is read
  dt::LineReader lines(netstat_rn);
  std::string_view line;
  while (lines.next(line)) {
    const std::string at = dt::line_at(dt::kNetstat, lines.number());
    const std::string_view t = dt::trim_blanks(line);
    if (t.empty() || t == "Routing tables") continue;
    if (t == "Internet:") {
      section = true;
      netif_column = 0;
      continue;
    }
    if (t == "Internet6:") break;  // the IPv6 table: not read
    if (!section)
      return fail(errc::invalid_argument, at + ": " + quote_name(t) + " before the \"Internet:\" line");
    const auto w = dt::words(t);
    if (netif_column == 0) {
      // "Destination Gateway Flags Netif Expire" (10.15 and later) or with "Refs Use" before Netif.
      const auto netif = std::find(w.begin(), w.end(), "Netif");
      if (w.size() < 4 || w[0] != "Destination" || w[1] != "Gateway" || w[2] != "Flags" || netif == w.end() ||
          (netif - w.begin() != 3 && netif - w.begin() != 5))
        return fail(errc::invalid_argument,
                    at + ": expected the column header \"Destination Gateway Flags Netif Expire\"");
      netif_column = static_cast<std::size_t>(netif - w.begin());
      continue;
    }
    if (w.size() != netif_column + 1 && w.size() != netif_column + 2)
      return fail(errc::invalid_argument, at + ": " + std::to_string(w.size()) + " columns, not " +
                                              std::to_string(netif_column + 1) + " or " +
                                              std::to_string(netif_column + 2));
    if (out.size() == dt::kMaxRoutes)
      return fail(errc::invalid_argument, at + ": more than " + std::to_string(dt::kMaxRoutes) + " routes");
    const std::string_view flags = w[2];
    if (flags.size() > 32 || !std::all_of(flags.begin(), flags.end(), [](char c) {
          return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        }))
      return fail(errc::invalid_argument,
                  at + ": flags " + quote_name(flags) + " are not letters and digits");
    auto r = dt::route_destination(w[0], flags.find('H') != std::string_view::npos, at);
    if (!r) return r.error();
    if (auto e = dt::name_error(w[1], NameKind::host, at, "gateway"); !e.empty())
      return fail(errc::invalid_argument, e);
    if (auto e = dt::name_error(w[netif_column], NameKind::netdev, at, "interface"); !e.empty())
      return fail(errc::invalid_argument, e);
    r.value().gateway = std::string(w[1]);
    r.value().flags = std::string(flags);
    r.value().netif = std::string(w[netif_column]);
    out.push_back(std::move(r).value());
  }
  return out;
}

result<ThunderboltInfo> thunderbolt_info(std::string_view system_profiler_output) {
  if (system_profiler_output.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument, dt::too_big(dt::kProfiler, system_profiler_output.size()));
  ThunderboltInfo info;
  ThunderboltBus* bus = nullptr;
  std::size_t bus_indent = 0;
  std::optional<std::size_t> key_indent;  // the bus's own keys ("Vendor Name", "Port:")
  ThunderboltPort* port = nullptr;
  std::optional<std::size_t> port_key_indent;  // the port's keys ("Status", "Speed")
  bool below_device = false;                   // past the first device heading under the bus
  dt::LineReader lines(system_profiler_output);
  std::string_view line;
  while (lines.next(line)) {
    const std::string at = dt::line_at(dt::kProfiler, lines.number());
    std::size_t indent = 0;
    while (indent < line.size() && dt::is_blank(line[indent])) {
      if (line[indent] == '\t') return fail(errc::invalid_argument, at + ": a tab in the indentation");
      ++indent;
    }
    const std::string_view content = dt::trim_blanks(line);
    if (content.empty()) continue;
    const auto kv = dt::key_value(content);
    if (!kv) return fail(errc::invalid_argument, at + ": " + quote_name(content) + " has no colon");
    const bool heading = content.back() == ':';
    const std::string_view text_of = heading ? content.substr(0, content.size() - 1) : kv->key;
    if (heading && dt::is_bus_heading(text_of) && (bus == nullptr || indent <= bus_indent)) {
      if (info.buses.size() == dt::kMaxBuses)
        return fail(errc::invalid_argument, at + ": more than " + std::to_string(dt::kMaxBuses) + " buses");
      if (auto e = dt::name_error(text_of, NameKind::host, at, "bus"); !e.empty())
        return fail(errc::invalid_argument, e);
      info.buses.push_back({std::string(text_of), {}, {}, {}});
      bus = &info.buses.back();
      bus_indent = indent;
      key_indent.reset();
      port = nullptr;
      below_device = false;
      continue;
    }
    if (bus == nullptr || indent <= bus_indent) {
      if (heading && dt::starts_with(text_of, "Port"))
        return fail(errc::invalid_argument, at + ": a Port heading outside a bus");
      bus = nullptr;  // "Thunderbolt/USB4:" and anything else outside a bus
      continue;
    }
    if (!key_indent) key_indent = indent;
    if (below_device) continue;  // a connected device's own keys, ports and services
    if (indent < *key_indent) {
      port = nullptr;
      continue;
    }
    if (indent == *key_indent) {
      port = nullptr;
      if (heading && dt::starts_with(text_of, "Port")) {
        if (bus->ports.size() == dt::kMaxBusPorts)
          return fail(errc::invalid_argument,
                      at + ": more than " + std::to_string(dt::kMaxBusPorts) + " ports on " + bus->name);
        bus->ports.emplace_back();
        port = &bus->ports.back();
        port_key_indent.reset();
      } else if (!heading && kv->key == "Device Name") {
        if (auto e = dt::name_error(kv->value, NameKind::host, at, "Device Name"); !e.empty())
          return fail(errc::invalid_argument, e);
        bus->device_name = std::string(kv->value);
      }
      continue;
    }
    // Deeper than the bus's keys: a port's keys, or the heading of the device down the chain.
    if (port != nullptr && (!port_key_indent || indent >= *port_key_indent) && !heading) {
      if (!port_key_indent) port_key_indent = indent;
      if (indent != *port_key_indent) continue;
      if (kv->key == "Status") {
        if (auto e = dt::name_error(kv->value, NameKind::host, at, "Status"); !e.empty())
          return fail(errc::invalid_argument, e);
        port->status = std::string(kv->value);
      } else if (kv->key == "Speed") {
        if (!dt::speed(kv->value, *port))
          return fail(errc::invalid_argument,
                      at + ": Speed " + quote_name(kv->value) + " is not \"[Up to ]N Gb/s[ xL]\"");
      } else if (kv->key == "Receptacle") {
        const auto r = dt::decimal(kv->value, 3);
        if (!r)
          return fail(errc::invalid_argument,
                      at + ": Receptacle " + quote_name(kv->value) + " is not a number");
        port->receptacle = *r;
      }
      continue;
    }
    if (port != nullptr && port_key_indent && indent >= *port_key_indent)
      continue;  // a heading inside a port
    if (heading) {
      if (auto e = dt::name_error(text_of, NameKind::host, at, "device"); !e.empty())
        return fail(errc::invalid_argument, e);
      bus->connected = std::string(text_of);
      below_device = true;
      port = nullptr;
    }
  }
  return info;
}

std::optional<unsigned> thunderbolt_generation(const ThunderboltInfo& info) noexcept {
  bool capability_seen = false;
  for (const auto& b : info.buses)
    for (const auto& p : b.ports) {
      if (p.gbps >= 80) return 5;
      capability_seen = capability_seen || (p.capability && p.gbps > 0);
    }
  if (capability_seen) return 4;
  return std::nullopt;
}

result<MacVersion> mac_version(std::string_view sw_vers) {
  constexpr std::string_view kWhat = "sw_vers";
  if (sw_vers.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument, dt::too_big(kWhat, sw_vers.size()));
  MacVersion v;
  std::map<std::string, std::size_t, std::less<>> seen;
  dt::LineReader lines(sw_vers);
  std::string_view line;
  while (lines.next(line)) {
    const std::string at = dt::line_at(kWhat, lines.number());
    const std::string_view t = dt::trim_blanks(line);
    if (t.empty()) continue;
    const auto kv = dt::key_value(t);
    if (!kv) return fail(errc::invalid_argument, at + ": " + quote_name(t) + " is not \"Key: value\"");
    std::string* field = kv->key == "ProductName"      ? &v.product
                         : kv->key == "ProductVersion" ? &v.version
                         : kv->key == "BuildVersion"   ? &v.build
                                                       : nullptr;
    if (field == nullptr) continue;  // ProductVersionExtra and the like
    if (seen.count(kv->key) != 0)
      return fail(errc::invalid_argument, at + ": a second " + std::string(kv->key) + " line");
    seen.emplace(std::string(kv->key), lines.number());
    if (kv->key == "ProductVersion") {
      if (!dt::version_numbers(kv->value))
        return fail(errc::invalid_argument,
                    at + ": ProductVersion " + quote_name(kv->value) + " is not 1-3 dot-separated numbers");
    } else if (auto e = dt::name_error(kv->value, NameKind::host, at, kv->key); !e.empty()) {
      return fail(errc::invalid_argument, e);
    }
    *field = std::string(kv->value);
  }
  if (v.version.empty()) return fail(errc::invalid_argument, "sw_vers: no ProductVersion line");
  return v;
}

bool rdma_release(const MacVersion& v) noexcept {
  const auto n = dt::version_numbers(v.version);
  if (!n) return false;
  const std::uint32_t major = (*n)[0], minor = n->size() > 1 ? (*n)[1] : 0;
  return major > 26 || (major == 26 && minor >= 2);
}

}  // namespace gidpolicy::darwin
