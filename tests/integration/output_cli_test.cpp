// Where `gidpolicy` writes and what it does when it cannot (docs/cli.md, "Output"): every
// subcommand with stdout on a full disk; --output and --svg on a device node, a FIFO with and
// without a reader, symlinks (dangling, into another directory, to /proc/self/fd/1), a
// directory, an unwritable directory, a pre-planted temporary name and a file size limit.
#include "cli_run.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

// Its own namespace: the tests are built as one unity source with cli_test.cpp.
namespace gidpolicy::test::output_cli {
namespace {

namespace fs = std::filesystem;

constexpr auto npos = std::string::npos;

std::string example(const char* name) { return (example_tables_dir() / name).string(); }
std::string table() { return example("ibm-pr4-cx6.show_gids.txt"); }
fs::path jaccl_dir() { return example_tables_dir().parent_path() / "fleet" / "jaccl"; }
std::vector<std::string> fleet_args() {
  return {"fleet",     "--jaccl-devices", (jaccl_dir() / "devices.json").string(),
          "--profile", "jaccl",           (jaccl_dir() / "hosts").string()};
}

// Every run is bounded: a tool that waits forever on a FIFO or keeps watching a dead stdout
// ends as timeout's 124, a failure, not a hung test. 60 s is a hang guard: a right run takes well
// under a second, a few under ASan on a loaded machine.
CliResult run_bounded(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                      const std::optional<fs::path>& stdout_file = std::nullopt) {
  std::vector<std::string> a{"60", cli_path().string()};
  a.insert(a.end(), args.begin(), args.end());
  return run_program("/usr/bin/timeout", a, env, std::nullopt, stdout_file);
}

std::vector<std::string> with(std::vector<std::string> args, std::initializer_list<std::string> more) {
  args.insert(args.end(), more);
  return args;
}

std::vector<std::string> convert_to(const fs::path& target) {
  return {"convert", "--to", "json", "--input", table(), "--output", target.string()};
}

// The one line an output failure ends with, exit 2, naming the output (never "cannot read input").
void expect_output_error(const CliResult& r, const std::string& where, const std::string& why) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("gidpolicy: output error: " + where, 0), 0u) << r.err;
  EXPECT_NE(lines[0].find(why), npos) << r.err;
  EXPECT_EQ(r.err.find("cannot read input"), npos) << r.err;
}

struct stat lstat_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st;
}

void expect_same_node(const struct stat& before, const fs::path& p) {
  const struct stat now = lstat_of(p);
  EXPECT_EQ(now.st_mode & S_IFMT, before.st_mode & S_IFMT) << p << " changed type";
  EXPECT_EQ(now.st_ino, before.st_ino) << p << " was replaced";
  EXPECT_EQ(now.st_dev, before.st_dev) << p << " was replaced";
}

// Files in `dir` besides `keep`: a temporary file left behind shows up here.
std::vector<std::string> others(const fs::path& dir, std::initializer_list<std::string> keep) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) out.push_back(name);
  }
  return out;
}

// The subcommands the tool itself lists in --help: a new one cannot be left out of the sweep.
std::vector<std::string> listed_subcommands() {
  const CliResult help = run_cli({"--help"});
  std::istringstream in(help.out);
  std::vector<std::string> names;
  std::string line;
  bool in_list = false;
  while (std::getline(in, line)) {
    if (line == "Subcommands:") {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    if (line.empty()) break;
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

class OutputTarget : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gidpolicy-output-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    const CliResult r = run_cli({"convert", "--to", "json", "--input", table()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expected_ = r.out;
    ASSERT_FALSE(expected_.empty());
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_ / "ro", fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
  std::string expected_;  // what convert_to() writes
};

TEST(OutputSweep, EverySubcommandWithStdoutOnAFullDiskFailsSayingSo) {
  const std::vector<std::string> fleet = fleet_args();
  std::map<std::string, std::vector<std::string>> cases{
      {"show", {"show", "--input", table()}},
      {"select", {"select", "--input", table()}},
      {"check", {"check", "--input", table()}},
      {"explain-errno", {"explain-errno", "22"}},
      {"convert", {"convert", "--to", "json", "--input", table()}},
      {"simulate", {"simulate", "--profile", "auto", table(), table()}},
      {"watch", {"watch"}},
      {"fleet", fleet},
      {"env", {"env", "--for", "nccl,ucx", "--input", table()}},
      // fake-host's own stdout is its --help: what the command it runs prints is the command's.
      {"fake-host", {"fake-host", "--help"}},
      {"doctor", {"doctor", "--input", table()}},
      // probe's report needs a live device and a peer (tests/integration/probe_pair.py); its
      // --help goes out through the same output.
      {"probe", {"probe", "--help"}},
  };
  // The --json forms and the tool's own --help/--version print through other code.
  const std::vector<std::vector<std::string>> json_forms{
      {"show", "--json", "--input", table()},
      {"select", "--json", "--input", table()},
      {"check", "--json", "--input", table()},
      with(fleet, {"--json"}),
      {"env", "--for", "nccl", "--format", "json", "--input", table()},
      {"check", "--stacks", "--json", "--input", table()},
      {"doctor", "--json", "--input", table()},
      {"--help"},
      {"--version"},
      {"show", "--help"},
  };
  const auto subcommands = listed_subcommands();
  ASSERT_GE(subcommands.size(), 8u);
  std::vector<std::vector<std::string>> runs = json_forms;
  for (const auto& name : subcommands) {
    const auto it = cases.find(name);
    ASSERT_NE(it, cases.end()) << "subcommand '" << name << "' has no /dev/full case here: add one";
    runs.push_back(it->second);
  }
  for (const auto& args : runs) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    std::vector<std::string> env;
    if (args[0] == "watch") {
#ifdef GIDPOLICY_OUTPUT_TEST_FAKELIB_DIR
      env = {std::string("LD_LIBRARY_PATH=") + GIDPOLICY_OUTPUT_TEST_FAKELIB_DIR,
             "GIDPOLICY_FAKE_TABLES=" + (test_data_dir() / "watch" / "1-start.json").string()};
#else
      std::cout << "watch not run: this build has no fake libibverbs to watch\n";
      continue;
#endif
    }
#ifndef GIDPOLICY_CLI_TESTS_HAVE_FAKES
    if (args[0] == "simulate") continue;  // simulate needs the fake fabric
#endif
    SCOPED_TRACE("gidpolicy" + shown);
    const CliResult r = run_bounded(args, env, fs::path("/dev/full"));
    expect_output_error(r, "stdout", "No space left on device");
  }
}

TEST_F(OutputTarget, ACharacterDeviceIsWrittenInPlaceNotReplaced) {
  // A node of our own where root may make one (the major/minor of /dev/null and /dev/full), else
  // the system's /dev/null itself (which a non-root rename could not replace anyway).
  fs::path null_node = dir_ / "null", full_node = dir_ / "full";
  if (::mknod(null_node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod(full_node.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0) {
    std::cout << "mknod refused (" << std::strerror(errno) << "): using /dev/null and /dev/full\n";
    null_node = "/dev/null";
    full_node = "/dev/full";
  }
  const struct stat null_before = lstat_of(null_node), full_before = lstat_of(full_node);
  CliResult r = run_bounded(convert_to(null_node));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_same_node(null_before, null_node);
  r = run_bounded(with(fleet_args(), {"--svg", null_node.string()}));
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;  // 1: the example's links do not all connect
  EXPECT_EQ(r.err, "");
  expect_same_node(null_before, null_node);
  // A device that refuses the write: the failure is the output's, and the node stays.
  r = run_bounded(convert_to(full_node));
  expect_output_error(r, "--output " + full_node.string(), "No space left on device");
  expect_same_node(full_before, full_node);
  r = run_bounded(with(fleet_args(), {"--svg", full_node.string()}));
  expect_output_error(r, "--svg " + full_node.string(), "No space left on device");
  expect_same_node(full_before, full_node);
}

TEST_F(OutputTarget, AFifoWithAReaderGetsTheOutput) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const struct stat before = lstat_of(fifo);
  // Non-blocking: a tool that never opens the FIFO cannot hang the reader.
  const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(fd, 0);
  std::atomic<bool> done{false};
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        got.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (done) break;  // the tool has exited: everything it wrote was read above
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  const CliResult r = run_bounded(convert_to(fifo));
  done = true;
  reader.join();
  ::close(fd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(got, expected_);
  expect_same_node(before, fifo);
}

TEST_F(OutputTarget, AFifoWithoutAReaderIsRefusedAtOnce) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const struct stat before = lstat_of(fifo);
  CliResult r = run_bounded(convert_to(fifo));
  expect_output_error(r, "--output " + fifo.string(), "nothing is reading");
  expect_same_node(before, fifo);
  r = run_bounded(with(fleet_args(), {"--svg", fifo.string()}));
  expect_output_error(r, "--svg " + fifo.string(), "nothing is reading");
  expect_same_node(before, fifo);
}

TEST_F(OutputTarget, ASocketIsRefusedAndKept) {
  const fs::path sock = dir_ / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.string().size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.string().size());
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  const struct stat before = lstat_of(sock);
  const CliResult r = run_bounded(convert_to(sock));
  ::close(fd);
  expect_output_error(r, "--output " + sock.string(), "socket");
  expect_same_node(before, sock);
}

TEST_F(OutputTarget, ADanglingSymlinkGetsItsTargetCreated) {
  fs::create_directory(dir_ / "real");
  const fs::path link = dir_ / "link";
  fs::create_symlink("real/new.json", link);
  const CliResult r = run_bounded(convert_to(link));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), "real/new.json");
  EXPECT_EQ(read_file(dir_ / "real" / "new.json"), expected_);
  EXPECT_EQ(others(dir_ / "real", {"new.json"}), std::vector<std::string>{});
}

TEST_F(OutputTarget, ADanglingSymlinkIntoAMissingDirectoryIsRefused) {
  const fs::path link = dir_ / "link";
  fs::create_symlink("missing/new.json", link);
  const CliResult r = run_bounded(with(fleet_args(), {"--svg", link.string()}));
  expect_output_error(r, "--svg " + link.string(), "does not exist");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(others(dir_, {"link"}), std::vector<std::string>{});
}

TEST_F(OutputTarget, ASymlinkToAFileElsewhereWritesThatFileAndStaysALink) {
  fs::create_directory(dir_ / "real");
  const fs::path real = dir_ / "real" / "report.json";
  { std::ofstream(real) << "stale\n"; }
  ::chmod(real.c_str(), 0640);
  const fs::path link = dir_ / "link";
  fs::create_symlink(real, link);
  const CliResult r = run_bounded(convert_to(link));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(real), expected_);
  EXPECT_EQ(lstat_of(real).st_mode & 07777, 0640u) << "the file's mode is kept";
  EXPECT_EQ(others(dir_ / "real", {"report.json"}), std::vector<std::string>{});
  EXPECT_EQ(others(dir_, {"link", "real"}), std::vector<std::string>{});
}

TEST_F(OutputTarget, ASymlinkToProcSelfFd1WritesStdout) {
  const fs::path link = dir_ / "stdout";
  fs::create_symlink("/proc/self/fd/1", link);
  CliResult r = run_bounded(convert_to(link));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected_);
  EXPECT_TRUE(fs::is_symlink(link));
  // stdout a FIFO (a pipe to another program): written in place through the link.
  r = run_program("/bin/sh", {"-c", "\"$0\" \"$@\" | cat", cli_path().string(), "convert", "--to", "json",
                              "--input", table(), "--output", link.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected_);
  EXPECT_TRUE(fs::is_symlink(link));
  // stdout appending to a log: the log keeps its earlier lines (it is written, not replaced).
  // Through the test's own link, never the system's /dev/stdout: a tool that replaced the link
  // (the fault tested for) must not damage the machine.
  const fs::path log = dir_ / "log";
  { std::ofstream(log) << "earlier\n"; }
  r = run_program("/bin/sh",
                  {"-c", "exec \"$0\" \"$@\" >>\"$LOG\"", cli_path().string(), "convert", "--to", "json",
                   "--input", table(), "--output", link.string()},
                  {"LOG=" + log.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(log), "earlier\n" + expected_);
}

TEST_F(OutputTarget, ADirectoryIsAnOutputErrorNotAnInputError) {
  const fs::path d = dir_ / "adir";
  fs::create_directory(d);
  CliResult r = run_bounded(with(fleet_args(), {"--svg", d.string()}));
  expect_output_error(r, "--svg " + d.string(), "directory");
  r = run_bounded(with(fleet_args(), {"--output", d.string()}));
  expect_output_error(r, "--output " + d.string(), "directory");
  r = run_bounded(convert_to(d));
  expect_output_error(r, "--output " + d.string(), "directory");
  EXPECT_TRUE(fs::is_empty(d));
}

// Run the tool as an unprivileged user: root writes anywhere, so for root the mode bits are
// tested as nobody (setpriv). Empty when that cannot be done (the caller skips, saying why).
std::optional<CliResult> run_unprivileged(const std::vector<std::string>& args, std::string& why_not) {
  if (::geteuid() != 0) return run_bounded(args);
  if (!fs::exists("/usr/bin/setpriv")) {
    why_not = "root, and no setpriv to run the tool unprivileged";
    return std::nullopt;
  }
  std::vector<std::string> a{"--reuid=65534", "--regid=65534", "--clear-groups", cli_path().string()};
  a.insert(a.end(), args.begin(), args.end());
  CliResult r = run_program("/usr/bin/setpriv", a);
  if (r.err.rfind("setpriv:", 0) == 0) {
    why_not = "setpriv refused: " + r.err;
    return std::nullopt;
  }
  return r;
}

TEST_F(OutputTarget, AnUnwritableDirectoryIsRefusedLeavingNothing) {
  const fs::path ro = dir_ / "ro";
  fs::create_directory(ro);
  ::chmod(dir_.c_str(), 0755);
  ::chmod(ro.c_str(), 0555);
  const fs::path target = ro / "out.json";
  std::string why_not;
  const auto r = run_unprivileged(convert_to(target), why_not);
  if (!r) GTEST_SKIP() << why_not;
  expect_output_error(*r, "--output " + target.string(), "Permission denied");
  EXPECT_TRUE(fs::is_empty(ro));
}

TEST_F(OutputTarget, AFileTheUserCannotWriteIsNotReplacedThroughItsDirectory) {
  // The directory is writable (a rename would succeed), the file is not: as with a shell's `>`,
  // that is a refusal, not a replacement.
  ::chmod(dir_.c_str(), 0777);
  const fs::path target = dir_ / "theirs.json";
  { std::ofstream(target) << "theirs\n"; }
  ::chmod(target.c_str(), 0444);
  const struct stat before = lstat_of(target);
  std::string why_not;
  const auto r = run_unprivileged(convert_to(target), why_not);
  if (!r) GTEST_SKIP() << why_not;
  expect_output_error(*r, "--output " + target.string(), "Permission denied");
  EXPECT_EQ(read_file(target), "theirs\n");
  expect_same_node(before, target);
  EXPECT_EQ(others(dir_, {"theirs.json"}), std::vector<std::string>{});
}

TEST_F(OutputTarget, APlantedTemporaryNameIsNotFollowed) {
  // In a PID namespace of its own the tool is PID 1, so the names an earlier build derived from
  // its PID (PATH.tmp.1, .PATH.gidpolicy-tmp-1) can be planted, as links to a victim file.
  const fs::path victim = dir_ / "victim";
  { std::ofstream(victim) << "victim\n"; }
  const fs::path out = dir_ / "out.json", report = dir_ / "report.txt";
  for (const std::string planted : {"out.json.tmp.1", ".out.json.gidpolicy-tmp-1", "report.txt.tmp.1"})
    fs::create_symlink(victim, dir_ / planted);
  // Unprivileged, a user namespace (mapped to root) is what makes a PID namespace possible.
  std::vector<std::string> ns{"--pid", "--fork"};
  if (::geteuid() != 0) ns.insert(ns.begin(), "--map-root-user");
  const CliResult probe = run_program("/usr/bin/unshare", with(ns, {"/bin/true"}));
  if (probe.exit_code != 0) GTEST_SKIP() << "no PID namespace here (unshare --pid: " << probe.err << ")";
  std::vector<std::string> a = with(ns, {cli_path().string()});
  CliResult r = run_program(
      "/usr/bin/unshare", with(a, {"convert", "--to", "json", "--input", table(), "--output", out.string()}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> f = a;
  for (const auto& s : with(fleet_args(), {"--output", report.string()})) f.push_back(s);
  r = run_program("/usr/bin/unshare", f);
  EXPECT_LE(r.exit_code, 1) << r.err;
  EXPECT_EQ(read_file(victim), "victim\n");
  EXPECT_EQ(read_file(out), expected_);
  EXPECT_FALSE(fs::is_symlink(out));
  EXPECT_FALSE(fs::is_symlink(report));
  EXPECT_NE(read_file(report).find("links connected"), npos);
  for (const std::string planted : {"out.json.tmp.1", ".out.json.gidpolicy-tmp-1", "report.txt.tmp.1"})
    EXPECT_TRUE(fs::is_symlink(dir_ / planted)) << planted;
}

TEST_F(OutputTarget, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  // A file size limit (SIGXFSZ ignored, so the write fails with EFBIG instead of killing).
  const fs::path report = dir_ / "report.txt";
  { std::ofstream(report) << "old\n"; }
  std::string cmd = "trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\"";
  std::vector<std::string> args{"-c", cmd, cli_path().string()};
  for (const auto& s : with(fleet_args(), {"--json", "--all-links", "--output", report.string()}))
    args.push_back(s);
  const CliResult r = run_program("/bin/sh", args);
  expect_output_error(r, "--output " + report.string(), "File too large");
  EXPECT_EQ(read_file(report), "old\n");
  EXPECT_EQ(others(dir_, {"report.txt"}), std::vector<std::string>{});
}

TEST_F(OutputTarget, ASysfsTreeThroughASymlinkIsWrittenWhereItLeads) {
  fs::create_directory(dir_ / "real");
  const fs::path link = dir_ / "tree";
  fs::create_symlink("real", link);
  std::vector<std::string> args{"convert", "--to", "sysfs", "--input", table(), "--output", link.string()};
  CliResult r = run_bounded(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_FALSE(fs::is_empty(dir_ / "real"));
  EXPECT_EQ(others(dir_, {"tree", "real"}), std::vector<std::string>{});
  // Not a directory: refused as the output, the node kept.
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const struct stat before = lstat_of(fifo);
  args.back() = fifo.string();
  r = run_bounded(args);
  expect_output_error(r, "--output " + fifo.string(), "not a directory");
  expect_same_node(before, fifo);
}

}  // namespace
}  // namespace gidpolicy::test::output_cli
