// host_doctor.hpp: the doctor's live reads of this host.
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/host_doctor.hpp>
#include <gidpolicy/system_interfaces.hpp>

#include "run_command.hpp"

#include <chrono>

namespace gidpolicy {

void read_host_interfaces(DoctorInput& in) {
  SystemInterfaces system;
  if (auto ifs = read_interfaces(system)) {
    in.interfaces = std::move(ifs).value();
    in.interfaces_known = true;
  } else {
    in.interfaces_known = false;
    in.interfaces_error = ifs.error().detail;
  }
}

void route_peers(DoctorInput& in, RouteSource& routes) {
  for (DoctorPeer& p : in.peers) {
    if (auto ok = check_peer(p.address); !ok)
      p.route = fail(ok.error());
    else
      p.route = routes.route_to(p.address);
  }
}

void read_rdma_state(DoctorInput& in, const std::vector<std::string>& command,
                     std::chrono::milliseconds deadline) {
  const std::string what = command.empty() ? std::string("rdma_ctl status") : command.front();
  const auto out = host_detail::run_command(command, deadline, 4096);
  if (!out) {
    in.rdma_state_error = out.error().detail;
    return;
  }
  const host_detail::CommandOutput& o = out.value();
  if (o.timed_out) {
    in.rdma_state_error = what + " did not answer within " + std::to_string(deadline.count()) + " ms";
  } else if (o.truncated) {
    in.rdma_state_error = what + " printed more than 4 KiB";
  } else if (o.exit_status != 0) {
    in.rdma_state_error = what + (o.exit_status < 0 ? std::string(" died of a signal")
                                                    : " exited " + std::to_string(o.exit_status));
  } else if (auto enabled = darwin::rdma_ctl_enabled(o.out)) {
    in.rdma_enabled = enabled.value();
  } else {
    in.rdma_state_error = enabled.error().detail;
  }
}

void read_rdma_state(DoctorInput& in) {
#if defined(__APPLE__)
  read_rdma_state(in, {"/usr/bin/rdma_ctl", "status"});
#else
  (void)in;  // Linux has no RDMA switch to ask
#endif
}

}  // namespace gidpolicy
