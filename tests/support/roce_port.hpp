// The RoCE port most verbs tests use: mlx5_0 port 1 with the "GID index 3" layout, each
// address stored twice as on mlx5 (RoCE v1, then v2): fe80::1 at 0/1, ::ffff:10.0.0.1 at 2/3.
//
// Example:
//   FakeVerbs fake;
//   ASSERT_TRUE(fake.add_port(test::roce_port()));   // auto selects index 3 (RoCE v2)
#pragma once

#include <gidpolicy/gid_table.hpp>

#include "support/assert_ok.hpp"
#include "support/gid_literals.hpp"

namespace gidpolicy::test {

/// mlx5_0 port 1 (Ethernet, gid_tbl_len 16, active MTU 4096), entries 0-3 on netdev eth0.
inline GidTable roce_port() {
  PortInfo p{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), 16, Mtu::mtu_4096, 0};
  return VALUE_OR_FAIL(
      GidTable::make(p, {GidEntry::valid(0, g("fe80::1"), GidType::roce_v1, "eth0", 4),
                         GidEntry::valid(1, g("fe80::1"), GidType::roce_v2, "eth0", 4),
                         GidEntry::valid(2, g("::ffff:10.0.0.1"), GidType::roce_v1, "eth0", 4),
                         GidEntry::valid(3, g("::ffff:10.0.0.1"), GidType::roce_v2, "eth0", 4)}));
}

}  // namespace gidpolicy::test
