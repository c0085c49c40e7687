// Reading test data files (the example tables the project ships, malformed inputs).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gidpolicy::test {

inline std::filesystem::path example_tables_dir() { return GIDPOLICY_EXAMPLE_TABLES_DIR; }
inline std::filesystem::path test_data_dir() { return GIDPOLICY_TEST_DATA_DIR; }

/// The whole file as a string; fails the calling test (empty string) when it cannot be read.
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gidpolicy::test
