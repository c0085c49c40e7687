// `gidpolicy probe`: prove one link on the wire with the GID a stack (or profile) will use, and
// name the cause when it fails (docs/probe.md). Declared apart from the other subcommands
// (commands.hpp): main.cpp only registers it.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace gidpolicy::cli {

struct ProbeArgs {
  std::optional<std::string> listen;   ///< [ADDR:]PORT (PORT 0: any free port, printed)
  std::optional<std::string> connect;  ///< HOST:PORT
  std::optional<std::string> device;   ///< default: the first device
  std::uint32_t port = 1;
  std::string verbs = "dlopen";
  std::optional<std::string> profile;       ///< a profile spec (default auto)
  std::optional<std::string> stack;         ///< a stack's own choice under the launch's settings
  bool stacks = false;                      ///< each stack's own pick that runs on the port, in turn
  std::optional<std::uint32_t> sgid_index;  ///< advertise and route from this index (perftest -x N)
  std::optional<std::string> env_file;      ///< with --stack: the launch's settings file
  bool no_env = false;
  std::string qp = "rc";          ///< rc, uc or both
  double deadline = 20.0;         ///< the whole run, seconds
  double attempt_deadline = 5.0;  ///< each wait on the peer and each QP's data exchange
  std::optional<std::string> platform;
  bool json = false;
};

/// The RC transport settings the probe's QPs use (docs/probe.md): a local ACK timeout of
/// 4.096 us * 2^14 = 67 ms, 3 retries, so an RC send nobody acknowledges fails with
/// IBV_WC_RETRY_EXC_ERR after about (3 + 1) * 67 ms = 268 ms; 3 RNR retries at 0.64 ms.
inline constexpr std::uint8_t kProbeRcTimeout = 14;
inline constexpr std::uint8_t kProbeRcRetryCount = 3;
inline constexpr std::uint8_t kProbeRnrRetry = 3;
inline constexpr std::uint8_t kProbeMinRnrTimer = 12;

/// Registers `probe` on `app`; run() after parsing when parsed() says it was chosen.
class ProbeCommand {
 public:
  explicit ProbeCommand(CLI::App& app);
  [[nodiscard]] bool parsed() const { return cmd_->parsed(); }
  [[nodiscard]] int run() const;

 private:
  CLI::App* cmd_ = nullptr;
  CLI::Option* sgid_opt_ = nullptr;
  std::uint32_t sgid_ = 0;
  ProbeArgs o_;
};

int run_probe(const ProbeArgs& o);

}  // namespace gidpolicy::cli
