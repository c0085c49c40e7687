#include "cli_run.hpp"

#include "support/files.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>

extern char** environ;

namespace gidpolicy::test {

namespace fs = std::filesystem;

std::vector<std::string> CliResult::err_lines() const {
  std::vector<std::string> lines;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

fs::path cli_path() {
  if (const char* env = std::getenv("GIDPOLICY_CLI"); env && *env) return env;
  return GIDPOLICY_CLI_PATH;
}

CliResult run_cli(const std::vector<std::string>& args, const std::optional<fs::path>& stdin_file) {
  return run_program(cli_path(), args, {}, stdin_file);
}

CliResult run_program(const fs::path& program, const std::vector<std::string>& args,
                      const std::vector<std::string>& extra_env, const std::optional<fs::path>& stdin_file,
                      const std::optional<fs::path>& stdout_file) {
  // Output goes to files, not pipes: no deadlock however much the tool prints.
  std::string tmpl = (fs::temp_directory_path() / "gidpolicy-cli-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return {};
  const fs::path dir = tmpl;
  const fs::path out_path = dir / "stdout", err_path = dir / "stderr";

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string in = stdin_file ? stdin_file->string() : std::string("/dev/null");
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  const std::string out = stdout_file ? stdout_file->string() : out_path.string();
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);

  const std::string exe = program.string();
  std::vector<std::string> storage{exe};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);

  CliResult r;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) env_storage.emplace_back(*e);
  env_storage.insert(env_storage.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  int rc = ::posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) {
    int status = 0;
    struct rusage usage {};
    while (::wait4(pid, &status, 0, &usage) < 0) {
    }
    r.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    auto ms = [](const timeval& tv) {
      return static_cast<double>(tv.tv_sec) * 1e3 + static_cast<double>(tv.tv_usec) / 1e3;
    };
    r.cpu_millis = ms(usage.ru_utime) + ms(usage.ru_stime);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    r.err = "posix_spawn(" + exe + ") failed: errno " + std::to_string(rc);
  }
  if (rc == 0) {
    if (!stdout_file) r.out = read_file(out_path);
    r.err = read_file(err_path);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

}  // namespace gidpolicy::test
