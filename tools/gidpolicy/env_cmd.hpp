// `gidpolicy env`: the settings that make each stack use the GID a profile picks (docs/cli.md).
// The computation is the library's (env.hpp), so `fleet --env-dir` and the Python module give the
// same settings per host.
#pragma once

#include <gidpolicy/env.hpp>
#include <gidpolicy/error.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace gidpolicy::cli {

// The computation lives in the library (env.hpp); the CLI's names for it.
using gidpolicy::EnvPlan;
using gidpolicy::EnvSetting;
using gidpolicy::JacclRow;
using gidpolicy::parse_env_stacks;
using gidpolicy::plan_env;
using gidpolicy::render_dotenv;

/// This host's rank as it was given, before it is read: --rank's text, else JACCL's rank variable,
/// else MLX's (stack_vars::kJacclRank, kMlxRank: JACCL reads its own name first; mlx.launch sets
/// both). `from` names which.
struct RankText {
  std::string text;
  std::string from;  ///< "--rank" or the variable's name
};
/// The rank `env` and `doctor` both take: `option` when given, else the variables; nullopt when
/// none is set (a variable set to "" counts as set, and is then refused by rank_in()).
std::optional<RankText> rank_text(const std::optional<std::string>& option);
/// `r` read by fleet::parse_rank (digits only: " 1" and "+1" are refused by every command) and
/// checked against `ranks`; the error names where it came from and `file` (the variable ' 1':
/// expected a rank 0..3 of devices.json).
result<std::size_t> rank_in(const RankText& r, std::size_t ranks, const std::string& file);

}  // namespace gidpolicy::cli
