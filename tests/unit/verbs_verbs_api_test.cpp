// gidpolicy/verbs/verbs_api.hpp: what the seam makes of a driver's ibv_port_attr.
#include <gidpolicy/verbs/verbs_api.hpp>

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gidpolicy::verbs {
namespace {

ibv_port_attr attr_with_mtu(int mtu) {
  ibv_port_attr a;
  std::memset(&a, 0, sizeof a);
  a.state = IBV_PORT_ACTIVE;
  a.link_layer = IBV_LINK_LAYER_ETHERNET;
  a.gid_tbl_len = 16;
  // memcpy: a value outside ibv_mtu's range cannot be stored through the enum type in C++.
  std::memcpy(&a.active_mtu, &mtu, sizeof a.active_mtu);
  return a;
}

// An active_mtu outside 1..5 used to read as 1024, which then became every RTR's path MTU.
// It is an unknown MTU: refused with EPROTO, the call and the value named.
TEST(PortInfoFromIbv, AnUnknownActiveMtuIsRefusedNever1024) {
  for (int mtu : {0, 6, 7, 200}) {
    auto p = port_info_from_ibv("mlx5_0", 1, attr_with_mtu(mtu), "ibv_query_port(mlx5_0, 1)");
    ASSERT_FALSE(p.has_value()) << mtu;
    EXPECT_EQ(p.error().code, std::error_code(EPROTO, std::generic_category())) << p.error().what();
    EXPECT_NE(p.error().what().find("ibv_query_port(mlx5_0, 1) reported active_mtu " + std::to_string(mtu)),
              std::string::npos)
        << p.error().what();
    EXPECT_NE(p.error().what().find("unknown"), std::string::npos) << p.error().what();
  }
  for (int mtu = IBV_MTU_256; mtu <= IBV_MTU_4096; ++mtu) {
    auto p = port_info_from_ibv("mlx5_0", 1, attr_with_mtu(mtu));
    ASSERT_TRUE(p.has_value()) << p.error().what();
    EXPECT_EQ(static_cast<int>(p.value().active_mtu), mtu);
  }
}

}  // namespace
}  // namespace gidpolicy::verbs
