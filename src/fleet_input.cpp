// Fleet input: reading host snapshot files (parsed by fleet_snapshot.cpp) and JACCL device files.
#include <gidpolicy/fleet.hpp>

#include "formats/text.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace gidpolicy::fleet {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// A JACCL device file: array -> rank -> entry (array of names) (3).
constexpr int kMaxDevicesDepth = 4;
constexpr std::size_t kMaxJacclRanks = 4096;
constexpr std::size_t kMaxJacclNames = 16;
constexpr std::size_t kMaxJacclFileBytes = std::size_t{64} << 20;

/// The deepest nesting of arrays/objects in a JSON text (strings skipped), or -1 past `limit`.
int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return -1;
      deepest = std::max(deepest, depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

/// "src:3:15: invalid JSON: ..." with the line and column of a syntax error.
Error syntax_error(std::string_view text, std::string_view source, const Json::parse_error& e) {
  const std::size_t off = e.byte > 0 ? e.byte - 1 : 0;
  std::string what = e.what();
  // nlohmann's message repeats the position; keep its last part (what went wrong).
  if (auto p = what.find(": syntax error"); p != std::string::npos) what = what.substr(p + 2);
  return Error(errc::parse_error, std::string(source) + ":" + formats::detail::line_column(text, off) +
                                      ": invalid JSON: " + what);
}

result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  // One open, one fstat, one read in the common case: 10,000 small files are mostly syscalls.
  // O_NONBLOCK: a FIFO without a writer would block open() itself, before fstat can refuse it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(errc::io_error,
                path + ": cannot open: " + std::error_code(errno, std::generic_category()).message());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(errc::io_error, path + ": not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return fail(errc::invalid_argument, path + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::string data(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t have = 0;
  // Read what fstat promised and check for more: the file may grow while being read.
  while (true) {
    if (have == data.size()) {
      if (data.size() >= max_bytes + 1) break;
      data.resize(std::min(max_bytes + 1, std::max<std::size_t>(data.size() * 2, 4096)));
    }
    const ssize_t got = ::read(fd, data.data() + have, data.size() - have);
    if (got < 0) {
      if (errno == EINTR) continue;
      const auto ec = std::error_code(errno, std::generic_category());
      ::close(fd);
      return fail(errc::io_error, path + ": read error: " + ec.message());
    }
    if (got == 0) break;
    have += static_cast<std::size_t>(got);
  }
  ::close(fd);
  if (have > max_bytes)
    return fail(errc::invalid_argument, path + ": larger than " + std::to_string(max_bytes) + " bytes");
  data.resize(have);
  return data;
}

}  // namespace

result<std::vector<HostSnapshot>> read_snapshots(std::span<const std::string> args,
                                                 const ReadLimits& limits) {
  struct Item {
    std::string path, host;
  };
  std::vector<Item> items;
  for (const auto& arg : args) {
    std::string path = arg, host;
    // HOST=FILE, unless the whole argument names an existing file (a path may contain '=').
    if (auto eq = arg.find('='); eq != std::string::npos && eq > 0) {
      std::error_code ec;
      if (!fs::exists(arg, ec)) {
        host = arg.substr(0, eq);
        path = arg.substr(eq + 1);
      }
    }
    std::error_code ec;
    if (host.empty() && fs::is_directory(path, ec)) {
      std::vector<std::string> files;
      for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const std::string name = it->path().filename().string();
        if (name.size() > 5 && name.ends_with(".json")) files.push_back(it->path().string());
        if (files.size() > limits.max_hosts)
          return fail(errc::invalid_argument,
                      path + ": more than " + std::to_string(limits.max_hosts) + " host files");
      }
      if (ec) return fail(errc::io_error, path + ": cannot list: " + ec.message());
      if (files.empty())
        return fail(errc::invalid_argument, path + ": no *.json host snapshot in the directory");
      std::sort(files.begin(), files.end(),
                [](const std::string& a, const std::string& b) { return natural_less(a, b); });
      for (auto& f : files) items.push_back({std::move(f), {}});
    } else {
      items.push_back({path, host});
    }
    if (items.size() > limits.max_hosts)
      return fail(errc::invalid_argument, "more than " + std::to_string(limits.max_hosts) + " hosts");
  }

  std::vector<std::optional<result<HostSnapshot>>> out(items.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (std::size_t i = next++; i < items.size() && !failed; i = next++) {
      auto text = read_file(items[i].path, limits.max_file_bytes);
      if (!text) {
        out[i] = result<HostSnapshot>(text.error());
        failed = true;
        continue;
      }
      out[i] = parse_snapshot(text.value(), items[i].path, items[i].host, limits);
      if (!*out[i]) failed = true;
    }
  };
  const unsigned threads = std::max(
      1u, std::min({limits.threads, 64u, static_cast<unsigned>(std::min<std::size_t>(items.size(), 64))}));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();

  std::vector<HostSnapshot> hosts;
  hosts.reserve(items.size());
  for (auto& r : out) {
    if (!r) continue;  // not reached: another file failed first
    if (!*r) return fail(r->error());
  }
  if (failed) return fail(errc::io_error, "reading the host snapshots failed");
  std::map<std::string, std::size_t> seen;
  for (auto& r : out) {
    HostSnapshot h = std::move(*r).value();
    auto [it, fresh] = seen.try_emplace(h.host, hosts.size());
    if (!fresh)
      return fail(errc::invalid_argument, "host '" + h.host + "' appears twice: " + hosts[it->second].source +
                                              " and " + h.source + " (name one with HOST=FILE)");
    hosts.push_back(std::move(h));
  }
  return hosts;
}

// ---------------------------------------------------------------------------------------------
bool JacclDevices::valid_mesh(std::string* why) const {
  auto no = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  const std::size_t n = ranks();
  if (n < 2) return no("fewer than two ranks");
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j && !names[i][j].empty())
        return no("rank " + std::to_string(i) + " names a device to itself");
      if (i != j && names[i][j].empty())
        return no("rank " + std::to_string(i) + " has no device to rank " + std::to_string(j));
    }
  return true;
}

bool JacclDevices::valid_ring(std::string* why) const {
  auto no = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  const std::size_t n = ranks();
  if (n < 2) return no("fewer than two ranks");
  const std::size_t conns = names[0][1].size();
  if (conns == 0) return no("rank 0 has no device to rank 1");
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t left = (i + n - 1) % n, right = (i + 1) % n;
    for (std::size_t d : {left, right})
      if (names[i][d].size() != conns)
        return no("rank " + std::to_string(i) + " has " + std::to_string(names[i][d].size()) +
                  " devices to rank " + std::to_string(d) + ", not " + std::to_string(conns));
  }
  return true;
}

result<JacclDevices> parse_jaccl_devices(std::string_view text, std::string_view source) {
  const std::string src(source);
  if (nesting_depth(text, kMaxDevicesDepth) < 0)
    return fail(errc::parse_error,
                src + ": nested deeper than a JACCL device file (an array of arrays of names)");
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return fail(syntax_error(text, source, e));
  }
  if (!doc.is_array())
    return fail(errc::invalid_field, src + ": the device file should start with an array (JACCL's rule)");
  const std::size_t n = doc.size();
  if (n > kMaxJacclRanks)
    return fail(errc::invalid_field,
                src + ": " + std::to_string(n) + " ranks (at most " + std::to_string(kMaxJacclRanks) + ")");
  JacclDevices d;
  d.names.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Json& row = doc[i];
    const std::string at = src + ": [" + std::to_string(i) + "]";
    if (!row.is_array())
      return fail(errc::invalid_field, at + ": expected an array of devices, one per rank");
    if (row.size() != n)
      return fail(errc::invalid_field, at + ": has " + std::to_string(row.size()) +
                                           " entries; every rank needs one per rank (" + std::to_string(n) +
                                           ")");
    d.names[i].resize(n);
    for (std::size_t j = 0; j < n; ++j) {
      const Json& e = row[j];
      const std::string here = at + "[" + std::to_string(j) + "]";
      auto add = [&](const Json& name) -> result<void> {
        if (!name.is_string()) return fail(errc::invalid_field, here + ": device names should be strings");
        const auto& s = name.get_ref<const std::string&>();
        if (s.empty() || s.size() > 64)
          return fail(errc::invalid_field, here + ": expected a device name of 1-64 characters");
        d.names[i][j].push_back(s);
        return success();
      };
      if (e.is_null()) continue;
      if (e.is_string()) {
        GIDPOLICY_TRYV(add(e));
      } else if (e.is_array()) {
        if (e.size() > kMaxJacclNames)
          return fail(errc::invalid_field, here + ": " + std::to_string(e.size()) + " names (at most " +
                                               std::to_string(kMaxJacclNames) + ")");
        for (const auto& name : e) GIDPOLICY_TRYV(add(name));
      } else {
        return fail(errc::invalid_field, here + ": expected null, a device name or an array of names");
      }
    }
  }
  return d;
}

result<JacclDevices> read_jaccl_devices(const std::string& path) {
  GIDPOLICY_TRY(text, read_file(path, kMaxJacclFileBytes));
  return parse_jaccl_devices(text, path);
}

}  // namespace gidpolicy::fleet
