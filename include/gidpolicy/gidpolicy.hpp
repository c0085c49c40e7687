// gidpolicy: everything needed to choose a GID and build RTR attributes from it, in one include.
// Reading tables (gidpolicy/formats/*.hpp: JSON, ibv_devinfo, show_gids, sysfs) and the verbs
// seam (gidpolicy/verbs/*.hpp) are included separately, so a translation unit that only chooses
// does not compile nlohmann/json or <filesystem>.
//
// Example:
//   #include <gidpolicy/gidpolicy.hpp>
//   auto prof = gidpolicy::parse_profile("auto").value();
//   auto plan = prof.plan(table).value();
//   auto rtr = gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, table, plan).remote(peer).build();
#pragma once

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_profile.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>
#include <gidpolicy/policy.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/trace.hpp>
