// The C API's policies and selections: parsing a policy spec, selecting from a table (or, for
// ds4-linux, a port among several), and reading a selection.
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>

#include <cstring>
#include <string>
#include <vector>

using gidpolicy::capi::guarded;
using gidpolicy::capi::guarded_text;
using gidpolicy::capi::report;

extern "C" {

// ---- policies -----------------------------------------------------------------------------

gidpolicy_status gidpolicy_profile_parse(const char* spec, gidpolicy_profile** out, char* err,
                                         size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!spec) return gidpolicy::capi::null_argument("spec", err, errlen);
    auto profile = gidpolicy::parse_profile(spec);
    if (!profile) return report(profile.error(), err, errlen);
    *out = new gidpolicy_profile{std::move(profile).value()};
    return GIDPOLICY_OK;
  });
}

size_t gidpolicy_profile_spec(const gidpolicy_profile* profile, char* buf, size_t len) {
  return guarded_text(buf, len, [&] { return profile ? profile->profile.spec() : std::string(); });
}

void gidpolicy_profile_free(gidpolicy_profile* profile) { delete profile; }

// ---- selection ----------------------------------------------------------------------------

gidpolicy_status gidpolicy_select(const gidpolicy_profile* profile, const gidpolicy_table* table,
                                  gidpolicy_plan** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!profile) return gidpolicy::capi::null_argument("profile", err, errlen);
    if (!table) return gidpolicy::capi::null_argument("table", err, errlen);
    auto plan = profile->profile.plan(table->table, {.trace = true});
    if (!plan) return report(plan.error(), err, errlen);
    *out = new gidpolicy_plan{table->table, std::move(plan).value()};
    return GIDPOLICY_OK;
  });
}

gidpolicy_status gidpolicy_select_port(const gidpolicy_profile* profile, const gidpolicy_table* const* tables,
                                       size_t count, size_t* chosen, gidpolicy_plan** out, char* err,
                                       size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!profile) return gidpolicy::capi::null_argument("profile", err, errlen);
    if (!chosen) return gidpolicy::capi::null_argument("chosen", err, errlen);
    if (!tables && count != 0) return gidpolicy::capi::null_argument("tables", err, errlen);
    const auto* ds4 = profile->profile.policy.target<gidpolicy::Ds4Linux>();
    if (!ds4 || profile->profile.source.is_literal())
      return report(
          GIDPOLICY_ERR_NOT_SUPPORTED,
          "gidpolicy_select_port() reproduces ds4's Linux port choice: give a ds4-linux profile, not " +
              profile->profile.spec(),
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
    *out = new gidpolicy_plan{t, std::move(plan)};
    return GIDPOLICY_OK;
  });
}

uint32_t gidpolicy_plan_index(const gidpolicy_plan* plan) {
  return plan ? plan->plan.selection.entry.index : 0;
}

uint8_t gidpolicy_plan_sgid_index(const gidpolicy_plan* plan) { return plan ? plan->plan.sgid_index : 0; }

int gidpolicy_plan_agrees(const gidpolicy_plan* plan) { return plan && plan->plan.agrees() ? 1 : 0; }

size_t gidpolicy_plan_agreement(const gidpolicy_plan* plan, char* buf, size_t len) {
  return guarded_text(buf, len, [&] { return plan ? plan->plan.agreement.explanation : std::string(); });
}

void gidpolicy_plan_gid(const gidpolicy_plan* plan, uint8_t gid[16]) {
  if (!gid) return;
  if (!plan) {
    std::memset(gid, 0, 16);
    return;
  }
  plan->plan.selection.entry.gid.copy_to(gid);
}

gidpolicy_gid_type gidpolicy_plan_gid_type(const gidpolicy_plan* plan) {
  return plan ? gidpolicy::capi::gid_type_to_c(plan->plan.selection.entry.type) : GIDPOLICY_GID_TYPE_UNKNOWN;
}

size_t gidpolicy_plan_trace(const gidpolicy_plan* plan, char* buf, size_t len) {
  return guarded_text(buf, len,
                      [&] { return plan ? plan->plan.selection.trace.to_string() : std::string(); });
}

void gidpolicy_plan_free(gidpolicy_plan* plan) { delete plan; }

}  // extern "C"
