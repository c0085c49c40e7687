// The stacks: one row per RDMA stack gidpolicy knows, and everything else about a stack is read
// from its row: the StackId enum's order, `gidpolicy env --for` (which stacks, and the shape of
// their settings), `check --stacks`, `check --pins`, `doctor`, `fleet --stack`, the CLI's help and
// shell completion, and the Python module's `stacks()`.
//
// The gotcha it encodes: a stack is steered by names it reads (NCCL_IB_GID_INDEX,
// UCX_NET_DEVICES, -x, --rdma-gid-index, ...), and one misspelled copy of such a name in advice
// sends a user to set a variable nothing reads. Each name is spelled once, in `stack_vars` below;
// scripts/check-stack-names fails the lint when one appears in src/, tools/ or python/src/.
//
// The table is checked when it compiles: a row that leaves out a field is an error (designated
// initializers, no default member initializers, -Wmissing-field-initializers made an error for
// the table; Clang before 18 does not warn for designated initializers, so the static_asserts
// below check each field of each row as well), the rows are in StackId order, one per
// enumerator, and an enumerator without a row fails the switch in is_stack_id()
// (-Wswitch-enum made an error, no default).
//
// Adding a stack (docs/concepts.md, "Adding a stack"): its enumerator and row here, its case in
// stack_profile() (src/stacks.cpp), its policy if its choice is modelled (the registry's files),
// and its tests.
//
// Example:
//   for (const gidpolicy::StackInfo& s : gidpolicy::kStacks)
//     if (s.env == gidpolicy::EnvShape::per_process_variable)
//       std::cout << s.name << " pins its index with " << s.launch.choice << "\n";
//   const gidpolicy::StackInfo& ucx = gidpolicy::stack_row(gidpolicy::StackId::ucx);
#pragma once

#include <gidpolicy/gid_table.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>

namespace gidpolicy {

/// Every stack, in table order (kStacks[i].id == StackId(i)).
enum class StackId : std::uint8_t {
  nccl,
  nvshmem,
  ucx,
  mooncake,
  libfabric,
  perftest,
  ds4,
  llama_cpp,
  jaccl,
  exo
};

/// How a stack reads the text of a variable that pins its GID index (read_pin(), stacks.hpp).
enum class PinRule : std::uint8_t {
  nccl_param,     ///< ncclLoadParam: strtoll(text, 0, 0); empty keeps the default (-1 since 2.21.5, 0 before)
  nvshmem_param,  ///< NVSHMEM's own parser, modelled as NCCL's (not read from its source)
  ucx_config,     ///< "auto" or an unsigned number; anything else (empty too) is a configuration error
  atoi,           ///< atoi; outside 0..255 means the automatic choice (Mooncake)
  atoi_fallback,  ///< atoi, read only while the row's first pin is unset (Mooncake reading NCCL's)
  integer_param,  ///< an integer parameter; empty reads as 0, a negative value as 0 (libfabric; not verified)
  unchecked,      ///< strtoll, the index used as given (llama.cpp; not verified)
};

/// One variable that pins a stack's GID index, and how the stack reads its text.
struct PinVariable {
  std::string_view name;  ///< the environment variable
  PinRule rule;
};

/// What a variable that steers a stack's choice does, besides its pins (`pins`) and its device
/// list (LaunchSettings::device): how read_launch() (stacks.hpp) feeds it into the prediction.
enum class SettingEffect : std::uint8_t {
  family,        ///< the address family preferred: the profile's family= (exactly "AF_INET6", else AF_INET)
  range,         ///< the address range: the profile's range= (a CIDR; one that does not parse is ignored)
  roce_version,  ///< the RoCE version preferred: the profile's roce_version= (strtoll; default 2)
  reachability,  ///< which remote addresses count as reachable: read, but not the local GID choice
  not_in_model,  ///< read by a later release than the one modelled: reported, not applied
  not_modelled,  ///< read by the stack for a path the profile does not model: reported, not applied
};

/// One variable that steers a stack's choice besides its pins and device list.
struct SettingVariable {
  std::string_view name;  ///< the environment variable
  SettingEffect effect;
};

/// The shape of a stack's `gidpolicy env` output.
enum class EnvShape : std::uint8_t {
  per_process_variable,    ///< one index for every HCA of the process: no value when the ports need two
  per_port_args,           ///< command-line arguments, one line per port
  one_device_per_process,  ///< one device and its index: the first usable port, the others as alternatives
  jaccl_device_file,       ///< a device file per rank, named by a variable; the policy for the patched fork
};

/// How a device variable or argument writes a port.
enum class DeviceForm : std::uint8_t {
  none,               ///< the stack has no such setting (Mooncake: its own device list)
  device,             ///< "mlx5_0"
  device_port,        ///< "mlx5_0:1"
  exact_device_port,  ///< "=mlx5_0:1": NCCL's exact match (a bare name would also match mlx5_01)
  file,               ///< not a port: the path of a file that names the devices (JACCL's device file)
};

/// When `gidpolicy env` sets a per-process stack's device variable to the ports it used.
enum class DeviceList : std::uint8_t {
  never,          ///< not at all (one device only, or none)
  always,         ///< always (UCX uses every device it finds otherwise, checking each port)
  when_left_out,  ///< only when a port was left out (the stack would otherwise use it too)
};

/// Who reads a row's LaunchSettings::choice.
enum class ChoiceReader : std::uint8_t {
  stack,         ///< the stack as it ships: setting it steers the stack
  patched_fork,  ///< only a patched fork: the stack as it ships ignores it, and no setting steers it
};

/// The settings a launcher gives a stack besides its pins.
struct LaunchSettings {
  std::string_view choice;      ///< the variable or argument carrying the choice: an index, or a spec (JACCL)
  ChoiceReader choice_reader;   ///< whether the stack as it ships reads `choice`
  std::string_view device;      ///< the variable or argument naming the device(s); "" when none
  DeviceForm device_form;       ///< how `device` writes a port
  DeviceList device_list;       ///< per_process_variable: when `device` lists the ports used
  std::string_view port;        ///< the argument naming the port when `device` does not ("-i"); ""
  std::string_view read_first;  ///< a variable the stack reads before `device` ("" when none)
};

/// The link layers a stack runs on.
struct LinkLayers {
  bool infiniband;
  bool ethernet;     ///< RoCE
  bool thunderbolt;  ///< RDMA over Thunderbolt (macOS)
  [[nodiscard]] constexpr bool has(LinkLayer l) const noexcept {
    switch (l.kind()) {
      case LinkLayer::Kind::infiniband:
        return infiniband;
      case LinkLayer::Kind::ethernet:
        return ethernet;
      case LinkLayer::Kind::thunderbolt:
        return thunderbolt;
      case LinkLayer::Kind::unknown:
        return false;
    }
    return false;
  }
};

/// One way a stack's own choice is modelled: a named profile, and the link layers where the stack
/// chooses that way. ds4 has two (its macOS scan on Thunderbolt, its Linux RoCE path on RoCE),
/// JACCL three (as it ships, its earlier release, a fork); which one `check --stacks`, `doctor`
/// and `fleet --stack` predict on a port is the first `automatic` path that runs on its link layer.
struct StackPath {
  std::string_view spec;  ///< the profile spec ("ds4", "ds4-linux", "jaccl-legacy")
  LinkLayers runs_on;     ///< where the stack chooses this way
  bool automatic;         ///< the stack as it ships (false: an earlier release or a fork)
  /// What the prediction assumes that the table cannot say ("" when nothing): ds4's Linux path
  /// prefers the GID of its control socket's address, which no table holds.
  std::string_view assumes;
  /// The spec option naming the control socket's local address ("local" for ds4-linux; "" when
  /// the path has none). A prediction on a port gives it the port's first RoCE v2 IPv4-mapped
  /// GID's address: where ds4 itself asks the control connection to run (stack_profile_for()).
  std::string_view local_option;
};

/// When a stack reads its GID table again after its first choice. The port raises
/// IBV_EVENT_GID_CHANGE whenever an entry changes: an address added to or removed from the netdev,
/// a VLAN created, a bond failing over. Entries shift with it (the kernel fills the first free
/// slot), so an index chosen before the change may hold another GID, or none, after it.
enum class Reselect : std::uint8_t {
  at_open,         ///< once, when it opens the device (a process, a UCX interface, a JACCL group)
  per_connection,  ///< for each connection it sets up; connections already up keep their GID
  on_change,       ///< on IBV_EVENT_GID_CHANGE as well: it chooses again, republishes, reconnects
  not_checked,     ///< its change path was not read in its source: treated as at_open
};

/// What a stack does when its port's GID table changes, read from its source.
struct ChangeBehaviour {
  Reselect reselects;
  /// What it does with IBV_EVENT_GID_CHANGE ("logs a warning and nothing more").
  std::string_view event;
  /// What its pinned index does on a change ("" only for a stack no setting steers: JACCL, exo).
  std::string_view pinned;
  /// Where the behaviour was read, with the version ("" for not_checked).
  std::string_view source;
};

/// One stack as a launcher meets it. Every field is given in every row (no defaults).
struct StackInfo {
  StackId id;
  std::string_view name;     ///< "nccl": the name `env --for`, `fleet --stack` and Python take
  std::string_view title;    ///< "NCCL": as help and prose name it
  std::string_view version;  ///< the version the profile reproduces
  std::string_view source;   ///< where the rule lives in that version's source
  /// The profile spec of its automatic choice ("" when it is not modelled: llama.cpp).
  std::string_view automatic;
  /// `check --stacks`, `doctor` and `fleet --stack` predict its automatic choice on the ports it
  /// runs on (`paths`); a row that is not predicted (llama.cpp) is listed there as using the index
  /// it is given.
  bool predicted;
  /// Every named profile that models the stack, the one of `automatic` first ("" and none when not
  /// modelled); the default `gidpolicy check` shows a stack's profiles only where they run.
  std::span<const StackPath> paths;
  std::span<const PinVariable> pins;  ///< the variables that pin its index, in the order it reads them
  /// The other variables that steer its choice (family, range, RoCE version, subnets), each
  /// read as the stack reads it by read_launch() (stacks.hpp); none for a stack steered only by
  /// its pins, its device list or its command line.
  std::span<const SettingVariable> settings;
  LaunchSettings launch;
  EnvShape env;
  LinkLayers runs_on;  ///< where it runs: the ports `check --stacks`, `doctor`, `env` and `fleet --stack` use
  /// What it does when the GID table changes under it (`check --pins`, `watch --stacks`).
  ChangeBehaviour on_change;
  std::string_view summary;  ///< one line for docs and help
};

/// Each variable or argument a stack reads, spelled once (scripts/check-stack-names).
namespace stack_vars {
inline constexpr std::string_view kNcclGidIndex = "NCCL_IB_GID_INDEX";
inline constexpr std::string_view kNcclHca = "NCCL_IB_HCA";
inline constexpr std::string_view kNcclAddrFamily = "NCCL_IB_ADDR_FAMILY";
inline constexpr std::string_view kNcclAddrRange = "NCCL_IB_ADDR_RANGE";
inline constexpr std::string_view kNcclRoceVersion = "NCCL_IB_ROCE_VERSION_NUM";
inline constexpr std::string_view kNvshmemAddrFamily = "NVSHMEM_IB_ADDR_FAMILY";
inline constexpr std::string_view kNvshmemAddrRange = "NVSHMEM_IB_ADDR_RANGE";
inline constexpr std::string_view kNvshmemRoceVersion = "NVSHMEM_IB_ROCE_VERSION_NUM";
inline constexpr std::string_view kNvshmemGidIndex = "NVSHMEM_IB_GID_INDEX";
inline constexpr std::string_view kNvshmemHcaList = "NVSHMEM_HCA_LIST";
inline constexpr std::string_view kUcxGidIndex = "UCX_IB_GID_INDEX";
inline constexpr std::string_view kUcxNetDevices = "UCX_NET_DEVICES";
inline constexpr std::string_view kUcxRoceLocalSubnet = "UCX_IB_ROCE_LOCAL_SUBNET";
inline constexpr std::string_view kUcxRoceSubnetPrefixLen = "UCX_IB_ROCE_SUBNET_PREFIX_LEN";
inline constexpr std::string_view kUcxRoceSubnets = "UCX_IB_ROCE_SUBNETS";
inline constexpr std::string_view kMcGidIndex = "MC_GID_INDEX";
inline constexpr std::string_view kFiVerbsGidIdx = "FI_VERBS_GID_IDX";
inline constexpr std::string_view kFiVerbsDeviceName = "FI_VERBS_DEVICE_NAME";
inline constexpr std::string_view kFiVerbsIface = "FI_VERBS_IFACE";
inline constexpr std::string_view kPerftestDevice = "-d";
inline constexpr std::string_view kPerftestPort = "-i";
inline constexpr std::string_view kPerftestGidIndex = "-x";
inline constexpr std::string_view kDs4Device = "--rdma-device";
inline constexpr std::string_view kDs4GidIndex = "--rdma-gid-index";
inline constexpr std::string_view kGgmlRdmaDev = "GGML_RDMA_DEV";
inline constexpr std::string_view kGgmlRdmaGid = "GGML_RDMA_GID";
inline constexpr std::string_view kMlxIbvDevices = "MLX_IBV_DEVICES";
inline constexpr std::string_view kJacclIbvDevices = "JACCL_IBV_DEVICES";
inline constexpr std::string_view kJacclGidPolicy = "JACCL_GID_POLICY";
// JACCL's rank and ring as mlx.launch sets them (JACCL reads its own JACCL_* name first); gidpolicy
// takes them as the defaults of --rank and --jaccl-ring.
inline constexpr std::string_view kJacclRank = "JACCL_RANK";
inline constexpr std::string_view kMlxRank = "MLX_RANK";
inline constexpr std::string_view kJacclRing = "JACCL_RING";
inline constexpr std::string_view kMlxJacclRing = "MLX_JACCL_RING";
}  // namespace stack_vars

namespace stack_rows {
// The rows' lists (named so the table below stays one line per field).
inline constexpr PinVariable kNcclPins[] = {{stack_vars::kNcclGidIndex, PinRule::nccl_param}};
inline constexpr PinVariable kNvshmemPins[] = {{stack_vars::kNvshmemGidIndex, PinRule::nvshmem_param}};
inline constexpr PinVariable kUcxPins[] = {{stack_vars::kUcxGidIndex, PinRule::ucx_config}};
inline constexpr PinVariable kMooncakePins[] = {{stack_vars::kMcGidIndex, PinRule::atoi},
                                                {stack_vars::kNcclGidIndex, PinRule::atoi_fallback}};
inline constexpr PinVariable kLibfabricPins[] = {{stack_vars::kFiVerbsGidIdx, PinRule::integer_param}};
inline constexpr PinVariable kLlamaCppPins[] = {{stack_vars::kGgmlRdmaGid, PinRule::unchecked}};
inline constexpr std::span<const PinVariable> kNoPins{};
inline constexpr SettingVariable kNcclSettings[] = {
    {stack_vars::kNcclAddrFamily, SettingEffect::family},
    {stack_vars::kNcclAddrRange, SettingEffect::range},
    {stack_vars::kNcclRoceVersion, SettingEffect::roce_version}};
// NVSHMEM's copy of NCCL's rule under its own names (modelled as NCCL's, not read from its source).
inline constexpr SettingVariable kNvshmemSettings[] = {
    {stack_vars::kNvshmemAddrFamily, SettingEffect::family},
    {stack_vars::kNvshmemAddrRange, SettingEffect::range},
    {stack_vars::kNvshmemRoceVersion, SettingEffect::roce_version}};
// UCX 1.13: the local-subnet pair decides which remote RoCE v2 addresses are reachable (ib_iface.c),
// not which local GID is chosen; the subnet list exists only after PR 10939 (master, 2025).
inline constexpr SettingVariable kUcxSettings[] = {
    {stack_vars::kUcxRoceLocalSubnet, SettingEffect::reachability},
    {stack_vars::kUcxRoceSubnetPrefixLen, SettingEffect::reachability},
    {stack_vars::kUcxRoceSubnets, SettingEffect::not_in_model}};
// libfabric's interface name serves connected (rdma_cm) endpoints; the profile models UD ones.
inline constexpr SettingVariable kLibfabricSettings[] = {
    {stack_vars::kFiVerbsIface, SettingEffect::not_modelled}};
inline constexpr std::span<const SettingVariable> kNoSettings{};
inline constexpr LinkLayers kIbAndRoce{.infiniband = true, .ethernet = true, .thunderbolt = false};
inline constexpr LinkLayers kThunderbolt{.infiniband = false, .ethernet = false, .thunderbolt = true};
inline constexpr LinkLayers kRoce{.infiniband = false, .ethernet = true, .thunderbolt = false};
inline constexpr LinkLayers kRoceAndThunderbolt{.infiniband = false, .ethernet = true, .thunderbolt = true};
inline constexpr StackPath kNcclPaths[] = {{"nccl", kIbAndRoce, true, "", ""}};
inline constexpr StackPath kUcxPaths[] = {{"ucx", kIbAndRoce, true, "", ""}};
inline constexpr StackPath kMooncakePaths[] = {{"mooncake", kIbAndRoce, true, "", ""}};
inline constexpr StackPath kLibfabricPaths[] = {{"libfabric", kIbAndRoce, true, "", ""}};
inline constexpr StackPath kPerftestPaths[] = {{"perftest", kIbAndRoce, true, "", ""}};
inline constexpr StackPath kDs4Paths[] = {
    {"ds4", kThunderbolt, true, "", ""},
    {"ds4-linux", kRoce, true,
     "with its control connection on the port's own IPv4 address (--coordinator on the direct RoCE address, "
     "as ds4's error asks); over another network it takes the first non-zero RoCE v2 entry",
     "local"}};
inline constexpr StackPath kJacclPaths[] = {{"jaccl", kThunderbolt, true, "", ""},
                                            {"jaccl-legacy", kThunderbolt, false, "", ""},
                                            {"jaccl-fixed", kThunderbolt, false, "", ""}};
// exo runs MLX distributed with JACCL: its choice is JACCL's as it ships.
inline constexpr StackPath kExoPaths[] = {{"jaccl", kThunderbolt, true, "", ""}};
inline constexpr std::span<const StackPath> kNoPaths{};
// JACCL's launch settings, which exo (running JACCL) shares: one device file per rank, the
// policy variable read only by the patched fork.
inline constexpr LaunchSettings kJacclLaunch{.choice = stack_vars::kJacclGidPolicy,
                                             .choice_reader = ChoiceReader::patched_fork,
                                             .device = stack_vars::kMlxIbvDevices,
                                             .device_form = DeviceForm::file,
                                             .device_list = DeviceList::never,
                                             .port = "",
                                             .read_first = stack_vars::kJacclIbvDevices};
}  // namespace stack_rows

// The opposite of the policy registry's rows: here a field left out is an error, on purpose.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wmissing-field-initializers"
/// Every stack, in StackId order: the one table.
inline constexpr StackInfo kStacks[] = {
    {.id = StackId::nccl,
     .name = "nccl",
     .title = "NCCL",
     .version = "NCCL >= 2.21.5",
     .source = "src/transport/net_ib (ncclIbGetGidIndex, ncclUpdateGidIndex)",
     .automatic = "nccl",
     .predicted = true,
     .paths = stack_rows::kNcclPaths,
     .pins = stack_rows::kNcclPins,
     .settings = stack_rows::kNcclSettings,
     .launch = {.choice = stack_vars::kNcclGidIndex,
                .choice_reader = ChoiceReader::stack,
                .device = stack_vars::kNcclHca,
                .device_form = DeviceForm::exact_device_port,
                .device_list = DeviceList::when_left_out,
                .port = "",
                .read_first = ""},
     .env = EnvShape::per_process_variable,
     .runs_on = stack_rows::kIbAndRoce,
     .on_change = {.reselects = Reselect::per_connection,
                   .event = "logs a warning (since 2.28.3) and nothing more",
                   .pinned =
                       "keeps the pinned index and reads the GID there again for each new connection: when "
                       "the address moves to another index, later connections advertise whatever the pinned "
                       "index then holds",
                   .source = "NCCL 2.21.5 to 2.30.7: ncclIbConnect and ncclIbAccept call ncclIbGetGidIndex, "
                             "src/transport/net_ib/connect.cc"},
     .summary = "NVIDIA's collectives: one GID index per process for all its HCAs"},
    {.id = StackId::nvshmem,
     .name = "nvshmem",
     .title = "NVSHMEM",
     .version = "NVSHMEM 3.x (NCCL's rule under NVSHMEM_IB_*)",
     .source = "src/modules/transport/common (NCCL's GID selection, copied)",
     .automatic = "nccl",
     .predicted = true,
     .paths = stack_rows::kNcclPaths,
     .pins = stack_rows::kNvshmemPins,
     .settings = stack_rows::kNvshmemSettings,
     .launch = {.choice = stack_vars::kNvshmemGidIndex,
                .choice_reader = ChoiceReader::stack,
                .device = stack_vars::kNvshmemHcaList,
                .device_form = DeviceForm::device_port,
                .device_list = DeviceList::when_left_out,
                .port = "",
                .read_first = ""},
     .env = EnvShape::per_process_variable,
     .runs_on = stack_rows::kIbAndRoce,
     .on_change = {.reselects = Reselect::not_checked,
                   .event = "not read in its source",
                   .pinned = "keeps the pinned index (assumed: its change path was not read)",
                   .source = ""},
     .summary = "NVSHMEM and DeepEP: NCCL's choice under its own variables"},
    {.id = StackId::ucx,
     .name = "ucx",
     .title = "UCX",
     .version = "UCX 1.13.1 (Debian)",
     .source = "src/uct/ib/base/ib_device.c (uct_ib_device_select_gid)",
     .automatic = "ucx",
     .predicted = true,
     .paths = stack_rows::kUcxPaths,
     .pins = stack_rows::kUcxPins,
     .settings = stack_rows::kUcxSettings,
     .launch = {.choice = stack_vars::kUcxGidIndex,
                .choice_reader = ChoiceReader::stack,
                .device = stack_vars::kUcxNetDevices,
                .device_form = DeviceForm::device_port,
                .device_list = DeviceList::always,
                .port = "",
                .read_first = ""},
     .env = EnvShape::per_process_variable,
     .runs_on = stack_rows::kIbAndRoce,
     .on_change = {.reselects = Reselect::at_open,
                   .event = "logs a warning and nothing more",
                   .pinned =
                       "reads the GID at the pinned index once per interface: an interface opened before "
                       "the change keeps advertising the GID it read",
                   .source = "UCX 1.13.1: uct_ib_iface_init_roce_gid_info when an interface is created, "
                             "src/uct/ib/base/ib_iface.c"},
     .summary = "UCX and Open MPI 5: a port check on gid[0], then its own priorities"},
    {.id = StackId::mooncake,
     .name = "mooncake",
     .title = "Mooncake",
     .version = "Mooncake Transfer Engine (main, 2026)",
     .source = "mooncake-transfer-engine/src/transport/rdma_transport/rdma_context.cpp, src/config.cpp",
     .automatic = "mooncake",
     .predicted = true,
     .paths = stack_rows::kMooncakePaths,
     .pins = stack_rows::kMooncakePins,
     .settings = stack_rows::kNoSettings,
     .launch = {.choice = stack_vars::kMcGidIndex,
                .choice_reader = ChoiceReader::stack,
                .device = "",
                .device_form = DeviceForm::none,
                .device_list = DeviceList::never,
                .port = "",
                .read_first = ""},
     .env = EnvShape::per_process_variable,
     .runs_on = stack_rows::kIbAndRoce,
     .on_change = {.reselects = Reselect::on_change,
                   .event = "chooses again (its own ranking over the live table), republishes its device "
                            "descriptor and disconnects every endpoint so they reconnect with the new GID "
                            "(without a pin, an RTR "
                            "that fails also makes it try its next candidate, kvcache-ai/Mooncake#2269)",
                   .pinned =
                       "keeps the pinned index and re-reads the GID there, republishing it; when the slot "
                       "is now empty the refresh fails: its endpoints are disconnected and the old GID "
                       "stays published",
                   .source = "Mooncake main since July 2026, kvcache-ai/Mooncake#2878: "
                             "RdmaContext::refreshCurrentGid"},
     .summary = "Mooncake Transfer Engine: its address classes, or its pin (NCCL's when its own is unset)"},
    {.id = StackId::libfabric,
     .name = "libfabric",
     .title = "libfabric",
     .version = "libfabric 1.17 verbs provider, UD endpoints (Debian)",
     .source = "prov/verbs (FI_VERBS_GID_IDX)",
     .automatic = "libfabric",
     .predicted = true,
     .paths = stack_rows::kLibfabricPaths,
     .pins = stack_rows::kLibfabricPins,
     .settings = stack_rows::kLibfabricSettings,
     .launch = {.choice = stack_vars::kFiVerbsGidIdx,
                .choice_reader = ChoiceReader::stack,
                .device = stack_vars::kFiVerbsDeviceName,
                .device_form = DeviceForm::device,
                .device_list = DeviceList::never,
                .port = "",
                .read_first = ""},
     .env = EnvShape::per_process_variable,
     .runs_on = stack_rows::kIbAndRoce,
     .on_change = {.reselects = Reselect::not_checked,
                   .event = "not read in its source",
                   .pinned = "keeps the pinned index (assumed: its change path was not read)",
                   .source = ""},
     .summary = "libfabric's verbs provider: UD endpoints route from an index used unchecked (0)"},
    {.id = StackId::perftest,
     .name = "perftest",
     .title = "perftest",
     .version = "perftest 4.5 (Debian 4.5+0.17)",
     .source = "src/perftest_resources.c (get_best_gid_index)",
     .automatic = "perftest",
     .predicted = true,
     .paths = stack_rows::kPerftestPaths,
     .pins = stack_rows::kNoPins,
     .settings = stack_rows::kNoSettings,
     .launch = {.choice = stack_vars::kPerftestGidIndex,
                .choice_reader = ChoiceReader::stack,
                .device = stack_vars::kPerftestDevice,
                .device_form = DeviceForm::device,
                .device_list = DeviceList::never,
                .port = stack_vars::kPerftestPort,
                .read_first = ""},
     .env = EnvShape::per_port_args,
     .runs_on = stack_rows::kIbAndRoce,
     .on_change = {.reselects = Reselect::at_open,
                   .event = "not handled: a run is one connection",
                   .pinned = "uses the index given with -x for the whole run",
                   .source = "perftest 4.5: get_best_gid_index once, when the run sets up its context "
                             "(src/perftest_resources.c)"},
     .summary = "ib_write_bw and friends: their pairwise walk, or the index given on the command line"},
    {.id = StackId::ds4,
     .name = "ds4",
     .title = "ds4",
     .version = "ds4 (antirez/ds4 and forks): its macOS scan on Thunderbolt, its Linux RoCE path (ds4-linux) "
                "on RoCE",
     .source = "ds4_tp.c (the first IPv4-mapped GID, or the index given; tp_rdma_linux_gid on Linux)",
     .automatic = "ds4",
     .predicted = true,
     .paths = stack_rows::kDs4Paths,
     .pins = stack_rows::kNoPins,
     .settings = stack_rows::kNoSettings,
     .launch = {.choice = stack_vars::kDs4GidIndex,
                .choice_reader = ChoiceReader::stack,
                .device = stack_vars::kDs4Device,
                .device_form = DeviceForm::device,
                .device_list = DeviceList::never,
                .port = "",
                .read_first = ""},
     .env = EnvShape::per_port_args,
     .runs_on = stack_rows::kRoceAndThunderbolt,
     .on_change = {.reselects = Reselect::not_checked,
                   .event = "not read in its source",
                   .pinned = "keeps the index given (assumed: its change path was not read)",
                   .source = ""},
     .summary = "ds4: the first IPv4-mapped GID on macOS, RoCE v2 on Linux, or the index given"},
    {.id = StackId::llama_cpp,
     .name = "llama.cpp",
     .title = "llama.cpp",
     .version = "llama.cpp RPC backend, its RDMA transport (RoCE, and Apple's Thunderbolt RDMA)",
     .source = "ggml-rpc (its RDMA transport; its automatic choice matches the control socket's address: not "
               "modelled)",
     .automatic = "",
     .predicted = false,
     .paths = stack_rows::kNoPaths,
     .pins = stack_rows::kLlamaCppPins,
     .settings = stack_rows::kNoSettings,
     .launch = {.choice = stack_vars::kGgmlRdmaGid,
                .choice_reader = ChoiceReader::stack,
                .device = stack_vars::kGgmlRdmaDev,
                .device_form = DeviceForm::device,
                .device_list = DeviceList::never,
                .port = "",
                .read_first = ""},
     .env = EnvShape::one_device_per_process,
     .runs_on = stack_rows::kRoceAndThunderbolt,
     .on_change = {.reselects = Reselect::not_checked,
                   .event = "not read in its source",
                   .pinned = "keeps the index given (assumed: its change path was not read)",
                   .source = ""},
     .summary = "llama.cpp's RPC backend: one device per process, its index used as given"},
    {.id = StackId::jaccl,
     .name = "jaccl",
     .title = "JACCL",
     .version = "MLX JACCL as it ships (since MLX PR 3412, Apr 2026)",
     .source = "mlx/distributed/jaccl/lib/jaccl/rdma.cpp (info(), queue_pair_rtr)",
     .automatic = "jaccl",
     .predicted = true,
     .paths = stack_rows::kJacclPaths,
     .pins = stack_rows::kNoPins,
     .settings = stack_rows::kNoSettings,
     .launch = stack_rows::kJacclLaunch,
     .env = EnvShape::jaccl_device_file,
     .runs_on = stack_rows::kThunderbolt,
     .on_change = {.reselects = Reselect::at_open,
                   .event = "not handled: it reads no asynchronous event",
                   .pinned = "",
                   .source =
                       "MLX (August 2026): Connection::info() reads the table once per connection, "
                       "when the group connects, and keeps it (mlx/distributed/jaccl/lib/jaccl/rdma.cpp)"},
     .summary = "MLX's JACCL: a device file per rank; the policy itself only in the patched fork"},
    {.id = StackId::exo,
     .name = "exo",
     .title = "exo",
     .version = "exo, which runs MLX distributed with JACCL: predicted as JACCL as it ships",
     .source = "exo-explore/exo (MLX's JACCL backend: mlx/distributed/jaccl/lib/jaccl/rdma.cpp)",
     .automatic = "jaccl",
     .predicted = true,
     .paths = stack_rows::kExoPaths,
     .pins = stack_rows::kNoPins,
     .settings = stack_rows::kNoSettings,
     .launch = stack_rows::kJacclLaunch,
     .env = EnvShape::jaccl_device_file,
     .runs_on = stack_rows::kThunderbolt,
     .on_change = {.reselects = Reselect::at_open,
                   .event = "not handled: JACCL reads no asynchronous event",
                   .pinned = "",
                   .source =
                       "MLX's JACCL (August 2026): Connection::info() reads the table once per connection "
                       "(mlx/distributed/jaccl/lib/jaccl/rdma.cpp)"},
     .summary = "exo: JACCL underneath, so JACCL's choice, device file and patched-fork policy"},
};
#pragma GCC diagnostic pop

/// How many stacks there are.
inline constexpr std::size_t kStackCount = std::size(kStacks);

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
#pragma GCC diagnostic error "-Wswitch-enum"
/// True for each enumerator of StackId. The switch lists them all and has no default: an
/// enumerator added without a case fails the build, and one with a case but no row fails the
/// static_assert below.
constexpr bool is_stack_id(StackId id) noexcept {
  switch (id) {
    case StackId::nccl:
    case StackId::nvshmem:
    case StackId::ucx:
    case StackId::mooncake:
    case StackId::libfabric:
    case StackId::perftest:
    case StackId::ds4:
    case StackId::llama_cpp:
    case StackId::jaccl:
    case StackId::exo:
      return true;
  }
  return false;
}
#pragma GCC diagnostic pop

/// The row of `id`.
constexpr const StackInfo& stack_row(StackId id) noexcept { return kStacks[static_cast<std::size_t>(id)]; }

namespace stack_checks {
constexpr bool rows_follow_the_enum() {
  for (std::size_t i = 0; i < kStackCount; ++i)
    if (kStacks[i].id != static_cast<StackId>(i) || !is_stack_id(kStacks[i].id)) return false;
  return !is_stack_id(static_cast<StackId>(kStackCount));
}
constexpr bool names_are_unique() {
  for (std::size_t i = 0; i < kStackCount; ++i)
    for (std::size_t j = i + 1; j < kStackCount; ++j)
      if (kStacks[i].name == kStacks[j].name) return false;
  return true;
}
// What the shape of a row's env output needs of its other fields; Clang 14 does not flag a
// designated field left out, so each field that must say something is checked here.
constexpr bool row_is_complete(const StackInfo& s) {
  if (s.name.empty() || s.title.empty() || s.version.empty() || s.source.empty() || s.summary.empty())
    return false;
  if (s.launch.choice.empty()) return false;
  if (!s.runs_on.infiniband && !s.runs_on.ethernet && !s.runs_on.thunderbolt) return false;
  if (s.predicted == s.automatic.empty()) return false;
  // The paths: `automatic`'s first, each running only where the stack runs.
  if (s.predicted != !s.paths.empty()) return false;
  if (!s.paths.empty() && (s.paths.front().spec != s.automatic || !s.paths.front().automatic)) return false;
  for (const StackPath& p : s.paths)
    if (p.spec.empty() || (p.runs_on.infiniband && !s.runs_on.infiniband) ||
        (p.runs_on.ethernet && !s.runs_on.ethernet) || (p.runs_on.thunderbolt && !s.runs_on.thunderbolt))
      return false;
  if ((s.launch.device_form == DeviceForm::none) != s.launch.device.empty()) return false;
  // What a change does: the event always said; a pin's behaviour for every stack a setting steers;
  // a source exactly when the behaviour was read in one.
  if (s.on_change.event.empty()) return false;
  if (s.on_change.pinned.empty() != (s.launch.choice_reader == ChoiceReader::patched_fork)) return false;
  if (s.on_change.source.empty() != (s.on_change.reselects == Reselect::not_checked)) return false;
  switch (s.env) {
    case EnvShape::per_process_variable:
      return !s.pins.empty() && s.pins.front().name == s.launch.choice;
    case EnvShape::per_port_args:
      return !s.launch.device.empty();
    case EnvShape::one_device_per_process:
      return !s.launch.device.empty() && !s.pins.empty() && s.pins.front().name == s.launch.choice;
    case EnvShape::jaccl_device_file:
      return s.launch.device_form == DeviceForm::file && !s.automatic.empty();
  }
  return false;
}
constexpr bool rows_are_complete() {
  for (const StackInfo& s : kStacks)
    if (!row_is_complete(s)) return false;
  return true;
}
}  // namespace stack_checks
static_assert(stack_checks::rows_follow_the_enum(),
              "kStacks: one row per StackId enumerator, in enumerator order (stack_table.hpp)");
static_assert(stack_checks::names_are_unique(), "kStacks: two rows have the same name");
static_assert(stack_checks::rows_are_complete(),
              "kStacks: a row leaves a field empty that its env shape needs (stack_checks::row_is_complete)");

/// The row named `name`, or nullptr.
constexpr const StackInfo* find_stack(std::string_view name) noexcept {
  for (const StackInfo& s : kStacks)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace gidpolicy
