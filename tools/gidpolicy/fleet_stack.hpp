// `gidpolicy fleet --stack STACK`: per host, whether the stack's own choice (or its pin) is the
// entry gidpolicy's auto picks there, for the text report, the --json document and --env-dir.
// One judgment (judge_stack_hosts) feeds all three, so the text and the JSON name the same hosts.
#pragma once

#include "fleet_cmd.hpp"
#include "output.hpp"

#include <gidpolicy/fleet.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/stack_table.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::cli {

/// One port of a host under the stack's choice.
struct StackPort {
  std::string device;
  std::uint32_t port = 0;
  std::optional<std::uint32_t> index;       ///< the stack's pick; nullopt: it picks none
  bool works = false;                       ///< its RTR is predicted to work
  std::string outcome;                      ///< "ok", "ENODATA (61): ...", "rejects the port", ...
  std::optional<std::uint32_t> auto_index;  ///< the sgid_index auto picks; nullopt: auto finds none
  bool right = false;                       ///< works, and is auto's entry
};

/// One host: right when every one of its ports is.
struct StackHost {
  std::string host;
  bool right = true;
  std::vector<StackPort> ports;
};

/// Every host of the analysis, in its order, judged under `profile` (the stack's spec). With
/// `stack` (its row, and the spec's options after ':' in `options`), a port the stack does not
/// run on is "not run here" and right, and a port where the stack takes another path (ds4's Linux
/// RoCE path) is judged under that path's spec with the same options.
/// With `launch` (the stack's launch settings), a port its device list leaves out is "not used"
/// and right: the stack never opens it.
std::vector<StackHost> judge_stack_hosts(const fleet::Analysis& a, const Profile& profile, const FleetArgs& o,
                                         const StackInfo* stack = nullptr, std::string_view options = {},
                                         const StackLaunch* launch = nullptr);

/// The spec options that `launch`'s settings give the stack's profile (",family=AF_INET6,gid_index=3"
/// for NCCL; the pin's option for UCX, Mooncake, libfabric), "" when none.
std::string launch_spec_options(const StackLaunch& launch);

/// The text after the link report: how many hosts are right, and each wrong one with its ports
/// (at most --limit of them). True when any host is wrong.
bool print_stack_hosts(const std::vector<StackHost>& hosts, const Profile& profile, const FleetArgs& o,
                       Output& out);

/// The --json document's "stack" object (docs/cli.md, `fleet --json`), every host listed.
std::string stack_json(const std::vector<StackHost>& hosts, const Profile& profile,
                       const StackLaunch* launch = nullptr);

/// --env-dir: HOST.env per host, into `tree` (staged: the caller commits it once everything else
/// succeeded). A host name that cannot be a file name ("../x", "/abs", "a/b", "..") is refused
/// naming the host. `conflict` is set when a host's ports need different indices (its file holds
/// no value).
result<void> write_env_dir(const fleet::Analysis& a, const std::string& stack, StagedTree& tree,
                           bool& conflict);

}  // namespace gidpolicy::cli
