// parse_snapshot(): one host's `gidpolicy show --json` text into GidTables, read in one pass.
//
// Why not a JSON DOM: a fleet of 10,000 hosts is ~100 MB of snapshots, and building a tree of
// allocated nodes per file (then walking it) ran at ~40 MB per CPU-second. This reader walks
// the text once, straight into PortInfo/GidEntry, skipping the display keys (`ipv4`, `flags`)
// and any key a newer gidpolicy adds. It is a strict JSON reader all the same: every value is
// checked for well-formedness (escapes, numbers, literals), nesting is bounded, and a syntax
// error names the line and column.
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/names.hpp>

#include "fleet_json_cursor.hpp"
#include "formats/text.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace gidpolicy::fleet {
namespace {

using detail::Cursor;
using detail::kMaxDepth;
using detail::SyntaxError;

/// "[1].entries[4].gid", built only when an error needs it (not once per key read).
struct FieldPath {
  const std::string& base;
  const std::string& key;
  [[nodiscard]] std::string str() const { return base.empty() ? key : base + "." + key; }
};

/// Reads one snapshot; semantic errors carry the field path, syntax errors the offset.
class SnapshotReader {
 public:
  SnapshotReader(std::string_view text, std::string_view source, const ReadLimits& limits)
      : text_(text), src_(source), limits_(limits), c_(text) {}

  result<std::vector<GidTable>> read(std::string& host) {
    std::vector<GidTable> ports;
    const char first = c_.peek();
    if (first == '{' && is_tables_document()) {
      GIDPOLICY_TRY(listed, tables_document(host));
      ports = std::move(listed);
    } else if (first == '{') {
      GIDPOLICY_TRY(t, port("port", host));
      ports.push_back(std::move(t));
    } else if (first == '[') {
      c_.consume('[');
      if (!c_.empty_container(']')) {
        for (bool more = true; more;) {
          if (ports.size() >= limits_.max_ports_per_host)
            return fail(errc::invalid_field, std::string(src_) + ": more than " +
                                                 std::to_string(limits_.max_ports_per_host) + " ports");
          GIDPOLICY_TRY(t, port("[" + std::to_string(ports.size()) + "]", host));
          ports.push_back(std::move(t));
          if (!c_.next_member(']', more)) return fail(syntax_error());
        }
      }
      if (ports.empty()) return fail(errc::invalid_field, std::string(src_) + ": no port listed");
    } else if (c_.at_end()) {
      return fail(errc::parse_error, std::string(src_) + ": empty: expected `gidpolicy show --json` output");
    } else {
      if (!c_.skip(0)) return fail(syntax_error());
      return fail(
          errc::invalid_field,
          std::string(src_) + ": expected `gidpolicy show --json` output (an object or an array of them)");
    }
    if (!c_.at_end()) {
      c_.fail_here("unexpected text after the document");
      return fail(syntax_error());
    }
    return ports;
  }

 private:
  Error syntax_error() const {
    const auto& e = *c_.error();
    return Error(errc::parse_error, std::string(src_) + ":" + formats::detail::line_column(text_, e.offset) +
                                        ": invalid JSON: " + e.what);
  }
  Error field_error(const std::string& path, const std::string& what, errc code = errc::invalid_field) const {
    return Error(code, std::string(src_) + ": " + path + ": " + what);
  }

  /// A string or null into `out` (null leaves it unset).
  result<bool> opt_string(const FieldPath& path, std::string& out) {
    const char c = c_.peek();
    if (c == 'n') {
      if (!c_.literal("null")) return fail(syntax_error());
      return false;
    }
    if (c != '"') {
      const std::string k = c_.kind();
      if (!c_.skip(3)) return fail(syntax_error());
      return fail(field_error(path.str(), "expected a string, found " + k));
    }
    if (!c_.string(out)) return fail(syntax_error());
    return true;
  }
  /// A non-negative integer up to `max`, or null (false).
  result<bool> opt_uint(const FieldPath& path, std::uint64_t max, std::uint64_t& out) {
    const char c = c_.peek();
    if (c == 'n') {
      if (!c_.literal("null")) return fail(syntax_error());
      return false;
    }
    if (c != '-' && (c < '0' || c > '9')) {
      const std::string k = c_.kind();
      if (!c_.skip(3)) return fail(syntax_error());
      return fail(field_error(path.str(), "expected a non-negative integer, found " + k));
    }
    std::string bad;
    if (!c_.uint(out, bad)) return fail(syntax_error());
    if (!bad.empty()) return fail(field_error(path.str(), "expected a non-negative integer, found " + bad));
    if (out > max)
      return fail(field_error(path.str(), std::to_string(out) + " is above " + std::to_string(max)));
    return true;
  }

  result<GidEntry> entry(const std::string& path) {
    if (c_.peek() != '{') {
      const std::string k = c_.kind();
      if (!c_.skip(3)) return fail(syntax_error());
      return fail(field_error(path, "expected an object, found " + k));
    }
    c_.consume('{');
    std::optional<std::uint64_t> index;
    std::string state = "valid", type, gid, netdev, key;
    bool has_gid = false, has_type = false;
    std::optional<std::uint64_t> err;
    if (!c_.empty_container('}')) {
      for (bool more = true; more;) {
        if (!c_.string(key) || !c_.consume(':')) return fail(syntax_error());
        const FieldPath at{path, key};
        if (key == "index") {
          std::uint64_t v = 0;
          GIDPOLICY_TRY(set, opt_uint(at, 0x7fffffffu, v));
          if (!set) return fail(field_error(at.str(), "expected a non-negative integer, found null"));
          index = v;
        } else if (key == "state") {
          std::string s;
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set) state = s;
        } else if (key == "gid") {
          GIDPOLICY_TRY(set, opt_string(at, gid));
          has_gid = set;
        } else if (key == "type") {
          GIDPOLICY_TRY(set, opt_string(at, type));
          has_type = set;
        } else if (key == "netdev") {
          GIDPOLICY_TRY(set, opt_string(at, netdev));
          if (set && !netdev.empty())
            if (auto why = name_problem(netdev, NameKind::netdev))
              return fail(field_error(at.str(), "netdev name " + quote_name(netdev) + ": " + *why));
        } else if (key == "errno") {
          std::uint64_t v = 0;
          GIDPOLICY_TRY(set, opt_uint(at, 4095, v));
          if (set) err = v;
        } else if (!c_.skip(3)) {  // ipv4, flags, and keys newer versions add
          return fail(syntax_error());
        }
        if (!c_.next_member('}', more)) return fail(syntax_error());
      }
    }
    if (!index) return fail(field_error(path + ".index", "missing"));
    GidEntry e;
    e.index = static_cast<std::uint32_t>(*index);
    if (state == "valid")
      e.state = EntryState::valid;
    else if (state == "empty")
      e.state = EntryState::empty;
    else if (state == "unreadable")
      e.state = EntryState::unreadable;
    else
      return fail(field_error(path + ".state", "expected valid, empty or unreadable, found '" + state + "'"));
    if (has_type && e.state != EntryState::empty) {
      auto t = gid_type_from_string(type);
      if (!t)
        return fail(
            field_error(path + ".type", "expected ib, roce_v1, roce_v2 or unknown, found '" + type + "'"));
      e.type = *t;
    }
    if (e.state == EntryState::valid) {
      if (!has_gid) return fail(field_error(path + ".gid", "missing for a valid entry"));
      auto g = Gid::parse(gid);
      if (!g) return fail(field_error(path + ".gid", g.error().what(), errc::invalid_gid_text));
      e.gid = g.value();
      e.netdev = std::move(netdev);
    }
    if (e.state == EntryState::unreadable)
      e.read_error =
          std::error_code(static_cast<int>(err.value_or(5)), std::generic_category());  // EIO unless said
    return e;
  }

  /// Whether the object opening the text starts with "schema": the tables document (version 2
  /// is what `show --json` prints, version 1 what `convert --to json` printed) rather than a port
  /// object of `show --json` before version 2. gidpolicy writes "schema" first.
  [[nodiscard]] bool is_tables_document() const {
    const auto open = text_.find('{');
    const auto key = text_.find_first_not_of(" \t\r\n", open + 1);
    return key != std::string_view::npos && text_.substr(key).starts_with("\"schema\"");
  }

  /// {"schema": "gidpolicy.tables", "version": 1|2, "host", "source", "ports": [...]}: the ports
  /// read as `show --json`'s port objects (version 2 writes the same keys), unknown keys skipped.
  result<std::vector<GidTable>> tables_document(std::string& host) {
    c_.consume('{');
    std::vector<GidTable> ports;
    bool has_ports = false;
    std::string key, s;
    if (!c_.empty_container('}')) {
      for (bool more = true; more;) {
        if (!c_.string(key) || !c_.consume(':')) return fail(syntax_error());
        const std::string top;
        const FieldPath at{top, key};
        std::uint64_t v = 0;
        if (key == "schema") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (!set || s != "gidpolicy.tables")
            return fail(field_error("schema", "expected \"gidpolicy.tables\""));
        } else if (key == "version") {
          GIDPOLICY_TRY(set, opt_uint(at, 0xffff, v));
          if (!set || v < 1 || v > 2)
            return fail(field_error("version",
                                    "version " + (set ? std::to_string(v) : std::string("null")) +
                                        " is not supported (this build reads 1 to 2)",
                                    errc::unsupported_version));
        } else if (key == "host") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set && host.empty()) host = s;
        } else if (key == "ports") {
          if (c_.peek() != '[') {
            const std::string k = c_.kind();
            if (!c_.skip(1)) return fail(syntax_error());
            return fail(field_error("ports", "expected an array, found " + k));
          }
          c_.consume('[');
          has_ports = true;
          if (!c_.empty_container(']')) {
            for (bool more_ports = true; more_ports;) {
              if (ports.size() >= limits_.max_ports_per_host)
                return fail(errc::invalid_field, std::string(src_) + ": more than " +
                                                     std::to_string(limits_.max_ports_per_host) + " ports");
              GIDPOLICY_TRY(t, port("ports[" + std::to_string(ports.size()) + "]", host));
              ports.push_back(std::move(t));
              if (!c_.next_member(']', more_ports)) return fail(syntax_error());
            }
          }
        } else if (!c_.skip(1)) {
          return fail(syntax_error());
        }
        if (!c_.next_member('}', more)) return fail(syntax_error());
      }
    }
    if (!has_ports) return fail(field_error("ports", "missing"));
    if (ports.empty()) return fail(errc::invalid_field, std::string(src_) + ": no port listed");
    return ports;
  }

  result<GidTable> port(const std::string& path, std::string& host) {
    if (c_.peek() != '{') {
      const std::string k = c_.kind();
      if (!c_.skip(1)) return fail(syntax_error());
      return fail(field_error(path, "expected a port object, found " + k));
    }
    c_.consume('{');
    PortInfo p;
    Holes holes = Holes::empty;
    bool has_device = false, has_port = false, has_entries = false;
    std::vector<GidEntry> entries;
    std::string key, s;
    if (!c_.empty_container('}')) {
      for (bool more = true; more;) {
        if (!c_.string(key) || !c_.consume(':')) return fail(syntax_error());
        const FieldPath at{path, key};
        std::uint64_t v = 0;
        if (key == "host") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set && host.empty()) host = s;
        } else if (key == "device") {
          GIDPOLICY_TRY(set, opt_string(at, p.device));
          if (!set) return fail(field_error(at.str(), "expected a device name, found null"));
          // The name rule (names.hpp): the device name is printed in every report line.
          if (auto why = name_problem(p.device, NameKind::device))
            return fail(field_error(at.str(), "device name " + quote_name(p.device) + ": " + *why));
          has_device = true;
        } else if (key == "port") {
          GIDPOLICY_TRY(set, opt_uint(at, 255, v));
          if (!set) return fail(field_error(at.str(), "expected a port number, found null"));
          p.port = static_cast<std::uint32_t>(v);
          has_port = true;
        } else if (key == "state") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set) {
            auto st = port_state_from_string(s);
            if (!st) return fail(field_error(at.str(), "unknown port state '" + s + "'"));
            p.state = *st;
          }
        } else if (key == "link_layer") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set) {
            auto l = link_layer_from_string(s);
            if (!l) return fail(field_error(at.str(), "unknown link layer '" + s + "'"));
            p.link_layer = *l;
          }
        } else if (key == "gid_tbl_len") {
          GIDPOLICY_TRY(set, opt_uint(at, 0x7fffffffu, v));
          if (set) p.gid_tbl_len = static_cast<std::uint32_t>(v);
        } else if (key == "active_mtu") {
          GIDPOLICY_TRY(set, opt_uint(at, 4096, v));
          if (set) {
            auto m = mtu_from_bytes(static_cast<unsigned>(v));
            if (!m) return fail(field_error(at.str(), "expected 256, 512, 1024, 2048 or 4096"));
            p.active_mtu = *m;
          }
        } else if (key == "lid") {
          GIDPOLICY_TRY(set, opt_uint(at, 0xffff, v));
          if (set) p.lid = static_cast<std::uint16_t>(v);
        } else if (key == "holes") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set && s == "not_shown")
            holes = Holes::not_shown;
          else if (set && s != "empty")
            return fail(field_error(at.str(), "expected empty or not_shown, found '" + s + "'"));
        } else if (key == "entries") {
          if (c_.peek() != '[') {
            const std::string k = c_.kind();
            if (!c_.skip(2)) return fail(syntax_error());
            return fail(field_error(at.str(), "expected an array, found " + k));
          }
          c_.consume('[');
          entries.clear();
          has_entries = true;
          if (!c_.empty_container(']')) {
            for (bool more_entries = true; more_entries;) {
              if (entries.size() >= limits_.max_entries_per_port)
                return fail(field_error(
                    at.str(), "more than " + std::to_string(limits_.max_entries_per_port) + " entries"));
              GIDPOLICY_TRY(e, entry(at.str() + "[" + std::to_string(entries.size()) + "]"));
              entries.push_back(std::move(e));
              if (!c_.next_member(']', more_entries)) return fail(syntax_error());
            }
          }
        } else if (!c_.skip(2)) {
          return fail(syntax_error());
        }
        if (!c_.next_member('}', more)) return fail(syntax_error());
      }
    }
    if (!has_device)
      return fail(field_error(path + ".device", "missing (is this `gidpolicy show --json` output?)"));
    if (!has_port) return fail(field_error(path + ".port", "missing"));
    if (!has_entries) return fail(field_error(path + ".entries", "missing"));
    auto t = GidTable::make(std::move(p), std::move(entries), holes);
    if (!t) return fail(Error(t.error().code, std::string(src_) + ": " + path + ": " + t.error().detail));
    return std::move(t).value();
  }

  std::string_view text_;
  std::string_view src_;
  const ReadLimits& limits_;
  Cursor c_;
};

std::string stem_of(std::string_view source) {
  std::string s = std::filesystem::path(std::string(source)).filename().string();
  if (s.size() > 5 && s.ends_with(".json")) s.resize(s.size() - 5);
  return s;
}

}  // namespace

result<HostSnapshot> parse_snapshot(std::string_view text, std::string_view source, std::string_view host,
                                    const ReadLimits& limits) {
  HostSnapshot h;
  h.source = std::string(source);
  std::string from_doc;
  SnapshotReader reader(text, source, limits);
  GIDPOLICY_TRY(ports, reader.read(from_doc));
  h.ports = std::move(ports);
  const char* from = !host.empty()       ? "given with HOST=FILE"
                     : !from_doc.empty() ? "its \"host\""
                                         : "its file name";
  h.host = !host.empty() ? std::string(host) : !from_doc.empty() ? from_doc : stem_of(source);
  // The name rule (names.hpp): a host name is printed in report lines, JSON and SVG.
  if (auto why = name_problem(h.host, NameKind::host))
    return fail(errc::invalid_field, std::string(source) + ": host name " + quote_name(h.host, 80) + " (" +
                                         from + "): " + *why +
                                         (host.empty() ? "; name the host with HOST=FILE" : ""));
  return h;
}

}  // namespace gidpolicy::fleet
