// Fuzz the policy/profile spec parser (one grammar for the CLI, the C API and environment
// variables): never crash; every rejection names a position; every accepted spec round-trips
// (parse(spec(p)) == p) and selects on a table without crashing.
#include <gidpolicy/profiles.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {
const gidpolicy::GidTable& table() {
  static const gidpolicy::GidTable t = [] {
    gidpolicy::PortInfo p;
    p.device = "mlx5_0";
    p.link_layer = gidpolicy::LinkLayer::ethernet();
    p.gid_tbl_len = 8;
    auto ll = gidpolicy::Gid::parse("fe80::ac0:ebff:feda:1cfb").value();
    auto v4 = gidpolicy::Gid::ipv4_mapped(0xc800d106u);
    return gidpolicy::GidTable::make(p,
                                     {gidpolicy::GidEntry::valid(0, ll, gidpolicy::GidType::roce_v1, "bond0"),
                                      gidpolicy::GidEntry::valid(1, ll, gidpolicy::GidType::roce_v2, "bond0"),
                                      gidpolicy::GidEntry::valid(2, v4, gidpolicy::GidType::roce_v1, "bond0"),
                                      gidpolicy::GidEntry::valid(3, v4, gidpolicy::GidType::roce_v2, "bond0"),
                                      gidpolicy::GidEntry::empty(4)})
        .value();
  }();
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto prof = gidpolicy::parse_profile(text);
  if (!prof) {
    if (prof.error().detail.find("position") == std::string::npos) std::abort();
    return 0;
  }
  auto again = gidpolicy::parse_profile(prof.value().spec());
  if (!again || !(again.value() == prof.value())) std::abort();
  (void)prof.value().plan(table(), {.trace = true});
  return 0;
}
