// The example tables as users paste them (examples/tables/*), read with the format readers:
// every strategy and profile must decide exactly as on the hand-built tables the other policy
// tests use, so those tests speak for the real files.
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>

#include <map>

namespace gidpolicy {
namespace {

/// What a decision was, comparable: "ok 3 -> 3 agrees" or "err <errc message>".
std::string outcome(const result<Plan>& r) {
  if (!r) return "err " + r.error().code.message();
  const Plan& p = r.value();
  return "ok " + std::to_string(p.selection.entry.index) + " -> " + std::to_string(p.sgid_index) +
         (p.agrees() ? " agrees" : " disagrees");
}

std::vector<Profile> every_behaviour() {
  std::vector<Profile> out = profiles::all();
  for (std::uint32_t i : {0u, 1u, 2u, 3u, 5u, 7u}) {
    out.push_back(profiles::ds4(i));
    out.push_back(Profile{ValidatedExplicit{.index = i}});
    out.push_back(
        Profile{ValidatedExplicit{.index = i, .type = TypeFilter::roce_v2, .family = FamilyFilter::any}});
    out.push_back(profiles::ds4_linux(std::nullopt, static_cast<std::int32_t>(i)));
  }
  out.push_back(profiles::automatic({.allow_link_local = true}));
  out.push_back(profiles::automatic({.family = FamilyFilter::ipv6}));
  return out;
}

TEST(ExampleFiles, EveryFileReadsToTheHandBuiltTablesAndDecidesTheSame) {
  std::map<std::string, GidTable> hand;
  for (auto& [name, t] : test::all_example_tables()) hand.emplace(name, t);
  std::size_t compared = 0;
  for (const auto& dirent : std::filesystem::directory_iterator(test::example_tables_dir())) {
    const std::string file = dirent.path().filename().string();
    if (dirent.path().extension() == ".md") continue;
    auto tables = formats::read_tables_file(dirent.path());
    ASSERT_TRUE(tables) << file << ": " << tables.error().what();
    for (const GidTable& t : tables.value()) {
      auto it = hand.find(file);
      if (it == hand.end()) it = hand.find(file + "#" + t.port().device);
      ASSERT_NE(it, hand.end()) << file << " " << t.port().device << ": no hand-built twin";
      const GidTable& h = it->second;
      EXPECT_EQ(t.port().device, h.port().device);
      EXPECT_EQ(t.port().link_layer, h.port().link_layer) << file;
      EXPECT_EQ(t.port().gid_tbl_len, h.port().gid_tbl_len) << file;
      EXPECT_EQ(t.holes(), h.holes()) << file;
      ASSERT_EQ(t.size(), h.size()) << file;
      for (std::size_t i = 0; i < t.size(); ++i) {
        EXPECT_EQ(t.entries()[i].index, h.entries()[i].index) << file;
        EXPECT_EQ(t.entries()[i].gid, h.entries()[i].gid) << file;
        EXPECT_EQ(t.entries()[i].type, h.entries()[i].type) << file;
        EXPECT_EQ(t.entries()[i].state, h.entries()[i].state) << file;
      }
      for (const Profile& p : every_behaviour())
        EXPECT_EQ(outcome(p.plan(t)), outcome(p.plan(h)))
            << file << " " << t.port().device << " " << p.spec();
      hand.erase(it);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 11u);
  EXPECT_TRUE(hand.empty()) << hand.begin()->first << " has no file";
}

TEST(ExampleFiles, AcceptanceCasesFromTheFiles) {
  const auto dir = test::example_tables_dir();
  auto nccl = VALUE_OR_FAIL(formats::read_tables_file(dir / "nccl-769.devinfo.txt")).at(0);
  EXPECT_EQ(outcome(profiles::jaccl().plan(nccl)), "ok 2 -> 1 disagrees");  // a RoCE v1 entry, routed from 1
  EXPECT_EQ(VALUE_OR_FAIL(profiles::jaccl().plan(nccl)).selection.entry.type, GidType::roce_v1);
  EXPECT_EQ(outcome(profiles::automatic().plan(nccl)), "ok 3 -> 3 agrees");
  auto tb = VALUE_OR_FAIL(formats::read_tables_file(dir / "apple-mlx4191-rdma_en3-noipv4.devinfo.txt")).at(0);
  auto j = profiles::jaccl().plan(tb);
  EXPECT_EQ(j.error(), errc::no_ipv4_mapped_gid);
  EXPECT_NE(j.error().detail.find("assign an IPv4 address"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(auto pod, formats::read_tables_file(dir / "nccl-1573-pod.show_gids.txt"));
  ASSERT_EQ(pod.size(), 2u);
  for (const GidTable& t : pod) EXPECT_EQ(outcome(profiles::automatic().plan(t)), "ok 7 -> 7 agrees");
  auto mac = VALUE_OR_FAIL(formats::read_tables_file(dir / "macmini-mapped-at-2.json")).at(0);
  EXPECT_EQ(outcome(profiles::jaccl().plan(mac)), "ok 2 -> 1 disagrees");
  EXPECT_EQ(outcome(profiles::jaccl_fixed().plan(mac)), "ok 2 -> 2 agrees");
  auto ds4 = VALUE_OR_FAIL(formats::read_tables_file(dir / "ds4-linux-unit.json")).at(0);
  EXPECT_EQ(outcome(profiles::ds4_linux(VALUE_OR_FAIL(parse_address("127.0.0.1"))).plan(ds4)),
            "ok 3 -> 3 agrees");
}

TEST(Filters, Names) {
  EXPECT_EQ(family_filter_from_string("IPv4"), FamilyFilter::ipv4);
  EXPECT_EQ(family_filter_from_string("inet6"), FamilyFilter::ipv6);
  EXPECT_FALSE(family_filter_from_string("ipv5"));
  EXPECT_EQ(type_filter_from_string("RoCE v2"), TypeFilter::roce_v2);
  EXPECT_EQ(type_filter_from_string("v1"), TypeFilter::roce_v1);
  EXPECT_EQ(type_filter_from_string("IB"), TypeFilter::ib);
  EXPECT_FALSE(type_filter_from_string("v3"));
  for (auto f : {FamilyFilter::any, FamilyFilter::ipv4, FamilyFilter::ipv6})
    EXPECT_EQ(family_filter_from_string(to_string(f)), f);
  for (auto t : {TypeFilter::any, TypeFilter::ib, TypeFilter::roce_v1, TypeFilter::roce_v2})
    EXPECT_EQ(type_filter_from_string(to_string(t)), t);
  EXPECT_TRUE(matches(FamilyFilter::ipv6, test::gid("fe80::1")));
  EXPECT_FALSE(matches(FamilyFilter::ipv6, test::gid("::ffff:1.2.3.4")));
  EXPECT_FALSE(matches(TypeFilter::roce_v2, GidType::unknown));
  EXPECT_TRUE(link_local_is_unroutable(LinkLayer::from_raw(77)));
  EXPECT_FALSE(link_local_is_unroutable(LinkLayer::infiniband()));
}

}  // namespace
}  // namespace gidpolicy
