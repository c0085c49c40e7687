// run_command: one program run with a deadline and a bound on what it prints, no shell: how the
// host layer asks a Mac's own tools (`ifconfig -a` for bridge members, `rdma_ctl status`),
// which have no library interface. Internal to the library (host layer).
//
// Why bounded: a tool that hangs (ibv_devinfo on a wedged port hangs; a tool waiting on a
// daemon can too) must not hang the doctor, and one that floods its output must not fill memory.
// The child is killed (SIGKILL) at the deadline or once it printed `max_bytes`, and reaped.
#pragma once

#include <gidpolicy/error.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace gidpolicy::host_detail {

struct CommandOutput {
  std::string out;         ///< its standard output (standard error is discarded)
  int exit_status = -1;    ///< its exit status; -1 when it was killed or died of a signal
  bool timed_out = false;  ///< killed at the deadline
  bool truncated = false;  ///< killed after printing max_bytes
};

/// Runs argv[0] (a path: not looked up in PATH, so the program run is the one named) with
/// argv. Errors: an empty argv (errc::invalid_argument), a program that cannot be started
/// (errc::not_found / io_error from fork, pipe or exec, named).
result<CommandOutput> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds deadline,
                                  std::size_t max_bytes);

}  // namespace gidpolicy::host_detail
