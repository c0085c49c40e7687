#include <gidpolicy/verbs/snapshot.hpp>

#include <algorithm>
#include <cerrno>

namespace gidpolicy::verbs {
namespace {

bool is_unsupported(const Error& e) noexcept {
  return e == errc::not_supported || (e.code.category() == std::generic_category() &&
                                      (e.code.value() == EOPNOTSUPP || e.code.value() == ENOSYS));
}

bool is_errno(const Error& e, int err) noexcept {
  return e.code.category() == std::generic_category() && e.code.value() == err;
}

/// Counts the calls snapshot makes, whatever the backend.
struct Counter {
  SnapshotReport& report;
  void call(bool gid_read) {
    ++report.driver_calls;
    if (gid_read) ++report.gid_reads;
  }
};

result<GidEntry> entry_from_ex(result<GidEntry> r, std::uint32_t index) {
  if (r) {
    GidEntry e = std::move(r).value();
    e.index = index;
    return e;
  }
  // ibv_query_gid_ex's way of saying "empty slot".
  if (is_errno(r.error(), ENODATA)) return GidEntry::empty(index);
  if (is_unsupported(r.error())) return std::move(r).as_failure();
  return GidEntry::unreadable(index, r.error().code);
}

result<GidEntry> entry_from_legacy(result<Gid> r, std::uint32_t index) {
  if (r) {
    // ibv_query_gid's way of saying "empty slot": success with zeros.
    if (r.value().is_zero()) return GidEntry::empty(index);
    return GidEntry::valid(index, r.value());
  }
  if (is_unsupported(r.error())) return std::move(r).as_failure();
  return GidEntry::unreadable(index, r.error().code);
}

/// One port's rows out of a whole-device table read.
result<GidTable> from_rows(const PortInfo& port, const std::vector<GidTableRow>& rows) {
  std::vector<GidEntry> entries;
  for (const GidTableRow& row : rows)
    if (row.port == port.port) entries.push_back(row.entry);
  auto t = GidTable::make(port, std::move(entries), Holes::empty);
  if (!t) {
    Error e = t.error();
    e.detail = "ibv_query_gid_table(" + port.device + ") returned an inconsistent table: " + e.detail;
    return fail(std::move(e));
  }
  return t;
}

result<GidTable> by_table(VerbsApi& api, DeviceHandle device, const PortInfo& port, Counter& count) {
  const std::uint32_t len = port.gid_tbl_len.value_or(0);
  // Valid entries of every port count against the buffer; the port's own length suffices on
  // single-port devices, multi-port ones may need a retry with a larger buffer (EINVAL).
  std::uint32_t max = len == 0 ? 1u : len;
  for (;;) {
    count.call(true);
    auto rows = api.read_gid_table(device, max);
    if (rows) return from_rows(port, rows.value());
    if (is_errno(rows.error(), EINVAL) && max < (1u << 16)) {
      max *= 2;
      continue;
    }
    return std::move(rows).as_failure();
  }
}

/// How far a per-index scan reads: what an sgid_index can reach, unless the whole table is
/// asked for.
std::uint32_t scan_length(const PortInfo& port, const SnapshotOptions& options) {
  const std::uint32_t len = port.gid_tbl_len.value_or(0);
  return options.whole_table ? len : std::min(len, kSgidReach);
}

/// Per-index scan with one method. Fails only when the method turns out to be unsupported at
/// index `from` (so the caller can switch methods and continue from there).
result<void> scan(VerbsApi& api, DeviceHandle device, const PortInfo& port, ReadMethod method,
                  const SnapshotOptions& options, std::vector<GidEntry>& entries, std::uint32_t& next,
                  Counter& count) {
  const std::uint32_t len = scan_length(port, options);
  for (; next < len; ++next) {
    count.call(true);
    result<GidEntry> e = method == ReadMethod::gid_entry
                             ? entry_from_ex(api.read_gid_entry(device, port.port, next), next)
                             : entry_from_legacy(api.read_gid(device, port.port, next), next);
    if (!e) return std::move(e).as_failure();
    entries.push_back(std::move(e).value());
    ++count.report.indices_read;
    if (options.stop_after && options.stop_after(entries.back())) {
      ++next;
      count.report.stopped_early = next < len;
      return success();
    }
  }
  return success();
}

}  // namespace

std::string_view to_string(ReadMethod m) noexcept {
  switch (m) {
    case ReadMethod::gid_table:
      return "gid_table";
    case ReadMethod::gid_entry:
      return "gid_entry";
    case ReadMethod::gid_legacy:
      return "gid_legacy";
  }
  return "gid_table";
}

std::function<bool(const GidEntry&)> stop_at_first_ipv4_mapped() {
  return [](const GidEntry& e) { return e.usable() && e.gid.is_ipv4_mapped(); };
}

result<GidTable> snapshot(VerbsApi& api, DeviceHandle device, std::uint32_t port,
                          const SnapshotOptions& options) {
  SnapshotReport local;
  SnapshotReport& report = options.report ? *options.report : local;
  report = SnapshotReport{};
  Counter count{report};

  count.call(false);
  GIDPOLICY_TRY(info, api.port_attributes(device, port));
  if (info.gid_tbl_len && *info.gid_tbl_len > kMaxGidTableLength)
    return fail_errno(EPROTO, port_name(info) + ": the driver reports gid_tbl_len " +
                                  std::to_string(*info.gid_tbl_len) + ", above the " +
                                  std::to_string(kMaxGidTableLength) +
                                  " a port can hold (driver bug?): not read");
  const bool usable_state = info.state == PortState::active || info.state == PortState::armed ||
                            info.state == PortState::active_defer;
  if (!usable_state && !options.allow_inactive)
    return fail(errc::port_not_active, port_name(info) + " is " + std::string(to_string(info.state)) +
                                           ": its GID table is not meaningful until the link is up "
                                           "(set allow_inactive to read it anyway)");

  const ReadSupport can = api.read_support(device);
  auto allowed = [&](ReadMethod m) { return !options.method || *options.method == m; };

  if (allowed(ReadMethod::gid_table)) {
    if (can.gid_table) {
      report.method = ReadMethod::gid_table;
      auto t = by_table(api, device, info, count);
      if (t || !is_unsupported(t.error()) || options.method) return t;
      report.fallbacks.push_back("read_gid_table: " + t.error().what());
    } else {
      report.fallbacks.push_back("read_gid_table: not offered by the " + api.backend_name() + " backend");
    }
  }

  std::vector<GidEntry> entries;
  std::uint32_t next = 0;
  for (ReadMethod m : {ReadMethod::gid_entry, ReadMethod::gid_legacy}) {
    if (!allowed(m)) continue;
    const bool offered = m == ReadMethod::gid_entry ? api.read_support(device).gid_entry : can.gid_legacy;
    if (!offered) {
      report.fallbacks.push_back(std::string(to_string(m)) + ": not offered by the " + api.backend_name() +
                                 " backend");
      continue;
    }
    report.method = m;
    auto r = scan(api, device, info, m, options, entries, next, count);
    if (r) {
      report.capped = !report.stopped_early && scan_length(info, options) < info.gid_tbl_len.value_or(0);
      if (report.stopped_early || report.capped)  // explicit empties tell "read, empty" from "not read"
        return GidTable::make(info, std::move(entries), Holes::not_shown);
      // A complete scan lists what the table call would: the same table whatever the method.
      std::erase_if(entries, [](const GidEntry& e) { return e.state == EntryState::empty; });
      return GidTable::make(info, std::move(entries), Holes::empty);
    }
    if (!is_unsupported(r.error()) || options.method) return std::move(r).as_failure();
    report.fallbacks.push_back(std::string(to_string(m)) + " at index " + std::to_string(next) + ": " +
                               r.error().what());
  }
  std::string why;
  for (const auto& f : report.fallbacks) why += (why.empty() ? "" : "; ") + f;
  return fail(errc::not_supported, "cannot read the GID table of " + port_name(info) + ": " + why);
}

result<GidTable> snapshot(VerbsApi& api, std::string_view device, std::uint32_t port,
                          const SnapshotOptions& options) {
  SnapshotReport local;
  SnapshotOptions inner = options;
  inner.report = options.report ? options.report : &local;
  auto h = api.open_device(device);
  if (!h) {
    *inner.report = SnapshotReport{};
    inner.report->driver_calls = 1;
    return std::move(h).as_failure();
  }
  auto t = snapshot(api, h.value(), port, inner);
  auto closed = api.close_device(h.value());
  inner.report->driver_calls += 2;  // open + close
  if (!t) return t;
  if (!closed) return std::move(closed).as_failure();
  return t;
}

result<GidEntry> read_entry(VerbsApi& api, DeviceHandle device, std::uint32_t port, std::uint32_t index,
                            unsigned* calls) {
  auto bump = [&] {
    if (calls) ++*calls;
  };
  const ReadSupport can = api.read_support(device);
  if (can.gid_entry) {
    bump();
    auto e = entry_from_ex(api.read_gid_entry(device, port, index), index);
    if (e || !is_unsupported(e.error())) return e;
  }
  if (api.read_support(device).gid_legacy) {
    bump();
    return entry_from_legacy(api.read_gid(device, port, index), index);
  }
  if (can.gid_table) {
    // A backend with only the table call: read it all and pick the index.
    bump();
    GIDPOLICY_TRY(info, api.port_attributes(device, port));
    SnapshotReport report;
    Counter count{report};
    GIDPOLICY_TRY(t, by_table(api, device, info, count));
    if (calls) *calls += report.driver_calls;
    if (const GidEntry* e = t.find(index)) return *e;
    return GidEntry::empty(index);
  }
  return fail(errc::not_supported, "the " + api.backend_name() + " backend can read no GID");
}

result<std::uint32_t> find_current_index(VerbsApi& api, DeviceHandle device, std::uint32_t port,
                                         const Gid& gid, std::optional<GidType> type) {
  SnapshotOptions o;
  o.allow_inactive = true;  // following a GID is worth trying whatever the port state says
  auto matches = [gid, type](const GidEntry& e) {
    return e.usable() && e.gid == gid && (!type || e.type == *type);
  };
  o.stop_after = matches;
  GIDPOLICY_TRY(t, snapshot(api, device, port, o));
  for (const GidEntry& e : t)
    if (matches(e)) return e.index;
  std::string what = gid.to_string();
  if (type) what += " (" + std::string(to_string(*type)) + ")";
  return fail(errc::gid_changed, what + " is no longer in " + port_name(t.port()) + "'s GID table");
}

}  // namespace gidpolicy::verbs
