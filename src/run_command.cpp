// run_command (run_command.hpp): posix_spawn with the child's stdout on a pipe, stderr and stdin
// on /dev/null, read until EOF, the deadline or the byte bound, then reaped.
#include "run_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace gidpolicy::host_detail {

result<CommandOutput> run_command(const std::vector<std::string>& argv, std::chrono::milliseconds deadline,
                                  std::size_t max_bytes) {
  if (argv.empty() || argv.front().empty()) return fail(errc::invalid_argument, "run_command: no program");
  const std::string& prog = argv.front();
  int fds[2];
  if (::pipe(fds) != 0) return fail_errno(errno, prog + ": pipe");
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);  // the child's copy is dup2'ed to 1, which stays open
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> copy(argv);  // posix_spawn takes char* const[]
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = ::posix_spawn(&pid, prog.c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    if (err == ENOENT) return fail(errc::not_supported, prog + ": not installed here (ENOENT)");
    return fail_errno(err, prog + ": posix_spawn");
  }
  CommandOutput r;
  const auto end = std::chrono::steady_clock::now() + deadline;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      r.timed_out = true;
      break;
    }
    if (ready < 0) break;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the program closed its output (it is exiting)
    const auto take = std::min(static_cast<std::size_t>(n), max_bytes - r.out.size());
    r.out.append(buf, take);
    if (r.out.size() >= max_bytes) {
      r.truncated = true;
      break;
    }
  }
  ::close(fds[0]);
  if (r.timed_out || r.truncated) ::kill(pid, SIGKILL);
  int status = 0;
  // After EOF the program is exiting; one that closed its output and went on is killed after
  // the deadline's remainder rather than waited for.
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, r.timed_out || r.truncated ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return fail_errno(errno, prog + ": waitpid");
    if (std::chrono::steady_clock::now() >= end) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      continue;
    }
    ::usleep(1000);
  }
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace gidpolicy::host_detail
