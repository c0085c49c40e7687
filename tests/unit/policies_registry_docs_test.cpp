// README.md's spec table is made from the registry (registry.hpp): builtin_spec_table() prints
// it, scripts/update-docs writes it between the README's "spec-table:begin" / "spec-table:end"
// marker lines, and these tests fail while the README holds anything else. No other page under
// docs/ or header under include/ carries a second copy.
//
// Besides the byte-for-byte comparison, the table is read back as a reader would: in each row,
// the first `backticked` token of the first cell that starts with a lower-case name is the
// entry's name, and the `key=FORM` (or `key`) tokens of the second cell are its options. Rows
// may share a name: their options add up. Upper-case tokens (`POLICY@sgid=N`) are grammar, not
// names. That reading checks the generator itself: its table names exactly the registry's specs
// and options.
#include <gidpolicy/policies/registry.hpp>

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

using Table = std::map<std::string, std::set<std::string>>;  // name -> option keys

std::string key_of(std::string piece) {
  std::erase_if(piece, [](char c) { return c == '[' || c == ']' || c == ' '; });
  return piece.substr(0, piece.find('='));
}

/// A Markdown table row's cells, without the outer bars; "\\|" is a '|' inside a cell.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  if (!line.starts_with("|")) return cells;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(cur);
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

/// The entries between the markers; `problems` gets what is malformed (no markers, no entries).
Table read_table(const std::string& text, const std::string& file, std::vector<std::string>& problems) {
  Table table;
  const auto begin = text.find("spec-table:begin");
  const auto end = text.find("spec-table:end");
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    problems.push_back(file + ": no spec-table:begin ... spec-table:end region");
    return table;
  }
  std::istringstream lines(text.substr(begin, end - begin));
  std::string line;
  std::getline(lines, line);  // the begin marker's line
  while (std::getline(lines, line)) {
    const std::vector<std::string> cells = cells_of(line);
    if (cells.size() < 2) continue;
    const auto open = cells[0].find('`');
    if (open == std::string::npos) continue;
    const auto close = cells[0].find('`', open + 1);
    if (close == std::string::npos) continue;
    const std::string token = cells[0].substr(open + 1, close - open - 1);
    std::size_t n = 0;
    while (n < token.size() &&
           (std::islower(static_cast<unsigned char>(token[n])) != 0 ||
            std::isdigit(static_cast<unsigned char>(token[n])) != 0 || token[n] == '-' || token[n] == '_'))
      ++n;
    if (n == 0 || std::isdigit(static_cast<unsigned char>(token[0])) != 0) continue;
    const std::string name = token.substr(0, n);
    std::set<std::string>& keys = table[name];
    // The options cell: `key=FORM` or `key` tokens, each backticked.
    const std::string& opts = cells[1];
    for (auto o = opts.find('`'); o != std::string::npos; o = opts.find('`', o + 1)) {
      const auto c = opts.find('`', o + 1);
      if (c == std::string::npos) break;
      const std::string key = key_of(opts.substr(o + 1, c - o - 1));
      if (!key.empty()) keys.insert(key);
      o = c;
    }
  }
  if (table.empty()) problems.push_back(file + ": the spec table lists no spec");
  return table;
}

/// Every difference between a file's table and the registry, one message each.
std::vector<std::string> check_table(const std::string& text, const std::string& file) {
  std::vector<std::string> problems;
  const Table table = read_table(text, file, problems);
  if (table.empty()) return problems;
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    const auto it = table.find(std::string(row.name));
    if (it == table.end()) {
      problems.push_back(file + ": the spec table lacks `" + std::string(row.name) + "` (a registry row)");
      continue;
    }
    std::set<std::string> want;
    for (const SpecOptionInfo& o : row.options) want.insert(std::string(o.key));
    for (const std::string& k : want)
      if (!it->second.contains(k))
        problems.push_back(file + ": `" + std::string(row.name) + "` lacks its option " + k);
    for (const std::string& k : it->second)
      if (!want.contains(k))
        problems.push_back(file + ": `" + std::string(row.name) + "` lists the option " + k +
                           ", which its registry row does not have");
  }
  for (const auto& [name, keys] : table) {
    const BuiltinSpec* row = find_builtin_spec(name);
    if (!row)
      problems.push_back(file + ": the spec table lists `" + name + "`, which is not a built-in spec");
  }
  return problems;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The source tree's root: tests/data/../..
std::filesystem::path repo_root() {
  return std::filesystem::path(GIDPOLICY_TEST_DATA_DIR).parent_path().parent_path();
}

/// The README's marked block, marker lines included ("" when the markers are missing).
std::string marked_block(const std::string& text) {
  const auto begin = text.find("spec-table:begin");
  const auto end = text.find("spec-table:end");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return {};
  const auto line_start = text.rfind('\n', begin);
  const auto line_end = text.find('\n', end);
  return text.substr(line_start == std::string::npos ? 0 : line_start + 1,
                     line_end == std::string::npos
                         ? std::string::npos
                         : line_end + 1 - (line_start == std::string::npos ? 0 : line_start + 1));
}

/// "" when `readme`'s table is the registry's; else the message and the first line that differs.
std::string staleness(const std::string& readme) {
  const std::string have = marked_block(readme);
  const std::string want = builtin_spec_table();
  if (have == want) return {};
  std::istringstream a(have), b(want);
  std::string la, lb;
  int n = 1;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga || !gb || la != lb)
      return "README's spec table is stale: run scripts/update-docs\n  table line " + std::to_string(n) +
             "\n  README:   " + (ga ? la : "(missing)") + "\n  registry: " + (gb ? lb : "(missing)");
    ++n;
  }
}

TEST(RegistryDocs, GrammarTablesNameExactlyTheRegistry) {
  const std::filesystem::path p = repo_root() / "README.md";
  ASSERT_TRUE(std::filesystem::exists(p)) << p;
  const auto problems = check_table(read_file(p), "README.md");
  EXPECT_TRUE(problems.empty()) << join(problems);
}

// The README's table is exactly what the registry prints: a new row, a changed summary or
// option, and the README is stale until scripts/update-docs rewrites it.
TEST(RegistryDocs, ReadmeSpecTableIsGenerated) {
  const std::filesystem::path p = repo_root() / "README.md";
  ASSERT_TRUE(std::filesystem::exists(p)) << p;
  const std::string stale = staleness(read_file(p));
  EXPECT_EQ(stale, "") << stale;
}

TEST(RegistryDocs, TheStalenessCheckNamesTheFirstDifferingLine) {
  const std::string readme = "# t\n\n" + builtin_spec_table() + "\nmore\n";
  EXPECT_EQ(staleness(readme), "");
  std::string edited = readme;
  const std::string row = "| `jaccl-legacy` |";
  ASSERT_NE(edited.find(row), std::string::npos);
  edited.insert(edited.find(row) + row.size(), " hand-edited");
  const std::string why = staleness(edited);
  EXPECT_EQ(why.rfind("README's spec table is stale: run scripts/update-docs\n", 0), 0u) << why;
  EXPECT_NE(why.find("README:   | `jaccl-legacy` | hand-edited"), std::string::npos) << why;
  EXPECT_NE(staleness("# no markers\n").find("README:   (missing)"), std::string::npos);
  // A row the registry has and the README lacks.
  std::string missing = readme;
  missing.erase(missing.find("| `first("),
                missing.find('\n', missing.find("| `first(")) + 1 - missing.find("| `first("));
  EXPECT_NE(staleness(missing).find("registry: | `first("), std::string::npos) << staleness(missing);
}

// The types column names policy types that exist: each is a struct of a policies/ header.
TEST(RegistryDocs, EveryTypeTheTableNamesIsAPolicyHeadersStruct) {
  std::string headers;
  for (const auto& e :
       std::filesystem::directory_iterator(repo_root() / "include" / "gidpolicy" / "policies"))
    headers += read_file(e.path());
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    EXPECT_FALSE(row.types.empty()) << row.name;
    std::istringstream in{std::string(row.types)};
    std::string type;
    while (std::getline(in, type, ',')) {
      std::erase(type, ' ');
      EXPECT_NE(headers.find("struct " + type + " "), std::string::npos) << row.name << ": " << type;
    }
  }
}

// One table to keep: a second list of the names (as spec.hpp and docs/concepts.md used to carry)
// would be one more file a new policy has to edit, so none may come back.
TEST(RegistryDocs, NoOtherPageRepeatsTheSpecTable) {
  std::vector<std::string> repeats;
  for (const char* dir : {"docs", "include"}) {
    ASSERT_TRUE(std::filesystem::is_directory(repo_root() / dir)) << dir;
    for (const auto& e : std::filesystem::recursive_directory_iterator(repo_root() / dir)) {
      if (!e.is_regular_file()) continue;
      if (read_file(e.path()).find("spec-table:begin") != std::string::npos)
        repeats.push_back(std::filesystem::relative(e.path(), repo_root()).string());
    }
  }
  EXPECT_TRUE(repeats.empty()) << "spec tables besides README.md's (point to the registry instead):\n"
                               << join(repeats);
}

// The check itself: the generated table passes; each kind of drift fails, named.
std::string registry_as_table() { return builtin_spec_table(); }

TEST(RegistryDocs, TheCheckCatchesMissingAndExtraNamesAndOptions) {
  const std::string good = registry_as_table();
  EXPECT_EQ(join(check_table(good, "t")), "");

  std::string missing = good;
  missing.erase(missing.find("| `ds4-linux"),
                missing.find('\n', missing.find("| `ds4-linux")) - missing.find("| `ds4-linux") + 1);
  EXPECT_NE(join(check_table(missing, "t")).find("lacks `ds4-linux`"), std::string::npos);

  std::string extra = good;
  extra.insert(extra.rfind("<!-- spec-table:end"), "| `mpich:index=N` | `index=N` | y |\n");
  EXPECT_NE(join(check_table(extra, "t")).find("lists `mpich`, which is not a built-in spec"),
            std::string::npos);

  std::string lacks_option = good;
  lacks_option.replace(lacks_option.find(", `peer=PEER`"), 13, "");
  EXPECT_NE(join(check_table(lacks_option, "t")).find("`auto` lacks its option peer"), std::string::npos);

  std::string extra_option = good;
  extra_option.insert(extra_option.find("`index=N`") + 9, ", `bogus=1`");
  EXPECT_NE(join(check_table(extra_option, "t")).find("`ds4` lists the option bogus"), std::string::npos);

  EXPECT_NE(join(check_table("no markers", "t")).find("no spec-table:begin"), std::string::npos);
  // Grammar placeholders and prose are not names.
  EXPECT_EQ(join(check_table(good.substr(0, good.rfind("<!-- spec-table:end")) +
                                 "| `POLICY@sgid=N` | z |\nspec-table:end\n",
                             "t")),
            "");
}

}  // namespace
}  // namespace gidpolicy
