#include "env_file.hpp"

#include <gidpolicy/quoting.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <system_error>
#include <unordered_map>

namespace gidpolicy::cli {
namespace {

constexpr std::size_t kMaxIndentLevels = 64;
// `${A:-${B:-...}}`: deeper than any hand-written default, shallow enough for the stack.
constexpr std::size_t kMaxInterpolationDepth = 16;

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 256) return false;
  if (!(std::isalpha(static_cast<unsigned char>(n[0])) != 0 || n[0] == '_')) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The file name is the user's text: shown escaped and bounded, as every value quoted here is.
Error at(const std::string& file, std::size_t line, const std::string& what) {
  return Error(errc::parse_error, show_text(file, 4096) + ":" + std::to_string(line) + ": " + what);
}

std::string value_too_long() {
  return "the value is longer than " + std::to_string(kMaxEnvValueBytes) + " bytes once interpolated";
}

/// Adds a value's bytes to the file's total: at most kMaxEnvValuesBytes in all.
result<void> count_value(std::size_t& total, std::size_t bytes, const std::string& file, std::size_t line) {
  total += bytes;
  if (total > kMaxEnvValuesBytes)
    return fail(at(file, line,
                   "the values are longer than " + std::to_string(kMaxEnvValuesBytes) +
                       " bytes in all once interpolated"));
  return success();
}

/// A quoted scalar ('..' or ".."), the whole of `s`. nullopt when `s` is not quoted.
result<std::optional<std::string>> unquote(std::string_view s, const std::string& file, std::size_t line) {
  if (s.empty() || (s.front() != '"' && s.front() != '\'')) return std::optional<std::string>();
  const char q = s.front();
  std::string out;
  std::size_t i = 1;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == q) {
      if (q == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
        out += '\'';
        ++i;
        continue;
      }
      break;
    }
    if (q == '"' && c == '\\' && i + 1 < s.size()) {
      const char n = s[++i];
      if (n != '"' && n != '\\')
        return fail(
            at(file, line,
               "expected \\\" or \\\\ in a double-quoted value, found " + show_text(std::string{'\\', n})));
      out += n;
      continue;
    }
    out += c;
  }
  if (i >= s.size())
    return fail(at(file, line, "expected the closing quote of the value (a value is one line)"));
  const std::string_view rest = trim(s.substr(i + 1));
  if (!rest.empty() && rest.front() != '#')
    return fail(
        at(file, line,
           "expected the end of the line after the quoted value, found " + show_text(std::string(rest), 20)));
  return std::optional<std::string>(out);
}

/// Where a `${` opened at `open` closes: the matching '}', counting the `${...}` nested in a
/// default; npos when it does not close.
std::size_t closing_brace(std::string_view v, std::size_t open) {
  std::size_t depth = 0;
  for (std::size_t i = open + 2; i < v.size(); ++i) {
    if (v[i] == '$' && i + 1 < v.size() && v[i + 1] == '$') {
      ++i;
    } else if (v[i] == '$' && i + 1 < v.size() && v[i + 1] == '{') {
      ++depth;
      ++i;
    } else if (v[i] == '}') {
      if (depth == 0) return i;
      --depth;
    }
  }
  return std::string_view::npos;
}

/// Compose's interpolation of ${NAME}, ${NAME:-d}, ${NAME-d}, $NAME and $$. A default is
/// interpolated in turn, as compose does (`${A:-${B:-3}}`), at most kMaxInterpolationDepth deep.
result<std::string> interpolate(std::string_view v, const EnvLookup& env, const std::string& file,
                                std::size_t line, std::size_t depth = 0) {
  if (depth > kMaxInterpolationDepth)
    return fail(
        at(file, line, "defaults nested deeper than " + std::to_string(kMaxInterpolationDepth) + " levels"));
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    // Each reference may copy a long value (an environment variable, an earlier line's value):
    // bounded here, or a few lines of `B=$A$A$A...` would double their size line after line.
    if (out.size() > kMaxEnvValueBytes) return fail(at(file, line, value_too_long()));
    if (v[i] != '$') {
      out += v[i];
      continue;
    }
    if (i + 1 < v.size() && v[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 < v.size() && v[i + 1] == '{') {
      const std::size_t close = closing_brace(v, i);
      if (close == std::string_view::npos) return fail(at(file, line, "expected '}' closing '${'"));
      std::string_view body = v.substr(i + 2, close - i - 2);
      std::string_view name = body, deflt;
      bool colon = false, has_default = false;
      const std::size_t op = body.find_first_of(":-?+");
      if (op != std::string_view::npos) {
        name = body.substr(0, op);
        std::string_view rest = body.substr(op);
        if (rest.substr(0, 2) == ":-") {
          colon = true;
          has_default = true;
          deflt = rest.substr(2);
        } else if (rest.front() == '-') {
          has_default = true;
          deflt = rest.substr(1);
        } else {
          return fail(at(file, line,
                         "'${" + show_text(std::string(body), 40) +
                             "}': only ${NAME}, ${NAME:-default} and ${NAME-default} are read"));
        }
      }
      if (!valid_name(name))
        return fail(
            at(file, line, "expected a variable name in '${" + show_text(std::string(body), 40) + "}'"));
      const auto val = env(std::string(name));
      if (has_default && (!val || (colon && val->empty()))) {
        GIDPOLICY_TRY(d, interpolate(deflt, env, file, line, depth + 1));
        out += d;
      } else if (val) {
        out += *val;
      }
      // unset without a default: "" (compose warns and substitutes an empty string)
      i = close;
      continue;
    }
    std::size_t j = i + 1;
    while (j < v.size() && (std::isalnum(static_cast<unsigned char>(v[j])) != 0 || v[j] == '_')) ++j;
    if (j == i + 1) {
      out += '$';
      continue;
    }
    if (const auto val = env(std::string(v.substr(i + 1, j - i - 1)))) out += *val;
    i = j - 1;
  }
  if (out.size() > kMaxEnvValueBytes) return fail(at(file, line, value_too_long()));
  return out;
}

/// A dotenv value as compose reads an env_file (compose-go's dotenv parser): unquoted, up to a
/// " #" comment, trailing white space dropped, then interpolated; '...' literal, a backslash
/// before the quote keeps the quote; "..." with \" and \\, then interpolated. After a closing
/// quote only white space and a '#' comment may follow (compose would read more as the next
/// statement). `env` sees the environment first, then the file's earlier variables, as compose's
/// lookup does.
result<std::string> dotenv_value(std::string_view raw, const EnvLookup& env, const std::string& file,
                                 std::size_t line) {
  const std::string_view s = trim(raw);
  if (s.empty() || (s.front() != '"' && s.front() != '\'')) {
    std::string_view v = raw;
    if (const std::size_t hash = v.find(" #"); hash != std::string_view::npos) v = v.substr(0, hash);
    return interpolate(trim(v), env, file, line);
  }
  const char q = s.front();
  std::string out;
  std::size_t i = 1;
  for (; i < s.size() && s[i] != q; ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == q || (q == '"' && n == '\\')) {
        out += n;
        ++i;
        continue;
      }
      if (q == '"')
        return fail(
            at(file, line, "value: expected \\\" or \\\\ after a backslash in a double-quoted value"));
    }
    out += s[i];
  }
  if (i >= s.size())
    return fail(at(file, line, "value: expected the closing quote (a value is one line here)"));
  const std::string_view rest = trim(s.substr(i + 1));
  if (!rest.empty() && rest.front() != '#')
    return fail(at(file, line,
                   "value: expected the end of the line or a '#' comment after the quoted value, found " +
                       show_text(std::string(rest), 20)));
  if (q == '\'') return out;
  return interpolate(out, env, file, line);
}

/// A plain (unquoted) compose scalar: the text up to a " #" comment.
std::string_view plain(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) return trim(s.substr(0, i));
  return trim(s);
}

result<void> refuse_yaml_features(std::string_view v, const std::string& file, std::size_t line) {
  if (v.empty()) return success();
  const char c = v.front();
  if (c == '[' || c == '{')
    return fail(
        at(file, line,
           "a flow collection ('[..]' or '{..}') is not read: write environment: as a block list or map"));
  if (c == '&' || c == '*') return fail(at(file, line, "anchors and aliases are not read"));
  if (c == '!') return fail(at(file, line, "tags are not read"));
  if (c == '|' || c == '>')
    return fail(at(file, line, "block scalars ('|', '>') are not read: a value is one line"));
  return success();
}

/// A compose file's scalar: quoted or plain, then interpolated.
result<std::string> scalar(std::string_view raw, const EnvLookup& env, const std::string& file,
                           std::size_t line) {
  GIDPOLICY_TRY(q, unquote(raw, file, line));
  if (q) return interpolate(*q, env, file, line);
  GIDPOLICY_TRYV(refuse_yaml_features(raw, file, line));
  return interpolate(plain(raw), env, file, line);
}

result<std::vector<EnvAssignment>> parse_dotenv(const std::vector<std::string_view>& lines,
                                                const std::string& file, const EnvLookup& env) {
  std::vector<EnvAssignment> out;
  // Compose's lookup while it reads an env_file: the environment, then the file's own earlier
  // variables (the last one of a name).
  // The file's earlier variables by name (the last one set wins): a lookup per reference must
  // not walk the whole file, or a 1 MiB file of references would take quadratic time.
  std::unordered_map<std::string, std::size_t> last;
  std::size_t total = 0;
  const EnvLookup lookup = [&](const std::string& name) -> std::optional<std::string> {
    if (auto v = env(name)) return v;
    if (const auto it = last.find(name); it != last.end()) return out[it->second].value;
    return std::nullopt;
  };
  for (std::size_t n = 0; n < lines.size(); ++n) {
    std::string_view l = trim(lines[n]);
    if (l.empty() || l.front() == '#') continue;
    if (l.substr(0, 7) == "export ") l = trim(l.substr(7));
    const std::size_t eq = l.find('=');
    if (eq == std::string_view::npos)
      return fail(at(file, n + 1, "expected KEY=VALUE, found " + show_text(std::string(l), 40)));
    const std::string_view key = trim(l.substr(0, eq));
    if (!valid_name(key))
      return fail(at(file, n + 1,
                     "key: expected a variable name before '=', found " + show_text(std::string(key), 40)));
    GIDPOLICY_TRY(v, dotenv_value(l.substr(eq + 1), lookup, file, n + 1));
    if (out.size() == kMaxEnvVars)
      return fail(at(file, n + 1, "at most " + std::to_string(kMaxEnvVars) + " variables"));
    GIDPOLICY_TRYV(count_value(total, v.size(), file, n + 1));
    last[std::string(key)] = out.size();
    out.push_back({std::string(key), std::move(v), show_text(file, 4096) + ":" + std::to_string(n + 1)});
  }
  return out;
}

std::size_t indent_of(std::string_view l) {
  std::size_t i = 0;
  while (i < l.size() && l[i] == ' ') ++i;
  return i;
}

result<std::vector<EnvAssignment>> parse_compose(const std::vector<std::string_view>& lines,
                                                 const std::string& file, const EnvLookup& env) {
  std::vector<EnvAssignment> out;
  std::size_t total = 0;
  // The path of keys open at each indentation (a stack bounded by kMaxIndentLevels).
  struct Open {
    std::size_t indent;
    std::string key;
  };
  std::vector<Open> open;
  // Inside an environment: block: its indentation, the service, and the form once known.
  std::optional<std::size_t> env_indent;
  std::string service;
  int form = 0;  // 0 unknown, 1 list, 2 map
  std::optional<std::size_t> env_item_indent;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const std::string_view raw = lines[n];
    const std::size_t ind = indent_of(raw);
    const std::string_view l = trim(raw);
    if (l.empty() || l.front() == '#') continue;
    if (ind < raw.size() && raw[ind] == '\t')
      return fail(at(file, n + 1, "a tab in the indentation (YAML allows only spaces)"));
    if (l == "---" || l == "...") continue;
    if (env_indent && ind > *env_indent) {
      if (env_item_indent && ind != *env_item_indent)
        return fail(at(file, n + 1,
                       "expected the indentation of the other environment entries (" +
                           std::to_string(*env_item_indent) + " spaces)"));
      env_item_indent = ind;
      const std::size_t line = n + 1;
      if (l.front() == '-') {
        if (form == 2) return fail(at(file, line, "a list item in an environment: map"));
        form = 1;
        std::string_view item = trim(l.substr(1));
        GIDPOLICY_TRY(text, scalar(item, env, file, line));
        const std::size_t eq = text.find('=');
        const std::string key = eq == std::string::npos ? text : text.substr(0, eq);
        if (!valid_name(key))
          return fail(at(file, line, "expected KEY=VALUE or KEY, found " + show_text(text, 40)));
        std::optional<std::string> value;
        if (eq != std::string::npos)
          value = text.substr(eq + 1);
        else
          value = env(key);
        if (value) {
          GIDPOLICY_TRYV(count_value(total, value->size(), file, line));
          out.push_back({key, *value,
                         show_text(file, 4096) + ":" + std::to_string(line) + " (service " +
                             show_text(service, 60) + ")"});
        }
      } else {
        if (form == 1) return fail(at(file, line, "a map entry in an environment: list"));
        form = 2;
        const std::size_t colon = l.find(':');
        if (colon == std::string_view::npos) return fail(at(file, line, "expected KEY: VALUE"));
        GIDPOLICY_TRY(keyq, unquote(trim(l.substr(0, colon)), file, line));
        const std::string key = keyq ? *keyq : std::string(trim(l.substr(0, colon)));
        if (!valid_name(key))
          return fail(at(file, line, "expected a variable name before ':', found " + show_text(key, 40)));
        const std::string_view rest = trim(l.substr(colon + 1));
        std::optional<std::string> value;
        if (rest.empty() || rest.front() == '#') {
          value = env(key);  // KEY: with no value takes it from the environment
        } else if (rest == "null" || rest == "~") {
          value = env(key);
        } else {
          GIDPOLICY_TRY(v, scalar(rest, env, file, line));
          value = std::move(v);
        }
        if (value) {
          GIDPOLICY_TRYV(count_value(total, value->size(), file, line));
          out.push_back({key, *value,
                         show_text(file, 4096) + ":" + std::to_string(line) + " (service " +
                             show_text(service, 60) + ")"});
        }
      }
      if (out.size() > kMaxEnvVars)
        return fail(at(file, line, "at most " + std::to_string(kMaxEnvVars) + " variables"));
      continue;
    }
    env_indent.reset();
    env_item_indent.reset();
    form = 0;
    while (!open.empty() && open.back().indent >= ind) open.pop_back();
    if (l.front() == '-') continue;  // a list item outside environment: not read
    const std::size_t colon = l.find(':');
    if (colon == std::string_view::npos) continue;  // a continuation of something not read
    const std::string key(trim(l.substr(0, colon)));
    if (open.size() == kMaxIndentLevels) return fail(at(file, n + 1, "nesting deeper than 64 levels"));
    open.push_back({ind, key});
    const std::string_view rest = trim(l.substr(colon + 1));
    // services: <name>: environment:
    if (key == "environment" && open.size() == 3 && open[0].key == "services") {
      if (!rest.empty() && rest.front() != '#') {
        GIDPOLICY_TRYV(refuse_yaml_features(rest, file, n + 1));
        return fail(at(file, n + 1, "expected environment: followed by an indented list or map"));
      }
      env_indent = ind;
      service = open[1].key;
    }
  }
  return out;
}

bool looks_like_compose(std::string_view text, const std::string& file) {
  const auto ends = [&](std::string_view s) {
    return file.size() >= s.size() && file.compare(file.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".yml") || ends(".yaml")) return true;
  std::size_t p = 0;
  while (p < text.size()) {
    const std::size_t e = text.find('\n', p);
    const std::string_view l = text.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p);
    if (trim(l) == "services:" && !l.empty() && l.front() == 's') return true;
    if (e == std::string_view::npos) break;
    p = e + 1;
  }
  return false;
}

}  // namespace

result<std::vector<EnvAssignment>> parse_env_file(std::string_view text, const std::string& file,
                                                  const EnvLookup& env) {
  if (text.size() > kMaxEnvFileBytes)
    return fail(errc::invalid_argument,
                show_text(file, 4096) + ": larger than " + std::to_string(kMaxEnvFileBytes) + " bytes");
  if (text.find('\0') != std::string_view::npos)
    return fail(errc::parse_error, show_text(file, 4096) + ": binary data (a NUL byte)");
  std::vector<std::string_view> lines;
  std::size_t p = 0;
  while (p <= text.size()) {
    const std::size_t e = text.find('\n', p);
    lines.push_back(text.substr(p, e == std::string_view::npos ? std::string_view::npos : e - p));
    if (lines.size() > kMaxEnvLines)
      return fail(errc::invalid_argument,
                  show_text(file, 4096) + ": more than " + std::to_string(kMaxEnvLines) + " lines");
    if (e == std::string_view::npos) break;
    p = e + 1;
  }
  if (looks_like_compose(text, file)) return parse_compose(lines, file, env);
  return parse_dotenv(lines, file, env);
}

result<std::vector<EnvAssignment>> read_env_file(const std::string& path, const EnvLookup& env) {
  // A regular file only, checked on the descriptor before any read: a FIFO (or a device)
  // would make a stream read block until a writer comes, which may be never. O_NONBLOCK keeps
  // open() itself from waiting for a FIFO's writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return fail(errc::io_error,
                show_text(path, 4096) + ": cannot be read: " + std::generic_category().message(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(errc::io_error, show_text(path, 4096) + ": not a regular file (an env file is read whole)");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxEnvFileBytes) {
    ::close(fd);
    return fail(errc::invalid_argument,
                show_text(path, 4096) + ": larger than " + std::to_string(kMaxEnvFileBytes) + " bytes");
  }
  // One byte past the bound: a file that grew since fstat is refused, not cut.
  std::string text(kMaxEnvFileBytes + 1, '\0');
  std::size_t have = 0;
  while (have < text.size()) {
    const ssize_t got = ::read(fd, text.data() + have, text.size() - have);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      return fail(errc::io_error,
                  show_text(path, 4096) + ": read error: " + std::generic_category().message(err));
    }
    if (got == 0) break;
    have += static_cast<std::size_t>(got);
  }
  ::close(fd);
  text.resize(have);
  return parse_env_file(text, path, env);
}

result<std::vector<LaunchSetting>> read_launch_settings(bool use_env,
                                                        const std::optional<std::string>& env_file) {
  std::vector<LaunchSetting> out;
  const EnvLookup lookup = [use_env](const std::string& name) -> std::optional<std::string> {
    if (!use_env) return std::nullopt;
    if (const char* v = std::getenv(name.c_str())) return std::string(v);
    return std::nullopt;
  };
  const auto names = launch_variables();
  if (use_env)
    for (const std::string_view n : names)
      if (auto v = lookup(std::string(n))) out.push_back({std::string(n), *v, "the environment"});
  if (env_file) {
    auto vars = read_env_file(*env_file, lookup);
    if (!vars) return vars.error();
    for (auto& a : vars.value())
      if (std::find(names.begin(), names.end(), a.name) != names.end())
        out.push_back({a.name, a.value, show_text(a.origin)});
  }
  return out;
}

}  // namespace gidpolicy::cli
