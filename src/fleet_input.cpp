// Fleet input: host snapshots (`gidpolicy show --json` per host) and JACCL device files.
#include <gidpolicy/fleet.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

namespace gidpolicy::fleet {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// show --json nests: array -> port -> entries -> entry -> flags (5). Anything deeper is not a
// snapshot, and refusing it before parsing bounds the parser's recursion.
constexpr int kMaxSnapshotDepth = 6;
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
  std::size_t off = e.byte > 0 ? e.byte - 1 : 0;
  off = std::min(off, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < off; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  std::string what = e.what();
  // nlohmann's message repeats the position; keep its last part (what went wrong).
  if (auto p = what.find(": syntax error"); p != std::string::npos) what = what.substr(p + 2);
  return Error(errc::parse_error, std::string(source) + ":" + std::to_string(line) + ":" +
                                      std::to_string(col) + ": invalid JSON: " + what);
}

Error field_error(std::string_view source, const std::string& path, const std::string& what,
                  errc code = errc::invalid_field) {
  return Error(code, std::string(source) + ": " + path + ": " + what);
}

const Json* member(const Json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

result<std::uint64_t> get_uint(const Json& j, std::string_view src, const std::string& path,
                               std::uint64_t max) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<std::int64_t>() >= 0))
    return fail(
        field_error(src, path, "expected a non-negative integer, found " + std::string(j.type_name())));
  const auto v = j.get<std::uint64_t>();
  if (v > max) return fail(field_error(src, path, std::to_string(v) + " is above " + std::to_string(max)));
  return v;
}

result<std::string_view> get_string(const Json& j, std::string_view src, const std::string& path) {
  if (!j.is_string())
    return fail(field_error(src, path, "expected a string, found " + std::string(j.type_name())));
  return std::string_view(j.get_ref<const std::string&>());
}

result<GidEntry> parse_entry(const Json& j, std::string_view src, const std::string& path) {
  if (!j.is_object())
    return fail(field_error(src, path, "expected an object, found " + std::string(j.type_name())));
  GidEntry e;
  const Json* idx = member(j, "index");
  if (!idx) return fail(field_error(src, path + ".index", "missing"));
  GIDPOLICY_TRY(index, get_uint(*idx, src, path + ".index", 0x7fffffffu));
  e.index = static_cast<std::uint32_t>(index);
  e.state = EntryState::valid;
  if (const Json* st = member(j, "state"); st && !st->is_null()) {
    GIDPOLICY_TRY(s, get_string(*st, src, path + ".state"));
    if (s == "valid")
      e.state = EntryState::valid;
    else if (s == "empty")
      e.state = EntryState::empty;
    else if (s == "unreadable")
      e.state = EntryState::unreadable;
    else
      return fail(field_error(src, path + ".state",
                              "expected valid, empty or unreadable, found '" + std::string(s) + "'"));
  }
  if (const Json* t = member(j, "type"); t && !t->is_null()) {
    GIDPOLICY_TRY(s, get_string(*t, src, path + ".type"));
    auto type = gid_type_from_string(s);
    if (!type)
      return fail(field_error(src, path + ".type",
                              "expected ib, roce_v1, roce_v2 or unknown, found '" + std::string(s) + "'"));
    e.type = *type;
  }
  if (e.state == EntryState::valid) {
    const Json* g = member(j, "gid");
    if (!g || g->is_null()) return fail(field_error(src, path + ".gid", "missing for a valid entry"));
    GIDPOLICY_TRY(text, get_string(*g, src, path + ".gid"));
    auto gid = Gid::parse(text);
    if (!gid) return fail(field_error(src, path + ".gid", gid.error().what(), errc::invalid_gid_text));
    e.gid = gid.value();
  } else {
    e.type = e.state == EntryState::empty ? GidType::unknown : e.type;
  }
  if (const Json* nd = member(j, "netdev"); nd && !nd->is_null()) {
    GIDPOLICY_TRY(s, get_string(*nd, src, path + ".netdev"));
    e.netdev = std::string(s);
  }
  if (e.state == EntryState::unreadable) {
    int err = 5;  // EIO when the snapshot did not say
    if (const Json* er = member(j, "errno"); er && !er->is_null()) {
      GIDPOLICY_TRY(v, get_uint(*er, src, path + ".errno", 4095));
      err = static_cast<int>(v);
    }
    e.read_error = std::error_code(err, std::generic_category());
  }
  return e;
}

result<GidTable> parse_port(const Json& j, std::string_view src, const std::string& path,
                            const ReadLimits& limits, std::string& host) {
  if (!j.is_object())
    return fail(field_error(src, path, "expected a port object, found " + std::string(j.type_name())));
  PortInfo p;
  const Json* dev = member(j, "device");
  if (!dev)
    return fail(field_error(src, path + ".device", "missing (is this `gidpolicy show --json` output?)"));
  GIDPOLICY_TRY(device, get_string(*dev, src, path + ".device"));
  if (device.empty() || device.size() > 64)
    return fail(field_error(src, path + ".device", "expected a device name of 1-64 characters"));
  p.device = std::string(device);
  const Json* port = member(j, "port");
  if (!port) return fail(field_error(src, path + ".port", "missing"));
  GIDPOLICY_TRY(pn, get_uint(*port, src, path + ".port", 255));
  p.port = static_cast<std::uint32_t>(pn);
  if (const Json* h = member(j, "host"); h && !h->is_null()) {
    GIDPOLICY_TRY(s, get_string(*h, src, path + ".host"));
    if (host.empty()) host = std::string(s);
  }
  if (const Json* st = member(j, "state"); st && !st->is_null()) {
    GIDPOLICY_TRY(s, get_string(*st, src, path + ".state"));
    auto state = port_state_from_string(s);
    if (!state) return fail(field_error(src, path + ".state", "unknown port state '" + std::string(s) + "'"));
    p.state = *state;
  }
  if (const Json* ll = member(j, "link_layer"); ll && !ll->is_null()) {
    GIDPOLICY_TRY(s, get_string(*ll, src, path + ".link_layer"));
    auto l = link_layer_from_string(s);
    if (!l)
      return fail(field_error(src, path + ".link_layer", "unknown link layer '" + std::string(s) + "'"));
    p.link_layer = *l;
  }
  if (const Json* len = member(j, "gid_tbl_len"); len && !len->is_null()) {
    GIDPOLICY_TRY(v, get_uint(*len, src, path + ".gid_tbl_len", 0x7fffffffu));
    p.gid_tbl_len = static_cast<std::uint32_t>(v);
  }
  if (const Json* mtu = member(j, "active_mtu"); mtu && !mtu->is_null()) {
    GIDPOLICY_TRY(v, get_uint(*mtu, src, path + ".active_mtu", 4096));
    auto m = mtu_from_bytes(static_cast<unsigned>(v));
    if (!m) return fail(field_error(src, path + ".active_mtu", "expected 256, 512, 1024, 2048 or 4096"));
    p.active_mtu = *m;
  }
  if (const Json* lid = member(j, "lid"); lid && !lid->is_null()) {
    GIDPOLICY_TRY(v, get_uint(*lid, src, path + ".lid", 0xffff));
    p.lid = static_cast<std::uint16_t>(v);
  }
  Holes holes = Holes::empty;
  if (const Json* h = member(j, "holes"); h && !h->is_null()) {
    GIDPOLICY_TRY(s, get_string(*h, src, path + ".holes"));
    if (s == "not_shown")
      holes = Holes::not_shown;
    else if (s != "empty")
      return fail(
          field_error(src, path + ".holes", "expected empty or not_shown, found '" + std::string(s) + "'"));
  }
  const Json* entries = member(j, "entries");
  if (!entries) return fail(field_error(src, path + ".entries", "missing"));
  if (!entries->is_array()) return fail(field_error(src, path + ".entries", "expected an array"));
  if (entries->size() > limits.max_entries_per_port)
    return fail(field_error(src, path + ".entries",
                            std::to_string(entries->size()) + " entries (at most " +
                                std::to_string(limits.max_entries_per_port) + ")"));
  std::vector<GidEntry> list;
  list.reserve(entries->size());
  for (std::size_t k = 0; k < entries->size(); ++k) {
    GIDPOLICY_TRY(e, parse_entry((*entries)[k], src, path + ".entries[" + std::to_string(k) + "]"));
    list.push_back(std::move(e));
  }
  auto t = GidTable::make(std::move(p), std::move(list), holes);
  if (!t) return fail(Error(t.error().code, std::string(src) + ": " + path + ": " + t.error().detail));
  return std::move(t).value();
}

std::string stem_of(std::string_view source) {
  fs::path p{std::string(source)};
  std::string s = p.filename().string();
  if (auto dot = s.rfind(".json"); dot != std::string::npos && dot + 5 == s.size() && dot > 0) s.resize(dot);
  return s;
}

result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    return fail(errc::io_error,
                path + ": cannot open: " + std::error_code(errno, std::generic_category()).message());
  std::string data;
  char buf[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (data.size() + got > max_bytes) {
      std::fclose(f);
      return fail(errc::invalid_argument, path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
    data.append(buf, got);
  }
  const bool bad = std::ferror(f) != 0;
  std::fclose(f);
  if (bad) return fail(errc::io_error, path + ": read error");
  return data;
}

}  // namespace

result<HostSnapshot> parse_snapshot(std::string_view text, std::string_view source, std::string_view host,
                                    const ReadLimits& limits) {
  if (nesting_depth(text, kMaxSnapshotDepth) < 0)
    return fail(errc::parse_error, std::string(source) +
                                       ": nested deeper than a `gidpolicy show --json` document (" +
                                       std::to_string(kMaxSnapshotDepth) + " levels)");
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return fail(syntax_error(text, source, e));
  }
  HostSnapshot h;
  h.source = std::string(source);
  std::string from_doc;
  if (doc.is_object()) {
    GIDPOLICY_TRY(t, parse_port(doc, source, "port", limits, from_doc));
    h.ports.push_back(std::move(t));
  } else if (doc.is_array()) {
    if (doc.empty()) return fail(errc::invalid_field, std::string(source) + ": no port listed");
    if (doc.size() > limits.max_ports_per_host)
      return fail(errc::invalid_field, std::string(source) + ": " + std::to_string(doc.size()) +
                                           " ports (at most " + std::to_string(limits.max_ports_per_host) +
                                           ")");
    for (std::size_t k = 0; k < doc.size(); ++k) {
      GIDPOLICY_TRY(t, parse_port(doc[k], source, "[" + std::to_string(k) + "]", limits, from_doc));
      h.ports.push_back(std::move(t));
    }
  } else {
    return fail(errc::invalid_field,
                std::string(source) +
                    ": expected `gidpolicy show --json` output (an object or an array of them), found " +
                    std::string(doc.type_name()));
  }
  h.host = !host.empty() ? std::string(host) : !from_doc.empty() ? from_doc : stem_of(source);
  if (h.host.empty() || h.host.size() > 255)
    return fail(errc::invalid_field, std::string(source) + ": host name must be 1-255 characters");
  return h;
}

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
  const unsigned threads =
      std::max(1u, std::min<unsigned>(limits.threads, static_cast<unsigned>(items.size())));
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
