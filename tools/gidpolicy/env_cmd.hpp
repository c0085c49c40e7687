// `gidpolicy env`: the settings that make each stack use the GID a profile picks (docs/cli.md).
// The computation is the library's (env.hpp), so `fleet --env-dir` and the Python module give the
// same settings per host.
#pragma once

#include <gidpolicy/env.hpp>

namespace gidpolicy::cli {

// The computation lives in the library (env.hpp); the CLI's names for it.
using gidpolicy::EnvPlan;
using gidpolicy::EnvSetting;
using gidpolicy::JacclRow;
using gidpolicy::parse_env_stacks;
using gidpolicy::plan_env;
using gidpolicy::render_dotenv;

}  // namespace gidpolicy::cli
