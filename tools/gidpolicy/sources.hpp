// Where the CLI's tables come from: live devices through the verbs seam, a table file (or
// stdin) in any format gidpolicy reads, or a sysfs-like directory.
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <memory>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::cli {

/// The source options every table-reading subcommand takes.
struct SourceArgs {
  std::optional<std::string> device;            ///< live device; with --input/--sysfs: a filter
  std::optional<std::uint32_t> port;            ///< with --device (or alone as a filter)
  std::string verbs = "dlopen";                 ///< live backend: "dlopen" or "linked"
  std::optional<std::string> input;             ///< a file, or "-" for stdin
  std::optional<std::string> sysfs;             ///< a /sys/class/infiniband-like directory
  std::optional<formats::Format> input_format;  ///< skip detection for --input
  /// --max-input-bytes: the cap on --input (file or stdin), formats::kDefaultMaxInputBytes.
  std::size_t max_input_bytes = formats::kDefaultMaxInputBytes;
};

/// Tables and a name for the source they came from ("paste.txt", "<stdin>", "live devices").
struct Loaded {
  std::vector<GidTable> tables;
  std::string source;
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
