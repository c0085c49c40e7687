// The policy spec grammar: one string names a policy everywhere (CLI --profile, the C API,
// environment variables such as GIDPOLICY_POLICY).
//
//   profile  := PROFILE | policy [ "@sgid=" N ]         a profile takes no @sgid: it has its own
//   policy   := NAME [ ":" opt ( "," opt )* ]            options as its row lists them
//             | "first(" policy ( "|" policy )* ")"
//             | "per-device(" dev "=" policy ( ";" dev "=" policy )* ")"   dev: NAME or "*"
//
// NAME and its options: the rows of kBuiltinSpecs (registry.hpp), each with its short grammar
// ("ds4[:index=N]"), summary and example specs; README.md's spec table lists them (a test keeps it
// naming exactly the registry's names and options). The options' value forms:
//   T := roce_v2 | roce_v1 | ib | any     F := ipv4 | ipv6 | any     R := v2 | v1 | any
//   N := decimal 0 .. 4294967295          INT := decimal int32, may be negative (ds4's int)
//   ADDR := IPv4 dotted quad or IPv6/GID text     CIDR := ADDR "/" prefix length
//   PEER := ADDR, or an IPv6 link-local ADDR "%" NETDEV (its scope: "fe80::1%en3")
// subnet= and exclude= may repeat; other options may not; auto takes one of roce= and type=,
// and require-local needs local=. Spaces around separators are ignored.
//
// Names: each name means one thing. `jaccl-fixed` is the policy JacclFirstMapped (JACCL's scan for
// the first IPv4-mapped GID, routed from where it was found). `jaccl` is only a profile: JACCL as
// it ships, JacclFirstMapped routed from the literal index 1 (profiles::jaccl()). Where only a
// policy fits (parse_policy, inside first()/per-device()) `jaccl` is refused with a hint naming
// jaccl-fixed, rather than quietly meaning a policy that does not reproduce JACCL. Examples:
//   "auto:family=ipv4,roce=v2,subnet=10.0.0.0/8"
//   "first(validated:index=3,type=roce_v2|auto)"
//   "per-device(mlx5_0=validated:index=7;*=auto)"
//   "ds4-linux:local=127.0.0.1,index=2"
//
// Bounds (specs arrive through environment variables; the parser recurses once per level):
// at most kMaxSpecDepth nested first(...)/per-device(...) levels and kMaxSpecBytes (128 KiB) bytes.
// Beyond either, errc::invalid_policy_spec with the position, never a stack overflow.
// Error messages quote the spec around the position (a bounded excerpt), not the whole spec.
//
// Round trip: for every policy p, parse_policy(p.spec()).value() == p.
// Errors: errc::invalid_policy_spec, detail "at position P: expected E, found 'X'" (P is a
// 0-based byte offset into the spec), e.g. "at position 10: expected an option of validated
// (index, type, family, allow-link-local), found 'idx'".
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/policies/any_policy.hpp>

#include <cstddef>
#include <string_view>

namespace gidpolicy {

/// Nesting limit of first(...)/per-device(...): "first(first(auto))" is depth 2. Real specs
/// nest one or two levels; 32 leaves room and keeps the recursion far from any stack limit.
inline constexpr std::size_t kMaxSpecDepth = 32;
/// Length limit of a spec in bytes: Linux's MAX_ARG_STRLEN, the most one argument or environment
/// variable can hold (a per-device() list of thousands of devices still fits).
inline constexpr std::size_t kMaxSpecBytes = std::size_t{128} * 1024;

/// Parse a policy spec (no "@sgid=" suffix: a policy always routes from its own pick).
result<AnyPolicy> parse_policy(std::string_view spec);

}  // namespace gidpolicy
