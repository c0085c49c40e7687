#include <gidpolicy/policies/ds4_explicit_index.hpp>

#include "common.hpp"
#include "scan.hpp"

namespace gidpolicy {

result<Selection> Ds4ExplicitIndex::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = table.length();
        // Any successful read is accepted, an empty slot's zeros included: ds4 checks nothing.
        return detail::read_explicit_index(
            table, index, rec,
            [&] {
              return detail::where(table) + ": index " + std::to_string(index) + " is not below " +
                     (table.port().gid_tbl_len ? "gid_tbl_len " : "the entries listed: ") +
                     std::to_string(len) + ": ds4's query_gid fails";
            },
            [&](const GidEntry* e) -> result<void> {
              if (index <= 255) return success();
              // ds4 reads the entry fine, then `sgid_index = (uint8_t)index` routes from another slot.
              const auto wrapped = static_cast<std::uint32_t>(index & 0xffu);
              const GidEntry* w = table.find(wrapped);
              rec.step(index, EntryVerdict::index_above_255,
                       [&] { return e ? detail::describe(*e) : std::string("not listed"); });
              return fail(
                  errc::index_exceeds_uint8,
                  detail::where(table) + ": index " + std::to_string(index) +
                      " does not fit sgid_index (uint8_t): ds4 " + "would advertise " +
                      (e ? detail::describe(*e) : std::string("this slot")) + " but route from index " +
                      std::to_string(wrapped) + ", which " +
                      (w ? (w->state == EntryState::valid ? "holds " : "is ") + detail::describe(*w)
                         : std::string(table.holes() == Holes::not_shown ? "was not printed" : "is empty")));
            },
            [&] {
              return detail::where(table) + ": index " + std::to_string(index) +
                     " was not printed by the source: ds4 would accept whatever it holds";
            },
            [](const GidEntry& chosen) { return detail::describe(chosen) + ": accepted unchecked"; });
      });
}

}  // namespace gidpolicy
