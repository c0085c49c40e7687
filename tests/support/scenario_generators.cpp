#include "support/scenario_generators.hpp"

#include "support/assert_ok.hpp"
#include "support/families.hpp"
#include "support/generators.hpp"
#include "support/policy_generators.hpp"
#include "support/shrinking.hpp"

#include <algorithm>
#include <map>

namespace gidpolicy::test {

rc::Gen<PeerInfo> gen_peer_info() {
  return rc::gen::exec([] {
    PeerInfo p;
    p.qpn = *rc::gen::inRange<std::uint32_t>(0, 0x1000000u);
    p.psn = *rc::gen::inRange<std::uint32_t>(0, 0x1000000u);
    p.gid = *gen_gid();
    p.lid = *weighted_one_of<std::uint16_t>(
        {{3, rc::gen::just<std::uint16_t>(0)}, {1, rc::gen::inRange<std::uint16_t>(1, 0xc000)}});
    if (*rc::gen::arbitrary<bool>())
      p.mtu = *element<Mtu>({Mtu::mtu_4096, Mtu::mtu_256, Mtu::mtu_512, Mtu::mtu_1024, Mtu::mtu_2048});
    if (*weighted_element<bool>({{3, false}, {1, true}})) p.gid_type = *rc::gen::arbitrary<GidType>();
    return p;
  });
}

rc::Gen<PeerInfo> gen_peer_info_of_family(bool ipv4_mapped) {
  return rc::gen::exec([ipv4_mapped] {
    PeerInfo p = *gen_peer_info();
    if (ipv4_mapped)
      p.gid = *gen_ipv4_mapped_gid();
    else
      p.gid = *rc::gen::suchThat(gen_gid(), [](const Gid& g) { return !g.is_zero() && !g.is_ipv4_mapped(); });
    return p;
  });
}

std::string to_string(const AddressChange& c) {
  switch (c.kind) {
    case AddressChange::Kind::add:
      return "add " + c.entry.gid.to_string() + " (" + std::string(to_string(c.entry.type)) + ") at [" +
             std::to_string(c.entry.index) + "]";
    case AddressChange::Kind::remove:
      return "remove [" + std::to_string(c.index) + "]";
    case AddressChange::Kind::move:
      return "move [" + std::to_string(c.index) + "] -> [" + std::to_string(c.to_index) + "]";
    case AddressChange::Kind::replace:
      return "replace [" + std::to_string(c.index) + "] with " + c.entry.gid.to_string();
  }
  return "?";
}

namespace {

bool is_free(const GidTable& t, std::uint32_t i) {
  const GidEntry* e = t.find(i);
  return e == nullptr || e->state == EntryState::empty;
}

std::vector<std::uint32_t> free_slots(const GidTable& t, std::uint32_t limit) {
  std::vector<std::uint32_t> out;
  const std::uint32_t end = std::min(t.length(), limit);
  for (std::uint32_t i = 0; i < end; ++i)
    if (is_free(t, i)) out.push_back(i);
  return out;
}

std::vector<std::uint32_t> valid_slots(const GidTable& t) {
  std::vector<std::uint32_t> out;
  for (const auto& e : t)
    if (e.state == EntryState::valid) out.push_back(e.index);
  return out;
}

// A small pool, so that an address removed or moved comes back (possibly elsewhere) and two
// slots end up holding the same GID, as after a port flap.
rc::Gen<Gid> gen_pool_gid() {
  return weighted_one_of<Gid>({
      {6, rc::gen::map(rc::gen::inRange<std::uint32_t>(0x0a000001u, 0x0a000005u),
                       [](std::uint32_t v) { return Gid::ipv4_mapped(v); })},
      {1, rc::gen::just(VALUE_OR_FAIL(Gid::parse("fd93:16d3:59b6:1::1")))},
      {1, rc::gen::just(VALUE_OR_FAIL(Gid::parse("fe80::1")))},
  });
}

}  // namespace

std::optional<std::uint32_t> first_free_slot(const GidTable& t, std::uint32_t limit) {
  auto f = free_slots(t, limit);
  if (f.empty()) return std::nullopt;
  return f.front();
}

rc::Gen<AddressChange> gen_address_change(const GidTable& t) {
  return rc::gen::exec([t] {
    const auto free = free_slots(t, 64);
    const auto valid = valid_slots(t);
    std::vector<AddressChange::Kind> kinds;
    if (!free.empty()) kinds.push_back(AddressChange::Kind::add);
    if (!valid.empty()) {
      kinds.push_back(AddressChange::Kind::remove);
      kinds.push_back(AddressChange::Kind::replace);
      if (!free.empty()) kinds.push_back(AddressChange::Kind::move);
    }
    RC_PRE(!kinds.empty());
    AddressChange c;
    c.kind = *element(kinds);
    switch (c.kind) {
      case AddressChange::Kind::add: {
        // The kernel allocates the first free slot.
        const GidType type = *element<GidType>({GidType::roce_v2, GidType::roce_v1, GidType::unknown});
        c.entry = GidEntry::valid(free.front(), *gen_pool_gid(), type, "eth0", 3);
        c.index = free.front();
        break;
      }
      case AddressChange::Kind::remove:
        c.index = *element(valid);
        break;
      case AddressChange::Kind::move:
        c.index = *element(valid);
        c.to_index = *element(free);
        break;
      case AddressChange::Kind::replace:
        c.index = *element(valid);
        c.entry = GidEntry::valid(c.index, *gen_pool_gid());
        break;
    }
    return c;
  });
}

GidTable apply_change(const GidTable& t, const AddressChange& c) {
  std::map<std::uint32_t, GidEntry> entries;
  for (const auto& e : t) entries.emplace(e.index, e);
  switch (c.kind) {
    case AddressChange::Kind::add:
      entries[c.entry.index] = c.entry;
      break;
    case AddressChange::Kind::remove:
      entries.erase(c.index);
      break;
    case AddressChange::Kind::move: {
      auto it = entries.find(c.index);
      if (it != entries.end()) {
        GidEntry e = it->second;
        entries.erase(it);
        e.index = c.to_index;
        entries[c.to_index] = e;
      }
      break;
    }
    case AddressChange::Kind::replace: {
      auto it = entries.find(c.index);
      // The slot keeps its type and netdev; only the address changed.
      if (it != entries.end() && it->second.state == EntryState::valid)
        it->second.gid = c.entry.gid;
      else
        entries[c.index] = GidEntry::valid(c.index, c.entry.gid);
      break;
    }
  }
  std::vector<GidEntry> v;
  for (auto& [i, e] : entries) v.push_back(e);
  return VALUE_OR_FAIL(GidTable::make(t.port(), std::move(v), t.holes()));
}

rc::Gen<std::vector<GidTable>> gen_host_tables(std::size_t min, std::size_t max) {
  return gen_sized<std::vector<GidTable>>(min, max, gen_family_table());
}

}  // namespace gidpolicy::test

namespace gidpolicy {
void showValue(const PeerInfo& p, std::ostream& os) {
  os << "{qpn " << p.qpn << ", psn " << p.psn << ", gid " << p.gid.to_string() << ", lid " << p.lid;
  if (p.mtu) os << ", mtu " << mtu_bytes(*p.mtu);
  if (p.gid_type) os << ", type " << to_string(*p.gid_type);
  os << "}";
}
void showValue(QpKind k, std::ostream& os) { os << to_string(k); }
namespace test {
void showValue(const AddressChange& c, std::ostream& os) { os << to_string(c); }
}  // namespace test
}  // namespace gidpolicy
