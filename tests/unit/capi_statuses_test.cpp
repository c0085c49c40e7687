// The C API returns the statuses gidpolicy.h documents, and what a driver (or a C caller's
// function table) reports that no driver can mean is refused, not guessed: an active_mtu outside
// 1..5 is not 1024, a device name with a newline or an escape sequence never reaches a message.
//
// The function tables are the fake's C-ABI shims (fakes::c_abi) with one call wrapped to
// misbehave, as a provider bug or a hostile dlsym() result would.
#include <gidpolicy/gidpolicy.h>

#include <gidpolicy/fakes/fake_c_abi.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/gid.hpp>

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "support/files.hpp"

namespace capi_statuses {
namespace {

namespace c = gidpolicy::fakes::c_abi;

// What the wrapped calls report instead of the fake's answer (-1: the fake's own).
int g_active_mtu = -1;
const char* g_device_name = nullptr;

int query_port_with_mtu(ibv_context* context, std::uint8_t port, ibv_port_attr* attr) {
  const int rc = c::query_port(context, port, attr);
  if (rc == 0 && g_active_mtu >= 0)
    std::memcpy(&attr->active_mtu, &g_active_mtu, sizeof attr->active_mtu);  // any int: as a C driver may
  return rc;
}
const char* device_name_override(ibv_device* device) {
  return g_device_name ? g_device_name : c::get_device_name(device);
}

struct TableDel {
  void operator()(gidpolicy_table* t) const { gidpolicy_table_free(t); }
};
struct PlanDel {
  void operator()(gidpolicy_plan* p) const { gidpolicy_plan_free(p); }
};
struct ProfileDel {
  void operator()(gidpolicy_profile* p) const { gidpolicy_profile_free(p); }
};

class CApiStatuses : public ::testing::Test {
 protected:
  void SetUp() override {
    g_active_mtu = -1;
    g_device_name = nullptr;
    ASSERT_TRUE(
        fake_.load_file(gidpolicy::test::example_tables_dir() / "macmini-mapped-at-2.json").has_value());
    int n = 0;
    ibv_device** list = c::get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ctx_ = c::open_device(list[0]);
    c::free_device_list(list);
    ASSERT_NE(ctx_, nullptr);
    fns_.query_port = &query_port_with_mtu;
    fns_.query_gid = &c::query_gid;
    fns_.query_gid_ex_sized = &c::query_gid_ex;
    fns_.get_device_name = &device_name_override;
  }
  void TearDown() override {
    g_active_mtu = -1;
    g_device_name = nullptr;
    if (ctx_) c::close_device(ctx_);
  }
  gidpolicy_status snapshot(gidpolicy_table** out) {
    return gidpolicy_snapshot(&fns_, ctx_, 1, GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES, out, err_, sizeof err_);
  }
  std::unique_ptr<gidpolicy_plan, PlanDel> plan(const char* spec) {
    gidpolicy_table* t = nullptr;
    EXPECT_EQ(snapshot(&t), GIDPOLICY_OK) << err_;
    std::unique_ptr<gidpolicy_table, TableDel> table(t);
    gidpolicy_profile* p = nullptr;
    EXPECT_EQ(gidpolicy_profile_parse(spec, &p, err_, sizeof err_), GIDPOLICY_OK) << err_;
    std::unique_ptr<gidpolicy_profile, ProfileDel> profile(p);
    gidpolicy_plan* out = nullptr;
    EXPECT_EQ(gidpolicy_select(profile.get(), table.get(), &out, err_, sizeof err_), GIDPOLICY_OK) << err_;
    return std::unique_ptr<gidpolicy_plan, PlanDel>(out);
  }
  std::string err() const { return err_; }

  gidpolicy::fakes::FakeVerbs fake_;
  c::Binding binding_{fake_};
  ibv_context* ctx_ = nullptr;
  gidpolicy_verbs_fns fns_{};
  char err_[1024] = {};
};

// gidpolicy.h: "GIDPOLICY_ERR_RTR (... options->path_mtu above the local port's active MTU or
// peer->mtu ...)". It used to be GIDPOLICY_ERR_INVALID_ARGUMENT: the driver's EINVAL for an MTU
// above the port's is an RTR refusal, not a malformed argument.
TEST_F(CApiStatuses, APathMtuAboveEitherSideIsAnRtrRefusal) {
  auto p = plan("auto");  // the Mac mini's port: active MTU 1024
  ASSERT_TRUE(p);
  gidpolicy_peer peer{};
  peer.qpn = 1;
  peer.psn = 2;
  auto g = gidpolicy::parse_address("::ffff:10.99.0.4").value();
  g.copy_to(peer.gid);
  gidpolicy_rtr_options o;
  gidpolicy_rtr_options_init(&o);
  o.qp_type = IBV_QPT_UC;
  o.path_mtu = IBV_MTU_4096;
  ibv_qp_attr attr;
  int mask = 0;
  EXPECT_EQ(gidpolicy_rtr_fill(p.get(), &peer, &o, &attr, &mask, err_, sizeof err_), GIDPOLICY_ERR_RTR);
  EXPECT_NE(err().find("exceeds the local active MTU 1024"), std::string::npos) << err();
  // Above the peer's MTU: the same status.
  o.path_mtu = IBV_MTU_1024;
  peer.mtu = IBV_MTU_512;
  EXPECT_EQ(gidpolicy_rtr_fill(p.get(), &peer, &o, &attr, &mask, err_, sizeof err_), GIDPOLICY_ERR_RTR);
  EXPECT_NE(err().find("exceeds the peer's MTU 512"), std::string::npos) << err();
  // Within both: accepted, and the MTU asked for is the MTU set.
  o.path_mtu = IBV_MTU_512;
  ASSERT_EQ(gidpolicy_rtr_fill(p.get(), &peer, &o, &attr, &mask, err_, sizeof err_), GIDPOLICY_OK) << err();
  EXPECT_EQ(attr.path_mtu, IBV_MTU_512);
  // Malformed values stay argument errors, as documented.
  o.path_mtu = 6;
  EXPECT_EQ(gidpolicy_rtr_fill(p.get(), &peer, &o, &attr, &mask, err_, sizeof err_),
            GIDPOLICY_ERR_INVALID_ARGUMENT);
  o.path_mtu = 0;
  peer.qpn = 1u << 24;  // wider than its 24-bit field
  EXPECT_EQ(gidpolicy_rtr_fill(p.get(), &peer, &o, &attr, &mask, err_, sizeof err_),
            GIDPOLICY_ERR_INVALID_ARGUMENT);
}

// An active_mtu the driver reports outside IBV_MTU_256..IBV_MTU_4096 used to become 1024, and
// with it every RTR's path MTU. It is an unknown MTU: refused, EPROTO, the value named.
TEST_F(CApiStatuses, AnUnknownActiveMtuIsRefusedNotTakenAs1024) {
  for (int mtu : {0, 6, 255}) {
    g_active_mtu = mtu;
    gidpolicy_table* t = nullptr;
    EXPECT_EQ(snapshot(&t), GIDPOLICY_ERR_DRIVER) << mtu;
    EXPECT_EQ(t, nullptr);
    gidpolicy_table_free(t);
    EXPECT_NE(err().find("active_mtu " + std::to_string(mtu)), std::string::npos) << err();
    EXPECT_NE(err().find("unknown"), std::string::npos) << err();
    EXPECT_NE(err().find(std::strerror(EPROTO)), std::string::npos) << err();
  }
  // Every known value is taken as reported: the path MTU follows it.
  for (int mtu = IBV_MTU_256; mtu <= IBV_MTU_4096; ++mtu) {
    g_active_mtu = mtu;
    auto p = plan("auto");
    ASSERT_TRUE(p);
    gidpolicy_peer peer{};
    auto g = gidpolicy::parse_address("::ffff:10.99.0.4").value();
    g.copy_to(peer.gid);
    gidpolicy_rtr_options o;
    gidpolicy_rtr_options_init(&o);
    o.qp_type = IBV_QPT_UC;
    ibv_qp_attr attr;
    int mask = 0;
    ASSERT_EQ(gidpolicy_rtr_fill(p.get(), &peer, &o, &attr, &mask, err_, sizeof err_), GIDPOLICY_OK) << err();
    EXPECT_EQ(static_cast<int>(attr.path_mtu), mtu);
  }
}

// The device name a function table gives reaches every message and JSON document: a newline
// could forge a line, an escape sequence reach the terminal. Refused (EPROTO), quoted with
// \xNN escapes, never printed raw.
TEST_F(CApiStatuses, ADeviceNameThatBreaksTheNameRuleIsRefusedQuoted) {
  for (const char* bad :
       {"mlx5_0\n999 of 999 links connected", "rdma\x1b[31m", "dev\xff", "two words", "a/b"}) {
    g_device_name = bad;
    gidpolicy_table* t = nullptr;
    EXPECT_EQ(snapshot(&t), GIDPOLICY_ERR_DRIVER) << bad;
    EXPECT_EQ(t, nullptr);
    gidpolicy_table_free(t);
    const std::string e = err();
    EXPECT_NE(e.find("device name"), std::string::npos) << e;
    for (char ch : e) {
      const auto u = static_cast<unsigned char>(ch);
      EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "unprintable byte " << unsigned{u} << " in: " << e;
    }
  }
  // A name longer than the kernel's IB_DEVICE_NAME_MAX is refused too (and read no further).
  const std::string long_name(200, 'm');
  g_device_name = long_name.c_str();
  gidpolicy_table* t = nullptr;
  EXPECT_EQ(snapshot(&t), GIDPOLICY_ERR_DRIVER);
  EXPECT_NE(err().find("longer than the kernel allows"), std::string::npos) << err();
  // The same names through the live preflight, which reads the name too.
  g_device_name = "mlx5_0\r\nforged";
  const auto gid = gidpolicy::parse_address("::ffff:10.99.0.3").value();
  std::uint8_t raw[16];
  gid.copy_to(raw);
  EXPECT_EQ(gidpolicy_preflight_live(&fns_, ctx_, 1, 2, raw, err_, sizeof err_), GIDPOLICY_ERR_DRIVER);
  EXPECT_EQ(err().find('\n'), std::string::npos) << err();
}

// gidpolicy_select documents NO_CANDIDATE and INVALID_ARGUMENT: a per-device spec that covers
// neither the table's device nor '*' found no candidate (it used to be GIDPOLICY_ERR_DRIVER,
// the status of a failed verbs call, though no call failed).
TEST_F(CApiStatuses, APerDeviceSpecWithoutTheDeviceIsNoCandidate) {
  gidpolicy_table* t = nullptr;
  ASSERT_EQ(snapshot(&t), GIDPOLICY_OK) << err();
  std::unique_ptr<gidpolicy_table, TableDel> table(t);
  gidpolicy_profile* p = nullptr;
  ASSERT_EQ(gidpolicy_profile_parse("per-device(mlx5_9=auto)", &p, err_, sizeof err_), GIDPOLICY_OK) << err();
  std::unique_ptr<gidpolicy_profile, ProfileDel> profile(p);
  gidpolicy_plan* out = nullptr;
  EXPECT_EQ(gidpolicy_select(profile.get(), table.get(), &out, err_, sizeof err_),
            GIDPOLICY_ERR_NO_CANDIDATE);
  EXPECT_EQ(out, nullptr);
  gidpolicy_plan_free(out);
}

// gidpolicy_table_from_json's "no such port" names the caller's device quoted.
TEST_F(CApiStatuses, TheCallersDeviceNameIsQuotedInMessages) {
  const std::string doc =
      gidpolicy::test::read_file(gidpolicy::test::example_tables_dir() / "macmini-mapped-at-2.json");
  gidpolicy_table* t = nullptr;
  EXPECT_EQ(gidpolicy_table_from_json(doc.data(), doc.size(), "x\n999 of 999", 1, &t, err_, sizeof err_),
            GIDPOLICY_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(err().find('\n'), std::string::npos) << err();
  EXPECT_NE(err().find("\"x\\x0a999 of 999\""), std::string::npos) << err();
}

}  // namespace
}  // namespace capi_statuses
