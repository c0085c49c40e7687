#include "support/generators.hpp"
#include "support/assert_ok.hpp"

#include <cstdio>
#include <set>
#include <sstream>

namespace gidpolicy::test {

rc::Gen<Gid> gen_ipv4_mapped_gid() {
  static const rc::Gen<Gid> gen = rc::gen::map(
      rc::gen::oneOf(rc::gen::inRange<std::uint32_t>(0x0a000001u, 0x0a0000ffu),  // 10.0.0.x: shrinks small
                     rc::gen::inRange<std::uint32_t>(0xa9fe0001u, 0xa9feffffu),  // 169.254/16
                     rc::gen::inRange<std::uint32_t>(0xc0a80001u, 0xc0a8ffffu),  // 192.168/16
                     rc::gen::inRange<std::uint32_t>(1u, 0xffffffffu)),
      [](std::uint32_t v4) { return Gid::ipv4_mapped(v4); });
  return gen;
}

rc::Gen<Gid> gen_link_local_gid() {
  static const rc::Gen<Gid> gen =
      rc::gen::map(rc::gen::inRange<std::uint64_t>(1, ~std::uint64_t{0}), [](std::uint64_t iid) {
        Gid::Bytes b{};
        b[0] = 0xfe;
        b[1] = 0x80;
        for (std::size_t k = 0; k < 8; ++k) b[15 - k] = static_cast<std::uint8_t>(iid >> (8 * k));
        return Gid(b);
      });
  return gen;
}

namespace {
rc::Gen<Gid> gen_prefixed(std::uint8_t first, std::uint8_t second) {
  return rc::gen::map(rc::gen::container<std::vector<std::uint8_t>>(14, rc::gen::arbitrary<std::uint8_t>()),
                      [first, second](const std::vector<std::uint8_t>& rest) {
                        Gid::Bytes b{};
                        b[0] = first;
                        b[1] = second;
                        for (std::size_t k = 0; k < 14; ++k) b[k + 2] = rest[k];
                        return Gid(b);
                      });
}
}  // namespace

rc::Gen<Gid> gen_gid() {
  // Built once: a generator is an immutable tree of shared implementations, and building one
  // costs dozens of allocations, which the table generators would otherwise pay per entry.
  static const rc::Gen<Gid> gen = rc::gen::weightedOneOf<Gid>({
      {1, rc::gen::just(Gid{})},
      {4, gen_ipv4_mapped_gid()},
      {3, gen_link_local_gid()},
      {2, gen_prefixed(0xfd, 0x93)},
      {1, gen_prefixed(0x20, 0x01)},
      {2, rc::gen::map(rc::gen::container<std::vector<std::uint8_t>>(16, rc::gen::arbitrary<std::uint8_t>()),
                       [](const std::vector<std::uint8_t>& v) { return Gid::from_bytes(v.data()); })},
  });
  return gen;
}

namespace {
/// An entry at index 0 (the caller sets the index): valid with a GID, type and netdev, empty,
/// or unreadable with an errno. Built once, like gen_gid().
const rc::Gen<GidEntry>& gen_entry() {
  static const rc::Gen<GidEntry> gen = rc::gen::weightedOneOf<GidEntry>({
      {6, rc::gen::map(rc::gen::tuple(gen_gid(), rc::gen::arbitrary<GidType>(),
                                      rc::gen::element<std::string>("", "eth0", "bond0", "net1")),
                       [](const std::tuple<Gid, GidType, std::string>& t) {
                         return GidEntry::valid(0, std::get<0>(t), std::get<1>(t), std::get<2>(t),
                                                std::get<2>(t).empty() ? 0u : 3u);
                       })},
      {2, rc::gen::just(GidEntry::empty(0))},
      {1, rc::gen::map(rc::gen::element(5, 22, 61, 19),
                       [](int err) {
                         return GidEntry::unreadable(0, std::error_code(err, std::generic_category()));
                       })},
  });
  return gen;
}
}  // namespace

rc::Gen<GidTable> gen_arbitrary_table(std::uint32_t max_len) {
  return rc::gen::exec([max_len] {
    auto len = *rc::gen::inRange<std::uint32_t>(1, max_len + 1);
    auto link = *rc::gen::element(LinkLayer::ethernet(), LinkLayer::infiniband(), LinkLayer::thunderbolt(),
                                  LinkLayer::from_raw(7));
    bool len_known = *rc::gen::weightedElement<bool>({{4, true}, {1, false}});
    std::vector<GidEntry> entries;
    static const rc::Gen<bool> gen_present = rc::gen::weightedElement<bool>({{4, true}, {1, false}});
    for (std::uint32_t i = 0; i < len; ++i) {
      if (!*gen_present) continue;
      GidEntry e = *gen_entry();
      e.index = i;
      entries.push_back(std::move(e));
    }
    PortInfo p;
    p.device = *rc::gen::element<std::string>("mlx5_0", "rdma_en1", "rxe0");
    p.port = 1;
    p.state = PortState::active;
    p.link_layer = link;
    if (len_known) p.gid_tbl_len = len;
    p.active_mtu = *rc::gen::element(Mtu::mtu_1024, Mtu::mtu_4096, Mtu::mtu_256);
    Holes holes = *rc::gen::weightedElement<Holes>({{4, Holes::empty}, {1, Holes::not_shown}});
    return VALUE_OR_FAIL(GidTable::make(std::move(p), std::move(entries), holes));
  });
}

rc::Gen<std::vector<GidTable>> gen_table_set(std::uint32_t max_ports, std::uint32_t max_len) {
  return rc::gen::exec([max_ports, max_len] {
    auto n = *rc::gen::inRange<std::uint32_t>(1, max_ports + 1);
    std::vector<GidTable> out;
    for (std::uint32_t k = 0; k < n; ++k) {
      GidTable t = *gen_arbitrary_table(max_len);
      PortInfo p = t.port();
      p.device = "dev" + std::to_string(k / 2);
      p.port = 1 + k % 2;
      out.push_back(VALUE_OR_FAIL(GidTable::make(p, {t.begin(), t.end()}, t.holes())));
    }
    return out;
  });
}

std::string show_table(const GidTable& t) {
  std::ostringstream os;
  const PortInfo& p = t.port();
  os << p.device << " port " << p.port << " (" << to_string(p.link_layer) << ", gid_tbl_len "
     << (p.gid_tbl_len ? std::to_string(*p.gid_tbl_len) : std::string("unknown")) << ", holes "
     << to_string(t.holes()) << ")\n";
  for (const auto& e : t) {
    char idx[16];
    std::snprintf(idx, sizeof idx, "%5u", e.index);
    os << "  " << idx << "  ";
    if (e.state == EntryState::valid)
      os << e.gid.to_string();
    else
      os << "<" << to_string(e.state)
         << (e.read_error ? " errno " + std::to_string(e.read_error.value()) : "") << ">";
    os << "  " << to_string(e.type);
    if (!e.netdev.empty()) os << "  " << e.netdev;
    os << "\n";
  }
  return os.str();
}

}  // namespace gidpolicy::test

namespace gidpolicy {
void showValue(const Gid& g, std::ostream& os) { os << g.to_string(); }
void showValue(const GidTable& t, std::ostream& os) { os << test::show_table(t); }
void PrintTo(const GidTable& t, std::ostream* os) { *os << test::show_table(t); }
}  // namespace gidpolicy
