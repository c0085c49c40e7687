// The hostfile `mlx.distributed_config` writes (fleet.hpp, parse_mlx_hostfile): read with the
// strict one-pass cursor the snapshot reader uses (fleet_json_cursor.hpp), so that every error,
// a field's as well as the syntax's, names the line and column where it is, and nothing is built
// past a bound.
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/names.hpp>

#include "fleet_json_cursor.hpp"
#include "formats/text.hpp"

#include <map>

namespace gidpolicy::fleet {
namespace {

using detail::Cursor;

constexpr std::size_t kMaxHostfileHosts = 4096;
constexpr std::size_t kMaxHostfileIps = 64;
constexpr std::size_t kMaxHostfileNames = 16;
constexpr std::size_t kMaxHostfileIpText = 64;  // "fe80::1%en3" and friends; an address is at most ~50

class HostfileReader {
 public:
  HostfileReader(std::string_view text, std::string_view source) : text_(text), src_(source), c_(text) {}

  result<MlxHostfile> read() {
    MlxHostfile out;
    const char first = c_.peek();
    if (first == '[') {
      GIDPOLICY_TRYV(hosts(out, "hosts"));  // the bare array older MLX versions wrote
    } else if (first == '{') {
      c_.consume('{');
      bool have_hosts = false;
      const std::size_t at = c_.offset();
      if (!c_.empty_container('}')) {
        GIDPOLICY_TRY(last, last_members(1));
        std::string key;
        for (bool more = true; more;) {
          if (!c_.string(key) || !c_.consume(':')) return fail(syntax());
          c_.peek();
          if (last.at(key) != c_.offset()) {
            // An earlier value of a key given again: Python's json (which MLX reads the file
            // with) keeps the last one, and needs the others only to be JSON.
            if (!c_.skip(1)) return fail(syntax());
          } else if (key == "hosts") {
            have_hosts = true;
            GIDPOLICY_TRYV(hosts(out, "hosts"));
          } else if (key == "backend") {
            GIDPOLICY_TRYV(string_field("backend", out.backend, 64));
          } else if (!c_.skip(1)) {  // "envs" and whatever newer versions add
            return fail(syntax());
          }
          if (!c_.next_member('}', more)) return fail(syntax());
        }
      }
      if (!have_hosts)
        return fail(field_at(at, "hosts", "missing: a hostfile lists its hosts under \"hosts\""));
    } else if (c_.at_end()) {
      return fail(errc::parse_error,
                  std::string(src_) + ": empty: expected an mlx.distributed_config hostfile");
    } else {
      return fail(field(
          "", "expected an mlx.distributed_config hostfile (an object with \"hosts\"), found " + c_.kind()));
    }
    if (!c_.at_end()) {
      c_.fail_here("unexpected text after the document");
      return fail(syntax());
    }
    // Every "rdma" row has one entry per host (JACCL's matrix is square).
    for (std::size_t i = 0; i < out.hosts.size(); ++i) {
      const auto& row = out.hosts[i].rdma;
      if (!row.empty() && row.size() != out.hosts.size())
        return fail(errc::invalid_field,
                    std::string(src_) + ":" + formats::detail::line_column(text_, rdma_at_[i]) + ": hosts[" +
                        std::to_string(i) + "].rdma: has " + std::to_string(row.size()) +
                        " entries; it needs one per host (" + std::to_string(out.hosts.size()) + ")");
    }
    return out;
  }

 private:
  Error syntax() const {
    const auto& e = *c_.error();
    return Error(errc::parse_error, std::string(src_) + ":" + formats::detail::line_column(text_, e.offset) +
                                        ": invalid JSON: " + e.what);
  }
  Error field_at(std::size_t offset, const std::string& path, const std::string& what) const {
    return Error(errc::invalid_field, std::string(src_) + ":" + formats::detail::line_column(text_, offset) +
                                          ": " + (path.empty() ? std::string() : path + ": ") + what);
  }
  Error field(const std::string& path, const std::string& what) const {
    return field_at(c_.offset(), path, what);
  }

  /// Skips the value at the cursor and fails naming what it was instead of `expected`.
  Error wrong(const std::string& path, const std::string& expected) {
    const std::size_t at = c_.offset();
    const std::string k = c_.kind();
    if (!c_.skip(3)) return syntax();
    return field_at(at, path, "expected " + expected + ", found " + k);
  }

  /// With the cursor just inside an object's '{' (at `depth`): each key's last value, by its
  /// offset, read from a copy of the cursor (the object is read twice; the cursor is not moved).
  /// A key given twice keeps its last value, as Python's json.loads keeps it: reading the
  /// values in order and appending would have concatenated two "ips" lists.
  result<std::map<std::string, std::size_t>> last_members(int depth) {
    Cursor scan = c_;
    std::map<std::string, std::size_t> last;
    std::string key;
    for (bool more = true; more;) {
      if (!scan.string(key) || !scan.consume(':')) {
        c_ = scan;
        return fail(syntax());
      }
      scan.peek();
      last[key] = scan.offset();
      if (!scan.skip(depth) || !scan.next_member('}', more)) {
        c_ = scan;
        return fail(syntax());
      }
    }
    return last;
  }

  result<void> string_field(const std::string& path, std::string& out, std::size_t max) {
    if (c_.peek() != '"') return fail(wrong(path, "a string"));
    const std::size_t at = c_.offset();
    if (!c_.string(out)) return fail(syntax());
    if (out.size() > max) return fail(field_at(at, path, "longer than " + std::to_string(max) + " bytes"));
    return success();
  }

  result<void> hosts(MlxHostfile& out, const std::string& path) {
    if (c_.peek() != '[') return fail(wrong(path, "an array of hosts"));
    c_.consume('[');
    if (c_.empty_container(']')) return success();
    for (bool more = true; more;) {
      const std::string at = path + "[" + std::to_string(out.hosts.size()) + "]";
      if (out.hosts.size() == kMaxHostfileHosts)
        return fail(field(at, "more than " + std::to_string(kMaxHostfileHosts) + " hosts (at most " +
                                  std::to_string(kMaxHostfileHosts) + ")"));
      GIDPOLICY_TRY(h, host(at));
      out.hosts.push_back(std::move(h));
      if (!c_.next_member(']', more)) return fail(syntax());
    }
    return success();
  }

  result<MlxHost> host(const std::string& path) {
    if (c_.peek() != '{')
      return fail(wrong(path, "a host object {\"ssh\": ..., \"ips\": [...], \"rdma\": [...]}"));
    const std::size_t begin = c_.offset();
    c_.consume('{');
    MlxHost h;
    bool have_ssh = false;
    rdma_at_.push_back(begin);
    if (!c_.empty_container('}')) {
      GIDPOLICY_TRY(last, last_members(2));
      std::string key;
      for (bool more = true; more;) {
        if (!c_.string(key) || !c_.consume(':')) return fail(syntax());
        const std::string at = path + "." + key;
        c_.peek();
        if (last.at(key) != c_.offset()) {
          // A key given again: the last value is the one Python's json keeps (see read()).
          if (!c_.skip(2)) return fail(syntax());
        } else if (key == "ssh") {
          const std::size_t where = c_.offset();
          GIDPOLICY_TRYV(string_field(at, h.ssh, kMaxHostName));
          if (auto why = name_problem(h.ssh, NameKind::host))
            return fail(field_at(where, at, "host name " + quote_name(h.ssh) + ": " + *why));
          have_ssh = true;
        } else if (key == "ips") {
          GIDPOLICY_TRYV(ips(at, h.ips));
        } else if (key == "rdma") {
          c_.peek();  // past the white space: the row is where its '[' is
          rdma_at_.back() = c_.offset();
          GIDPOLICY_TRYV(rdma(at, h.rdma));
        } else if (!c_.skip(2)) {
          return fail(syntax());
        }
        if (!c_.next_member('}', more)) return fail(syntax());
      }
    }
    if (!have_ssh)
      return fail(field_at(begin, path + ".ssh", "missing: every host names the machine mlx.launch reaches"));
    return h;
  }

  result<void> ips(const std::string& path, std::vector<std::string>& out) {
    if (c_.peek() != '[') return fail(wrong(path, "an array of addresses"));
    c_.consume('[');
    if (c_.empty_container(']')) return success();
    for (bool more = true; more;) {
      const std::string at = path + "[" + std::to_string(out.size()) + "]";
      if (out.size() == kMaxHostfileIps)
        return fail(field(at, "more than " + std::to_string(kMaxHostfileIps) + " addresses (at most " +
                                  std::to_string(kMaxHostfileIps) + ")"));
      const std::size_t where = c_.offset();
      std::string ip;
      GIDPOLICY_TRYV(string_field(at, ip, kMaxHostfileIpText));
      // An address text (IPv4 or IPv6, an optional %scope): what mlx.launch hands to sockets.
      const std::string_view addr = std::string_view(ip).substr(0, ip.find('%'));
      if (!parse_address(addr))
        return fail(field_at(where, at, quote_name(ip) + " is not an IPv4 or IPv6 address"));
      // A scope names the interface of an IPv6 link-local address; an IPv4 address has none,
      // and reading "10.0.0.1%en3" as 10.0.0.1 (or dropping it) would route somewhere unsaid.
      if (ip.find('%') != std::string::npos && addr.find(':') == std::string_view::npos)
        return fail(field_at(where, at,
                             quote_name(ip) + ": an IPv4 address has no scope (the '%' part); "
                                              "write the address alone"));
      out.push_back(std::move(ip));
      if (!c_.next_member(']', more)) return fail(syntax());
    }
    return success();
  }

  /// null, a device name, or an array of names (JACCL's ring mode: several per neighbour).
  result<void> rdma(const std::string& path, std::vector<std::vector<std::string>>& row) {
    if (c_.peek() != '[') return fail(wrong(path, "an array with one entry per host"));
    c_.consume('[');
    if (c_.empty_container(']')) return success();
    for (bool more = true; more;) {
      const std::string at = path + "[" + std::to_string(row.size()) + "]";
      if (row.size() == kMaxHostfileHosts)
        return fail(field(at, "more than " + std::to_string(kMaxHostfileHosts) +
                                  " entries (one per host, at most " + std::to_string(kMaxHostfileHosts) +
                                  ")"));
      row.emplace_back();
      const char c = c_.peek();
      if (c == 'n') {
        if (!c_.literal("null")) return fail(syntax());
      } else if (c == '"') {
        GIDPOLICY_TRYV(device_name(at, row.back()));
      } else if (c == '[') {
        c_.consume('[');
        if (!c_.empty_container(']')) {
          for (bool more_names = true; more_names;) {
            const std::string name_at = at + "[" + std::to_string(row.back().size()) + "]";
            if (row.back().size() == kMaxHostfileNames)
              return fail(field(name_at, "more than " + std::to_string(kMaxHostfileNames) +
                                             " device names (at most " + std::to_string(kMaxHostfileNames) +
                                             ")"));
            if (c_.peek() != '"') return fail(wrong(name_at, "a device name"));
            GIDPOLICY_TRYV(device_name(name_at, row.back()));
            if (!c_.next_member(']', more_names)) return fail(syntax());
          }
        }
      } else {
        return fail(wrong(at, "null, a device name or an array of device names"));
      }
      if (!c_.next_member(']', more)) return fail(syntax());
    }
    return success();
  }

  result<void> device_name(const std::string& path, std::vector<std::string>& names) {
    const std::size_t where = c_.offset();
    std::string name;
    GIDPOLICY_TRYV(string_field(path, name, kMaxDeviceName + 1));
    if (auto why = name_problem(name, NameKind::device))
      return fail(field_at(where, path, "device name " + quote_name(name) + ": " + *why));
    names.push_back(std::move(name));
    return success();
  }

  std::string_view text_;
  std::string_view src_;
  Cursor c_;
  std::vector<std::size_t> rdma_at_;  // per host: the offset of its "rdma" row (line:column on error only)
};

}  // namespace

JacclDevices MlxHostfile::devices() const {
  JacclDevices d;
  d.names.reserve(hosts.size());
  for (const MlxHost& h : hosts) {
    auto row = h.rdma;
    row.resize(hosts.size());
    d.names.push_back(std::move(row));
  }
  return d;
}

result<MlxHostfile> parse_mlx_hostfile(std::string_view text, std::string_view source,
                                       std::optional<std::size_t> expected_hosts) {
  HostfileReader reader(text, source);
  GIDPOLICY_TRY(f, reader.read());
  if (expected_hosts && f.hosts.size() != *expected_hosts)
    return fail(errc::invalid_argument, std::string(source) + ": " + std::to_string(f.hosts.size()) +
                                            " hosts but " + std::to_string(*expected_hosts) +
                                            " snapshots were given (one per host, in the hostfile's order)");
  return f;
}

}  // namespace gidpolicy::fleet
