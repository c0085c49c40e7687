// Internal: what the stacks' policies (nccl, ucx, perftest, mooncake, libfabric, rdma_cm) share —
// their option lists ("key=value,key") and their pinned-index read (not installed).
//
// Each stack parses its own options beside its policy (so a stack's spec is read by the code
// that knows the stack); this splitter only cuts the text and keeps each piece's position, so
// an error names the byte of the whole spec where it is, as the spec grammar promises.
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include "common.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::detail {

/// One "key[=value]" of a stack's option list.
struct StackOption {
  std::string_view key;
  std::optional<std::string_view> value;
  std::size_t key_pos = 0;    ///< position in the whole spec
  std::size_t value_pos = 0;  ///< position of the value in the whole spec
};

/// Options of a stack profile: `text` is what follows "name:", `base` its position in the spec.
/// At most 16 options (no stack has more than five); each key once; keys must be in `allowed`
/// (comma-separated, for the message too).
result<std::vector<StackOption>> split_stack_options(std::string_view stack, std::string_view text,
                                                     std::size_t base, std::string_view allowed);

/// "at position P: expected E, found 'X'" (errc::invalid_policy_spec).
Error stack_option_error(std::size_t pos, std::string_view expected, std::string_view found);

/// A decimal integer option in [lo, hi] (errors name the option).
result<std::int64_t> stack_integer(const StackOption& o, std::int64_t lo, std::int64_t hi);
/// The option's value, or an error when it has none.
result<std::string_view> stack_value(const StackOption& o, std::string_view what);

/// A pinned index read the way a stack that checks nothing reads it (NCCL_IB_GID_INDEX,
/// FI_VERBS_GID_IDX, UCX's explicit index once its port check passed): whatever the slot holds,
/// an empty slot's zeros included, so the RTR prediction shows what the driver then answers.
/// `who` names the setting in messages ("NCCL_IB_GID_INDEX=3").
result<Selection> pinned_index(const GidTable& table, std::uint32_t index, Recorder& rec, const std::string& who);

/// IPv4 as the stacks test it on the raw bytes (rdma-core's ipv6_addr_v4mapped, copied by
/// perftest, UCX and Mooncake): ::ffff:a.b.c.d, or the IPv4-multicast form ff0e::ffff:a.b.c.d.
bool stack_ipv4(const Gid& g) noexcept;

}  // namespace gidpolicy::detail
