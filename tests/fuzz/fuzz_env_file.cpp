// Fuzz the env-file reader of `check --pins --env-file` (dotenv as compose reads it, and the
// `environment:` blocks of a compose file): never crash, never take unbounded time or memory
// (nested defaults are bounded in depth; libFuzzer's -timeout and -rss_limit_mb catch the rest),
// stay within the documented counts, and where a line is a plain `KEY=value` with nothing to
// interpret, read exactly that.
#include "env_file.hpp"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace {

bool plain_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == ':' || c == '-' || c == ',';
}

// A dotenv line with nothing to interpret: KEY=VALUE, both of plain bytes, KEY not a digit first.
std::optional<std::pair<std::string_view, std::string_view>> plain_assignment(std::string_view line) {
  const auto eq = line.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  const std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
  if (key[0] >= '0' && key[0] <= '9') return std::nullopt;
  for (char c : key)
    if (!plain_byte(c) || c == '.' || c == '/' || c == ':' || c == '-' || c == ',') return std::nullopt;
  for (char c : value)
    if (!plain_byte(c)) return std::nullopt;
  return std::pair{key, value};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The environment: a fixed, small one, so that interpolation has something to find.
  const gidpolicy::cli::EnvLookup env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "A") return std::string("1");
    if (name == "EMPTY") return std::string();
    return std::nullopt;
  };
  // The same bytes as dotenv and as a compose file (the name decides when there is no services:).
  for (const char* file : {"pins.env", "compose.yml"}) {
    auto vars = gidpolicy::cli::parse_env_file(text, file, env);
    if (!vars) {
      if (vars.error().what().empty()) std::abort();  // every refusal says why
      continue;
    }
    if (vars.value().size() > gidpolicy::cli::kMaxEnvVars) std::abort();
    for (const auto& a : vars.value()) {
      if (a.name.empty() || a.origin.rfind(file, 0) != 0) std::abort();
      // What was read cannot be larger than what was given, plus what interpolation adds from
      // the one-byte environment above (one byte per `$`-reference at most, each costing 2+).
      if (a.value.size() > size) std::abort();
    }
    // A dotenv whose every line is a plain assignment is read line for line.
    if (std::string_view(file) == "pins.env" && text.find("services") == std::string_view::npos) {
      std::size_t at = 0, k = 0;
      bool all_plain = true;
      std::vector<std::pair<std::string_view, std::string_view>> want;
      while (at < text.size()) {
        auto nl = text.find('\n', at);
        if (nl == std::string_view::npos) nl = text.size();
        const auto p = plain_assignment(text.substr(at, nl - at));
        if (!p) {
          all_plain = false;
          break;
        }
        want.push_back(*p);
        at = nl + 1;
      }
      if (all_plain) {
        if (want.size() != vars.value().size()) std::abort();
        for (const auto& [key, value] : want) {
          if (vars.value()[k].name != key || vars.value()[k].value != value) std::abort();
          ++k;
        }
      }
    }
  }
  return 0;
}
