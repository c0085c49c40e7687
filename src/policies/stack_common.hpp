// Internal: what the stacks' policies (nccl, ucx, perftest, mooncake, libfabric, rdma_cm) share:
// the read of a pinned index and the stacks' IPv4 test (not installed). Each reads its own spec
// options beside its policy (from_options, registry.hpp).
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include "common.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::detail {

/// A pinned index read the way a stack that checks nothing reads it (NCCL's and libfabric's pins,
/// UCX's explicit index once its port check passed; stack_table.hpp): whatever the slot holds,
/// an empty slot's zeros included, so the RTR prediction shows what the driver then answers.
/// `who()` names the setting in messages (NCCL's pin "=3"); it is called only when a
/// message or a trace note is made, so an untraced success allocates nothing.
result<Selection> pinned_index(const GidTable& table, std::uint32_t index, Recorder& rec,
                               const std::function<std::string()>& who);

/// IPv4 as the stacks test it on the raw bytes (rdma-core's ipv6_addr_v4mapped, copied by
/// perftest, UCX and Mooncake): ::ffff:a.b.c.d, or the IPv4-multicast form ff0e::ffff:a.b.c.d.
bool stack_ipv4(const Gid& g) noexcept;

}  // namespace gidpolicy::detail
