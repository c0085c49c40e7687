// What the public headers' `Example:` blocks (the library's and the fakes') are given: the things their prose
// talks about
// (`table`, `plan`, `peer`, `api`, ...), as a function body would have them. Each example is
// compiled as the body of a function returning gidpolicy::result<void> (so `return x.error();`
// works) that starts with EXAMPLE_CONTEXT; an example may declare its own of the same name.
// The examples write gidpolicy's names qualified or not, as a file with
// `using namespace gidpolicy;` would.
#pragma once

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/gidpolicy.hpp>
#include <gidpolicy/live.hpp>
#include <gidpolicy/names.hpp>

#include <infiniband/verbs.h>
#include <poll.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

using namespace gidpolicy;         // NOLINT(google-build-using-namespace)
using namespace gidpolicy::verbs;  // NOLINT(google-build-using-namespace)

namespace example {

/// A program's own struct of verbs entry points (ds4's `api`, JACCL's IBVWrapper): what
/// functions_from() reads by name.
struct IbvWrapper {
  ibv_device** (*get_device_list)(int*) = nullptr;
  void (*free_device_list)(ibv_device**) = nullptr;
  ibv_context* (*open_device)(ibv_device*) = nullptr;
  int (*close_device)(ibv_context*) = nullptr;
  const char* (*get_device_name)(ibv_device*) = nullptr;
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*) = nullptr;
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*) = nullptr;
};

struct Context {
  GidTable& table;
  std::vector<GidTable>& tables;
  GidTable& before;
  GidTable& after;
  Gid& gid;
  Gid& advertised_gid;
  Gid& peer_gid;
  Gid& control_addr;
  PeerInfo& peer;
  Profile& profile;
  Plan& plan;
  Selection& selection;
  AnyPolicy& policy;
  Trace& trace;
  GidChange& change;
  ibv_qp* qp;
  ibv_context* ctx;
  VerbsApi& api;
  DeviceHandle dev;
  GidWatcher& watcher;
  IbvWrapper& wrapper;
  std::string_view text;
  std::string file;
  std::string path;  ///< a table file (the fakes' load_file)
  std::string host;
  RtrAttributes& rtr;
  int err;
};

void send_to_peer(const Gid& gid);

}  // namespace example

using example::send_to_peer;

#define EXAMPLE_CONTEXT(x)                                    \
  [[maybe_unused]] auto& table = (x).table;                   \
  [[maybe_unused]] auto& tables = (x).tables;                 \
  [[maybe_unused]] auto& before = (x).before;                 \
  [[maybe_unused]] auto& after = (x).after;                   \
  [[maybe_unused]] auto& gid = (x).gid;                       \
  [[maybe_unused]] auto& advertised_gid = (x).advertised_gid; \
  [[maybe_unused]] auto& peer_gid = (x).peer_gid;             \
  [[maybe_unused]] auto& control_addr = (x).control_addr;     \
  [[maybe_unused]] auto& peer = (x).peer;                     \
  [[maybe_unused]] auto& profile = (x).profile;               \
  [[maybe_unused]] auto& plan = (x).plan;                     \
  [[maybe_unused]] auto& selection = (x).selection;           \
  [[maybe_unused]] auto& policy = (x).policy;                 \
  [[maybe_unused]] auto& trace = (x).trace;                   \
  [[maybe_unused]] auto& change = (x).change;                 \
  [[maybe_unused]] auto* qp = (x).qp;                         \
  [[maybe_unused]] auto* ctx = (x).ctx;                       \
  [[maybe_unused]] auto& api = (x).api;                       \
  [[maybe_unused]] auto dev = (x).dev;                        \
  [[maybe_unused]] auto& watcher = (x).watcher;               \
  [[maybe_unused]] auto& wrapper = (x).wrapper;               \
  [[maybe_unused]] auto& my_ibv_wrapper = (x).wrapper;        \
  [[maybe_unused]] auto& ds4_api = (x).wrapper;               \
  [[maybe_unused]] auto text = (x).text;                      \
  [[maybe_unused]] const auto& file = (x).file;               \
  [[maybe_unused]] const auto& path = (x).path;               \
  [[maybe_unused]] auto& rtr = (x).rtr;                       \
  [[maybe_unused]] const auto& host = (x).host;               \
  [[maybe_unused]] auto err = (x).err
