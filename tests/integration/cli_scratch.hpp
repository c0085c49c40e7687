// A CLI test's own scratch directory and the checks of a refusal, for the fixtures that write
// input files for the binary.
#pragma once

#include "cli_run.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

namespace gidpolicy::test {

class CliScratchTest : public ::testing::Test {
 protected:
  /// `prefix` names the directory: "<prefix><pid>-<test name>" under TMPDIR, so the dev and asan
  /// trees (and ctest -j) never share one.
  explicit CliScratchTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  /// Exit 2, nothing on stdout, exactly one "gidpolicy: " line holding `needle`, printable ASCII
  /// only, and no internal error.
  static void refused(const CliResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("gidpolicy: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    for (char c : r.err.substr(0, r.err.size() - 1))
      EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f)
          << "byte " << static_cast<unsigned>(static_cast<unsigned char>(c)) << " in: " << r.err;
  }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace gidpolicy::test
