#include <gidpolicy/gid_table.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

namespace gidpolicy {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string_view to_string(GidType t) noexcept {
  switch (t) {
    case GidType::ib:
      return "ib";
    case GidType::roce_v1:
      return "roce_v1";
    case GidType::roce_v2:
      return "roce_v2";
    case GidType::unknown:
      break;
  }
  return "unknown";
}

std::optional<GidType> gid_type_from_string(std::string_view s) noexcept {
  std::string l = lower(s);
  if (l == "ib" || l == "infiniband") return GidType::ib;
  if (l == "roce_v1" || l == "roce v1" || l == "v1" || l == "rocev1") return GidType::roce_v1;
  if (l == "roce_v2" || l == "roce v2" || l == "v2" || l == "rocev2") return GidType::roce_v2;
  if (l == "unknown") return GidType::unknown;
  return std::nullopt;
}

std::string to_string(LinkLayer l) {
  switch (l.kind()) {
    case LinkLayer::Kind::infiniband:
      return "infiniband";
    case LinkLayer::Kind::ethernet:
      return "ethernet";
    case LinkLayer::Kind::thunderbolt:
      return "thunderbolt";
    case LinkLayer::Kind::unknown:
      break;
  }
  return "unknown(" + std::to_string(l.raw()) + ")";
}

std::optional<LinkLayer> link_layer_from_string(std::string_view s) noexcept {
  std::string l = lower(s);
  if (l == "infiniband") return LinkLayer::infiniband();
  if (l == "ethernet") return LinkLayer::ethernet();
  if (l == "thunderbolt") return LinkLayer::thunderbolt();
  std::string_view digits = l;
  if (l.starts_with("unknown(") && l.ends_with(")"))
    digits = std::string_view(l).substr(8, l.size() - 9);
  else if (l == "unknown")
    return LinkLayer::from_raw(0);
  std::uint32_t raw = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), raw);
  if (ec != std::errc{} || p != digits.data() + digits.size() || digits.empty()) return std::nullopt;
  return LinkLayer::from_raw(raw);
}

std::string_view to_string(PortState s) noexcept {
  switch (s) {
    case PortState::nop:
      return "nop";
    case PortState::down:
      return "down";
    case PortState::init:
      return "init";
    case PortState::armed:
      return "armed";
    case PortState::active:
      return "active";
    case PortState::active_defer:
      return "active_defer";
  }
  return "nop";
}

std::optional<PortState> port_state_from_string(std::string_view s) noexcept {
  std::string l = lower(s);
  if (l.starts_with("port_")) l.erase(0, 5);
  for (auto st : {PortState::nop, PortState::down, PortState::init, PortState::armed, PortState::active,
                  PortState::active_defer})
    if (l == to_string(st)) return st;
  return std::nullopt;
}

std::string_view to_string(EntryState s) noexcept {
  switch (s) {
    case EntryState::valid:
      return "valid";
    case EntryState::empty:
      return "empty";
    case EntryState::unreadable:
      return "unreadable";
  }
  return "valid";
}

namespace {
constexpr std::pair<std::uint8_t, std::string_view> kWidthNames[] = {
    {1, "1X"}, {16, "2X"}, {2, "4X"}, {4, "8X"}, {8, "12X"}};
constexpr std::pair<std::uint8_t, std::string_view> kSpeedNames[] = {
    {1, "SDR"}, {2, "DDR"}, {4, "QDR"}, {8, "FDR10"}, {16, "FDR"}, {32, "EDR"}, {64, "HDR"}, {128, "NDR"}};
}  // namespace

std::string_view LinkRate::speed_name() const noexcept {
  for (const auto& [v, name] : kSpeedNames)
    if (v == speed) return name;
  return {};
}

std::optional<LinkRate> LinkRate::from_names(std::string_view width_name,
                                             std::string_view speed_name) noexcept {
  LinkRate r;
  bool w = false, sp = false;
  for (const auto& [v, name] : kWidthNames)
    if (name == width_name) r.width = v, w = true;
  for (const auto& [v, name] : kSpeedNames)
    if (name == speed_name) r.speed = v, sp = true;
  if (!w || !sp) return std::nullopt;
  return r;
}

std::string to_string(LinkRate r) {
  if (!r.known())
    return "width " + std::to_string(unsigned{r.width}) + ", speed " + std::to_string(unsigned{r.speed});
  const unsigned half = *r.lanes() * *r.lane_half_gbps();
  return std::to_string(*r.lanes()) + "X " + std::string(r.speed_name()) + " (" + std::to_string(half / 2) +
         (half % 2 ? ".5" : "") + " Gb/s)";
}

std::string_view to_string(Holes h) noexcept { return h == Holes::not_shown ? "not_shown" : "empty"; }

result<GidTable> GidTable::make(PortInfo port, std::vector<GidEntry> entries, Holes holes) {
  constexpr std::uint32_t kMaxIndex = 0x7fffffffu;
  std::sort(entries.begin(), entries.end(),
            [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const auto& e = entries[k];
    if (e.index > kMaxIndex)
      return fail(errc::index_too_large, entry_name(port, e.index) + " is not below 2^31");
    if (port.gid_tbl_len && e.index >= *port.gid_tbl_len)
      return fail(errc::index_too_large, entry_name(port, e.index) + " is not below gid_tbl_len " +
                                             std::to_string(*port.gid_tbl_len));
    if (k > 0 && entries[k - 1].index == e.index)
      return fail(errc::duplicate_index, entry_name(port, e.index) + " appears twice");
  }
  GidTable t;
  t.port_ = std::move(port);
  t.entries_ = std::move(entries);
  t.sgid_count_ =
      static_cast<std::size_t>(std::partition_point(t.entries_.begin(), t.entries_.end(),
                                                    [](const GidEntry& e) { return e.index <= 255; }) -
                               t.entries_.begin());
  t.holes_ = holes;
  return t;
}

const GidEntry* GidTable::find(std::uint32_t index) const noexcept {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), index,
                             [](const GidEntry& e, std::uint32_t i) { return e.index < i; });
  if (it == entries_.end() || it->index != index) return nullptr;
  return &*it;
}

const GidEntry* GidTable::find(const Gid& gid) const noexcept {
  for (const auto& e : entries_)
    if (e.state == EntryState::valid && e.gid == gid) return &e;
  return nullptr;
}

std::string port_name(std::string_view device, std::uint32_t port) {
  return std::string(device) + " port " + std::to_string(port);
}

std::string port_name(const PortInfo& port) { return port_name(port.device, port.port); }

std::string port_name(const GidTable& table) { return port_name(table.port()); }

std::string entry_name(std::string_view device, std::uint32_t port, std::uint32_t index) {
  return port_name(device, port) + " index " + std::to_string(index);
}

std::string entry_name(const PortInfo& port, std::uint32_t index) {
  return entry_name(port.device, port.port, index);
}

}  // namespace gidpolicy
