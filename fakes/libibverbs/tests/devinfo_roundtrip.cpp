// fakelib_devinfo_roundtrip <ibv_devinfo> <fake-lib-dir> <table-file>
//
// A round trip through a program nobody here wrote: load <table-file> into the fake
// libibverbs.so.1, run the real `ibv_devinfo -v` on it, read its output back with gidpolicy's
// own devinfo reader, and compare with the input.
//
// "Exactly" means: everything rdma-core 44's ibv_devinfo can show of a table comes back unchanged.
//  * Ports: device, port number, state, active MTU, LID, link layer, and gid_tbl_len. A source
//    that does not give gid_tbl_len (show_gids) lets the fake choose one: it must cover every
//    index of the table.
//  * GIDs: exactly the valid entries whose interface id (bytes 8-15) is non-zero, at the same
//    index with the same 16 bytes. devinfo hides the others (empty slots, zero GIDs,
//    ::ffff:0.0.0.0-style entries) and prints no netdev or ifindex.
//  * Types: devinfo prints one only on Ethernet ports, from rdma-core's two sysfs types: RoCE v2
//    stays roce_v2, every other type reads back as roce_v1 ("IB/RoCE v1"). InfiniBand ports read
//    back as ib, other ports (Thunderbolt) as unknown.
// Exit 0 on a match; 1 with both tables printed otherwise; 2 when a step cannot run.
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>

#include <sys/wait.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace gidpolicy;

namespace {

GidType shown_type(GidType t, LinkLayer ll) {
  switch (ll.kind()) {
    case LinkLayer::Kind::ethernet:
      return t == GidType::roce_v2 ? GidType::roce_v2 : GidType::roce_v1;
    case LinkLayer::Kind::infiniband:
      return GidType::ib;
    default:
      return GidType::unknown;
  }
}

GidTable expected_view(const GidTable& in, const GidTable* out) {
  PortInfo p = in.port();
  if (!p.gid_tbl_len && out && out->port().gid_tbl_len && *out->port().gid_tbl_len >= in.length())
    p.gid_tbl_len = out->port().gid_tbl_len;
  // ibv_devinfo prints the width and speed the fake reports: the table's, else its default 4X
  // EDR (c_core::kDefaultLinkRate, which the fake's unit test pins).
  p.link_rate = p.link_rate.value_or(LinkRate{.width = 2, .speed = 32});
  std::vector<GidEntry> shown;
  for (const GidEntry& e : in)
    if (e.state == EntryState::valid && e.gid.interface_id() != 0)
      shown.push_back(GidEntry::valid(e.index, e.gid, shown_type(e.type, p.link_layer)));
  return GidTable::make(std::move(p), std::move(shown), Holes::not_shown).value();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " <ibv_devinfo> <fake-lib-dir> <table-file>\n";
    return 2;
  }
  auto input = formats::read_tables_file(argv[3]);
  if (!input) {
    std::cerr << input.error().what() << "\n";
    return 2;
  }
  ::setenv("LD_LIBRARY_PATH", argv[2], 1);
  ::setenv("GIDPOLICY_FAKE_TABLES", argv[3], 1);
  ::unsetenv("GIDPOLICY_FAKE_DRIVER");
  ::unsetenv("GIDPOLICY_FAKE_PROFILE");
  ::unsetenv("GIDPOLICY_FAKE_LOG");
  const std::string cmd = shell_quote(argv[1]) + " -v";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    std::perror("popen");
    return 2;
  }
  std::string text;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  const int status = ::pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::cerr << argv[1] << " -v failed (status " << status << "):\n" << text;
    return 2;
  }
  auto output = formats::read_devinfo(text, "ibv_devinfo -v");
  if (!output) {
    std::cerr << output.error().what() << "\n--- ibv_devinfo -v output:\n" << text;
    return 1;
  }

  // Output order: the fake's device order (first appearance in the file), ports as listed.
  std::map<std::pair<std::string, std::uint32_t>, const GidTable*> by_port;
  for (const GidTable& t : output.value()) by_port[{t.port().device, t.port().port}] = &t;
  std::vector<GidTable> expected;
  std::vector<std::string> order;
  for (const GidTable& t : input.value())
    if (std::find(order.begin(), order.end(), t.port().device) == order.end())
      order.push_back(t.port().device);
  for (const std::string& dev : order)
    for (const GidTable& t : input.value())
      if (t.port().device == dev) {
        auto it = by_port.find({dev, t.port().port});
        expected.push_back(expected_view(t, it == by_port.end() ? nullptr : it->second));
      }

  if (expected != output.value()) {
    std::cout << "MISMATCH for " << argv[3] << "\n--- expected (what ibv_devinfo can show of the input):\n"
              << formats::write_json(expected) << "\n--- read back from ibv_devinfo -v:\n"
              << formats::write_json(output.value()) << "\n--- ibv_devinfo -v output:\n"
              << text;
    return 1;
  }
  std::size_t gids = 0;
  for (const GidTable& t : expected) gids += t.size();
  std::cout << argv[3] << ": " << expected.size() << " port(s), " << gids
            << " GID(s) shown by ibv_devinfo -v, identical after the round trip\n";
  return 0;
}
