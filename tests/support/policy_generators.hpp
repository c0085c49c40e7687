// rapidcheck generators for policies, profiles and spec strings.
//
// Every strategy is generated with random options, restricted to what the spec grammar can
// express (a policy's spec() must be parseable: no zero `local=`, no empty first()/per-device(),
// require-local only with local=, prefix lengths 0..128) so the same generators serve the
// round-trip property and the selection properties. Generators shrink toward the plainest
// policy of their kind (no options, index 0, one alternative). Values print as their spec.
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>
#include <gidpolicy/profiles.hpp>

#include <rapidcheck.h>

#include <concepts>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace gidpolicy::test {

/// A container of `min`..`max` (inclusive) elements of `element`; shrinks toward `min`.
/// (rc::gen::container takes a fixed count, not a range.)
template <class Container, class T>
rc::Gen<Container> gen_sized(std::size_t min, std::size_t max, rc::Gen<T> element) {
  return rc::gen::mapcat(rc::gen::inRange(min, max + 1),
                         [element](std::size_t n) { return rc::gen::container<Container>(n, element); });
}

/// An address as `local=` takes it: a non-zero IPv4-mapped GID (usually 10.0.0.x, shrinking
/// to 10.0.0.1), a ULA, a global or a link-local IPv6 address.
rc::Gen<Gid> gen_address();
/// A CIDR as `subnet=`/`exclude=` take it: IPv4 (prefix 96..128 over the mapped form) or IPv6
/// (0..128); the network's host bits may be set (the parser keeps them as written).
rc::Gen<Cidr> gen_cidr();
/// Netdev names: the ones real tables carry plus random Linux-valid names ([a-z0-9._-]).
rc::Gen<std::string> gen_netdev_name();
/// Device names: mlx5_N, rdma_enN, rxe0, ... (per-device keys).
rc::Gen<std::string> gen_device_name();
/// A GID index that mostly lands in small tables, sometimes above 255 or near 2^32.
rc::Gen<std::uint32_t> gen_index();

rc::Gen<TypeFilter> gen_type_filter();
rc::Gen<FamilyFilter> gen_family_filter();
/// Every RankedOptions field at random (spec-expressible).
rc::Gen<RankedOptions> gen_ranked_options();
rc::Gen<ValidatedExplicit> gen_validated_explicit();
rc::Gen<Ds4ExplicitIndex> gen_ds4_explicit_index();
rc::Gen<Ds4Linux> gen_ds4_linux();

/// Any leaf strategy (everything but first()/per-device()), random options.
rc::Gen<AnyPolicy> gen_leaf_policy();
/// first() and per-device() whose alternatives nest up to `depth` levels below them.
rc::Gen<AnyPolicy> gen_first_of(int depth);
rc::Gen<AnyPolicy> gen_per_device(int depth);

/// The generic generator of one registry row (a row with a factory): a random choice of the
/// row's declared options (repeating ones once or twice), each with a random value of its
/// declared form (known_option_form(); for another form, a value one of the row's example specs
/// gives that key), written as a spec and parsed through the parser and so the row's factory;
/// specs the factory refuses (require-local without local=) are drawn again. Now and then one
/// of the row's example specs itself. A row needs nothing else to be generated.
rc::Gen<AnyPolicy> gen_row_policy(const BuiltinSpec& row);
/// The option value forms gen_row_policy() draws values for: "N", "INT", "ADDR", "CIDR",
/// "PEER", "T", "F", "R", "NAME" and "" (a flag).
bool known_option_form(std::string_view form);

/// Hand-written generators, optional: a built-in type P may have a PolicyGenerator<P>
/// specialization (weight, nests, make(depth)); gen_leaf_policy() and gen_policy() then draw P
/// from it, weighted, and a registry row whose example specs make only such types is drawn from
/// them instead of from gen_row_policy(). Every other row with a factory is drawn from
/// gen_row_policy(), so no built-in policy goes ungenerated; combinators (no factory) need one
/// (a test checks that gen_policy() makes every type of BuiltinPolicies).
/// `make(depth)`: combinators (`nests`) nest policies up to `depth` levels; leaves ignore it.
template <class P>
struct PolicyGenerator {};  // none hand-written: the row's generic generator makes P

/// Leaf generator for a type with no options.
template <class P>
struct PlainPolicyGenerator {
  static constexpr int weight = 3;
  static constexpr bool nests = false;
  static rc::Gen<AnyPolicy> make(int /*depth*/) { return rc::gen::just(AnyPolicy(P{})); }
};
template <>
struct PolicyGenerator<JacclFirstMapped> : PlainPolicyGenerator<JacclFirstMapped> {};
template <>
struct PolicyGenerator<JacclLegacyIndex1> : PlainPolicyGenerator<JacclLegacyIndex1> {};
template <>
struct PolicyGenerator<Ds4Scan> : PlainPolicyGenerator<Ds4Scan> {};
/// Leaf generator from a typed one.
template <class P>
struct MappedPolicyGenerator {
  static constexpr bool nests = false;
  static rc::Gen<AnyPolicy> make(rc::Gen<P> g) {
    return rc::gen::map(std::move(g), [](P p) { return AnyPolicy(std::move(p)); });
  }
};
template <>
struct PolicyGenerator<Ds4ExplicitIndex> : MappedPolicyGenerator<Ds4ExplicitIndex> {
  static constexpr int weight = 3;
  static rc::Gen<AnyPolicy> make(int /*depth*/) {
    return MappedPolicyGenerator::make(gen_ds4_explicit_index());
  }
};
template <>
struct PolicyGenerator<Ds4Linux> : MappedPolicyGenerator<Ds4Linux> {
  static constexpr int weight = 3;
  static rc::Gen<AnyPolicy> make(int /*depth*/) { return MappedPolicyGenerator::make(gen_ds4_linux()); }
};
template <>
struct PolicyGenerator<ValidatedExplicit> : MappedPolicyGenerator<ValidatedExplicit> {
  static constexpr int weight = 6;
  static rc::Gen<AnyPolicy> make(int /*depth*/) {
    return MappedPolicyGenerator::make(gen_validated_explicit());
  }
};
template <>
struct PolicyGenerator<Ranked> {
  static constexpr int weight = 9;
  static constexpr bool nests = false;
  /// Plain "auto" a third of the time (what everything shrinks toward), else random options.
  static rc::Gen<AnyPolicy> make(int /*depth*/);
};
// The stacks' policies: their options drawn from the values their specs take.
rc::Gen<Nccl> gen_nccl();
rc::Gen<Ucx> gen_ucx();
rc::Gen<Perftest> gen_perftest();
rc::Gen<Mooncake> gen_mooncake();
rc::Gen<Libfabric> gen_libfabric();
rc::Gen<RdmaCm> gen_rdma_cm();
#define GIDPOLICY_STACK_GENERATOR(Type, gen)                                                     \
  template <>                                                                                    \
  struct PolicyGenerator<Type> : MappedPolicyGenerator<Type> {                                   \
    static constexpr int weight = 2;                                                             \
    static rc::Gen<AnyPolicy> make(int /*depth*/) { return MappedPolicyGenerator::make(gen()); } \
  };
GIDPOLICY_STACK_GENERATOR(Nccl, gen_nccl)
GIDPOLICY_STACK_GENERATOR(Ucx, gen_ucx)
GIDPOLICY_STACK_GENERATOR(Perftest, gen_perftest)
GIDPOLICY_STACK_GENERATOR(Mooncake, gen_mooncake)
GIDPOLICY_STACK_GENERATOR(Libfabric, gen_libfabric)
GIDPOLICY_STACK_GENERATOR(RdmaCm, gen_rdma_cm)
#undef GIDPOLICY_STACK_GENERATOR
template <>
struct PolicyGenerator<FirstOf> {
  static constexpr int weight = 5;
  static constexpr bool nests = true;
  static rc::Gen<AnyPolicy> make(int depth) { return gen_first_of(depth); }
};
template <>
struct PolicyGenerator<PerDevice> {
  static constexpr int weight = 5;
  static constexpr bool nests = true;
  static rc::Gen<AnyPolicy> make(int depth) { return gen_per_device(depth); }
};

/// P has a hand-written generator (a PolicyGenerator<P> specialization) gen_policy() draws from.
template <class P>
concept GeneratedPolicy = requires(int depth) {
  { PolicyGenerator<P>::make(depth) } -> std::same_as<rc::Gen<AnyPolicy>>;
  { PolicyGenerator<P>::weight } -> std::convertible_to<int>;
  { PolicyGenerator<P>::nests } -> std::convertible_to<bool>;
};
/// Any strategy, first() and per-device() nesting up to `depth` levels.
rc::Gen<AnyPolicy> gen_policy(int depth = 2);
/// A profile: any policy with its own source (selected), or now and then a literal sgid.
rc::Gen<Profile> gen_profile();
/// A profile whose source is `selected()`, plus jaccl_legacy(): the behaviours that promise
/// agreement (everything except a literal source index).
rc::Gen<Profile> gen_consistent_profile();

}  // namespace gidpolicy::test

namespace gidpolicy {
// rapidcheck prints counterexamples through these (found by ADL).
void showValue(const AnyPolicy& p, std::ostream& os);
void showValue(const Profile& p, std::ostream& os);
void showValue(const RankedOptions& o, std::ostream& os);
void showValue(const Cidr& c, std::ostream& os);
void showValue(const ValidatedExplicit& p, std::ostream& os);
void showValue(const Ds4ExplicitIndex& p, std::ostream& os);
void showValue(const Ds4Linux& p, std::ostream& os);
void showValue(const Error& e, std::ostream& os);
void showValue(errc e, std::ostream& os);
}  // namespace gidpolicy
