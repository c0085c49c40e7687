#include "support/policy_generators.hpp"

#include "support/generators.hpp"
#include "support/shrinking.hpp"

#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/per_device.hpp>

#include <limits>
#include <map>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// Every parameterless generator here is built once and shared (`static const`): a generator is
// an immutable tree of shared implementations, and building one costs dozens of allocations,
// which would otherwise be paid for every value drawn from it (tables draw one per entry).
namespace gidpolicy::test {
namespace {

Gid with_prefix(std::uint8_t b0, std::uint8_t b1, std::uint64_t iid) {
  Gid::Bytes b{};
  b[0] = b0;
  b[1] = b1;
  for (std::size_t k = 0; k < 8; ++k) b[15 - k] = static_cast<std::uint8_t>(iid >> (8 * k));
  return Gid(b);
}

rc::Gen<bool> rarely() {
  static const rc::Gen<bool> gen = weighted_element<bool>({{4, false}, {1, true}});
  return gen;
}

template <class T>
rc::Gen<std::optional<T>> sometimes(rc::Gen<T> g) {
  return weighted_one_of<std::optional<T>>(
      {{3, rc::gen::just(std::optional<T>())},
       {2, rc::gen::map(std::move(g), [](T v) { return std::optional<T>(v); })}});
}

}  // namespace

rc::Gen<Gid> gen_address() {
  static const rc::Gen<Gid> gen = weighted_one_of<Gid>({
      {5, rc::gen::map(rc::gen::inRange<std::uint32_t>(0x0a000001u, 0x0a000010u),
                       [](std::uint32_t v) { return Gid::ipv4_mapped(v); })},
      {2, gen_ipv4_mapped_gid()},
      {2, rc::gen::map(rc::gen::inRange<std::uint64_t>(1, 1u << 16),
                       [](std::uint64_t iid) { return with_prefix(0xfd, 0x93, iid); })},
      {1, rc::gen::map(rc::gen::inRange<std::uint64_t>(1, 1u << 16),
                       [](std::uint64_t iid) { return with_prefix(0x20, 0x01, iid); })},
      {1, gen_link_local_gid()},
  });
  return gen;
}

rc::Gen<Cidr> gen_cidr() {
  static const rc::Gen<Cidr> gen = weighted_one_of<Cidr>(
      {// IPv4 prefixes: what subnet=10.0.0.0/8 means, over the IPv4-mapped form.
       {1, rc::gen::map(rc::gen::pair(gen_address(), rc::gen::inRange(0u, 33u)),
                        [](const std::pair<Gid, unsigned>& p) {
                          const Gid net = p.first.is_ipv4_mapped() ? p.first : Gid::ipv4_mapped(0x0a000000u);
                          return Cidr{net, 96u + p.second};
                        })},
       {1, rc::gen::map(rc::gen::pair(gen_address(), rc::gen::inRange(0u, 129u)),
                        [](const std::pair<Gid, unsigned>& p) {
                          return Cidr{p.first, p.second};
                        })}});
  return gen;
}

rc::Gen<std::string> gen_netdev_name() {
  static const rc::Gen<std::string> gen = weighted_one_of<std::string>({
      {4, element<std::string>(
              {"eth0", "bond0", "net1", "vxlan100", "ens1f0", "enp105s0", "eth0.100", "macvlan0", "en2"})},
      {1, gen_sized<std::string>(
              1, 15, rc::gen::element('a', 'b', 'e', 'n', 'x', 'z', '0', '1', '9', '.', '_', '-'))},
  });
  return gen;
}

rc::Gen<std::string> gen_device_name() {
  static const rc::Gen<std::string> gen = weighted_one_of<std::string>({
      {4, element<std::string>(
              {"mlx5_0", "mlx5_1", "rdma_en1", "rdma_en2", "rxe0", "rocep105s0", "mlx5_ib0", "wide0"})},
      {1, gen_sized<std::string>(1, 11, rc::gen::element('m', 'l', 'x', '5', '_', '0', '.', '-', 'Z'))},
  });
  return gen;
}

rc::Gen<std::uint32_t> gen_index() {
  static const rc::Gen<std::uint32_t> gen = weighted_one_of<std::uint32_t>({
      {8, rc::gen::inRange<std::uint32_t>(0, 8)},
      {3, rc::gen::inRange<std::uint32_t>(0, 256)},
      {2, rc::gen::inRange<std::uint32_t>(256, 1025)},
      {1, rc::gen::inRange<std::uint32_t>(0xffffff00u, 0xffffffffu)},
      {1, rc::gen::just(std::numeric_limits<std::uint32_t>::max())},
  });
  return gen;
}

rc::Gen<TypeFilter> gen_type_filter() {
  static const rc::Gen<TypeFilter> gen =
      element<TypeFilter>({TypeFilter::any, TypeFilter::roce_v2, TypeFilter::roce_v1, TypeFilter::ib});
  return gen;
}
rc::Gen<FamilyFilter> gen_family_filter() {
  static const rc::Gen<FamilyFilter> gen =
      element<FamilyFilter>({FamilyFilter::any, FamilyFilter::ipv4, FamilyFilter::ipv6});
  return gen;
}

rc::Gen<RankedOptions> gen_ranked_options() {
  static const rc::Gen<RankedOptions> gen = rc::gen::exec([] {
    RankedOptions o;
    o.family = *gen_family_filter();
    o.type = *gen_type_filter();
    if (*rarely()) o.subnets = *gen_sized<std::vector<Cidr>>(1, 2, gen_cidr());
    if (*rarely()) o.excludes = *gen_sized<std::vector<Cidr>>(1, 2, gen_cidr());
    if (*rarely()) o.netdev = *gen_netdev_name();
    o.local = *sometimes(gen_address());
    // require-local only parses together with local=.
    o.require_local = o.local.has_value() && *rarely();
    o.allow_link_local = *rarely();
    return o;
  });
  return gen;
}

rc::Gen<ValidatedExplicit> gen_validated_explicit() {
  static const rc::Gen<ValidatedExplicit> gen = rc::gen::exec([] {
    ValidatedExplicit p;
    p.index = *gen_index();
    p.type = *gen_type_filter();
    p.family = *element<FamilyFilter>({FamilyFilter::ipv4, FamilyFilter::any, FamilyFilter::ipv6});
    p.allow_link_local = *rarely();
    return p;
  });
  return gen;
}

rc::Gen<Ds4ExplicitIndex> gen_ds4_explicit_index() {
  static const rc::Gen<Ds4ExplicitIndex> gen =
      rc::gen::map(gen_index(), [](std::uint32_t i) { return Ds4ExplicitIndex{i}; });
  return gen;
}

rc::Gen<Ds4Linux> gen_ds4_linux() {
  static const rc::Gen<Ds4Linux> gen = rc::gen::exec([] {
    Ds4Linux p;
    p.local = *sometimes(gen_address());
    // ds4's index is an int: negative values are representable (and refused at select).
    p.index = *sometimes(weighted_one_of<std::int32_t>(
        {{6, rc::gen::inRange<std::int32_t>(-2, 9)}, {1, rc::gen::arbitrary<std::int32_t>()}}));
    return p;
  });
  return gen;
}

rc::Gen<Nccl> gen_nccl() {
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange<std::int64_t>(-1, 300), rc::gen::arbitrary<bool>(),
                                     rc::gen::maybe(gen_cidr()), rc::gen::inRange(1, 3)),
                      [](const std::tuple<std::int64_t, bool, rc::Maybe<Cidr>, int>& t) {
                        Nccl n;
                        n.gid_index = std::get<0>(t);
                        n.inet6 = std::get<1>(t);
                        if (std::get<2>(t)) n.range = *std::get<2>(t);
                        n.roce_version = std::get<3>(t);
                        return n;
                      });
}

rc::Gen<Ucx> gen_ucx() {
  return rc::gen::map(
      rc::gen::tuple(rc::gen::maybe(rc::gen::inRange<std::uint32_t>(0, 256)), rc::gen::arbitrary<bool>()),
      [](const std::tuple<rc::Maybe<std::uint32_t>, bool>& t) {
        Ucx u;
        if (std::get<0>(t)) u.gid_index = *std::get<0>(t);
        u.pr10939 = std::get<1>(t);
        return u;
      });
}

rc::Gen<Perftest> gen_perftest() {
  return rc::gen::map(
      rc::gen::tuple(rc::gen::maybe(rc::gen::inRange<std::uint32_t>(0, 256)), rc::gen::arbitrary<bool>()),
      [](const std::tuple<rc::Maybe<std::uint32_t>, bool>& t) {
        Perftest p;
        if (std::get<0>(t)) p.x = *std::get<0>(t);
        p.ipv6 = std::get<1>(t);
        return p;
      });
}

rc::Gen<Mooncake> gen_mooncake() {
  return rc::gen::map(rc::gen::maybe(rc::gen::inRange<std::int64_t>(-5, 300)),
                      [](const rc::Maybe<std::int64_t>& v) {
                        Mooncake m;
                        if (v) m.gid_index = *v;
                        return m;
                      });
}

rc::Gen<RdmaCm> gen_rdma_cm() {
  return rc::gen::map(rc::gen::tuple(gen_address(), rc::gen::arbitrary<bool>()),
                      [](const std::tuple<Gid, bool>& t) {
                        RdmaCm r;
                        r.local = std::get<0>(t);
                        r.roce_v1 = std::get<1>(t);
                        return r;
                      });
}

rc::Gen<Libfabric> gen_libfabric() {
  return rc::gen::oneOf(rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 256),
                                     [](std::uint32_t i) {
                                       Libfabric l;
                                       l.gid_idx = i;
                                       return l;
                                     }),
                        rc::gen::map(gen_rdma_cm(), [](RdmaCm r) {
                          Libfabric l;
                          l.msg = std::move(r);
                          return l;
                        }));
}

rc::Gen<AnyPolicy> PolicyGenerator<Ranked>::make(int /*depth*/) {
  return weighted_one_of<AnyPolicy>(
      {{1, rc::gen::just(AnyPolicy(Ranked{}))}, {2, rc::gen::map(gen_ranked_options(), [](RankedOptions o) {
                                                   return AnyPolicy(Ranked{std::move(o)});
                                                 })}});
}

namespace {

// Every built-in policy type has a generator: a type added to BuiltinPolicies without one stops
// the build here, naming the concept it misses.
template <class... P>
constexpr bool every_policy_generated(PolicyTypes<P...> /*types*/) {
  static_assert((GeneratedPolicy<P> && ...),
                "every type of BuiltinPolicies (registry.hpp) needs a PolicyGenerator specialization "
                "(tests/support/policy_generators.hpp)");
  return true;
}
static_assert(every_policy_generated(BuiltinPolicies{}));

/// Every built-in type's generator, weighted; combinators only when `depth` > 0. The default
/// policy's (AnyPolicy{}: plain auto) comes first, so counterexamples shrink toward it.
template <class... P>
rc::Gen<AnyPolicy> built_in_policies(PolicyTypes<P...> /*types*/, int depth) {
  std::vector<std::pair<std::size_t, rc::Gen<AnyPolicy>>> gens;
  const AnyPolicy default_policy;
  const auto add = [&]<class Q>(std::type_identity<Q> /*type*/) {
    using G = PolicyGenerator<Q>;
    if (G::nests && depth <= 0) return;
    auto entry = std::make_pair(static_cast<std::size_t>(G::weight), G::make(depth));
    if (default_policy.target<Q>() != nullptr)
      gens.insert(gens.begin(), std::move(entry));
    else
      gens.push_back(std::move(entry));
  };
  (add(std::type_identity<P>{}), ...);
  return weighted_one_of<AnyPolicy>(std::move(gens));
}

}  // namespace

rc::Gen<AnyPolicy> gen_leaf_policy() {
  // Shrinks toward plain "auto" (Ranked's generator).
  static const rc::Gen<AnyPolicy> gen = built_in_policies(BuiltinPolicies{}, 0);
  return gen;
}

rc::Gen<AnyPolicy> gen_first_of(int depth) {
  return rc::gen::map(gen_sized<std::vector<AnyPolicy>>(1, 3, gen_policy(depth - 1)),
                      [](std::vector<AnyPolicy> alts) { return AnyPolicy(FirstOf{std::move(alts)}); });
}

rc::Gen<AnyPolicy> gen_per_device(int depth) {
  return rc::gen::exec([depth] {
    PerDevice d;
    const auto n = *rc::gen::inRange<std::size_t>(0, 3);
    for (std::size_t k = 0; k < n; ++k) d.by_device.emplace(*gen_device_name(), *gen_policy(depth - 1));
    if (d.by_device.empty() || *rc::gen::arbitrary<bool>()) d.fallback = *gen_policy(depth - 1);
    return AnyPolicy(std::move(d));
  });
}

rc::Gen<AnyPolicy> gen_policy(int depth) {
  if (depth <= 0) return gen_leaf_policy();
  static std::map<int, rc::Gen<AnyPolicy>> built;  // one per depth (single-threaded, as rapidcheck)
  if (auto it = built.find(depth); it != built.end()) return it->second;
  return built.emplace(depth, built_in_policies(BuiltinPolicies{}, depth)).first->second;
}

rc::Gen<Profile> gen_profile() {
  static const rc::Gen<Profile> gen = weighted_one_of<Profile>({
      {4, gen_consistent_profile()},
      {1, rc::gen::just(profiles::jaccl())},
      {1, rc::gen::map(rc::gen::pair(gen_policy(1), rc::gen::inRange(0, 256)),
                       [](const std::pair<AnyPolicy, int>& p) {
                         return Profile{p.first, SourceIndex::literal(static_cast<std::uint8_t>(p.second))};
                       })},
  });
  return gen;
}

rc::Gen<Profile> gen_consistent_profile() {
  static const rc::Gen<Profile> gen = rc::gen::map(gen_policy(2), [](AnyPolicy p) {
    return Profile{std::move(p), SourceIndex::selected()};
  });
  return gen;
}

}  // namespace gidpolicy::test

namespace gidpolicy {
void showValue(const AnyPolicy& p, std::ostream& os) { os << p.spec(); }
void showValue(const Profile& p, std::ostream& os) {
  os << p.spec() << " (source " << p.source.to_string() << ")";
}
void showValue(const RankedOptions& o, std::ostream& os) { os << Ranked{o}.spec(); }
void showValue(const Cidr& c, std::ostream& os) { os << c.to_string(); }
void showValue(const ValidatedExplicit& p, std::ostream& os) { os << p.spec(); }
void showValue(const Ds4ExplicitIndex& p, std::ostream& os) { os << p.spec(); }
void showValue(const Ds4Linux& p, std::ostream& os) { os << p.spec(); }
void showValue(const Error& e, std::ostream& os) { os << e.what(); }
void showValue(errc e, std::ostream& os) { os << make_error_code(e).message(); }
}  // namespace gidpolicy
