// What `gidpolicy doctor` reads of this host besides the GID tables, in one place for every
// caller (the CLI, the Python module, a launcher's own pre-flight): its interfaces, the kernel's
// route to each peer, and on macOS whether RDMA is enabled. Each call fills its part of a
// DoctorInput (doctor.hpp); examine() then judges it. In the `host` layer (docs/concepts.md,
// "Layers"): these ask the running system, and only this layer does.
//
// Hardware/OS facts encoded here:
//  * What a read cannot tell is said, never guessed: interfaces that cannot be listed make
//    `interfaces_known` false with the reason; a route lookup that fails keeps its error for
//    the peer's finding; `rdma_ctl status` that does not answer leaves `rdma_enabled` unset
//    with `rdma_state_error`.
//  * `rdma_ctl status` is asked only on macOS (Linux has no such switch), for at most 2 s.
//
// Example:
//   gidpolicy::DoctorInput in;
//   in.tables = tables;                          // snapshots of every port
//   gidpolicy::read_host_interfaces(in);
//   in.peers.push_back({gidpolicy::PeerAddress::parse("192.168.200.2").value(), "--peer"});
//   gidpolicy::KernelRoutes kernel;
//   gidpolicy::route_peers(in, kernel);
//   gidpolicy::read_rdma_state(in);
//   const gidpolicy::DoctorReport r = gidpolicy::examine(in);
#pragma once

#include <gidpolicy/doctor.hpp>
#include <gidpolicy/kernel_routes.hpp>
#include <gidpolicy/network.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace gidpolicy {

/// in.interfaces from this host (SystemInterfaces, system_interfaces.hpp), in.platform's
/// numbers being the build's; on failure in.interfaces_known = false and in.interfaces_error.
void read_host_interfaces(DoctorInput& in);

/// The route to every peer of in.peers from `routes` (KernelRoutes for the live host), after
/// check_peer(): a peer the rules refuse (an all-zero or multicast address) keeps that error
/// and is not looked up.
void route_peers(DoctorInput& in, RouteSource& routes);

/// Live reads listed no device, failing with `listing` (errc::library_unavailable: the library
/// cannot be loaded; errc::no_devices: it lists none): in.no_device says why, from what the
/// host shows. The library loads but lists none: `class_dir` (/sys/class/infiniband) absent or
/// empty is no kernel device (a real interface of in.interfaces is named for soft-RoCE), else
/// the provider is missing, or `dev_dir` (/dev/infiniband) holds no uverbsN node. Returns false,
/// setting nothing, for any other error (not a missing device: the caller reports it). On macOS
/// a listing of none is rdma_ctl's to explain (read_rdma_state()): nothing is set for it.
///
/// Example:
///   gidpolicy::DoctorInput in;
///   gidpolicy::read_host_interfaces(in);
///   if (gidpolicy::read_no_device(in, gidpolicy::Error(gidpolicy::errc::no_devices, "none")))
///     std::cout << (in.no_device ? "no device, cause known\n" : "macOS: ask rdma_ctl\n");
bool read_no_device(DoctorInput& in, const Error& listing,
                    const std::string& class_dir = "/sys/class/infiniband",
                    const std::string& dev_dir = "/dev/infiniband");

/// macOS: `/usr/bin/rdma_ctl status` (at most 2 s) into in.rdma_enabled, or the reason it could
/// not be read into in.rdma_state_error. Elsewhere nothing is asked and nothing set.
void read_rdma_state(DoctorInput& in);

/// The same with `command` (a path and its arguments, no shell, not looked up in PATH) in
/// rdma_ctl's place, on any platform: its standard output is read as `rdma_ctl status` prints
/// it. It runs for at most `deadline` and is killed then, or once it printed 4 KiB; a program
/// that cannot start, is killed, exits non-zero or says something else sets rdma_state_error.
void read_rdma_state(DoctorInput& in, const std::vector<std::string>& command,
                     std::chrono::milliseconds deadline = std::chrono::seconds(2));

}  // namespace gidpolicy
