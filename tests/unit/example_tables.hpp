// The tables of examples/tables/, built by hand with GidTable::make from the values in the
// files, so the policy tests do not depend on the text readers (formats/ has its own tests;
// policies_example_files_test.cpp checks that reading the files yields these same tables).
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include "support/assert_ok.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gidpolicy::test {

inline Gid gid(std::string_view s) { return VALUE_OR_FAIL(Gid::parse(s)); }

inline PortInfo port(std::string device, LinkLayer ll, std::optional<std::uint32_t> len,
                     Mtu mtu = Mtu::mtu_1024) {
  return PortInfo{std::move(device), 1, PortState::active, ll, len, mtu, 0};
}

/// nccl-769.devinfo.txt: mlx5 bond, v1/v2 pairs; first IPv4-mapped entry is index 2 (RoCE v1).
inline GidTable nccl_769() {
  return VALUE_OR_FAIL(GidTable::make(port("mlx5_bond_0", LinkLayer::ethernet(), 256),
                                      {GidEntry::valid(0, gid("fe80::ac0:ebff:feda:1cfb"), GidType::roce_v1),
                                       GidEntry::valid(1, gid("fe80::ac0:ebff:feda:1cfb"), GidType::roce_v2),
                                       GidEntry::valid(2, gid("::ffff:200.0.209.6"), GidType::roce_v1),
                                       GidEntry::valid(3, gid("::ffff:200.0.209.6"), GidType::roce_v2)},
                                      Holes::not_shown));
}

/// apple-ds4qa-rdma_en1.devinfo.txt: Thunderbolt, IPv4-mapped at 1 (JACCL's literal 1 is right).
inline GidTable apple_ds4qa() {
  return VALUE_OR_FAIL(GidTable::make(
      port("rdma_en1", LinkLayer::thunderbolt(), 16),
      {GidEntry::valid(0, gid("fe80::3c51:2eff:fe10:a42")), GidEntry::valid(1, gid("::ffff:10.99.0.2"))},
      Holes::not_shown));
}

/// apple-mlx4191-rdma_en3-noipv4.devinfo.txt: Thunderbolt with only the fe80 at 0.
inline GidTable apple_noipv4() {
  return VALUE_OR_FAIL(GidTable::make(port("rdma_en3", LinkLayer::thunderbolt(), 16),
                                      {GidEntry::valid(0, gid("fe80::347c:94ff:fecd:45c4"))},
                                      Holes::not_shown));
}

/// macmini-mapped-at-2.json: fe80 at 0, empty 1, ::ffff:10.99.0.3 at 2 (MLX PR 3389).
inline GidTable macmini() {
  return VALUE_OR_FAIL(GidTable::make(port("rdma_en2", LinkLayer::thunderbolt(), 16),
                                      {GidEntry::valid(0, gid("fe80::14a2:7cff:fe31:9d05")),
                                       GidEntry::empty(1), GidEntry::valid(2, gid("::ffff:10.99.0.3"))}));
}

/// ds4-linux-unit.json: ds4's own tp_rdma_linux_gid test table.
inline GidTable ds4_linux_unit() {
  return VALUE_OR_FAIL(GidTable::make(port("ds4_test0", LinkLayer::ethernet(), 5),
                                      {GidEntry::valid(0, gid("::ffff:127.0.0.1"), GidType::roce_v1, "lo"),
                                       GidEntry::valid(1, gid("::ffff:127.0.0.1"), GidType::roce_v1, "lo"),
                                       GidEntry::valid(2, gid("::ffff:127.0.0.2"), GidType::roce_v2, "lo"),
                                       GidEntry::valid(3, gid("::ffff:127.0.0.1"), GidType::roce_v2, "lo"),
                                       GidEntry::valid(4, gid("::"), GidType::roce_v2, "lo")}));
}

/// nccl-1573-pod.show_gids.txt: a pod whose GIDs start at index 4 (two devices).
inline GidTable nccl_1573_pod(int device) {
  if (device == 0)
    return VALUE_OR_FAIL(
        GidTable::make(port("mlx5_0", LinkLayer::ethernet(), std::nullopt),
                       {GidEntry::valid(4, gid("fe80::a4ed:ccff:fe8b:1994"), GidType::roce_v1, "net1"),
                        GidEntry::valid(5, gid("fe80::a4ed:ccff:fe8b:1994"), GidType::roce_v2, "net1"),
                        GidEntry::valid(6, gid("::ffff:10.152.0.12"), GidType::roce_v1, "net1"),
                        GidEntry::valid(7, gid("::ffff:10.152.0.12"), GidType::roce_v2, "net1")}));
  return VALUE_OR_FAIL(
      GidTable::make(port("mlx5_1", LinkLayer::ethernet(), std::nullopt),
                     {GidEntry::valid(4, gid("fe80::9459:9bff:fe54:7704"), GidType::roce_v1, "net2"),
                      GidEntry::valid(5, gid("fe80::9459:9bff:fe54:7704"), GidType::roce_v2, "net2"),
                      GidEntry::valid(6, gid("::ffff:10.152.4.12"), GidType::roce_v1, "net2"),
                      GidEntry::valid(7, gid("::ffff:10.152.4.12"), GidType::roce_v2, "net2")}));
}

/// ibm-pr4-cx6.show_gids.txt: two link-local pairs (0-3) before the IPv4 pair at 4/5.
inline GidTable ibm_cx6() {
  return VALUE_OR_FAIL(
      GidTable::make(port("mlx5_0", LinkLayer::ethernet(), std::nullopt),
                     {GidEntry::valid(0, gid("fe80::e42:a1ff:fe5d:4db8"), GidType::roce_v1, "ens1f0"),
                      GidEntry::valid(1, gid("fe80::e42:a1ff:fe5d:4db8"), GidType::roce_v2, "ens1f0"),
                      GidEntry::valid(2, gid("fe80::1186:a6b1:3f0b:c441"), GidType::roce_v1, "ens1f0"),
                      GidEntry::valid(3, gid("fe80::1186:a6b1:3f0b:c441"), GidType::roce_v2, "ens1f0"),
                      GidEntry::valid(4, gid("::ffff:172.19.0.60"), GidType::roce_v1, "ens1f0"),
                      GidEntry::valid(5, gid("::ffff:172.19.0.60"), GidType::roce_v2, "ens1f0")}));
}

/// mooncake-1617-ipv6only.show_gids.txt: IPv6-only NICs (fe80 + ULA), one with link-local only.
inline GidTable mooncake_ipv6(int device) {
  if (device == 0)
    return VALUE_OR_FAIL(GidTable::make(
        port("rocep105s0", LinkLayer::ethernet(), std::nullopt),
        {GidEntry::valid(0, gid("fe80::690:81ff:fe39:e3e8"), GidType::roce_v2, "enp105s0"),
         GidEntry::valid(1, gid("fd93:16d3:59b6:10d:690:81ff:fe39:e3e8"), GidType::roce_v2, "enp105s0")}));
  if (device == 1)
    return VALUE_OR_FAIL(GidTable::make(
        port("rocep121s0", LinkLayer::ethernet(), std::nullopt),
        {GidEntry::valid(0, gid("fe80::690:81ff:fe39:1c8"), GidType::roce_v2, "enp121s0"),
         GidEntry::valid(1, gid("fd93:16d3:59b6:10e:690:81ff:fe39:1c8"), GidType::roce_v2, "enp121s0")}));
  return VALUE_OR_FAIL(GidTable::make(
      port("rocep193s0f0", LinkLayer::ethernet(), std::nullopt),
      {GidEntry::valid(0, gid("fe80::7ec2:55ff:feba:ff88"), GidType::roce_v1, "enp193s0f0np0"),
       GidEntry::valid(1, gid("fe80::7ec2:55ff:feba:ff88"), GidType::roce_v2, "enp193s0f0np0")}));
}

/// Every example table, named "<file>[#device]".
inline std::vector<std::pair<std::string, GidTable>> all_example_tables() {
  return {{"nccl-769.devinfo.txt", nccl_769()},
          {"apple-ds4qa-rdma_en1.devinfo.txt", apple_ds4qa()},
          {"apple-mlx4191-rdma_en3-noipv4.devinfo.txt", apple_noipv4()},
          {"macmini-mapped-at-2.json", macmini()},
          {"ds4-linux-unit.json", ds4_linux_unit()},
          {"nccl-1573-pod.show_gids.txt#mlx5_0", nccl_1573_pod(0)},
          {"nccl-1573-pod.show_gids.txt#mlx5_1", nccl_1573_pod(1)},
          {"ibm-pr4-cx6.show_gids.txt", ibm_cx6()},
          {"mooncake-1617-ipv6only.show_gids.txt#rocep105s0", mooncake_ipv6(0)},
          {"mooncake-1617-ipv6only.show_gids.txt#rocep121s0", mooncake_ipv6(1)},
          {"mooncake-1617-ipv6only.show_gids.txt#rocep193s0f0", mooncake_ipv6(2)}};
}

}  // namespace gidpolicy::test
