// gidpolicy live path: the core plus the VerbsApi seam, in one include.
//
// What a program that talks to real (or fake) RDMA devices needs: snapshot a port's table
// through the seam, plan on it, preflight (re-read the routed entry right before modify_qp:
// tables change under running jobs, NCCL 2157) and apply the RTR, and watch the table for
// changes, and ask the kernel for the route to a peer (KernelRoutes, for auto:peer=ADDR). Backends:
// verbs::DlopenApi (loads libibverbs.so.1 at run time; in gidpolicy::gidpolicy) and verbs::FunctionTableApi
// (a table of function pointers). The linked backend (gidpolicy/verbs/libibverbs_api.hpp) is left out: it
// needs the gidpolicy::verbs target.
//
// Example:
//   #include <gidpolicy/live.hpp>
//   gidpolicy::verbs::DlopenApi api;                       // libibverbs.so.1 / librdma.dylib
//   auto dev = api.open_device("mlx5_0").value();
//   auto port = gidpolicy::verbs::plan_port(api, dev, 1, gidpolicy::profiles::automatic()).value();
//   auto rtr = gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, port.table, port.plan).remote(peer).build();
#pragma once

#include <gidpolicy/core.hpp>
#include <gidpolicy/kernel_routes.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>
#include <gidpolicy/verbs/watch.hpp>
