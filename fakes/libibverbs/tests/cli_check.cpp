// fakelib_cli_check <gidpolicy> <fake-lib-dir> <dlopen|linked> <table-file>
//
// The CLI's live mode against the fake libibverbs.so.1, through the real dynamic loader: for
// every device of <table-file>, `gidpolicy check --device D --verbs B --json` with
// LD_LIBRARY_PATH=<fake-lib-dir> and GIDPOLICY_FAKE_TABLES=<table-file> must give the same
// answers as `gidpolicy check --input <table-file> --device D --json`: per port, the same driver
// profile and platform, and per named profile the same advertised index and GID, sgid_index,
// agreement, predicted RTR outcome and errno, or the same error code; and the same exit code.
// The prose (explanations, reasons, traces) is not compared: it names GID types, which the verbs
// ABI carries without "unknown", and it lists the empty slots a file spells out.
// A slot an ibv_devinfo source did not show is empty in the fake (it has to hold something),
// while the CLI reading the paste says "not shown": for such a file the comparison reads the
// same table with its holes declared empty (written to a temporary JSON file).
// Exit 0 when everything agrees, 1 otherwise, 2 when a step cannot run.
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/json.hpp>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Run {
  int exit_code = -1;
  std::string out;
};

Run run(const std::string& cmd) {
  Run r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  return r;
}

// The answers of one `check --json` document, without the prose.
json answers(const json& doc) {
  json ports = json::array();
  // One envelope, its "ports" an array whatever their number (docs/cli.md).
  for (const json& port : doc.at("ports")) {
    json p = {{"device", port.at("device")},
              {"port", port.at("port")},
              {"link_layer", port.at("link_layer")},
              {"platform", port.at("platform")},
              {"driver", port.at("driver")}};
    json profiles = json::array();
    for (const json& pr : port.at("profiles")) {
      json a = {{"profile", pr.at("profile")}, {"ok", pr.at("ok")}};
      for (const char* k : {"advertised_index", "advertised_gid", "sgid_index", "agrees"})
        a[k] = pr.value(k, json());
      if (pr.contains("predicted_rtr") && pr.at("predicted_rtr").is_object())
        a["predicted_rtr"] = {{"outcome", pr.at("predicted_rtr").at("outcome")},
                              {"errno", pr.at("predicted_rtr").at("errno")}};
      if (pr.contains("error") && pr.at("error").is_object()) a["error"] = pr.at("error").at("code");
      profiles.push_back(std::move(a));
    }
    p["profiles"] = std::move(profiles);
    ports.push_back(std::move(p));
  }
  return ports;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: " << argv[0] << " <gidpolicy> <fake-lib-dir> <dlopen|linked> <table-file>\n";
    return 2;
  }
  const std::string cli = argv[1], lib = argv[2], backend = argv[3], table = argv[4];
  auto tables = gidpolicy::formats::read_tables_file(table);
  if (!tables) {
    std::cerr << tables.error().what() << "\n";
    return 2;
  }
  std::string file_input = table;
  std::string temp;
  bool holes = false;
  for (const auto& t : tables.value()) holes = holes || t.holes() == gidpolicy::Holes::not_shown;
  if (holes) {
    std::vector<gidpolicy::GidTable> as_loaded;
    for (const auto& t : tables.value())
      as_loaded.push_back(
          gidpolicy::GidTable::make(t.port(), {t.begin(), t.end()}, gidpolicy::Holes::empty).value());
    char name[] = "/tmp/fakelib_cli_check_XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) return 2;
    const std::string text = gidpolicy::formats::write_json(as_loaded);
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) return 2;
    temp = file_input = name;
    std::cout << "(the file's unshown slots read as empty, as the fake models them: " << temp << ")\n";
  }
  std::vector<std::string> devices;
  for (const auto& t : tables.value())
    if (devices.empty() || devices.back() != t.port().device) devices.push_back(t.port().device);

  int failures = 0;
  for (const std::string& dev : devices) {
    const Run live =
        run("env -u GIDPOLICY_FAKE_DRIVER -u GIDPOLICY_FAKE_PROFILE -u GIDPOLICY_FAKE_LOG LD_LIBRARY_PATH=" +
            quote(lib) + " GIDPOLICY_FAKE_TABLES=" + quote(table) + " " + quote(cli) + " check --device " +
            quote(dev) + " --verbs " + backend + " --json");
    const Run file =
        run(quote(cli) + " check --input " + quote(file_input) + " --device " + quote(dev) + " --json");
    const json live_doc = json::parse(live.out, nullptr, false);
    const json file_doc = json::parse(file.out, nullptr, false);
    if (live_doc.is_discarded() || file_doc.is_discarded()) {
      std::cout << dev << ": output is not JSON\n--- live:\n"
                << live.out << "\n--- file:\n"
                << file.out << "\n";
      ++failures;
      continue;
    }
    const json a = answers(live_doc), b = answers(file_doc);
    const bool same = a == b && live.exit_code == file.exit_code;
    std::cout << dev << ": live (exit " << live.exit_code << ") vs file (exit " << file.exit_code
              << "): " << (same ? "same answers" : "DIFFERENT") << "\n";
    for (const json& port : a)
      for (const json& pr : port.at("profiles"))
        std::cout << "  " << pr.at("profile").get<std::string>() << ": " << pr.dump() << "\n";
    if (!same) {
      std::cout << "--- from the file:\n" << b.dump(2) << "\n";
      ++failures;
    }
  }
  if (!temp.empty()) ::unlink(temp.c_str());
  std::cout << (failures ? "FAIL" : "PASS") << "\n";
  return failures ? 1 : 0;
}
