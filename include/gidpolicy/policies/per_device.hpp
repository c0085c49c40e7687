// PerDevice: a policy per RDMA device, with a default (NVIDIA/nccl#890).
//
// Hosts with several NICs often need a different choice per NIC (one port in a pod namespace
// with its GIDs from index 4, another on the host at 3: NCCL 890, 1573). The table's
// PortInfo::device picks the policy; devices not listed use the default, and without a default
// an unlisted device is an error rather than a guess.
//
// Failure: whatever the chosen policy returns; errc::device_not_found for an unlisted device
// without a default.
//
// Example:
//   PerDevice p{.by_device = {{"mlx5_0", ValidatedExplicit{.index = 7}}}, .fallback = Ranked{}};
//   // spec "per-device(mlx5_0=validated:index=7;*=auto)"
#pragma once

#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policy.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy {

struct PerDevice {
  std::map<std::string, AnyPolicy, std::less<>> by_device;  ///< device name -> policy
  std::optional<AnyPolicy> fallback;                        ///< "*": every other device

  /// The policy that applies to `device` (nullptr: none).
  [[nodiscard]] const AnyPolicy* policy_for(std::string_view device) const noexcept;
  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  /// "per-device(DEV=SPEC;...;*=SPEC)", devices in name order, the default last.
  [[nodiscard]] std::string spec() const;
  /// Every device's policy's peers (by device name, then the fallback's), once each.
  [[nodiscard]] std::vector<PeerAddress> peers() const;
  /// Whether any device's policy (or the fallback) does.
  [[nodiscard]] bool picks_unchecked() const noexcept;
  friend bool operator==(const PerDevice&, const PerDevice&) = default;
};

}  // namespace gidpolicy
