// The device half of the verbs C ABI: device list, open/close, device/port/GID/P_Key queries,
// and the helper strings. Every answer about ports and GIDs comes from the FakeVerbs model.
//
// ABI gotchas encoded here:
//  * ibv_query_port is a macro over an inline that zeroes the caller's ibv_port_attr and calls
//    the exported ibv_query_port@IBVERBS_1.1 with rdma-core's private _compat_ibv_port_attr:
//    the public struct without its last field (port_cap_flags2). Writing the whole public
//    struct would overrun the caller's buffer when it really is the compat one.
//  * The three GID reads disagree on "empty", on purpose (they do on real hardware):
//    ibv_query_gid returns 0 and zeros, _ibv_query_gid_ex returns ENODATA (a positive errno),
//    _ibv_query_gid_table skips the slot and returns a count (or a negative errno).
//  * ibv_query_gid_type (IBVERBS_PRIVATE_34) reports an empty slot as "IB/RoCE v1" with
//    success, which is what rdma-core does to keep its old API behaviour.
//  * Those four answer through the C-convention core (fake_c_core.hpp) that the in-process C ABI
//    (fake_c_abi.cpp) uses too: flags, entry sizes, gid_type and errnos are decided once.
//  * The context is the tail of a struct verbs_context (abi_compat = __VERBS_ABI_IS_EXTENDED,
//    sz = its size) with every op NULL: verbs_get_ctx() works, as providers' dv calls need, and
//    the verbs.h inlines (ibv_query_device_ex, ibv_query_port) find no op and use the legacy
//    exported calls, or answer EOPNOTSUPP (ibv_create_cq_ex, ibv_create_qp_ex ...).
#include "fakelib.hpp"

#include <gidpolicy/verbs/verbs_api.hpp>

#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace gidpolicy::fakelib {
namespace {

Device* find_device(Library& lib, const ibv_device* dev) {
  for (auto& d : lib.devices)
    if (&d->dev == dev) return d.get();
  return nullptr;
}

/// Finish and write the record of a call that returned `result` (-1, a negative errno) for `err`.
void log_failure(Library& lib, nlohmann::ordered_json& r, const Device* d, long result, int err,
                 const std::string& why) {
  r["result"] = result;
  r["error"] = errno_name_for(d, err);
  if (!why.empty()) r["reason"] = why;
  lib.log.write(r);
}

/// The control log's name for an ibv_gid_entry::gid_type.
const char* abi_gid_type_name(std::uint32_t t) {
  switch (t) {
    case IBV_GID_TYPE_IB:
      return "IB";
    case IBV_GID_TYPE_ROCE_V1:
      return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2:
      return "RoCE v2";
    default:
      return "unknown";
  }
}

const char* const kWcStatus[] = {"success",
                                 "local length error",
                                 "local QP operation error",
                                 "local EE context operation error",
                                 "local protection error",
                                 "Work Request Flushed Error",
                                 "memory management operation error",
                                 "bad response error",
                                 "local access error",
                                 "remote invalid request error",
                                 "remote access error",
                                 "remote operation error",
                                 "transport retry counter exceeded",
                                 "RNR retry counter exceeded",
                                 "local RDD violation error",
                                 "remote invalid RD request",
                                 "aborted error",
                                 "invalid EE context number",
                                 "invalid EE context state",
                                 "fatal error",
                                 "response timeout error",
                                 "general error",
                                 "TM error",
                                 "TM software rendezvous"};

}  // namespace
}  // namespace gidpolicy::fakelib

using namespace gidpolicy;
using namespace gidpolicy::fakelib;

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  hang_point("ibv_get_device_list");  // GIDPOLICY_FAKE_HANG
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    if (num_devices) *num_devices = 0;
    if (!lib.configured) {
      // Like libibverbs on a machine without an RDMA kernel.
      errno = ENOSYS;
      return nullptr;
    }
    auto** list = new (std::nothrow) ibv_device*[lib.devices.size() + 1]();  // NULL-terminated
    if (!list) {
      errno = ENOMEM;
      return nullptr;
    }
    for (std::size_t i = 0; i < lib.devices.size(); ++i) list[i] = &lib.devices[i]->dev;
    if (num_devices) *num_devices = static_cast<int>(lib.devices.size());
    auto r = lib.record("get_device_list", nullptr);
    r["result"] = lib.devices.size();
    lib.log.write(r);
    return list;
  } catch (...) {
    errno = ENOMEM;
    return nullptr;
  }
}

void ibv_free_device_list(ibv_device** list) { delete[] list; }

const char* ibv_get_device_name(ibv_device* device) { return device ? device->name : nullptr; }

__be64 ibv_get_device_guid(ibv_device* device) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Device* d = find_device(lib, device);
    return d ? htobe64(d->guid) : 0;
  } catch (...) {
    return 0;
  }
}

int ibv_get_device_index(ibv_device* device) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Device* d = find_device(lib, device);
    return d ? d->index : -1;
  } catch (...) {
    return -1;
  }
}

ibv_context* ibv_open_device(ibv_device* device) {
  hang_point("ibv_open_device");  // GIDPOLICY_FAKE_HANG
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Device* d = find_device(lib, device);
    if (!d) {
      errno = ENODEV;
      return nullptr;
    }
    auto r = lib.record("open_device", d);
    auto h = lib.model.open_device(d->name);
    if (!h) {
      const int err = errno_of(h.error());
      r["result"] = err;
      r["reason"] = h.error().what();
      lib.log.write(r);
      errno = err;
      return nullptr;
    }
    auto c = std::make_unique<Context>();
    c->device = d;
    c->handle = h.value();
    if (::pipe2(c->async_pipe, O_CLOEXEC) != 0) {
      const int err = errno;
      (void)lib.model.close_device(c->handle);
      errno = err;
      return nullptr;
    }
    ibv_context& ctx = c->ctx;
    c->vctx.sz = sizeof(verbs_context);
    ctx.device = device;
    ctx.cmd_fd = -1;
    ctx.async_fd = c->async_pipe[0];
    // Events come from the model (async_events.cpp): its eventfd for this handle.
    if (auto afd = lib.model.async_event_fd(c->handle)) ctx.async_fd = afd.value();
    start_table_watch(lib);
    ctx.num_comp_vectors = 1;
    pthread_mutex_init(&ctx.mutex, nullptr);
    ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
    r["fd_limit"] = raise_descriptor_limit();
    // The data-path calls have no exported symbol: verbs.h inlines call these pointers, and
    // pingpong posts receives before RTR, so a NULL post_recv would crash before RTR.
    ctx.ops.post_send = &fakelib::post_send;
    ctx.ops.post_recv = &fakelib::post_recv;
    ctx.ops.post_srq_recv = &fakelib::post_srq_recv;
    ctx.ops.poll_cq = &fakelib::poll_cq;
    ctx.ops.req_notify_cq = &fakelib::req_notify_cq;
    if (auto p = lib.model.driver_model(d->name)) r["driver"] = p.value().name;
    r["result"] = 0;
    lib.log.write(r);
    ibv_context* out = &c->ctx;
    lib.contexts.emplace(out, std::move(c));
    return out;
  } catch (...) {
    errno = ENOMEM;
    return nullptr;
  }
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  hang_point("ibv_query_device");  // GIDPOLICY_FAKE_HANG
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Context* c = lib.context(context);
    if (!c || !attr) return EINVAL;
    const Device* d = c->device;
    // The answer is the core's (fake_c_core.hpp), from what creation enforces (limits.cpp).
    if (int err = fakes::c_core::query_device(lib.model, c->handle, device_limits(*d), d->guid,
                                              d->phys_port_cnt, attr);
        err != 0)
      return err;
    auto r = lib.record("query_device", d);
    r["max_qp"] = attr->max_qp;
    r["max_cq"] = attr->max_cq;
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  } catch (...) {
    return ENOMEM;
  }
}

#undef ibv_query_port
int ibv_query_port(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* port_attr) {
  hang_point("ibv_query_port");  // GIDPOLICY_FAKE_HANG
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Context* c = lib.context(context);
    if (!c || !port_attr) return EINVAL;
    auto r = lib.record("query_port", c->device);
    r["port"] = port_num;
    ibv_port_attr a;
    std::string why;
    if (int err = fakes::c_core::query_port(lib.model, c->handle, port_num, &a, &why); err != 0) {
      r["result"] = err;
      r["reason"] = why;
      lib.log.write(r);
      return err;
    }
    // Only the compat prefix: the caller's struct may be the one without port_cap_flags2.
    std::memcpy(static_cast<void*>(port_attr), &a, offsetof(ibv_port_attr, port_cap_flags2));
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  } catch (...) {
    return ENOMEM;
  }
}

// The GID reads: every answer is the core's (fake_c_core.hpp), shared with the in-process C ABI;
// this front only finds the context and writes the control-log record.
int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, union ibv_gid* gid) {
  hang_point("ibv_query_gid");  // GIDPOLICY_FAKE_HANG
  return fakes::c_core::minus_one_frame([&] {
    return locked_call([&](Library& lib) -> int {
      Context* c = lib.context(context);
      if (!c) return EINVAL;
      auto r = lib.record("query_gid", c->device);
      r["port"] = port_num;
      r["index"] = index;
      std::string why;
      // 0 / -1: the legacy convention; an in-range empty slot is a success with zeros.
      if (int err = fakes::c_core::query_gid(lib.model, c->handle, port_num, index, gid, &why); err != 0) {
        log_failure(lib, r, c->device, -1, err, why);
        return err;
      }
      r["gid"] = Gid::from_bytes(gid->raw).to_string();
      r["result"] = 0;
      lib.log.write(r);
      return 0;
    });
  });
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry,
                      uint32_t flags, size_t entry_size) {
  hang_point("ibv_query_gid_ex");  // GIDPOLICY_FAKE_HANG
  return locked_call([&](Library& lib) -> int {
    Context* c = lib.context(context);
    if (!c) return EINVAL;
    auto r = lib.record("query_gid_ex", c->device);
    r["port"] = port_num;
    r["index"] = gid_index;
    std::string why;
    const int err = fakes::c_core::query_gid_ex(lib.model, c->handle, port_num, gid_index, entry, flags,
                                                entry_size, &why);
    if (err != 0) {
      fail_record(lib, r, c->device, err, why);  // ENODATA for an empty slot
      return err;
    }
    r["gid"] = Gid::from_bytes(entry->gid.raw).to_string();
    r["gid_type"] = abi_gid_type_name(entry->gid_type);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                             size_t entry_size) {
  hang_point("ibv_query_gid_table");  // GIDPOLICY_FAKE_HANG
  return fakes::c_core::count_frame([&]() -> ssize_t {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Context* c = lib.context(context);
    if (!c) return -EINVAL;
    auto r = lib.record("query_gid_table", c->device);
    r["max_entries"] = max_entries;
    std::string why;
    const ssize_t n =
        fakes::c_core::query_gid_table(lib.model, c->handle, entries, max_entries, flags, entry_size, &why);
    if (n < 0) {
      log_failure(lib, r, c->device, n, static_cast<int>(-n), why);  // EINVAL: the buffer is too small
      return n;
    }
    r["result"] = n;
    lib.log.write(r);
    return n;
  });
}

int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index, int* type) {
  hang_point("ibv_query_gid_type");  // GIDPOLICY_FAKE_HANG
  return fakes::c_core::minus_one_frame([&] {
    return locked_call([&](Library& lib) -> int {
      Context* c = lib.context(context);
      if (!c) return EINVAL;
      auto r = lib.record("query_gid_type", c->device);
      r["port"] = port_num;
      r["index"] = index;
      std::string why;
      if (int err = fakes::c_core::query_gid_type(lib.model, c->handle, port_num, index, type, &why);
          err != 0) {
        log_failure(lib, r, c->device, -1, err, why);
        return err;
      }
      r["result"] = 0;
      r["type"] = *type == kGidTypeSysfsRoceV2 ? "RoCE v2" : "IB/RoCE v1";
      lib.log.write(r);
      return 0;
    });
  });
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Context* c = lib.context(context);
    if (!c || !pkey) return EINVAL;
    auto r = lib.record("query_pkey", c->device);
    r["port"] = port_num;
    r["index"] = index;
    if (!lib.model.port_attributes(c->handle, port_num) || index != 0) {
      r["result"] = -1;
      lib.log.write(r);
      return -1;
    }
    *pkey = htobe16(0xffff);  // the one default partition, pkey_tbl_len 1
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  } catch (...) {
    return ENOMEM;
  }
}

// Real semantics, real files: reads <dir>/<file>, strips one trailing newline, -1 on failure or
// when the contents do not fit with their terminator.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  if (!dir || !file || !buf || size == 0) return -1;
  char path[4096];
  const int n = std::snprintf(path, sizeof path, "%s/%s", dir, file);
  if (n < 0 || static_cast<std::size_t>(n) >= sizeof path) return -1;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t len = ::read(fd, buf, size);
  ::close(fd);
  if (len < 0) return -1;
  auto ulen = static_cast<std::size_t>(len);
  if (ulen > 0 && buf[ulen - 1] == '\n') {
    buf[--ulen] = '\0';
  } else if (ulen < size) {
    buf[ulen] = '\0';
  } else {
    return -1;
  }
  return static_cast<int>(ulen);
}

int ibv_fork_init(void) { return 0; }  // nothing is pinned: fork is always safe

enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

// ibv_get_async_event and ibv_ack_async_event: async_events.cpp.

const char* ibv_wc_status_str(enum ibv_wc_status status) {
  const auto i = static_cast<std::size_t>(status);
  return i < std::size(kWcStatus) ? kWcStatus[i] : "unknown";
}

const char* ibv_node_type_str(enum ibv_node_type node_type) {
  switch (node_type) {
    case IBV_NODE_CA:
      return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
      return "InfiniBand switch";
    case IBV_NODE_ROUTER:
      return "InfiniBand router";
    case IBV_NODE_RNIC:
      return "iWARP NIC";
    case IBV_NODE_USNIC:
      return "usNIC";
    case IBV_NODE_USNIC_UDP:
      return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
      return "unspecified";
    default:
      return "unknown";
  }
}

const char* ibv_port_state_str(enum ibv_port_state port_state) {
  switch (port_state) {
    case IBV_PORT_NOP:
      return "PORT_NOP";
    case IBV_PORT_DOWN:
      return "PORT_DOWN";
    case IBV_PORT_INIT:
      return "PORT_INIT";
    case IBV_PORT_ARMED:
      return "PORT_ARMED";
    case IBV_PORT_ACTIVE:
      return "PORT_ACTIVE";
    case IBV_PORT_ACTIVE_DEFER:
      return "PORT_ACTIVE_DEFER";
    default:
      return "unknown";
  }
}

const char* ibv_event_type_str(enum ibv_event_type event) {
  switch (event) {
    case IBV_EVENT_CQ_ERR:
      return "CQ error";
    case IBV_EVENT_QP_FATAL:
      return "local work queue catastrophic error";
    case IBV_EVENT_QP_REQ_ERR:
      return "invalid request local work queue error";
    case IBV_EVENT_QP_ACCESS_ERR:
      return "local access violation work queue error";
    case IBV_EVENT_COMM_EST:
      return "communication established";
    case IBV_EVENT_SQ_DRAINED:
      return "send queue drained";
    case IBV_EVENT_PATH_MIG:
      return "path migrated";
    case IBV_EVENT_PATH_MIG_ERR:
      return "path migration request error";
    case IBV_EVENT_DEVICE_FATAL:
      return "local catastrophic error";
    case IBV_EVENT_PORT_ACTIVE:
      return "port active";
    case IBV_EVENT_PORT_ERR:
      return "port error";
    case IBV_EVENT_LID_CHANGE:
      return "LID change";
    case IBV_EVENT_PKEY_CHANGE:
      return "P_Key change";
    case IBV_EVENT_SM_CHANGE:
      return "SM change";
    case IBV_EVENT_SRQ_ERR:
      return "SRQ catastrophic error";
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return "SRQ limit reached";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return "last WQE reached";
    case IBV_EVENT_CLIENT_REREGISTER:
      return "client reregistration";
    case IBV_EVENT_GID_CHANGE:
      return "GID table change";
    case IBV_EVENT_WQ_FATAL:
      return "WQ fatal";
    default:
      return "unknown";
  }
}

}  // extern "C"
