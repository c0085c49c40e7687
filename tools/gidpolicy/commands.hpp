// The subcommands of `gidpolicy`. Each returns the process exit code:
//   0 success; 1 a selection failed, a profile disagrees (check) or a pair does not connect
//   (simulate); 2 bad usage, unreadable input or output that could not be written (one line on
//   stderr says what to do).
#pragma once

#include "sources.hpp"

#include <gidpolicy/error.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/stacks.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFinding = 1;
inline constexpr int kExitUsage = 2;

/// Print "gidpolicy: <what>" (plus a hint for the usual mistakes) to stderr; returns kExitUsage.
int usage_error(const Error& e);
int usage_error(const std::string& message);

struct ShowArgs {
  SourceArgs source;
  bool json = false;
  /// --json's "host": this name, else the machine's for live devices, else null.
  std::optional<std::string> host;
};
int run_show(const ShowArgs& o);

struct SelectArgs {
  SourceArgs source;
  std::string profile = "auto";  ///< --profile (or its old name --policy)
  /// --peer ADDR[%NETDEV]: route to it (rtnetlink) and choose as rdma_cm does (auto:peer=ADDR).
  std::optional<std::string> peer;
  bool explain = false;
  bool json = false;
};
int run_select(const SelectArgs& o);

struct CheckArgs {
  SourceArgs source;
  std::optional<std::string> platform;  ///< "linux" or "darwin": overrides the link-layer guess
  std::vector<std::string> profiles;    ///< empty: every named profile
  bool json = false;
  bool stacks = false;                  ///< --stacks: every stack's own choice per port
  bool pins = false;                    ///< --pins: judge the pinned GID indices
  std::optional<std::string> env_file;  ///< --env-file FILE (with --stacks or --pins): dotenv or compose
  bool no_env = false;                  ///< --no-env: the environment's settings are not read
};
int run_check(const CheckArgs& o);
/// `check --stacks` (stacks_cmd.cpp).
int run_check_stacks(const CheckArgs& o);
/// Every stack's launch settings read as it reads them (read_launch()), in table order (stacks_cmd.cpp).
std::vector<StackLaunch> read_launches(const std::vector<LaunchSetting>& settings);
/// `check --pins` (stacks_cmd.cpp).
int run_check_pins(const CheckArgs& o);

struct EnvArgs {
  SourceArgs source;
  std::vector<std::string> stacks;  ///< --for, split on ','
  std::string profile = "auto";
  std::string format = "sh";  ///< sh, dotenv, json
  /// jaccl: the device file (default: the jaccl row's two device-file variables) and this host's
  /// rank in it (default: JACCL's rank variables); --jaccl-ring as JACCL's ring variables
  /// (stack_table.hpp, stack_vars).
  std::optional<std::string> jaccl_devices;
  std::optional<std::string> rank;
  bool jaccl_ring = false;
  std::optional<std::string> env_file;  ///< --env-file FILE: the launch's other settings
  bool no_env = false;                  ///< --no-env: the environment's settings are not read
  bool pin = false;  ///< --pin: print a pin even where the stack's own choice is already right
};
/// `gidpolicy env` (env_cmd.cpp).
int run_env(const EnvArgs& o);

struct ExplainArgs {
  std::string err;  ///< "22", "EINVAL", or an error line ("[jaccl] Couldn't connect (error: 60)")
  std::optional<std::string> side;  ///< --side rtr|socket
  SourceArgs source;
  bool has_source = false;  ///< a table source was given (explain-errno never probes devices on its own)
  std::optional<std::string> platform;
  std::optional<std::uint32_t> sgid_index;
  std::optional<std::string> advertised;
  std::optional<std::string> peer;
};
int run_explain(const ExplainArgs& o);

struct ConvertArgs {
  SourceArgs source;
  std::string to;                     ///< json, devinfo, show_gids, sysfs
  std::optional<std::string> output;  ///< a file (a directory for sysfs); stdout otherwise
  bool replace = false;               ///< --replace: a non-empty sysfs --output is replaced whole
  std::uint64_t max_files = formats::SysfsWriteOptions{}.max_files;  ///< --max-files (sysfs)
  std::uint64_t max_bytes = formats::SysfsWriteOptions{}.max_bytes;  ///< --max-bytes (sysfs)
};
int run_convert(const ConvertArgs& o);

struct SimulateArgs {
  std::string topology = "mesh";
  std::string profile = "auto";
  std::optional<std::string> platform;
  bool preflight = false;
  std::vector<std::string> tables;  ///< FILE or FILE:DEVICE[:PORT], one host each
};
int run_simulate(const SimulateArgs& o);

struct WatchArgs {
  std::optional<std::string> device;  ///< empty: every device
  std::optional<std::uint32_t> port;  ///< empty: every port of each device
  std::string verbs = "dlopen";
  std::string profile = "auto";  ///< --profile (or its old name --policy)
  bool json = false;
  bool stacks = false;                  ///< --stacks: what each stack does on each change
  std::optional<std::string> env_file;  ///< with --stacks: the launch's settings
  bool no_env = false;                  ///< with --stacks: do not read the environment's
};
/// Follow GID table changes until SIGINT/SIGTERM: one line (or JSON object) per change.
int run_watch(const WatchArgs& o);

}  // namespace gidpolicy::cli
