// host_doctor.hpp: the doctor's live reads of this host.
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/host_doctor.hpp>
#include <gidpolicy/system_interfaces.hpp>

#include "run_command.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

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

namespace {

/// The names in `dir` (not "." or ".."), sorted; empty when it is absent or unreadable. Bounded:
/// a host has a handful of RDMA devices, never thousands.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  for (; !ec && it != end && out.size() < 256; it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool read_no_device(DoctorInput& in, const Error& listing, const std::string& class_dir,
                    const std::string& dev_dir) {
  NoDevice d;
  d.detail = listing.detail;
  if (listing == errc::library_unavailable) {
    d.cause = NoDevice::Cause::library_missing;
  } else if (listing == errc::no_devices) {
    if (in.platform == Platform::darwin) return true;  // rdma_ctl status says why (rdma_state())
    d.kernel_devices = names_in(class_dir);
    if (d.kernel_devices.empty()) {
      d.cause = NoDevice::Cause::no_kernel_device;
      // soft-RoCE needs a real interface: up, not loopback, holding an address (the first such).
      for (const HostInterface& i : in.interfaces)
        if (i.up && !i.loopback && !i.addresses.empty()) {
          d.netdev = i.name;
          break;
        }
    } else {
      d.cause = NoDevice::Cause::provider_missing;
      for (const std::string& n : names_in(dev_dir))
        d.uverbs_nodes = d.uverbs_nodes || n.rfind("uverbs", 0) == 0;
    }
  } else {
    return false;
  }
  in.no_device = std::move(d);
  return true;
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
