// gidpolicy/agreement.hpp: SourceIndex (which sgid_index an RTR routes from) and
// check_agreement() (does that slot hold the advertised GID?), every way a slot can fail to
// agree, and Agreement::to_result().
#include <gidpolicy/agreement.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace gidpolicy {
namespace {

using test::gid;

const Gid kMapped = gid("::ffff:10.0.0.5");
const Gid kLinkLocal = gid("fe80::1");

/// A 16-entry Ethernet port with the slots given.
GidTable table16(std::vector<GidEntry> entries, Holes holes = Holes::empty,
                 std::optional<std::uint32_t> len = 16) {
  return VALUE_OR_FAIL(
      GidTable::make(test::port("mlx5_0", LinkLayer::ethernet(), len), std::move(entries), holes));
}

// --- SourceIndex ---------------------------------------------------------------------------

static_assert(!SourceIndex::selected().is_literal());
static_assert(SourceIndex::selected().literal_index() == 0);
static_assert(SourceIndex::literal(1).is_literal());
static_assert(SourceIndex::literal(1).literal_index() == 1);
static_assert(SourceIndex::literal(1) == SourceIndex::literal(1));
static_assert(SourceIndex::literal(0) != SourceIndex::selected());  // literal 0 is still literal
static_assert(SourceIndex::literal(1) != SourceIndex::literal(2));

TEST(SourceIndex, SelectedRoutesFromTheChosenEntryAndLiteralFromItsIndex) {
  const Selection at3(GidEntry::valid(3, kMapped, GidType::roce_v2));
  const Selection at200(GidEntry::valid(200, kMapped, GidType::roce_v2));
  EXPECT_EQ(SourceIndex::selected().resolve(at3), 3);
  EXPECT_EQ(SourceIndex::selected().resolve(at200), 200);
  EXPECT_EQ(SourceIndex::literal(1).resolve(at3), 1);  // JACCL: whatever was chosen
  EXPECT_EQ(SourceIndex::literal(1).resolve(at200), 1);
  EXPECT_EQ(SourceIndex::literal(255).resolve(at3), 255);
}

TEST(SourceIndex, ToStringNamesTheRule) {
  EXPECT_EQ(SourceIndex::selected().to_string(), "selected");
  EXPECT_EQ(SourceIndex::literal(1).to_string(), "literal(1)");
  EXPECT_EQ(SourceIndex::literal(0).to_string(), "literal(0)");
  EXPECT_EQ(SourceIndex::literal(255).to_string(), "literal(255)");
}

// --- check_agreement: agreeing ---------------------------------------------------------------

TEST(CheckAgreement, AgreesWhenTheSlotHoldsTheAdvertisedGid) {
  const GidTable t = table16({GidEntry::valid(0, kLinkLocal, GidType::roce_v2),
                              GidEntry::valid(3, kMapped, GidType::roce_v2, "eth0")});
  const Agreement a = check_agreement(t, kMapped, 3);
  EXPECT_TRUE(a.agrees);
  EXPECT_EQ(a.sgid_index, 3u);
  EXPECT_EQ(a.advertised, kMapped);
  ASSERT_TRUE(a.at_index.has_value());
  EXPECT_EQ(a.at_index->index, 3u);
  EXPECT_EQ(a.at_index->gid, kMapped);
  EXPECT_EQ(a.advertised_at, 3u);
  EXPECT_EQ(a.explanation, "sgid_index 3 holds the advertised GID ::ffff:10.0.0.5 (roce_v2) on eth0");
  EXPECT_OK(a.to_result());
}

TEST(CheckAgreement, ComparesBytesOnlyNotTheGidType) {
  // The peer learns 16 bytes; routing from the v1 twin of the advertised address still agrees.
  const GidTable t = test::nccl_769();
  const Gid mapped = gid("::ffff:200.0.209.6");
  EXPECT_TRUE(check_agreement(t, mapped, 2).agrees);           // roce_v1
  EXPECT_TRUE(check_agreement(t, mapped, 3).agrees);           // roce_v2
  EXPECT_EQ(check_agreement(t, mapped, 3).advertised_at, 2u);  // the lowest index holding it
}

// --- check_agreement: every way not to agree -------------------------------------------------

TEST(CheckAgreement, OtherGidAtTheSlotNamesBothAndWhereTheAdvertisedOneIs) {
  const Agreement a = check_agreement(test::nccl_769(), gid("::ffff:200.0.209.6"), 1);
  EXPECT_FALSE(a.agrees);
  ASSERT_TRUE(a.at_index.has_value());
  EXPECT_EQ(a.at_index->gid, gid("fe80::ac0:ebff:feda:1cfb"));
  EXPECT_EQ(a.advertised_at, 2u);
  EXPECT_EQ(a.explanation,
            "sgid_index 1 holds fe80::ac0:ebff:feda:1cfb (roce_v2), not the advertised GID; the advertised "
            "GID ::ffff:200.0.209.6 is at indices 2 (roce_v1) and 3 (roce_v2)");
}

TEST(CheckAgreement, AdvertisedGidHeldNowhere) {
  const GidTable t = table16({GidEntry::valid(0, kLinkLocal, GidType::roce_v2)});
  const Agreement a = check_agreement(t, kMapped, 0);
  EXPECT_FALSE(a.agrees);
  EXPECT_FALSE(a.advertised_at.has_value());
  EXPECT_EQ(a.explanation,
            "sgid_index 0 holds fe80::1 (roce_v2), not the advertised GID; no entry holds the advertised "
            "GID ::ffff:10.0.0.5");
}

TEST(CheckAgreement, EmptySlotNeverAgrees) {
  const Agreement a = check_agreement(test::macmini(), gid("::ffff:10.99.0.3"), 1);
  EXPECT_FALSE(a.agrees);
  ASSERT_TRUE(a.at_index.has_value());  // the table lists the empty slot
  EXPECT_EQ(a.at_index->state, EntryState::empty);
  EXPECT_EQ(a.explanation, "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2");
}

TEST(CheckAgreement, UnlistedSlotOfAFullListingIsEmpty) {
  // Holes::empty: the source lists every non-empty slot, so an absent index is an empty one.
  const GidTable t = table16(
      {GidEntry::valid(0, kLinkLocal, GidType::roce_v2), GidEntry::valid(2, kMapped, GidType::roce_v2)});
  const Agreement a = check_agreement(t, kMapped, 1);
  EXPECT_FALSE(a.agrees);
  EXPECT_FALSE(a.at_index.has_value());
  EXPECT_EQ(a.explanation, "sgid_index 1 is empty; the advertised GID ::ffff:10.0.0.5 is at index 2");
}

TEST(CheckAgreement, UnlistedSlotOfAPartialListingWasNotPrinted) {
  // Holes::not_shown (ibv_devinfo): the slot may hold something; it still cannot be shown to agree.
  const GidTable t = table16(
      {GidEntry::valid(0, kLinkLocal, GidType::roce_v2), GidEntry::valid(2, kMapped, GidType::roce_v2)},
      Holes::not_shown);
  const Agreement a = check_agreement(t, kMapped, 1);
  EXPECT_FALSE(a.agrees);
  EXPECT_FALSE(a.at_index.has_value());
  EXPECT_EQ(a.explanation,
            "sgid_index 1 was not printed by the source; the advertised GID ::ffff:10.0.0.5 is at index 2");
}

TEST(CheckAgreement, UnreadableSlotNamesTheReadError) {
  const std::error_code eio(EIO, std::generic_category());
  const GidTable t = table16({GidEntry::unreadable(1, eio), GidEntry::valid(2, kMapped, GidType::roce_v2)});
  const Agreement a = check_agreement(t, kMapped, 1);
  EXPECT_FALSE(a.agrees);
  ASSERT_TRUE(a.at_index.has_value());
  EXPECT_EQ(a.at_index->state, EntryState::unreadable);
  EXPECT_EQ(a.explanation, "sgid_index 1 could not be read (" + eio.message() +
                               "); the advertised GID ::ffff:10.0.0.5 is at index 2");
}

TEST(CheckAgreement, ZeroGidSlotNeverAgreesNotEvenWithAnAdvertisedZeroGid) {
  const GidTable t = test::ds4_linux_unit();  // index 4 is listed as valid but holds ::
  const Agreement a = check_agreement(t, Gid{}, 4);
  EXPECT_FALSE(a.agrees);
  ASSERT_TRUE(a.at_index.has_value());
  EXPECT_TRUE(a.at_index->gid.is_zero());
  EXPECT_FALSE(a.advertised_at.has_value());  // the zero GID is never "found"
  EXPECT_EQ(a.explanation,
            "sgid_index 4 holds the zero GID; the advertised GID is the zero GID (an empty slot was "
            "advertised)");
  const Agreement mapped = check_agreement(t, gid("::ffff:127.0.0.2"), 4);
  EXPECT_FALSE(mapped.agrees);
  EXPECT_EQ(mapped.explanation,
            "sgid_index 4 holds the zero GID; the advertised GID ::ffff:127.0.0.2 is at index 2");
}

TEST(CheckAgreement, AdvertisedZeroGidAtAnEmptySlotDoesNotAgree) {
  const Agreement a = check_agreement(test::macmini(), Gid{}, 1);
  EXPECT_FALSE(a.agrees);
  EXPECT_EQ(a.explanation,
            "sgid_index 1 is empty; the advertised GID is the zero GID (an empty slot was advertised)");
}

TEST(CheckAgreement, IndexAtOrBeyondTheTableLengthIsOutOfRange) {
  const GidTable t = table16({GidEntry::valid(2, kMapped, GidType::roce_v2)});
  for (std::uint32_t index : {16u, 17u, 255u}) {
    const Agreement a = check_agreement(t, kMapped, index);
    EXPECT_FALSE(a.agrees) << index;
    EXPECT_FALSE(a.at_index.has_value()) << index;
    EXPECT_EQ(a.sgid_index, index);
    EXPECT_EQ(a.explanation,
              "sgid_index " + std::to_string(index) +
                  " is not below gid_tbl_len 16; the advertised GID ::ffff:10.0.0.5 is at index 2");
  }
  // Without gid_tbl_len (show_gids), the bound is one past the highest listed index.
  const GidTable listed =
      table16({GidEntry::valid(2, kMapped, GidType::roce_v2)}, Holes::empty, std::nullopt);
  EXPECT_EQ(
      check_agreement(listed, kMapped, 3).explanation,
      "sgid_index 3 is not below the entries listed: 3; the advertised GID ::ffff:10.0.0.5 is at index 2");
  EXPECT_TRUE(check_agreement(listed, kMapped, 2).agrees);
}

TEST(CheckAgreement, IndexAbove255NeverAgreesEvenWhenItHoldsTheAdvertisedGid) {
  // grh.sgid_index is a uint8_t: 257 would route from slot 1.
  const GidTable t = table16(
      {GidEntry::valid(1, kLinkLocal, GidType::roce_v2), GidEntry::valid(257, kMapped, GidType::roce_v2)},
      Holes::empty, 512);
  const Agreement a = check_agreement(t, kMapped, 257);
  EXPECT_FALSE(a.agrees);
  EXPECT_EQ(a.sgid_index, 257u);
  EXPECT_FALSE(a.at_index.has_value());
  EXPECT_EQ(a.advertised_at, 257u);
  EXPECT_EQ(a.explanation,
            "sgid_index 257 does not fit the uint8_t grh.sgid_index: it would wrap to 1; the advertised GID "
            "::ffff:10.0.0.5 is at index 257");
  EXPECT_FALSE(check_agreement(t, kMapped, 256).agrees);
  EXPECT_NE(check_agreement(t, kMapped, 256).explanation.find("would wrap to 0"), std::string::npos);
}

TEST(CheckAgreement, ToResultIsDisagreementWithTheExplanation) {
  const Agreement a = check_agreement(test::macmini(), gid("::ffff:10.99.0.3"), 1);
  const result<void> r = a.to_result();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::disagreement);
  EXPECT_EQ(r.error().detail, a.explanation);
  EXPECT_EQ(r.error().what(), std::error_code(errc::disagreement).message() + ": " + a.explanation);
}

}  // namespace
}  // namespace gidpolicy
