// The success path without a trace allocates nothing per entry: selecting on a 256-entry table
// costs exactly as many allocations as on a 4-entry one. Counted with a replaced global
// operator new that only counts while a test enables it.
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

namespace {
thread_local bool g_counting = false;
thread_local std::size_t g_allocations = 0;
}  // namespace

// Every non-aligned form is replaced, so allocation and release always pair malloc with free
// (the sanitizers check that pairing); the aligned forms are left alone and pair among themselves.
namespace {
void* counted_malloc(std::size_t n) noexcept {
  if (g_counting) ++g_allocations;
  return std::malloc(n == 0 ? 1 : n);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace gidpolicy {
namespace {

/// `n` link-local/v1 entries that every policy below must look at, then the one it picks.
GidTable table_with(std::uint32_t n) {
  std::vector<GidEntry> e;
  for (std::uint32_t i = 0; i < n; ++i)
    e.push_back(
        GidEntry::valid(i, VALUE_OR_FAIL(Gid::parse("fe80::" + std::to_string(i + 1))), GidType::roce_v1));
  e.push_back(GidEntry::valid(n, Gid::ipv4_mapped(0x0a000001u), GidType::roce_v2));
  return VALUE_OR_FAIL(GidTable::make(test::port("x", LinkLayer::ethernet(), 256), std::move(e)));
}

template <class P>
std::size_t allocations(const P& p, const GidTable& t) {
  g_allocations = 0;
  g_counting = true;
  auto r = p.select(t);
  g_counting = false;
  EXPECT_TRUE(r);
  return g_allocations;
}

TEST(PolicyAllocations, UntracedSuccessDoesNotAllocatePerEntry) {
  const GidTable small = table_with(3), big = table_with(250);
  EXPECT_EQ(allocations(JacclFirstMapped{}, small), allocations(JacclFirstMapped{}, big));
  EXPECT_EQ(allocations(Ds4Scan{}, small), allocations(Ds4Scan{}, big));
  EXPECT_EQ(allocations(Ranked{}, small), allocations(Ranked{}, big));
  EXPECT_EQ(allocations(Ds4Linux{}, small), allocations(Ds4Linux{}, big));
  EXPECT_EQ(allocations(AnyPolicy(Ranked{}), small), allocations(AnyPolicy(Ranked{}), big));
  // A trace, when asked for, does record every entry: the counter does see per-entry work.
  g_allocations = 0;
  g_counting = true;
  auto traced = Ranked{}.select(big, {.trace = true});
  g_counting = false;
  EXPECT_GT(g_allocations, 250u);
  ASSERT_OK(traced);
  EXPECT_EQ(traced.value().trace.attempts.at(0).steps.size(), 251u);
}

/// A first(...) some of whose alternatives fail on `t` before one succeeds: each failure carries
/// its error and trace (allocated), which first() then drops.
bool an_alternative_fails(const AnyPolicy& p, const GidTable& t) {
  const auto* f = p.target<FirstOf>();
  if (!f) return false;
  for (const AnyPolicy& alt : f->alternatives)
    if (!alt.select(t) || an_alternative_fails(alt, t)) return true;
  return false;
}

// Every registry row's examples (registry.hpp): an untraced success allocates nothing at all,
// on a short table as on a 256-entry one, whichever policy a new row adds. Tables where an
// example fails are skipped (a failure records its trace), and so is a success of first(...)
// after a failed alternative, for the same reason; every row must succeed somewhere.
TEST(PolicyAllocations, EveryRegistryExampleSelectsUntracedWithoutAllocating) {
  std::vector<std::pair<std::string, GidTable>> tables = test::all_example_tables();
  tables.emplace_back("256 entries", table_with(250));
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    std::size_t successes = 0;
    for (std::string_view ex : row.examples) {
      const Profile p = VALUE_OR_FAIL(parse_profile(ex));
      for (const auto& [name, table] : tables) {
        if (!p.policy.select(table) || an_alternative_fails(p.policy, table)) continue;
        ++successes;
        EXPECT_EQ(allocations(p.policy, table), 0u) << ex << " on " << name;
      }
    }
    EXPECT_GT(successes, 0u) << row.name << ": no example succeeds on any table";
  }
}

}  // namespace
}  // namespace gidpolicy
