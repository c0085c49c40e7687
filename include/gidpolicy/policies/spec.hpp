// The policy spec grammar: one string names a policy everywhere (CLI --profile, the C API,
// environment variables such as GIDPOLICY_POLICY).
//
//   profile  := PROFILE | policy [ "@sgid=" N ]         a profile takes no @sgid: it has its own
//   policy   := NAME [ ":" opt ( "," opt )* ]            options as its row lists them
//             | "first(" policy ( "|" policy )* ")"
//             | "per-device(" dev "=" policy ( ";" dev "=" policy )* ")"   dev: NAME or "*"
//
// The built-in names and their options (registry.hpp holds the same table; a test checks that
// this list, README.md's and docs/concepts.md's name exactly its names and options):
// clang-format off
// spec-table:begin
//   `jaccl`                                   profile: jaccl-fixed routed from the literal index 1
//   `jaccl-fixed`                             JACCL's scan, routed from where it found the GID
//   `jaccl-legacy`                            index 1, whatever it holds
//   `ds4[:index=N]`                           ds4 on macOS
//   `ds4-linux[:local=ADDR,index=INT]`        ds4's Linux RoCE path
//   `validated:index=N[,type=T,family=F,allow-link-local]`    index= is required
//   `auto[:family=F,roce=R,type=T,subnet=CIDR,exclude=CIDR,netdev=NAME,local=ADDR,peer=PEER,require-local,allow-link-local]`
//   `nccl[:gid_index=N,family=AF_INET|AF_INET6,range=CIDR,roce_version=1|2]`    NCCL >= 2.21.5
//   `ucx[:gid_index=N,rule=1.13|pr10939]`     UCX 1.13.1: the gid[0] port check, four priorities
//   `perftest[:x=N,ipv6]`                     perftest 4.5 without -x, or -x N
//   `mooncake[:gid_index=INT]`                Mooncake's classes, or MC_GID_INDEX
//   `libfabric[:gid_idx=N]`                   libfabric 1.17 verbs UD: FI_VERBS_GID_IDX (0)
//   `libfabric:ep=msg,local=ADDR,peer=PEER,mode=v2|v1`   MSG endpoints: rdma_cm's choice
//   `rdma_cm:local=ADDR,peer=PEER,mode=v2|v1`  the kernel's rule (one of local=, peer=)
//   `first(POLICY|POLICY...)`
//   `per-device(DEV=POLICY;...;*=POLICY)`
// spec-table:end
// clang-format on
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
