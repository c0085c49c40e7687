// The C-backed VerbsApi backends: the real libibverbs on this machine (no RDMA device: a clear
// errc::no_devices, no crash) through DlopenApi and LibibverbsApi, dlopen failures as values,
// and FunctionTableApi over JACCL-shaped and ds4-shaped pointer tables pointing at the fake,
// with every C return convention surfacing its errno.
#include <gidpolicy/fakes/fake_c_abi.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>
#if defined(GIDPOLICY_HAVE_LIBIBVERBS_BACKEND)
#include <gidpolicy/verbs/libibverbs_api.hpp>
#endif

#include "support/assert_ok.hpp"
#include "support/files.hpp"
#include "support/gid_literals.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace gidpolicy::verbs {
namespace {

using fakes::FakeVerbs;
namespace c_abi = fakes::c_abi;

/// Shaped like MLX JACCL's IBVWrapper (mlx/distributed/jaccl): C++ members named after the
/// libibverbs functions without the prefix, loaded one by one; no query_gid_ex/_table, no query_qp.
struct JacclIbvWrapper {
  ibv_device** (*get_device_list)(int*);
  const char* (*get_device_name)(ibv_device*);
  void (*free_device_list)(ibv_device**);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
  int (*query_port)(ibv_context*, std::uint8_t, ibv_port_attr*);
  int (*query_gid)(ibv_context*, std::uint8_t, int, ibv_gid*);
};

JacclIbvWrapper jaccl_wrapper_over_fake() {
  return {c_abi::get_device_list, c_abi::get_device_name, c_abi::free_device_list, c_abi::open_device,
          c_abi::close_device,    c_abi::alloc_pd,        c_abi::dealloc_pd,       c_abi::create_cq,
          c_abi::destroy_cq,      c_abi::create_qp,       c_abi::modify_qp,        c_abi::destroy_qp,
          c_abi::query_port,      c_abi::query_gid};
}

extern "C" {
/// Shaped like ds4's ds4_tp_verbs_api (antirez/ds4 ds4_tp.c): a C struct of pointers, the
/// Linux path using ibv_query_gid_ex in its inline (5-argument) form.
typedef struct ds4_tp_verbs_api {
  void* handle;
  struct ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(struct ibv_device**);
  const char* (*get_device_name)(struct ibv_device*);
  struct ibv_context* (*open_device)(struct ibv_device*);
  int (*close_device)(struct ibv_context*);
  int (*query_port)(struct ibv_context*, uint8_t, struct ibv_port_attr*);
  int (*query_gid)(struct ibv_context*, uint8_t, int, union ibv_gid*);
  int (*query_gid_ex)(struct ibv_context*, uint32_t, uint32_t, struct ibv_gid_entry*, uint32_t);
  struct ibv_pd* (*alloc_pd)(struct ibv_context*);
  int (*dealloc_pd)(struct ibv_pd*);
  struct ibv_cq* (*create_cq)(struct ibv_context*, int, void*, struct ibv_comp_channel*, int);
  int (*destroy_cq)(struct ibv_cq*);
  struct ibv_qp* (*create_qp)(struct ibv_pd*, struct ibv_qp_init_attr*);
  int (*modify_qp)(struct ibv_qp*, struct ibv_qp_attr*, int);
  int (*query_qp)(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_qp_init_attr*);
  int (*destroy_qp)(struct ibv_qp*);
} ds4_tp_verbs_api;
}

ds4_tp_verbs_api ds4_api_over_fake() {
  ds4_tp_verbs_api a{};
  a.get_device_list = c_abi::get_device_list;
  a.free_device_list = c_abi::free_device_list;
  a.get_device_name = c_abi::get_device_name;
  a.open_device = c_abi::open_device;
  a.close_device = c_abi::close_device;
  a.query_port = c_abi::query_port;
  a.query_gid = c_abi::query_gid;
  // The verbs.h inline over _ibv_query_gid_ex, as a program that links libibverbs would see it.
  a.query_gid_ex = [](ibv_context* c, std::uint32_t p, std::uint32_t i, ibv_gid_entry* e, std::uint32_t f) {
    return c_abi::query_gid_ex(c, p, i, e, f, sizeof *e);
  };
  a.alloc_pd = c_abi::alloc_pd;
  a.dealloc_pd = c_abi::dealloc_pd;
  a.create_cq = c_abi::create_cq;
  a.destroy_cq = c_abi::destroy_cq;
  a.create_qp = c_abi::create_qp;
  a.modify_qp = c_abi::modify_qp;
  a.query_qp = c_abi::query_qp;
  a.destroy_qp = c_abi::destroy_qp;
  return a;
}

GidTable nccl769() {
  PortInfo p{"mlx5_bond_0", 1, PortState::active, LinkLayer::ethernet(), 16, Mtu::mtu_1024, 0};
  return VALUE_OR_FAIL(
      GidTable::make(p, {GidEntry::valid(0, g("fe80::ac0:ebff:feda:1cfb"), GidType::roce_v1, "bond0", 7),
                         GidEntry::valid(1, g("fe80::ac0:ebff:feda:1cfb"), GidType::roce_v2, "bond0", 7),
                         GidEntry::valid(2, g("::ffff:200.0.209.6"), GidType::roce_v1, "bond0", 7),
                         GidEntry::valid(3, g("::ffff:200.0.209.6"), GidType::roce_v2, "bond0", 7)}));
}

FunctionTableApi::Options over_fake(std::string name) { return {std::move(name), false}; }

// ---- the real libibverbs on a machine without RDMA --------------------------------------

TEST(DlopenApi, RealLibibverbsWithoutDevicesSaysNoRdmaDevices) {
  DlopenApi api;  // libibverbs.so.1
  ASSERT_TRUE(api.loaded()) << api.load_error().what() << " (the Debian package libibverbs1 provides it)";
  auto names = api.device_names();
  if (names) GTEST_SKIP() << "this machine has RDMA devices; the no-device path is not observable here";
  EXPECT_EQ(names.error(), errc::no_devices) << names.error().what();
  EXPECT_NE(names.error().what().find("no RDMA devices"), std::string::npos);
  // Debian 12's rdma-core without an RDMA kernel: NULL + ENOSYS, kept in the detail.
  EXPECT_NE(names.error().detail.find("errno " + std::to_string(ENOSYS)), std::string::npos)
      << names.error().detail;
  EXPECT_EQ(api.open_device("mlx5_0").error(), errc::no_devices);
  EXPECT_EQ(snapshot(api, "mlx5_0", 1).error(), errc::no_devices);
  // The sized GID entry points were found (rdma-core >= 32), so the preferred read is offered.
  EXPECT_NE(api.functions().query_gid_table_sized, nullptr);
  EXPECT_NE(api.functions().query_gid_ex_sized, nullptr);
  EXPECT_EQ(api.backend_name(), "dlopen(libibverbs.so.1)");
}

TEST(DlopenApi, AMissingLibraryIsAValueNotACrash) {
  DlopenApi api("libgidpolicy-no-such-verbs.so.1");
  EXPECT_FALSE(api.loaded());
  EXPECT_EQ(api.load_error(), errc::library_unavailable);
  EXPECT_NE(api.load_error().detail.find("libgidpolicy-no-such-verbs.so.1"), std::string::npos);
  EXPECT_EQ(api.device_names().error(), errc::library_unavailable);
  EXPECT_EQ(api.open_device("mlx5_0").error(), errc::library_unavailable);
  EXPECT_EQ(snapshot(api, "mlx5_0", 1).error(), errc::library_unavailable);
  EXPECT_EQ(api.read_support(DeviceHandle{1}), ReadSupport{});
}

TEST(DlopenApi, ALibraryWithoutVerbsSymbolsNamesWhatIsMissing) {
  DlopenApi api("libm.so.6");
  EXPECT_FALSE(api.loaded());
  EXPECT_EQ(api.load_error(), errc::symbol_missing);
  EXPECT_NE(api.load_error().detail.find("ibv_get_device_list"), std::string::npos)
      << api.load_error().detail;
  EXPECT_EQ(api.device_names().error(), errc::symbol_missing);
}

#if defined(GIDPOLICY_HAVE_LIBIBVERBS_BACKEND)
TEST(LibibverbsApi, LinkedLibibverbsWithoutDevicesSaysNoRdmaDevices) {
  LibibverbsApi api;
  auto names = api.device_names();
  if (names) GTEST_SKIP() << "this machine has RDMA devices";
  EXPECT_EQ(names.error(), errc::no_devices) << names.error().what();
  EXPECT_EQ(api.open_device("rdma_en1").error(), errc::no_devices);
  EXPECT_EQ(snapshot(api, "rdma_en1", 1).error(), errc::no_devices);
  EXPECT_EQ(api.backend_name(), "libibverbs");
  const VerbsFunctions f = linked_libibverbs_functions();
  EXPECT_TRUE(f.missing_for_snapshot().empty());
  EXPECT_TRUE(f.missing_for_qps().empty());
  EXPECT_NE(f.query_gid_table, nullptr);
}
#endif

// ---- function tables pointing at the fake -------------------------------------------------

TEST(FunctionTableApi, JacclShapedWrapperReadsTheFakeWithLegacyCallsAndReachesRtr) {
  FakeVerbs fake;
  ASSERT_TRUE(fake.load_file(test::example_tables_dir() / "macmini-mapped-at-2.json"));
  c_abi::Binding bind(fake);
  const JacclIbvWrapper w = jaccl_wrapper_over_fake();
  FunctionTableApi api(functions_from(w), over_fake("jaccl-ibv-wrapper"));
  EXPECT_EQ(VALUE_OR_FAIL(api.device_names()), std::vector<std::string>{"rdma_en2"});

  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, api.open_device("rdma_en2"));
  EXPECT_EQ(api.read_support(dev), (ReadSupport{false, false, true}));
  fake.reset_counters();
  SnapshotReport report;
  auto t = snapshot(api, dev, 1, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(report.method, ReadMethod::gid_legacy);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid), 16u);  // gid_tbl_len 16, one ibv_query_gid each
  EXPECT_EQ(t.value().port().link_layer, LinkLayer::thunderbolt());
  EXPECT_EQ(t.value().port().gid_tbl_len, 16u);
  EXPECT_EQ(t.value().find(2)->gid, g("::ffff:10.99.0.3"));
  EXPECT_EQ(t.value().find(1), nullptr);  // zeros: empty

  // JACCL's RTR from the literal index 1 on this Mac mini: errno 22 through the C convention.
  ASSERT_OK_AND_ASSIGN(const QpHandle qp, api.create_qp(dev, QpKind::uc));
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  ASSERT_TRUE(api.modify_qp(qp, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  ibv_qp_attr rtr{};
  rtr.qp_state = IBV_QPS_RTR;
  rtr.path_mtu = IBV_MTU_1024;
  rtr.dest_qp_num = 0x101;
  rtr.rq_psn = 7;
  rtr.ah_attr.is_global = 1;
  rtr.ah_attr.port_num = 1;
  rtr.ah_attr.grh.hop_limit = 1;
  rtr.ah_attr.grh.sgid_index = 1;
  g("::ffff:10.99.0.4").copy_to(rtr.ah_attr.grh.dgid.raw);
  const int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  auto bad = api.modify_qp(qp, rtr, mask);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, std::error_code(22, std::generic_category()));
  rtr.ah_attr.grh.sgid_index = 2;
  EXPECT_TRUE(api.modify_qp(qp, rtr, mask));
  // JACCL's wrapper has no query_qp: reported, not crashed.
  EXPECT_EQ(api.query_qp(qp).error(), errc::not_supported);
  EXPECT_EQ(fake.qp_count("rdma_en2"), 1u);
  ASSERT_TRUE(api.close_device(dev));
  EXPECT_EQ(fake.qp_count("rdma_en2"), 0u);
}

TEST(FunctionTableApi, Ds4ShapedApiReadsTypedEntriesThroughTheInlineGidExForm) {
  FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(nccl769()));
  c_abi::Binding bind(fake);
  const ds4_tp_verbs_api a = ds4_api_over_fake();
  const VerbsFunctions f = functions_from(a);
  EXPECT_NE(f.query_gid_ex, nullptr);        // the 5-argument form fills the inline slot...
  EXPECT_EQ(f.query_gid_ex_sized, nullptr);  // ...and not the sized one
  FunctionTableApi api(f, over_fake("ds4_tp_verbs_api"));
  SnapshotReport report;
  auto t = snapshot(api, "mlx5_bond_0", 1, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(report.method, ReadMethod::gid_entry);
  // Netdev names are not resolved over a fake (ifindex 7 means nothing on this host): the
  // snapshot is the fake's table with the names left empty.
  std::vector<GidEntry> expected;
  for (GidEntry e : nccl769()) {
    e.netdev.clear();
    expected.push_back(e);
  }
  EXPECT_EQ(t.value(), VALUE_OR_FAIL(GidTable::make(nccl769().port(), expected)));
  // An empty slot through the inline form: ENODATA, which snapshot turned into empty.
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, api.open_device("mlx5_bond_0"));
  EXPECT_EQ(api.read_gid_entry(dev, 1, 9).error().code.value(), ENODATA);
  auto qp = api.create_qp(dev, QpKind::rc);
  ASSERT_OK(qp);
  auto info = api.query_qp(qp.value());
  ASSERT_OK(info);
  EXPECT_EQ(info.value().state, IBV_QPS_RESET);
  ASSERT_TRUE(fake.qp_by_number("mlx5_bond_0", info.value().qp_num));
  EXPECT_EQ(info.value().kind, QpKind::rc);
  ASSERT_TRUE(api.destroy_qp(qp.value()));
  EXPECT_EQ(fake.qp_count("mlx5_bond_0"), 0u);
}

TEST(FunctionTableApi, FullTableUsesOneGidTableCall) {
  FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(nccl769()));
  c_abi::Binding bind(fake);
  FunctionTableApi api(c_abi::functions(), over_fake("fake-c-abi"));
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, api.open_device("mlx5_bond_0"));
  fake.reset_counters();
  SnapshotReport report;
  auto t = snapshot(api, dev, 1, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(report.method, ReadMethod::gid_table);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 1u);
  EXPECT_EQ(fake.total_calls(), 2u);
  EXPECT_EQ(t.value().find(3)->type, GidType::roce_v2);
  EXPECT_EQ(t.value().find(3)->ifindex, 7u);
}

// Each C convention, with the fault injected in the model behind it, surfaces the errno.
TEST(FunctionTableApi, EveryReturnConventionSurfacesTheErrno) {
  FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(nccl769()));
  c_abi::Binding bind(fake);
  FunctionTableApi api(c_abi::functions(), over_fake("fake-c-abi"));
  auto errno_of = [](const auto& r) { return r ? 0 : r.error().code.value(); };

  // NULL + errno: get_device_list, open_device.
  fake.fail_nth(VerbsCall::device_names, 1, ENOMEM);
  EXPECT_EQ(errno_of(api.device_names()), ENOMEM);
  fake.fail_nth(VerbsCall::open_device, 1, EACCES);
  EXPECT_EQ(errno_of(api.open_device("mlx5_bond_0")), EACCES);
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, api.open_device("mlx5_bond_0"));
  // A positive errno: query_port, _ibv_query_gid_ex.
  fake.fail_nth(VerbsCall::port_attributes, 1, ENODEV);
  EXPECT_EQ(errno_of(api.port_attributes(dev, 1)), ENODEV);
  fake.fail_nth(VerbsCall::read_gid_entry, 1, EIO);
  EXPECT_EQ(errno_of(api.read_gid_entry(dev, 1, 3)), EIO);
  // 0 / -1 + errno: ibv_query_gid.
  fake.fail_nth(VerbsCall::read_gid, 1, EFAULT);
  auto legacy = api.read_gid(dev, 1, 3);
  EXPECT_EQ(errno_of(legacy), EFAULT);
  EXPECT_NE(legacy.error().detail.find("ibv_query_gid(mlx5_bond_0, 1, 3)"), std::string::npos);
  // A count or a negative errno: _ibv_query_gid_table; EOPNOTSUPP is learned per device.
  fake.fail_nth(VerbsCall::read_gid_table, 1, EOPNOTSUPP);
  EXPECT_EQ(errno_of(api.read_gid_table(dev, 16)), EOPNOTSUPP);
  EXPECT_FALSE(api.read_support(dev).gid_table);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 1u);
  EXPECT_EQ(errno_of(api.read_gid_table(dev, 16)), EOPNOTSUPP);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 1u);  // not asked again
  // QPs: NULL + errno from create_qp, positive errnos from modify/query/destroy.
  fake.fail_nth(VerbsCall::create_qp, 1, EBUSY);
  EXPECT_EQ(errno_of(api.create_qp(dev, QpKind::uc)), EBUSY);
  ASSERT_OK_AND_ASSIGN(const QpHandle qp, api.create_qp(dev, QpKind::uc));
  fake.fail_nth(VerbsCall::modify_qp, 1, ETIMEDOUT);
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  EXPECT_EQ(
      errno_of(api.modify_qp(qp, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)),
      ETIMEDOUT);
  fake.fail_nth(VerbsCall::query_qp, 1, EPERM);
  EXPECT_EQ(errno_of(api.query_qp(qp)), EPERM);
  fake.fail_nth(VerbsCall::destroy_qp, 1, EBUSY);
  EXPECT_EQ(errno_of(api.destroy_qp(qp)), EBUSY);
  fake.fail_nth(VerbsCall::close_device, 1, EIO);
  EXPECT_EQ(errno_of(api.close_device(dev)), EIO);
}

// A context the caller opened (the C API's case: ds4 holds only the context and a few dlsym()ed
// pointers, no device list): adopt() serves it, and neither close_device() nor the destructor
// closes it.
TEST(FunctionTableApi, AdoptedContextIsReadButNeverClosed) {
  FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(nccl769()));
  c_abi::Binding bind(fake);
  int n = 0;
  ibv_device** list = c_abi::get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ibv_context* ctx = c_abi::open_device(list[0]);
  c_abi::free_device_list(list);
  ASSERT_NE(ctx, nullptr);
  VerbsFunctions f;
  f.query_port = c_abi::functions().query_port;
  f.query_gid_ex_sized = c_abi::functions().query_gid_ex_sized;
  f.close_device = c_abi::functions().close_device;  // there, and still not called
  {
    FunctionTableApi api(f, over_fake("adopted"));
    EXPECT_EQ(api.adopt(nullptr).error(), errc::invalid_argument);
    const DeviceHandle dev = VALUE_OR_FAIL(api.adopt(ctx));
    EXPECT_EQ(VALUE_OR_FAIL(api.device_name(dev)), "mlx5_bond_0");  // from ibv_device::name
    fake.reset_counters();
    auto t = snapshot(api, dev, 1);
    ASSERT_OK(t);
    EXPECT_EQ(t.value().find(3)->type, GidType::roce_v2);
    ASSERT_TRUE(api.close_device(dev));
    EXPECT_FALSE(api.device_name(dev));   // forgotten
    (void)VALUE_OR_FAIL(api.adopt(ctx));  // left for the destructor
  }
  EXPECT_EQ(fake.calls(VerbsCall::close_device), 0u);
  EXPECT_EQ(c_abi::close_device(ctx), 0);  // still the caller's to close
}

TEST(FunctionTableApi, UnboundFakeBehavesLikeLibibverbsWithoutRdma) {
  c_abi::bind(nullptr);
  FunctionTableApi api(c_abi::functions(), over_fake("unbound"));
  auto names = api.device_names();
  ASSERT_FALSE(names);
  EXPECT_EQ(names.error(), errc::no_devices);
  EXPECT_NE(names.error().detail.find("errno " + std::to_string(ENOSYS)), std::string::npos);
}

TEST(FunctionTableApi, MissingPointersAreReportedByName) {
  FunctionTableApi empty(VerbsFunctions{});
  auto r = empty.device_names();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::symbol_missing);
  EXPECT_NE(r.error().detail.find("get_device_list"), std::string::npos);
  EXPECT_EQ(empty.read_support(DeviceHandle{1}), ReadSupport{});
  EXPECT_EQ(empty.port_attributes(DeviceHandle{1}, 1).error(), errc::invalid_argument);  // not open

  FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(nccl769()));
  c_abi::Binding bind(fake);
  VerbsFunctions f = c_abi::functions();
  f.create_cq = nullptr;
  FunctionTableApi api(f, over_fake("no-cq"));
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, api.open_device("mlx5_bond_0"));
  auto qp = api.create_qp(dev, QpKind::uc);
  ASSERT_FALSE(qp);
  EXPECT_EQ(qp.error(), errc::not_supported);
  EXPECT_NE(qp.error().detail.find("create_cq"), std::string::npos);
  EXPECT_EQ(api.port_attributes(dev, 0).error(), errc::invalid_argument);
  EXPECT_EQ(api.port_attributes(dev, 256).error(), errc::invalid_argument);
  EXPECT_EQ(api.open_device("mlx5_9").error(), errc::device_not_found);
}

}  // namespace
}  // namespace gidpolicy::verbs
