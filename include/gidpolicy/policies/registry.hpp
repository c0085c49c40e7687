// The registry of built-in specs: one row per name the spec grammar (spec.hpp) knows.
//
// Everything that lists the spec names is derived from this table: the parser's names and the
// option names it accepts (and lists in its errors), the CLI's hint after a bad spec, and the
// docs check that README.md's spec table names exactly these specs and options (the one table
// outside this file). Each row's options are read by a factory that lives beside its policy (the
// policy's own source), not in the parser. BuiltinPolicies lists the policy types the rows make;
// the test suite runs every row's examples (round trip, traced = untraced, no allocation on the
// untraced path) and generates every row's policies from its options' value forms and examples.
//
// Adding a policy: its header and source (select, spec, from_options), a row here (and its type
// in BuiltinPolicies), an example and its unit test (docs/concepts.md, "Adding a policy").
//
// Example:
//   for (const gidpolicy::BuiltinSpec& s : gidpolicy::kBuiltinSpecs) std::puts(s.grammar.data());
//   const gidpolicy::BuiltinSpec* ds4 = gidpolicy::find_builtin_spec("ds4");   // its options: index
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/libfabric.hpp>
#include <gidpolicy/policies/mooncake.hpp>
#include <gidpolicy/policies/nccl.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/perftest.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/rdma_cm.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/policies/ucx.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gidpolicy {

/// What a row names.
enum class SpecKind : std::uint8_t {
  policy,      ///< a policy: parse_policy() and parse_profile() both take it
  profile,     ///< a named behaviour with its own source index: parse_profile() only
  combinator,  ///< first(...), per-device(...): policies of policies, parsed by the grammar itself
};

/// One option a row accepts.
struct SpecOptionInfo {
  std::string_view key;    ///< "index", "allow-link-local"
  std::string_view value;  ///< what its value is, as the grammar writes it ("N", "CIDR"); "" for a flag
  bool repeats = false;    ///< may be given more than once (subnet=, exclude=)
};

/// Reads a row's options into a policy (the parser has already checked the keys against the row).
using SpecFactory = result<AnyPolicy> (*)(const SpecOptions& options);

/// A row's factory when it takes no options: the policy default-constructed.
template <class P>
result<AnyPolicy> without_options(const SpecOptions& /*options*/) {
  return AnyPolicy(P{});
}

/// One built-in spec name.
struct BuiltinSpec {
  std::string_view name;                      ///< as written in a spec
  std::span<const std::string_view> aliases;  ///< other names that parse to the same thing
  SpecKind kind = SpecKind::policy;
  std::string_view grammar;  ///< its short form, as hints and tables write it: "ds4[:index=N]"
  std::string_view summary;  ///< one line: what it reproduces or does (README's spec table prints it)
  std::string_view
      types;  ///< the policy types it makes, as the spec table names them: "Ds4Scan, Ds4ExplicitIndex"
  std::span<const SpecOptionInfo> options;
  /// Specs of this row, each written as spec() writes it back (to_spec(parse(s)) == s); at least
  /// one, and together they cover every policy type the row makes.
  std::span<const std::string_view> examples;
  SpecFactory factory = nullptr;  ///< null only for combinators
  /// Profiles: the sgid_index they route from (they take no "@sgid=N"), and the policy row that
  /// is the same choice routed from its own pick (named where only a policy fits).
  std::optional<std::uint8_t> literal_source;
  std::string_view policy_alone;
};

namespace registry_rows {
// The rows' lists (named so the table below stays one line per field).
inline constexpr std::string_view kJacclEx[] = {"jaccl"};
inline constexpr std::string_view kJacclFixedEx[] = {"jaccl-fixed"};
inline constexpr std::string_view kJacclLegacyEx[] = {"jaccl-legacy"};
inline constexpr SpecOptionInfo kDs4Opts[] = {{"index", "N"}};
inline constexpr std::string_view kDs4Ex[] = {"ds4", "ds4:index=3", "ds4:index=300"};
inline constexpr SpecOptionInfo kDs4LinuxOpts[] = {{"local", "ADDR"}, {"index", "INT"}};
inline constexpr std::string_view kDs4LinuxEx[] = {"ds4-linux", "ds4-linux:local=10.0.0.2",
                                                   "ds4-linux:local=10.0.0.2,index=2"};
inline constexpr SpecOptionInfo kValidatedOpts[] = {
    {"index", "N"}, {"type", "T"}, {"family", "F"}, {"allow-link-local", ""}};
inline constexpr std::string_view kValidatedEx[] = {"validated:index=2",
                                                    "validated:index=2,type=roce_v2,family=any"};
inline constexpr SpecOptionInfo kAutoOpts[] = {
    {"family", "F"},           {"roce", "R"},           {"type", "T"},     {"subnet", "CIDR", true},
    {"exclude", "CIDR", true}, {"netdev", "NAME"},      {"local", "ADDR"}, {"peer", "PEER"},
    {"require-local", ""},     {"allow-link-local", ""}};
inline constexpr std::string_view kAutoEx[] = {"auto", "auto:family=ipv4,roce=v2,subnet=10.0.0.0/8",
                                               "auto:local=10.0.0.2,require-local"};
inline constexpr std::string_view kFirstEx[] = {"first(validated:index=7|auto)", "first(ds4|jaccl-fixed)"};
inline constexpr std::string_view kPerDeviceEx[] = {"per-device(mlx5_0=validated:index=2;*=auto)"};
// The stacks' own choices (docs/concepts.md, "Stacks").
inline constexpr SpecOptionInfo kNcclOpts[] = {
    {"gid_index", "N"}, {"family", "AF_INET|AF_INET6"}, {"range", "CIDR"}, {"roce_version", "1|2"}};
inline constexpr std::string_view kNcclEx[] = {"nccl", "nccl:gid_index=3",
                                               "nccl:family=AF_INET6,range=fd00::/8,roce_version=1"};
inline constexpr SpecOptionInfo kUcxOpts[] = {{"gid_index", "N"}, {"rule", "1.13|pr10939"}};
inline constexpr std::string_view kUcxEx[] = {"ucx", "ucx:gid_index=7", "ucx:rule=pr10939"};
inline constexpr SpecOptionInfo kPerftestOpts[] = {{"x", "N"}, {"ipv6", ""}};
inline constexpr std::string_view kPerftestEx[] = {"perftest", "perftest:x=3", "perftest:ipv6"};
inline constexpr SpecOptionInfo kMooncakeOpts[] = {{"gid_index", "INT"}};
inline constexpr std::string_view kMooncakeEx[] = {"mooncake", "mooncake:gid_index=3"};
inline constexpr SpecOptionInfo kLibfabricOpts[] = {
    {"ep", "ud|msg"}, {"gid_idx", "N"}, {"local", "ADDR"}, {"peer", "PEER"}, {"mode", "v2|v1"}};
inline constexpr std::string_view kLibfabricEx[] = {"libfabric", "libfabric:gid_idx=2",
                                                    "libfabric:ep=msg,local=10.152.0.12",
                                                    "libfabric:ep=msg,local=10.152.0.12,mode=v1"};
inline constexpr SpecOptionInfo kRdmaCmOpts[] = {{"local", "ADDR"}, {"peer", "PEER"}, {"mode", "v2|v1"}};
inline constexpr std::string_view kRdmaCmEx[] = {
    "rdma_cm:local=10.152.0.12", "rdma_cm:local=10.152.0.12,mode=v1", "rdma_cm:peer=10.0.0.9"};
}  // namespace registry_rows

// Each row names only the fields it has; the rest keep their defaults (a consumer's -Wextra
// would otherwise flag every omitted designated field).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
/// The built-in specs, in the order hints and tables list them.
inline constexpr BuiltinSpec kBuiltinSpecs[] = {
    {.name = "jaccl",
     .aliases = {},
     .kind = SpecKind::profile,
     .grammar = "jaccl",
     .summary =
         "JACCL as it ships: the first IPv4-mapped GID (any type, index 0 allowed) advertised, the RTR "
         "routed from the literal sgid_index 1: it disagrees unless that GID is at index 1",
     .types = "JacclFirstMapped",
     .options = {},
     .examples = registry_rows::kJacclEx,
     .factory = &without_options<JacclFirstMapped>,
     .literal_source = 1,
     .policy_alone = "jaccl-fixed"},
    {.name = "jaccl-fixed",
     .kind = SpecKind::policy,
     .grammar = "jaccl-fixed",
     .summary = "JACCL's choice, the first IPv4-mapped GID, routed from where it was found",
     .types = "JacclFirstMapped",
     .examples = registry_rows::kJacclFixedEx,
     .factory = &without_options<JacclFirstMapped>},
    {.name = "jaccl-legacy",
     .kind = SpecKind::policy,
     .grammar = "jaccl-legacy",
     .summary = "JACCL Dec 2025-Apr 2026: index 1, whatever it holds (an empty slot advertises zeros)",
     .types = "JacclLegacyIndex1",
     .examples = registry_rows::kJacclLegacyEx,
     .factory = &without_options<JacclLegacyIndex1>},
    {.name = "ds4",
     .kind = SpecKind::policy,
     .grammar = "ds4[:index=N]",
     .summary =
         "ds4 on macOS: the first IPv4-mapped GID, or --rdma-gid-index N read unchecked (above 255 ds4 "
         "wraps it; gidpolicy says so: errc::index_exceeds_uint8)",
     .types = "Ds4Scan, Ds4ExplicitIndex",
     .options = registry_rows::kDs4Opts,
     .examples = registry_rows::kDs4Ex,
     .factory = &Ds4Scan::from_options},
    {.name = "ds4-linux",
     .kind = SpecKind::policy,
     .grammar = "ds4-linux[:local=ADDR,index=INT]",
     .summary = "ds4's Linux RoCE path: non-zero RoCE v2, the control socket's address first; a forced index "
                "must be in range, readable, v2 and non-zero",
     .types = "Ds4Linux",
     .options = registry_rows::kDs4LinuxOpts,
     .examples = registry_rows::kDs4LinuxEx,
     .factory = &Ds4Linux::from_options},
    {.name = "validated",
     .kind = SpecKind::policy,
     .grammar = "validated:index=N[,type=T,family=F,allow-link-local]",
     .summary = "an explicit index, checked before it is advertised or routed: in range, <= 255, non-empty, "
                "non-zero, of type T and family F (default ipv4), not link-local on RoCE or Thunderbolt",
     .types = "ValidatedExplicit",
     .options = registry_rows::kValidatedOpts,
     .examples = registry_rows::kValidatedEx,
     .factory = &ValidatedExplicit::from_options},
    {.name = "auto",
     .kind = SpecKind::policy,
     .grammar = "auto[:family=F,roce=R,subnet=CIDR,...]",
     .summary = "the recommended automatic choice: the best usable GID, ranked (docs/policies.md)",
     .types = "Ranked",
     .options = registry_rows::kAutoOpts,
     .examples = registry_rows::kAutoEx,
     .factory = &Ranked::from_options},
    {.name = "nccl",
     .kind = SpecKind::policy,
     .grammar = "nccl[:gid_index=N,family=AF_INET|AF_INET6,range=CIDR,roce_version=1|2]",
     .summary = "NCCL >= 2.21.5's own choice (NCCL_IB_GID_INDEX and the NCCL_IB_* settings as options)",
     .types = "Nccl",
     .options = registry_rows::kNcclOpts,
     .examples = registry_rows::kNcclEx,
     .factory = &Nccl::from_options},
    {.name = "ucx",
     .kind = SpecKind::policy,
     .grammar = "ucx[:gid_index=N,rule=1.13|pr10939]",
     .summary = "UCX 1.13.1's own choice: the gid[0] port check, then four priorities",
     .types = "Ucx",
     .options = registry_rows::kUcxOpts,
     .examples = registry_rows::kUcxEx,
     .factory = &Ucx::from_options},
    {.name = "perftest",
     .kind = SpecKind::policy,
     .grammar = "perftest[:x=N,ipv6]",
     .summary = "perftest 4.5's own choice without -x (its pairwise walk), or -x N",
     .types = "Perftest",
     .options = registry_rows::kPerftestOpts,
     .examples = registry_rows::kPerftestEx,
     .factory = &Perftest::from_options},
    {.name = "mooncake",
     .kind = SpecKind::policy,
     .grammar = "mooncake[:gid_index=INT]",
     .summary = "Mooncake's own choice: its classes, or MC_GID_INDEX",
     .types = "Mooncake",
     .options = registry_rows::kMooncakeOpts,
     .examples = registry_rows::kMooncakeEx,
     .factory = &Mooncake::from_options},
    {.name = "libfabric",
     .kind = SpecKind::policy,
     .grammar = "libfabric[:gid_idx=N] | libfabric:ep=msg,local=ADDR|peer=PEER",
     .summary = "libfabric 1.17 verbs: UD routes from FI_VERBS_GID_IDX (0); MSG is rdma_cm's choice",
     .types = "Libfabric",
     .options = registry_rows::kLibfabricOpts,
     .examples = registry_rows::kLibfabricEx,
     .factory = &Libfabric::from_options},
    {.name = "rdma_cm",
     .kind = SpecKind::policy,
     .grammar = "rdma_cm:local=ADDR|peer=PEER[,mode=v2|v1]",
     .summary = "the kernel's rdma_cm: the address's GID of the default RoCE mode on its netdev, else ENODEV",
     .types = "RdmaCm",
     .options = registry_rows::kRdmaCmOpts,
     .examples = registry_rows::kRdmaCmEx,
     .factory = &RdmaCm::from_options},
    {.name = "first",
     .kind = SpecKind::combinator,
     .grammar = "first(a|b)",
     .summary = "the first alternative that succeeds; the trace keeps every attempt",
     .types = "FirstOf",
     .examples = registry_rows::kFirstEx},
    {.name = "per-device",
     .kind = SpecKind::combinator,
     .grammar = "per-device(DEV=a;*=b)",
     .summary = "a policy per device, '*' for every other device; a device not listed without '*' is "
                "errc::device_not_found",
     .types = "PerDevice",
     .examples = registry_rows::kPerDeviceEx},
};
#pragma GCC diagnostic pop

/// The policy types the rows make (the examples of each row together make each of them).
template <class... P>
struct PolicyTypes {};
using BuiltinPolicies =
    PolicyTypes<JacclFirstMapped, JacclLegacyIndex1, Ds4Scan, Ds4ExplicitIndex, Ds4Linux, ValidatedExplicit,
                Ranked, Nccl, Ucx, Perftest, Mooncake, Libfabric, RdmaCm, FirstOf, PerDevice>;

/// The row named `name` (or with `name` among its aliases); nullptr when none is.
const BuiltinSpec* find_builtin_spec(std::string_view name) noexcept;

/// "a, b, c": the names of the rows of the given kinds, in table order.
std::string builtin_spec_names(bool policies, bool profiles, bool combinators);

/// "jaccl, jaccl-fixed, ds4[:index=N], ...": every row's grammar, for a hint after a bad spec.
std::string builtin_spec_hint();

/// README.md's spec table, as Markdown: one row per built-in spec (its grammar, its options with
/// their value forms, its summary and the policy types it makes), with the begin and end marker
/// lines around it. scripts/update-docs writes it into README.md; RegistryDocs.* fails while the
/// README holds another.
std::string builtin_spec_table();

/// "index, type, family, allow-link-local": a row's option keys, in row order.
std::string option_names(const BuiltinSpec& spec);

}  // namespace gidpolicy
