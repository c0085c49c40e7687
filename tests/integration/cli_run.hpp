// Running the gidpolicy binary from a test: arguments, optional stdin, captured stdout/stderr,
// exit code and wall time.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::test {

struct CliResult {
  int exit_code = -1;  ///< the exit status, or 128 + signal when killed
  std::string out, err;
  double millis = 0;  ///< wall time of the whole process
  double cpu_millis =
      0;  ///< user + system CPU time of the process (what load on the machine does not inflate)
  /// stderr split into lines (without the trailing newline).
  [[nodiscard]] std::vector<std::string> err_lines() const;
};

/// The binary under test: $GIDPOLICY_CLI when set (the installed one), else the build's.
std::filesystem::path cli_path();

/// Run `gidpolicy args...`, stdin from `stdin_file` (else /dev/null).
CliResult run_cli(const std::vector<std::string>& args,
                  const std::optional<std::filesystem::path>& stdin_file = std::nullopt);

/// Run any program with extra "NAME=value" environment entries (added to this process's).
/// `stdout_file`: the program's stdout is this file, opened for writing as a shell's `>` would
/// (/dev/full for a full disk); CliResult::out is then empty.
CliResult run_program(const std::filesystem::path& exe, const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env = {},
                      const std::optional<std::filesystem::path>& stdin_file = std::nullopt,
                      const std::optional<std::filesystem::path>& stdout_file = std::nullopt);

}  // namespace gidpolicy::test
