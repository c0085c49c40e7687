// The kernel's rdma_cm rule for turning an IP address into a GID: which device, port and
// sgid_index rdma_bind_addr / rdma_resolve_addr end up with. One function, used by both the
// drop-in fake librdmacm (fakes/librdmacm) and gidpolicy's own prediction, so the two agree by
// construction.
//
// The rule (Linux drivers/infiniband/core/cma.c, cma_acquire_dev_by_src_ip and
// cma_validate_port): the source address (the one bound, or the one the kernel's route to the
// destination prefers) is owned by one netdev; every RDMA device is tried in order, each port
// in order, and the first port whose GID table holds that address as a GID *of the port's
// default RoCE mode* (RoCE v2 unless configfs `default_roce_mode` says v1), bound to *that
// netdev*, wins; within the port the lowest such index. No such entry anywhere is ENODEV. There
// is no fallback: not another type, not another netdev, not a link-local GID.
//
// Example:
//   auto tables = gidpolicy::formats::read_tables_file("nccl-1573-pod.show_gids.txt").value();
//   auto c = gidpolicy::rdma_cm_source(tables, gidpolicy::parse_address("10.152.0.12").value(),
//                                      "net1", {});
//   // c->table == 0 (mlx5_0 port 1), c->entry->index == 7 (the RoCE v2 GID)
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

/// A port's default RoCE mode (Linux: configfs
/// /sys/kernel/config/rdma_cm/<dev>/ports/<port>/default_roce_mode).
struct RoceModeSetting {
  std::string device;                ///< e.g. "mlx5_0"
  std::optional<std::uint32_t> port; ///< nullopt: every port of the device
  GidType mode = GidType::roce_v2;   ///< roce_v1 or roce_v2
  friend bool operator==(const RoceModeSetting&, const RoceModeSetting&) = default;
};

/// "mlx5_0=v1,mlx5_1:2=v2" (device[:port]=v1|v2, comma-separated, at most 256 settings):
/// errc::invalid_field naming the position and the token.
result<std::vector<RoceModeSetting>> parse_roce_modes(std::string_view text);

/// The default RoCE mode of `port`: the last setting naming it, else RoCE v2 (the kernel's
/// default since Linux 4.9 on devices that support v2).
GidType default_roce_mode(const PortInfo& port, std::span<const RoceModeSetting> modes) noexcept;

/// What rdma_cm chose: the port (an index into the span given) and its entry.
struct RdmaCmSource {
  std::size_t table = 0;
  const GidEntry* entry = nullptr;  ///< points into the table given
  GidType mode = GidType::roce_v2;  ///< the port's default mode the entry matched
};

/// The kernel's choice for `address` (an IPv4 address as ::ffff:a.b.c.d) owned by `netdev`:
/// see the header comment. `netdev` nullopt: the caller does not know the network namespace
/// (a table read from a file); the netdev the first table entry holding the address is bound to
/// then stands for it. Only Ethernet (RoCE) ports are tried: an InfiniBand port resolves IP
/// addresses through IPoIB, which the tables do not describe.
/// Errors: errc::no_candidate whose detail begins "ENODEV" and says, per port, why none
/// qualified (no such GID, another type than the default mode, another netdev); errc::invalid_argument
/// for the zero address.
result<RdmaCmSource> rdma_cm_source(std::span<const GidTable> ports, const Gid& address,
                                    std::optional<std::string_view> netdev,
                                    std::span<const RoceModeSetting> modes);

}  // namespace gidpolicy
