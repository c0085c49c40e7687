// The C-convention core both C fronts over FakeVerbs answer through (fake_c_core.hpp): its
// errno and gid_type rules, its call frames, and the proof that the fronts agree: the
// in-process C ABI (fakes::c_abi) gives, call for call, the transcript of
// tests/data/c_fronts/<table>.expected, which the drop-in libibverbs.so.1 must give too
// (fakelib.gid_fronts_agree.*, the same sequence from fakes/libibverbs/tests/gid_sequence.h),
// and likewise for the QP calls, good and bad (fakelib.qp_fronts_agree.*, qp_sequence.h,
// tests/data/c_fronts/<table>.qp.expected).
#include <gidpolicy/fakes/fake_c_abi.hpp>
#include <gidpolicy/fakes/fake_c_core.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "support/files.hpp"

// The sequence is C, shared with the drop-in's C test program: its casts are C casts.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#include "../../fakes/libibverbs/tests/gid_sequence.h"
#include "../../fakes/libibverbs/tests/qp_sequence.h"
#pragma GCC diagnostic pop

namespace {

namespace c_abi = gidpolicy::fakes::c_abi;
namespace c_core = gidpolicy::fakes::c_core;
using gidpolicy::errc;
using gidpolicy::Error;
using gidpolicy::GidType;
using gidpolicy::LinkLayer;

// What `sequence` (gid_sequence or qp_sequence, the C checks' shared cases) prints through the
// in-process C ABI over `table`: the transcript the drop-in's run is compared with.
template <class Ops, class Sequence>
std::string run_transcript(const std::filesystem::path& table, const Ops& ops, Sequence sequence) {
  gidpolicy::fakes::FakeVerbs fake;
  auto loaded = fake.load_file(table);
  EXPECT_TRUE(loaded.has_value()) << loaded.error().what();
  c_abi::Binding bind(fake);
  char* buf = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&buf, &size);
  EXPECT_NE(out, nullptr);
  if (!out) return {};
  EXPECT_EQ(sequence(&ops, out), 0);
  std::fclose(out);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

std::string transcript(const std::filesystem::path& table) {
  const gid_fronts_ops ops = {c_abi::get_device_list, c_abi::free_device_list, c_abi::get_device_name,
                              c_abi::open_device,     c_abi::close_device,     c_abi::query_port,
                              c_abi::query_gid,       c_abi::query_gid_ex,     c_abi::query_gid_table};
  return run_transcript(table, ops, gid_sequence);
}

std::string qp_transcript(const std::filesystem::path& table) {
  const qp_fronts_ops ops = {c_abi::get_device_list, c_abi::free_device_list, c_abi::open_device,
                             c_abi::close_device,    c_abi::alloc_pd,         c_abi::dealloc_pd,
                             c_abi::create_cq,       c_abi::destroy_cq,       c_abi::create_qp,
                             c_abi::modify_qp,       c_abi::query_qp,         c_abi::destroy_qp};
  return run_transcript(table, ops, qp_sequence);
}

/// Compares a transcript with its expected file line by line, so a failure names the call that
/// drifted.
void expect_transcript(const std::string& got, const std::string& want) {
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

class CFronts : public ::testing::TestWithParam<const char*> {};

TEST_P(CFronts, InProcessQpCallsGiveTheSharedTranscript) {
  // ibv_create_qp (a NULL or foreign CQ, capabilities above the device's), ibv_query_qp (no
  // init_attr, the capabilities it was created with) and ibv_modify_qp (bad masks, wrong
  // transitions, errno set) answer as the drop-in does: the same expected file.
  const std::string name = GetParam();
  std::string table = name + (name == "nccl-1573-pod" ? ".show_gids.txt" : ".json");
  const std::string want =
      gidpolicy::test::read_file(gidpolicy::test::test_data_dir() / "c_fronts" / (name + ".qp.expected"));
  ASSERT_FALSE(want.empty());
  expect_transcript(qp_transcript(gidpolicy::test::example_tables_dir() / table), want);
}

TEST_P(CFronts, InProcessCAbiGivesTheSharedTranscript) {
  const std::string name = GetParam();
  std::string table = name + (name == "nccl-1573-pod" ? ".show_gids.txt" : ".json");
  const std::string want =
      gidpolicy::test::read_file(gidpolicy::test::test_data_dir() / "c_fronts" / (name + ".expected"));
  ASSERT_FALSE(want.empty());
  expect_transcript(transcript(gidpolicy::test::example_tables_dir() / table), want);
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

// A port past Down has a trained physical link (LinkUp, a width and a speed); a RoCE port has
// IP-based GIDs; a table without gid_tbl_len reports the slots it lists; the link's width and
// speed are the table's, else the default (4X EDR).
TEST(CCore, QueryPortAsTheKernelAnswers) {
  gidpolicy::fakes::FakeVerbs fake;
  auto loaded = fake.load_text(R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
    {"device": "mlx5_0", "port": 1, "state": "init", "link_layer": "infiniband", "active_mtu": 4096,
     "lid": 7, "entries": [{"index": 0, "gid": "fe80::1", "type": "ib", "state": "valid"},
                           {"index": 2, "gid": "fe80::2", "type": "ib", "state": "valid"}]},
    {"device": "mlx5_0", "port": 2, "state": "down", "link_layer": "ethernet", "gid_tbl_len": 255,
     "active_mtu": 1024, "lid": 0, "active_width": "12X", "active_speed": "HDR", "entries": []}]})");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().what();
  auto h = fake.open_device("mlx5_0");
  ASSERT_TRUE(h.has_value()) << h.error().what();

  ibv_port_attr a;
  std::memset(&a, 0xab, sizeof a);
  ASSERT_EQ(c_core::query_port(fake, h.value(), 1, &a), 0);
  EXPECT_EQ(a.state, IBV_PORT_INIT);
  EXPECT_EQ(a.phys_state, 5);  // LinkUp: INIT needs a trained link
  EXPECT_EQ(a.active_mtu, IBV_MTU_4096);
  EXPECT_EQ(a.max_mtu, IBV_MTU_4096);
  EXPECT_EQ(a.gid_tbl_len, 3);  // the slots listed, 0..2
  EXPECT_EQ(a.port_cap_flags, 0u);
  EXPECT_EQ(a.lid, 7);
  EXPECT_EQ(a.link_layer, IBV_LINK_LAYER_INFINIBAND);
  EXPECT_EQ(a.active_width, 2);   // 4X: the table says nothing, so kDefaultLinkRate
  EXPECT_EQ(a.active_speed, 32);  // EDR
  static_assert(c_core::kDefaultLinkRate == gidpolicy::LinkRate{.width = 2, .speed = 32});
  EXPECT_EQ(a.max_vl_num, 1);
  EXPECT_EQ(a.pkey_tbl_len, gidpolicy::fakes::FakeVerbs::kPkeyTableLength);
  EXPECT_EQ(a.port_cap_flags2, 0);  // the whole struct is written, nothing left from the caller
  EXPECT_EQ(a.sm_lid, 0);

  std::memset(&a, 0xab, sizeof a);
  ASSERT_EQ(c_core::query_port(fake, h.value(), 2, &a), 0);
  EXPECT_EQ(a.state, IBV_PORT_DOWN);
  EXPECT_EQ(a.phys_state, 3);  // Disabled
  EXPECT_EQ(a.gid_tbl_len, 255);
  EXPECT_EQ(a.port_cap_flags, static_cast<std::uint32_t>(IBV_PORT_IP_BASED_GIDS));
  EXPECT_EQ(a.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(a.active_width, 8);   // 12X, the table's
  EXPECT_EQ(a.active_speed, 64);  // HDR

  std::string why;
  EXPECT_EQ(c_core::query_port(fake, h.value(), 3, &a, &why), EINVAL);
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(c_core::query_port(fake, h.value(), 1, nullptr), EINVAL);
}

// The device attributes come from the front's limits (an Ethernet port: the Linux driver model,
// no QP ceiling of its own), the Apple driver model's QP ceiling lowers max_qp, and the GUID is big-endian on
// the wire.
TEST(CCore, QueryDeviceFromTheLimits) {
  gidpolicy::fakes::FakeVerbs fake;
  auto loaded = fake.load_text(R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
    {"device": "rdma_en2", "port": 1, "state": "active", "link_layer": "ethernet", "active_mtu": 1024,
     "lid": 0, "entries": [{"index": 0, "gid": "fe80::1", "type": "unknown", "state": "valid"}]}]})");
  ASSERT_TRUE(loaded.has_value()) << loaded.error().what();
  auto h = fake.open_device("rdma_en2");
  ASSERT_TRUE(h.has_value()) << h.error().what();
  c_core::DeviceLimits lim;
  lim.max_qp = 1024;
  lim.max_cq = 512;
  lim.max_qp_wr = 4096;
  lim.max_sge = 16;
  lim.max_rd_atom = 16;
  lim.pkey_tbl_len = 1;
  ibv_device_attr d;
  std::memset(&d, 0xab, sizeof d);
  ASSERT_EQ(c_core::query_device(fake, h.value(), lim, 0x0102030405060708ull, 2, &d), 0);
  EXPECT_EQ(d.max_qp, 1024);
  EXPECT_EQ(d.max_cq, 512);
  EXPECT_EQ(d.max_qp_wr, 4096);
  EXPECT_EQ(d.max_qp_rd_atom, 16);
  EXPECT_EQ(d.max_pkeys, 1);
  EXPECT_EQ(d.phys_port_cnt, 2);
  EXPECT_EQ(d.max_mw, 0);  // not modelled: zero, never the caller's bytes
  unsigned char guid[8];
  std::memcpy(guid, &d.node_guid, sizeof guid);
  EXPECT_EQ(guid[0], 0x01);
  EXPECT_EQ(guid[7], 0x08);

  auto apple = gidpolicy::DriverModel::by_name("apple_thunderbolt");
  ASSERT_TRUE(apple.has_value());
  ASSERT_TRUE(fake.set_driver_model("rdma_en2", *apple).has_value());
  ASSERT_EQ(c_core::query_device(fake, h.value(), lim, 1, 1, &d), 0);
  EXPECT_EQ(static_cast<unsigned>(d.max_qp), apple->max_qps_per_device);
  EXPECT_EQ(c_core::query_device(fake, h.value(), lim, 1, 1, nullptr), EINVAL);
}

}  // namespace
