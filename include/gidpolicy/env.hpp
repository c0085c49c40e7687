// The settings that make each RDMA stack use the GID a profile picks, as data: what
// `gidpolicy env` prints and `gidpolicy fleet --env-dir` writes per host, and what the Python
// module returns.
//
// The gotcha it carries: most stacks take one GID index per process for every HCA they use
// (NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX, ...). On a host whose HCAs need different indices no one
// value is right, and a value that is wrong on one HCA fails there a minute into the run; such a
// stack gets no value, and EnvPlan::conflicts says why and how to run one process per HCA.
//
// Example:
//   auto stacks = gidpolicy::parse_env_stacks({"nccl", "ucx"}).value();
//   const gidpolicy::EnvPlan plan = gidpolicy::plan_env(stacks, tables, gidpolicy::profiles::automatic());
//   for (const auto& s : plan.settings) std::cout << s.name << "=" << s.value << "\n";
//   auto dotenv = gidpolicy::render_dotenv(plan);   // "NCCL_IB_GID_INDEX=3\n..."
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/stacks.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

/// One variable to set.
struct EnvSetting {
  std::string name;
  std::string value;
  friend bool operator==(const EnvSetting&, const EnvSetting&) = default;
};

/// What one host needs for the stacks asked for.
struct EnvPlan {
  std::vector<EnvSetting> settings;    ///< variables, in the order the stacks were asked for
  std::vector<std::string> args;       ///< command-line settings: "perftest: -d mlx5_0 -i 1 -x 7"
  std::vector<std::string> why;        ///< one line each: why a setting is needed or only pins
  std::vector<std::string> conflicts;  ///< non-empty: no one value is right, each says why
};

/// The stacks of a list ("nccl", "ucx"), checked and without repeats: errc::invalid_argument
/// naming an unknown one (the message says "--for", the option the CLI reads them from). Every
/// row of the stack table (stack_table.hpp; stack_names(StackSet::all)) is a stack here.
result<std::vector<std::string>> parse_env_stacks(const std::vector<std::string>& items);

/// What `jaccl` needs beyond the host's tables: JACCL's device file and this host's rank in it.
/// Only this host's row is held (fleet::read_jaccl_row), not the file's matrix.
struct JacclRow {
  std::string path;                  ///< the file, as MLX_IBV_DEVICES is to name it (absolute)
  std::size_t ranks = 0;             ///< the file's rank count
  std::size_t rank = 0;              ///< this host's row
  bool ring = false;                 ///< JACCL's layout (JacclDeviceRow::uses_ring)
  std::vector<std::string> devices;  ///< what this rank opens under that layout (JacclDeviceRow::devices)
};

/// The settings for `stacks` (as parse_env_stacks() returns them) on a host whose ports are
/// `tables`, from `profile`'s picks, in the shape of each stack's row (StackInfo::env: a
/// per-process variable, per-port arguments, one device per process, or JACCL's device file). A port on which
/// the profile finds nothing is left out (said in `why`); no port at all is a conflict. For jaccl, `jaccl`
/// (when given) is checked: MLX_IBV_DEVICES is set only when every device of this host's row is here (port 1,
/// the one JACCL opens) and the profile picks, and routes from, a GID on it; otherwise a conflict.
EnvPlan plan_env(const std::vector<std::string>& stacks, const std::vector<GidTable>& tables,
                 const Profile& profile, const std::optional<JacclRow>& jaccl = std::nullopt);

/// What plan_env() is told about the launch beyond the stacks and tables.
struct EnvOptions {
  /// The launch's settings (the environment's, an env file's): each stack's device list leaves
  /// out the ports it does not open, and its other settings decide its own choice (read_launch()).
  std::vector<LaunchSetting> settings;
  /// Pin a stack's index even where its own choice, under `settings` without its pins, is already
  /// the profile's pick on every port it uses. false (`env --for` without --pin): no pin then,
  /// and `why` says so; the gotcha is a pin that outlives the table it was right for.
  bool pin = false;
};

/// plan_env() under `options`: the four-argument form is this one with no settings and `pin` true.
/// Example:
///   gidpolicy::EnvOptions o;
///   o.settings = {{"NCCL_IB_HCA", "mlx5_1", "the environment"}};
///   auto plan = gidpolicy::plan_env({"nccl"}, tables, gidpolicy::profiles::automatic(), std::nullopt, o);
EnvPlan plan_env(const std::vector<std::string>& stacks, const std::vector<GidTable>& tables,
                 const Profile& profile, const std::optional<JacclRow>& jaccl, const EnvOptions& options);

/// `plan` as a dotenv file ("NAME=VALUE" lines, "# " comments, one line each whatever the
/// tables held). errc::invalid_argument when a value cannot be written in that form (a quote,
/// space or control byte in a device name).
result<std::string> render_dotenv(const EnvPlan& plan);

}  // namespace gidpolicy
