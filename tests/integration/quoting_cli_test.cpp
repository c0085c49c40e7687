// The quoting rules (quoting.hpp) on what the CLI writes: a host name from a snapshot is a file
// name under `fleet --env-dir`, never a path; a run that fails writes nothing; a value shown in
// `doctor`, `check --pins` or an error cannot forge a line or reach the terminal as a control.
#include "cli_run.hpp"

#include "support/files.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace gidpolicy::test {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// pod-a's snapshot and pod-b's renamed to `host`, in `dir`.
void two_hosts(const fs::path& dir, const std::string& host) {
  fs::create_directories(dir);
  const fs::path data = test_data_dir() / "stacks" / "fleet";
  fs::copy_file(data / "pod-a.json", dir / "pod-a.json");
  std::string b = read_all(data / "pod-b.json");
  const std::string from = "\"host\": \"pod-b\"";
  for (std::size_t at = b.find(from); at != std::string::npos; at = b.find(from, at + 1))
    b.replace(at, from.size(), "\"host\": \"" + host + "\"");
  std::ofstream(dir / "evil.json", std::ios::binary) << b;
}

// Every path under `root`, relative, sorted.
std::vector<std::string> tree(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    out.push_back(fs::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FleetEnvDir, AHostNameThatIsNotAFileNameIsRefusedAndNothingIsWritten) {
  const fs::path base = fs::temp_directory_path() / ("gidpolicy-envq-" + std::to_string(::getpid()));
  const std::string abs = (base / "abs").string();  // an absolute host name, inside the test's own directory
  for (const std::string& host : {std::string("../x/"), abs, std::string("a/b"), std::string("..")}) {
    fs::remove_all(base);
    two_hosts(base / "in", host);
    fs::create_directories(base / "x");  // where "../x/" would lead from a staging directory
    fs::create_directories(base / "out" / "a");
    const auto before = tree(base);
    const auto r = run_cli({"fleet", "--stack", "ucx", "--device", "mlx5_1", "--env-dir",
                            (base / "out" / "env").string(), "--svg", (base / "out" / "m.svg").string(),
                            "--output", (base / "out" / "report.txt").string(), (base / "in").string()});
    EXPECT_EQ(r.exit_code, 2) << host << ": " << r.err;
    EXPECT_NE(r.err.find("host \"" + host.substr(0, 80)), std::string::npos) << host << ": " << r.err;
    EXPECT_NE(r.err.find("nothing was written"), std::string::npos) << r.err;
    // Nothing anywhere: no env file outside the tree, no tree, no picture, no report.
    EXPECT_EQ(tree(base), before) << host;
    EXPECT_FALSE(fs::exists(abs + ".env")) << host;
  }
  fs::remove_all(base);
}

TEST(FleetEnvDir, AGoodRunPutsEveryOutputInPlace) {
  const fs::path base = fs::temp_directory_path() / ("gidpolicy-envok-" + std::to_string(::getpid()));
  fs::remove_all(base);
  two_hosts(base / "in", "pod-b");
  fs::create_directories(base / "out");
  const auto r =
      run_cli({"fleet", "--stack", "ucx", "--device", "mlx5_1", "--env-dir", (base / "out" / "env").string(),
               "--svg", (base / "out" / "m.svg").string(), (base / "in").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // ucx's own choice is wrong on the pods
  EXPECT_EQ(tree(base / "out"), (std::vector<std::string>{"env", "env/pod-a.env", "env/pod-b.env", "m.svg"}));
  fs::remove_all(base);
}

// Every byte of `s` is printable or a newline: no control character reaches the terminal.
bool no_controls(const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7f) return false;
  }
  return true;
}

bool has_line_starting(const std::string& text, const std::string& start) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(start, 0) == 0) return true;
  return false;
}

TEST(ShownValues, APinValueCannotForgeALineInDoctorOrCheckPins) {
  const std::string table = (example_tables_dir() / "nccl-1573-pod.show_gids.txt").string();
  const std::string pin = "NCCL_IB_GID_INDEX=3\nREADY: 0 blockers, 0 warnings\x1b[2J";
  const auto doctor =
      run_program(cli_path(), {"doctor", "--this-host", "--input", table, "--platform", "linux"}, {pin});
  EXPECT_FALSE(has_line_starting(doctor.out, "READY: 0 blockers, 0 warnings")) << doctor.out;
  EXPECT_NE(doctor.out.find("3\\nREADY"), std::string::npos) << doctor.out;
  EXPECT_TRUE(no_controls(doctor.out)) << doctor.out;
  const auto pins = run_program(cli_path(), {"check", "--pins", "--input", table}, {pin});
  EXPECT_FALSE(has_line_starting(pins.out, "READY")) << pins.out;
  EXPECT_TRUE(no_controls(pins.out)) << pins.out;
  EXPECT_TRUE(no_controls(pins.err)) << pins.err;
}

TEST(ShownValues, NoControlCharacterReachesTheTerminalFromAnErrorMessage) {
  const auto r = run_cli({"show", "--input", "/nonexistent/\x1b[2J\rREADY\n"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(no_controls(r.err)) << r.err;
  // A newline in the value may continue the message, never start a line of its own.
  const auto lines = r.err_lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("gidpolicy: ", 0), 0u) << r.err;
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(lines[i].rfind("  ", 0), 0u) << r.err;
  EXPECT_FALSE(has_line_starting(r.err, "READY")) << r.err;
  // A dotenv line that cannot be read is echoed in the error, shown, not sent raw.
  const fs::path env =
      fs::temp_directory_path() / ("gidpolicy-quoting-" + std::to_string(::getpid()) + ".env");
  std::ofstream(env, std::ios::binary) << "NCCL_IB_GID_INDEX=3\n\x1b]0;owned\x07 bad line\r\n";
  const auto dotenv = run_cli({"check", "--pins", "--env-file", env.string(), "--input",
                               (example_tables_dir() / "nccl-769.devinfo.txt").string()});
  fs::remove(env);
  EXPECT_EQ(dotenv.exit_code, 2) << dotenv.err;
  EXPECT_NE(dotenv.err.find("\\e]0;owned\\x07"), std::string::npos) << dotenv.err;
  EXPECT_TRUE(no_controls(dotenv.err)) << dotenv.err;
  const auto sub = run_cli({"\x1b]0;owned\x07"});
  EXPECT_EQ(sub.exit_code, 2);
  EXPECT_TRUE(no_controls(sub.err)) << sub.err;
}

TEST(FloatOptions, ANanDeadlineIsRefused) {
  for (const char* v : {"nan", "NaN", "inf", "-inf", "1e999"}) {
    const auto r = run_cli(
        {"doctor", "--deadline", v, "--input", (example_tables_dir() / "nccl-769.devinfo.txt").string()});
    EXPECT_EQ(r.exit_code, 2) << v << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("--deadline"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("finite"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace gidpolicy::test
