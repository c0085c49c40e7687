// `gidpolicy fleet`: which links of a cluster connect, from one `show --json` snapshot per host
// (docs/cli.md, docs/fleet.md). Declared apart from the other subcommands (commands.hpp): main.cpp
// only registers it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::cli {

struct FleetArgs {
  std::vector<std::string> hosts;  ///< FILE, HOST=FILE or DIR
  std::string topology = "mesh";   ///< mesh, ring, rail, jaccl
  std::string device;              ///< mesh/ring device ("" = each host's first port)
  std::uint32_t port = 1;
  std::vector<std::string> rails;
  std::optional<std::string> jaccl_devices;  ///< else the jaccl row's device-file variables
  bool jaccl_ring = false;                   ///< else JACCL's ring variables (stack_vars)
  std::string profile = "auto";
  /// --stack STACK[:options]: every host runs that stack's own choice (a stack profile spec);
  /// the report then names, per host, where that choice is not the entry to use.
  std::optional<std::string> stack;
  /// --env-dir DIR: one dotenv file per host with the stack's settings (env_cmd.hpp).
  std::optional<std::string> env_dir;
  /// With --stack: the launch's settings, as for `check --stacks` (env_file.hpp read_launch_settings).
  std::optional<std::string> env_file;
  bool no_env = false;           ///< --no-env: the environment's settings are not read
  bool replace_env_dir = false;  ///< --replace: a non-empty --env-dir is replaced whole
  std::optional<std::string> platform;
  bool json = false;
  bool all_links = false;
  std::size_t limit = 20;
  std::optional<std::string> svg;
  std::optional<std::string> output;
  unsigned threads = 2;
};

/// Registers `fleet` on `app`; run() after parsing when parsed() says it was chosen.
class FleetCommand {
 public:
  explicit FleetCommand(CLI::App& app);
  [[nodiscard]] bool parsed() const { return cmd_->parsed(); }
  [[nodiscard]] int run() const;

 private:
  CLI::App* cmd_ = nullptr;
  CLI::Option* ring_flag_ = nullptr;
  FleetArgs o_;
};

int run_fleet(const FleetArgs& o);

}  // namespace gidpolicy::cli
