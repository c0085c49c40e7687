#include <gidpolicy/policies/jaccl_first_mapped.hpp>

#include "common.hpp"

namespace gidpolicy {

result<Selection> JacclFirstMapped::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, true,
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = table.length();
        const bool tracing = rec.on();
        // JACCL walks every index below gid_tbl_len; the entries a snapshot omits are empty or (in
        // an ibv_devinfo paste) GIDs with a zero interface id, which cannot be IPv4-mapped (bytes
        // 10-11 are ff ff), so looking at the listed entries is the same scan. GidTable::make
        // keeps every listed index below length(), so no bound check is needed per entry.
        for (const GidEntry& e : table) {
          // The hot path: most entries are not IPv4-mapped (link-local, IPv6, empty slots read as
          // zeros). One word test rejects them; the reason is worked out only when a trace is
          // recorded.
          if (!tracing && (!e.gid.is_ipv4_mapped() || e.state != EntryState::valid)) continue;
          if (e.state == EntryState::empty) {
            rec.step(e.index, Verdict::empty, [] { return std::string("empty slot"); });
            continue;
          }
          if (e.state == EntryState::unreadable) {
            // query_gid failed: JACCL skips the index and keeps scanning.
            rec.step(e.index, Verdict::unreadable, [&] { return detail::describe(e); });
            continue;
          }
          if (!e.gid.is_ipv4_mapped()) {
            rec.step(e.index, e.gid.is_zero() ? Verdict::zero : Verdict::not_ipv4_mapped,
                     [&] { return detail::describe(e) + ": not ::ffff:a.b.c.d"; });
            continue;
          }
          if (e.index > 255) {
            rec.step(e.index, Verdict::index_above_255, [&] { return detail::describe(e); });
            return fail(errc::index_exceeds_uint8,
                        detail::where(table) + ": the first IPv4-mapped GID, " + detail::describe(e) +
                            ", is at index " + std::to_string(e.index) +
                            ": JACCL would advertise it, but no sgid_index (a uint8_t) can name it");
          }
          rec.step(e.index, Verdict::chosen, [&] { return detail::describe(e) + ": first IPv4-mapped GID"; });
          return detail::select_entry(e);
        }
        return fail(errc::no_ipv4_mapped_gid,
                    detail::where(table) + ": no entry of [0, " + std::to_string(len) +
                        ") holds an IPv4-mapped (::ffff:a.b.c.d) GID; " + kNoMappedHint);
      });
}

}  // namespace gidpolicy
