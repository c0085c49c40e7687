// The page's entry points (web/gidpolicy.html, docs/web.md): the CLI's own subcommand functions
// (run_check, run_doctor, run_explain, run_convert: tools/gidpolicy), called with the arguments
// the page's command line would give them, on a file the page wrote into the module's in-memory
// file system. What they print is what the CLI prints: standard_output() and stderr are pointed
// at two in-memory files for the call, which the page then reads.
//
// Built only by the browser build (web/CMakeLists.txt, the `wasm` preset); nothing here reads
// the host: the page passes --no-env where a subcommand would read the environment, and never
// asks for live devices.
#include "../gidpolicy/commands.hpp"
#include "../gidpolicy/doctor_cmd.hpp"
#include "../gidpolicy/output.hpp"

#include <emscripten/emscripten.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>

namespace gidpolicy::web_detail {

// Where the page writes its input (the current directory: the CLI's messages name the file as
// given) and where a call's output goes.
constexpr const char* kInputDir = "/input";
constexpr const char* kStdout = "/output/stdout";
constexpr const char* kStderr = "/output/stderr";

bool redirect(int fd, const char* path) {
  const int f = ::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (f < 0) return false;
  const bool ok = ::dup2(f, fd) == fd;
  ::close(f);
  return ok;
}

// Runs one subcommand with stdout and stderr going to kStdout and kStderr; its exit code, or -1
// when the output files could not be opened.
int captured(const std::function<int()>& command) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  if (!redirect(STDOUT_FILENO, kStdout) || !redirect(STDERR_FILENO, kStderr)) return -1;
  int code = command();
  // What finish_output() does in the CLI, but stdout stays open for the next call.
  if (!cli::standard_output().flush() && code == cli::kExitOk) code = cli::kExitUsage;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  return code;
}

cli::SourceArgs source_of(const char* name, bool bundle) {
  cli::SourceArgs s;
  if (bundle)
    s.bundle = name;
  else
    s.input = name;
  return s;
}

}  // namespace gidpolicy::web_detail

using namespace gidpolicy;

extern "C" {

/// 1 when `name` (in the input directory) is a gidpolicy-collect bundle: its first line is the
/// collector's header, as read_bundle_file() requires.
EMSCRIPTEN_KEEPALIVE int gidpolicy_web_is_bundle(const char* name) {
  std::ifstream in(name, std::ios::binary);
  std::string first;
  std::getline(in, first);
  return first.rfind("# gidpolicy-collect", 0) == 0 ? 1 : 0;
}

/// `gidpolicy check [--stacks --no-env] {--input|--bundle} NAME [--json]`.
EMSCRIPTEN_KEEPALIVE int gidpolicy_web_check(const char* name, int bundle, int stacks, int json) {
  cli::CheckArgs a;
  a.source = web_detail::source_of(name, bundle != 0);
  a.stacks = stacks != 0;
  a.no_env = stacks != 0;
  a.json = json != 0;
  return web_detail::captured([&] { return cli::run_check(a); });
}

/// `gidpolicy doctor --bundle NAME [--json]`.
EMSCRIPTEN_KEEPALIVE int gidpolicy_web_doctor(const char* name, int json) {
  cli::DoctorArgs a;
  a.source = web_detail::source_of(name, true);
  a.json = json != 0;
  return web_detail::captured([&] { return cli::run_doctor(a); });
}

/// `gidpolicy explain-errno ERR [{--input|--bundle} NAME]` (NAME empty: no table).
EMSCRIPTEN_KEEPALIVE int gidpolicy_web_explain(const char* err, const char* name, int bundle) {
  cli::ExplainArgs a;
  a.err = err;
  if (name[0] != '\0') {
    a.source = web_detail::source_of(name, bundle != 0);
    a.has_source = true;
  }
  return web_detail::captured([&] { return cli::run_explain(a); });
}

/// `gidpolicy convert {--input|--bundle} NAME --to TO` (json, devinfo or show_gids).
EMSCRIPTEN_KEEPALIVE int gidpolicy_web_convert(const char* name, int bundle, const char* to) {
  cli::ConvertArgs a;
  a.source = web_detail::source_of(name, bundle != 0);
  a.to = to;
  return web_detail::captured([&] { return cli::run_convert(a); });
}

}  // extern "C"

int main() {
  ::mkdir(web_detail::kInputDir, 0700);
  ::mkdir("/output", 0700);
  return ::chdir(web_detail::kInputDir) == 0 ? 0 : 1;
}
