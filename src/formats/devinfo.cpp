#include <gidpolicy/formats/devinfo.hpp>

#include "text.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace gidpolicy::formats {
namespace {

using detail::at;
using detail::excerpt;
using detail::Line;
using detail::trim;

// Apple reports Thunderbolt RDMA devices with transport 100 (LinkLayer::kRawThunderbolt).
constexpr std::uint64_t kThunderboltTransport = LinkLayer::kRawThunderbolt;

// ibv_devinfo's text for an active_width or active_speed encoding ("4X", "25.0 Gbps"), with
// rdma-core's own words for an encoding it does not know.
std::string devinfo_width_text(std::uint8_t width) {
  auto lanes = LinkRate{width, 0}.lanes();
  return lanes ? std::to_string(*lanes) + "X" : std::string("invalid widthX");
}
std::string devinfo_speed_text(std::uint8_t speed) {
  if (speed == 8) return "10.0 Gbps";  // FDR10 prints as QDR does; the number tells them apart
  auto half = LinkRate{0, speed}.lane_half_gbps();
  if (!half) return "invalid speed";
  return std::to_string(*half / 2) + (*half % 2 ? ".5" : ".0") + " Gbps";
}

// One port section being read.
struct PortBuild {
  PortInfo info;
  std::size_t line = 0;  // where the section began ("port:" or its first line)
  bool explicit_header = false;
  std::optional<std::size_t> link_layer_line, state_line, mtu_line, lid_line, tbl_len_line, width_line,
      speed_line;
  LinkRate rate;  // filled from active_width and active_speed, which devinfo prints together
  bool link_layer_unknown_text = false;  // "Unknown": may be Thunderbolt (see transport)
  struct Pending {
    GidEntry entry;
    std::size_t line;
    bool has_suffix;
  };
  std::vector<Pending> gids;
  std::map<std::uint32_t, std::size_t> index_lines;  // index -> line, for duplicate messages
  std::optional<std::size_t> first_suffix_line, first_plain_line;
};

struct Device {
  std::string name;
  std::optional<std::uint64_t> transport;
  bool verbose = false;
};

class Reader {
 public:
  Reader(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  result<std::vector<GidTable>> run() {
    for (const Line& l : detail::split_lines(text_)) {
      if (auto col = detail::binary_column(l.text))
        return fail(errc::parse_error, at(source_, l.number) + ":" + std::to_string(*col) +
                                           ": binary data (byte " + detail::hex_byte(l.text, *col) +
                                           "): expected ibv_devinfo text");
      GIDPOLICY_TRYV(line(l));
      last_line_ = l.number;
    }
    GIDPOLICY_TRYV(finish_port(last_line_ + 1));
    if (full_output_ && device_ && !device_has_port_)
      return fail(errc::parse_error, at(source_, device_line_) + ": hca_id " + device_->name +
                                         " has no port section: the output ends early (truncated paste?)");
    if (tables_.empty())
      return fail(errc::parse_error, std::string(source_) +
                                         ": no port section and no GID line: expected ibv_devinfo output "
                                         "('hca_id:', 'port:' or 'GID[  n]:' lines)");
    return std::move(tables_);
  }

 private:
  result<void> line(const Line& l) {
    std::string_view t = trim(l.text);
    if (t.empty()) return success();
    if (t.starts_with("GID[")) return gid_line(l, t);
    std::size_t colon = t.find(':');
    if (colon == std::string_view::npos) return success();  // "NO SUPPORT", capability names
    std::string_view key = trim(t.substr(0, colon));
    std::string_view value = trim(t.substr(colon + 1));
    if (key == "hca_id") return hca_line(l, value);
    if (key == "port") return port_line(l, value);
    if (key == "transport") {
      if (device_) device_->transport = detail::parenthesised_number(value, 0xffffffffu);
      return success();
    }
    // Printed only by `ibv_devinfo -v`, before the ports: every port of this device must then
    // show gid_tbl_len (and its GIDs), so a port without it is a cut paste, not a short table.
    if (key == "max_qp" && device_ && !port_) device_->verbose = true;
    if (key == "state" || key == "active_mtu" || key == "port_lid" || key == "link_layer" ||
        key == "gid_tbl_len" || key == "active_width" || key == "active_speed")
      return port_field(l, key, value);
    // Every other devinfo line (limits, flags, GUIDs) says nothing about GIDs, and neither does a
    // key a newer rdma-core adds between known lines (the per-port `effective_speed:` added after
    // v64, from ibv_query_port_speed()): skipped by key, never matched by prefix, so it cannot be mis-read
    // as a known field nor start a port section.
    return success();
  }

  result<void> hca_line(const Line& l, std::string_view value) {
    GIDPOLICY_TRYV(finish_port(l.number));
    if (full_output_ && device_ && !device_has_port_)
      return fail(errc::parse_error, at(source_, device_line_) + ": hca_id " + device_->name +
                                         " has no port section before the next hca_id at line " +
                                         std::to_string(l.number));
    if (value.empty() || detail::tokens(value).size() != 1)
      return fail(errc::invalid_field,
                  at(source_, l.number) + ": hca_id: expected one device name, found " + excerpt(value));
    if (auto why = detail::name_problem(value, detail::NameKind::device))
      return fail(errc::invalid_field,
                  at(source_, l.number) + ": hca_id: device name " + excerpt(value) + ": " + *why);
    full_output_ = true;
    device_ = Device{std::string(value), std::nullopt, false};
    device_line_ = l.number;
    device_has_port_ = false;
    return success();
  }

  result<void> port_line(const Line& l, std::string_view value) {
    GIDPOLICY_TRYV(finish_port(l.number));
    auto n = detail::parse_decimal(value, 255);
    if (!n || *n == 0)
      return fail(errc::invalid_field,
                  at(source_, l.number) + ": port: expected a port number 1-255, found " + excerpt(value));
    start_port(l.number, static_cast<std::uint32_t>(*n), true);
    return success();
  }

  void start_port(std::size_t line_no, std::uint32_t number, bool explicit_header) {
    port_.emplace();
    port_->info.device = device_ ? device_->name : std::string(kUnnamedDevice);
    port_->info.port = number;
    port_->line = line_no;
    port_->explicit_header = explicit_header;
    if (device_) device_has_port_ = true;
  }

  // A port field seen twice in one section means two sections were pasted without the "port:"
  // line between them; reading on would merge two tables into one.
  result<void> once(const Line& l, std::string_view key, std::optional<std::size_t>& seen) {
    if (seen)
      return fail(errc::parse_error, at(source_, l.number) + ": second '" + std::string(key) +
                                         "' in the port section that began at line " +
                                         std::to_string(port_->line) + " (first at line " +
                                         std::to_string(*seen) +
                                         "): expected a 'port:' or 'hca_id:' line between two ports");
    seen = l.number;
    return success();
  }

  result<void> port_field(const Line& l, std::string_view key, std::string_view value) {
    if (!port_) start_port(l.number, 1, false);  // a pasted port section without its "port:" line
    PortBuild& p = *port_;
    auto bad = [&](const std::string& expected) {
      return fail(errc::invalid_field, at(source_, l.number) + ": " + std::string(key) + ": expected " +
                                           expected + ", found " + excerpt(value));
    };
    if (key == "state") {
      GIDPOLICY_TRYV(once(l, key, p.state_line));
      std::optional<PortState> st;
      if (auto n = detail::parenthesised_number(value, 255)) {
        if (*n <= static_cast<std::uint64_t>(PortState::active_defer)) st = static_cast<PortState>(*n);
      } else {
        st = port_state_from_string(value);
      }
      if (!st) return bad("a port state such as 'PORT_ACTIVE (4)'");
      p.info.state = *st;
    } else if (key == "active_mtu") {
      GIDPOLICY_TRYV(once(l, key, p.mtu_line));
      std::optional<Mtu> mtu;
      if (auto n = detail::parenthesised_number(value, 255)) {
        if (*n >= 1 && *n <= 5) mtu = static_cast<Mtu>(*n);
      } else if (auto bytes = detail::parse_decimal(value, 4096)) {
        mtu = mtu_from_bytes(static_cast<unsigned>(*bytes));
      }
      if (!mtu) return bad("an MTU such as '1024 (3)'");
      p.info.active_mtu = *mtu;
    } else if (key == "port_lid") {
      GIDPOLICY_TRYV(once(l, key, p.lid_line));
      auto lid = detail::parse_decimal(value, 0xffff);
      if (!lid) return bad("a LID 0-65535");
      p.info.lid = static_cast<std::uint16_t>(*lid);
    } else if (key == "link_layer") {
      GIDPOLICY_TRYV(once(l, key, p.link_layer_line));
      // devinfo prints "Unknown" for every link layer it does not name and, since rdma-core
      // v33, "Unspecified" for IBV_LINK_LAYER_UNSPECIFIED (EFA, iWARP): both read as unknown
      // (raw 0); text devinfo never prints ("Banana") is refused (docs/formats.md, leniency rule).
      auto ll = value == "Unspecified" ? std::optional<LinkLayer>(LinkLayer::from_raw(0))
                                       : link_layer_from_string(value);
      if (value.empty() || !ll) return bad("Ethernet, InfiniBand, Thunderbolt, Unspecified or Unknown");
      p.info.link_layer = *ll;
      p.link_layer_unknown_text = !ll || ll->kind() == LinkLayer::Kind::unknown;
    } else if (key == "gid_tbl_len") {
      GIDPOLICY_TRYV(once(l, key, p.tbl_len_line));
      auto len = detail::parse_decimal(value, 0x80000000u);
      if (!len) return bad("a decimal table length");
      p.info.gid_tbl_len = static_cast<std::uint32_t>(*len);
      for (const auto& g : p.gids)
        if (g.entry.index >= *p.info.gid_tbl_len)
          return fail(errc::index_too_large, at(source_, g.line) + ": GID index " +
                                                 std::to_string(g.entry.index) +
                                                 " is not below gid_tbl_len " + std::string(value) +
                                                 " (line " + std::to_string(l.number) + ")");
    } else if (key == "active_width" || key == "active_speed") {
      // "4X (2)", "25.0 Gbps (32)": the number is the verbs encoding; the text must be what
      // devinfo prints for it, or the line was edited.
      const bool width = key == "active_width";
      GIDPOLICY_TRYV(once(l, key, width ? p.width_line : p.speed_line));
      auto n = detail::parenthesised_number(value, 255);
      const auto v = static_cast<std::uint8_t>(n.value_or(0));
      if (!n || detail::before_parenthesis(value) != (width ? devinfo_width_text(v) : devinfo_speed_text(v)))
        return bad(width ? "a link width as ibv_devinfo prints it, such as '4X (2)'"
                         : "a lane speed as ibv_devinfo prints it, such as '25.0 Gbps (32)'");
      (width ? p.rate.width : p.rate.speed) = v;
    }
    return success();
  }

  result<void> gid_line(const Line& l, std::string_view t) {
    // "GID[%3d]:\t\t<gid>[, RoCE vN]"
    auto bad = [&](const std::string& what) {
      return fail(errc::parse_error, at(source_, l.number) + ": " + what + ", found " + excerpt(t, 60));
    };
    std::size_t close = t.find(']');
    if (close == std::string_view::npos || close + 1 >= t.size() || t[close + 1] != ':')
      return bad("expected 'GID[  n]:' followed by a GID");
    auto index = detail::parse_decimal(trim(t.substr(4, close - 4)), 0x7fffffffu);
    if (!index) return bad("expected a GID index 0-2147483647 inside 'GID[...]'");
    std::string_view rest = trim(t.substr(close + 2));
    std::string_view gid_text = rest;
    std::optional<std::string_view> suffix;
    if (std::size_t comma = rest.find(','); comma != std::string_view::npos) {
      gid_text = trim(rest.substr(0, comma));
      suffix = trim(rest.substr(comma + 1));
    }
    if (gid_text.empty()) return bad("expected a GID after 'GID[" + std::to_string(*index) + "]:'");
    auto gid = Gid::parse(gid_text);
    if (!gid)
      return fail(errc::parse_error, at(source_, l.number) + ": GID[" + std::to_string(*index) +
                                         "]: expected a GID (8 groups of 4 hex digits or an IPv6 address): " +
                                         gid.error().detail);
    GidType type = GidType::unknown;
    if (suffix) {
      auto st = gid_type_from_string(*suffix);
      bool roce_other = suffix->starts_with("RoCE v") && suffix->size() > 6 &&
                        detail::parse_decimal(suffix->substr(6), 255).has_value();
      bool invalid_type = *suffix == "Invalid gid type";  // older devinfo printed this
      if (!st && !roce_other && !invalid_type)
        return bad("expected ', RoCE v1' or ', RoCE v2' after the GID");
      if (st) type = *st;  // a future "RoCE v3" stays unknown
    }
    if (!port_) start_port(l.number, 1, false);  // a paste of GID lines only
    PortBuild& p = *port_;
    if (auto prev = p.index_lines.find(static_cast<std::uint32_t>(*index)); prev != p.index_lines.end())
      return fail(errc::duplicate_index, at(source_, l.number) + ": GID[" + std::to_string(*index) +
                                             "] appears twice in " + port_name(p.info.device, p.info.port) +
                                             " (first at line " + std::to_string(prev->second) + ")");
    if (p.info.gid_tbl_len && *index >= *p.info.gid_tbl_len)
      return fail(errc::index_too_large, at(source_, l.number) + ": GID index " + std::to_string(*index) +
                                             " is not below gid_tbl_len " +
                                             std::to_string(*p.info.gid_tbl_len));
    if (full_output_ && device_ && device_->verbose && !p.tbl_len_line)
      return fail(errc::parse_error, at(source_, l.number) +
                                         ": GID line before gid_tbl_len in a complete ibv_devinfo -v output "
                                         "(lines are missing: truncated or edited paste?)");
    // devinfo prints the suffix on every line of an Ethernet port or on none: a mix means lines
    // were cut or spliced.
    std::optional<std::size_t>& mine = suffix ? p.first_suffix_line : p.first_plain_line;
    const std::optional<std::size_t>& other = suffix ? p.first_plain_line : p.first_suffix_line;
    if (other)
      return fail(errc::parse_error, at(source_, l.number) + ": GID[" + std::to_string(*index) + "] " +
                                         (suffix ? "has" : "lacks") + " the ', RoCE vN' suffix but line " +
                                         std::to_string(*other) + " of the same port " +
                                         (suffix ? "does not" : "has it") + " (cut or spliced paste?)");
    if (!mine) mine = l.number;
    p.index_lines.emplace(static_cast<std::uint32_t>(*index), l.number);
    p.gids.push_back({GidEntry::valid(static_cast<std::uint32_t>(*index), gid.value(), type), l.number,
                      suffix.has_value()});
    return success();
  }

  result<void> finish_port(std::size_t next_line) {
    if (!port_) return success();
    PortBuild p = std::move(*port_);
    port_.reset();
    if (full_output_ && !p.link_layer_line)
      return fail(errc::parse_error, at(source_, p.line) + ": " + port_name(p.info.device, p.info.port) +
                                         ": the section ends at line " +
                                         std::to_string(std::min(next_line, last_line_ + 1) - 1) +
                                         " without a link_layer line (truncated paste?)");
    if (full_output_ && device_ && device_->verbose && !p.tbl_len_line)
      return fail(errc::parse_error,
                  at(source_, p.line) + ": " + port_name(p.info.device, p.info.port) +
                      ": the section ends at line " +
                      std::to_string(std::min(next_line, last_line_ + 1) - 1) +
                      " without the gid_tbl_len line ibv_devinfo -v prints (truncated paste?)");
    if (p.width_line.has_value() != p.speed_line.has_value())
      return fail(errc::parse_error, at(source_, p.width_line ? *p.width_line : *p.speed_line) + ": " +
                                         port_name(p.info.device, p.info.port) + ": " +
                                         (p.width_line ? "active_width without active_speed"
                                                       : "active_speed without active_width") +
                                         ": ibv_devinfo -v prints both (cut paste?)");
    if (p.width_line) p.info.link_rate = p.rate;
    if (p.link_layer_unknown_text && device_ && device_->transport == kThunderboltTransport)
      p.info.link_layer = LinkLayer::thunderbolt();
    // devinfo prints ", RoCE vN" only on Ethernet ports: a paste of bare GID lines says so.
    if (!p.link_layer_line && p.first_suffix_line) p.info.link_layer = LinkLayer::ethernet();
    std::vector<GidEntry> entries;
    entries.reserve(p.gids.size());
    for (auto& g : p.gids) {
      // No suffix: rdma-core < v29, or a port that is not Ethernet. Only InfiniBand pins it down.
      if (!g.has_suffix && p.info.link_layer.kind() == LinkLayer::Kind::infiniband)
        g.entry.type = GidType::ib;
      entries.push_back(std::move(g.entry));
    }
    if (!seen_ports_.emplace(p.info.device, p.info.port).second)  // a set: linear in ports
      return fail(errc::parse_error, at(source_, p.line) + ": " + port_name(p.info.device, p.info.port) +
                                         " appears twice (a second section for the same port)");
    auto table = GidTable::make(std::move(p.info), std::move(entries), Holes::not_shown);
    if (!table) return fail(Error(table.error().code, at(source_, p.line) + ": " + table.error().detail));
    tables_.push_back(std::move(table).value());
    return success();
  }

  std::string_view text_;
  std::string_view source_;
  std::vector<GidTable> tables_;
  std::set<std::pair<std::string, std::uint32_t>> seen_ports_;
  std::optional<Device> device_;
  std::size_t device_line_ = 0;
  bool device_has_port_ = false;
  bool full_output_ = false;  // saw hca_id: a complete ibv_devinfo output, checked for truncation
  std::optional<PortBuild> port_;
  std::size_t last_line_ = 0;
};

// rdma-core's sysfs GID type as devinfo sees it: 0 "IB/RoCE v1", 1 "RoCE v2", or none.
enum class SysfsType { v1, v2, none };

SysfsType sysfs_type(GidType t) {
  switch (t) {
    case GidType::ib:
    case GidType::roce_v1:
      return SysfsType::v1;
    case GidType::roce_v2:
      return SysfsType::v2;
    case GidType::unknown:
      break;
  }
  return SysfsType::none;
}

// Whether rdma-core 44's devinfo prints an entry: its null_gid() tests only bytes 8-15, and it
// prints nothing for an entry whose type ibv_query_gid_type cannot read. Thunderbolt (Apple's
// own devinfo, which prints no types) and unknown link layers keep untyped entries, so a
// table read from such a paste can be written back.
bool printed_by_devinfo(const GidEntry& e, LinkLayer ll) {
  if (e.state != EntryState::valid || e.gid.interface_id() == 0) return false;
  const bool typed_port = ll.kind() == LinkLayer::Kind::ethernet || ll.kind() == LinkLayer::Kind::infiniband;
  return !typed_port || e.type != GidType::unknown;
}

// The entries of `t` devinfo prints, with the type reading them back yields.
std::vector<GidEntry> printed_entries(const GidTable& t) {
  const LinkLayer ll = t.port().link_layer;
  std::vector<GidEntry> out;
  for (const auto& e : t) {
    if (!printed_by_devinfo(e, ll)) continue;
    GidType type = GidType::unknown;
    if (ll.kind() == LinkLayer::Kind::ethernet)
      type = sysfs_type(e.type) == SysfsType::v2 ? GidType::roce_v2 : GidType::roce_v1;
    else if (ll.kind() == LinkLayer::Kind::infiniband)
      type = GidType::ib;  // no suffix off Ethernet; every GID of an IB port is IB
    out.push_back(GidEntry::valid(e.index, e.gid, type));
  }
  return out;
}

const char* state_name(PortState s) {
  switch (s) {
    case PortState::down:
      return "PORT_DOWN";
    case PortState::init:
      return "PORT_INIT";
    case PortState::armed:
      return "PORT_ARMED";
    case PortState::active:
      return "PORT_ACTIVE";
    case PortState::nop:
    case PortState::active_defer:
      break;
  }
  return "invalid state";
}

// printf into `out` at any length. (A fixed 256-byte buffer silently cut a long device name
// and the newline after it, so the written text no longer read back: found by fuzz_devinfo.)
template <class... Args>
void appendf(std::string& out, const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  if (n <= 0) return;
  const std::size_t at = out.size();
  out.resize(at + static_cast<std::size_t>(n) + 1);
  std::snprintf(out.data() + at, static_cast<std::size_t>(n) + 1, fmt, args...);
  out.resize(at + static_cast<std::size_t>(n));
}

}  // namespace

result<std::vector<GidTable>> read_devinfo(std::string_view text, std::string_view source) {
  return Reader(text, source).run();
}

std::string write_devinfo(const std::vector<GidTable>& tables) {
  std::string out;
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const PortInfo& first = tables[k].port();
    // One hca_id block per run of consecutive tables of the same device.
    std::size_t end = k;
    std::uint32_t max_port = 0;
    bool all_thunderbolt = true;
    while (end < tables.size() && tables[end].port().device == first.device) {
      max_port = std::max(max_port, tables[end].port().port);
      all_thunderbolt =
          all_thunderbolt && tables[end].port().link_layer.kind() == LinkLayer::Kind::thunderbolt;
      ++end;
    }
    appendf(out, "hca_id:\t%s\n", first.device.c_str());
    // RoCE devices report the InfiniBand transport; Apple's Thunderbolt devices report 100.
    if (all_thunderbolt)
      appendf(out, "\ttransport:\t\t\t%s (%d)\n", "Thunderbolt", 100);
    else
      appendf(out, "\ttransport:\t\t\t%s (%d)\n", "InfiniBand", 0);
    appendf(out, "\tphys_port_cnt:\t\t\t%u\n", max_port);
    for (; k < end; ++k) {
      const GidTable& t = tables[k];
      const PortInfo& p = t.port();
      const unsigned mtu = static_cast<unsigned>(p.active_mtu);
      appendf(out, "\t\tport:\t%u\n", p.port);
      appendf(out, "\t\t\tstate:\t\t\t%s (%u)\n", state_name(p.state), static_cast<unsigned>(p.state));
      appendf(out, "\t\t\tmax_mtu:\t\t%u (%u)\n", mtu_bytes(p.active_mtu), mtu);
      appendf(out, "\t\t\tactive_mtu:\t\t%u (%u)\n", mtu_bytes(p.active_mtu), mtu);
      appendf(out, "\t\t\tsm_lid:\t\t\t%d\n", 0);
      appendf(out, "\t\t\tport_lid:\t\t%u\n", unsigned{p.lid});
      appendf(out, "\t\t\tport_lmc:\t\t0x%02x\n", 0u);
      appendf(out, "\t\t\tlink_layer:\t\t%s\n", detail::link_layer_name(p.link_layer));
      if (p.gid_tbl_len) appendf(out, "\t\t\tgid_tbl_len:\t\t%u\n", *p.gid_tbl_len);
      if (p.link_rate) {
        appendf(out, "\t\t\tactive_width:\t\t%s (%u)\n", devinfo_width_text(p.link_rate->width).c_str(),
                unsigned{p.link_rate->width});
        appendf(out, "\t\t\tactive_speed:\t\t%s (%u)\n", devinfo_speed_text(p.link_rate->speed).c_str(),
                unsigned{p.link_rate->speed});
      }
      const bool ethernet = p.link_layer.kind() == LinkLayer::Kind::ethernet;
      for (const auto& e : t) {
        if (!printed_by_devinfo(e, p.link_layer)) continue;
        const SysfsType st = sysfs_type(e.type);
        // The suffix only on Ethernet ports ("IB/RoCE v1" is printed as "RoCE v1").
        std::string suffix;
        if (ethernet) suffix = st == SysfsType::v2 ? ", RoCE v2" : ", RoCE v1";
        // inet_ntop form for RoCE v2 only, exactly as devinfo's print_formated_gid().
        std::string gid = st == SysfsType::v2 ? e.gid.to_string() : e.gid.to_full_string();
        appendf(out, "\t\t\tGID[%3u]:\t\t%s%s\n", e.index, gid.c_str(), suffix.c_str());
      }
      out += '\n';
    }
    --k;
  }
  return out;
}

std::vector<GidTable> devinfo_view(const std::vector<GidTable>& tables) {
  std::vector<GidTable> out;
  out.reserve(tables.size());
  for (const auto& t : tables) {
    PortInfo p = t.port();
    if (p.link_layer.kind() == LinkLayer::Kind::unknown) p.link_layer = LinkLayer::from_raw(0);
    // make() cannot fail: the entries are a subset of a valid table's.
    out.push_back(GidTable::make(std::move(p), printed_entries(t), Holes::not_shown).value());
  }
  return out;
}

}  // namespace gidpolicy::formats
