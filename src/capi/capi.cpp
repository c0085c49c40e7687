// The C API (include/gidpolicy/gidpolicy.h) over the C++ core: gidpolicy::c.
//
// Every entry point is noexcept in effect: bodies run inside guarded(), which turns the one
// exception the core can raise (std::bad_alloc) into GIDPOLICY_ERR_NO_MEMORY.
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/trace.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::capi {

gidpolicy_status status_of(const Error& e) noexcept {
  if (e.code.category() != error_category()) return GIDPOLICY_ERR_DRIVER;  // a driver errno
  switch (static_cast<errc>(e.code.value())) {
    case errc::invalid_gid_text:
    case errc::parse_error:
    case errc::invalid_field:
    case errc::unsupported_version:
    case errc::duplicate_index:
    case errc::index_too_large:
    case errc::unknown_format:
    case errc::io_error:
      return GIDPOLICY_ERR_PARSE;
    case errc::invalid_policy_spec:
      return GIDPOLICY_ERR_INVALID_SPEC;
    case errc::no_ipv4_mapped_gid:
    case errc::no_candidate:
    case errc::index_out_of_range:
    case errc::index_exceeds_uint8:
    case errc::entry_empty:
    case errc::entry_unreadable:
    case errc::entry_zero:
    case errc::entry_not_shown:
    case errc::wrong_gid_type:
    case errc::wrong_family:
    case errc::link_local_rejected:
      return GIDPOLICY_ERR_NO_CANDIDATE;
    case errc::missing_required_attribute:
    case errc::peer_gid_zero:
    case errc::family_mismatch:
    case errc::roce_version_mismatch:
      return GIDPOLICY_ERR_RTR;
    case errc::gid_changed:
      return GIDPOLICY_ERR_GID_CHANGED;
    case errc::disagreement:
      return GIDPOLICY_ERR_DISAGREEMENT;
    case errc::no_devices:
    case errc::device_not_found:
    case errc::library_unavailable:
      return GIDPOLICY_ERR_DRIVER;
    case errc::port_not_active:
      return GIDPOLICY_ERR_PORT_NOT_ACTIVE;
    case errc::symbol_missing:
    case errc::not_supported:
      return GIDPOLICY_ERR_NOT_SUPPORTED;
    case errc::invalid_argument:
      return GIDPOLICY_ERR_INVALID_ARGUMENT;
  }
  return GIDPOLICY_ERR_INTERNAL;
}

std::string message_of(const Error& e) {
  std::string m = e.what();
  if (e.trace && !e.trace->attempts.empty()) m += "\n" + e.trace->to_string();
  return m;
}

namespace {

std::optional<GidType> gid_type_from_c(int t) noexcept {
  switch (t) {
    case GIDPOLICY_GID_TYPE_IB:
      return GidType::ib;
    case GIDPOLICY_GID_TYPE_ROCE_V1:
      return GidType::roce_v1;
    case GIDPOLICY_GID_TYPE_ROCE_V2:
      return GidType::roce_v2;
    default:
      return std::nullopt;
  }
}

gidpolicy_gid_type gid_type_to_c(GidType t) noexcept {
  switch (t) {
    case GidType::ib:
      return GIDPOLICY_GID_TYPE_IB;
    case GidType::roce_v1:
      return GIDPOLICY_GID_TYPE_ROCE_V1;
    case GidType::roce_v2:
      return GIDPOLICY_GID_TYPE_ROCE_V2;
    case GidType::unknown:
      break;
  }
  return GIDPOLICY_GID_TYPE_UNKNOWN;
}

/// enum ibv_qp_type -> QpKind; nullopt for a type gidpolicy does not build RTR attributes for.
std::optional<QpKind> qp_kind_from_c(int t) noexcept {
  switch (t) {
    case IBV_QPT_UC:
      return QpKind::uc;
    case IBV_QPT_RC:
      return QpKind::rc;
    case IBV_QPT_UD:
      return QpKind::ud;
    default:
      return std::nullopt;
  }
}

/// enum ibv_mtu (1..5) -> Mtu; 0 or anything else -> nullopt (`valid` says which).
std::optional<Mtu> mtu_from_c(int m, bool& valid) noexcept {
  valid = true;
  if (m == 0) return std::nullopt;
  if (m >= IBV_MTU_256 && m <= IBV_MTU_4096) return static_cast<Mtu>(m);
  valid = false;
  return std::nullopt;
}

Platform platform_from_c(gidpolicy_platform p, const gidpolicy_selection* s) noexcept {
  switch (p) {
    case GIDPOLICY_PLATFORM_LINUX:
      return Platform::linux_kernel;
    case GIDPOLICY_PLATFORM_DARWIN:
      return Platform::darwin;
    case GIDPOLICY_PLATFORM_AUTO:
    case GIDPOLICY_PLATFORM_MAX_ENUM_:
      break;
  }
  // Errno numbers are the driver's platform's: a Thunderbolt port is Apple's driver.
  if (s && s->table.port().link_layer.kind() == LinkLayer::Kind::thunderbolt) return Platform::darwin;
  return host_platform();
}

gidpolicy_status null_argument(const char* what, char* err, std::size_t errlen) {
  return report(GIDPOLICY_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL", err, errlen);
}

/// A backend over the caller's function pointers. The caller opened its device already and hands
/// over only the context and what it dlsym()ed (query_port, query_gid, _ibv_query_gid_ex): the
/// context is adopt()ed for one call and never closed.
verbs::FunctionTableApi context_api(const gidpolicy_verbs_fns& fns, bool resolve_netdev_names) {
  verbs::VerbsFunctions f;
  f.query_port = fns.query_port;
  f.query_gid = fns.query_gid;
  f.query_gid_ex = fns.query_gid_ex;
  f.query_gid_ex_sized = fns.query_gid_ex_sized;
  f.get_device_name = fns.get_device_name;
  return verbs::FunctionTableApi(f,
                                 {.name = "c-function-table", .resolve_netdev_names = resolve_netdev_names});
}

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
using gidpolicy::capi::guarded_text;
using gidpolicy::capi::report;

extern "C" {

const char* gidpolicy_status_name(int status) {
  switch (status) {
    case GIDPOLICY_OK:
      return "GIDPOLICY_OK";
    case GIDPOLICY_ERR_INVALID_ARGUMENT:
      return "GIDPOLICY_ERR_INVALID_ARGUMENT";
    case GIDPOLICY_ERR_INVALID_SPEC:
      return "GIDPOLICY_ERR_INVALID_SPEC";
    case GIDPOLICY_ERR_PARSE:
      return "GIDPOLICY_ERR_PARSE";
    case GIDPOLICY_ERR_NO_CANDIDATE:
      return "GIDPOLICY_ERR_NO_CANDIDATE";
    case GIDPOLICY_ERR_DRIVER:
      return "GIDPOLICY_ERR_DRIVER";
    case GIDPOLICY_ERR_PORT_NOT_ACTIVE:
      return "GIDPOLICY_ERR_PORT_NOT_ACTIVE";
    case GIDPOLICY_ERR_NOT_SUPPORTED:
      return "GIDPOLICY_ERR_NOT_SUPPORTED";
    case GIDPOLICY_ERR_RTR:
      return "GIDPOLICY_ERR_RTR";
    case GIDPOLICY_ERR_DISAGREEMENT:
      return "GIDPOLICY_ERR_DISAGREEMENT";
    case GIDPOLICY_ERR_GID_CHANGED:
      return "GIDPOLICY_ERR_GID_CHANGED";
    case GIDPOLICY_ERR_NO_MEMORY:
      return "GIDPOLICY_ERR_NO_MEMORY";
    case GIDPOLICY_ERR_INTERNAL:
      return "GIDPOLICY_ERR_INTERNAL";
  }
  return "unknown";
}

// ---- GIDs ---------------------------------------------------------------------------------

gidpolicy_status gidpolicy_gid_parse(const char* text, uint8_t gid[16], char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!text) return gidpolicy::capi::null_argument("text", err, errlen);
    if (!gid) return gidpolicy::capi::null_argument("gid", err, errlen);
    auto g = gidpolicy::parse_address(text);
    if (!g) return report(g.error(), err, errlen);
    g.value().copy_to(gid);
    return GIDPOLICY_OK;
  });
}

size_t gidpolicy_gid_to_string(const uint8_t gid[16], char* buf, size_t len) {
  return guarded_text(buf, len,
                      [&] { return gid ? gidpolicy::Gid::from_bytes(gid).to_string() : std::string(); });
}

// ---- policies -----------------------------------------------------------------------------

gidpolicy_status gidpolicy_policy_parse(const char* spec, gidpolicy_policy** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!spec) return gidpolicy::capi::null_argument("spec", err, errlen);
    auto profile = gidpolicy::parse_profile(spec);
    if (!profile) return report(profile.error(), err, errlen);
    *out = new gidpolicy_policy{std::move(profile).value()};
    return GIDPOLICY_OK;
  });
}

size_t gidpolicy_policy_spec(const gidpolicy_policy* policy, char* buf, size_t len) {
  return guarded_text(buf, len, [&] { return policy ? policy->profile.spec() : std::string(); });
}

void gidpolicy_policy_free(gidpolicy_policy* policy) { delete policy; }

// ---- tables -------------------------------------------------------------------------------

gidpolicy_status gidpolicy_snapshot(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                    uint32_t port, unsigned flags, gidpolicy_table** out, char* err,
                                    size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!fns) return gidpolicy::capi::null_argument("fns", err, errlen);
    if (!context) return gidpolicy::capi::null_argument("context", err, errlen);
    // Arguments first, then what the function table offers: port 0 is the caller's mistake
    // whatever the table holds (the header promises INVALID_ARGUMENT for it).
    if (port == 0 || port > 255)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT, "port " + std::to_string(port) + " is not in 1..255", err,
                    errlen);
    if (!fns->query_port)
      return report(GIDPOLICY_ERR_NOT_SUPPORTED, "gidpolicy_verbs_fns.query_port is NULL", err, errlen);
    if (!fns->query_gid && !fns->query_gid_ex && !fns->query_gid_ex_sized)
      return report(GIDPOLICY_ERR_NOT_SUPPORTED,
                    "gidpolicy_verbs_fns has no GID read (query_gid, query_gid_ex or query_gid_ex_sized)",
                    err, errlen);
    if (flags &
        ~static_cast<unsigned>(GIDPOLICY_SNAPSHOT_ALLOW_INACTIVE | GIDPOLICY_SNAPSHOT_STOP_AT_IPV4_MAPPED |
                               GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES | GIDPOLICY_SNAPSHOT_WHOLE_TABLE))
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT, "unknown snapshot flags " + std::to_string(flags), err,
                    errlen);

    gidpolicy::verbs::FunctionTableApi api =
        gidpolicy::capi::context_api(*fns, (flags & GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES) == 0);
    auto device = api.adopt(context);
    if (!device) return report(device.error(), err, errlen);
    gidpolicy::verbs::SnapshotOptions options;
    options.allow_inactive = (flags & GIDPOLICY_SNAPSHOT_ALLOW_INACTIVE) != 0;
    options.whole_table = (flags & GIDPOLICY_SNAPSHOT_WHOLE_TABLE) != 0;
    if (flags & GIDPOLICY_SNAPSHOT_STOP_AT_IPV4_MAPPED)
      options.stop_after = gidpolicy::verbs::stop_at_first_ipv4_mapped();
    auto table = gidpolicy::verbs::snapshot(api, device.value(), port, options);
    if (!table) return report(table.error(), err, errlen);
    *out = new gidpolicy_table{std::move(table).value()};
    return GIDPOLICY_OK;
  });
}

gidpolicy_status gidpolicy_table_from_json(const char* text, size_t text_len, const char* device,
                                           uint32_t port, gidpolicy_table** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!text) return gidpolicy::capi::null_argument("text", err, errlen);
    auto tables = gidpolicy::formats::read_json(std::string_view(text, text_len), "<json>");
    if (!tables) return report(tables.error(), err, errlen);
    for (gidpolicy::GidTable& t : tables.value()) {
      if (device && (t.port().device != device || t.port().port != port)) continue;
      *out = new gidpolicy_table{std::move(t)};
      return GIDPOLICY_OK;
    }
    std::string what =
        device ? "no port " + std::string(device) + ":" + std::to_string(port) : std::string("no port");
    std::string seen;
    for (const gidpolicy::GidTable& t : tables.value())
      seen += (seen.empty() ? "" : ", ") + t.port().device + ":" + std::to_string(t.port().port);
    return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                  what + " in the document" + (seen.empty() ? "" : "; it has " + seen), err, errlen);
  });
}

size_t gidpolicy_table_to_json(const gidpolicy_table* table, char* buf, size_t len) {
  return guarded_text(buf, len,
                      [&] { return table ? gidpolicy::formats::write_json({table->table}) : std::string(); });
}

uint32_t gidpolicy_table_length(const gidpolicy_table* table) { return table ? table->table.length() : 0; }

void gidpolicy_table_free(gidpolicy_table* table) { delete table; }

// ---- selection ----------------------------------------------------------------------------

gidpolicy_status gidpolicy_select(const gidpolicy_policy* policy, const gidpolicy_table* table,
                                  gidpolicy_selection** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!policy) return gidpolicy::capi::null_argument("policy", err, errlen);
    if (!table) return gidpolicy::capi::null_argument("table", err, errlen);
    auto plan = policy->profile.plan(table->table, {.trace = true});
    if (!plan) return report(plan.error(), err, errlen);
    *out = new gidpolicy_selection{table->table, std::move(plan).value()};
    return GIDPOLICY_OK;
  });
}

gidpolicy_status gidpolicy_select_port(const gidpolicy_policy* policy, const gidpolicy_table* const* tables,
                                       size_t count, size_t* chosen, gidpolicy_selection** out, char* err,
                                       size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!policy) return gidpolicy::capi::null_argument("policy", err, errlen);
    if (!chosen) return gidpolicy::capi::null_argument("chosen", err, errlen);
    if (!tables && count != 0) return gidpolicy::capi::null_argument("tables", err, errlen);
    const auto* ds4 = policy->profile.policy.target<gidpolicy::Ds4Linux>();
    if (!ds4 || policy->profile.source.is_literal())
      return report(
          GIDPOLICY_ERR_NOT_SUPPORTED,
          "gidpolicy_select_port() reproduces ds4's Linux port choice: give a ds4-linux policy, not " +
              policy->profile.spec(),
          err, errlen);
    std::vector<gidpolicy::GidTable> copies;
    copies.reserve(count);
    for (size_t k = 0; k < count; ++k) {
      if (!tables[k]) return gidpolicy::capi::null_argument("an element of tables", err, errlen);
      copies.push_back(tables[k]->table);
    }
    auto port = gidpolicy::choose_port(*ds4, copies, {.trace = true});
    if (!port) return report(port.error(), err, errlen);
    const gidpolicy::GidTable& t = copies[port.value().table];
    gidpolicy::Plan plan;
    plan.sgid_index = port.value().selection.sgid_index();
    plan.agreement = gidpolicy::check_agreement(t, port.value().selection.entry.gid, plan.sgid_index);
    plan.selection = std::move(port.value().selection);
    *chosen = port.value().table;
    *out = new gidpolicy_selection{t, std::move(plan)};
    return GIDPOLICY_OK;
  });
}

uint32_t gidpolicy_selection_index(const gidpolicy_selection* s) {
  return s ? s->plan.selection.entry.index : 0;
}

uint8_t gidpolicy_selection_sgid_index(const gidpolicy_selection* s) { return s ? s->plan.sgid_index : 0; }

int gidpolicy_selection_agrees(const gidpolicy_selection* s) { return s && s->plan.agrees() ? 1 : 0; }

size_t gidpolicy_selection_agreement(const gidpolicy_selection* s, char* buf, size_t len) {
  return guarded_text(buf, len, [&] { return s ? s->plan.agreement.explanation : std::string(); });
}

void gidpolicy_selection_gid(const gidpolicy_selection* s, uint8_t gid[16]) {
  if (!gid) return;
  if (!s) {
    std::memset(gid, 0, 16);
    return;
  }
  s->plan.selection.entry.gid.copy_to(gid);
}

gidpolicy_gid_type gidpolicy_selection_gid_type(const gidpolicy_selection* s) {
  return s ? gidpolicy::capi::gid_type_to_c(s->plan.selection.entry.type) : GIDPOLICY_GID_TYPE_UNKNOWN;
}

size_t gidpolicy_selection_trace(const gidpolicy_selection* s, char* buf, size_t len) {
  return guarded_text(buf, len, [&] { return s ? s->plan.selection.trace.to_string() : std::string(); });
}

void gidpolicy_selection_free(gidpolicy_selection* s) { delete s; }

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

gidpolicy_status gidpolicy_rtr_fill(const gidpolicy_selection* selection, const gidpolicy_peer* peer,
                                    const gidpolicy_rtr_options* options, struct ibv_qp_attr* attr,
                                    int* attr_mask, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!selection) return gidpolicy::capi::null_argument("selection", err, errlen);
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

    gidpolicy::RtrBuilder builder(*kind, selection->table, selection->plan);
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

gidpolicy_status gidpolicy_preflight_selection(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                               uint32_t port, const gidpolicy_selection* selection, char* err,
                                               size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!selection) return gidpolicy::capi::null_argument("selection", err, errlen);
    // A selection that already disagrees (a literal sgid_index) is refused without a driver call.
    if (!selection->plan.agrees())
      return report(GIDPOLICY_ERR_DISAGREEMENT,
                    selection->plan.agreement.explanation + " (refused before modify_qp)", err, errlen);
    std::uint8_t gid[16];
    selection->plan.selection.entry.gid.copy_to(gid);
    // The type of the entry routed from, as the C++ preflight(RtrAttributes) takes it: for every
    // selection without "@sgid=N" that is the selected entry, gidpolicy_selection_gid_type().
    std::optional<gidpolicy::GidType> type;
    const auto& at = selection->plan.agreement.at_index;
    if (at && at->type != gidpolicy::GidType::unknown) type = at->type;
    return gidpolicy::capi::preflight_live(fns, context, port, selection->plan.sgid_index, gid, type, err,
                                           errlen);
  });
}

// ---- errno explanations -------------------------------------------------------------------

size_t gidpolicy_explain_errno(int errnum, gidpolicy_platform platform, const gidpolicy_selection* selection,
                               const gidpolicy_peer* peer, char* buf, size_t len) {
  return guarded_text(buf, len, [&] {
    gidpolicy::DiagnoseContext context;
    if (selection) {
      context.table = &selection->table;
      context.sgid_index = selection->plan.sgid_index;
      context.advertised = selection->plan.selection.entry.gid;
    }
    if (peer) {
      context.peer_gid = gidpolicy::Gid::from_bytes(peer->gid);
      context.peer_gid_type = gidpolicy::capi::gid_type_from_c(peer->gid_type);
    }
    return gidpolicy::diagnose(errnum, gidpolicy::capi::platform_from_c(platform, selection), context)
        .to_string();
  });
}

}  // extern "C"
