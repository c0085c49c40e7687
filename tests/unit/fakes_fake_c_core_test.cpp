// The C-convention core both C fronts over FakeVerbs answer through (fake_c_core.hpp): its
// errno and gid_type rules, its call frames, and the proof that the fronts agree: the
// in-process C ABI (fakes::c_abi) gives, call for call, the transcript of
// tests/data/c_fronts/<table>.expected, which the drop-in libibverbs.so.1 must give too
// (fakelib.gid_fronts_agree.*, the same sequence from tests/fakelib/gid_sequence.h).
#include <gidpolicy/fakes/fake_c_abi.hpp>
#include <gidpolicy/fakes/fake_c_core.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "support/files.hpp"

// The sequence is C, shared with the drop-in's C test program: its casts are C casts.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#include "../fakelib/gid_sequence.h"
#pragma GCC diagnostic pop

namespace {

namespace c_abi = gidpolicy::fakes::c_abi;
namespace c_core = gidpolicy::fakes::c_core;
using gidpolicy::errc;
using gidpolicy::Error;
using gidpolicy::GidType;
using gidpolicy::LinkLayer;

std::string transcript(const std::filesystem::path& table) {
  gidpolicy::fakes::FakeVerbs fake;
  auto loaded = fake.load_file(table);
  EXPECT_TRUE(loaded.has_value()) << loaded.error().what();
  c_abi::Binding bind(fake);
  const gid_fronts_ops ops = {c_abi::get_device_list, c_abi::free_device_list, c_abi::get_device_name,
                              c_abi::open_device,     c_abi::close_device,     c_abi::query_port,
                              c_abi::query_gid,       c_abi::query_gid_ex,     c_abi::query_gid_table};
  char* buf = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&buf, &size);
  EXPECT_NE(out, nullptr);
  if (!out) return {};
  EXPECT_EQ(gid_sequence(&ops, out), 0);
  std::fclose(out);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

class CFronts : public ::testing::TestWithParam<const char*> {};

TEST_P(CFronts, InProcessCAbiGivesTheSharedTranscript) {
  const std::string name = GetParam();
  std::string table = name + (name == "nccl-1573-pod" ? ".show_gids.txt" : ".json");
  const std::string want =
      gidpolicy::test::read_file(gidpolicy::test::test_data_dir() / "c_fronts" / (name + ".expected"));
  ASSERT_FALSE(want.empty());
  const std::string got = transcript(gidpolicy::test::example_tables_dir() / table);
  // Line by line, so a failure names the call that drifted.
  std::size_t line = 1, i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) {
    if (got[i] == '\n') ++line;
    ++i;
  }
  if (i != got.size() || i != want.size()) {
    auto line_at = [](const std::string& s, std::size_t at) {
      const std::size_t b = s.rfind('\n', at == 0 ? 0 : at - 1);
      const std::size_t start = b == std::string::npos || at == 0 ? 0 : b + 1;
      return s.substr(start, s.find('\n', start) - start);
    };
    ADD_FAILURE() << "line " << line << " differs\n  expected: " << line_at(want, i)
                  << "\n  got:      " << line_at(got, i);
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, CFronts, ::testing::Values("nccl-1573-pod", "macmini-mapped-at-2"));

TEST(CCore, ErrnoOfModelErrors) {
  EXPECT_EQ(c_core::to_errno(Error{std::make_error_code(std::errc::no_such_device_or_address), ""}), ENXIO);
  EXPECT_EQ(c_core::to_errno(Error{std::error_code(ENODATA, std::generic_category()), ""}), ENODATA);
  EXPECT_EQ(c_core::to_errno(Error{std::error_code(0, std::generic_category()), ""}), EIO);
  EXPECT_EQ(c_core::to_errno(Error{make_error_code(errc::device_not_found), ""}), ENODEV);
  EXPECT_EQ(c_core::to_errno(Error{make_error_code(errc::no_devices), ""}), ENODEV);
  EXPECT_EQ(c_core::to_errno(Error{make_error_code(errc::not_supported), ""}), EOPNOTSUPP);
}

TEST(CCore, GidTypeAsTheKernelReportsIt) {
  // "IB/RoCE v1" is one sysfs type: RoCE v1 on Ethernet, IB elsewhere; v2 stays v2.
  EXPECT_EQ(c_core::abi_gid_type(GidType::roce_v1, LinkLayer::ethernet()), IBV_GID_TYPE_ROCE_V1);
  EXPECT_EQ(c_core::abi_gid_type(GidType::ib, LinkLayer::ethernet()), IBV_GID_TYPE_ROCE_V1);
  EXPECT_EQ(c_core::abi_gid_type(GidType::unknown, LinkLayer::ethernet()), IBV_GID_TYPE_ROCE_V1);
  EXPECT_EQ(c_core::abi_gid_type(GidType::roce_v1, LinkLayer::infiniband()), IBV_GID_TYPE_IB);
  EXPECT_EQ(c_core::abi_gid_type(GidType::unknown, LinkLayer::thunderbolt()), IBV_GID_TYPE_IB);
  EXPECT_EQ(c_core::abi_gid_type(GidType::roce_v2, LinkLayer::infiniband()), IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(c_core::abi_gid_type(GidType::roce_v2, LinkLayer::ethernet()), IBV_GID_TYPE_ROCE_V2);
}

TEST(CCore, FramesKeepExceptionsInsideAndSetErrno) {
  EXPECT_EQ(c_core::errno_frame([]() -> int { throw std::bad_alloc(); }), ENOMEM);
  EXPECT_EQ(c_core::errno_frame([] { return EINVAL; }), EINVAL);

  errno = 0;
  EXPECT_EQ(c_core::minus_one_frame([] { return ENODATA; }), -1);
  EXPECT_EQ(errno, ENODATA);
  errno = 0;
  EXPECT_EQ(c_core::minus_one_frame([]() -> int { throw std::bad_alloc(); }), -1);
  EXPECT_EQ(errno, ENOMEM);
  errno = 1234;
  EXPECT_EQ(c_core::minus_one_frame([] { return 0; }), 0);
  EXPECT_EQ(errno, 1234);  // success leaves errno alone

  static int object = 0;
  errno = 0;
  EXPECT_EQ(c_core::pointer_frame([](int&) -> int* { return &object; }), &object);
  EXPECT_EQ(c_core::pointer_frame([](int& err) -> int* {
              err = EBUSY;
              return nullptr;
            }),
            nullptr);
  EXPECT_EQ(errno, EBUSY);
  EXPECT_EQ(c_core::pointer_frame([](int&) -> int* { throw std::bad_alloc(); }), nullptr);
  EXPECT_EQ(errno, ENOMEM);

  EXPECT_EQ(c_core::count_frame([]() -> ssize_t { return 3; }), 3);
  EXPECT_EQ(c_core::count_frame([]() -> ssize_t { throw std::bad_alloc(); }), -ENOMEM);
}

}  // namespace
