#include "support/policy_generators.hpp"

#include "support/generators.hpp"
#include "support/shrinking.hpp"

#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/per_device.hpp>

#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
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

bool known_option_form(std::string_view form) {
  for (std::string_view f : {"N", "INT", "ADDR", "CIDR", "PEER", "T", "F", "R", "NAME", ""})
    if (form == f) return true;
  return false;
}

namespace {

/// The policy a row's spec parses to: through parse_policy(), or for a profile row (which only
/// parse_profile() takes) the policy part of the profile. Either way through the row's factory.
result<AnyPolicy> parse_row_spec(const BuiltinSpec& row, const std::string& spec) {
  if (row.kind != SpecKind::profile) return parse_policy(spec);
  auto profile = parse_profile(spec);
  if (!profile) return fail(profile.error());
  return std::move(profile).value().policy;
}

/// The values the row's example specs give `key` ("ds4:index=3": "3" for index).
std::vector<std::string> example_values(const BuiltinSpec& row, std::string_view key) {
  std::vector<std::string> values;
  for (std::string_view ex : row.examples) {
    const auto colon = ex.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view rest = ex.substr(colon + 1);
    while (!rest.empty()) {
      const std::string_view piece = rest.substr(0, rest.find(','));
      rest.remove_prefix(std::min(rest.size(), piece.size() + 1));
      const auto eq = piece.find('=');
      if (eq != std::string_view::npos && piece.substr(0, eq) == key)
        values.emplace_back(piece.substr(eq + 1));
    }
  }
  return values;
}

/// A random value of an option, as a spec writes it; nullopt when the form is unknown and no
/// example gives the key a value (the registry test reports such an option).
std::optional<rc::Gen<std::string>> gen_option_value(const BuiltinSpec& row, const SpecOptionInfo& o) {
  const auto text = [](auto gen) {
    return rc::gen::map(std::move(gen), [](const auto& v) { return v.to_string(); });
  };
  const auto number = [](auto gen) {
    return rc::gen::map(std::move(gen), [](auto v) { return std::to_string(v); });
  };
  if (o.value == "N") return number(gen_index());
  if (o.value == "INT")
    return number(weighted_one_of<std::int32_t>(
        {{6, rc::gen::inRange<std::int32_t>(-2, 9)}, {1, rc::gen::arbitrary<std::int32_t>()}}));
  if (o.value == "ADDR") return text(gen_address());
  if (o.value == "CIDR") return text(gen_cidr());
  if (o.value == "PEER")
    return rc::gen::map(rc::gen::pair(gen_address(), gen_netdev_name()),
                        [](const std::pair<Gid, std::string>& p) {
                          // A link-local peer needs its scope; no other address takes one.
                          const bool scoped = p.first.is_link_local() && !p.first.is_ipv4_mapped();
                          return p.first.to_string() + (scoped ? "%" + p.second : std::string());
                        });
  if (o.value == "T") return element<std::string>({"roce_v2", "roce_v1", "ib", "any"});
  if (o.value == "F") return element<std::string>({"ipv4", "ipv6", "any"});
  if (o.value == "R") return element<std::string>({"v2", "v1", "any"});
  if (o.value == "NAME") return gen_netdev_name();
  if (o.value.empty()) return rc::gen::just(std::string());
  std::vector<std::string> seen = example_values(row, o.key);
  if (seen.empty()) return std::nullopt;
  return element<std::string>(std::move(seen));
}

/// The types a row's example specs make.
std::set<std::type_index> example_types(const BuiltinSpec& row) {
  std::set<std::type_index> types;
  for (std::string_view ex : row.examples)
    if (auto p = parse_row_spec(row, std::string(ex))) types.insert(p.value().type());
  return types;
}

/// The types with a hand-written generator.
template <class... P>
std::set<std::type_index> hand_written(PolicyTypes<P...> /*types*/) {
  std::set<std::type_index> types;
  ((GeneratedPolicy<P> ? void(types.insert(typeid(P))) : void()), ...);
  return types;
}

/// Every hand-written generator of a built-in type, then the generic one of every row with a
/// factory whose examples make a type without one; combinators only when `depth` > 0. The
/// default policy's (AnyPolicy{}: plain auto) comes first, so counterexamples shrink toward it.
template <class... P>
rc::Gen<AnyPolicy> built_in_policies(PolicyTypes<P...> types, int depth) {
  std::vector<std::pair<std::size_t, rc::Gen<AnyPolicy>>> gens;
  const AnyPolicy default_policy;
  const auto add = [&]<class Q>(std::type_identity<Q> /*type*/) {
    if constexpr (GeneratedPolicy<Q>) {
      using G = PolicyGenerator<Q>;
      if (G::nests && depth <= 0) return;
      auto entry = std::make_pair(static_cast<std::size_t>(G::weight), G::make(depth));
      if (default_policy.target<Q>() != nullptr)
        gens.insert(gens.begin(), std::move(entry));
      else
        gens.push_back(std::move(entry));
    }
  };
  (add(std::type_identity<P>{}), ...);
  const std::set<std::type_index> covered = hand_written(types);
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    if (row.factory == nullptr) continue;
    const std::set<std::type_index> made = example_types(row);
    if (std::ranges::all_of(made, [&](const std::type_index& t) { return covered.contains(t); })) continue;
    gens.emplace_back(4, gen_row_policy(row));
  }
  return weighted_one_of<AnyPolicy>(std::move(gens));
}

}  // namespace

rc::Gen<AnyPolicy> gen_row_policy(const BuiltinSpec& row) {
  std::vector<AnyPolicy> examples;
  for (std::string_view ex : row.examples) {
    auto p = parse_row_spec(row, std::string(ex));
    if (!p)
      throw std::logic_error(std::string(ex) +
                             ": a registry example that does not parse: " + p.error().what());
    examples.push_back(std::move(p).value());
  }
  std::vector<std::pair<SpecOptionInfo, rc::Gen<std::string>>> options;
  for (const SpecOptionInfo& o : row.options)
    if (auto g = gen_option_value(row, o)) options.emplace_back(o, std::move(*g));
  const std::string name(row.name);
  // Each option in about half the specs, in row order; values parse or the spec is drawn again.
  const rc::Gen<std::string> spec = rc::gen::exec([name, options] {
    std::string s = name;
    char sep = ':';
    for (const auto& [o, value] : options) {
      if (!*rc::gen::arbitrary<bool>()) continue;
      const int times = o.repeats ? *rc::gen::inRange(1, 3) : 1;
      for (int k = 0; k < times; ++k) {
        s += sep;
        s += o.key;
        if (!o.value.empty()) s += "=" + *value;
        sep = ',';
      }
    }
    return s;
  });
  const BuiltinSpec* r = &row;  // rows are static (kBuiltinSpecs)
  // Through a pointer, not result<AnyPolicy>: rapidcheck's invoke_result checks on a
  // result<AnyPolicy> argument make Clang 14 recurse through AnyPolicy's converting constructor.
  using Parsed = std::shared_ptr<const AnyPolicy>;
  const rc::Gen<AnyPolicy> parsed = rc::gen::map(
      rc::gen::suchThat(rc::gen::map(spec,
                                     [r](const std::string& s) -> Parsed {
                                       auto p = parse_row_spec(*r, s);
                                       if (!p) return nullptr;
                                       return std::make_shared<const AnyPolicy>(std::move(p).value());
                                     }),
                        [](const Parsed& p) { return p != nullptr; }),
      [](const Parsed& p) { return AnyPolicy(*p); });
  return weighted_one_of<AnyPolicy>({{1, element<AnyPolicy>(std::move(examples))}, {3, parsed}});
}

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
