#include <gidpolicy/policies/mooncake.hpp>
#include <gidpolicy/stack_table.hpp>

#include "stack_common.hpp"

#include <array>
#include <cstdlib>

namespace gidpolicy {
namespace {

enum class MooncakeClass : int {
  routable_net,
  routable,
  private_net,
  degraded_net,
  private_v4,
  degraded,
  fallback,
  none
};
constexpr std::array<const char*, 8> kMooncakeClassNames{
    "network-routable",      "no-network-routable", "network-private-v4", "network-degraded",
    "no-network-private-v4", "no-network-degraded", "fallback-nonzero",   "not a candidate"};

bool degraded_netdev(const std::string& n) {
  for (const char* p : {"flannel", "cni", "calico", "vxlan", "docker"})
    if (n.rfind(p, 0) == 0) return true;
  return n == "tunl0";
}

bool mooncake_private_v4(const Gid& g) {
  const auto v4 = g.ipv4();
  if (!v4) return false;
  const std::uint32_t a = *v4;
  return (a >> 24) == 10 || (a >> 20) == ((172u << 4) | 1u) || (a >> 22) == ((100u << 2) | 1u);
}

MooncakeClass mooncake_classify(const GidEntry& e) {
  if (!e.usable()) return MooncakeClass::none;
  if (e.type != GidType::roce_v2 && e.type != GidType::ib) return MooncakeClass::fallback;
  const bool net = !e.netdev.empty();
  const bool degraded =
      (net && degraded_netdev(e.netdev)) || (!e.gid.is_ipv4_mapped() && e.gid.is_link_local());
  if (degraded) return net ? MooncakeClass::degraded_net : MooncakeClass::degraded;
  if (mooncake_private_v4(e.gid)) return net ? MooncakeClass::private_net : MooncakeClass::private_v4;
  return net ? MooncakeClass::routable_net : MooncakeClass::routable;
}

}  // namespace

std::optional<std::int64_t> mooncake_gid_setting(const char* mc, const char* nccl) {
  const char* v = mc ? mc : nccl;
  if (!v) return std::nullopt;
  return static_cast<std::int64_t>(std::atoi(v));  // Mooncake's own read: atoi, so "" is 0
}

std::string Mooncake::spec() const {
  return gid_index ? "mooncake:gid_index=" + std::to_string(*gid_index) : std::string("mooncake");
}

result<AnyPolicy> Mooncake::from_options(const SpecOptions& opts) {
  Mooncake m;
  if (!opts.empty()) {
    GIDPOLICY_TRY(v,
                  opts.integer(opts.front(), -2147483648LL, 2147483647LL, "an int (outside 0..255: auto)"));
    m.gid_index = v;
  }
  return AnyPolicy(m);
}

result<Selection> Mooncake::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        const auto null_gid = [&](std::uint32_t i) {
          return fail(errc::entry_zero,
                      detail::where(table) + ": index " + std::to_string(i) +
                          " holds no GID: Mooncake does not open the device (\"GID is NULL, "
                          "please check your GID index by specifying " +
                          std::string(stack_vars::kMcGidIndex) + "\")");
        };
        if (gid_index && *gid_index >= 0 && *gid_index < 256) {
          const auto i = static_cast<std::uint32_t>(*gid_index);
          const GidEntry* e = table.find(i);
          if (!e && table.holes() == Holes::not_shown) {
            rec.step(i, EntryVerdict::not_shown, [] { return std::string("not printed by the source"); });
            return fail(errc::entry_not_shown,
                        detail::where(table) + ": " + std::string(stack_vars::kMcGidIndex) + "=" +
                            std::to_string(i) + " names a slot the source did not print");
          }
          if (!e || !e->usable()) {
            rec.step(i, EntryVerdict::empty,
                     [] { return std::string(stack_vars::kMcGidIndex) + ": the slot is empty"; });
            return null_gid(i);
          }
          rec.step(i, EntryVerdict::chosen,
                   [&] { return detail::describe(*e) + ": " + std::string(stack_vars::kMcGidIndex); });
          return detail::select_entry(*e);
        }
        const GidEntry* best = nullptr;
        MooncakeClass best_class = MooncakeClass::none;
        for (const GidEntry& e : table.sgid_entries()) {
          const MooncakeClass c = mooncake_classify(e);
          if (c == MooncakeClass::none) {
            rec.step(e.index,
                     e.state == EntryState::unreadable ? EntryVerdict::unreadable : EntryVerdict::empty,
                     [&] { return detail::note_for(e) + ": no GID (ibv_query_gid_ex fails)"; });
            continue;
          }
          const bool better = static_cast<int>(c) < static_cast<int>(best_class);
          rec.step(e.index, EntryVerdict::candidate, [&] {
            return detail::describe(e) + ": " + kMooncakeClassNames[static_cast<std::size_t>(c)] +
                   (e.netdev.empty() ? " (the source names no netdev)" : "");
          });
          if (better) {
            best = &e;
            best_class = c;
          }
        }
        if (!best) {
          return fail(
              errc::no_candidate,
              detail::where(table) +
                  ": no non-zero GID: Mooncake finds no GID index (\"No suitable GID "
                  "found\") and does not open the device" +
                  (gid_index ? " (the setting " + std::to_string(*gid_index) + " is outside 0..255: ignored)"
                             : std::string()));
        }
        rec.finish(best->index);
        return detail::select_entry(*best);
      });
}

}  // namespace gidpolicy
