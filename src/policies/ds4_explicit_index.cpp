#include <gidpolicy/policies/ds4_explicit_index.hpp>

#include "common.hpp"

#include <optional>

namespace gidpolicy {

result<Selection> Ds4ExplicitIndex::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = table.length();
        if (index >= len) {
          rec.step(index, Verdict::out_of_range, [] { return std::string("beyond the table"); });
          return fail(errc::index_out_of_range,
                      detail::where(table) + ": index " + std::to_string(index) + " is not below " +
                          (table.port().gid_tbl_len ? "gid_tbl_len " : "the entries listed: ") +
                          std::to_string(len) + ": ds4's query_gid fails");
        }
        const GidEntry* e = table.find(index);
        if (index > 255) {
          // ds4 reads the entry fine, then `sgid_index = (uint8_t)index` routes from another slot.
          const auto wrapped = static_cast<std::uint32_t>(index & 0xffu);
          const GidEntry* w = table.find(wrapped);
          rec.step(index, Verdict::index_above_255,
                   [&] { return e ? detail::describe(*e) : std::string("not listed"); });
          return fail(
              errc::index_exceeds_uint8,
              detail::where(table) + ": index " + std::to_string(index) +
                  " does not fit sgid_index (uint8_t): ds4 " + "would advertise " +
                  (e ? detail::describe(*e) : std::string("this slot")) + " but route from index " +
                  std::to_string(wrapped) + ", which " +
                  (w ? (w->state == EntryState::valid ? "holds " : "is ") + detail::describe(*w)
                     : std::string(table.holes() == Holes::not_shown ? "was not printed" : "is empty")));
        }
        if (!e && table.holes() == Holes::not_shown) {
          rec.step(index, Verdict::not_shown, [] { return std::string("not printed by the source"); });
          return fail(errc::entry_not_shown,
                      detail::where(table) + ": index " + std::to_string(index) +
                          " was not printed by the source: ds4 would accept whatever it holds");
        }
        if (e && e->state == EntryState::unreadable) {
          rec.step(index, Verdict::unreadable, [&] { return detail::describe(*e); });
          return fail(errc::entry_unreadable, detail::where(table) + ": " + detail::holds(*e));
        }
        // Any successful read is accepted, an empty slot's zeros included: ds4 checks nothing.
        // (Made only for an unlisted slot: a listed entry is copied once, into the Selection.)
        std::optional<GidEntry> hole;
        const GidEntry& chosen = e ? *e : hole.emplace(GidEntry::empty(index));
        rec.step(index, Verdict::chosen, [&] { return detail::describe(chosen) + ": accepted unchecked"; });
        return detail::select_entry(chosen);
      });
}

}  // namespace gidpolicy
