#include <gidpolicy/policies/jaccl_first_mapped.hpp>

#include "common.hpp"
#include "scan.hpp"

namespace gidpolicy {

result<Selection> JacclFirstMapped::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, true,
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = table.length();
        // JACCL walks every index below gid_tbl_len; GidTable::make keeps every listed index below
        // length(), so no bound check is needed per entry. An unreadable index (query_gid failed)
        // is skipped and the scan goes on.
        const GidEntry* found = detail::first_ipv4_mapped(table, rec, [](const GidEntry& e) {
          if (e.state == EntryState::empty) return std::string("empty slot");
          if (e.state == EntryState::unreadable) return detail::describe(e);
          return detail::describe(e) + ": not ::ffff:a.b.c.d";
        });
        if (!found)
          return fail(errc::no_ipv4_mapped_gid,
                      detail::where(table) + ": no entry of [0, " + std::to_string(len) +
                          ") holds an IPv4-mapped (::ffff:a.b.c.d) GID; " + kNoMappedHint);
        const GidEntry& e = *found;
        if (e.index > 255) {
          rec.step(e.index, EntryVerdict::index_above_255, [&] { return detail::describe(e); });
          return fail(errc::index_exceeds_uint8,
                      detail::where(table) + ": the first IPv4-mapped GID, " + detail::describe(e) +
                          ", is at index " + std::to_string(e.index) +
                          ": JACCL would advertise it, but no sgid_index (a uint8_t) can name it");
        }
        rec.step(e.index, EntryVerdict::chosen,
                 [&] { return detail::describe(e) + ": first IPv4-mapped GID"; });
        return detail::select_entry(e);
      });
}

}  // namespace gidpolicy
