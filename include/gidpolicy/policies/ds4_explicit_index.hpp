// Ds4ExplicitIndex: ds4's `--rdma-gid-index N` on its macOS path, reproduced exactly.
//
// ds4 calls query_gid(ctx, 1, N) and accepts any success: no zero, type or IPv4 check, so an
// empty in-range slot is "selected" with the all-zero GID (ibv_query_gid reads empty slots as
// zeros). It then routes from `(uint8_t)N`: an index above 255 silently wraps to another entry.
// gidpolicy never returns an index above 255, so that case is an error that names the wrap
// and what ds4 would really have routed from.
//
// Failure: errc::index_out_of_range (N >= gid_tbl_len: the read fails),
// errc::index_exceeds_uint8 (N > 255: the wrap), errc::entry_unreadable,
// errc::entry_not_shown (the source did not print slot N).
//
// Example:
//   auto s = gidpolicy::Ds4ExplicitIndex{.index = 2}.select(table);   // spec "ds4:index=2"
#pragma once

#include <gidpolicy/policy.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gidpolicy {

struct Ds4ExplicitIndex {
  std::uint32_t index = 0;

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const { return "ds4:index=" + std::to_string(index); }
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// true: --rdma-gid-index is read without looking at the slot, as ds4 does.
  [[nodiscard]] bool picks_unchecked() const noexcept { return true; }
  friend bool operator==(const Ds4ExplicitIndex&, const Ds4ExplicitIndex&) = default;
};

}  // namespace gidpolicy
