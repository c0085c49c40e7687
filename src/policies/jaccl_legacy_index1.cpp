#include <gidpolicy/policies/jaccl_legacy_index1.hpp>

#include "common.hpp"

#include <optional>

namespace gidpolicy {

result<Selection> JacclLegacyIndex1::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        constexpr std::uint32_t kIndex = 1;
        if (kIndex >= table.length()) {
          rec.step(kIndex, Verdict::out_of_range, [] { return std::string("beyond the table"); });
          return fail(
              errc::index_out_of_range,
              detail::where(table) + ": index 1 is not below " +
                  (table.port().gid_tbl_len ? "gid_tbl_len " + std::to_string(table.length())
                                            : "the " + std::to_string(table.length()) + " entries listed") +
                  ": JACCL legacy's query_gid(1) fails");
        }
        const GidEntry* e = table.find(kIndex);
        if (!e && table.holes() == Holes::not_shown) {
          rec.step(kIndex, Verdict::not_shown, [] { return std::string("not printed by the source"); });
          return fail(errc::entry_not_shown,
                      detail::where(table) +
                          ": index 1 was not printed by the source (empty, or a GID with a zero "
                          "interface id): what JACCL legacy would advertise is unknown");
        }
        if (e && e->state == EntryState::unreadable) {
          rec.step(kIndex, Verdict::unreadable, [&] { return detail::describe(*e); });
          return fail(errc::entry_unreadable, detail::where(table) + ": " + detail::holds(*e));
        }
        // An empty slot reads as zeros through ibv_query_gid and JACCL legacy advertised that as is.
        // (Made only for an unlisted slot: a listed entry is copied once, into the Selection.)
        std::optional<GidEntry> hole;
        const GidEntry& chosen = e ? *e : hole.emplace(GidEntry::empty(kIndex));
        rec.step(kIndex, Verdict::chosen, [&] {
          return chosen.usable() ? detail::describe(chosen) + ": index 1, unchecked"
                                 : detail::describe(chosen) + ": reads as the zero GID, advertised unchecked";
        });
        return detail::select_entry(chosen);
      });
}

}  // namespace gidpolicy
