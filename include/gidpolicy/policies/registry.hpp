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
  bool repeats;            ///< may be given more than once (subnet=, exclude=)
};

/// Reads a row's options into a policy (the parser has already checked the keys against the row).
using SpecFactory = result<AnyPolicy> (*)(const SpecOptions& options);

/// A row's factory when it takes no options: the policy default-constructed.
template <class P>
result<AnyPolicy> without_options(const SpecOptions& /*options*/) {
  return AnyPolicy(P{});
}

/// Whether a spec of a row, with the options it was written with, takes a peer given apart from
/// it (`select --peer ADDR`) as its own `peer=ADDR`: it routes to a peer and names no address of
/// its own yet. Called with the options as written (keys checked against the row, values not).
using SpecTakesPeer = bool (*)(const SpecOptions& options);

/// One built-in spec name.
///
/// Every field is given in every row: none has a default, and the rows (positional, each field
/// after a comment naming it) are compiled with -Wmissing-field-initializers as an error (below),
/// so a field added here fails to compile until each row says what it is for that row.
struct BuiltinSpec {
  std::string_view name;                      ///< as written in a spec
  std::span<const std::string_view> aliases;  ///< other names that parse to the same thing
  SpecKind kind;
  std::string_view grammar;  ///< its short form, as hints and tables write it: "ds4[:index=N]"
  std::string_view summary;  ///< one line: what it reproduces or does (README's spec table prints it)
  std::string_view
      types;  ///< the policy types it makes, as the spec table names them: "Ds4Scan, Ds4ExplicitIndex"
  std::span<const SpecOptionInfo> options;
  /// Specs of this row, each written as spec() writes it back (to_spec(parse(s)) == s); at least
  /// one, and together they cover every policy type the row makes.
  std::span<const std::string_view> examples;
  SpecFactory factory;  ///< null only for combinators
  /// Profiles: the sgid_index they route from (they take no "@sgid=N"), and the policy row that
  /// is the same choice routed from its own pick (named where only a policy fits).
  std::optional<std::uint8_t> literal_source;
  std::string_view policy_alone;
  /// Whether `select --peer ADDR` becomes this spec's `peer=ADDR` (spec_with_peer()); null for a
  /// row that never routes to a peer. A combinator's alternatives name their peers themselves.
  SpecTakesPeer takes_peer;
};

// Every row (and every option of a row) gives every field, in the struct's order; a row's fields
// each follow a comment naming it. Positional on purpose, as rdma-core's libibverbs/dummy_ops.c
// is: GCC and Clang both report a positional initializer that stops short
// (-Wmissing-field-initializers, an error here whatever the including target's warning flags;
// both read this pragma), where Clang 14 says nothing about a designated one that leaves a field
// out. A field added to BuiltinSpec or SpecOptionInfo fails to compile until every row has it.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wmissing-field-initializers"

namespace registry_rows {
// The rows' lists (named so the table below stays one line per field).
inline constexpr std::string_view kJacclEx[] = {"jaccl"};
inline constexpr std::string_view kJacclFixedEx[] = {"jaccl-fixed"};
inline constexpr std::string_view kJacclLegacyEx[] = {"jaccl-legacy"};
inline constexpr SpecOptionInfo kDs4Opts[] = {{"index", "N", false}};
inline constexpr std::string_view kDs4Ex[] = {"ds4", "ds4:index=3", "ds4:index=300"};
inline constexpr SpecOptionInfo kDs4LinuxOpts[] = {{"local", "ADDR", false}, {"index", "INT", false}};
inline constexpr std::string_view kDs4LinuxEx[] = {"ds4-linux", "ds4-linux:local=10.0.0.2",
                                                   "ds4-linux:local=10.0.0.2,index=2"};
inline constexpr SpecOptionInfo kValidatedOpts[] = {
    {"index", "N", false}, {"type", "T", false}, {"family", "F", false}, {"allow-link-local", "", false}};
inline constexpr std::string_view kValidatedEx[] = {"validated:index=2",
                                                    "validated:index=2,type=roce_v2,family=any"};
inline constexpr SpecOptionInfo kAutoOpts[] = {{"family", "F", false},       {"roce", "R", false},
                                               {"type", "T", false},         {"subnet", "CIDR", true},
                                               {"exclude", "CIDR", true},    {"netdev", "NAME", false},
                                               {"local", "ADDR", false},     {"peer", "PEER", false},
                                               {"require-local", "", false}, {"allow-link-local", "", false}};
inline constexpr std::string_view kAutoEx[] = {"auto", "auto:family=ipv4,roce=v2,subnet=10.0.0.0/8",
                                               "auto:local=10.0.0.2,require-local"};
inline constexpr std::string_view kFirstEx[] = {"first(validated:index=7|auto)", "first(ds4|jaccl-fixed)"};
inline constexpr std::string_view kPerDeviceEx[] = {"per-device(mlx5_0=validated:index=2;*=auto)"};
// The stacks' own choices (docs/concepts.md, "Stacks").
inline constexpr SpecOptionInfo kNcclOpts[] = {{"gid_index", "N", false},
                                               {"family", "AF_INET|AF_INET6", false},
                                               {"range", "CIDR", false},
                                               {"roce_version", "1|2", false}};
inline constexpr std::string_view kNcclEx[] = {"nccl", "nccl:gid_index=3",
                                               "nccl:family=AF_INET6,range=fd00::/8,roce_version=1"};
inline constexpr SpecOptionInfo kUcxOpts[] = {{"gid_index", "N", false}, {"rule", "1.13|pr10939", false}};
inline constexpr std::string_view kUcxEx[] = {"ucx", "ucx:gid_index=7", "ucx:rule=pr10939"};
inline constexpr SpecOptionInfo kPerftestOpts[] = {{"x", "N", false}, {"ipv6", "", false}};
inline constexpr std::string_view kPerftestEx[] = {"perftest", "perftest:x=3", "perftest:ipv6"};
inline constexpr SpecOptionInfo kMooncakeOpts[] = {{"gid_index", "INT", false}};
inline constexpr std::string_view kMooncakeEx[] = {"mooncake", "mooncake:gid_index=3"};
inline constexpr SpecOptionInfo kLibfabricOpts[] = {{"ep", "ud|msg", false},
                                                    {"gid_idx", "N", false},
                                                    {"local", "ADDR", false},
                                                    {"peer", "PEER", false},
                                                    {"mode", "v2|v1", false}};
inline constexpr std::string_view kLibfabricEx[] = {"libfabric", "libfabric:gid_idx=2",
                                                    "libfabric:ep=msg,local=10.152.0.12",
                                                    "libfabric:ep=msg,local=10.152.0.12,mode=v1"};
inline constexpr SpecOptionInfo kRdmaCmOpts[] = {
    {"local", "ADDR", false}, {"peer", "PEER", false}, {"mode", "v2|v1", false}};
inline constexpr std::string_view kRdmaCmEx[] = {
    "rdma_cm:local=10.152.0.12", "rdma_cm:local=10.152.0.12,mode=v1", "rdma_cm:peer=10.0.0.9"};
}  // namespace registry_rows

/// The built-in specs, in the order hints and tables list them.
// clang-format off
inline constexpr BuiltinSpec kBuiltinSpecs[] = {
    {/* name           */ "jaccl",
     /* aliases        */ {},
     /* kind           */ SpecKind::profile,
     /* grammar        */ "jaccl",
     /* summary        */ "JACCL as it ships: the first IPv4-mapped GID (any type, index 0 allowed) "
                          "advertised, the RTR routed from the literal sgid_index 1: it disagrees unless "
                          "that GID is at index 1",
     /* types          */ "JacclFirstMapped",
     /* options        */ {},
     /* examples       */ registry_rows::kJacclEx,
     /* factory        */ &without_options<JacclFirstMapped>,
     /* literal_source */ 1,
     /* policy_alone   */ "jaccl-fixed",
     /* takes_peer     */ nullptr},
    {/* name           */ "jaccl-fixed",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "jaccl-fixed",
     /* summary        */ "JACCL's choice, the first IPv4-mapped GID, routed from where it was found",
     /* types          */ "JacclFirstMapped",
     /* options        */ {},
     /* examples       */ registry_rows::kJacclFixedEx,
     /* factory        */ &without_options<JacclFirstMapped>,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "jaccl-legacy",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "jaccl-legacy",
     /* summary        */ "JACCL Dec 2025-Apr 2026: index 1, whatever it holds (an empty slot advertises "
                          "zeros)",
     /* types          */ "JacclLegacyIndex1",
     /* options        */ {},
     /* examples       */ registry_rows::kJacclLegacyEx,
     /* factory        */ &without_options<JacclLegacyIndex1>,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "ds4",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "ds4[:index=N]",
     /* summary        */ "ds4 on macOS: the first IPv4-mapped GID, or --rdma-gid-index N read unchecked "
                          "(above 255 ds4 wraps it; gidpolicy says so: errc::index_exceeds_uint8)",
     /* types          */ "Ds4Scan, Ds4ExplicitIndex",
     /* options        */ registry_rows::kDs4Opts,
     /* examples       */ registry_rows::kDs4Ex,
     /* factory        */ &Ds4Scan::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "ds4-linux",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "ds4-linux[:local=ADDR,index=INT]",
     /* summary        */ "ds4's Linux RoCE path: non-zero RoCE v2, the control socket's address first; a "
                          "forced index must be in range, readable, v2 and non-zero",
     /* types          */ "Ds4Linux",
     /* options        */ registry_rows::kDs4LinuxOpts,
     /* examples       */ registry_rows::kDs4LinuxEx,
     /* factory        */ &Ds4Linux::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "validated",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "validated:index=N[,type=T,family=F,allow-link-local]",
     /* summary        */ "an explicit index, checked before it is advertised or routed: in range, <= 255, "
                          "non-empty, non-zero, of type T and family F (default ipv4), not link-local on "
                          "RoCE or Thunderbolt",
     /* types          */ "ValidatedExplicit",
     /* options        */ registry_rows::kValidatedOpts,
     /* examples       */ registry_rows::kValidatedEx,
     /* factory        */ &ValidatedExplicit::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "auto",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "auto[:family=F,roce=R,subnet=CIDR,...]",
     /* summary        */ "the recommended automatic choice: the best usable GID, ranked (docs/policies.md)",
     /* types          */ "Ranked",
     /* options        */ registry_rows::kAutoOpts,
     /* examples       */ registry_rows::kAutoEx,
     /* factory        */ &Ranked::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ &Ranked::takes_peer},
    {/* name           */ "nccl",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "nccl[:gid_index=N,family=AF_INET|AF_INET6,range=CIDR,roce_version=1|2]",
     /* summary        */ "NCCL >= 2.21.5's own choice (NCCL_IB_GID_INDEX and the NCCL_IB_* settings as "
                          "options)",
     /* types          */ "Nccl",
     /* options        */ registry_rows::kNcclOpts,
     /* examples       */ registry_rows::kNcclEx,
     /* factory        */ &Nccl::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "ucx",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "ucx[:gid_index=N,rule=1.13|pr10939]",
     /* summary        */ "UCX 1.13.1's own choice: the gid[0] port check, then four priorities",
     /* types          */ "Ucx",
     /* options        */ registry_rows::kUcxOpts,
     /* examples       */ registry_rows::kUcxEx,
     /* factory        */ &Ucx::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "perftest",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "perftest[:x=N,ipv6]",
     /* summary        */ "perftest 4.5's own choice without -x (its pairwise walk), or -x N",
     /* types          */ "Perftest",
     /* options        */ registry_rows::kPerftestOpts,
     /* examples       */ registry_rows::kPerftestEx,
     /* factory        */ &Perftest::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "mooncake",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "mooncake[:gid_index=INT]",
     /* summary        */ "Mooncake's own choice: its classes, or MC_GID_INDEX",
     /* types          */ "Mooncake",
     /* options        */ registry_rows::kMooncakeOpts,
     /* examples       */ registry_rows::kMooncakeEx,
     /* factory        */ &Mooncake::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "libfabric",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "libfabric[:gid_idx=N] | libfabric:ep=msg,local=ADDR|peer=PEER",
     /* summary        */ "libfabric 1.17 verbs: UD routes from FI_VERBS_GID_IDX (0); MSG is rdma_cm's "
                          "choice",
     /* types          */ "Libfabric",
     /* options        */ registry_rows::kLibfabricOpts,
     /* examples       */ registry_rows::kLibfabricEx,
     /* factory        */ &Libfabric::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ &Libfabric::takes_peer},
    {/* name           */ "rdma_cm",
     /* aliases        */ {},
     /* kind           */ SpecKind::policy,
     /* grammar        */ "rdma_cm:local=ADDR|peer=PEER[,mode=v2|v1]",
     /* summary        */ "the kernel's rdma_cm: the address's GID of the default RoCE mode on its netdev, "
                          "else ENODEV",
     /* types          */ "RdmaCm",
     /* options        */ registry_rows::kRdmaCmOpts,
     /* examples       */ registry_rows::kRdmaCmEx,
     /* factory        */ &RdmaCm::from_options,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ &RdmaCm::takes_peer},
    {/* name           */ "first",
     /* aliases        */ {},
     /* kind           */ SpecKind::combinator,
     /* grammar        */ "first(a|b)",
     /* summary        */ "the first alternative that succeeds; the trace keeps every attempt",
     /* types          */ "FirstOf",
     /* options        */ {},
     /* examples       */ registry_rows::kFirstEx,
     /* factory        */ nullptr,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
    {/* name           */ "per-device",
     /* aliases        */ {},
     /* kind           */ SpecKind::combinator,
     /* grammar        */ "per-device(DEV=a;*=b)",
     /* summary        */ "a policy per device, '*' for every other device; a device not listed without "
                          "'*' is errc::device_not_found",
     /* types          */ "PerDevice",
     /* options        */ {},
     /* examples       */ registry_rows::kPerDeviceEx,
     /* factory        */ nullptr,
     /* literal_source */ std::nullopt,
     /* policy_alone   */ "",
     /* takes_peer     */ nullptr},
};
// clang-format on
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

/// `spec` with `peer=PEER` added when its row takes a peer given apart from it (BuiltinSpec::
/// takes_peer: `auto`, `rdma_cm` and `libfabric:ep=msg` that name no address yet); nullopt when
/// it does not (another row, a combinator, a spec that names its address itself), and the spec is
/// then used as given. A profile's "@sgid=N" stays last. `peer` is written as given: pass a
/// checked address (PeerAddress::to_string()), and the parser checks the result like any spec.
/// What `select --peer` does; the rows answer, so a new policy that routes to a peer says so in
/// its row, not in the CLI.
///
/// Example:
///   auto s = gidpolicy::spec_with_peer("rdma_cm:mode=v1", "10.0.0.9");  // "rdma_cm:mode=v1,peer=10.0.0.9"
///   auto none = gidpolicy::spec_with_peer("auto:peer=10.0.0.8", "10.0.0.9");  // nullopt: it names one
///   if (s && !none) std::cout << *s << "\n";
std::optional<std::string> spec_with_peer(std::string_view spec, std::string_view peer);

/// "auto, libfabric, rdma_cm": the rows that take a peer (takes_peer set), in table order.
std::string builtin_specs_taking_peer();

}  // namespace gidpolicy
