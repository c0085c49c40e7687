// `gidpolicy doctor`: is this host ready for RDMA (docs/cli.md, docs/doctor.md). Declared apart
// from the other subcommands (commands.hpp), like fleet: main.cpp only registers it.
#pragma once

#include "sources.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <sstream>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::cli {

/// The check of every floating-point option: a finite number in [min, max]. CLI::Range alone
/// lets "nan" through (every comparison with NaN is false), and a NaN deadline made the doctor
/// call healthy devices wedged.
inline CLI::Validator finite_range(double min, double max) {
  std::ostringstream range;
  range << "of finite numbers " << min << " to " << max;
  const std::string what = range.str();
  return CLI::Validator(
      [min, max, what](std::string& text) -> std::string {
        double v = 0;
        // Worded as CLI::Range words it ("Value X not in range"), which the tool's parse error
        // turns into "--deadline: expected ..., found 'nan'" (main.cpp, own_words()).
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v < min || v > max)
          return "Value " + text + " not in range " + what;
        return {};
      },
      "(" + what + ")", "finite_range");
}

struct DoctorArgs {
  SourceArgs source;
  std::vector<std::string> peers;
  std::optional<std::string> jaccl_devices;
  std::optional<std::string> hostfile;
  std::optional<std::string> rank;      ///< --rank's text (read as env's is: rank_text(), rank_in())
  std::optional<std::string> platform;  ///< whose commands: linux or darwin
  double deadline_s = 5.0;              ///< per verbs call
  bool json = false;
  bool this_host = false;  ///< --this-host: the --input table was taken on this host
};

/// Registers `doctor` on `app`; run() after parsing when parsed() says it was chosen.
class DoctorCommand {
 public:
  explicit DoctorCommand(CLI::App& app);
  [[nodiscard]] bool parsed() const { return cmd_->parsed(); }
  [[nodiscard]] int run() const;

 private:
  CLI::App* cmd_ = nullptr;
  CLI::Option *device_opt_ = nullptr, *port_opt_ = nullptr, *input_opt_ = nullptr, *sysfs_opt_ = nullptr,
              *bundle_opt_ = nullptr;
  std::string device_, input_, sysfs_, bundle_;
  std::uint32_t port_ = 0;
  DoctorArgs o_;
};

int run_doctor(const DoctorArgs& o);

}  // namespace gidpolicy::cli
