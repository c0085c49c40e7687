// gidpolicy: the front door. Everything public in one include, linked as gidpolicy::gidpolicy
// (pkg-config: gidpolicy):
//   <gidpolicy/core.hpp>   the pure pipeline: tables, policies, plans and profiles, the RTR
//                          builder, the driver models, diagnose (gidpolicy::core)
//   the rest of the core   table readers and writers (formats/), the fleet analysis, the stacks'
//                          picks and pins, `check`'s rows, `env`'s settings, the doctor's
//                          judgment, interfaces and Darwin's records as values, the name rule
//   <gidpolicy/live.hpp>   the live path over the verbs seam, the kernel's routes
//                          (gidpolicy::host, which links the core)
//   the rest of the host   this host's interfaces (getifaddrs), the doctor's reads of this host
//
// The gotcha it encodes: one include compiles everything (nlohmann/json is never in it, but
// <filesystem> and the verbs headers are). A translation unit that only chooses and builds
// includes <gidpolicy/core.hpp> and links gidpolicy::core, which holds no process spawning,
// socket or dlopen. Two public headers are left out on purpose, each saying why in itself:
// <gidpolicy/gidpolicy.h> (the C API, linked as gidpolicy::c) and
// <gidpolicy/verbs/libibverbs_api.hpp> (the backend that links libibverbs, gidpolicy::verbs).
// scripts/check-umbrellas keeps every other public header reachable from here.
//
// Example:
//   #include <gidpolicy/gidpolicy.hpp>
//   auto tables = gidpolicy::formats::read_json(text, "tables.json").value();
//   auto plan = gidpolicy::parse_profile("auto").value().plan(tables.front()).value();
//   gidpolicy::verbs::DlopenApi api;  // the live path, when the host has libibverbs.so.1
#pragma once

// The pure core (gidpolicy::core).
#include <gidpolicy/bundle.hpp>
#include <gidpolicy/check.hpp>
#include <gidpolicy/core.hpp>
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/darwin_tools.hpp>
#include <gidpolicy/doctor.hpp>
#include <gidpolicy/env.hpp>
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/rdma_cm.hpp>
#include <gidpolicy/stacks.hpp>
// What asks this host (gidpolicy::host).
#include <gidpolicy/host_doctor.hpp>
#include <gidpolicy/live.hpp>
#include <gidpolicy/system_interfaces.hpp>
#include <gidpolicy/verbs/functions.hpp>
