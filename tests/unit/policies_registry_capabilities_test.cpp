// What callers ask of any policy is answered by the policy itself (SelectionPolicy::peers(),
// picks_unchecked(), policy.hpp) or by its registry row (BuiltinSpec::takes_peer, registry.hpp),
// never by a list of policy types kept elsewhere: peers_of() (network.hpp) routes a policy it
// has never heard of, combinators pass their alternatives' answers on, and `select --peer`
// (spec_with_peer()) asks the rows. Every row's examples are checked against their own text.
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>

#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

PeerAddress peer(std::string_view text) { return PeerAddress::parse(text).value(); }

/// A policy no part of the library knows: it routes to a peer of its own.
struct RoutesToItsPeer {
  PeerAddress to;
  [[nodiscard]] result<Selection> select(const GidTable& /*table*/, SelectOptions /*run*/ = {}) const {
    return fail(errc::no_route, "test policy");
  }
  [[nodiscard]] std::string spec() const { return "routes-to-its-peer"; }
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {to}; }
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  friend bool operator==(const RoutesToItsPeer&, const RoutesToItsPeer&) = default;
};

/// Another: it takes a slot without looking at it.
struct TakesAnySlot {
  [[nodiscard]] result<Selection> select(const GidTable& /*table*/, SelectOptions /*run*/ = {}) const {
    return fail(errc::no_route, "test policy");
  }
  [[nodiscard]] std::string spec() const { return "takes-any-slot"; }
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  [[nodiscard]] bool picks_unchecked() const noexcept { return true; }
  friend bool operator==(const TakesAnySlot&, const TakesAnySlot&) = default;
};

static_assert(SelectionPolicy<RoutesToItsPeer>);
static_assert(SelectionPolicy<TakesAnySlot>);

// peers_of() had a switch over auto, rdma_cm and libfabric: a new policy naming a peer was never
// routed. Now the policy answers, nested or not.
TEST(RegistryCapabilities, PeersOfRoutesAPolicyItHasNeverHeardOf) {
  const AnyPolicy alone = RoutesToItsPeer{peer("10.7.0.9")};
  EXPECT_EQ(peers_of(alone), std::vector<PeerAddress>{peer("10.7.0.9")});
  const AnyPolicy nested = FirstOf{{Ds4Scan{}, RoutesToItsPeer{peer("10.7.0.9")},
                                    RoutesToItsPeer{peer("10.7.0.8")}, RoutesToItsPeer{peer("10.7.0.9")}}};
  EXPECT_EQ(peers_of(nested), (std::vector<PeerAddress>{peer("10.7.0.9"), peer("10.7.0.8")}));
  PerDevice per;
  per.by_device.emplace("mlx5_1", RoutesToItsPeer{peer("10.7.1.1")});
  per.by_device.emplace("mlx5_0", Ranked{});
  per.fallback = RoutesToItsPeer{peer("10.7.2.2")};
  EXPECT_EQ(peers_of(per), (std::vector<PeerAddress>{peer("10.7.1.1"), peer("10.7.2.2")}));
}

TEST(RegistryCapabilities, PicksUncheckedIsThePoliciesOwnAnswer) {
  EXPECT_TRUE(AnyPolicy(TakesAnySlot{}).picks_unchecked());
  EXPECT_FALSE(AnyPolicy(RoutesToItsPeer{peer("10.7.0.9")}).picks_unchecked());
  EXPECT_TRUE(AnyPolicy(FirstOf{{Ranked{}, TakesAnySlot{}}}).picks_unchecked());
  EXPECT_FALSE(AnyPolicy(FirstOf{{Ranked{}, Ds4Scan{}}}).picks_unchecked());
  PerDevice per;
  per.by_device.emplace("mlx5_0", Ranked{});
  EXPECT_FALSE(AnyPolicy(per).picks_unchecked());
  per.fallback = TakesAnySlot{};
  EXPECT_TRUE(AnyPolicy(per).picks_unchecked());
}

// Every example of every row: its peers() are exactly the peer= it writes (none without one).
TEST(RegistryCapabilities, EveryExamplesPeersAreThePeerItNames) {
  for (const BuiltinSpec& row : kBuiltinSpecs)
    for (std::string_view ex : row.examples) {
      const auto p = parse_profile(ex);
      ASSERT_TRUE(p) << ex << ": " << p.error().what();
      std::vector<PeerAddress> want;
      for (std::size_t at = ex.find("peer="); at != std::string_view::npos; at = ex.find("peer=", at + 1)) {
        const std::size_t from = at + 5;
        const std::size_t to = ex.find_first_of(",|;)@", from);
        want.push_back(
            peer(ex.substr(from, to == std::string_view::npos ? std::string_view::npos : to - from)));
      }
      EXPECT_EQ(p.value().policy.peers(), want) << ex;
    }
}

// The stacks that read an index unchecked say so; every other example's policy checks its slot.
TEST(RegistryCapabilities, EveryExampleSaysWhetherItPicksUnchecked) {
  const std::vector<std::string_view> unchecked = {
      "jaccl-legacy", "ds4:index=3",        "ds4:index=300",
      "nccl",         "nccl:gid_index=3",   "nccl:family=AF_INET6,range=fd00::/8,roce_version=1",
      "perftest",     "perftest:x=3",       "perftest:ipv6",
      "libfabric",    "libfabric:gid_idx=2"};
  for (const BuiltinSpec& row : kBuiltinSpecs)
    for (std::string_view ex : row.examples) {
      const auto p = parse_profile(ex);
      ASSERT_TRUE(p) << ex;
      const bool want = std::find(unchecked.begin(), unchecked.end(), ex) != unchecked.end();
      EXPECT_EQ(p.value().policy.picks_unchecked(), want) << ex;
    }
}

// A row with a peer= option answers `--peer` too: a new such row without takes_peer fails here
// (and its takes_peer is the row's own, not a list in the CLI). A row without one takes none.
TEST(RegistryCapabilities, EveryRowWithAPeerOptionTakesAPeer) {
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    if (row.kind == SpecKind::combinator) {
      EXPECT_EQ(row.takes_peer, nullptr) << row.name << ": its alternatives name their peers";
      continue;
    }
    const bool has_peer = std::any_of(row.options.begin(), row.options.end(),
                                      [](const SpecOptionInfo& o) { return o.key == "peer"; });
    EXPECT_EQ(has_peer, row.takes_peer != nullptr) << row.name;
  }
  EXPECT_EQ(builtin_specs_taking_peer(), "auto, libfabric, rdma_cm");
}

TEST(RegistryCapabilities, SpecWithPeerAsksTheRow) {
  const std::string p = "10.0.0.9";
  EXPECT_EQ(spec_with_peer("auto", p), "auto:peer=10.0.0.9");
  EXPECT_EQ(spec_with_peer("auto:family=ipv4,roce=v2", p), "auto:family=ipv4,roce=v2,peer=10.0.0.9");
  EXPECT_EQ(spec_with_peer("auto:local=10.0.0.2", p), "auto:local=10.0.0.2,peer=10.0.0.9");
  EXPECT_EQ(spec_with_peer("auto:peer=10.0.0.8", p), std::nullopt);
  EXPECT_EQ(spec_with_peer("rdma_cm", p), "rdma_cm:peer=10.0.0.9");
  EXPECT_EQ(spec_with_peer("rdma_cm:mode=v1", p), "rdma_cm:mode=v1,peer=10.0.0.9");
  EXPECT_EQ(spec_with_peer("rdma_cm:local=10.0.0.2", p), std::nullopt);
  EXPECT_EQ(spec_with_peer("libfabric", p), std::nullopt);
  EXPECT_EQ(spec_with_peer("libfabric:gid_idx=2", p), std::nullopt);
  EXPECT_EQ(spec_with_peer("libfabric:ep=msg", p), "libfabric:ep=msg,peer=10.0.0.9");
  EXPECT_EQ(spec_with_peer("libfabric:ep=msg,local=10.0.0.2", p), std::nullopt);
  EXPECT_EQ(spec_with_peer("auto@sgid=2", p), "auto:peer=10.0.0.9@sgid=2");
  for (const char* other :
       {"ds4", "jaccl", "nccl:gid_index=3", "first(auto|ds4)", "per-device(*=auto)", "nope"})
    EXPECT_EQ(spec_with_peer(other, p), std::nullopt) << other;
}

// What spec_with_peer() writes parses, and routes to the peer it was given.
TEST(RegistryCapabilities, SpecWithPeerWritesASpecThatRoutesThere) {
  for (const std::string_view spec :
       {"auto", "auto:family=ipv4", "rdma_cm", "rdma_cm:mode=v1", "libfabric:ep=msg"}) {
    const auto written = spec_with_peer(spec, "fe80::1%en3");
    ASSERT_TRUE(written) << spec;
    const auto p = parse_policy(*written);
    ASSERT_TRUE(p) << *written << ": " << p.error().what();
    EXPECT_EQ(p.value().peers(), std::vector<PeerAddress>{peer("fe80::1%en3")}) << *written;
  }
}

}  // namespace
}  // namespace gidpolicy
