// The doctor's findings are one table (src/doctor_findings.hpp) over FindingCode (doctor.hpp):
// every code has a row with a name that round-trips, the names are distinct, findings are ranked
// in the table's order within a severity, and docs/doctor.md's table of the checks is the one the
// table prints (scripts/update-docs writes it). The rows' completeness and order are also
// checked when the library compiles (static_asserts beside the table); these tests check what a
// reader of the JSON and the docs sees.
#include <gidpolicy/doctor.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

std::vector<FindingCode> every_code() {
  std::vector<FindingCode> out;
  for (std::size_t i = 0; i < kFindingCodeCount; ++i) out.push_back(static_cast<FindingCode>(i));
  return out;
}

TEST(DoctorFindings, EveryCodeHasARowWhoseNameRoundTrips) {
  std::set<std::string_view> names;
  for (const FindingCode c : every_code()) {
    const std::string_view name = to_string(c);
    EXPECT_FALSE(name.empty()) << static_cast<int>(c);
    EXPECT_NE(name, "unknown") << static_cast<int>(c);
    EXPECT_EQ(finding_code_from_string(name), c) << name;
    EXPECT_TRUE(names.insert(name).second) << "two codes are named " << name;
  }
  EXPECT_EQ(names.size(), kFindingCodeCount);
  // The names the JSON documents have carried since 0.1.0 (docs/cli.md: a contract).
  EXPECT_EQ(to_string(FindingCode::no_answer), "no_answer");
  EXPECT_EQ(to_string(FindingCode::no_ipv4), "no_ipv4");
  EXPECT_EQ(to_string(FindingCode::rdma_state_unknown), "rdma_state_unknown");
}

TEST(DoctorFindings, AnythingElseIsNoCode) {
  EXPECT_EQ(finding_code_from_string("no_ipv"), std::nullopt);
  EXPECT_EQ(finding_code_from_string("NO_IPV4"), std::nullopt);
  EXPECT_EQ(finding_code_from_string(""), std::nullopt);
  EXPECT_EQ(finding_code_from_string("unknown"), std::nullopt);
  // A value outside the enum (a cast, a corrupt byte) is named "unknown" and blocks.
  const auto outside = static_cast<FindingCode>(kFindingCodeCount);
  EXPECT_EQ(to_string(outside), "unknown");
  EXPECT_EQ(severity_of(outside), Severity::blocker);
}

TEST(DoctorFindings, NamesListsEveryCodeInRankOrder) {
  std::string want;
  for (const FindingCode c : every_code()) want += (want.empty() ? "" : ", ") + std::string(to_string(c));
  EXPECT_EQ(finding_code_names(), want);
  EXPECT_EQ(finding_code_names().rfind(
                "no_answer, device_error, verbs_library_missing, "
                "no_kernel_rdma_device, verbs_provider_missing, macos_without_rdma, rdma_disabled, ",
                0),
            0u);
}

TEST(DoctorFindings, SeveritiesAreTheTables) {
  EXPECT_EQ(severity_of(FindingCode::no_ipv4), Severity::blocker);
  EXPECT_EQ(severity_of(FindingCode::peer_off_rdma), Severity::warning);
  EXPECT_EQ(severity_of(FindingCode::rank_unknown), Severity::warning);
  EXPECT_EQ(severity_of(FindingCode::mtu), Severity::warning);
  EXPECT_EQ(severity_of(FindingCode::bridge_unknown), Severity::note);
  EXPECT_EQ(severity_of(FindingCode::rdma_state_unknown), Severity::note);
}

// Every code handed in last-first comes out blockers, warnings, notes, each in the table's
// order: the rank is the row's position, for every row (a code the ranking did not know would
// have been sorted last).
TEST(DoctorFindings, RankingFollowsTheTable) {
  DoctorInput in;
  const std::vector<FindingCode> codes = every_code();
  for (auto it = codes.rbegin(); it != codes.rend(); ++it)
    in.extra.push_back(Finding{severity_of(*it), *it, "", 0, "", std::string(to_string(*it)), "why", {}});
  const DoctorReport r = examine(in);
  std::vector<std::string> want;
  for (const Severity s : {Severity::blocker, Severity::warning, Severity::note})
    for (const FindingCode c : codes)
      if (severity_of(c) == s) want.emplace_back(to_string(c));
  std::vector<std::string> got;
  for (const Finding& f : r.findings) got.emplace_back(to_string(f.code));
  EXPECT_EQ(got, want);
  ASSERT_EQ(r.findings.size(), kFindingCodeCount);
}

// What examine() makes carries its row's severity (the caller no longer says it).
TEST(DoctorFindings, MadeFindingsCarryTheirRowsSeverity) {
  DoctorInput in;
  in.interfaces_known = false;
  in.interfaces_error = "getifaddrs: EPERM";
  in.rdma_state_error = "rdma_ctl: no answer within 2 s";
  in.unknown_rank = DoctorInput::UnknownRank{"hosts.json", "hostfile", "node7"};
  const DoctorReport r = examine(in);
  ASSERT_EQ(r.findings.size(), 3u);
  for (const Finding& f : r.findings) EXPECT_EQ(f.severity, severity_of(f.code)) << to_string(f.code);
  EXPECT_EQ(r.findings[0].code, FindingCode::interfaces_unknown);
  EXPECT_EQ(r.findings[1].code, FindingCode::rank_unknown);
  EXPECT_EQ(r.findings[2].code, FindingCode::rdma_state_unknown);
}

// rank_unknown is the doctor's now (it was the CLI's own Finding): its text and its fix.
TEST(DoctorFindings, UnknownRankSaysWhichFileAndHowToGiveTheRank) {
  DoctorInput in;
  in.unknown_rank = DoctorInput::UnknownRank{"devices.json", "jaccl-devices", "mac3"};
  const DoctorReport r = examine(in);
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.code, FindingCode::rank_unknown);
  EXPECT_EQ(f.severity, Severity::warning);
  EXPECT_EQ(f.text,
            "devices.json names none of this host's addresses or its name (mac3): its devices and peers are "
            "not checked");
  ASSERT_EQ(f.fix.size(), 1u);
  EXPECT_EQ(
      f.fix[0],
      "gidpolicy doctor --jaccl-devices devices.json --rank N   # N: this host's rank (or set MLX_RANK)");
  EXPECT_TRUE(r.ready());  // a warning
}

// ---- docs/doctor.md's table ----------------------------------------------------------------

std::filesystem::path repo_root() {
  // GIDPOLICY_TEST_DATA_DIR is <repo>/tests/data.
  return std::filesystem::path(GIDPOLICY_TEST_DATA_DIR).parent_path().parent_path();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The page's marked block, marker lines included ("" when the markers are missing).
std::string marked_block(const std::string& text) {
  const auto begin = text.find("doctor-findings:begin");
  const auto end = text.find("doctor-findings:end");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return {};
  const auto line_start = text.rfind('\n', begin);
  const std::size_t from = line_start == std::string::npos ? 0 : line_start + 1;
  const auto line_end = text.find('\n', end);
  return text.substr(from, line_end == std::string::npos ? std::string::npos : line_end + 1 - from);
}

/// "" when `page`'s table is the doctor's; else the message and the first line that differs.
std::string staleness(const std::string& page) {
  const std::string have = marked_block(page);
  const std::string want = doctor_findings_table();
  if (have == want) return {};
  std::istringstream a(have), b(want);
  std::string la, lb;
  for (int n = 1;; ++n) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga || !gb || la != lb)
      return "docs/doctor.md's table of the checks is stale: run scripts/update-docs\n  table line " +
             std::to_string(n) + "\n  page:   " + (ga ? la : "(missing)") +
             "\n  doctor: " + (gb ? lb : "(missing)");
  }
}

TEST(DoctorDocs, FindingsTableIsGenerated) {
  const std::filesystem::path p = repo_root() / "docs" / "doctor.md";
  ASSERT_TRUE(std::filesystem::exists(p)) << p;
  const std::string stale = staleness(read_file(p));
  EXPECT_EQ(stale, "") << stale;
}

// The generated table itself: one row per code, in rank order, the severity beside every code
// that is not a blocker; a '|' in a cell escaped.
TEST(DoctorDocs, TheTableHasOneRowPerCodeInRankOrder) {
  std::istringstream lines(doctor_findings_table());
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line))
    if (line.starts_with("| `")) rows.push_back(line);
  ASSERT_EQ(rows.size(), kFindingCodeCount);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto c = static_cast<FindingCode>(i);
    std::string head = "| `" + std::string(to_string(c)) + "`";
    if (severity_of(c) != Severity::blocker) head += " (" + std::string(to_string(severity_of(c))) + ")";
    EXPECT_EQ(rows[i].rfind(head + " | ", 0), 0u) << rows[i];
  }
  EXPECT_NE(doctor_findings_table().find("`ifconfig -a \\| grep member:`"), std::string::npos);
}

TEST(DoctorDocs, TheStalenessCheckNamesTheFirstDifferingLine) {
  const std::string page = "# doctor\n\n" + doctor_findings_table() + "\nmore\n";
  EXPECT_EQ(staleness(page), "");
  std::string edited = page;
  const std::string row = "| `no_gids` |";
  ASSERT_NE(edited.find(row), std::string::npos);
  edited.insert(edited.find(row) + row.size(), " hand-edited");
  const std::string why = staleness(edited);
  EXPECT_EQ(why.rfind("docs/doctor.md's table of the checks is stale: run scripts/update-docs\n", 0), 0u)
      << why;
  EXPECT_NE(why.find("page:   | `no_gids` | hand-edited"), std::string::npos) << why;
  EXPECT_NE(staleness("# no markers\n").find("page:   (missing)"), std::string::npos);
}

}  // namespace
}  // namespace gidpolicy
