// fakelib_live_check <linked|dlopen> <table-file> <policy-spec>...
//
// gidpolicy's real backends against the fake libibverbs.so.1, through the real dynamic loader:
// run with LD_LIBRARY_PATH=<fake dir> and GIDPOLICY_FAKE_TABLES=<table-file>. `linked` is
// LibibverbsApi (this program is linked against libibverbs.so.1, which the loader resolves to
// the fake), `dlopen` is DlopenApi (dlopen("libibverbs.so.1") finds the fake the same way).
//
// For every port of the file it takes a snapshot through the backend and checks that it gives
// the same answers as the file itself:
//  * the same port (state, link layer, active MTU, LID, gid_tbl_len when the file gives it) and
//    the same usable GIDs at the same indices. Types are compared as the verbs ABI carries them:
//    ibv_gid_entry::gid_type has no "unknown", and the kernel reports the sysfs type
//    "IB/RoCE v1" as RoCE v1 on Ethernet and IB elsewhere, so a type the file does not give
//    comes back as one of those;
//  * every policy spec given selects the same index (or fails with the same code) on both.
//    A slot that an ibv_devinfo source did not show is empty in the fake (it has to hold
//    something), so the policies run on the file's table with its holes read as empty.
// Exit 0 when everything agrees, 1 otherwise, 2 when a step cannot run.
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/libibverbs_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

using namespace gidpolicy;

namespace {

GidType abi_type(GidType t, LinkLayer ll) {
  if (t == GidType::roce_v2) return t;
  return ll.kind() == LinkLayer::Kind::ethernet ? GidType::roce_v1 : GidType::ib;
}

// The file's table as the verbs ABI can carry it: usable entries, ABI types, no netdevs.
GidTable abi_view(const GidTable& t, std::optional<std::uint32_t> tbl_len) {
  PortInfo p = t.port();
  if (tbl_len) p.gid_tbl_len = tbl_len;
  p.link_rate.reset();  // a verbs snapshot keeps no link rate (only the table readers do)
  std::vector<GidEntry> entries;
  for (const GidEntry& e : t)
    if (e.usable()) entries.push_back(GidEntry::valid(e.index, e.gid, abi_type(e.type, p.link_layer)));
  return GidTable::make(std::move(p), std::move(entries)).value();
}

std::string describe(const result<Selection>& s) {
  if (s)
    return "index " + std::to_string(s.value().entry.index) + " (" + s.value().entry.gid.to_string() + ")";
  return "error: " + s.error().code.message();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " <linked|dlopen> <table-file> <policy-spec>...\n";
    return 2;
  }
  const std::string backend = argv[1];
  auto file = formats::read_tables_file(argv[2]);
  if (!file) {
    std::cerr << file.error().what() << "\n";
    return 2;
  }
  std::unique_ptr<verbs::VerbsApi> api;
  if (backend == "linked") {
    api = std::make_unique<verbs::LibibverbsApi>();
  } else if (backend == "dlopen") {
    auto d = std::make_unique<verbs::DlopenApi>();
    if (!d->loaded()) {
      std::cerr << d->load_error().what() << "\n";
      return 2;
    }
    api = std::move(d);
  } else {
    std::cerr << "unknown backend " << backend << "\n";
    return 2;
  }

  int failures = 0;
  for (const GidTable& t : file.value()) {
    const std::string where = gidpolicy::port_name(t);
    verbs::SnapshotReport report;
    auto live = verbs::snapshot(*api, t.port().device, t.port().port, {.report = &report});
    if (!live) {
      std::cout << where << ": snapshot failed: " << live.error().what() << "\n";
      ++failures;
      continue;
    }
    std::cout << where << ": snapshot through " << api->backend_name() << " by " << to_string(report.method)
              << " in " << report.driver_calls << " calls\n";
    // A file without gid_tbl_len (show_gids) lets the fake choose one covering every index.
    const auto live_len = live.value().port().gid_tbl_len;
    if (!t.port().gid_tbl_len && (!live_len || *live_len < t.length())) {
      std::cout << "  gid_tbl_len " << (live_len ? std::to_string(*live_len) : "unknown")
                << " does not cover index " << t.length() - 1 << "\n";
      ++failures;
    }
    const GidTable expected = abi_view(t, t.port().gid_tbl_len ? t.port().gid_tbl_len : live_len);
    const GidTable got = abi_view(live.value(), live_len);
    if (expected != got) {
      std::cout << "  table MISMATCH\n--- from the file (as the verbs ABI carries it):\n"
                << formats::write_json({expected}) << "\n--- through the backend:\n"
                << formats::write_json({got}) << "\n";
      ++failures;
    }
    const GidTable as_loaded = GidTable::make(t.port(), {t.begin(), t.end()}, Holes::empty).value();
    for (int i = 3; i < argc; ++i) {
      auto policy = parse_policy(argv[i]);
      if (!policy) {
        std::cerr << policy.error().what() << "\n";
        return 2;
      }
      const auto on_file = policy.value().select(as_loaded);
      const auto on_live = policy.value().select(live.value());
      const bool same = on_file.has_value() == on_live.has_value() &&
                        (on_file ? on_file.value().entry.index == on_live.value().entry.index
                                 : on_file.error().code == on_live.error().code);
      std::cout << "  " << argv[i] << ": file " << describe(on_file) << ", live " << describe(on_live)
                << (same ? "" : "  <-- DIFFERENT") << "\n";
      if (!same) ++failures;
    }
  }
  std::cout << (failures ? "FAIL" : "PASS") << "\n";
  return failures ? 1 : 0;
}
