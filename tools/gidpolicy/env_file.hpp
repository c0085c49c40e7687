// The pins a launcher writes down: a dotenv file (`KEY=VALUE` lines, as `docker run --env-file`
// and `env_file:` read them) or the `environment:` blocks of a docker-compose file, read for
// `gidpolicy check --pins --env-file FILE`.
//
// Bounded on purpose (an env file is user input): at most kMaxEnvFileBytes, kMaxEnvLines lines
// and kMaxEnvVars variables; every error names the file, the line and what was expected there.
//
// The compose subset read: `services:` at the top level, each service's `environment:` as a
// block list (`- KEY=VALUE`, `- KEY`) or a block map (`KEY: VALUE`, `KEY:`), values plain or
// quoted ('...', "..." with \" and \\). `${NAME}`, `${NAME:-default}`, `${NAME-default}` and
// `$NAME` are interpolated from the environment as compose does: an unset NAME becomes "" (the
// way an unset variable turns into an empty pin), `$$` is a literal `$`. `- KEY` and `KEY:` take
// KEY from the environment, and are left out when it is unset. Refused, with file:line: flow
// collections (`environment: [..]` / `{..}`), anchors, aliases, tags, block scalars (`|`, `>`),
// tabs in indentation, `${NAME?err}` / `${NAME:?err}`, and nesting deeper than 64 levels. The
// rest of a compose file is skipped unread.
#pragma once

#include <gidpolicy/error.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::cli {

inline constexpr std::size_t kMaxEnvFileBytes = std::size_t{1} << 20;
inline constexpr std::size_t kMaxEnvLines = 100'000;
inline constexpr std::size_t kMaxEnvVars = 10'000;

/// One variable a file sets, and where.
struct EnvAssignment {
  std::string name;
  std::string value;
  std::string origin;  ///< "FILE:LINE" or "FILE:LINE (service NAME)"
};

/// The environment interpolation reads (getenv in the CLI; a map in tests).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

/// Parse `text` (from `file`) as a compose file when it has a top-level `services:` key or the
/// name ends in .yml/.yaml, else as dotenv. Every assignment, in file order.
result<std::vector<EnvAssignment>> parse_env_file(std::string_view text, const std::string& file,
                                                  const EnvLookup& env);
/// Read `path` (at most kMaxEnvFileBytes) and parse it.
result<std::vector<EnvAssignment>> read_env_file(const std::string& path, const EnvLookup& env);

}  // namespace gidpolicy::cli
