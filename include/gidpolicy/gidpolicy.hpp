// gidpolicy: the pure library in one include: the core pipeline (<gidpolicy/core.hpp>: tables,
// policies, plans and profiles, the RTR builder, the driver models, diagnose) and the fleet
// analysis (<gidpolicy/fleet.hpp>). Reading tables (gidpolicy/formats/*.hpp: JSON, ibv_devinfo,
// show_gids, sysfs) is included separately, so a translation unit that only chooses does not
// compile nlohmann/json or <filesystem>; the live path over the verbs seam is
// <gidpolicy/live.hpp>.
//
// Example:
//   #include <gidpolicy/gidpolicy.hpp>
//   auto prof = gidpolicy::parse_profile("auto").value();
//   auto plan = prof.plan(table).value();
//   auto rtr = gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, table, plan).remote(peer).build();
#pragma once

#include <gidpolicy/core.hpp>
#include <gidpolicy/fleet.hpp>
