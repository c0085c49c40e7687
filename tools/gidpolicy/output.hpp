// Everything `gidpolicy` writes goes through here: stdout, `--output`, `fleet --svg` and the
// `convert --to sysfs` tree. The rule (docs/cli.md, "Output"):
//   - a regular file, or a name that does not exist yet, is written atomically: a temporary file
//     created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, unpredictable name) in the target's own
//     directory, synced, then renamed over the target; a reader sees the old file or the new one;
//   - a symbolic link is not replaced: the file it leads to is what gets written (a dangling
//     link's target is created when its directory exists);
//   - a character or block device is written in place, a FIFO too when something reads it (a
//     FIFO nobody reads is refused at once rather than waited on); a socket or a directory is
//     refused; none of them is ever replaced;
//   - every write, sync and close is checked, stdout's included, and a failure is one line
//     "gidpolicy: output error: WHERE: WHY" and exit 2, with nothing left at a file target.
#pragma once

#include <gidpolicy/error.hpp>

#include <fmt/core.h>

#include <sys/types.h>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy::cli {

/// One output: stdout or a file target, written as the rule above says. Writes are buffered
/// here; the first failure is kept and later writes are dropped, so a command can write
/// everything and ask once, at commit(), whether it all got out.
class Output {
 public:
  /// The process's stdout (fd 1). Every command prints through standard_output().
  static Output standard();
  /// `path` as `option` names it ("--output", "--svg"); absent or "-" means stdout. A target
  /// that cannot be written (a directory, a FIFO without a reader, a missing directory) is
  /// refused here, before any work: error() says why.
  static Output open(const std::optional<std::string>& path, std::string_view option);

  Output(Output&& o) noexcept;
  Output& operator=(Output&& o) noexcept;
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  /// Not committed: a temporary file is removed, the target stays as it was.
  ~Output();

  void write(std::string_view s);
  template <typename... A>
  void print(fmt::format_string<A...> f, A&&... args) {
    write(fmt::format(f, std::forward<A>(args)...));
  }
  /// Push what is buffered out now (`watch` prints a line at a time). False once anything failed.
  bool flush();
  /// The failure so far, as the line to print after "gidpolicy: ", or nothing.
  [[nodiscard]] const std::optional<std::string>& error() const { return error_; }

  /// Flush, sync, close and (for an atomic target) rename into place. Returns the failure, if
  /// any; the target is then unchanged (a device or FIFO keeps what it was already sent).
  [[nodiscard]] std::optional<std::string> commit();

 private:
  Output() = default;
  void fail(const std::string& why);
  void fail_errno(int err, std::string_view doing = {});
  bool drain();

  int fd_ = -1;
  bool own_fd_ = false;       // close fd_ at commit (not stdout's)
  std::string where_;         // "stdout", "--output out.json", for the error line
  std::string temp_, final_;  // the atomic case: temporary name, and the path it is renamed to
  std::string buf_;
  bool committed_ = false;
  std::optional<std::string> error_;
};

/// The stdout every command writes to (created on first use).
Output& standard_output();

/// After the command: commits standard_output() and checks what else may have written to stdout
/// (CLI11's --help through std::cout, C stdio), then closes fd 1 so a deferred write error
/// surfaces. Returns `code`, or kExitUsage after printing the one output-error line.
int finish_output(int code);

/// Prints "gidpolicy: <line>" and returns kExitUsage: how an Output's error() or commit() failure
/// ends a command.
int output_error(const std::string& line);

/// What write_tree() would refuse `path` for, said before the work that makes the tree.
std::optional<std::string> check_tree(const std::string& path, std::string_view option, bool replace);

/// A directory tree written in one piece (`fleet --env-dir`, `convert --to sysfs --output DIR`):
/// open() checks the target (as check_tree()) and creates a fresh private staging directory
/// beside it; the command writes everything there, then commit() renames it into place (an
/// existing tree is moved aside first and removed after). A tree not committed (the command
/// failed later, or returned early) is removed by the destructor: nothing is left half-written,
/// and nothing is ever written outside the staging directory: write_file() takes a FILE NAME
/// (join_file_name(), quoting.hpp), never a path.
class StagedTree {
 public:
  static StagedTree open(const std::string& path, std::string_view option, bool replace);
  StagedTree(StagedTree&& o) noexcept;
  StagedTree& operator=(StagedTree&& o) noexcept;
  StagedTree(const StagedTree&) = delete;
  StagedTree& operator=(const StagedTree&) = delete;
  ~StagedTree();

  /// Why the tree cannot be written (the line after "gidpolicy: "), or nothing.
  [[nodiscard]] const std::optional<std::string>& error() const { return error_; }
  /// The staging directory (empty after an error or a commit).
  [[nodiscard]] const std::string& staging() const { return tmp_; }
  /// `text` as the file `name` in the staging directory; a name that is not a file name
  /// (file_name_problem()) is refused with errc::invalid_argument and nothing is written.
  result<void> write_file(std::string_view name, std::string_view text);
  /// Renames the staging directory into place. Returns the error line, if any.
  [[nodiscard]] std::optional<std::string> commit();

 private:
  StagedTree() = default;
  void remove_staging();

  std::string given_, option_, real_, tmp_;
  bool exists_ = false;
  unsigned mode_ = 0;
  std::optional<std::string> error_;
};

/// A directory tree at `path` (`convert --to sysfs --output DIR`): `fill` writes the tree into a
/// fresh private directory beside the target, which is renamed into place only once complete. A
/// symlink to a directory is followed; an existing non-empty directory is refused unless
/// `replace`; anything that is not a directory is refused. Returns the error line, if any: an
/// output error, or `fill`'s own refusal (what it was given cannot be written as a tree).
std::optional<std::string> write_tree(const std::string& path, std::string_view option, bool replace,
                                      const std::function<result<void>(const std::filesystem::path&)>& fill);

}  // namespace gidpolicy::cli
