#include <gidpolicy/gid.hpp>

#include <gtest/gtest.h>
#include "support/assert_ok.hpp"

#include <unordered_set>

namespace gidpolicy {
namespace {

Gid parsed_gid(std::string_view s) {
  auto r = Gid::parse(s);
  EXPECT_TRUE(r) << s << ": " << (r ? "" : r.error().what());
  return r ? r.value() : Gid{};
}

TEST(Gid, ParsesCompressedForms) {
  EXPECT_TRUE(parsed_gid("::").is_zero());
  Gid one = parsed_gid("fe80::1");
  EXPECT_EQ(one[0], 0xfe);
  EXPECT_EQ(one[1], 0x80);
  EXPECT_EQ(one[15], 0x01);
  for (std::size_t k = 2; k < 15; ++k) EXPECT_EQ(one[k], 0) << k;
  EXPECT_EQ(parsed_gid("::1")[15], 1);
  EXPECT_EQ(parsed_gid("1::")[1], 1);
  EXPECT_EQ(parsed_gid("1:2:3:4:5:6:7::").to_full_string(), "0001:0002:0003:0004:0005:0006:0007:0000");
}

TEST(Gid, ParsesIpv4MappedDotted) {
  Gid m = parsed_gid("::ffff:10.0.0.1");
  EXPECT_TRUE(m.is_ipv4_mapped());
  EXPECT_EQ(m.ipv4(), 0x0a000001u);
  EXPECT_EQ(m.ipv4_string(), "10.0.0.1");
  EXPECT_EQ(m, Gid::ipv4_mapped(0x0a000001u));
  EXPECT_EQ(parsed_gid("::ffff:200.0.209.6").to_full_string(), "0000:0000:0000:0000:0000:ffff:c800:d106");
}

TEST(Gid, ParsesFullFormAnyCase) {
  Gid a = parsed_gid("0000:0000:0000:0000:0000:ffff:0a0b:0bfb");
  Gid b = parsed_gid("0000:0000:0000:0000:0000:FFFF:0A0B:0BFB");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.ipv4_string(), "10.11.11.251");
  EXPECT_EQ(parsed_gid("FE80::AC0:EBFF:FEDA:1CFB"), parsed_gid("fe80:0000:0000:0000:0ac0:ebff:feda:1cfb"));
}

TEST(Gid, FormatsLikeInetNtop) {
  EXPECT_EQ(parsed_gid("::").to_string(), "::");
  EXPECT_EQ(parsed_gid("::1").to_string(), "::1");
  EXPECT_EQ(parsed_gid("fe80:0000:0000:0000:0ac0:ebff:feda:1cfb").to_string(), "fe80::ac0:ebff:feda:1cfb");
  EXPECT_EQ(parsed_gid("0000:0000:0000:0000:0000:ffff:c800:d106").to_string(), "::ffff:200.0.209.6");
  EXPECT_EQ(parsed_gid("1:0:0:1:0:0:0:1").to_string(), "1:0:0:1::1");    // the longer zero run is compressed
  EXPECT_EQ(parsed_gid("1:0:0:1:1:0:0:1").to_string(), "1::1:1:0:0:1");  // ties: the first run
  EXPECT_EQ(parsed_gid("1:0:1:1:1:1:1:1").to_string(), "1:0:1:1:1:1:1:1");  // a single zero group stays
  EXPECT_EQ(parsed_gid("fd93:16d3:59b6:10d:690:81ff:fe39:e3e8").to_string(),
            "fd93:16d3:59b6:10d:690:81ff:fe39:e3e8");
  EXPECT_EQ(parsed_gid("::1.2.3.4").to_string(), "::1.2.3.4");  // IPv4-compatible, as glibc prints it
  EXPECT_EQ(parsed_gid("1::").to_string(), "1::");
}

TEST(Gid, FullFormIsEightGroupsOfFour) {
  EXPECT_EQ(parsed_gid("fe80::1").to_full_string(), "fe80:0000:0000:0000:0000:0000:0000:0001");
  EXPECT_EQ(Gid{}.to_full_string(), "0000:0000:0000:0000:0000:0000:0000:0000");
}

struct BadText {
  const char* text;
  std::size_t position;
  const char* reason;
};

void PrintTo(const BadText& b, std::ostream* os) { *os << '"' << b.text << '"'; }

class GidRejects : public ::testing::TestWithParam<BadText> {};

TEST_P(GidRejects, WithPositionAndReason) {
  const auto& p = GetParam();
  auto r = Gid::parse(p.text);
  ASSERT_FALSE(r) << p.text;
  EXPECT_EQ(r.error(), errc::invalid_gid_text);
  EXPECT_NE(r.error().detail.find("at position " + std::to_string(p.position) + ":"), std::string::npos)
      << r.error().detail;
  EXPECT_NE(r.error().detail.find(p.reason), std::string::npos) << r.error().detail;
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, GidRejects,
    ::testing::Values(BadText{"", 0, "empty"}, BadText{":", 0, "single ':'"}, BadText{":::", 2, "':::'"},
                      BadText{"fe80::1::2", 7, "only once"}, BadText{"fe80:::1", 6, "':::'"},
                      BadText{"g::1", 0, "unexpected character 'g'"}, BadText{"12345::", 4, "longer than 4"},
                      BadText{"1:2:3:4:5:6:7", 13, "expected 8 groups, found 7"},
                      BadText{"1:2:3:4:5:6:7:8:9", 16, "more than 8 groups"},
                      BadText{"1:2:3:4:5:6:7:8::", 17, "at least one zero group"},
                      BadText{"fe80::1:", 7, "single ':'"}, BadText{"::ffff:10.0.0.256", 14, "above 255"},
                      BadText{"::ffff:10.0.0", 13, "fewer than 4 octets"},
                      BadText{"::ffff:10.0.0.1.2", 15, "after the IPv4"},
                      BadText{"::1.2.3.4:5", 9, "must end the address"},
                      BadText{" fe80::1", 0, "unexpected byte 0x20"},
                      BadText{"fe80::1\n", 7, "unexpected byte 0x0a"}, BadText{"fe80:\xff::1", 5, "0xff"}));

TEST(Gid, Predicates) {
  EXPECT_TRUE(Gid{}.is_zero());
  EXPECT_FALSE(parsed_gid("::1").is_zero());
  EXPECT_TRUE(parsed_gid("fe80::1").is_link_local());
  EXPECT_TRUE(parsed_gid("febf::1").is_link_local());
  EXPECT_FALSE(parsed_gid("fec0::1").is_link_local());
  EXPECT_FALSE(parsed_gid("fe00::1").is_link_local());
  EXPECT_TRUE(parsed_gid("::ffff:169.254.3.4").is_ipv4_link_local());
  EXPECT_FALSE(parsed_gid("::ffff:169.253.3.4").is_ipv4_link_local());
  EXPECT_FALSE(parsed_gid("::169.254.3.4").is_ipv4_link_local());  // not mapped
  EXPECT_TRUE(parsed_gid("fd93::1").is_unique_local());
  EXPECT_TRUE(parsed_gid("::ffff:0:1").is_ipv4_mapped());  // 0.0.0.1, still mapped
  // JACCL's rule is exactly bytes 0-9 zero and 10-11 ff ff.
  EXPECT_FALSE(parsed_gid("0:0:0:0:1:ffff:a00:1").is_ipv4_mapped());
  EXPECT_FALSE(parsed_gid("::fffe:10.0.0.1").is_ipv4_mapped());
  EXPECT_FALSE(parsed_gid("fe80::ffff:a00:1").is_ipv4_mapped());
  EXPECT_EQ(parsed_gid("fe80::ffff:a00:1").ipv4(), std::nullopt);
  EXPECT_EQ(parsed_gid("fe80::ffff:a00:1").ipv4_string(), "");
}

TEST(Gid, InterfaceIdAndSubnetPrefix) {
  Gid x = parsed_gid("fe80::ac0:ebff:feda:1cfb");
  EXPECT_EQ(x.subnet_prefix(), 0xfe80000000000000ull);
  EXPECT_EQ(x.interface_id(), 0x0ac0ebfffeda1cfbull);
  EXPECT_EQ(parsed_gid("fe80::").interface_id(), 0u);
}

TEST(Gid, OrderingAndHashing) {
  EXPECT_LT(parsed_gid("::1"), parsed_gid("::2"));
  EXPECT_LT(parsed_gid("::ffff"), parsed_gid("fe80::"));
  std::unordered_set<Gid> set{parsed_gid("::1"), parsed_gid("::1"), parsed_gid("fe80::1")};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_NE(std::hash<Gid>{}(parsed_gid("::1")), std::hash<Gid>{}(parsed_gid("::2")));
}

TEST(Gid, BytesRoundTripWithoutPunning) {
  std::uint8_t raw[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  Gid x = Gid::from_bytes(raw);
  std::uint8_t out[16] = {};
  x.copy_to(out);
  EXPECT_EQ(0, std::memcmp(raw, out, 16));
  EXPECT_EQ(x.to_string(), "fe80::102:304:506:708");
}

TEST(Cidr, ParsesBothFamilies) {
  ASSERT_OK_AND_ASSIGN(auto v4, Cidr::parse("10.152.0.0/16"));
  EXPECT_EQ(v4.prefix_len, 112u);
  EXPECT_TRUE(v4.contains(parsed_gid("::ffff:10.152.4.12")));
  EXPECT_FALSE(v4.contains(parsed_gid("::ffff:10.153.4.12")));
  EXPECT_EQ(v4.to_string(), "10.152.0.0/16");
  ASSERT_OK_AND_ASSIGN(auto v6, Cidr::parse("fd93::/16"));
  EXPECT_TRUE(v6.contains(parsed_gid("fd93:16d3::1")));
  EXPECT_FALSE(v6.contains(parsed_gid("fd94::1")));
  ASSERT_OK_AND_ASSIGN(auto host, Cidr::parse("10.0.0.1"));
  EXPECT_EQ(host.prefix_len, 128u);
  ASSERT_OK_AND_ASSIGN(auto odd, Cidr::parse("fe80::/10"));
  EXPECT_TRUE(odd.contains(parsed_gid("febf::1")));
  EXPECT_FALSE(odd.contains(parsed_gid("fec0::1")));
  EXPECT_EQ(VALUE_OR_FAIL(Cidr::parse("0.0.0.0/0")).prefix_len, 96u);
}

TEST(Cidr, RejectsWithPosition) {
  auto r = Cidr::parse("10.0.0.0/33");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::invalid_field);
  EXPECT_NE(r.error().detail.find("above 32"), std::string::npos);
  EXPECT_FALSE(Cidr::parse("10.0.0.0/"));
  EXPECT_FALSE(Cidr::parse("10.0.0.0/x"));
  EXPECT_FALSE(Cidr::parse("fd00::/129"));
  EXPECT_FALSE(Cidr::parse("bogus/8"));
}

TEST(ParseAddress, Ipv4BecomesMapped) {
  EXPECT_EQ(VALUE_OR_FAIL(parse_address("127.0.0.1")), Gid::ipv4_mapped(0x7f000001u));
  EXPECT_EQ(VALUE_OR_FAIL(parse_address("fe80::1")), parsed_gid("fe80::1"));
  EXPECT_FALSE(parse_address("127.0.0"));
}

}  // namespace
}  // namespace gidpolicy
