// Mooncake: Mooncake Transfer Engine's GID choice (rdma_context.cpp findBestGidIndex and
// config.cpp), as its main branch has it in 2026. Spec "mooncake[:gid_index=N]", gid_index
// being MC_GID_INDEX, or NCCL_IB_GID_INDEX when MC_GID_INDEX is unset (mooncake_gid_setting()).
//
// The rule (docs/facts.md#mooncake):
//  * the setting is read with atoi (so an empty value is 0) and a value outside 0..255 is
//    ignored with a warning: auto;
//  * auto classes each RoCE v2 or IB entry, lowest index first within a class:
//    network-routable > no-network-routable > network-private-v4 > network-degraded >
//    no-network-private-v4 > no-network-degraded, then any other non-zero GID
//    (fallback-nonzero). "network" = sysfs names a netdev for the entry; "degraded" = the netdev
//    is flannel*, cni*, calico*, vxlan*, docker* or tunl0, or the GID is IPv6 link-local;
//    private-v4 = 10/8, 172.16/12, 100.64/10. A table that does not say an entry's netdev
//    (an ibv_devinfo paste) classes it no-network: say so rather than guess;
//  * the chosen GID must not be zero: "GID is NULL, please check your GID index by specifying
//    MC_GID_INDEX" and the device is not opened.
// Not modelled: the retry of the next candidate after an RTR EINVAL (auto only, up to
// MC_AUTO_GID_MAX_RETRIES=2), which needs the peer; and Mooncake 2025's simpler rule (the first
// IPv4 RoCE v2 or IB entry with a netdev, else without).
//
// Example:
//   auto s = gidpolicy::Mooncake{}.select(table);
#pragma once

#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/policy.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

struct Mooncake {
  std::optional<std::int64_t> gid_index;  ///< MC_GID_INDEX as atoi read it; outside 0..255 = auto

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const;
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  /// The registry row's factory (registry.hpp): reads this stack's options.
  static result<AnyPolicy> from_options(const SpecOptions& options);
  friend bool operator==(const Mooncake&, const Mooncake&) = default;
};

/// The index Mooncake's config reads from its environment: MC_GID_INDEX if set, else
/// NCCL_IB_GID_INDEX, each through atoi ("" and "abc" are 0). nullopt when neither is set.
std::optional<std::int64_t> mooncake_gid_setting(const char* mc_gid_index, const char* nccl_ib_gid_index);

}  // namespace gidpolicy
