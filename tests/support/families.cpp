#include "support/families.hpp"

#include "support/assert_ok.hpp"
#include "support/generators.hpp"
#include "support/shrinking.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

namespace gidpolicy::test {
namespace {

PortInfo port(std::string device, LinkLayer link, std::optional<std::uint32_t> len, Mtu mtu = Mtu::mtu_1024) {
  PortInfo p;
  p.device = std::move(device);
  p.port = 1;
  p.state = PortState::active;
  p.link_layer = link;
  p.gid_tbl_len = len;
  p.active_mtu = mtu;
  return p;
}

GidTable make(PortInfo p, std::vector<GidEntry> entries, Holes holes = Holes::empty) {
  return VALUE_OR_FAIL(GidTable::make(std::move(p), std::move(entries), holes));
}

// Small-valued IPv4 addresses first so shrinking lands on 10.0.0.x.
rc::Gen<std::uint32_t> gen_private_v4() {
  return weighted_one_of<std::uint32_t>({{1, rc::gen::inRange<std::uint32_t>(0x0a000001u, 0x0a000010u)},
                                         {1, rc::gen::inRange<std::uint32_t>(0x0a000001u, 0x0affffffu)},
                                         {1, rc::gen::inRange<std::uint32_t>(0xac100001u, 0xac1fffffu)},
                                         {1, rc::gen::inRange<std::uint32_t>(0xa9fe0001u, 0xa9fefffeu)}});
}

Gid ula(std::uint16_t subnet, std::uint64_t iid) {
  Gid::Bytes b{0xfd,
               0x93,
               0x16,
               0xd3,
               0x59,
               0xb6,
               static_cast<std::uint8_t>(subnet >> 8),
               static_cast<std::uint8_t>(subnet)};
  for (std::size_t k = 0; k < 8; ++k) b[15 - k] = static_cast<std::uint8_t>(iid >> (8 * k));
  return Gid(b);
}

}  // namespace

rc::Gen<GidTable> gen_thunderbolt_table() {
  return rc::gen::exec([] {
    const auto n = *rc::gen::inRange(1, 8);
    const std::string device = "rdma_en" + std::to_string(n);
    std::vector<GidEntry> entries;
    entries.push_back(GidEntry::valid(0, *gen_link_local_gid()));
    // Where the mapped GID lands: 1 usually; 2..5 on some Mac minis (MLX PR 3389); absent when
    // the port's own interface has no IPv4 address (PR 4191).
    const auto where = *weighted_element<int>({{6, 1}, {3, 2}, {1, 3}, {1, 5}, {2, -1}});
    const bool holes_not_empty = *weighted_element<bool>({{3, false}, {1, true}});
    if (where > 0) {
      for (int i = 1; i < where; ++i)
        if (!holes_not_empty) entries.push_back(GidEntry::empty(static_cast<std::uint32_t>(i)));
      entries.push_back(
          GidEntry::valid(static_cast<std::uint32_t>(where), Gid::ipv4_mapped(*gen_private_v4())));
    }
    return make(port(device, LinkLayer::thunderbolt(), 16), std::move(entries));
  });
}

rc::Gen<GidTable> gen_mlx5_table() {
  return rc::gen::exec([] {
    // Pods and macvlan start at 4 or 6 with empty slots below (NCCL 1573, multus-cni 1100).
    const auto base = *weighted_element<std::uint32_t>({{5, 0}, {2, 4}, {1, 6}});
    const auto n_ll = *weighted_element<int>({{5, 1}, {1, 2}, {1, 0}});  // IBM PR 4: two link-locals
    const auto n_v4 = *weighted_element<int>({{5, 1}, {2, 2}, {1, 0}});
    const auto n_v6 = *weighted_element<int>({{4, 0}, {1, 1}});
    const bool bond_vxlan = *weighted_element<bool>({{4, false}, {1, true}});
    const std::string dev = *element<std::string>({"ens1f0", "bond0", "net1", "enp105s0"});
    std::vector<GidEntry> entries;
    std::uint32_t i = base;
    auto pair = [&](Gid g, const std::string& netdev) {
      entries.push_back(GidEntry::valid(i++, g, GidType::roce_v1, netdev, 5));
      entries.push_back(GidEntry::valid(i++, g, GidType::roce_v2, netdev, 5));
    };
    for (int k = 0; k < n_ll; ++k) pair(*gen_link_local_gid(), dev);
    std::optional<Gid> first_v4;
    for (int k = 0; k < n_v4; ++k) {
      Gid v4 = Gid::ipv4_mapped(*gen_private_v4());
      if (!first_v4) first_v4 = v4;
      pair(v4, dev);
    }
    for (int k = 0; k < n_v6; ++k)
      pair(ula(static_cast<std::uint16_t>(k + 1), *rc::gen::inRange<std::uint64_t>(1, 1u << 20)), dev);
    if (bond_vxlan && first_v4) pair(*first_v4, "vxlan100");  // the same IP on a second netdev
    for (std::uint32_t k = 0; k < base; ++k) entries.push_back(GidEntry::empty(k));
    const auto mtu = *element<Mtu>({Mtu::mtu_1024, Mtu::mtu_4096});
    return make(port("mlx5_" + std::to_string(*rc::gen::inRange(0, 4)), LinkLayer::ethernet(), 256, mtu),
                std::move(entries));
  });
}

rc::Gen<GidTable> gen_other_table() {
  return rc::gen::exec([] {
    const auto kind = *rc::gen::inRange(0, 3);
    std::vector<GidEntry> entries;
    if (kind == 0) {  // rxe: link-local v1/v2 then IPv4 v1/v2, on eth0
      Gid ll = *gen_link_local_gid();
      Gid v4 = Gid::ipv4_mapped(*gen_private_v4());
      entries = {GidEntry::valid(0, ll, GidType::roce_v1, "eth0", 2),
                 GidEntry::valid(1, ll, GidType::roce_v2, "eth0", 2),
                 GidEntry::valid(2, v4, GidType::roce_v1, "eth0", 2),
                 GidEntry::valid(3, v4, GidType::roce_v2, "eth0", 2)};
      return make(port("rxe0", LinkLayer::ethernet(), 128), std::move(entries));
    }
    if (kind == 1) {  // IPv6-only RoCE v2 (AMD ionic, Broadcom Thor-2; Mooncake 1617)
      const std::string dev = *element<std::string>({"enp105s0", "enp121s0"});
      entries.push_back(GidEntry::valid(0, *gen_link_local_gid(), GidType::roce_v2, dev, 7));
      if (*weighted_element<bool>({{4, true}, {1, false}}))
        entries.push_back(GidEntry::valid(1, ula(0x010d, *rc::gen::inRange<std::uint64_t>(1, 1u << 20)),
                                          GidType::roce_v2, dev, 7));
      return make(port("rocep105s0", LinkLayer::ethernet(), std::nullopt), std::move(entries));
    }
    // InfiniBand: the GUID-based fe80 GID at 0 is routable within the subnet.
    entries.push_back(GidEntry::valid(0, *gen_link_local_gid(), GidType::ib));
    PortInfo p = port("mlx5_ib0", LinkLayer::infiniband(), 128, Mtu::mtu_4096);
    p.lid = static_cast<std::uint16_t>(*rc::gen::inRange(1, 0xbfff));
    return make(p, std::move(entries));
  });
}

rc::Gen<GidTable> gen_wide_table() {
  return rc::gen::exec([] {
    const auto len = *rc::gen::inRange<std::uint32_t>(1, 1025);
    // Sparse: a handful of entries anywhere in [0, len), so indices above 255 occur.
    const auto count = *rc::gen::inRange<std::uint32_t>(0, std::min<std::uint32_t>(len, 12) + 1);
    std::vector<std::uint32_t> indices;
    for (std::uint32_t k = 0; k < count; ++k) indices.push_back(*rc::gen::inRange<std::uint32_t>(0, len));
    std::sort(indices.begin(), indices.end());
    indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    std::vector<GidEntry> entries;
    for (auto idx : indices) {
      const auto what = *weighted_element<int>({{6, 0}, {2, 1}, {1, 2}, {1, 3}});
      if (what == 0)
        entries.push_back(GidEntry::valid(idx, *gen_gid(), *rc::gen::arbitrary<GidType>(), "eth0", 2));
      else if (what == 1)
        entries.push_back(GidEntry::empty(idx));
      else if (what == 2)
        entries.push_back(GidEntry::unreadable(idx, std::error_code(22, std::generic_category())));
      else
        entries.push_back(
            GidEntry::valid(idx, Gid{}, GidType::roce_v2, "eth0", 2));  // zero GID reported valid
    }
    const auto link = *element<LinkLayer>(
        {LinkLayer::ethernet(), LinkLayer::thunderbolt(), LinkLayer::infiniband(), LinkLayer::from_raw(9)});
    return make(port("wide0", link, len), std::move(entries));
  });
}

rc::Gen<GidTable> gen_sparse_table() {
  // One slot: (index, kind, type, address bits). Everything a slot needs is drawn as part of its
  // element, so dropping a slot while shrinking neither moves the others nor redraws them.
  using Slot = std::tuple<std::uint32_t, int, GidType, std::uint32_t, std::uint64_t>;
  const auto slot = rc::gen::tuple(
      weighted_one_of<std::uint32_t>(
          {{4, rc::gen::inRange<std::uint32_t>(0, 8)}, {1, rc::gen::inRange<std::uint32_t>(0, 1024)}}),
      weighted_element<int>({{4, 0}, {2, 1}, {1, 2}, {1, 3}, {2, 4}, {1, 5}, {1, 6}}),
      weighted_element<GidType>(
          {{3, GidType::roce_v2}, {2, GidType::roce_v1}, {1, GidType::ib}, {1, GidType::unknown}}),
      gen_private_v4(), rc::gen::inRange<std::uint64_t>(1, std::numeric_limits<std::uint64_t>::max()));
  return rc::gen::exec([slot] {
    // Port-wide choices first, so that they stay put while the slots shrink.
    const auto link = *element<LinkLayer>(
        {LinkLayer::ethernet(), LinkLayer::thunderbolt(), LinkLayer::infiniband(), LinkLayer::from_raw(9)});
    const bool len_known = *weighted_element<bool>({{4, true}, {1, false}});
    const auto requested_len = *weighted_one_of<std::uint32_t>(
        {{4, rc::gen::inRange<std::uint32_t>(1, 9)}, {1, rc::gen::inRange<std::uint32_t>(1, 1025)}});
    const Holes holes = *weighted_element<Holes>({{4, Holes::empty}, {1, Holes::not_shown}});
    const auto slots = *rc::gen::container<std::vector<Slot>>(slot);

    std::vector<GidEntry> entries;
    std::set<std::uint32_t> used;
    std::uint32_t next = 0;
    for (const auto& [index, kind, type, v4, iid] : slots) {
      if (!used.insert(index).second) continue;  // a later slot at a taken index is dropped
      next = std::max(next, index + 1);
      switch (kind) {
        case 0:
          entries.push_back(GidEntry::valid(index, Gid::ipv4_mapped(v4), type, "eth0", 2));
          break;
        case 1: {
          Gid::Bytes b{0xfe, 0x80};
          for (std::size_t k = 0; k < 8; ++k) b[15 - k] = static_cast<std::uint8_t>(iid >> (8 * k));
          entries.push_back(GidEntry::valid(index, Gid(b), type, "eth0", 2));
          break;
        }
        case 2:
          entries.push_back(GidEntry::valid(index, ula(1, iid), type, "eth0", 2));
          break;
        case 3:
          entries.push_back(GidEntry::valid(index, Gid{}, type, "eth0", 2));
          break;  // zero, reported valid
        case 4:
          entries.push_back(GidEntry::empty(index));
          break;
        case 5:
          entries.push_back(GidEntry::unreadable(index, std::error_code(22, std::generic_category())));
          break;
        default: {  // 16 arbitrary-looking bytes
          Gid::Bytes b{};
          for (std::size_t k = 0; k < 16; ++k)
            b[k] = static_cast<std::uint8_t>((iid >> (8 * (k % 8))) ^ (v4 >> (k % 4)));
          entries.push_back(GidEntry::valid(index, Gid(b), type, "bond0", 4));
          break;
        }
      }
    }
    // gid_tbl_len is asked for independently of the slots (so dropping slots keeps it while
    // shrinking), and never below one past the last slot.
    std::optional<std::uint32_t> len;
    if (len_known) len = std::max(next, requested_len);
    return make(port("sparse0", link, len), std::move(entries), holes);
  });
}

rc::Gen<GidTable> gen_realistic_table() {
  return weighted_one_of<GidTable>({{3, gen_thunderbolt_table()},
                                    {3, gen_mlx5_table()},
                                    {2, gen_other_table()},
                                    {2, gen_wide_table()},
                                    {1, gen_arbitrary_table(48)},
                                    {1, gen_sparse_table()}});
}

rc::Gen<GidTable> gen_family_table() {
  return weighted_one_of<GidTable>(
      {{3, gen_thunderbolt_table()}, {3, gen_mlx5_table()}, {2, gen_other_table()}});
}

}  // namespace gidpolicy::test
