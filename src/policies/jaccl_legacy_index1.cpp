#include <gidpolicy/policies/jaccl_legacy_index1.hpp>

#include "common.hpp"
#include "scan.hpp"

namespace gidpolicy {

result<Selection> JacclLegacyIndex1::select(const GidTable& table, SelectOptions run) const {
  return detail::traced([this] { return spec(); }, run, false,
                        [&](detail::Recorder& rec) -> result<Selection> {
                          constexpr std::uint32_t kIndex = 1;
                          // An empty slot reads as zeros through ibv_query_gid and JACCL legacy advertised
                          // that as is.
                          return detail::read_explicit_index(
                              table, kIndex, rec,
                              [&] {
                                return detail::where(table) + ": index 1 is not below " +
                                       (table.port().gid_tbl_len
                                            ? "gid_tbl_len " + std::to_string(table.length())
                                            : "the " + std::to_string(table.length()) + " entries listed") +
                                       ": JACCL legacy's query_gid(1) fails";
                              },
                              [](const GidEntry*) -> result<void> { return success(); },
                              [&] {
                                return detail::where(table) +
                                       ": index 1 was not printed by the source (empty, or a GID with a zero "
                                       "interface id): what JACCL legacy would advertise is unknown";
                              },
                              [](const GidEntry& chosen) {
                                return chosen.usable() ? detail::describe(chosen) + ": index 1, unchecked"
                                                       : detail::describe(chosen) +
                                                             ": reads as the zero GID, advertised unchecked";
                              });
                        });
}

}  // namespace gidpolicy
