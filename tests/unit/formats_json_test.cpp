#include <gidpolicy/formats/json.hpp>

#include <gtest/gtest.h>
#include "support/assert_ok.hpp"

namespace gidpolicy {
namespace {

using formats::read_json;
using formats::write_json;

constexpr const char* kDoc = R"({
  "schema": "gidpolicy.tables", "version": 1,
  "ports": [
    {"device": "mlx5_0", "port": 1, "state": "active", "link_layer": "ethernet",
     "gid_tbl_len": 256, "active_mtu": 1024, "lid": 0, "active_width": "4X", "active_speed": "EDR",
     "entries": [
       {"index": 0, "gid": "fe80::ac0:ebff:feda:1cfb", "type": "roce_v1", "netdev": "bond0", "ifindex": 5},
       {"index": 3, "gid": "::ffff:200.0.209.6", "type": "roce_v2", "netdev": "bond0"},
       {"index": 4, "state": "empty"},
       {"index": 5, "state": "unreadable", "errno": 22}
     ]},
    {"device": "rdma_en1", "port": 1, "link_layer": "thunderbolt", "gid_tbl_len": null, "holes": "not_shown",
     "entries": [{"index": 1, "gid": "0000:0000:0000:0000:0000:ffff:0a63:0002"}]}
  ]
})";

TEST(Json, ReadsDocument) {
  auto r = read_json(kDoc, "doc.json");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 2u);
  const GidTable& a = r.value()[0];
  EXPECT_EQ(a.port().device, "mlx5_0");
  EXPECT_EQ(a.port().gid_tbl_len, 256u);
  EXPECT_EQ(a.port().link_layer, LinkLayer::ethernet());
  EXPECT_EQ(a.port().link_rate, (LinkRate{.width = 2, .speed = 32}));
  ASSERT_NE(a.find(3u), nullptr);
  EXPECT_EQ(a.find(3u)->gid.ipv4_string(), "200.0.209.6");
  EXPECT_EQ(a.find(3u)->type, GidType::roce_v2);
  EXPECT_EQ(a.find(0u)->ifindex, 5u);
  EXPECT_EQ(a.find(4u)->state, EntryState::empty);
  EXPECT_EQ(a.find(5u)->state, EntryState::unreadable);
  EXPECT_EQ(a.find(5u)->read_error, std::errc::invalid_argument);
  const GidTable& b = r.value()[1];
  EXPECT_EQ(b.port().gid_tbl_len, std::nullopt);
  EXPECT_EQ(b.holes(), Holes::not_shown);
  EXPECT_EQ(b.port().link_layer, LinkLayer::thunderbolt());
  EXPECT_EQ(b.find(1u)->type, GidType::unknown);
  EXPECT_EQ(b.port().link_rate, std::nullopt);
}

TEST(Json, LinkRateIsNamedWhereVerbsNamesItAndANumberOtherwise) {
  PortInfo p{.device = "d", .port = 1, .link_layer = LinkLayer::ethernet()};
  p.link_rate = LinkRate{.width = 8, .speed = 128};  // 12X NDR
  PortInfo q = p;
  q.port = 2;
  q.link_rate = LinkRate{.width = 3, .speed = 7};  // no encoding verbs defines: kept as numbers
  ASSERT_OK_AND_ASSIGN(auto a, GidTable::make(p, {}));
  ASSERT_OK_AND_ASSIGN(auto b, GidTable::make(q, {}));
  const std::string text = write_json({a, b}, -1);  // compact: one line, no spaces
  EXPECT_NE(text.find(R"("active_width":"12X")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("active_speed":"NDR")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("active_width":3)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("active_speed":7)"), std::string::npos) << text;
  ASSERT_OK_AND_ASSIGN(auto back, read_json(text, "w.json"));
  EXPECT_EQ(back[0].port().link_rate, p.link_rate);
  EXPECT_EQ(back[1].port().link_rate, q.link_rate);
}

TEST(Json, WriteThenReadIsIdentity) {
  ASSERT_OK_AND_ASSIGN(auto r, read_json(kDoc, "doc.json"));
  auto again = read_json(write_json(r), "again.json");
  ASSERT_OK(again);
  EXPECT_EQ(again.value(), r);
}

// Version 2 (what `show --json` and `convert --to json` print): the envelope's host and source,
// every entry key (null where it does not apply) and the display keys ipv4 and flags.
TEST(Json, WritesVersion2WithHostSourceAndDisplayKeysAndReadsItBack) {
  ASSERT_OK_AND_ASSIGN(auto r, read_json(kDoc, "doc.json"));
  const std::string text = write_json(r, {.host = "node1", .source = "t.txt"}, -1);
  EXPECT_EQ(
      text.rfind(R"({"schema":"gidpolicy.tables","version":2,"host":"node1","source":"t.txt","ports":[)", 0),
      0u)
      << text;
  EXPECT_NE(text.find(R"("ipv4":"200.0.209.6")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("flags":["ipv4-mapped"])"), std::string::npos) << text;
  EXPECT_NE(text.find(R"({"index":4,"state":"empty","gid":null,"type":"unknown","ipv4":null,"netdev":null,)"
                      R"("ifindex":null,"errno":null,"flags":["empty"]})"),
            std::string::npos)
      << text;
  ASSERT_OK_AND_ASSIGN(auto back, read_json(text, "v2.json"));
  EXPECT_EQ(back, r);
  // Without a host or source: both null.
  EXPECT_NE(write_json(r, -1).find(R"("host":null,"source":null)"), std::string::npos);
}

TEST(Json, Version2IsCheckedAsStrictlyAsVersion1) {
  const std::string head = R"({"schema":"gidpolicy.tables","version":2,)";
  const std::string ports = R"("ports":[{"device":"d","port":1,"entries":[)";
  auto bad_host = read_json(head + R"("host":7,"ports":[]})", "h.json");
  ASSERT_FALSE(bad_host);
  EXPECT_NE(bad_host.error().detail.find("h.json: host: expected a string or null"), std::string::npos);
  auto unknown = read_json(head + R"("hots":"x","ports":[]})", "u.json");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().detail.find("u.json: hots: unknown field"), std::string::npos);
  auto flags = read_json(head + ports + R"({"index":0,"gid":"::1","flags":"x"}]}]})", "f.json");
  ASSERT_FALSE(flags);
  EXPECT_NE(flags.error().detail.find("ports[0].entries[0].flags: expected an array of strings"),
            std::string::npos);
  auto ipv4 = read_json(head + ports + R"({"index":0,"gid":"::1","ipv4":1}]}]})", "i.json");
  ASSERT_FALSE(ipv4);
  EXPECT_NE(ipv4.error().detail.find("ports[0].entries[0].ipv4: expected a string or null"),
            std::string::npos);
  // A null gid on a valid entry is a missing gid, as in version 1.
  auto no_gid = read_json(head + ports + R"({"index":0,"state":"valid","gid":null}]}]})", "g.json");
  ASSERT_FALSE(no_gid);
  EXPECT_NE(no_gid.error().detail.find("ports[0].entries[0].gid: missing"), std::string::npos);
  // Version 1 keeps refusing what it always refused: the display keys.
  auto v1_flags = read_json(
      R"({"schema":"gidpolicy.tables","version":1,)" + ports + R"({"index":0,"gid":"::1","flags":[]}]}]})",
      "v1.json");
  ASSERT_FALSE(v1_flags);
  EXPECT_NE(v1_flags.error().detail.find("flags: unknown field"), std::string::npos);
}

struct BadJson {
  const char* name;
  std::string text;
  errc code;
  const char* expect;  // substring of the error detail
};

void PrintTo(const BadJson& b, std::ostream* os) { *os << b.name; }

class JsonRejects : public ::testing::TestWithParam<BadJson> {};

TEST_P(JsonRejects, NamingTheFieldOrPosition) {
  const auto& p = GetParam();
  auto r = read_json(p.text, "t.json");
  ASSERT_FALSE(r) << p.name;
  EXPECT_EQ(r.error(), p.code) << r.error().what();
  EXPECT_NE(r.error().detail.find(p.expect), std::string::npos) << r.error().what();
  EXPECT_EQ(r.error().detail.rfind("t.json", 0), 0u) << "names the source: " << r.error().what();
}

std::string port(const std::string& entries, const std::string& extra = "") {
  return R"({"schema":"gidpolicy.tables","version":1,"ports":[{"device":"d","port":1)" + extra +
         R"(,"entries":[)" + entries + "]}]}";
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, JsonRejects,
    ::testing::Values(
        BadJson{"truncated", std::string(kDoc).substr(0, 200), errc::parse_error, "invalid JSON"},
        BadJson{"syntax_line", "{\n  \"schema\": \"gidpolicy.tables\",\n  \"version\": 1,,\n}",
                errc::parse_error, "t.json:3:"},
        BadJson{"empty", "", errc::parse_error, "t.json:1:1"},
        BadJson{"not_object", "[1,2]", errc::invalid_field, "expected an object"},
        BadJson{"wrong_schema", R"({"schema":"x","version":1,"ports":[]})", errc::invalid_field, "schema"},
        BadJson{"future_version", R"({"schema":"gidpolicy.tables","version":3,"ports":[]})",
                errc::unsupported_version, "version 3 is not supported"},
        BadJson{"bad_gid", port(R"({"index":0,"gid":"fe80::zz"})"), errc::invalid_field,
                "ports[0].entries[0].gid: invalid GID text: at position 6"},
        BadJson{"missing_gid", port(R"({"index":0})"), errc::invalid_field,
                "ports[0].entries[0].gid: missing"},
        BadJson{"duplicate_index", port(R"({"index":2,"gid":"::1"},{"index":2,"state":"empty"})"),
                errc::duplicate_index, "index 2 appears twice"},
        BadJson{"index_2_31", port(R"({"index":2147483648,"gid":"::1"})"), errc::index_too_large,
                "ports[0].entries[0].index: 2147483648 is above the maximum"},
        BadJson{"negative_index", port(R"({"index":-1,"gid":"::1"})"), errc::invalid_field,
                "ports[0].entries[0].index: expected a non-negative integer"},
        BadJson{"string_index", port(R"({"index":"3","gid":"::1"})"), errc::invalid_field,
                "entries[0].index: expected a non-negative integer, found string"},
        BadJson{"bad_type", port(R"({"index":0,"gid":"::1","type":"roce_v3"})"), errc::invalid_field,
                "entries[0].type: expected ib, roce_v1, roce_v2 or unknown"},
        BadJson{"bad_state", port(R"({"index":0,"state":"gone"})"), errc::invalid_field, "entries[0].state"},
        BadJson{"unknown_field", port(R"({"index":0,"gid":"::1","gdi":"x"})"), errc::invalid_field,
                "entries[0].gdi: unknown field"},
        BadJson{"bad_mtu", port("", R"(,"active_mtu":1500)"), errc::invalid_field, "ports[0].active_mtu"},
        BadJson{"width_without_speed", port("", R"(,"active_width":"4X")"), errc::invalid_field,
                "ports[0].active_speed: missing: a port gives active_width and active_speed together"},
        BadJson{"bad_width", port("", R"(,"active_width":"3X","active_speed":"EDR")"), errc::invalid_field,
                "ports[0].active_width: expected 1X, 2X, 4X, 8X, 12X or verbs' number 0-255, found \"3X\""},
        BadJson{"bad_speed", port("", R"(,"active_width":"4X","active_speed":"XDR")"), errc::invalid_field,
                "ports[0].active_speed: expected SDR"},
        BadJson{"speed_too_large", port("", R"(,"active_width":2,"active_speed":256)"), errc::index_too_large,
                "ports[0].active_speed: 256 is above the maximum 255"},
        BadJson{"beyond_len", port(R"({"index":9,"gid":"::1"})", R"(,"gid_tbl_len":4)"),
                errc::index_too_large, "not below gid_tbl_len 4"},
        BadJson{"missing_device", R"({"schema":"gidpolicy.tables","version":1,"ports":[{"port":1}]})",
                errc::invalid_field, "ports[0].device: missing"},
        BadJson{
            "duplicate_port",
            R"({"schema":"gidpolicy.tables","version":1,"ports":[{"device":"d","port":1},{"device":"d","port":1}]})",
            errc::invalid_field, "appears twice (one entry per port)"},
        // Regression (fuzz_json_table): a number literal overflowing a double made nlohmann throw
        // out_of_range, not parse_error, and it escaped read_json.
        BadJson{"regression_number_overflow",
                R"({"schema":"gidpolicy.tables","version":1,"ports":[{"device":"d","port":1,"lid":1E400}]})",
                errc::parse_error, "number overflow"},
        BadJson{"binary", std::string("\x01\x02\xff\xfe", 4), errc::parse_error, "invalid JSON"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// One list of flags for the document and `show`'s text: each kind of entry, in order.
TEST(Json, EntryFlagsNameEachKindOfEntry) {
  using formats::entry_flags;
  using V = std::vector<std::string>;
  EXPECT_EQ(entry_flags(GidEntry::empty(1)), V{"empty"});
  EXPECT_EQ(entry_flags(GidEntry::unreadable(2, std::make_error_code(std::errc::invalid_argument))),
            V{"unreadable"});
  EXPECT_EQ(entry_flags(GidEntry::valid(0, Gid{})), V{"zero"});
  EXPECT_EQ(entry_flags(GidEntry::valid(0, Gid::parse("fe80::1").value())), V{"link-local"});
  EXPECT_EQ(entry_flags(GidEntry::valid(0, Gid::parse("::ffff:10.0.0.1").value())), V{"ipv4-mapped"});
  EXPECT_EQ(entry_flags(GidEntry::valid(0, Gid::parse("::ffff:169.254.3.4").value())),
            (V{"ipv4-mapped", "ipv4-link-local"}));
  EXPECT_EQ(entry_flags(GidEntry::valid(0, Gid::parse("fd00::1").value())), V{});
}

}  // namespace
}  // namespace gidpolicy
