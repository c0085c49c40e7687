// The two table walks several policies share (not installed): the first-IPv4-mapped scan (JACCL,
// ds4's macOS path) and the explicit-index read (ds4's `index=N`, JACCL legacy's index 1). Each
// policy keeps its own messages and trace notes; what the walk does is written once, here.
#pragma once

#include "common.hpp"

#include <optional>
#include <string>
#include <utility>

namespace gidpolicy::detail {

/// The first valid IPv4-mapped (::ffff:a.b.c.d) entry in index order, or nullptr. The entries a
/// snapshot omits are empty or (in an ibv_devinfo paste) GIDs with a zero interface id, which
/// cannot be IPv4-mapped (bytes 10-11 are ff ff), so walking the listed entries is the same scan
/// as walking every index below gid_tbl_len. With a trace, each entry passed over is recorded
/// with `note(entry)` as its note.
template <class NoteFn>
const GidEntry* first_ipv4_mapped(const GidTable& table, Recorder& rec, NoteFn&& note) {
  const bool tracing = rec.on();
  for (const GidEntry& e : table) {
    // The hot path: most entries are not IPv4-mapped (link-local, IPv6, empty slots read as
    // zeros). One word test rejects them; the reason is worked out only when a trace is recorded.
    if (!tracing && (!e.gid.is_ipv4_mapped() || e.state != EntryState::valid)) continue;
    if (e.state != EntryState::valid) {
      // An empty slot, or query_gid failed: the scan skips the index and keeps going.
      rec.step(e.index, e.state == EntryState::empty ? EntryVerdict::empty : EntryVerdict::unreadable,
               [&] { return note(e); });
      continue;
    }
    if (!e.gid.is_ipv4_mapped()) {
      rec.step(e.index, e.gid.is_zero() ? EntryVerdict::zero : EntryVerdict::not_ipv4_mapped,
               [&] { return note(e); });
      continue;
    }
    return &e;
  }
  return nullptr;
}

/// The explicit-index read: refuse an index beyond the table (`beyond()` gives the detail), run
/// the policy's own `check(entry or nullptr) -> result<void>` (ds4's uint8_t wrap), refuse a slot
/// the source did not print (`not_shown()` gives the detail) or could not read, and otherwise
/// accept whatever the slot holds, unchecked: an empty slot reads as zeros through ibv_query_gid.
/// `chosen_note(entry)` is the chosen step's trace note.
template <class BeyondFn, class CheckFn, class NotShownFn, class ChosenNoteFn>
result<Selection> read_explicit_index(const GidTable& table, std::uint32_t index, Recorder& rec,
                                      BeyondFn&& beyond, CheckFn&& check, NotShownFn&& not_shown,
                                      ChosenNoteFn&& chosen_note) {
  if (index >= table.length()) {
    rec.step(index, EntryVerdict::out_of_range, [] { return std::string("beyond the table"); });
    return fail(errc::index_out_of_range, beyond());
  }
  const GidEntry* e = table.find(index);
  if (auto checked = check(e); !checked) return fail(std::move(checked).error());
  if (!e && table.holes() == Holes::not_shown) {
    rec.step(index, EntryVerdict::not_shown, [] { return std::string("not printed by the source"); });
    return fail(errc::entry_not_shown, not_shown());
  }
  if (e && e->state == EntryState::unreadable) {
    rec.step(index, EntryVerdict::unreadable, [&] { return describe(*e); });
    return fail(errc::entry_unreadable, where(table) + ": " + holds(*e));
  }
  // (Made only for an unlisted slot: a listed entry is copied once, into the Selection.)
  std::optional<GidEntry> hole;
  const GidEntry& chosen = e ? *e : hole.emplace(GidEntry::empty(index));
  rec.step(index, EntryVerdict::chosen, [&] { return chosen_note(chosen); });
  return select_entry(chosen);
}

}  // namespace gidpolicy::detail
