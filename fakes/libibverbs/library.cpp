// Configuration of the drop-in fake libibverbs.so.1 from the environment, and its control log.
//
//   GIDPOLICY_FAKE_TABLES   a GID table file in any format gidpolicy reads (JSON, ibv_devinfo -v,
//                           show_gids) or a sysfs-like directory
//   GIDPOLICY_FAKE_DRIVER   linux | apple_thunderbolt: the driver model (default: per device, by
//                           link layer); GIDPOLICY_FAKE_PROFILE is its old name, still read
//   GIDPOLICY_FAKE_LOG      append one JSON object per control call to this file
//
// A bad configuration behaves like a machine without RDMA (ibv_get_device_list: NULL, ENOSYS)
// and prints exactly one line on stderr saying what to fix: the only output the library makes.
#include "data_path.hpp"
#include "fakelib.hpp"

#include <gidpolicy/formats/detect.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

namespace gidpolicy::fakelib {

namespace {

constexpr const char* kPrefix = "gidpolicy fake libibverbs: ";

// A GUID for a device: the interface id of its first link-local GID when it has one (what a
// NIC's EUI-64 node GUID looks like next to its fe80:: GID), else a stable hash of the name.
/// The ports below a device's highest listed one that its table does not list: DOWN, no GIDs,
/// the link layer, MTU and table length of the device's lowest listed port.
std::vector<GidTable> unlisted_ports(const std::vector<GidTable>& tables) {
  std::map<std::string, std::map<std::uint32_t, const GidTable*>> listed;
  for (const GidTable& t : tables) listed[t.port().device].emplace(t.port().port, &t);
  std::vector<GidTable> out;
  for (const auto& [name, ports] : listed) {
    const PortInfo& like = ports.begin()->second->port();
    for (std::uint32_t p = 1; p < ports.rbegin()->first; ++p) {
      if (ports.count(p)) continue;
      PortInfo info = like;
      info.port = p;
      info.state = PortState::down;
      info.lid = 0;
      if (!info.gid_tbl_len) info.gid_tbl_len = ports.begin()->second->length();
      if (auto t = GidTable::make(std::move(info), {})) out.push_back(std::move(t.value()));
    }
  }
  return out;
}

std::uint64_t device_guid(const std::vector<const GidTable*>& ports, const std::string& name) {
  for (const GidTable* t : ports)
    for (const GidEntry& e : *t)
      if (e.usable() && e.gid.is_link_local() && e.gid.interface_id() != 0) return e.gid.interface_id();
  std::uint64_t h = 1469598103934665603ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return (h & ~0x0100000000000000ull) | 0x0200000000000000ull;  // locally administered, unicast
}

void copy_name(char* dst, std::size_t size, const std::string& src) {
  std::snprintf(dst, size, "%s", src.c_str());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
Library& Library::get() {
  static Library* const instance = new Library();  // intentionally never destroyed
  return *instance;
}

Library::Library() {
  auto bad = [](const std::string& why) {
    std::fprintf(stderr, "%s%s; no RDMA devices\n", kPrefix, why.c_str());
  };

  const char* tables_env = std::getenv("GIDPOLICY_FAKE_TABLES");
  if (!tables_env || !*tables_env) {
    bad("GIDPOLICY_FAKE_TABLES is not set (point it at a GID table: JSON, ibv_devinfo -v or show_gids "
        "output)");
    return;
  }
  // GIDPOLICY_FAKE_HANG: a call that never returns. An unknown name is refused, not ignored: a
  // test that means to wedge a device must not pass because nothing hung.
  if (const char* h = std::getenv("GIDPOLICY_FAKE_HANG"); h && *h) {
    const bool known = std::any_of(std::begin(kHangableCalls), std::end(kHangableCalls),
                                   [&](const char* c) { return std::strcmp(c, h) == 0; });
    if (!known) {
      std::string list;
      for (const char* c : kHangableCalls) list += (list.empty() ? "" : ", ") + std::string(c);
      bad(std::string("GIDPOLICY_FAKE_HANG=") + h + " is not a call the fake can hang in (one of: " + list +
          ")");
      return;
    }
    hang = h;
  }
  // The driver model. "Profile" names a selection behaviour everywhere else, so the variable
  // is GIDPOLICY_FAKE_DRIVER; the old name is still read, and the two must not disagree.
  const char* driver_env = std::getenv("GIDPOLICY_FAKE_DRIVER");
  const char* old_env = std::getenv("GIDPOLICY_FAKE_PROFILE");
  if (driver_env && *driver_env && old_env && *old_env && std::strcmp(driver_env, old_env) != 0) {
    bad(std::string("GIDPOLICY_FAKE_DRIVER=") + driver_env +
        " and its old name GIDPOLICY_FAKE_PROFILE=" + old_env + " disagree (set one)");
    return;
  }
  const char* driver_var = driver_env && *driver_env ? "GIDPOLICY_FAKE_DRIVER" : "GIDPOLICY_FAKE_PROFILE";
  if (!(driver_env && *driver_env)) driver_env = old_env;
  std::optional<DriverModel> driver;
  if (driver_env && *driver_env) {
    driver = DriverModel::by_name(driver_env);
    if (!driver) {
      bad(std::string(driver_var) + "=" + driver_env + " is not a driver model (linux, apple_thunderbolt)");
      return;
    }
  }
  auto tables = formats::read_tables_file(tables_env);
  if (!tables) {
    bad("GIDPOLICY_FAKE_TABLES=" + std::string(tables_env) + ": " + tables.error().what());
    return;
  }
  if (auto added = model.add_tables(tables.value(), driver); !added) {
    bad("GIDPOLICY_FAKE_TABLES=" + std::string(tables_env) + ": " + added.error().what());
    return;
  }
  // Port numbers count from 1 (phys_port_cnt is the highest): a table that lists only port 2
  // still describes a device with a port 1, which answers ibv_query_port as DOWN with no GIDs.
  std::vector<GidTable> unlisted = unlisted_ports(tables.value());
  for (const GidTable& t : unlisted)
    if (auto added = model.add_port(t, driver); !added) {
      bad("GIDPOLICY_FAKE_TABLES=" + std::string(tables_env) + ": " + added.error().what());
      return;
    }
  // GIDPOLICY_FAKE_FABRIC: QP sockets as files in this directory (see fabric_dir()).
  if (const char* f = std::getenv("GIDPOLICY_FAKE_FABRIC"); f && *f) {
    const std::string dir(f);
    // "<dir>/qp-xxxxxx" and its NUL must fit sockaddr_un::sun_path (108 bytes).
    if (dir.size() + 11 > sizeof(sockaddr_un{}.sun_path)) {
      bad("GIDPOLICY_FAKE_FABRIC=" + dir + ": longer than " +
          std::to_string(sizeof(sockaddr_un{}.sun_path) - 11) + " bytes, too long for a Unix socket address");
      return;
    }
    std::error_code fec;
    if (dir.front() != '/' || !std::filesystem::is_directory(dir, fec)) {
      bad("GIDPOLICY_FAKE_FABRIC=" + dir + ": not an absolute path to a directory");
      return;
    }
    fabric_dir() = dir;
  }
  if (const char* l = std::getenv("GIDPOLICY_FAKE_LOG"); l && *l) {
    if (int err = log.open(l); err != 0) {
      bad(std::string("GIDPOLICY_FAKE_LOG=") + l + ": " + std::strerror(err));
      return;
    }
  }

  // Providers a program loaded (perftest links libmlx5 and libefa) registered themselves from
  // their constructors; the fake accepted and ignores them. Logged so a run shows they were there.
  if (log.enabled()) {
    for (const std::string& name : registered_providers()) {
      auto r = record("register_driver", nullptr);
      r["provider"] = name;
      r["result"] = 0;
      log.write(r);
    }
  }

  // QP numbers name the QPs' sockets (abstract Unix addresses): the data path sends to dest_qp_num.
  model.set_qp_number_allocator([this]() -> result<std::uint32_t> {
    if (pending_qp_number == 0) return fail(errc::invalid_argument, "no socket for the new QP");
    return std::exchange(pending_qp_number, 0u);
  });

  // Devices in the order the table file names them; ports of one device grouped.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const GidTable*>> by_device;
  for (const GidTable& t : tables.value()) {
    if (!by_device.count(t.port().device)) order.push_back(t.port().device);
    by_device[t.port().device].push_back(&t);
  }
  for (const GidTable& t : unlisted) by_device[t.port().device].push_back(&t);
  for (auto& [name, ports] : by_device)
    std::stable_sort(ports.begin(), ports.end(),
                     [](const GidTable* a, const GidTable* b) { return a->port().port < b->port().port; });
  const std::filesystem::path tables_path(tables_env);
  std::error_code ec;
  const bool sysfs_dir = std::filesystem::is_directory(tables_path, ec);
  std::optional<std::string> sysfs_class;
  if (const char* c = std::getenv("GIDPOLICY_FAKE_SYSFS"); c && *c) sysfs_class = c;
  for (const std::string& name : order) {
    auto d = std::make_unique<Device>();
    d->name = name;
    d->index = static_cast<int>(devices.size());
    for (const GidTable* t : by_device[name]) {
      d->ports.push_back(t->port().port);
      d->link_layers.push_back(t->port().link_layer);
      d->phys_port_cnt = std::max(d->phys_port_cnt, t->port().port);
      if (t->port().link_layer.kind() == LinkLayer::Kind::thunderbolt) d->thunderbolt = true;
    }
    d->guid = device_guid(by_device[name], name);
    fakes::c_core::describe_device(model, name, d->index, &d->dev);  // shared with the C ABI
    // Tables read from a sysfs-like directory: the device's directory there is its sysfs path
    // (ibv_read_sysfs_file then reads real files). Otherwise a path that cannot exist, so no
    // program mistakes this machine's /sys for the fake device's.
    // Under `gidpolicy fake-host` (GIDPOLICY_FAKE_SYSFS names the class directory it mounted,
    // "/sys/class") the paths are the kernel's: infiniband/<dev> and infiniband_verbs/uverbsN.
    std::string ibdev = "/nonexistent/gidpolicy-fake/" + name;
    std::string uverbs = "/nonexistent/gidpolicy-fake/uverbs" + std::to_string(d->index);
    if (sysfs_class) {
      ibdev = *sysfs_class + "/infiniband/" + name;
      uverbs = *sysfs_class + "/infiniband_verbs/uverbs" + std::to_string(d->index);
    } else if (sysfs_dir && std::filesystem::is_directory(tables_path / name, ec)) {
      ibdev = (tables_path / name).string();
    }
    copy_name(d->dev.ibdev_path, sizeof d->dev.ibdev_path, ibdev);
    copy_name(d->dev.dev_path, sizeof d->dev.dev_path, uverbs);
    devices.push_back(std::move(d));
  }
  configured = true;
}

void Library::hang_in(const char* call) {
  if (hang.empty() || hang != call) return;
  {
    std::lock_guard lock(mu);
    auto r = record("hang", nullptr);
    r["in"] = call;
    log.write(r);
  }
  for (;;) ::pause();  // what a wedged driver does: the call never returns; a signal ends the process
}

void hang_point(const char* call) noexcept {
  try {
    Library::get().hang_in(call);
  } catch (...) {
    // The library could not be set up (no memory): the call itself reports that.
  }
}

nlohmann::ordered_json Library::record(const char* call, const Device* device) const {
  // An object from the start: nlohmann's operator[] on a null value marks it an object before it
  // allocates, and a std::bad_alloc there leaves a value whose destructor asserts (the guard
  // would never see the exception in a debug build).
  nlohmann::ordered_json r = nlohmann::ordered_json::object();
  r["pid"] = static_cast<long>(::getpid());
  r["call"] = call;
  if (device) r["device"] = device->name;
  return r;
}

Context* Library::context(const ibv_context* c) {
  auto it = contexts.find(c);
  return it == contexts.end() ? nullptr : it->second.get();
}
Pd* Library::pd(const ibv_pd* p) {
  auto it = pds.find(p);
  return it == pds.end() ? nullptr : it->second.get();
}
Cq* Library::cq(const ibv_cq* c) {
  auto it = cqs.find(c);
  return it == cqs.end() ? nullptr : it->second.get();
}
Qp* Library::qp(const ibv_qp* q) {
  auto it = qps.find(q);
  return it == qps.end() ? nullptr : it->second.get();
}
Srq* Library::srq(const ibv_srq* s) {
  auto it = srqs.find(s);
  return it == srqs.end() ? nullptr : it->second.get();
}

Ah* Library::ah(const ibv_ah* a) {
  auto it = ahs.find(a);
  return it == ahs.end() ? nullptr : it->second.get();
}

Channel* Library::channel(const ibv_comp_channel* c) {
  auto it = channels.find(c);
  return it == channels.end() ? nullptr : it->second.get();
}

std::uint32_t abi_gid_type(GidType type, LinkLayer link_layer) noexcept {
  return fakes::c_core::abi_gid_type(type, link_layer);
}

LinkLayer link_layer_of(const Device& device, std::uint32_t port) noexcept {
  for (std::size_t i = 0; i < device.ports.size(); ++i)
    if (device.ports[i] == port) return device.link_layers[i];
  return LinkLayer::ethernet();
}

int errno_of(const Error& e) noexcept { return fakes::c_core::to_errno(e); }

std::string errno_name_for(const Device* device, int err) {
  Platform platform = Platform::linux_kernel;
  if (device) {
    auto p = Library::get().model.driver_model(device->name);
    if (p) platform = p.value().platform;
  }
  return errno_name(platform, err);
}

void fail_record(Library& lib, nlohmann::ordered_json& r, const Device* d, int err,
                 const std::string& reason) {
  r["result"] = err;
  r["error"] = errno_name_for(d, err);
  if (!reason.empty()) r["reason"] = reason;
  lib.log.write(r);
}

}  // namespace gidpolicy::fakelib
