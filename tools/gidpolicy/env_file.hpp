// The pins a launcher writes down: a dotenv file (`KEY=VALUE` lines, as docker compose reads an
// `env_file:` or `--env-file`) or the `environment:` blocks of a docker-compose file, read for
// `gidpolicy check --pins --env-file FILE`.
//
// Bounded on purpose (an env file is user input): a regular file only (a FIFO or a device is
// refused before any read: a stream read would wait for a writer), at most kMaxEnvFileBytes,
// kMaxEnvLines lines and kMaxEnvVars variables, values of at most kMaxEnvValueBytes once
// interpolated (kMaxEnvValuesBytes in all); every error names the file, the line and what
// was expected there, and quotes the file's text escaped (show_text(), never raw bytes).
//
// dotenv, as compose reads it (compose-go's parser): an unquoted value ends at " #" (a space,
// then '#': `A=1 # c` is "1", `A=1#2` is "1#2") and loses its trailing white space; a quoted
// value keeps its '#' (`A="1 # c"` is "1 # c"); '...' is literal (\' keeps a quote), "..."
// takes \" and \\. Unquoted and double-quoted values are interpolated as below, looking a name
// up in the environment first, then among the file's earlier variables. The gotcha: `docker run
// --env-file` reads none of this (it takes the rest of the line as it is), so a file written for
// it with quotes or comments means something else there.
//
// The compose subset read: `services:` at the top level, each service's `environment:` as a
// block list (`- KEY=VALUE`, `- KEY`) or a block map (`KEY: VALUE`, `KEY:`), values plain or
// quoted ('...', "..." with \" and \\). `${NAME}`, `${NAME:-default}`, `${NAME-default}` and
// `$NAME` are interpolated from the environment as compose does: an unset NAME becomes "" (the
// way an unset variable turns into an empty pin), `$$` is a literal `$`, a default is
// interpolated in turn (`${A:-${B:-3}}`, at most 16 levels deep). `- KEY` and `KEY:` take
// KEY from the environment, and are left out when it is unset. Refused, with file:line: flow
// collections (`environment: [..]` / `{..}`), anchors, aliases, tags, block scalars (`|`, `>`),
// tabs in indentation, `${NAME?err}` / `${NAME:?err}` / `${NAME:+alt}`, and nesting deeper than
// 64 levels. The rest of a compose file is skipped unread.
//
// Example:
//   auto vars = read_env_file("pins.env", [](const std::string&) { return std::nullopt; });
//   if (vars) for (const EnvAssignment& a : vars.value()) std::cout << a.name << "=" << a.value << "\n";
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/stacks.hpp>

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
/// A value once interpolated (a reference copies a whole variable: `B=$A$A$A` grows).
inline constexpr std::size_t kMaxEnvValueBytes = std::size_t{64} << 10;
/// All the values of one file once interpolated.
inline constexpr std::size_t kMaxEnvValuesBytes = std::size_t{4} << 20;

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

/// The stacks' launch settings (launch_variables(), stacks.hpp) that `check --stacks`, `check
/// --pins`'s redundancy test and `env --for` predict with: the environment's ("the environment")
/// unless `use_env` is false (--no-env), then `env_file`'s (read as above, one entry per line, a
/// later line of a name winning), which follow and so win over the environment's: the file is what
/// the launcher hands the stack. With `use_env` false the file's `${NAME}` references see no
/// environment either (an unset NAME is "", as compose reads it).
result<std::vector<LaunchSetting>> read_launch_settings(bool use_env,
                                                        const std::optional<std::string>& env_file);

}  // namespace gidpolicy::cli
