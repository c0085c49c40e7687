#include "stack_common.hpp"

#include "scan.hpp"

namespace gidpolicy::detail {
result<Selection> pinned_index(const GidTable& table, std::uint32_t index, Recorder& rec,
                               const std::function<std::string()>& who) {
  const std::uint32_t len = table.length();
  return read_explicit_index(
      table, index, rec,
      [&] {
        return where(table) + ": " + who() + " is not below " +
               (table.port().gid_tbl_len ? "gid_tbl_len " : "the entries listed: ") + std::to_string(len) +
               ": the index names no slot (the driver refuses it)";
      },
      [&](const GidEntry*) -> result<void> {
        if (index <= 255) return success();
        rec.step(index, EntryVerdict::index_above_255, [] { return std::string("not an sgid_index"); });
        return fail(errc::index_exceeds_uint8,
                    where(table) + ": " + who() +
                        " does not fit sgid_index (a uint8_t): it would route from index " +
                        std::to_string(index & 0xffu));
      },
      [&] { return where(table) + ": " + who() + " names a slot the source did not print"; },
      [&](const GidEntry& chosen) {
        return (chosen.state == EntryState::empty ? std::string("empty slot") : describe(chosen)) + ": " +
               who() + ", used unchecked";
      });
}

bool stack_ipv4(const Gid& g) noexcept {
  if (g.is_ipv4_mapped()) return true;
  const auto& b = g.bytes();
  // ff0e::ffff:a.b.c.d (rdma-core's "IPv4 encoded multicast addresses").
  if (b[0] != 0xff || b[1] != 0x0e) return false;
  for (std::size_t i = 2; i < 10; ++i)
    if (b[i] != 0) return false;
  return b[10] == 0xff && b[11] == 0xff;
}

}  // namespace gidpolicy::detail
