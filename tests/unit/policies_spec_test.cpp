// The spec grammar: what parses to what, round trips, and precise errors.
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <climits>

namespace gidpolicy {
namespace {

using test::gid;

AnyPolicy parsed(std::string_view s) {
  auto r = parse_policy(s);
  EXPECT_TRUE(r) << s << ": " << (r ? "" : r.error().what());
  return r ? r.value() : AnyPolicy(JacclLegacyIndex1{});
}

TEST(PolicySpec, RequiredForms) {
  EXPECT_EQ(parsed("jaccl-fixed"), AnyPolicy(JacclFirstMapped{}));
  EXPECT_EQ(parsed("jaccl-legacy"), AnyPolicy(JacclLegacyIndex1{}));
  EXPECT_EQ(parsed("ds4"), AnyPolicy(Ds4Scan{}));
  EXPECT_EQ(parsed("ds4:index=3"), AnyPolicy(Ds4ExplicitIndex{3}));
  EXPECT_EQ(parsed("ds4-linux"), AnyPolicy(Ds4Linux{}));
  EXPECT_EQ(parsed("ds4-linux:local=127.0.0.1"), AnyPolicy(Ds4Linux{.local = gid("::ffff:127.0.0.1")}));
  EXPECT_EQ(parsed("ds4-linux:local=127.0.0.1,index=2"), AnyPolicy(Ds4Linux{gid("::ffff:127.0.0.1"), 2}));
  EXPECT_EQ(parsed("ds4-linux:index=-1"), AnyPolicy(Ds4Linux{.index = -1}));
  EXPECT_EQ(parsed("ds4-linux:index=2147483647"), AnyPolicy(Ds4Linux{.index = INT_MAX}));
  EXPECT_EQ(parsed("validated:index=3"), AnyPolicy(ValidatedExplicit{.index = 3}));
  EXPECT_EQ(parsed("validated:index=3,type=roce_v2,family=any,allow-link-local"),
            AnyPolicy(ValidatedExplicit{3, TypeFilter::roce_v2, FamilyFilter::any, true}));
  EXPECT_EQ(parsed("validated:type=ib,index=0,family=ipv6"),
            AnyPolicy(ValidatedExplicit{0, TypeFilter::ib, FamilyFilter::ipv6, false}));
  EXPECT_EQ(parsed("auto"), AnyPolicy(Ranked{}));
  EXPECT_EQ(
      parsed("auto:family=ipv4,roce=v2,subnet=10.0.0.0/8,exclude=10.1.0.0/16,netdev=eth0,local=10.0.0.5"),
      AnyPolicy(Ranked{{.family = FamilyFilter::ipv4,
                        .type = TypeFilter::roce_v2,
                        .subnets = {VALUE_OR_FAIL(Cidr::parse("10.0.0.0/8"))},
                        .excludes = {VALUE_OR_FAIL(Cidr::parse("10.1.0.0/16"))},
                        .netdev = "eth0",
                        .local = gid("::ffff:10.0.0.5")}}));
  EXPECT_EQ(parsed("auto:subnet=fd00::/8,subnet=10.0.0.0/8").target<Ranked>()->options.subnets.size(), 2u);
  EXPECT_EQ(parsed("auto:roce=any"), AnyPolicy(Ranked{}));
  EXPECT_EQ(parsed("first(validated:index=3|auto)"),
            AnyPolicy(FirstOf{{ValidatedExplicit{.index = 3}, Ranked{}}}));
  EXPECT_EQ(parsed("first(jaccl-fixed|auto)"), AnyPolicy(FirstOf{{JacclFirstMapped{}, Ranked{}}}));
  EXPECT_EQ(parsed("per-device(mlx5_0=validated:index=7;*=auto)"),
            AnyPolicy(PerDevice{{{"mlx5_0", ValidatedExplicit{.index = 7}}}, AnyPolicy(Ranked{})}));
}

// "jaccl" means one thing, the profile JACCL ships (JacclFirstMapped routed from the literal
// index 1). Where only a policy fits it used to mean JacclFirstMapped alone, which routes from its
// own pick and so is not JACCL: it is refused there, with a hint naming jaccl-fixed.
TEST(PolicySpec, JacclIsOnlyAProfile) {
  struct Case {
    const char* spec;
    std::size_t position;
  };
  for (const Case c : {Case{"jaccl", 0}, Case{"first(jaccl|auto)", 6}, Case{"per-device(*=jaccl)", 13}}) {
    for (const bool as_profile : {false, true}) {
      if (as_profile && c.position == 0) continue;  // the whole spec "jaccl" is the profile
      const result<Profile> whole = parse_profile(c.spec);
      const result<AnyPolicy> policy = parse_policy(c.spec);
      ASSERT_FALSE(as_profile ? static_cast<bool>(whole) : static_cast<bool>(policy)) << c.spec;
      const Error& e = as_profile ? whole.error() : policy.error();
      EXPECT_EQ(e.code, make_error_code(errc::invalid_policy_spec));
      EXPECT_EQ(e.detail.rfind("at position " + std::to_string(c.position) + ": ", 0), 0u) << e.detail;
      EXPECT_NE(e.detail.find("'jaccl' is a profile, not a policy"), std::string::npos) << e.detail;
      EXPECT_NE(e.detail.find("jaccl-fixed"), std::string::npos) << e.detail;
    }
  }
  // The name keeps its one meaning as a whole profile spec.
  EXPECT_EQ(parse_profile("jaccl").value(), profiles::jaccl());
  EXPECT_EQ(parse_profile("jaccl").value().source, SourceIndex::literal(1));
}

TEST(PolicySpec, SpacesAroundSeparatorsAreIgnored) {
  EXPECT_EQ(parsed(" first( validated:index=3 , type=roce_v2 | auto ) "),
            AnyPolicy(FirstOf{{ValidatedExplicit{.index = 3, .type = TypeFilter::roce_v2}, Ranked{}}}));
  EXPECT_EQ(parsed("per-device( mlx5_0 = ds4 ; * = auto )"),
            AnyPolicy(PerDevice{{{"mlx5_0", Ds4Scan{}}}, AnyPolicy(Ranked{})}));
}

TEST(PolicySpec, RoundTripsEveryPolicy) {
  const std::vector<AnyPolicy> policies{
      JacclFirstMapped{},
      JacclLegacyIndex1{},
      Ds4Scan{},
      Ds4ExplicitIndex{0},
      Ds4ExplicitIndex{4294967295u},
      ValidatedExplicit{.index = 4294967295u},
      Ds4Linux{},
      Ds4Linux{gid("::ffff:127.0.0.1"), -5},
      Ds4Linux{gid("fd93:16d3:59b6:10d:690:81ff:fe39:e3e8"), std::nullopt},
      ValidatedExplicit{.index = 3},
      ValidatedExplicit{255, TypeFilter::roce_v1, FamilyFilter::ipv6, true},
      ValidatedExplicit{1, TypeFilter::ib, FamilyFilter::any, false},
      Ranked{},
      Ranked{{.type = TypeFilter::ib}},
      Ranked{{.family = FamilyFilter::ipv6,
              .type = TypeFilter::roce_v1,
              .subnets = {VALUE_OR_FAIL(Cidr::parse("fd00::/8")), VALUE_OR_FAIL(Cidr::parse("10.0.0.0/8"))},
              .excludes = {VALUE_OR_FAIL(Cidr::parse("::ffff:10.1.0.0/112"))},
              .netdev = "enp105s0",
              .local = gid("fd93::1"),
              .require_local = true,
              .allow_link_local = true}},
      FirstOf{{ValidatedExplicit{.index = 3}, Ds4Linux{.index = 2}, Ranked{{.family = FamilyFilter::ipv4}}}},
      PerDevice{{{"mlx5_0", ValidatedExplicit{.index = 7}}, {"rdma_en1.x", Ds4Scan{}}}, std::nullopt},
      PerDevice{{}, AnyPolicy(FirstOf{{JacclLegacyIndex1{}, Ranked{}}})},
      FirstOf{{PerDevice{{{"a", Ranked{}}}, AnyPolicy(Ds4Scan{})}, FirstOf{{JacclFirstMapped{}}}}},
  };
  for (const AnyPolicy& p : policies) {
    auto back = parse_policy(p.spec());
    ASSERT_TRUE(back) << p.spec() << ": " << back.error().what();
    EXPECT_EQ(back.value(), p) << p.spec() << " -> " << back.value().spec();
    EXPECT_EQ(back.value().spec(), p.spec());
  }
}

struct BadSpec {
  const char* spec;
  std::size_t position;
  const char* expected;
};

TEST(PolicySpec, MalformedSpecsNamePositionAndExpectedToken) {
  const BadSpec cases[] = {
      {"", 0, "expected a policy name (jaccl-fixed, jaccl-legacy"},
      {"jacl", 0, "expected a policy name"},
      {"jaccl:x", 5, "expected no options (jaccl takes none)"},
      {"auto extra", 5, "expected the end of the spec, found 'extra'"},
      {"validated", 9, "expected the option 'index=N'"},
      {"validated:family=any", 20, "expected the option 'index=N'"},
      {"validated:idx=3", 10,
       "expected an option of validated (index, type, family, allow-link-local), found 'idx'"},
      {"validated:index=abc", 16, "expected an index 0..4294967295, found 'abc'"},
      {"validated:index=-1", 16, "expected an index 0..4294967295"},
      {"validated:index=4294967296", 16, "expected an index 0..4294967295"},
      {"validated:index=", 16, "expected a value for 'index'"},
      {"validated:index", 15, "expected '=' and an index"},
      {"validated:index=3,type=v3", 23, "expected a type (roce_v2, roce_v1, ib, any), found 'v3'"},
      {"validated:index=3,index=4", 18, "expected each option once ('index' is repeated)"},
      {"validated:index=3,allow-link-local=yes", 34, "takes no value"},
      {"validated:index=3,", 18, "expected an option of validated"},
      {"auto:family=ipv5", 12, "expected a family (ipv4, ipv6, any), found 'ipv5'"},
      {"auto:roce=ib", 10, "expected a RoCE version (v2, v1, any)"},
      {"auto:roce=v2,type=roce_v1", 13, "expected one of 'roce' or 'type', once"},
      {"auto:subnet=10.0.0.0/33", 12, "expected a CIDR prefix"},
      {"auto:local=10.0.0", 11, "expected an IPv4 or IPv6 address"},
      {"auto:require-local", 18, "expected the option 'local=ADDR'"},
      {"auto:bogus", 5, "expected an option of auto (family, roce, type, subnet, exclude, netdev, local"},
      {"ds4:index=x", 10, "expected an index 0..4294967295, found 'x'"},
      {"ds4:local=1.2.3.4", 4, "expected an option of ds4 (index)"},
      {"ds4-linux:index=2147483648", 16, "expected an int -2147483648..2147483647"},
      {"first auto", 5, "expected '(' after 'first'"},
      {"first(auto|jaccl-fixed", 22, "expected '|' or ')', found end of spec"},
      {"first(auto||jaccl)", 11, "expected a policy name"},
      {"first()", 6, "expected a policy name"},
      {"per-device()", 11, "expected a device name or '*'"},
      {"per-device(mlx5_0)", 17, "expected '=' after the device name"},
      {"per-device(mlx5_0=auto;mlx5_0=ds4)", 23, "expected each device once ('mlx5_0' is repeated)"},
      {"per-device(*=auto;*=ds4)", 18, "expected one default ('*' is repeated)"},
      {"per-device(a=auto,b=ds4)", 17, "expected ';' or ')', found ','"},
      {"per-device(a=auto:b=ds4)", 18, "expected an option of auto"},
      {"per-device(a=auto|b=ds4)", 17, "expected ';' or ')'"},
      {"auto@sgid=1", 4, "belongs to a profile"},
  };
  for (const BadSpec& c : cases) {
    auto r = parse_policy(c.spec);
    ASSERT_FALSE(r) << c.spec << " parsed as " << r.value().spec();
    EXPECT_EQ(r.error(), errc::invalid_policy_spec);
    const std::string want = "at position " + std::to_string(c.position) + ": ";
    EXPECT_EQ(r.error().detail.rfind(want, 0), 0u) << c.spec << ": " << r.error().detail;
    EXPECT_NE(r.error().detail.find(c.expected), std::string::npos) << c.spec << ": " << r.error().detail;
  }
}

TEST(ProfileSpec, SourceIndexRule) {
  EXPECT_EQ(VALUE_OR_FAIL(parse_profile("jaccl")), profiles::jaccl());
  EXPECT_EQ(VALUE_OR_FAIL(parse_profile("jaccl-fixed")), profiles::jaccl_fixed());
  EXPECT_EQ(VALUE_OR_FAIL(parse_profile("jaccl-fixed@sgid=1")), profiles::jaccl());
  EXPECT_EQ(VALUE_OR_FAIL(parse_profile("auto@sgid=3")), (Profile{Ranked{}, SourceIndex::literal(3)}));
  EXPECT_EQ(VALUE_OR_FAIL(parse_profile("first(jaccl-fixed|auto)")).source, SourceIndex::selected());
  const BadSpec cases[] = {
      {"jaccl@sgid=2", 5, "jaccl already routes from the literal index 1"},
      {"auto@sgid=256", 10, "expected an sgid_index 0..255 (a uint8_t)"},
      {"auto@sgid=", 10, "expected an sgid_index 0..255"},
      {"auto@index=1", 4, "expected '@sgid=N'"},
      {"auto@sgid=1 x", 12, "expected the end of the spec, found 'x'"},
  };
  for (const BadSpec& c : cases) {
    auto r = parse_profile(c.spec);
    ASSERT_FALSE(r) << c.spec;
    EXPECT_EQ(r.error(), errc::invalid_policy_spec);
    EXPECT_EQ(r.error().detail.rfind("at position " + std::to_string(c.position) + ": ", 0), 0u)
        << c.spec << ": " << r.error().detail;
    EXPECT_NE(r.error().detail.find(c.expected), std::string::npos) << c.spec << ": " << r.error().detail;
  }
}

TEST(ProfileSpec, RoundTripsEveryNamedProfileAndLiterals) {
  std::vector<Profile> all = profiles::all();
  all.push_back(profiles::ds4(7));
  all.push_back(profiles::ds4_linux(gid("::ffff:127.0.0.1"), 2));
  all.push_back(Profile{Ranked{}, SourceIndex::literal(0)});
  all.push_back(Profile{FirstOf{{JacclFirstMapped{}, Ranked{}}}, SourceIndex::literal(255)});
  all.push_back(Profile{JacclFirstMapped{}, SourceIndex::literal(2)});
  for (const Profile& p : all) {
    auto back = parse_profile(p.spec());
    ASSERT_TRUE(back) << p.spec() << ": " << back.error().what();
    EXPECT_EQ(back.value(), p) << p.spec();
  }
  EXPECT_EQ(profiles::jaccl().spec(), "jaccl");
  EXPECT_EQ((Profile{JacclFirstMapped{}, SourceIndex::literal(2)}.spec()), "jaccl-fixed@sgid=2");
}

}  // namespace
}  // namespace gidpolicy
