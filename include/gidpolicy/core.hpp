// gidpolicy core: the pure pipeline in one include, from a table snapshot to RTR attributes.
//
// GidTable -> Selection (a policy's pick + its trace) -> Plan (the selection, the sgid_index it
// routes from and their Agreement; made by a Profile) -> RtrAttributes (RtrBuilder) -> judged
// by a driver model (judge_rtr, predict_rtr, diagnose). docs/concepts.md names each step.
// No verbs calls and no table readers: a translation unit that only chooses and builds does not
// compile nlohmann/json, <filesystem> or the VerbsApi seam. The live path (snapshot a port,
// preflight, apply, watch) is <gidpolicy/live.hpp>; table readers are gidpolicy/formats/*.hpp.
//
// Example:
//   #include <gidpolicy/core.hpp>
//   auto plan = gidpolicy::parse_profile("auto").value().plan(table).value();
//   auto rtr = gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, table, plan).remote(peer).build();
#pragma once

// Vocabulary.
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/qp.hpp>
#include <gidpolicy/rtr_request.hpp>
#include <gidpolicy/trace.hpp>
// Selection: policies.
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policies/registry.hpp>  // every built-in policy's header, and their table
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/policy.hpp>
#include <gidpolicy/source_index.hpp>
// Plan: profiles, agreement, replanning after a table change.
#include <gidpolicy/agreement.hpp>
#include <gidpolicy/change.hpp>
#include <gidpolicy/plan.hpp>
#include <gidpolicy/profiles.hpp>
// RTR: the builder, the driver models, prediction and diagnosis.
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/link.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/side_channel.hpp>
