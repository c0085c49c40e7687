#include <gidpolicy/formats/json.hpp>

#include <nlohmann/json.hpp>

#include "text.hpp"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gidpolicy::formats {
namespace {

using Json = nlohmann::ordered_json;

// A field error: "<source>: <path>: <what>". The path uses the document's own keys so a
// person can find the spot in the file ("ports[0].entries[2].gid").
struct Ctx {
  std::string_view source;
  std::uint64_t version = kJsonSchemaVersion;  // the document's: 1 or 2
  Error err(const std::string& path, const std::string& what, errc code = errc::invalid_field) const {
    return Error(code, std::string(source) + ": " + path + ": " + what);
  }
};

// A key as a path segment, bounded: a hostile 1 MB key must not come back in full.
std::string path_key(const std::string& key) {
  return key.size() <= 40 && detail::binary_column(key) == std::nullopt ? key : detail::excerpt(key, 40);
}

const char* type_name(const Json& j) { return j.type_name(); }

result<std::uint64_t> get_uint(const Ctx& c, const Json& obj, const std::string& path, const char* key,
                               std::uint64_t max) {
  const Json& v = obj.at(key);
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0))
    return fail(c.err(path + "." + key, std::string("expected a non-negative integer, found ") +
                                            (v.is_number() ? v.dump() : type_name(v))));
  auto n = v.get<std::uint64_t>();
  if (n > max)
    return fail(c.err(path + "." + key, std::to_string(n) + " is above the maximum " + std::to_string(max),
                      errc::index_too_large));
  return n;
}

result<std::string> get_string(const Ctx& c, const Json& obj, const std::string& path, const char* key) {
  const Json& v = obj.at(key);
  if (!v.is_string())
    return fail(c.err(path + "." + key, std::string("expected a string, found ") + type_name(v)));
  return v.get<std::string>();
}

// Version 2 writes every key of an entry (null where version 1 left it out) and the derived
// display keys `show` prints, ipv4 and flags: those are type-checked, then dropped, and a null
// reads as the key left out. Version 1 keeps its strict reading (no null, no display key).
result<Json> json_v2_entry(const Ctx& c, const Json& j, const std::string& path) {
  Json out = Json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "ipv4") {
      if (!it.value().is_null() && !it.value().is_string())
        return fail(
            c.err(path + ".ipv4", std::string("expected a string or null, found ") + type_name(it.value())));
      continue;
    }
    if (k == "flags") {
      bool strings = it.value().is_array();
      if (strings)
        for (const Json& f : it.value()) strings = strings && f.is_string();
      if (!strings) return fail(c.err(path + ".flags", "expected an array of strings"));
      continue;
    }
    if (it.value().is_null() && k != "index" && k != "state") continue;
    out[k] = it.value();
  }
  return out;
}

result<GidEntry> read_entry(const Ctx& c, const Json& given, const std::string& path) {
  if (!given.is_object())
    return fail(c.err(path, std::string("expected an object, found ") + type_name(given)));
  Json normalized;
  if (c.version >= 2) {
    GIDPOLICY_TRY(n, json_v2_entry(c, given, path));
    normalized = std::move(n);
  }
  const Json& j = c.version >= 2 ? normalized : given;
  for (auto it = j.begin(); it != j.end(); ++it) {
    static constexpr const char* kKnown[] = {"index", "gid", "type", "netdev", "ifindex", "state", "errno"};
    bool known = false;
    for (auto* k : kKnown) known = known || it.key() == k;
    if (!known) return fail(c.err(path + "." + path_key(it.key()), "unknown field"));
  }
  if (!j.contains("index")) return fail(c.err(path + ".index", "missing required field"));
  GIDPOLICY_TRY(index, get_uint(c, j, path, "index", 0x7fffffffu));
  GidEntry e;
  e.index = static_cast<std::uint32_t>(index);
  std::string state = "valid";
  if (j.contains("state")) {
    GIDPOLICY_TRY(s, get_string(c, j, path, "state"));
    state = s;
  }
  if (state == "valid") {
    e.state = EntryState::valid;
    if (!j.contains("gid")) return fail(c.err(path + ".gid", "missing required field for a valid entry"));
    GIDPOLICY_TRY(text, get_string(c, j, path, "gid"));
    auto gid = Gid::parse(text);
    if (!gid) return fail(c.err(path + ".gid", gid.error().what()));
    e.gid = gid.value();
  } else if (state == "empty") {
    e.state = EntryState::empty;
  } else if (state == "unreadable") {
    e.state = EntryState::unreadable;
    int err = 0;
    if (j.contains("errno")) {
      GIDPOLICY_TRY(n, get_uint(c, j, path, "errno", 4095));
      err = static_cast<int>(n);
    }
    e.read_error = std::error_code(err, std::generic_category());
  } else {
    return fail(
        c.err(path + ".state", "expected \"valid\", \"empty\" or \"unreadable\", found \"" + state + "\""));
  }
  if (e.state != EntryState::valid && j.contains("gid"))
    return fail(c.err(path + ".gid", "an " + state + " entry has no GID"));
  if (j.contains("type")) {
    GIDPOLICY_TRY(t, get_string(c, j, path, "type"));
    auto type = gid_type_from_string(t);
    if (!type)
      return fail(c.err(path + ".type", "expected ib, roce_v1, roce_v2 or unknown, found \"" + t + "\""));
    e.type = *type;
  }
  if (j.contains("netdev")) {
    GIDPOLICY_TRY(nd, get_string(c, j, path, "netdev"));
    if (!nd.empty())  // "" is the same as no netdev
      if (auto why = detail::name_problem(nd, detail::NameKind::netdev))
        return fail(c.err(path + ".netdev", "netdev name " + detail::excerpt(nd) + ": " + *why));
    e.netdev = nd;
  }
  if (j.contains("ifindex")) {
    GIDPOLICY_TRY(ifi, get_uint(c, j, path, "ifindex", 0xffffffffu));
    e.ifindex = static_cast<std::uint32_t>(ifi);
  }
  return e;
}

result<GidTable> read_port(const Ctx& c, const Json& j, const std::string& path) {
  if (!j.is_object()) return fail(c.err(path, std::string("expected an object, found ") + type_name(j)));
  for (auto it = j.begin(); it != j.end(); ++it) {
    static constexpr const char* kKnown[] = {"device",      "port",       "state",        "link_layer",
                                             "gid_tbl_len", "active_mtu", "active_width", "active_speed",
                                             "lid",         "holes",      "entries"};
    bool known = false;
    for (auto* k : kKnown) known = known || it.key() == k;
    if (!known) return fail(c.err(path + "." + path_key(it.key()), "unknown field"));
  }
  PortInfo p;
  if (!j.contains("device")) return fail(c.err(path + ".device", "missing required field"));
  GIDPOLICY_TRY(device, get_string(c, j, path, "device"));
  if (auto why = detail::name_problem(device, detail::NameKind::device))
    return fail(c.err(path + ".device", "device name " + detail::excerpt(device) + ": " + *why));
  p.device = device;
  if (!j.contains("port")) return fail(c.err(path + ".port", "missing required field"));
  GIDPOLICY_TRY(port, get_uint(c, j, path, "port", 255));
  p.port = static_cast<std::uint32_t>(port);
  if (j.contains("state")) {
    GIDPOLICY_TRY(s, get_string(c, j, path, "state"));
    auto st = port_state_from_string(s);
    if (!st)
      return fail(c.err(path + ".state",
                        "expected nop, down, init, armed, active or active_defer, found \"" + s + "\""));
    p.state = *st;
  }
  if (j.contains("link_layer")) {
    const Json& v = j.at("link_layer");
    if (v.is_number_unsigned()) {
      GIDPOLICY_TRY(raw, get_uint(c, j, path, "link_layer", 0xffffffffu));
      p.link_layer = LinkLayer::from_raw(static_cast<std::uint32_t>(raw));
    } else {
      GIDPOLICY_TRY(s, get_string(c, j, path, "link_layer"));
      auto ll = link_layer_from_string(s);
      if (!ll)
        return fail(c.err(path + ".link_layer",
                          "expected infiniband, ethernet, thunderbolt or a number, found \"" + s + "\""));
      p.link_layer = *ll;
    }
  }
  if (j.contains("gid_tbl_len") && !j.at("gid_tbl_len").is_null()) {
    GIDPOLICY_TRY(len, get_uint(c, j, path, "gid_tbl_len", 0x80000000u));
    p.gid_tbl_len = static_cast<std::uint32_t>(len);
  }
  if (j.contains("active_mtu")) {
    GIDPOLICY_TRY(bytes, get_uint(c, j, path, "active_mtu", 4096));
    auto mtu = mtu_from_bytes(static_cast<unsigned>(bytes));
    if (!mtu)
      return fail(c.err(path + ".active_mtu",
                        "expected 256, 512, 1024, 2048 or 4096, found " + std::to_string(bytes)));
    p.active_mtu = *mtu;
  }
  // The trained link: both or neither, each a name ("4X", "EDR") or verbs' number (0-255).
  const bool has_width = j.contains("active_width"), has_speed = j.contains("active_speed");
  if (has_width != has_speed)
    return fail(c.err(path + (has_width ? ".active_speed" : ".active_width"),
                      std::string("missing: a port gives active_width and active_speed together")));
  if (has_width) {
    LinkRate rate;
    for (const bool width : {true, false}) {
      const char* key = width ? "active_width" : "active_speed";
      std::uint8_t& field = width ? rate.width : rate.speed;
      if (j.at(key).is_number_unsigned()) {
        GIDPOLICY_TRY(raw, get_uint(c, j, path, key, 255));
        field = static_cast<std::uint8_t>(raw);
        continue;
      }
      GIDPOLICY_TRY(name, get_string(c, j, path, key));
      auto named = width ? LinkRate::from_names(name, "SDR") : LinkRate::from_names("1X", name);
      if (!named)
        return fail(
            c.err(path + "." + key, std::string(width ? "expected 1X, 2X, 4X, 8X, 12X"
                                                      : "expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR") +
                                        " or verbs' number 0-255, found \"" + name + "\""));
      field = width ? named->width : named->speed;
    }
    p.link_rate = rate;
  }
  if (j.contains("lid")) {
    GIDPOLICY_TRY(lid, get_uint(c, j, path, "lid", 0xffff));
    p.lid = static_cast<std::uint16_t>(lid);
  }
  Holes holes = Holes::empty;
  if (j.contains("holes")) {
    GIDPOLICY_TRY(h, get_string(c, j, path, "holes"));
    if (h == "empty")
      holes = Holes::empty;
    else if (h == "not_shown")
      holes = Holes::not_shown;
    else
      return fail(c.err(path + ".holes", "expected \"empty\" or \"not_shown\", found \"" + h + "\""));
  }
  std::vector<GidEntry> entries;
  if (j.contains("entries")) {
    const Json& arr = j.at("entries");
    if (!arr.is_array())
      return fail(c.err(path + ".entries", std::string("expected an array, found ") + type_name(arr)));
    entries.reserve(arr.size());
    for (std::size_t k = 0; k < arr.size(); ++k) {
      GIDPOLICY_TRY(e, read_entry(c, arr[k], path + ".entries[" + std::to_string(k) + "]"));
      entries.push_back(std::move(e));
    }
  }
  auto table = GidTable::make(std::move(p), std::move(entries), holes);
  if (!table)
    return fail(Error(table.error().code, std::string(c.source) + ": " + path + ": " + table.error().detail));
  return table;
}

// nlohmann's DOM builder with what its parser does not check: duplicate keys (nlohmann keeps
// the last one, so a second "gid" would silently replace the first) and nesting depth (the DOM
// and every recursive walk over it are bounded by kMaxJsonDepth). Errors carry the JSON path,
// as field errors do.
class Sax {
 public:
  struct Failure {
    enum class Kind { syntax, other, duplicate, depth } kind;
    std::string what;
    std::size_t byte = 0;
    std::string path;
  };
  std::optional<Failure> failure;

  explicit Sax(Json& root) : dom_(root, false) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) {
    return value() && dom_.number_float(v, s);
  }
  bool string(Json::string_t& v) { return value() && dom_.string(v); }
  bool binary(Json::binary_t& v) { return value() && dom_.binary(v); }
  bool start_object(std::size_t n) {
    if (!value() || !open()) return false;
    frames_.push_back(Frame{true, {}, 0, {}});
    return dom_.start_object(n);
  }
  bool key(Json::string_t& k) {
    Frame& f = frames_.back();
    f.key = k;
    if (!f.keys.insert(k).second) {
      failure = Failure{Failure::Kind::duplicate,
                        "duplicate key (each field once: a second one would silently replace the first)", 0,
                        path()};
      return false;
    }
    return dom_.key(k);
  }
  bool end_object() {
    frames_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    if (!value() || !open()) return false;
    frames_.push_back(Frame{false, {}, 0, {}});
    return dom_.start_array(n);
  }
  bool end_array() {
    frames_.pop_back();
    return dom_.end_array();
  }
  bool parse_error(std::size_t byte, const std::string& /*token*/, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    if (dynamic_cast<const nlohmann::detail::parse_error*>(&e) != nullptr) {
      // nlohmann reports the byte after the offending token; its what() repeats that offset.
      auto colon = what.find("]: ");
      if (colon != std::string::npos) what = what.substr(colon + 3);
      failure = Failure{Failure::Kind::syntax, what, byte, {}};
    } else {
      // Not a parse_error: e.g. out_of_range 406 for a number literal that overflows a double
      // (found by fuzz_json_table). It carries no offset.
      auto colon = what.find("] ");
      if (colon != std::string::npos) what = what.substr(colon + 2);
      failure = Failure{Failure::Kind::other, what, 0, {}};
    }
    return false;
  }

 private:
  struct Frame {
    bool object;
    std::string key;        // objects: the key of the value being read
    std::size_t index = 0;  // arrays: the index of the next value
    std::set<std::string> keys;
  };

  // Every value in an array takes the next index.
  bool value() {
    if (!frames_.empty() && !frames_.back().object) {
      frames_.back().key = std::to_string(frames_.back().index);
      ++frames_.back().index;
    }
    return true;
  }
  bool open() {
    if (frames_.size() >= kMaxJsonDepth) {
      failure = Failure{
          Failure::Kind::depth,
          "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (a table document nests 5)", 0,
          path()};
      return false;
    }
    return true;
  }
  // "ports[0].entries[2].gid" for the value being read.
  [[nodiscard]] std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.object)
        out += (out.empty() ? "" : ".") + path_key(f.key);
      else
        out += "[" + f.key + "]";
    }
    return out.empty() ? "(document)" : out;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<Frame> frames_;
};

}  // namespace

result<std::vector<GidTable>> read_json(std::string_view text, std::string_view source) {
  Ctx c{source};
  Json doc;
  Sax sax(doc);
  try {
    Json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const Json::exception& e) {
    // sax_parse reports through Sax::parse_error; this is only a safety net.
    return fail(errc::parse_error, std::string(source) + ": invalid JSON: " + e.what());
  }
  if (sax.failure) {
    const Sax::Failure& f = *sax.failure;
    if (f.kind == Sax::Failure::Kind::syntax)
      return fail(errc::parse_error, std::string(source) + ":" +
                                         detail::line_column(text, f.byte > 0 ? f.byte - 1 : 0) +
                                         ": invalid JSON: " + f.what);
    if (f.kind == Sax::Failure::Kind::other)
      return fail(errc::parse_error, std::string(source) + ": invalid JSON: " + f.what);
    return fail(
        c.err(f.path, f.what, f.kind == Sax::Failure::Kind::depth ? errc::parse_error : errc::invalid_field));
  }
  if (!doc.is_object())
    return fail(c.err("(document)", std::string("expected an object, found ") + type_name(doc)));
  if (!doc.contains("schema") || !doc.at("schema").is_string() ||
      doc.at("schema").get<std::string>() != "gidpolicy.tables")
    return fail(c.err("schema", "expected \"gidpolicy.tables\""));
  if (!doc.contains("version")) return fail(c.err("version", "missing required field"));
  GIDPOLICY_TRY(version, get_uint(c, doc, "(document)", "version", 0xffff));
  if (version != 1 && version != static_cast<std::uint64_t>(kJsonSchemaVersion))
    return fail(c.err("version",
                      "version " + std::to_string(version) + " is not supported (this build reads 1 to " +
                          std::to_string(kJsonSchemaVersion) + ")",
                      errc::unsupported_version));
  c.version = version;
  for (auto it = doc.begin(); version >= 2 && it != doc.end(); ++it) {
    // Version 2's envelope names the host and the source (`show --json`); version 1 had neither.
    const std::string& k = it.key();
    if (k == "schema" || k == "version" || k == "ports") continue;
    if (version >= 2 && (k == "host" || k == "source")) {
      if (!it.value().is_null() && !it.value().is_string())
        return fail(c.err(k, std::string("expected a string or null, found ") + type_name(it.value())));
      continue;
    }
    return fail(c.err(path_key(k), "unknown field"));
  }
  if (!doc.contains("ports") || !doc.at("ports").is_array()) return fail(c.err("ports", "expected an array"));
  std::vector<GidTable> out;
  const Json& ports = doc.at("ports");
  out.reserve(ports.size());
  std::set<std::pair<std::string, std::uint32_t>> seen;  // not a scan of `out`: linear in ports
  for (std::size_t k = 0; k < ports.size(); ++k) {
    GIDPOLICY_TRY(t, read_port(c, ports[k], "ports[" + std::to_string(k) + "]"));
    if (!seen.emplace(t.port().device, t.port().port).second)
      return fail(c.err("ports[" + std::to_string(k) + "]",
                        "device " + port_name(t) + " appears twice (one entry per port)",
                        errc::invalid_field));
    out.push_back(std::move(t));
  }
  return out;
}

std::string write_json(const std::vector<GidTable>& tables, int indent) {
  return write_json(tables, TablesDocument{}, indent);
}

std::string write_json(const std::vector<GidTable>& tables, const TablesDocument& about, int indent) {
  Json doc;
  doc["schema"] = "gidpolicy.tables";
  doc["version"] = kJsonSchemaVersion;
  doc["host"] = about.host ? Json(*about.host) : Json(nullptr);
  doc["source"] = about.source ? Json(*about.source) : Json(nullptr);
  Json ports = Json::array();
  for (const auto& t : tables) {
    const PortInfo& p = t.port();
    Json jp;
    jp["device"] = p.device;
    jp["port"] = p.port;
    jp["state"] = std::string(to_string(p.state));
    if (p.link_layer.kind() == LinkLayer::Kind::unknown)
      jp["link_layer"] = p.link_layer.raw();
    else
      jp["link_layer"] = to_string(p.link_layer);
    jp["gid_tbl_len"] = p.gid_tbl_len ? Json(*p.gid_tbl_len) : Json(nullptr);
    jp["active_mtu"] = mtu_bytes(p.active_mtu);
    if (p.link_rate) {
      // Names where verbs defines the encoding; the raw number otherwise, so nothing is lost.
      const LinkRate r = *p.link_rate;
      if (r.lanes())
        jp["active_width"] = std::to_string(*r.lanes()) + "X";
      else
        jp["active_width"] = r.width;
      if (r.lane_half_gbps())
        jp["active_speed"] = std::string(r.speed_name());
      else
        jp["active_speed"] = r.speed;
    }
    jp["lid"] = p.lid;
    jp["holes"] = std::string(to_string(t.holes()));
    Json entries = Json::array();
    for (const auto& e : t) {
      Json je;
      // Version 2: every key on every entry (null when it does not apply), and the display
      // keys `show --json` has always printed (ipv4, flags), so one document serves both.
      const bool valid = e.state == EntryState::valid;
      je["index"] = e.index;
      je["state"] = std::string(to_string(e.state));
      je["gid"] = valid ? Json(e.gid.to_string()) : Json(nullptr);
      je["type"] = std::string(to_string(e.type));
      const std::string v4 = valid ? e.gid.ipv4_string() : std::string();
      je["ipv4"] = v4.empty() ? Json(nullptr) : Json(v4);
      je["netdev"] = e.netdev.empty() ? Json(nullptr) : Json(e.netdev);
      je["ifindex"] = e.ifindex != 0 ? Json(e.ifindex) : Json(nullptr);
      je["errno"] = e.state == EntryState::unreadable ? Json(e.read_error.value()) : Json(nullptr);
      je["flags"] = entry_flags(e);
      entries.push_back(std::move(je));
    }
    jp["entries"] = std::move(entries);
    ports.push_back(std::move(jp));
  }
  doc["ports"] = std::move(ports);
  // The source is a path the caller names, in whatever bytes its file system holds: a byte that
  // is not UTF-8 is written as U+FFFD rather than failing the whole document.
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::vector<std::string> entry_flags(const GidEntry& e) {
  std::vector<std::string> f;
  if (e.state == EntryState::empty) f.emplace_back("empty");
  if (e.state == EntryState::unreadable) f.emplace_back("unreadable");
  if (e.state != EntryState::valid) return f;
  if (e.gid.is_zero()) f.emplace_back("zero");
  if (e.gid.is_link_local()) f.emplace_back("link-local");
  if (e.gid.is_ipv4_mapped() && !e.gid.is_zero()) f.emplace_back("ipv4-mapped");
  if (e.gid.is_ipv4_link_local()) f.emplace_back("ipv4-link-local");
  return f;
}

}  // namespace gidpolicy::formats
