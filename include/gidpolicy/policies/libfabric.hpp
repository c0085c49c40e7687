// Libfabric: libfabric's verbs provider (prov/verbs), libfabric 1.17 as Debian ships it. Spec
// "libfabric[:gid_idx=N]" for datagram (FI_EP_DGRAM, UD) endpoints, whose address handle routes
// from FI_VERBS_GID_IDX (default 0, 0..255, port 1) unchecked: there is no automatic choice, so
// on a table whose index 0 is a link-local RoCE v1 entry that is what UD uses. Connected
// (FI_EP_MSG) endpoints go through rdma_cm instead: "libfabric:ep=msg,local=ADDR" or
// "...,peer=ADDR", chosen by rdma_cm_choose() (policies/rdma_cm.hpp).
//
// Example:
//   auto s = gidpolicy::Libfabric{}.select(table);   // FI_VERBS_GID_IDX=0
#pragma once

#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/rdma_cm.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/policy.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

struct Libfabric {
  std::uint32_t gid_idx = 0;  ///< FI_VERBS_GID_IDX (UD)
  std::optional<RdmaCm> msg;  ///< ep=msg: rdma_cm's choice with these addresses

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const;
  /// A MSG endpoint's peer= (it resolves through rdma_cm, which needs the route); UD names none.
  [[nodiscard]] std::vector<PeerAddress> peers() const;
  /// true for UD endpoints: FI_VERBS_GID_IDX (0 by default) is read unchecked; MSG is rdma_cm's.
  [[nodiscard]] bool picks_unchecked() const noexcept { return !msg.has_value(); }
  /// The registry row's factory (registry.hpp): reads this stack's options.
  static result<AnyPolicy> from_options(const SpecOptions& options);
  /// The registry row's answer to `select --peer ADDR` (SpecTakesPeer): a MSG endpoint (ep=msg)
  /// that names no address itself takes it as its peer=; UD endpoints take no address.
  static bool takes_peer(const SpecOptions& options);
  friend bool operator==(const Libfabric&, const Libfabric&) = default;
};

}  // namespace gidpolicy
