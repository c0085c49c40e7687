// Stacks: what each RDMA stack on a host will choose, whether its RTR then works, and how it
// reads a pinned setting — as data, for `gidpolicy check --stacks`, `gidpolicy env`,
// `gidpolicy check --pins`, `doctor` and `gidpolicy fleet --stack`.
//
// Each stack is one row of the table in stack_table.hpp (its names, pins, launch settings, the
// shape of its env output, the link layers it runs on) plus, when its choice is modelled, one
// profile (policies/nccl.hpp, ucx.hpp, perftest.hpp, mooncake.hpp, libfabric.hpp, ds4_scan.hpp,
// the jaccl profile); this header predicts with them. The gotcha: a stack's choice is judged as
// that stack makes it (NCCL keeps a link-local fe80 at 0, UCX rejects a port whose gid[0] is
// empty), not as gidpolicy would choose; a failed choice says what it means when it runs
// ("rejects the port", "does not open the device").
//
// Example:
//   for (const gidpolicy::StackInfo& s : gidpolicy::kStacks) {
//     if (!s.predicted) continue;
//     auto profile = gidpolicy::stack_profile(s.id);
//     if (!profile) return profile.error();
//     const auto v = gidpolicy::predict_profile(profile.value(), table,
//     gidpolicy::DriverModel::for_table(table)); std::cout << s.name << ": " << v.outcome << "\n";
//   }
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/stack_table.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

/// Every stack, in the order the CLI shows them (kStacks, stack_table.hpp).
constexpr std::span<const StackInfo> stack_catalogue() noexcept { return kStacks; }

/// Which rows stack_names() lists.
enum class StackSet : std::uint8_t {
  all,        ///< every row: what `env --for` and the Python module take
  predicted,  ///< the rows whose choice `check --stacks`, `doctor` and `fleet --stack` predict
};
/// The names of the rows of `which`, in table order, joined by `separator` ("nccl, nvshmem, ...").
std::string stack_names(StackSet which, std::string_view separator = ", ");
/// The titles of the rows of `which` ("NCCL, NVSHMEM, UCX, ..."), for help and prose.
std::string stack_titles(StackSet which);
/// Every variable that pins a stack's GID index, each once, in table order (what `check --pins`
/// and `doctor` look for in the environment).
std::vector<std::string_view> pin_variables();

/// How a stack reads the variable naming the devices (and ports) it uses: NCCL_IB_HCA,
/// NVSHMEM_HCA_LIST, UCX_NET_DEVICES, FI_VERBS_DEVICE_NAME, GGML_RDMA_DEV (each row's
/// LaunchSettings::device when that is a variable). The one reading `env` (which writes them),
/// `check --pins` and `doctor` (which judge a pin only on the ports its stack then uses) share.
///
/// The gotcha: a pin judged on every port fails on a port the stack never opens. `env` prints
/// NCCL_IB_HCA==mlx5_1:1 beside NCCL_IB_GID_INDEX=3 exactly because index 3 is wrong on mlx5_0;
/// judging the pin without the selector would call gidpolicy's own advice stale.
///
/// Example:
///   auto sel = gidpolicy::read_device_selector("NCCL_IB_HCA", "=mlx5_1:1");
///   if (sel && !sel->selects("mlx5_0", 1)) std::cout << "NCCL leaves mlx5_0 alone\n";
struct DeviceSelector {
  /// How a name in the list is compared with a device's name.
  enum class Match : std::uint8_t {
    prefix,  ///< the device's name starts with it (NCCL without '=', libfabric's provider)
    exact,   ///< the whole name (NCCL's '=', UCX, llama.cpp)
  };
  /// One device of the list, with the port when the list names one (else every port).
  struct Item {
    std::string device;
    std::optional<std::uint32_t> port;
  };
  StackId stack = StackId::nccl;
  std::string variable;  ///< the variable read
  Match match = Match::exact;
  bool exclude = false;     ///< NCCL's leading '^': every device but the listed ones
  bool every = false;       ///< the list selects every device (NCCL's empty list, UCX's "all")
  std::vector<Item> items;  ///< in the variable's order
  /// Whether the stack uses `device`'s port `port` under this setting.
  [[nodiscard]] bool selects(std::string_view device, std::uint32_t port) const;
};

/// Every variable that names a stack's devices, each once, in table order (the rows whose
/// LaunchSettings::device is an environment variable: not an argument, not JACCL's file).
std::vector<std::string_view> device_variables();

/// `text` read as the stack whose device variable `variable` is reads it: NCCL_IB_HCA by NCCL's
/// rule (an optional '^' to exclude, then an optional '=' for exact names, then
/// "name[:port]" items split on ','; a name without '=' is a prefix: mlx5_1 also matches
/// mlx5_10; an empty list is every device); NVSHMEM_HCA_LIST modelled as NCCL's (not read from
/// its source); UCX_NET_DEVICES as "all" or exact "device:port" items (an item without a port
/// names a TCP interface, no RDMA port); FI_VERBS_DEVICE_NAME as one name prefix (not verified);
/// GGML_RDMA_DEV as one exact name (not verified). nullopt for any other variable.
std::optional<DeviceSelector> read_device_selector(std::string_view variable, std::string_view text);

/// The stack's choice with nothing set (`pinned` absent) or with its pin set to `pinned`.
/// errc::not_supported for a stack whose own choice is not modelled (StackInfo::automatic is
/// empty: llama.cpp) when no `pinned` is given.
result<Profile> stack_profile(StackId id, std::optional<std::int64_t> pinned = std::nullopt);

/// The setting that makes stack `s` route from `index` on `table`'s port, as a user types it:
/// "NCCL_IB_GID_INDEX=7", "UCX_IB_GID_INDEX=7 UCX_NET_DEVICES=mlx5_0:1", "-d mlx5_0 -i 1 -x 7".
std::string fix_setting(const StackInfo& s, const GidTable& table, std::uint32_t index);

/// What a stack would do on one port.
struct StackPrediction {
  bool chose = false;                ///< the stack picks an entry (false: it refuses the port)
  std::uint32_t index = 0;           ///< the index it routes from (when chose)
  Gid gid;                           ///< what it advertises (when chose)
  bool works = false;                ///< chose, the RTR passes, and the traffic is routed
  int err = 0;                       ///< the RTR's errno when it fails (0 otherwise)
  std::string outcome;               ///< "ok", "EINVAL (22) at RTR", "rejects the port", "times out"...
  std::string why;                   ///< the stack's own reason (its trace's last word)
  std::optional<std::uint32_t> fix;  ///< the index to pin when the stack's own choice does not work
};

/// Whether every usable entry of `table` is link-local (fe80::/10, or IPv4-mapped 169.254/16)
/// and there is at least one: no GID reaches past the link. The doctor's link_local_only fact.
bool only_link_local_gids(const GidTable& table) noexcept;

/// What stops every stack on `table`'s port whatever entry it picks, or nullopt: the port is
/// not ACTIVE ("mlx5_0 port 1 is DOWN, not active"), or, on RoCE and Thunderbolt, it holds only
/// link-local GIDs. The doctor reports the same facts as blockers (port_not_active,
/// link_local_only); a prediction reports the blocker, never "ok", so the two never disagree.
/// Example: `if (auto b = gidpolicy::port_blocker(table)) std::cout << *b << "\n";`
std::optional<std::string> port_blocker(const GidTable& table);

/// Predict `profile` (a stack's choice) on `table`: against a peer advertising what gidpolicy's
/// `auto` picks there (a healthy peer of the same kind), through `model`. A link-local GID on
/// Ethernet or Thunderbolt passes RTR but is not routed: `works` is false, outcome "times out".
/// `fix` is `auto`'s pick when the stack's choice does not work and auto has one. On a port with
/// a port_blocker() the prediction never works and its outcome names the blocker. A peer is
/// never given the zero GID of an empty local slot: the local slot is the cause reported.
StackPrediction predict_profile(const Profile& profile, const GidTable& table, const DriverModel& model);
/// predict_profile(stack_profile_on(id, table's link layer), table, DriverModel::for_link_layer(...));
/// stack_profile_on()'s error for a stack whose own choice is not modelled or that does not run there.
result<StackPrediction> predict_stack(StackId id, const GidTable& table);

/// The spec of `s`'s automatic choice on link layer `l`: its first StackPath that runs there as
/// the stack ships ("ds4" on Thunderbolt, "ds4-linux" on RoCE); "" where it does not run or its
/// choice is not modelled (llama.cpp).
/// Example:
///   const gidpolicy::StackInfo& ds4 = gidpolicy::stack_row(gidpolicy::StackId::ds4);
///   std::cout << gidpolicy::automatic_spec(ds4, gidpolicy::LinkLayer::ethernet()) << "\n";  // ds4-linux
std::string_view automatic_spec(const StackInfo& s, LinkLayer l) noexcept;
/// The StackPath automatic_spec() takes, or nullptr.
const StackPath* automatic_path(const StackInfo& s, LinkLayer l) noexcept;

/// stack_profile() for the path the stack takes on link layer `l` (automatic_spec()): ds4 on RoCE
/// is its Linux path, pinned through "ds4-linux:index=N". errc::not_supported where the stack does
/// not run (StackInfo::runs_on) and, without `pinned`, where its choice is not modelled.
result<Profile> stack_profile_on(StackId id, LinkLayer l, std::optional<std::int64_t> pinned = std::nullopt);

/// stack_profile_on() for one port, with what the port's table adds: a path with a control
/// address option (StackPath::local_option, ds4's Linux path) gets the port's first usable RoCE v2
/// IPv4-mapped GID's address, where ds4 itself asks its control connection to run; without one
/// the prediction is the path's plain spec (the first non-zero v2 entry). What every prediction
/// on a port uses (check --stacks, the doctor, env, predict_stack()).
///
/// The gotcha: without the address, ds4 on a healthy RoCE port would be predicted to take the
/// fe80 v2 entry and fail, which it does only when its control connection runs over another
/// network.
///
/// Example:
///   auto p = gidpolicy::stack_profile_for(gidpolicy::StackId::ds4, table);
///   if (p) std::cout << p.value().spec() << "\n";  // "ds4-linux:local=10.0.0.5" on RoCE
result<Profile> stack_profile_for(StackId id, const GidTable& table,
                                  std::optional<std::int64_t> pinned = std::nullopt);

/// "infiniband, ethernet": the link layers of `l`, for messages.
std::string runs_on_text(const LinkLayers& l);

/// Whether the profile `spec` ("jaccl", "ds4:index=2", "auto") models something that runs on `l`:
/// false only for a spec that a stack's StackPath names (before any ':') and no such path runs on
/// `l` (JACCL's profiles on a RoCE port); a spec no stack names (auto, custom) runs everywhere.
bool profile_runs_on(std::string_view spec, LinkLayer l) noexcept;

/// For a stack that no setting steers as it ships (LaunchSettings::choice_reader is patched_fork:
/// JACCL, exo): why its own choice fails on `table`'s port and what must hold on the host for it
/// to work (for JACCL: the index it routes from, 1, must hold the first IPv4-mapped GID, which it
/// advertises). nullopt when it works there, does not run there, or is steered by a setting.
/// The gotcha: a variable of the patched fork (JACCL_GID_POLICY) is ignored by the shipped stack,
/// so advice for the shipped one can only be a change to the host.
/// Example:
///   if (auto why = gidpolicy::unsteerable_failure(gidpolicy::stack_row(gidpolicy::StackId::jaccl), table,
///                                                 gidpolicy::DriverModel::for_table(table)))
///     std::cout << *why << "\n";
std::optional<std::string> unsteerable_failure(const StackInfo& s, const GidTable& table,
                                               const DriverModel& model);

/// One variable given to a launch: its value and where it came from ("the environment",
/// "run.env", "compose.yaml service trainer").
struct LaunchSetting {
  std::string variable;
  std::string value;
  std::string origin;
};

/// Every variable that steers some stack's choice, each once, in table order: each row's pins,
/// its device list when that is a variable (device_variables()) and its other settings
/// (StackInfo::settings). What `check --stacks`, `check --pins` and `env --for` read from the
/// environment and from an env file.
std::vector<std::string_view> launch_variables();

/// One variable as a stack read it.
struct SettingReading {
  std::string variable;
  std::string value;
  std::string origin;
  std::string reading;   ///< what the stack makes of it: "AF_INET6", "not a CIDR: ignored (any address)"
  bool applied = false;  ///< it changes the prediction (false: reported only, with `reading` saying why)
};

/// A stack's launch settings, each read as that stack reads it, and what they make of its choice.
///
/// The gotcha: a prediction made with the stack's defaults is wrong for a job launched with
/// NCCL_IB_ADDR_FAMILY=AF_INET6 (NCCL then picks the IPv6 entry) or NCCL_IB_HCA=mlx5_1 (NCCL never
/// opens mlx5_0); and each stack reads its text its own way (NCCL silently reads any family but
/// "AF_INET6" as AF_INET and ignores a range that does not parse; UCX refuses a bad index).
struct StackLaunch {
  StackId stack = StackId::nccl;
  std::vector<SettingReading> read;    ///< every variable of the stack that was set, table order
  std::optional<std::int64_t> pinned;  ///< the index its pin gives (nullopt: its own choice)
  std::string pin_variable;            ///< the pin read ("" when none is set)
  /// The stack refuses its pin's text and does not start (UCX: not "auto" nor a number).
  std::optional<std::string> refused;
  std::vector<std::string> options;       ///< profile options the settings add ("family=AF_INET6")
  std::optional<DeviceSelector> devices;  ///< its device list, when set
  // NCCL's (and NVSHMEM's) settings as its profile takes them; unset = the stack's default.
  std::optional<bool> inet6;        ///< the family setting: true for AF_INET6
  std::optional<Cidr> range;        ///< the range setting, when it parses
  std::optional<int> roce_version;  ///< the RoCE version setting, as strtoll read it
  /// Whether the stack uses `device`'s port `port` (every port when no device list is set).
  [[nodiscard]] bool uses(std::string_view device, std::uint32_t port) const {
    return !devices || devices->selects(device, port);
  }
};

/// `settings` (later entries of a variable win) read as stack `id` reads them: its pins in the
/// order it reads them (Mooncake reads NCCL's only while its own is unset), its device list
/// (read_device_selector()) and its other settings (StackInfo::settings, SettingEffect).
/// Variables of other stacks are ignored.
StackLaunch read_launch(StackId id, std::span<const LaunchSetting> settings);

/// stack_profile_for() with `launch`'s options and, unless `with_pin` is false, its pin: the
/// stack's choice as it is launched. `with_pin` false is its own choice under the other settings
/// (what a pin would be compared with to call it redundant).
result<Profile> stack_profile_for(StackId id, const GidTable& table, const StackLaunch& launch,
                                  bool with_pin = true);

/// How a stack reads a pin's text, one reading per stack version that differs.
struct PinReading {
  StackId stack;
  std::string reader;                 ///< "NCCL >= 2.21.5 (ncclLoadParam: empty keeps the default -1)"
  std::optional<std::int64_t> value;  ///< the index it then uses; nullopt = its automatic choice
  bool refused = false;               ///< the stack refuses the text (UCX: not an index or "auto")
};

/// The readings of `variable`=`text`, one per stack whose row pins its index with `variable`
/// (pin_variables()), read by that pin's PinRule, in table order. NCCL_IB_GID_INDEX is also read
/// by Mooncake when `mc_gid_index_set` (MC_GID_INDEX, its own pin, is set) is false. An unknown
/// variable yields nothing.
std::vector<PinReading> read_pin(std::string_view variable, std::string_view text, bool mc_gid_index_set);

/// The selector among `selectors` that decides where `reading` (of `variable`) is judged: its
/// stack's own; for a stack that reads another stack's pin as a fallback (Mooncake reading
/// NCCL_IB_GID_INDEX while MC_GID_INDEX is unset), the pin's own stack's. That second rule is
/// an assumption, said so: the fallback serves a job running beside that stack, on its HCAs.
/// nullptr when none applies (the pin is judged on every port).
const DeviceSelector* selector_for(const PinReading& reading, std::string_view variable,
                                   std::span<const DeviceSelector> selectors);

/// A pin's verdict on one port.
struct PinJudgement {
  enum class Status : std::uint8_t { fine, stale, fails };
  Status status = Status::fine;
  std::string summary;                       ///< "stale: index 3 is empty on mlx5_0 port 1; ..."
  int err = 0;                               ///< the RTR errno when it fails
  std::optional<std::uint32_t> right_index;  ///< what auto picks on this port
};
std::string_view to_string(PinJudgement::Status s) noexcept;  ///< "fine", "stale", "fails"

/// Judge one reading on one port: fine when the stack routes from the entry gidpolicy's `auto`
/// picks; stale when it routes from another one (with the RTR's errno when that fails); fails
/// when the stack refuses the port or the text.
PinJudgement judge_pin(const PinReading& reading, const GidTable& table, const DriverModel& model);

/// "at open", "per connection", "on the change event", "not checked".
std::string_view to_string(Reselect r) noexcept;
/// What stack `s` does when its port's GID table changes, as one sentence for help and reports:
/// when it chooses again, what it does with the event, and (`pinned`) what its pinned index does.
/// The gotcha: a pinned index stays where it is while the address it was chosen for moves to
/// another slot; only a stack that re-reads the slot (NCCL per connection, Mooncake on the event)
/// notices, and it then advertises whatever the slot holds.
/// Example:
///   std::cout << gidpolicy::on_change_text(gidpolicy::stack_row(gidpolicy::StackId::mooncake), true) <<
///   "\n";
std::string on_change_text(const StackInfo& s, bool pinned);
/// What one stack does on one port when its GID table goes from `before` to `after`.
struct StackOnChange {
  StackId stack = StackId::nccl;
  /// The index it routed from before the change (its pin, or its own choice), when it had one.
  std::optional<std::uint32_t> before;
  Gid before_gid;  ///< the GID it advertised from `before`
  /// What `before`'s index holds now: nullopt when the slot is empty or gone.
  std::optional<Gid> now_at_before;
  /// The index it routes from for what it sets up after the change (new connections, a restart,
  /// or at once for a stack that re-selects on the event); nullopt when it has none.
  std::optional<std::uint32_t> next;
  Gid next_gid;        ///< the GID it then advertises
  bool moved = false;  ///< `before`'s index no longer holds `before_gid`
  /// What is already up routes from an index whose GID its peer was not told (it is not
  /// re-selected on the event and the slot moved).
  bool stale_while_up = false;
  std::string summary;  ///< one sentence: what it keeps, what it picks next, and when
};
/// stack `id`, launched with `launch` (its pin, if any, decides both sides), on a port whose table
/// went from `before` to `after`: its Reselect rule (StackInfo::on_change) applied to its choice
/// on each table. Predicted with stack_profile_for() and predict_profile() through `model`.
/// Example:
///   auto c = gidpolicy::stack_on_change(gidpolicy::StackId::nccl, before, after, {},
///                                       gidpolicy::DriverModel::for_table(after));
///   std::cout << c.summary << "\n";
StackOnChange stack_on_change(StackId id, const GidTable& before, const GidTable& after,
                              const StackLaunch& launch, const DriverModel& model);
}  // namespace gidpolicy
