// gidpolicy/policies/filters.hpp: family decided on the GID bytes (IPv4-mapped is IPv4, anything
// else IPv6), type filters as demands (roce_v2 rejects unknown), the accepted spellings, and
// which link layers route (link-local unroutable everywhere but InfiniBand).
#include <gidpolicy/policies/filters.hpp>

#include "example_tables.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

using test::gid;

// matches() is constexpr: usable where the filters are compiled into a policy.
static_assert(matches(FamilyFilter::ipv4, Gid::ipv4_mapped(0x0a000001)));
static_assert(!matches(FamilyFilter::ipv6, Gid::ipv4_mapped(0x0a000001)));
static_assert(matches(TypeFilter::roce_v2, GidType::roce_v2));
static_assert(!matches(TypeFilter::roce_v2, GidType::unknown));
static_assert(!link_local_is_unroutable(LinkLayer::infiniband()));

TEST(FamilyFilter, FamilyIsDecidedOnTheBytes) {
  const Gid mapped = gid("::ffff:10.99.0.3");
  const Gid ipv6[] = {gid("fe80::14a2:7cff:fe31:9d05"),              // link-local
                      gid("fd93:16d3:59b6:10d:690:81ff:fe39:e3e8"),  // ULA
                      gid("2001:db8::1"),                            // global
                      gid("fe80::2:c903:a:1b2c"),                    // InfiniBand GUID-based
                      gid("::")};                                    // zero: not IPv4-mapped
  EXPECT_TRUE(matches(FamilyFilter::ipv4, mapped));
  EXPECT_FALSE(matches(FamilyFilter::ipv6, mapped));
  EXPECT_TRUE(matches(FamilyFilter::any, mapped));
  for (const Gid& g : ipv6) {
    EXPECT_FALSE(matches(FamilyFilter::ipv4, g)) << g.to_string();
    EXPECT_TRUE(matches(FamilyFilter::ipv6, g)) << g.to_string();
    EXPECT_TRUE(matches(FamilyFilter::any, g)) << g.to_string();
  }
  // ::a.b.c.d (IPv4-compatible, deprecated) and ::fffe:... are not IPv4-mapped.
  EXPECT_TRUE(matches(FamilyFilter::ipv6, gid("::10.0.0.1")));
  EXPECT_TRUE(matches(FamilyFilter::ipv6, gid("::fffe:a00:1")));
}

TEST(FamilyFilter, NamesAndSpellings) {
  EXPECT_EQ(to_string(FamilyFilter::any), "any");
  EXPECT_EQ(to_string(FamilyFilter::ipv4), "ipv4");
  EXPECT_EQ(to_string(FamilyFilter::ipv6), "ipv6");
  for (FamilyFilter f : {FamilyFilter::any, FamilyFilter::ipv4, FamilyFilter::ipv6})
    EXPECT_EQ(family_filter_from_string(to_string(f)), f);  // round trip
  for (const char* s : {"ipv4", "IPv4", "4", "inet", "INET"})
    EXPECT_EQ(family_filter_from_string(s), FamilyFilter::ipv4) << s;
  for (const char* s : {"ipv6", "IPV6", "6", "inet6", "Inet6"})
    EXPECT_EQ(family_filter_from_string(s), FamilyFilter::ipv6) << s;
  EXPECT_EQ(family_filter_from_string("ANY"), FamilyFilter::any);
  for (const char* s : {"", "ip", "ipv5", "v4", " ipv4", "ipv4 ", "46", "inet4"})
    EXPECT_EQ(family_filter_from_string(s), std::nullopt) << '"' << s << '"';
}

TEST(TypeFilter, EachFilterAcceptsItsTypeAndRoceV2RejectsUnknown) {
  const GidType all[] = {GidType::ib, GidType::roce_v1, GidType::roce_v2, GidType::unknown};
  for (GidType t : all) {
    EXPECT_TRUE(matches(TypeFilter::any, t)) << to_string(t);  // any: even unknown
    EXPECT_EQ(matches(TypeFilter::ib, t), t == GidType::ib) << to_string(t);
    EXPECT_EQ(matches(TypeFilter::roce_v1, t), t == GidType::roce_v1) << to_string(t);
    EXPECT_EQ(matches(TypeFilter::roce_v2, t), t == GidType::roce_v2) << to_string(t);
  }
}

TEST(TypeFilter, NamesAndSpellings) {
  EXPECT_EQ(to_string(TypeFilter::any), "any");
  EXPECT_EQ(to_string(TypeFilter::ib), "ib");
  EXPECT_EQ(to_string(TypeFilter::roce_v1), "roce_v1");
  EXPECT_EQ(to_string(TypeFilter::roce_v2), "roce_v2");
  for (TypeFilter t : {TypeFilter::any, TypeFilter::ib, TypeFilter::roce_v1, TypeFilter::roce_v2})
    EXPECT_EQ(type_filter_from_string(to_string(t)), t);
  for (const char* s : {"v1", "V1", "RoCE v1", "roce v1", "ROCE_V1"})
    EXPECT_EQ(type_filter_from_string(s), TypeFilter::roce_v1) << s;
  for (const char* s : {"v2", "RoCE v2", "RoCE_v2", "ROCE V2"})
    EXPECT_EQ(type_filter_from_string(s), TypeFilter::roce_v2) << s;
  EXPECT_EQ(type_filter_from_string("IB"), TypeFilter::ib);
  EXPECT_EQ(type_filter_from_string("Any"), TypeFilter::any);
  for (const char* s : {"", "v3", "roce", "rocev2", "roce  v2", "infiniband", "unknown"})
    EXPECT_EQ(type_filter_from_string(s), std::nullopt) << '"' << s << '"';
}

TEST(LinkLocal, UnroutableOnEveryLinkLayerButInfiniband) {
  EXPECT_FALSE(link_local_is_unroutable(LinkLayer::infiniband()));
  EXPECT_TRUE(link_local_is_unroutable(LinkLayer::ethernet()));
  EXPECT_TRUE(link_local_is_unroutable(LinkLayer::thunderbolt()));
  // A link layer gidpolicy does not know is treated as routed: refusing there is the safe error.
  EXPECT_TRUE(link_local_is_unroutable(LinkLayer::from_raw(7)));
  EXPECT_TRUE(link_local_is_unroutable(LinkLayer{}));
}

}  // namespace
}  // namespace gidpolicy
