// `gidpolicy env`: the settings that make each stack use the GID a profile picks (docs/cli.md).
// The computation is apart from the printing so `fleet --env-dir` writes the same settings per
// host.
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/profiles.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::cli {

/// The names `--for` takes, for messages.
inline constexpr std::string_view kEnvStacks =
    "nccl, nvshmem, ucx, mooncake, libfabric, perftest, ds4, llama.cpp, jaccl";

struct EnvSetting {
  std::string name;
  std::string value;
};

/// What `env` prints for one host.
struct EnvPlan {
  std::vector<EnvSetting> settings;    ///< variables, in --for order
  std::vector<std::string> args;       ///< command-line settings: "perftest: -d mlx5_0 -i 1 -x 7"
  std::vector<std::string> why;        ///< one line each: why a setting is needed or only pins
  std::vector<std::string> conflicts;  ///< non-empty: no one value is right (exit 1), said why
};

/// The stacks of a --for list ("nccl,ucx"), checked: errc::invalid_argument naming an unknown one.
result<std::vector<std::string>> parse_env_stacks(const std::vector<std::string>& items);

/// The settings for `stacks` on a host whose ports are `tables`, from `profile`'s picks.
EnvPlan plan_env(const std::vector<std::string>& stacks, const std::vector<GidTable>& tables,
                 const Profile& profile);

/// `plan` as a dotenv file ("NAME=VALUE" lines, "# " comments), or nullopt-like error when a
/// value cannot be written in that form (a newline or quote in a device name).
result<std::string> render_dotenv(const EnvPlan& plan);

}  // namespace gidpolicy::cli
