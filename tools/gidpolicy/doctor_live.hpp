// `gidpolicy doctor` on live devices: every verbs call under a deadline (doctor_live.cpp).
#pragma once

#include "sources.hpp"

#include <gidpolicy/doctor.hpp>

#include <chrono>

namespace gidpolicy::cli {

/// What the live devices gave: the tables read, and the devices that failed or did not answer.
struct LiveRead {
  std::vector<GidTable> tables;
  std::vector<DeviceFailure> failures;
};

/// Read every device (or o.device, o.port) as `show` does, each verbs call under `deadline`:
/// the calls run in a child process that reports each call before making it, and a call that
/// does not answer in time gets the child killed (a thread stuck in a driver call cannot be
/// stopped; a process can) and the device reported as a DeviceFailure. The listing of the
/// devices runs in a child of its own, then one child per device, so one wedged device does not
/// hide the others. Errors: only what stops every device, with its code: the library cannot be
/// loaded (errc::library_unavailable), it lists no device (errc::no_devices), fork or pipe
/// failing. A listing that fails otherwise, crashes or does not answer is a DeviceFailure for
/// "(all devices)".
result<LiveRead> read_live(const SourceArgs& o, std::chrono::milliseconds deadline);

}  // namespace gidpolicy::cli
