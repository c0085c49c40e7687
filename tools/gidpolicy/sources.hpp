// Where the CLI's tables come from: live devices through the verbs seam, a table file (or
// stdin) in any format gidpolicy reads, or a sysfs-like directory.
#pragma once

#include <gidpolicy/bundle.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <algorithm>
#include <memory>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gidpolicy::cli {

/// The source options every table-reading subcommand takes.
struct SourceArgs {
  std::optional<std::string> device;            ///< live device; with --input/--sysfs: a filter
  std::optional<std::uint32_t> port;            ///< with --device (or alone as a filter)
  std::string verbs = "dlopen";                 ///< live backend: "dlopen" or "linked"
  std::optional<std::string> input;             ///< a file, or "-" for stdin
  std::optional<std::string> sysfs;             ///< a /sys/class/infiniband-like directory
  std::optional<std::string> bundle;            ///< a host bundle (gidpolicy-collect): its host's tables
  std::optional<formats::Format> input_format;  ///< skip detection for --input
  /// --max-input-bytes: the cap on --input (file or stdin), formats::kDefaultMaxInputBytes.
  std::size_t max_input_bytes = formats::kDefaultMaxInputBytes;
};

/// The largest --max-input-bytes: 1 TiB, or what a size_t holds where that is less (the browser
/// build's 32-bit size_t: 1 << 40 would not fit).
inline constexpr std::size_t kMaxInputBytesLimit = static_cast<std::size_t>(
    std::min<std::uint64_t>(std::uint64_t{1} << 40, std::numeric_limits<std::size_t>::max()));

/// Tables and a name for the source they came from ("paste.txt", "<stdin>", "live devices").
struct Loaded {
  std::vector<GidTable> tables;
  std::string source;
  /// --bundle: the RDMA variables of the environment it was collected in (this process's are
  /// not that host's), and its platform.
  std::vector<std::pair<std::string, std::string>> bundle_environment;
  std::optional<Platform> bundle_platform;
  /// --bundle: the rest of what it says of its host (name, interfaces, routes), its tables moved
  /// into `tables` above.
  std::optional<BundleHost> bundle_host;
};

/// Read the tables the options name. Without --input and --sysfs: live devices (all of them, or
/// --device), through DlopenApi or LibibverbsApi. Errors say what to do next: no devices ->
/// suggest --input; a filter that matches nothing -> list what the source holds.
result<Loaded> load_tables(const SourceArgs& options);

/// Read one table file for `simulate`: "FILE" or "FILE:DEVICE[:PORT]" (first table, or the one
/// named). The path may itself contain ':' when it exists as given.
result<GidTable> load_host_table(const std::string& spec,
                                 std::size_t max_input_bytes = formats::kDefaultMaxInputBytes);

/// The live backend --verbs names: "dlopen" (DlopenApi) or "linked" (LibibverbsApi).
result<std::unique_ptr<verbs::VerbsApi>> make_api(const std::string& which);

// Ports are named by gidpolicy::port_name() (gid_table.hpp), as every message names them.

}  // namespace gidpolicy::cli
