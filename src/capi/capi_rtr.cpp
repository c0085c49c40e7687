// The C API's RTR path: the RTR attributes for a selection and a peer, and the preflight that
// checks, before modify_qp, that the slot still holds the advertised GID.
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <optional>
#include <string>

namespace gidpolicy::capi {

namespace {

/// The live preflight behind gidpolicy_preflight_live*() and _selection(): `type`, when set, must
/// match the type the slot reports (a slot read without a type matches any).
gidpolicy_status preflight_live(const gidpolicy_verbs_fns* fns, ibv_context* context, std::uint32_t port,
                                std::uint32_t sgid_index, const std::uint8_t* advertised,
                                std::optional<GidType> type, char* err, std::size_t errlen) {
  if (!fns) return null_argument("fns", err, errlen);
  if (!context) return null_argument("context", err, errlen);
  if (!advertised) return null_argument("advertised", err, errlen);
  if (!fns->query_gid && !fns->query_gid_ex && !fns->query_gid_ex_sized)
    return report(GIDPOLICY_ERR_NOT_SUPPORTED, "gidpolicy_verbs_fns has no GID read", err, errlen);
  if (port < 1 || port > 255)
    return report(GIDPOLICY_ERR_INVALID_ARGUMENT, "port " + std::to_string(port) + " is outside 1..255", err,
                  errlen);
  // An index the uint8_t grh.sgid_index cannot hold never agrees: it would route from
  // another slot (ds4's cast), whatever the slot at the full index holds.
  if (sgid_index > 255)
    return report(GIDPOLICY_ERR_DISAGREEMENT,
                  "sgid_index " + std::to_string(sgid_index) +
                      " does not fit the uint8_t grh.sgid_index: it would "
                      "wrap to " +
                      std::to_string(sgid_index & 0xffu),
                  err, errlen);
  verbs::FunctionTableApi api = context_api(*fns, false);
  auto device = api.adopt(context);
  if (!device) return report(device.error(), err, errlen);
  // One GID read when the slot still holds the GID; on a change, a scan to say where it went.
  auto r = verbs::preflight(api, device.value(), port, sgid_index, Gid::from_bytes(advertised), type);
  if (!r) return report(r.error(), err, errlen);
  return GIDPOLICY_OK;
}

}  // namespace

}  // namespace gidpolicy::capi

using gidpolicy::capi::guarded;
using gidpolicy::capi::report;

extern "C" {

// ---- RTR ----------------------------------------------------------------------------------

void gidpolicy_rtr_options_init(gidpolicy_rtr_options* o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->qp_type = 0;  // not a QP type: the caller must say RC or UC (an RC QP given UC bits fails RTR)
  o->path_mtu = 0;
  o->hop_limit = gidpolicy::kDefaultHopLimit;
  o->traffic_class = gidpolicy::kDefaultTrafficClass;
  // ibv_rc_pingpong's values: one outstanding RDMA read/atomic, RNR NAK timer code 12 (0.64 ms).
  o->max_dest_rd_atomic = 1;
  o->min_rnr_timer = 12;
}

gidpolicy_status gidpolicy_rtr_fill(const gidpolicy_plan* plan, const gidpolicy_peer* peer,
                                    const gidpolicy_rtr_options* options, struct ibv_qp_attr* attr,
                                    int* attr_mask, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!plan) return gidpolicy::capi::null_argument("plan", err, errlen);
    if (!peer) return gidpolicy::capi::null_argument("peer", err, errlen);
    if (!attr) return gidpolicy::capi::null_argument("attr", err, errlen);
    if (!attr_mask) return gidpolicy::capi::null_argument("attr_mask", err, errlen);
    // The QP type decides the required mask bits (RC adds MAX_DEST_RD_ATOMIC and
    // MIN_RNR_TIMER): a default would silently give an RC QP UC attributes, which the driver
    // refuses with EINVAL at RTR. The caller says which.
    if (!options)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                    "options is NULL: give the QP type (gidpolicy_rtr_options_init(), then qp_type = "
                    "IBV_QPT_RC or IBV_QPT_UC)",
                    err, errlen);
    const gidpolicy_rtr_options& o = *options;
    if (o.qp_type == 0)
      return report(
          GIDPOLICY_ERR_INVALID_ARGUMENT,
          "options->qp_type is not set: IBV_QPT_RC (2) or IBV_QPT_UC (3), the type the QP was created "
          "with",
          err, errlen);
    const std::optional<gidpolicy::QpKind> kind = gidpolicy::capi::qp_kind_from_c(o.qp_type);
    if (!kind)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                    "qp_type " + std::to_string(o.qp_type) + " is not IBV_QPT_UC, IBV_QPT_RC or IBV_QPT_UD",
                    err, errlen);
    bool ok = true;
    const std::optional<gidpolicy::Mtu> peer_mtu = gidpolicy::capi::mtu_from_c(peer->mtu, ok);
    if (!ok)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                    "peer->mtu " + std::to_string(peer->mtu) + " is not an enum ibv_mtu (0 or 1..5)", err,
                    errlen);
    const std::optional<gidpolicy::Mtu> path_mtu = gidpolicy::capi::mtu_from_c(o.path_mtu, ok);
    if (!ok)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                    "options->path_mtu " + std::to_string(o.path_mtu) + " is not an enum ibv_mtu (0 or 1..5)",
                    err, errlen);
    if (peer->gid_type != 0 && !gidpolicy::capi::gid_type_from_c(peer->gid_type))
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                    "peer->gid_type " + std::to_string(peer->gid_type) + " is not a gidpolicy_gid_type", err,
                    errlen);

    gidpolicy::PeerInfo info;
    info.qpn = peer->qpn;
    info.psn = peer->psn;
    info.gid = gidpolicy::Gid::from_bytes(peer->gid);
    info.lid = peer->lid;
    info.mtu = peer_mtu;
    info.gid_type = gidpolicy::capi::gid_type_from_c(peer->gid_type);

    gidpolicy::RtrBuilder builder(*kind, plan->table, plan->plan);
    builder.remote(info)
        .hop_limit(o.hop_limit)
        .traffic_class(o.traffic_class)
        .flow_label(o.flow_label)
        .service_level(o.service_level);
    if (path_mtu) builder.path_mtu(*path_mtu);
    if (*kind == gidpolicy::QpKind::rc)
      builder.max_dest_rd_atomic(o.max_dest_rd_atomic).min_rnr_timer(o.min_rnr_timer);
    auto rtr = builder.build();
    if (!rtr) return report(rtr.error(), err, errlen);
    std::memcpy(attr, &rtr.value().attr, sizeof *attr);
    *attr_mask = rtr.value().mask;
    return GIDPOLICY_OK;
  });
}

// ---- preflight ----------------------------------------------------------------------------

gidpolicy_status gidpolicy_preflight(const gidpolicy_table* table, uint32_t sgid_index,
                                     const uint8_t advertised[16], char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!table) return gidpolicy::capi::null_argument("table", err, errlen);
    if (!advertised) return gidpolicy::capi::null_argument("advertised", err, errlen);
    auto a = gidpolicy::check_agreement(table->table, gidpolicy::Gid::from_bytes(advertised), sgid_index);
    if (!a.agrees) return report(GIDPOLICY_ERR_DISAGREEMENT, a.explanation, err, errlen);
    return GIDPOLICY_OK;
  });
}

gidpolicy_status gidpolicy_preflight_live(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                          uint32_t port, uint32_t sgid_index, const uint8_t advertised[16],
                                          char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    return gidpolicy::capi::preflight_live(fns, context, port, sgid_index, advertised, std::nullopt, err,
                                           errlen);
  });
}

gidpolicy_status gidpolicy_preflight_live_typed(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                                uint32_t port, uint32_t sgid_index,
                                                const uint8_t advertised[16], int type, char* err,
                                                size_t errlen) {
  return guarded(err, errlen, [&] {
    const std::optional<gidpolicy::GidType> t = gidpolicy::capi::gid_type_from_c(type);
    if (type != GIDPOLICY_GID_TYPE_UNKNOWN && !t)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                    "type " + std::to_string(type) + " is not a gidpolicy_gid_type", err, errlen);
    return gidpolicy::capi::preflight_live(fns, context, port, sgid_index, advertised, t, err, errlen);
  });
}

gidpolicy_status gidpolicy_preflight_plan(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                          uint32_t port, const gidpolicy_plan* plan, char* err,
                                          size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!plan) return gidpolicy::capi::null_argument("plan", err, errlen);
    // A plan that already disagrees (a literal sgid_index) is refused without a driver call.
    if (!plan->plan.agrees())
      return report(GIDPOLICY_ERR_DISAGREEMENT,
                    plan->plan.agreement.explanation + " (refused before modify_qp)", err, errlen);
    std::uint8_t gid[16];
    plan->plan.selection.entry.gid.copy_to(gid);
    // The type of the entry routed from, as the C++ preflight(RtrAttributes) takes it: for every
    // plan without "@sgid=N" that is the selected entry, gidpolicy_plan_gid_type().
    std::optional<gidpolicy::GidType> type;
    const auto& at = plan->plan.agreement.at_index;
    if (at && at->type != gidpolicy::GidType::unknown) type = at->type;
    return gidpolicy::capi::preflight_live(fns, context, port, plan->plan.sgid_index, gid, type, err, errlen);
  });
}

}  // extern "C"
