// RtrRequest: an INIT->RTR modify_qp reduced to what the driver models judge.
//
// The meeting point of the RTR builder and the driver models, kept apart from both: the builder
// (rtr.hpp) reduces the attributes it built to a request (RtrAttributes::request()), the models
// (driver_model.hpp, judge_rtr) judge requests. Neither header needs the other, and the
// models stay free of <infiniband/verbs.h>.
//
// The hardware gotcha: `sgid_index` is kept as the application computed it, wider than the
// uint8_t `grh.sgid_index`, so a model can say when the cast wrapped an index above 255 onto
// another entry (ds4's `--rdma-gid-index 257` routes from index 1).
//
// Example:
//   gidpolicy::RtrRequest req{.qp_type = gidpolicy::QpKind::uc, .sgid_index = 1, .dgid = peer_gid};
//   auto v = gidpolicy::judge_rtr(table, req, gidpolicy::DriverModel::linux_kernel());
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/qp.hpp>

#include <cstdint>
#include <optional>

namespace gidpolicy {

/// What an application asks of modify_qp(INIT->RTR), reduced to what the models judge.
struct RtrRequest {
  QpKind qp_type = QpKind::uc;
  bool is_global = true;                 ///< ah_attr.is_global: a GRH is present
  std::uint32_t sgid_index = 0;          ///< as the application computed it (before any uint8_t cast)
  Gid dgid;                              ///< the peer's GID (grh.dgid)
  std::optional<GidType> peer_gid_type;  ///< when the peer advertised it
  /// false when the source GID's netdev is gone or in another namespace (fakes model this).
  bool source_netdev_present = true;
};

}  // namespace gidpolicy
