// Host bundles (bundle.hpp): the collector's framing, and each part read by its tool's reader.
#include <gidpolicy/bundle.hpp>
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/darwin_tools.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <set>

namespace gidpolicy {

// A named namespace (unity builds share anonymous ones across files).
namespace bundle_detail {

using Json = nlohmann::json;

constexpr std::string_view kBegin = "=== begin ";
constexpr std::string_view kStderr = "=== stderr ";
constexpr std::string_view kEnd = "=== end ";
constexpr std::string_view kMagic = "# gidpolicy-collect ";

std::string at(const std::string& source, std::size_t line) {
  return source + ":" + std::to_string(line) + ": ";
}

bool part_name_ok(std::string_view n) {
  return !n.empty() && n.size() <= 32 && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::optional<int> parse_int(std::string_view s, int max) {
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > max) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// An error of one part: the bundle, the part, where it begins, and the reader's detail.
Error part_error(const Bundle& b, const BundlePart& p, const Error& e) {
  return Error(e.code, b.source + ": part " + p.name + " (" + p.command + ", its output from line " +
                           std::to_string(p.line + 1) + "): " + e.detail);
}

/// A part's lines, numbered from 1.
template <typename F>
result<void> each_line(std::string_view text, F&& f) {
  std::size_t n = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    GIDPOLICY_TRYV(f(++n, line));
  }
  return success();
}

result<Gid> address(std::string_view text, const std::string& what) {
  auto a = PeerAddress::parse(text);
  if (!a) return fail(errc::invalid_field, what + " " + show_text(text, 64) + ": " + a.error().detail);
  return a.value().address;
}

// --- Linux: ip -j -d addr ---------------------------------------------------------------------

/// `ip -j`'s document: a JSON array of at most `max` objects. Nesting is bounded before parsing
/// (ip prints three levels; 32 is far past any), so no input can make the parse or the value's
/// destruction deep.
result<Json> ip_json_array(std::string_view text, const char* what, std::size_t max) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > 32)
        return fail(errc::parse_error,
                    std::string("nested deeper than 32 levels: not what `ip -j ") + what + "` prints");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  Json doc;
  try {
    doc = Json::parse(text, nullptr, true, false);
  } catch (const Json::parse_error& e) {
    return fail(errc::parse_error,
                std::string("not the JSON `ip -j ") + what + "` prints: " + show_text(e.what(), 160));
  }
  if (!doc.is_array())
    return fail(errc::parse_error, std::string("expected a JSON array (`ip -j ") + what + "`)");
  if (doc.size() > max)
    return fail(errc::invalid_argument,
                std::to_string(doc.size()) + " entries: at most " + std::to_string(max));
  return doc;
}

std::string json_string(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

result<std::vector<HostInterface>> ip_addr_interfaces(std::string_view text) {
  GIDPOLICY_TRY(doc, ip_json_array(text, "addr", kMaxInterfaces));
  std::vector<HostInterface> out;
  for (std::size_t k = 0; k < doc.size(); ++k) {
    const Json& j = doc[k];
    const std::string where = "interface [" + std::to_string(k) + "]";
    if (!j.is_object()) return fail(errc::invalid_field, where + ": expected an object");
    HostInterface i;
    i.name = json_string(j, "ifname");
    if (auto why = name_problem(i.name, NameKind::netdev))
      return fail(errc::invalid_field, where + " ifname " + show_text(i.name, 64) + ": " + *why);
    if (const auto it = j.find("ifindex"); it != j.end() && it->is_number_unsigned())
      i.ifindex = static_cast<std::uint32_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), 0xffffffffu));
    if (const auto it = j.find("mtu"); it != j.end() && it->is_number_unsigned())
      i.mtu = static_cast<std::uint32_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), 0xffffffffu));
    if (const auto it = j.find("flags"); it != j.end() && it->is_array())
      for (const Json& f : *it) {
        if (!f.is_string()) continue;
        const std::string s = f.get<std::string>();
        // ip prints IFF_UP as UP, and the link being there (IFF_LOWER_UP) as LOWER_UP.
        if (s == "UP") i.up = true;
        if (s == "LOWER_UP") i.running = true;
        if (s == "LOOPBACK") i.loopback = true;
      }
    // A bridge port: "master" names the bridge, and with -d "linkinfo" says the master is a
    // bridge (a bond's slave is not a bridge member: its addresses are the bond's anyway).
    const std::string master = json_string(j, "master");
    if (!master.empty()) {
      std::string kind;
      if (const auto li = j.find("linkinfo"); li != j.end() && li->is_object())
        kind = json_string(*li, "info_slave_kind");
      if (kind == "bridge")
        i.bridge = master;
      else if (kind.empty())
        i.bridge_unknown =
            "ip printed its master " + show_text(master, 32) + " without its kind (run ip -j -d addr)";
    }
    if (const auto it = j.find("addr_info"); it != j.end() && it->is_array()) {
      if (it->size() > kMaxAddressesPerInterface)
        return fail(errc::invalid_argument,
                    where + ": more than " + std::to_string(kMaxAddressesPerInterface) + " addresses");
      for (const Json& a : *it) {
        if (!a.is_object()) continue;
        const std::string family = json_string(a, "family");
        if (family != "inet" && family != "inet6") continue;
        GIDPOLICY_TRY(g, address(json_string(a, "local"), where + " " + family + " local"));
        const auto p = a.find("prefixlen");
        const unsigned max = family == "inet" ? 32 : 128;
        if (p == a.end() || !p->is_number_unsigned() || p->get<std::uint64_t>() > max)
          return fail(errc::invalid_field, where + " " + family + " " + json_string(a, "local") +
                                               ": expected prefixlen 0.." + std::to_string(max));
        i.addresses.push_back({g, static_cast<unsigned>(p->get<std::uint64_t>())});
      }
    }
    out.push_back(std::move(i));
  }
  return out;
}

// --- Linux: ip -j route -----------------------------------------------------------------------

result<std::vector<BundleRoute>> ip_routes(std::string_view text, bool ipv4) {
  GIDPOLICY_TRY(doc, ip_json_array(text, "route", 65536));
  std::vector<BundleRoute> out;
  for (std::size_t k = 0; k < doc.size(); ++k) {
    const Json& j = doc[k];
    const std::string where = "route [" + std::to_string(k) + "]";
    if (!j.is_object()) return fail(errc::invalid_field, where + ": expected an object");
    BundleRoute r;
    r.ipv4 = ipv4;
    const std::string dst = json_string(j, "dst");
    const std::string type = json_string(j, "type");
    if (type == "blackhole")
      r.type = RouteType::blackhole;
    else if (type == "unreachable")
      r.type = RouteType::unreachable;
    else if (type == "prohibit")
      r.type = RouteType::prohibit;
    else if (type == "local")
      r.type = RouteType::local;
    else if (type == "broadcast")
      r.type = RouteType::broadcast;
    else if (type == "multicast" || type == "anycast" || type == "throw" || type == "nat")
      continue;  // not a path to a peer
    if (dst == "default") {
      r.destination = {ipv4 ? Gid::ipv4_mapped(0) : Gid{}, 0u};
    } else {
      const std::size_t slash = dst.find('/');
      GIDPOLICY_TRY(g, address(std::string_view(dst).substr(0, slash), where + " dst"));
      if (g.is_ipv4_mapped() != ipv4)
        return fail(errc::invalid_field, where + " dst " + show_text(dst, 64) + ": not an " +
                                             (ipv4 ? "IPv4" : "IPv6") + " destination");
      unsigned len = ipv4 ? 32 : 128;
      if (slash != std::string::npos) {
        auto n = parse_int(std::string_view(dst).substr(slash + 1), static_cast<int>(len));
        if (!n)
          return fail(errc::invalid_field, where + " dst " + show_text(dst, 64) + ": bad prefix length");
        len = static_cast<unsigned>(*n);
      }
      r.destination = {g, len};  // in its family's bits, as IfAddress
    }
    r.netdev = json_string(j, "dev");
    if (!r.netdev.empty())
      if (auto why = name_problem(r.netdev, NameKind::netdev))
        return fail(errc::invalid_field, where + " dev " + show_text(r.netdev, 64) + ": " + *why);
    if (const std::string s = json_string(j, "prefsrc"); !s.empty()) {
      GIDPOLICY_TRY(g, address(s, where + " prefsrc"));
      r.source = g;
    }
    if (const std::string s = json_string(j, "gateway"); !s.empty()) {
      GIDPOLICY_TRY(g, address(s, where + " gateway"));
      r.gateway = g;
    }
    out.push_back(std::move(r));
  }
  return out;
}

// --- Linux: /etc/os-release, /dev/infiniband ---------------------------------------------------

std::string os_release_name(std::string_view text) {
  std::string name;
  (void)each_line(text, [&](std::size_t, std::string_view line) -> result<void> {
    if (line.starts_with("PRETTY_NAME=")) {
      std::string_view v = line.substr(12);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
        v = v.substr(1, v.size() - 2);
      name = show_text(v, 80);
    }
    return success();
  });
  return name;
}

// --- the environment part ---------------------------------------------------------------------

result<std::vector<std::pair<std::string, std::string>>> environment(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  GIDPOLICY_TRYV(each_line(text, [&](std::size_t n, std::string_view line) -> result<void> {
    if (line.empty()) return success();
    const std::size_t eq = line.find('=');
    const std::string_view name = eq == std::string_view::npos ? line : line.substr(0, eq);
    const bool ok =
        eq != std::string_view::npos && !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        });
    if (!ok)
      return fail(errc::invalid_field,
                  "line " + std::to_string(n) + ": expected NAME=VALUE, found " + quote_name(line, 64));
    if (out.size() >= 4096) return fail(errc::invalid_argument, "more than 4096 variables");
    out.emplace_back(std::string(name), std::string(line.substr(eq + 1)));
    return success();
  }));
  return out;
}

}  // namespace bundle_detail

using namespace bundle_detail;

std::string BundlePart::failure() const {
  std::string first = errors.substr(0, errors.find('\n'));
  return "exit " + std::to_string(exit_status) +
         (first.empty() ? std::string() : ": " + show_text(first, 120));
}

const BundlePart* Bundle::part(std::string_view name) const noexcept {
  for (const BundlePart& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

std::optional<Platform> Bundle::platform() const noexcept {
  const std::string_view s = system;
  if (s.starts_with("Darwin")) return Platform::darwin;
  if (s.starts_with("Linux")) return Platform::linux_kernel;
  if (part("ifconfig") || part("rdma_ctl") || part("sw_vers")) return Platform::darwin;
  if (part("ip_addr") || part("sysfs_gids") || part("os_release")) return Platform::linux_kernel;
  return std::nullopt;
}

result<Bundle> parse_bundle(std::string_view text, std::string source) {
  if (text.size() > kMaxBundleBytes)
    return fail(errc::invalid_argument, source + ": " + std::to_string(text.size()) +
                                            " bytes: a bundle is at most " + std::to_string(kMaxBundleBytes));
  if (text.find('\0') != std::string_view::npos)
    return fail(errc::parse_error, source + ": holds a NUL byte: not a bundle (a text file)");
  Bundle b;
  b.source = std::move(source);
  bool magic = false;
  BundlePart* open = nullptr;
  bool in_errors = false;
  std::set<std::string> names;
  const auto framed = each_line(text, [&](std::size_t n, std::string_view line) -> result<void> {
    const std::string where = at(b.source, n);
    if (!magic) {
      // A pasted bundle keeps its Markdown fence and may start with blank lines.
      if (trim(line).empty() || trim(line).starts_with("```")) return success();
      if (!line.starts_with(kMagic))
        return fail(errc::parse_error, where + "expected the bundle's first line '# gidpolicy-collect " +
                                           std::to_string(kBundleVersion) +
                                           "' (written by gidpolicy-collect), found " + quote_name(line, 64));
      auto v = parse_int(trim(line.substr(kMagic.size())), 1'000'000);
      if (!v || *v == 0)
        return fail(
            errc::parse_error,
            where + "expected a version number after '# gidpolicy-collect', found " + quote_name(line, 64));
      if (static_cast<unsigned>(*v) > kBundleVersion)
        return fail(errc::parse_error,
                    where + "bundle version " + std::to_string(*v) + " is newer than this gidpolicy reads (" +
                        std::to_string(kBundleVersion) +
                        "): use the gidpolicy-collect of this gidpolicy, or a newer gidpolicy");
      b.version = static_cast<unsigned>(*v);
      magic = true;
      return success();
    }
    if (line.starts_with(kBegin)) {
      if (open)
        return fail(errc::parse_error, where + "part " + open->name + " (line " + std::to_string(open->line) +
                                           ") has no end line before this begin line");
      const std::string_view rest = line.substr(kBegin.size());
      const std::size_t colon = rest.find(':');
      const std::string_view name = rest.substr(0, colon);
      if (!part_name_ok(name))
        return fail(errc::parse_error,
                    where + "expected '=== begin NAME: COMMAND' with NAME of a-z, 0-9 and _, found " +
                        quote_name(line, 64));
      if (!names.insert(std::string(name)).second)
        return fail(errc::parse_error, where + "part " + std::string(name) + " appears twice");
      if (b.parts.size() >= kMaxBundleParts)
        return fail(errc::invalid_argument,
                    where + "more than " + std::to_string(kMaxBundleParts) + " parts");
      BundlePart p;
      p.name = std::string(name);
      p.command =
          colon == std::string_view::npos ? std::string() : show_text(trim(rest.substr(colon + 1)), 200);
      p.line = n;
      b.parts.push_back(std::move(p));
      open = &b.parts.back();
      in_errors = false;
      return success();
    }
    if (line.starts_with(kStderr) || line.starts_with(kEnd)) {
      const bool end = line.starts_with(kEnd);
      const std::string_view rest = line.substr(end ? kEnd.size() : kStderr.size());
      const std::string_view name = trim(end ? rest.substr(0, rest.find(':')) : rest);
      if (!open || name != open->name)
        return fail(errc::parse_error,
                    where +
                        (open ? "expected the end of part " + open->name : std::string("no part is open")) +
                        ", found " + quote_name(line, 64));
      if (!end) {
        if (in_errors) return fail(errc::parse_error, where + "a second stderr line in part " + open->name);
        in_errors = true;
        return success();
      }
      const std::size_t colon = rest.find(':');
      const std::string_view status =
          colon == std::string_view::npos ? std::string_view() : trim(rest.substr(colon + 1));
      auto code = status.starts_with("exit ") ? parse_int(trim(status.substr(5)), 255) : std::nullopt;
      if (!code)
        return fail(errc::parse_error, where + "expected '=== end " + open->name +
                                           ": exit N' with N 0..255, found " + quote_name(line, 64));
      open->exit_status = *code;
      open = nullptr;
      return success();
    }
    if (open) {
      // The collector indents an output line that starts with "===" (after spaces) by one space.
      std::string_view l = line;
      const std::size_t spaces = l.find_first_not_of(' ');
      if (spaces != std::string_view::npos && spaces > 0 && l.substr(spaces).starts_with("==="))
        l.remove_prefix(1);
      std::string& to = in_errors ? open->errors : open->output;
      to.append(l).push_back('\n');
      return success();
    }
    if (line.starts_with("# ")) {
      const std::string_view h = line.substr(2);
      const auto value = [&](std::string_view key) { return show_text(trim(h.substr(key.size())), 200); };
      if (h.starts_with("host:"))
        b.host = value("host:");
      else if (h.starts_with("system:"))
        b.system = value("system:");
      else if (h.starts_with("date:"))
        b.date = value("date:");
      return success();
    }
    if (trim(line).empty() || line.starts_with("#") || trim(line).starts_with("```")) return success();
    return fail(errc::parse_error, where + "text outside any part: " + quote_name(line, 64));
  });
  if (!framed) return fail(framed.error());
  if (!magic)
    return fail(errc::parse_error, b.source + ": empty: not a bundle (no '# gidpolicy-collect' line)");
  if (open)
    return fail(errc::parse_error, b.source + ": part " + open->name + " (line " +
                                       std::to_string(open->line) +
                                       ") has no end line: the bundle is cut short");
  return b;
}

result<Bundle> read_bundle_file(const std::string& path, std::size_t max_bytes) {
  auto text = formats::read_text_file(path, std::min(max_bytes, kMaxBundleBytes));
  if (!text) {
    // The text reader's advice is a table's (--input-format); binary data is not a bundle either.
    const std::string& d = text.error().detail;
    const std::size_t cut = d.find(", not a table");
    if (cut != std::string::npos)
      return fail(errc::parse_error, d.substr(0, cut) + ", not a bundle: gidpolicy-collect writes text");
    return fail(text.error());
  }
  return parse_bundle(text.value(), path);
}

namespace bundle_detail {

/// Linux: tables from the sysfs listing (it names the netdevs), else from ibv_devinfo; and why
/// no device is listed, as read_no_device() says it live.
result<void> linux_tables(const Bundle& b, BundleHost& h) {
  const BundlePart* sysfs = b.part("sysfs_gids");
  const BundlePart* devinfo = b.part("ibv_devinfo");
  std::vector<std::string> kernel_devices;
  if (sysfs && sysfs->ran() && !trim(sysfs->output).empty()) {
    auto t = formats::read_sysfs_listing(sysfs->output, "sysfs listing");
    if (!t) return fail(part_error(b, *sysfs, t.error()));
    h.tables = std::move(t).value();
    h.tables_from = "sysfs_gids";
    for (const GidTable& x : h.tables)
      if (kernel_devices.empty() || kernel_devices.back() != x.port().device)
        kernel_devices.push_back(x.port().device);
  }
  // What libibverbs lists: ibv_devinfo's own tables, or its "No IB devices found".
  std::vector<GidTable> listed;
  bool lists_none = false;
  if (devinfo && devinfo->ran() && !trim(devinfo->output).empty()) {
    auto t = formats::read_tables_as(devinfo->output, formats::Format::devinfo, "ibv_devinfo output");
    if (!t) return fail(part_error(b, *devinfo, t.error()));
    listed = std::move(t).value();
  } else if (devinfo && devinfo->exit_status != 127) {
    lists_none = true;  // it ran and listed nothing ("No IB devices found", or failed to list)
  }
  if (h.tables.empty() && !listed.empty()) {
    h.tables = std::move(listed);
    h.tables_from = "ibv_devinfo";
  }
  if (!h.tables.empty() && !(lists_none && !kernel_devices.empty())) return success();
  // No table: the cause, from what the host showed.
  NoDevice d;
  const std::string said =
      devinfo ? show_text(devinfo->errors.substr(0, devinfo->errors.find('\n')), 160) : std::string();
  d.detail = said;
  if (!kernel_devices.empty() && lists_none) {
    d.cause = NoDevice::Cause::provider_missing;
    d.kernel_devices = kernel_devices;
    if (const BundlePart* dev = b.part("dev_infiniband"); dev && dev->ran())
      d.uverbs_nodes = dev->output.find("uverbs") != std::string::npos;
  } else if (devinfo && devinfo->exit_status == 127 && !sysfs) {
    return success();  // nothing says: no table, no cause (the notes say why)
  } else {
    d.cause = NoDevice::Cause::no_kernel_device;
    for (const HostInterface& i : h.interfaces)
      if (!i.loopback && i.up && i.bridge.empty()) {
        d.netdev = i.name;
        break;
      }
  }
  h.no_device = d;
  return success();
}

result<void> linux_host(const Bundle& b, BundleHost& h) {
  if (const BundlePart* p = b.part("os_release"); p && p->ran()) h.system = os_release_name(p->output);
  if (const BundlePart* p = b.part("ip_addr")) {
    if (p->ran()) {
      auto i = ip_addr_interfaces(p->output);
      if (!i) return fail(part_error(b, *p, i.error()));
      h.interfaces = std::move(i).value();
      h.interfaces_known = true;
    } else {
      h.interfaces_error = "the bundle's ip -j -d addr failed: " + p->failure();
    }
  } else {
    h.interfaces_error = "the bundle has no ip_addr part";
  }
  for (const auto& [name, v4] : {std::pair{"ip_route", true}, std::pair{"ip_route6", false}}) {
    const BundlePart* p = b.part(name);
    if (!p) continue;
    if (!p->ran()) continue;  // a note (read_bundle_host)
    auto r = ip_routes(p->output, v4);
    if (!r) return fail(part_error(b, *p, r.error()));
    h.routes.insert(h.routes.end(), r.value().begin(), r.value().end());
    h.routes_known = true;
  }
  return linux_tables(b, h);
}

result<void> darwin_host(const Bundle& b, BundleHost& h) {
  if (const BundlePart* p = b.part("sw_vers"); p && p->ran()) {
    auto v = darwin::mac_version(p->output);
    if (!v) return fail(part_error(b, *p, v.error()));
    h.release = v.value().version;
    h.rdma_release = darwin::rdma_release(v.value());
    h.system = v.value().product + " " + v.value().version +
               (v.value().build.empty() ? std::string() : " (" + v.value().build + ")");
  }
  if (const BundlePart* p = b.part("rdma_ctl")) {
    if (p->ran()) {
      auto e = darwin::rdma_ctl_enabled(p->output);
      if (!e) return fail(part_error(b, *p, e.error()));
      h.rdma_enabled = e.value();
    } else {
      h.rdma_state_error = "the bundle's rdma_ctl status failed: " + p->failure();
    }
  } else {
    h.rdma_state_error = "the bundle has no rdma_ctl part";
  }
  // Apple's ibv_devinfo is the only source of a Mac's tables (no sysfs); an empty listing is
  // rdma_ctl's and the hardware's to explain (rdma_disabled, no_rdma_device).
  if (const BundlePart* p = b.part("ibv_devinfo"); p && p->ran() && !trim(p->output).empty()) {
    auto t = formats::read_tables_as(p->output, formats::Format::devinfo, "ibv_devinfo output");
    if (!t) return fail(part_error(b, *p, t.error()));
    h.tables = std::move(t).value();
    h.tables_from = "ibv_devinfo";
  }
  if (const BundlePart* p = b.part("ifconfig")) {
    if (p->ran()) {
      auto i = darwin::ifconfig_interfaces(p->output);
      if (!i) return fail(part_error(b, *p, i.error()));
      h.interfaces = std::move(i).value();
      h.interfaces_known = true;
    } else {
      h.interfaces_error = "the bundle's ifconfig -a failed: " + p->failure();
    }
  } else {
    h.interfaces_error = "the bundle has no ifconfig part";
  }
  if (const BundlePart* p = b.part("hardware_ports"); p && p->ran()) {
    auto ports = darwin::hardware_ports(p->output);
    if (!ports) return fail(part_error(b, *p, ports.error()));
    for (const darwin::HardwarePort& hp : ports.value())
      if (darwin::is_thunderbolt_port(hp)) h.thunderbolt_interfaces.push_back(hp.device);
  }
  if (const BundlePart* p = b.part("service_order"); p && p->ran()) {
    auto services = darwin::network_services(p->output);
    if (!services) return fail(part_error(b, *p, services.error()));
    for (const darwin::NetworkService& sv : services.value())
      if (sv.port == "Thunderbolt Bridge") h.thunderbolt_bridge_service = sv.enabled;
  }
  if (const BundlePart* p = b.part("routes"); p && p->ran()) {
    auto routes = darwin::netstat_routes(p->output);
    if (!routes) return fail(part_error(b, *p, routes.error()));
    for (const darwin::RouteLine& l : routes.value()) {
      BundleRoute r;
      r.destination = l.destination;
      r.netdev = l.netif;
      // route(8)'s flags: R a reject route (EHOSTUNREACH when used), B a blackhole.
      if (l.flags.find('B') != std::string::npos)
        r.type = RouteType::blackhole;
      else if (l.flags.find('R') != std::string::npos)
        r.type = RouteType::unreachable;
      if (auto g = PeerAddress::parse(l.gateway)) r.gateway = g.value().address;  // link#N, a MAC: none
      h.routes.push_back(std::move(r));
    }
    h.routes_known = true;
  }
  if (const BundlePart* p = b.part("thunderbolt"); p && p->ran()) {
    auto tb = darwin::thunderbolt_info(p->output);
    if (!tb) return fail(part_error(b, *p, tb.error()));
    h.thunderbolt_generation = darwin::thunderbolt_generation(tb.value());
    unsigned best = 0;
    for (const darwin::ThunderboltBus& bus : tb.value().buses)
      for (const darwin::ThunderboltPort& port : bus.ports)
        if (port.gbps > best) {
          best = port.gbps;
          h.thunderbolt_speed = port.speed;
        }
  }
  return success();
}

}  // namespace bundle_detail

result<BundleHost> read_bundle_host(const Bundle& b) {
  BundleHost h;
  const auto platform = b.platform();
  if (!platform)
    return fail(errc::parse_error,
                b.source +
                    ": says neither its system (# system: Darwin or Linux) nor holds a part only one "
                    "platform's collector writes");
  h.platform = *platform;
  h.host = b.host;
  h.system = b.system;
  if (h.platform == Platform::darwin) {
    GIDPOLICY_TRYV(darwin_host(b, h));
  } else {
    GIDPOLICY_TRYV(linux_host(b, h));
  }
  if (const BundlePart* p = b.part("environment")) {
    if (p->ran()) {
      auto e = environment(p->output);
      if (!e) return fail(part_error(b, *p, e.error()));
      h.environment = std::move(e).value();
    }
  }
  // Every command that did not succeed, once: what the bundle could not tell (the findings say
  // what follows from it).
  for (const BundlePart& p : b.parts)
    if (!p.ran()) h.notes.push_back(p.name + ": " + p.failure());
  return h;
}

DoctorInput doctor_input(const BundleHost& h) {
  DoctorInput in;
  in.platform = h.platform;
  in.tables = h.tables;
  in.interfaces = h.interfaces;
  in.interfaces_known = h.interfaces_known;
  in.interfaces_error = h.interfaces_error;
  in.rdma_enabled = h.rdma_enabled;
  in.rdma_state_error = h.rdma_state_error;
  in.no_device = h.no_device;
  in.thunderbolt_generation = h.thunderbolt_generation;
  in.thunderbolt_speed = h.thunderbolt_speed;
  in.rdma_release = h.rdma_release;
  in.release = h.release;
  in.host_checked = true;
  in.from_file = false;  // one moment: the tables and the interfaces were read together
  const auto names = pin_variables();
  const auto selectors = device_variables();
  for (const auto& [name, value] : h.environment)
    if (std::find(names.begin(), names.end(), name) != names.end() ||
        std::find(selectors.begin(), selectors.end(), name) != selectors.end())
      in.pins.push_back({name, value});
  return in;
}

result<std::vector<NetInterface>> BundleRoutes::interfaces() {
  if (!host_.interfaces_known)
    return fail(errc::io_error, "the bundle does not list its interfaces: " + host_.interfaces_error);
  std::vector<NetInterface> out;
  for (const HostInterface& i : host_.interfaces) out.push_back({i.name, i.ifindex});
  return out;
}

result<Route> BundleRoutes::route_to(const PeerAddress& peer) {
  if (!host_.routes_known) return fail(errc::io_error, "the bundle holds no routing table");
  const bool v4 = peer.address.is_ipv4_mapped();
  if (!peer.scope.empty()) {
    // A scoped link-local peer is reached on its interface, whatever the table says.
    for (const HostInterface& i : host_.interfaces)
      if (i.name == peer.scope) return Route{peer, i.name, i.ifindex, std::nullopt, RouteType::unicast};
    return fail(errc::invalid_argument,
                "scope %" + show_text(peer.scope, 32) + ": the bundle has no such interface");
  }
  const BundleRoute* best = nullptr;
  for (const BundleRoute& r : host_.routes)
    // IPv4 prefixes count IPv4 bits (IfAddress); the GID holds them after 96 bits of ::ffff:.
    if (r.ipv4 == v4 && peer.address.in_prefix(r.destination.address, r.destination.prefix + (v4 ? 96 : 0)) &&
        (!best || r.destination.prefix > best->destination.prefix))
      best = &r;
  if (!best)
    return fail(errc::no_route,
                "no route in the bundle's table covers " + show_text(peer.address.to_string(), 64));
  Route out{peer, best->netdev, 0, best->source, best->type};
  for (const HostInterface& i : host_.interfaces)
    if (i.name == best->netdev) {
      out.ifindex = i.ifindex;
      // Without a preferred source, the kernel takes an address of the output interface, one in
      // the destination's subnet first (an assigned one, not 169.254, when it has both).
      if (!out.source)
        for (const IfAddress& a : i.addresses)
          if (a.address.is_ipv4_mapped() == v4 && !a.address.is_link_local() &&
              (!out.source || (out.source->is_ipv4_link_local() && !a.address.is_ipv4_link_local())))
            out.source = a.address;
    }
  return out;
}

}  // namespace gidpolicy
