// The CLI's inputs cost what is used, and no name reaches its output unchecked: a JACCL device
// file of another rank count than the hosts, a sysfs tree larger than --max-files, and host,
// file and device names that would forge report lines, reach the terminal or make the SVG
// invalid each end in exit 2 and one `gidpolicy:` line (or, for names that are fine, in a
// valid document).
#include "cli_run.hpp"
#include "cli_scratch.hpp"
#include "support/files.hpp"

#include <gidpolicy/names.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gidpolicy::test {
namespace cli_bounds {

namespace fs = std::filesystem;

fs::path bounds_jaccl_dir() { return example_tables_dir().parent_path() / "fleet" / "jaccl"; }
std::string host_file(int k) {
  return (bounds_jaccl_dir() / "hosts" / ("m3-ultra-" + std::to_string(k) + ".json")).string();
}

class CliBounds : public CliScratchTest {
 protected:
  CliBounds() : CliScratchTest("gidpolicy-cli-bounds-") {}
};

// A 4,096-rank file given with four hosts: refused naming both counts. (The unit tests bound
// its memory; the old path built the whole matrix first.)
TEST_F(CliBounds, AJacclFileOfAnotherRankCountIsRefusedNamingBothCounts) {
  std::string row = "[[]";
  for (int j = 1; j < 4096; ++j) row += ",[]";
  row += "]";
  std::string text = "[" + row;
  for (int i = 1; i < 4096; ++i) text += "," + row;
  text += "]";
  const auto file = write("devices.json", text);
  const auto r =
      run_cli({"fleet", "--jaccl-devices", file.string(), (bounds_jaccl_dir() / "hosts").string()});
  refused(r, "devices.json: 4096 ranks but 4 hosts were given");
}

// A 515-byte document asked for 131,078 files. Refused before anything is written: no output
// directory, no temporary tree beside it.
TEST_F(CliBounds, ConvertToSysfsRefusesATreeAboveMaxFilesBeforeWriting) {
  const auto doc = write("big.json", R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
    {"device": "a", "port": 1, "gid_tbl_len": 65536, "entries": []},
    {"device": "a", "port": 2, "gid_tbl_len": 65536, "entries": []}]})");
  const fs::path out = dir_ / "tree";
  const auto r = run_cli({"convert", "--input", doc.string(), "--to", "sysfs", "--output", out.string()});
  refused(r, "131078 files");
  EXPECT_NE(r.err.find("limit of 65536 files"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-files"), std::string::npos) << r.err;
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1u);  // big.json only
  // --max-files sets the limit either way: a 4-slot port is 7 files.
  const auto small = write("small.json", R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
    {"device": "a", "port": 1, "gid_tbl_len": 4, "entries": []}]})");
  refused(run_cli({"convert", "--input", small.string(), "--to", "sysfs", "--output", out.string(),
                   "--max-files", "6"}),
          "7 files");
  EXPECT_FALSE(fs::exists(out));
  const auto ok = run_cli(
      {"convert", "--input", small.string(), "--to", "sysfs", "--output", out.string(), "--max-files", "7"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(fs::exists(out / "a" / "ports" / "1" / "gids" / "3"));
}

// A newline in a host name used to print "999 of 999 links connected" as a line of its own.
TEST_F(CliBounds, HostNamesThatWouldForgeLinesAreRefused) {
  refused(run_cli({"fleet", "a\n999 of 999 links connected=" + host_file(1), host_file(2)}),
          "host name \"a\\x0a999 of 999 links connected\" (HOST=FILE)");
  const auto doc = write("h.json", R"({"host": "x\nfailures by cause: none", "device": "rdma_en4", "port": 1,
                                      "entries": []})");
  refused(run_cli({"fleet", doc.string(), host_file(2)}), "(its \"host\")");
  refused(run_cli({"show", "--json", "--host", "node\x1b[2J", "--input",
                   (example_tables_dir() / "macmini-mapped-at-2.json").string()}),
          "--host \"node\\x1b[2J\"");
}

// A file name that is not UTF-8 used to end in "internal error: [json.exception.type_error.316]".
TEST_F(CliBounds, AFileNameThatIsNotUtf8IsRefusedNamingTheDirectory) {
  const fs::path hosts = dir_ / "hosts";
  fs::create_directories(hosts);
  fs::copy_file(host_file(1), hosts / "m3-ultra-1.json");
  fs::copy_file(host_file(2), hosts / "\xff\xfe.json");
  const auto r = run_cli({"fleet", "--json", hosts.string()});
  refused(r, "file name \"\\xff\\xfe.json\": is not UTF-8");
  EXPECT_NE(r.err.find(hosts.string() + ": "), std::string::npos) << r.err;
}

TEST_F(CliBounds, SimulateRefusesAFileNameWithAnEscapeSequence) {
  const fs::path odd = dir_ / "x\x1b[31m";
  fs::copy_file(example_tables_dir() / "macmini-mapped-at-2.json", odd);
  refused(run_cli({"simulate", (example_tables_dir() / "macmini-mapped-at-2.json").string(), odd.string()}),
          "\\x1b[31m\": byte");
}

TEST_F(CliBounds, JacclDeviceNamesFollowTheNameRule) {
  const auto file = write("devices.json", R"([[null, "rdma_en4\n999 of 999 links connected", "a", "a"],
    ["a", null, "a", "a"], ["a", "a", null, "a"], ["a", "a", "a", null]])");
  refused(run_cli({"fleet", "--jaccl-devices", file.string(), (bounds_jaccl_dir() / "hosts").string()}),
          "devices.json: [0][1]: device name \"rdma_en4\\x0a999");
}

// Names that are fine reach the SVG escaped (&, <, >, ", ' all), and a cause longer than the
// picture is cut on a code point: the file stays valid UTF-8 with no control character.
TEST_F(CliBounds, SvgEscapesEveryMarkupCharacterAndCutsOnCodePoints) {
  std::string euros;
  for (int k = 0; k < 80; ++k) euros += "\xE2\x82\xAC";  // 240 bytes of U+20AC
  const fs::path svg = dir_ / "m.svg";
  // m3-ultra-3 breaks its links under the jaccl profile: its (one-host) cause names it.
  const auto r = run_cli({"fleet", "--jaccl-devices", (bounds_jaccl_dir() / "devices.json").string(),
                          "--profile", "jaccl", "--svg", svg.string(), "o'neil&<co>\"=" + host_file(1),
                          host_file(2), euros + "=" + host_file(3), host_file(4)});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const std::string text = read_file(svg);
  ASSERT_FALSE(text.empty());
  EXPECT_TRUE(is_utf8(text));
  EXPECT_NE(text.find("o&apos;neil&amp;&lt;co&gt;&quot;"), std::string::npos);
  EXPECT_EQ(text.find("o'neil"), std::string::npos);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || u == '\n') << "control byte " << unsigned{u};
  }
  EXPECT_NE(text.find("\xE2\x82\xAC..."), std::string::npos);  // the cut cause ends on a whole euro sign
}

}  // namespace cli_bounds
}  // namespace gidpolicy::test
