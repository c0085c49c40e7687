#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/spec_options.hpp>

#include "common.hpp"
#include "scan.hpp"

#include <limits>

namespace gidpolicy {

// "ds4" is ds4's macOS path either way: without an index the scan, with its index argument
// (stack_vars::kDs4GidIndex) N the index read unchecked (its own type, Ds4ExplicitIndex).
result<AnyPolicy> Ds4Scan::from_options(const SpecOptions& opts) {
  if (opts.empty()) return AnyPolicy(Ds4Scan{});
  GIDPOLICY_TRY(v, opts.integer(opts.front(), 0, std::numeric_limits<std::uint32_t>::max(), "an index"));
  return AnyPolicy(Ds4ExplicitIndex{static_cast<std::uint32_t>(v)});
}

result<Selection> Ds4Scan::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, true,
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = table.length();
        // Every listed entry is below length() (GidTable::make checks it).
        const GidEntry* found =
            detail::first_ipv4_mapped(table, rec, [](const GidEntry& e) { return detail::note_for(e); });
        if (!found)
          return fail(errc::no_ipv4_mapped_gid, detail::where(table) + ": no entry of [0, " +
                                                    std::to_string(len) +
                                                    ") holds an IPv4-mapped (::ffff:a.b.c.d) GID");
        const GidEntry& e = *found;
        if (e.index > 255) {
          rec.step(e.index, EntryVerdict::index_above_255, [&] { return detail::describe(e); });
          return fail(errc::index_exceeds_uint8,
                      detail::where(table) + ": the first IPv4-mapped GID is at index " +
                          std::to_string(e.index) + ": ds4 would route from (uint8_t)" +
                          std::to_string(e.index) + " = " + std::to_string(e.index & 0xffu) +
                          ", another entry");
        }
        rec.step(e.index, EntryVerdict::chosen,
                 [&] { return detail::describe(e) + ": first IPv4-mapped GID"; });
        return detail::select_entry(e);
      });
}

}  // namespace gidpolicy
