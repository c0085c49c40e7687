// The grammar table in the docs names exactly the registry's specs and options (registry.hpp):
// README.md's spec table is the one list of names outside the registry (spec.hpp's grammar and
// docs/concepts.md point to the registry and to it), and no other page under docs/ or header
// under include/ carries a second one. The table is marked with "spec-table:begin" /
// "spec-table:end"; in between, the first
// `backticked` token of a line that starts with a lower-case name is one entry: its name, and
// the option keys of its ":opt,opt" part ("ds4-linux[:local=ADDR,index=INT]": local, index).
// Several entries may share a name (`ds4`, `ds4:index=N`): their options add up. Upper-case
// tokens (`POLICY@sgid=N`) are grammar, not names.
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
    const auto open = line.find('`');
    if (open == std::string::npos) continue;
    const auto close = line.find('`', open + 1);
    if (close == std::string::npos) continue;
    const std::string token = line.substr(open + 1, close - open - 1);
    std::size_t n = 0;
    while (n < token.size() &&
           (std::islower(static_cast<unsigned char>(token[n])) != 0 ||
            std::isdigit(static_cast<unsigned char>(token[n])) != 0 || token[n] == '-' || token[n] == '_'))
      ++n;
    if (n == 0 || std::isdigit(static_cast<unsigned char>(token[0])) != 0) continue;
    const std::string name = token.substr(0, n);
    std::set<std::string>& keys = table[name];
    std::string rest = token.substr(n);
    if (rest.starts_with("[")) rest.erase(0, 1);
    if (!rest.starts_with(":")) continue;  // no options, or a combinator's "(...)"
    std::istringstream opts(rest.substr(1));
    std::string piece;
    while (std::getline(opts, piece, ',')) {
      const std::string key = key_of(piece);
      if (!key.empty()) keys.insert(key);
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

TEST(RegistryDocs, GrammarTablesNameExactlyTheRegistry) {
  const std::filesystem::path p = repo_root() / "README.md";
  ASSERT_TRUE(std::filesystem::exists(p)) << p;
  const auto problems = check_table(read_file(p), "README.md");
  EXPECT_TRUE(problems.empty()) << join(problems);
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

// The check itself: a table that is the registry passes; each kind of drift fails, named.
std::string registry_as_table() {
  std::string t = "spec-table:begin\n";
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    t += "| `" + std::string(row.name);
    std::string sep = ":";
    for (const SpecOptionInfo& o : row.options) {
      t += sep + std::string(o.key) + (o.value.empty() ? "" : "=" + std::string(o.value));
      sep = ",";
    }
    t += "` | x |\n";
  }
  return t + "spec-table:end\n";
}

TEST(RegistryDocs, TheCheckCatchesMissingAndExtraNamesAndOptions) {
  const std::string good = registry_as_table();
  EXPECT_EQ(join(check_table(good, "t")), "");

  std::string missing = good;
  missing.erase(missing.find("| `ds4-linux"),
                missing.find('\n', missing.find("| `ds4-linux")) - missing.find("| `ds4-linux") + 1);
  EXPECT_NE(join(check_table(missing, "t")).find("lacks `ds4-linux`"), std::string::npos);

  std::string extra = good;
  extra.insert(extra.find("spec-table:end"), "| `mpich:index=N` | y |\n");
  EXPECT_NE(join(check_table(extra, "t")).find("lists `mpich`, which is not a built-in spec"),
            std::string::npos);

  std::string lacks_option = good;
  lacks_option.replace(lacks_option.find(",peer=PEER"), 10, "");
  EXPECT_NE(join(check_table(lacks_option, "t")).find("`auto` lacks its option peer"), std::string::npos);

  std::string extra_option = good;
  extra_option.insert(extra_option.find("| `ds4:index=N") + 13, ",bogus=1");
  EXPECT_NE(join(check_table(extra_option, "t")).find("`ds4` lists the option bogus"), std::string::npos);

  EXPECT_NE(join(check_table("no markers", "t")).find("no spec-table:begin"), std::string::npos);
  // Grammar placeholders and prose are not names.
  EXPECT_EQ(
      join(check_table(good.substr(0, good.size() - 15) + "| `POLICY@sgid=N` | z |\nspec-table:end\n", "t")),
      "");
}

}  // namespace
}  // namespace gidpolicy
