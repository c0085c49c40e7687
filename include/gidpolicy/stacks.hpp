// Stacks: what each RDMA stack on a host will choose, whether its RTR then works, the settings
// that steer it, and how it reads a pinned setting — as data, for `gidpolicy check --stacks`,
// `gidpolicy env`, `gidpolicy check --pins` and `gidpolicy fleet --stack`.
//
// Each stack is one profile (policies/nccl.hpp, ucx.hpp, perftest.hpp, mooncake.hpp,
// libfabric.hpp, rdma_cm.hpp) plus what this header knows about how it is launched: the
// variable that pins its index, whether that index is one per process for all its HCAs, and what
// a failed choice means when it runs ("rejects the port", "does not open the device").
//
// Example:
//   for (const auto& s : gidpolicy::stack_catalogue()) {
//     auto profile = gidpolicy::parse_profile(s.spec);
//     if (!profile) return profile.error();
//     const auto v = gidpolicy::predict_profile(profile.value(), table,
//     gidpolicy::DriverModel::for_table(table)); std::cout << s.name << ": " << v.outcome << "\n";
//   }
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/profiles.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

enum class StackId : std::uint8_t { nccl, nvshmem, ucx, mooncake, libfabric, perftest };

/// One stack as a launcher meets it.
struct StackInfo {
  StackId id;
  std::string_view name;     ///< "nccl": the name `--for` and `--stack` take
  std::string_view version;  ///< the version the profile reproduces
  std::string_view source;   ///< where the rule lives in that version's source
  std::string_view pin;      ///< the variable that pins the index ("" for perftest: -x)
  std::string_view spec;     ///< the profile spec of its automatic choice
  bool per_process = true;   ///< one index for every HCA the process uses
};

/// Every stack, in the order the CLI shows them.
const std::vector<StackInfo>& stack_catalogue();
/// The stack named `name` ("nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest"), or
/// nullptr.
const StackInfo* find_stack(std::string_view name) noexcept;

/// The stack's choice with nothing set (`pinned` absent) or with its pin set to `pinned`.
Profile stack_profile(StackId id, std::optional<std::int64_t> pinned = std::nullopt);

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

/// Predict `profile` (a stack's choice) on `table`: against a peer advertising what gidpolicy's
/// `auto` picks there (a healthy peer of the same kind), through `model`. A link-local GID on
/// Ethernet or Thunderbolt passes RTR but is not routed: `works` is false, outcome "times out".
/// `fix` is `auto`'s pick when the stack's choice does not work and auto has one.
StackPrediction predict_profile(const Profile& profile, const GidTable& table, const DriverModel& model);
/// predict_profile(stack_profile(id), table, DriverModel::for_link_layer(...)).
StackPrediction predict_stack(StackId id, const GidTable& table);

/// How a stack reads a pin's text, one reading per stack version that differs.
struct PinReading {
  StackId stack;
  std::string reader;                 ///< "NCCL >= 2.21.5 (ncclLoadParam: empty keeps the default -1)"
  std::optional<std::int64_t> value;  ///< the index it then uses; nullopt = its automatic choice
  bool refused = false;               ///< the stack refuses the text (UCX: not an index or "auto")
};

/// The readings of `variable`=`text` (NCCL_IB_GID_INDEX, NVSHMEM_IB_GID_INDEX, UCX_IB_GID_INDEX,
/// MC_GID_INDEX, FI_VERBS_GID_IDX, GGML_RDMA_GID). NCCL_IB_GID_INDEX is also read by Mooncake
/// when `mc_gid_index_set` is false. An unknown variable yields nothing.
std::vector<PinReading> read_pin(std::string_view variable, std::string_view text, bool mc_gid_index_set);

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

}  // namespace gidpolicy
