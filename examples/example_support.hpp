// Shared by the policy examples: read a table file in any format gidpolicy reads, and print one
// selection per port in the form the example tests check.
#pragma once

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/policy.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace example {

/// Every port of a table file (JSON, ibv_devinfo -v, show_gids or a sysfs directory); prints the
/// error and returns nullopt when it cannot be read.
inline std::optional<std::vector<gidpolicy::GidTable>> load(const char* path) {
  auto tables = gidpolicy::formats::read_tables_file(path);
  if (!tables) {
    std::cerr << path << ": " << tables.error().what() << "\n";
    return std::nullopt;
  }
  return std::move(tables).value();
}

/// "mlx5_0 port 1"
inline std::string where(const gidpolicy::GidTable& t) {
  return t.port().device + " port " + std::to_string(t.port().port);
}

/// "mlx5_0 port 1: auto -> index 3 ::ffff:200.0.209.6 (roce_v2)" or "... failed: <error>",
/// then the trace when one was recorded or came with the failure.
inline bool report(const gidpolicy::GidTable& t, const std::string& spec,
                   const gidpolicy::result<gidpolicy::Selection>& r, bool explain = false) {
  if (!r) {
    std::cout << where(t) << ": " << spec << " failed: " << r.error().what() << "\n";
    if (explain && r.error().trace) std::cout << r.error().trace->to_string();
    return false;
  }
  const auto& e = r.value().entry;
  std::cout << where(t) << ": " << spec << " -> index " << e.index << " "
            << (e.gid.is_zero() ? std::string("<zero GID>") : e.gid.to_string()) << " (" << to_string(e.type)
            << ")\n";
  if (explain) std::cout << r.value().trace.to_string();
  return true;
}

}  // namespace example
