// Fleet input: reading host snapshot files (parsed by fleet_snapshot.cpp) and JACCL device files.
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/names.hpp>

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
#include <memory>
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
  // Read what fstat promised and check for more: the file may grow while being read. The check
  // reads into a small buffer first, so a file that did not grow costs its own size in memory,
  // not twice that.
  char probe[4096];
  while (true) {
    char* into = data.data() + have;
    std::size_t room = data.size() - have;
    if (room == 0) {
      if (data.size() >= max_bytes + 1) break;
      into = probe;
      room = sizeof probe;
    }
    const ssize_t got = ::read(fd, into, room);
    if (got < 0) {
      if (errno == EINTR) continue;
      const auto ec = std::error_code(errno, std::generic_category());
      ::close(fd);
      return fail(errc::io_error, path + ": read error: " + ec.message());
    }
    if (got == 0) break;
    if (into == probe) {
      const auto more = static_cast<std::size_t>(got);
      data.resize(std::min(max_bytes + 1, std::max({data.size() * 2, have + more, std::size_t{4096}})));
      const std::size_t keep = std::min(more, data.size() - have);
      std::copy_n(probe, keep, data.data() + have);
      have += keep;
      continue;
    }
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
    // The name rule (names.hpp): paths and host names reach messages and reports.
    if (auto why = name_problem(path, NameKind::path))
      return fail(errc::invalid_argument, "host file " + quote_name(path, 200) + ": " + *why);
    if (!host.empty())
      if (auto why = name_problem(host, NameKind::host))
        return fail(errc::invalid_argument,
                    quote_name(arg, 200) + ": host name " + quote_name(host, 80) + " (HOST=FILE): " + *why);
    std::error_code ec;
    if (host.empty() && fs::is_directory(path, ec)) {
      std::vector<std::string> files;
      for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const std::string name = it->path().filename().string();
        if (!(name.size() > 5 && name.ends_with(".json"))) continue;
        if (auto why = name_problem(name, NameKind::path))
          return fail(errc::invalid_argument, path + ": file name " + quote_name(name, 200) + ": " + *why);
        files.push_back(it->path().string());
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

result<bool> JacclDevices::uses_ring(bool prefer_ring) const {
  std::string why_mesh, why_ring;
  const bool mesh_ok = valid_mesh(&why_mesh);
  const bool ring_ok = valid_ring(&why_ring);
  if (!mesh_ok && !ring_ok)
    return fail(errc::invalid_argument, "the JACCL device file forms neither a valid mesh (" + why_mesh +
                                            ") nor a valid ring (" + why_ring + "): JACCL would refuse it");
  return ring_ok && (prefer_ring || !mesh_ok);
}

std::vector<std::string> JacclDevices::devices_of(std::size_t rank, bool ring) const {
  std::vector<std::string> used;
  const std::size_t n = ranks();
  if (rank >= n) return used;
  if (ring) {
    const std::size_t left = (rank + n - 1) % n, right = (rank + 1) % n;
    for (const auto& d : names[rank][left]) used.push_back(d);
    for (const auto& d : names[rank][right]) used.push_back(d);
  } else {
    for (std::size_t j = 0; j < n; ++j)
      if (j != rank && !names[rank][j].empty()) used.push_back(names[rank][j][0]);
  }
  std::sort(used.begin(), used.end(),
            [](const std::string& x, const std::string& y) { return natural_less(x, y); });
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

namespace {

/// What a cheap pass over a device file finds before anything is built: its deepest nesting
/// (strings skipped; -1 past `limit`) and the number of entries of the top-level array (its
/// ranks), counting at most `max_ranks + 1`. No allocation: a 64 MiB file costs one read pass.
struct DevicesShape {
  int depth = 0;
  bool array = false;     // the document is an array (else the parser says what it is)
  bool complete = false;  // its top-level array closes (else the text is cut short)
  std::size_t ranks = 0;
};
DevicesShape devices_shape(std::string_view text, int limit, std::size_t max_ranks) {
  DevicesShape out;
  int depth = 0;
  bool in_string = false, entry = false;  // entry: the current top-level entry has begun
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (depth == 0 && !out.array) {
      if (c != '[') return out;
      out.array = true;
    }
    if (depth == 1 && c != ',' && c != ']' && !entry) {
      entry = true;
      if (++out.ranks > max_ranks) return out;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) {
        out.depth = -1;
        return out;
      }
      out.depth = std::max(out.depth, depth);
    } else if (c == ']' || c == '}') {
      if (--depth == 0) {  // the top-level array closed
        out.complete = true;
        return out;
      }
    } else if (c == ',' && depth == 1) {
      entry = false;
    }
  }
  return out;
}

/// Builds the device matrix straight from the parser's events (no JSON tree: a tree of a
/// 4,096-rank file is ~20 bytes of input per ~100 bytes of nodes), refusing a row as soon as
/// it is longer than the rank count the shape pass found.
class DevicesSax : public nlohmann::json_sax<Json> {
 public:
  /// `ranks`: the rank count the shape pass found; `known` false when the text was cut short
  /// (then rows are only bounded by the rank limit, and the parser reports where it ends).
  DevicesSax(std::string_view source, std::size_t ranks, bool known)
      : src_(source), n_(ranks), known_(known) {
    if (known) d_.names.reserve(ranks);
  }

  /// Streaming (parse_jaccl_row): every row but `keep` is dropped once checked, and JACCL's
  /// mesh and ring checks are made row by row, in valid_mesh()'s and valid_ring()'s order.
  void stream(std::optional<std::size_t> keep) {
    streaming_ = true;
    keep_ = keep;
  }
  struct Checks {
    bool mesh = true, ring = true;
    std::string why_mesh, why_ring;
    std::size_t conns = 0;
  } checks_;

  bool null() override { return value(nullptr); }
  bool boolean(bool) override { return wrong("a boolean"); }
  bool number_integer(number_integer_t) override { return wrong("a number"); }
  bool number_unsigned(number_unsigned_t) override { return wrong("a number"); }
  bool number_float(number_float_t, const string_t&) override { return wrong("a number"); }
  bool binary(binary_t&) override { return wrong("binary data"); }
  bool string(string_t& s) override { return value(&s); }
  bool start_object(std::size_t) override { return wrong("an object"); }
  bool key(string_t&) override { return wrong("an object"); }
  bool end_object() override { return wrong("an object"); }

  bool start_array(std::size_t) override {
    switch (depth_++) {
      case 0:
        return true;
      case 1:  // a rank's row
        if (d_.names.size() == n_)
          return stop(row_at(d_.names.size()) + ": one rank more than the " + std::to_string(n_) +
                      " counted");
        d_.names.emplace_back();
        if (known_) d_.names.back().reserve(n_);
        return true;
      case 2:  // an entry's list of names
        if (!cell()) return false;
        in_list_ = true;
        return true;
      default:
        return stop(here() + ": expected null, a device name or an array of names");
    }
  }
  bool end_array() override {
    switch (--depth_) {
      case 1: {
        const std::size_t have = d_.names.back().size();
        if (known_ && have != n_)
          return stop(row_at(d_.names.size() - 1) + ": has " + std::to_string(have) +
                      " entries; every rank needs one per rank (" + std::to_string(n_) + ")");
        if (streaming_) check_and_drop(d_.names.size() - 1);
        return true;
      }
      case 2:
        in_list_ = false;
        return true;
      default:
        return true;
    }
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    syntax_ = true;
    byte_ = position;
    what_ = ex.what();
    return false;
  }

  [[nodiscard]] bool failed() const noexcept { return error_.has_value() || syntax_; }
  std::optional<Error> error_;
  bool syntax_ = false;
  std::size_t byte_ = 0;
  std::string what_;
  JacclDevices d_;

 private:
  std::string row_at(std::size_t i) const { return std::string(src_) + ": [" + std::to_string(i) + "]"; }
  bool stop(std::string what, errc code = errc::invalid_field) {
    error_ = Error(code, std::move(what));
    return false;
  }
  bool wrong(const char* what) {
    if (depth_ == 0)
      return stop(std::string(src_) + ": the device file should start with an array (JACCL's rule)");
    if (depth_ == 1) return stop(row_at(d_.names.size()) + ": expected an array of devices, one per rank");
    if (in_list_) return stop(here() + ": device names should be strings, found " + what);
    return stop(here() + ": expected null, a device name or an array of names, found " + what);
  }
  /// A new entry in the current row (refused past the rank count).
  bool cell() {
    auto& row = d_.names.back();
    if (row.size() == n_)
      return stop(row_at(d_.names.size() - 1) + ": has more than " + std::to_string(n_) +
                  " entries; every rank needs one per rank (" + std::to_string(n_) + ")");
    row.emplace_back();
    return true;
  }
  /// null or a string, as a whole entry or inside an entry's list.
  bool value(const string_t* s) {
    if (depth_ == 0) return wrong(s ? "a string" : "null");
    if (depth_ == 1) return stop(row_at(d_.names.size()) + ": expected an array of devices, one per rank");
    if (!in_list_) {
      if (!cell()) return false;
      if (!s) return true;
    } else if (!s) {
      return wrong("null");
    }
    auto& names = d_.names.back().back();
    if (names.size() == kMaxJacclNames)
      return stop(here(true) + ": more than " + std::to_string(kMaxJacclNames) + " names (at most " +
                  std::to_string(kMaxJacclNames) + ")");
    // The name rule (names.hpp): device names are printed in every report line.
    if (auto why = name_problem(*s, NameKind::device))
      return stop(here(true) + ": device name " + quote_name(*s) + ": " + *why);
    names.push_back(*s);
    return true;
  }
  /// "[i][j]" of the entry being read: the last one begun (inside a list, or once a value made
  /// it), else the next one.
  std::string here(bool begun = false) const {
    const auto& row = d_.names.back();
    begun = begun || in_list_;
    return row_at(d_.names.size() - 1) + "[" + std::to_string(begun ? row.size() - 1 : row.size()) + "]";
  }

  /// Row `i` is complete (n_ entries, the rank count known: a cut-short text fails later):
  /// the checks of valid_mesh() and valid_ring() on it, then it is dropped unless kept.
  void check_and_drop(std::size_t i) {
    auto& row = d_.names.back();
    const std::size_t n = n_;
    // A text cut short (known_ false) has no rank count to check against, and fails anyway.
    if (known_ && n >= 2) {
      for (std::size_t j = 0; checks_.mesh && j < n; ++j) {
        if (i == j && !row[j].empty()) {
          checks_.mesh = false;
          checks_.why_mesh = "rank " + std::to_string(i) + " names a device to itself";
        } else if (i != j && row[j].empty()) {
          checks_.mesh = false;
          checks_.why_mesh = "rank " + std::to_string(i) + " has no device to rank " + std::to_string(j);
        }
      }
      if (i == 0) {
        checks_.conns = row[1].size();
        if (checks_.conns == 0) {
          checks_.ring = false;
          checks_.why_ring = "rank 0 has no device to rank 1";
        }
      }
      const std::size_t left = (i + n - 1) % n, right = (i + 1) % n;
      for (std::size_t d : {left, right})
        if (checks_.ring && row[d].size() != checks_.conns) {
          checks_.ring = false;
          checks_.why_ring = "rank " + std::to_string(i) + " has " + std::to_string(row[d].size()) +
                             " devices to rank " + std::to_string(d) + ", not " +
                             std::to_string(checks_.conns);
        }
    }
    if (!keep_ || *keep_ != i) std::vector<std::vector<std::string>>().swap(row);
  }

  std::string_view src_;
  std::size_t n_;
  bool known_;
  int depth_ = 0;
  bool in_list_ = false;
  bool streaming_ = false;
  std::optional<std::size_t> keep_;
};

}  // namespace

namespace {

/// The two passes both readers make: the shape (no allocation), then the parser's events into
/// `sax` (built whole, or streamed).
result<void> run_devices(std::string_view text, std::string_view source,
                         std::optional<std::size_t> expected_ranks, std::optional<std::size_t>* keep,
                         std::unique_ptr<DevicesSax>& sax) {
  const std::string src(source);
  // First the shape, without building anything: a file nested deeper than the format, with
  // more ranks than the bound, or with another rank count than the hosts given is refused
  // after one pass over its bytes.
  const DevicesShape shape = devices_shape(text, kMaxDevicesDepth, kMaxJacclRanks);
  if (shape.depth < 0)
    return fail(errc::parse_error,
                src + ": nested deeper than a JACCL device file (an array of arrays of names)");
  if (shape.ranks > kMaxJacclRanks)
    return fail(errc::invalid_field, src + ": more than " + std::to_string(kMaxJacclRanks) +
                                         " ranks (at most " + std::to_string(kMaxJacclRanks) + ")");
  if (shape.array && shape.complete && expected_ranks && shape.ranks != *expected_ranks)
    return fail(errc::invalid_argument, src + ": " + std::to_string(shape.ranks) + " ranks but " +
                                            std::to_string(*expected_ranks) +
                                            " hosts were given (one host per rank, in rank order)");
  sax = std::make_unique<DevicesSax>(source, shape.complete ? shape.ranks : kMaxJacclRanks, shape.complete);
  if (keep) sax->stream(*keep);
  const bool ok = Json::sax_parse(text.begin(), text.end(), sax.get());
  if (sax->error_) return fail(*sax->error_);
  if (sax->syntax_ || !ok) {
    const std::size_t off = sax->byte_ > 0 ? sax->byte_ - 1 : 0;
    std::string what = sax->what_;
    // nlohmann's message repeats the position; keep its last part (what went wrong).
    if (auto p = what.find(": syntax error"); p != std::string::npos) what = what.substr(p + 2);
    return fail(errc::parse_error,
                src + ":" + formats::detail::line_column(text, off) + ": invalid JSON: " + what);
  }
  if (shape.complete && sax->d_.names.size() != shape.ranks)  // not reached: both passes count alike
    return fail(errc::parse_error, src + ": the rank count changed between passes");
  return success();
}

}  // namespace

result<JacclDevices> parse_jaccl_devices(std::string_view text, std::string_view source,
                                         std::optional<std::size_t> expected_ranks) {
  std::unique_ptr<DevicesSax> sax;
  GIDPOLICY_TRYV(run_devices(text, source, expected_ranks, nullptr, sax));
  return std::move(sax->d_);
}

result<JacclDeviceRow> parse_jaccl_row(std::string_view text, std::optional<std::size_t> rank,
                                       std::string_view source) {
  std::unique_ptr<DevicesSax> sax;
  std::optional<std::size_t> keep = rank;
  GIDPOLICY_TRYV(run_devices(text, source, std::nullopt, &keep, sax));
  JacclDeviceRow out;
  out.ranks = sax->d_.names.size();
  if (out.ranks < 2) {
    sax->checks_ = {false, false, "fewer than two ranks", "fewer than two ranks", 0};
  }
  out.mesh = sax->checks_.mesh;
  out.ring = sax->checks_.ring;
  out.why_not_mesh = std::move(sax->checks_.why_mesh);
  out.why_not_ring = std::move(sax->checks_.why_ring);
  if (rank && *rank < out.ranks) {
    out.rank = *rank;
    out.names = std::move(sax->d_.names[*rank]);
  }
  return out;
}

result<bool> JacclDeviceRow::uses_ring(bool prefer_ring) const {
  if (!mesh && !ring)
    return fail(errc::invalid_argument, "the JACCL device file forms neither a valid mesh (" + why_not_mesh +
                                            ") nor a valid ring (" + why_not_ring +
                                            "): JACCL would refuse it");
  return ring && (prefer_ring || !mesh);
}

std::vector<std::string> JacclDeviceRow::devices(bool use_ring) const {
  if (!rank) return {};
  // The same rule as JacclDevices::devices_of, on a one-row matrix placed at its rank.
  JacclDevices one;
  one.names.resize(ranks);
  one.names[*rank] = names;
  return one.devices_of(*rank, use_ring);
}

result<JacclDeviceRow> read_jaccl_row(const std::string& path, std::optional<std::size_t> rank) {
  if (auto why = name_problem(path, NameKind::path))
    return fail(errc::invalid_argument, "device file " + quote_name(path, 200) + ": " + *why);
  GIDPOLICY_TRY(text, read_file(path, kMaxJacclFileBytes));
  return parse_jaccl_row(text, rank, path);
}

result<std::size_t> parse_rank(std::string_view text) {
  const bool digits = !text.empty() && text.size() <= 4 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  std::size_t rank = 0;
  if (digits)
    for (char c : text) rank = rank * 10 + static_cast<std::size_t>(c - '0');
  if (!digits || rank >= kMaxJacclRanks)
    return fail(errc::invalid_argument,
                "expected a rank 0.." + std::to_string(kMaxJacclRanks - 1) + " (decimal digits only)");
  return rank;
}

result<JacclDevices> read_jaccl_devices(const std::string& path, std::optional<std::size_t> expected_ranks) {
  if (auto why = name_problem(path, NameKind::path))
    return fail(errc::invalid_argument, "device file " + quote_name(path, 200) + ": " + *why);
  GIDPOLICY_TRY(text, read_file(path, kMaxJacclFileBytes));
  return parse_jaccl_devices(text, path, expected_ranks);
}

result<MlxHostfile> read_mlx_hostfile(const std::string& path, std::optional<std::size_t> expected_hosts) {
  if (auto why = name_problem(path, NameKind::path))
    return fail(errc::invalid_argument, "hostfile " + quote_name(path, 200) + ": " + *why);
  // A hostfile is a few hundred bytes per host: 16 MiB holds 4,096 hosts many times over.
  GIDPOLICY_TRY(text, read_file(path, std::size_t{16} << 20));
  return parse_mlx_hostfile(text, path, expected_hosts);
}

namespace {

/// The shape decides: JACCL's matrix is an array of arrays; a hostfile is an object, or (as
/// older MLX versions wrote it) an array of host objects.
bool hostfile_shaped(std::string_view text) {
  std::size_t i = 0;
  const auto skip_ws = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  };
  skip_ws();
  bool hostfile = i < text.size() && text[i] == '{';
  if (i < text.size() && text[i] == '[') {
    ++i;
    skip_ws();
    hostfile = i < text.size() && text[i] == '{';
  }
  return hostfile;
}

}  // namespace

result<JacclDevices> read_device_file(const std::string& path, std::optional<std::size_t> expected_ranks) {
  if (auto why = name_problem(path, NameKind::path))
    return fail(errc::invalid_argument, "device file " + quote_name(path, 200) + ": " + *why);
  GIDPOLICY_TRY(text, read_file(path, kMaxJacclFileBytes));
  if (!hostfile_shaped(text)) return parse_jaccl_devices(text, path, expected_ranks);
  GIDPOLICY_TRY(f, parse_mlx_hostfile(text, path, expected_ranks));
  return f.devices();
}

result<JacclDeviceRow> read_device_file_row(const std::string& path, std::optional<std::size_t> rank) {
  if (auto why = name_problem(path, NameKind::path))
    return fail(errc::invalid_argument, "device file " + quote_name(path, 200) + ": " + *why);
  GIDPOLICY_TRY(text, read_file(path, kMaxJacclFileBytes));
  if (!hostfile_shaped(text)) return parse_jaccl_row(text, rank, path);
  // A hostfile is bounded by its own reader (4,096 hosts, a row each only as long as the hosts).
  GIDPOLICY_TRY(f, parse_mlx_hostfile(text, path));
  const JacclDevices d = f.devices();
  JacclDeviceRow out;
  out.ranks = d.ranks();
  out.mesh = d.valid_mesh(&out.why_not_mesh);
  out.ring = d.valid_ring(&out.why_not_ring);
  if (rank && *rank < out.ranks) {
    out.rank = *rank;
    out.names = d.names[*rank];
  }
  return out;
}

}  // namespace gidpolicy::fleet
