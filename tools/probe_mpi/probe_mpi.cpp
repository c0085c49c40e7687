// gidpolicy-probe-mpi: `gidpolicy probe` for every link of a topology, one rank per host (or per
// device) under the launcher the cluster already runs (mpirun, srun), MPI carrying the exchange.
// A separate program so that `gidpolicy` never links MPI (docs/probe.md).
//
// 1. Every rank reads its ports (its own view: its devices, its launch settings) and sends them
//    to rank 0 as the snapshot `gidpolicy show --json` would print.
// 2. Rank 0 lays out the topology and predicts every link with the fleet's analysis (the same
//    code as `gidpolicy fleet` on those snapshots), then schedules the links in rounds of
//    disjoint pairs, so no rank holds more than one link's queue pairs at once, and sends the
//    schedule to every rank.
// 3. Each pair of a round tries its link exactly as pair mode does (probe_link.cpp: hello,
//    prediction, RTR, a WRITE and a SEND both ways), over MPI instead of TCP; every pair of a
//    round runs at the same time.
// 4. Rank 0 gathers what the wire did and prints the fleet's report with, for every link, the
//    prediction beside the observation; --json in the fleet's envelope, --svg through the fleet's
//    renderer. Every rank exits 0 only when every link connected, 1 otherwise, 2 for usage.
#include "../gidpolicy/env_file.hpp"
#include "../gidpolicy/fleet_report.hpp"
#include "../gidpolicy/output.hpp"
#include "../gidpolicy/probe_link.hpp"
#include "../gidpolicy/render.hpp"

#include <gidpolicy/fleet.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/stack_table.hpp>
#include <gidpolicy/stacks.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <fmt/core.h>
#include <mpi.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#ifndef GIDPOLICY_VERSION
#define GIDPOLICY_VERSION "unknown"
#endif

namespace gidpolicy::cli {
namespace detail_probe_mpi {

// Each link's messages carry their own tag: a link that ended early on one side (its deadline)
// may leave a message behind, which must never be read as the next link's between those ranks.
constexpr int kTagBase = 1000;
constexpr int kTagSpan = 30000;  // MPI guarantees tags up to 32767
constexpr int kScheduleTag = 7;

// The exchange of one pair over MPI point-to-point messages: each a probe message line.
class MpiChannel final : public ProbeChannel {
 public:
  MpiChannel(int peer, int tag, std::string name) : peer_(peer), tag_(tag), name_(std::move(name)) {}
  [[nodiscard]] const std::string& peer() const noexcept override { return name_; }
  std::optional<ProbeProblem> send(const std::string& type, Json body) override {
    const std::string line = probe_message_line(type, body);
    if (MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, peer_, tag_, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
      return ProbeProblem{ProbeProblem::Kind::peer_died, "MPI_Send to " + name_ + " failed"};
    return std::nullopt;
  }
  result<Json> receive(const std::string& type, std::string_view phase, ProbeClock::time_point deadline,
                       ProbeProblem& problem) override {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(peer_, tag_, MPI_COMM_WORLD, &flag, &st);
      if (flag) {
        int count = 0;
        MPI_Get_count(&st, MPI_CHAR, &count);
        if (count < 0 || static_cast<std::size_t>(count) > kProbeMaxLine) {
          problem = {ProbeProblem::Kind::garbage,
                     name_ + " sent " + std::to_string(count) + " bytes during " + std::string(phase)};
          return fail(errc::invalid_argument, problem.text);
        }
        std::string line(static_cast<std::size_t>(count), '\0');
        MPI_Recv(line.data(), count, MPI_CHAR, peer_, tag_, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return parse_probe_message(line, type, phase, name_, problem);
      }
      if (ProbeClock::now() >= deadline) {
        problem = {ProbeProblem::Kind::absent,
                   name_ + " sent nothing: no " + std::string(phase) + " within the deadline"};
        return fail(errc::invalid_argument, problem.text);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  bool readable() override {
    int flag = 0;
    MPI_Iprobe(peer_, tag_, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
  // MPI ends the whole job when a rank dies: there is nothing to notice here.
  bool pump(std::string_view, ProbeProblem&) override { return true; }

 private:
  int peer_;
  int tag_;
  std::string name_;
};

struct Options {
  std::string topology = "mesh";
  std::optional<std::string> device;
  std::uint32_t port = 1;
  std::vector<std::string> rails;
  std::optional<std::string> jaccl_devices;
  bool jaccl_ring = false;
  std::string profile = "auto";
  std::optional<std::string> stack;
  std::optional<std::string> env_file;
  bool no_env = false;
  std::string qp = "auto";
  double attempt_deadline = 5.0;
  bool json = false;
  std::optional<std::string> svg;
  std::optional<std::string> output;
  std::size_t limit = 20;
};

// The options; the exit code when the program ends here (--help, --version: 0; a bad option: 2).
std::optional<int> parse(int argc, char** argv, Options& o, bool speak) {
  CLI::App app{
      "gidpolicy-probe-mpi: try every link of a topology on the wire, one rank per host (or per device), "
      "with the GID each side advertises, and print the fleet's report with the prediction beside the "
      "observation. Exit 0: every link connected; 1: a link failed; 2: usage.",
      "gidpolicy-probe-mpi"};
  app.set_version_flag("--version", std::string("gidpolicy-probe-mpi ") + GIDPOLICY_VERSION);
  app.add_option("--topology", o.topology, "mesh, ring, rail, or jaccl (a JACCL device file)")
      ->check(CLI::IsMember({"mesh", "ring", "rail", "jaccl"}))
      ->capture_default_str();
  app.add_option("--device", o.device, "This rank uses only this device (one rank per device)");
  app.add_option("--port", o.port, "The port on every device")
      ->check(CLI::Range(1, 255))
      ->capture_default_str();
  app.add_option("--rails", o.rails, "rail: the rails' devices in order (default: each host's ports)")
      ->delimiter(',');
  const StackInfo& jaccl = stack_row(StackId::jaccl);
  app.add_option("--jaccl-devices", o.jaccl_devices,
                 "JACCL's device file or an MLX hostfile, ranks in order (default: $" +
                     std::string(jaccl.launch.read_first) + " or $" + std::string(jaccl.launch.device) +
                     "); implies --topology jaccl");
  auto* ring = app.add_flag("--jaccl-ring", o.jaccl_ring, "Prefer JACCL's ring when the file allows one");
  auto* profile =
      app.add_option("--profile", o.profile, "What every rank runs: a profile spec")->capture_default_str();
  auto* stack = app.add_option("--stack", o.stack,
                               "Each rank runs this stack's own choice under the launch settings of its "
                               "own environment: " +
                                   stack_names(StackSet::predicted));
  profile->excludes(stack);
  auto* env_file = app.add_option("--env-file", o.env_file,
                                  "With --stack: a dotenv or docker-compose file with the launch's settings");
  auto* no_env = app.add_flag("--no-env", o.no_env, "With --stack: do not read the environment's settings");
  app.add_option("--qp", o.qp,
                 "Queue pair types to try: rc, uc, both, or auto (UC where a side is a Thunderbolt port, as "
                 "JACCL uses: Apple's driver refuses RC; RC elsewhere)")
      ->check(CLI::IsMember({"auto", "rc", "uc", "both"}))
      ->capture_default_str();
  app.add_option("--attempt-deadline", o.attempt_deadline, "Seconds each wait of a link's attempt may take")
      ->check(CLI::Range(0.05, 600.0))
      ->capture_default_str();
  app.add_flag("--json", o.json, "Rank 0 prints the gidpolicy.probe.mpi document (version 2)");
  app.add_option("--svg", o.svg, "Rank 0 writes the host x host matrix of what the wire did to FILE");
  app.add_option("--output", o.output, "Rank 0 writes the report to FILE (atomically) instead of stdout");
  app.add_option("--limit", o.limit, "Text: list at most this many causes, links and hosts")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (speak) {
      if (e.get_exit_code() == 0) {
        app.exit(e);  // --help, --version: to stdout
      } else {
        std::fprintf(stderr, "gidpolicy-probe-mpi: %s\n", e.what());
      }
    }
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  const auto usage = [&](const std::string& why) -> std::optional<int> {
    if (speak) std::fprintf(stderr, "gidpolicy-probe-mpi: %s\n", why.c_str());
    return 2;
  };
  if ((env_file->count() || no_env->count()) && !o.stack)
    return usage("--env-file and --no-env are for --stack");
  const auto env = [](std::string_view a, std::string_view b) -> const char* {
    if (const char* v = std::getenv(std::string(a).c_str())) return v;
    return std::getenv(std::string(b).c_str());
  };
  if (o.jaccl_devices) o.topology = "jaccl";
  if (o.topology == "jaccl" && !o.jaccl_devices) {
    if (const char* f = env(jaccl.launch.read_first, jaccl.launch.device))
      o.jaccl_devices = std::string(f);
    else
      return usage("--topology jaccl: give the device file with --jaccl-devices FILE (or set " +
                   std::string(jaccl.launch.read_first) + ")");
  }
  if (!ring->count() && env(stack_vars::kJacclRing, stack_vars::kMlxJacclRing)) o.jaccl_ring = true;
  if (!o.rails.empty() && o.topology != "rail") return usage("--rails is for --topology rail");
  return std::nullopt;
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// Every rank sends rank 0 a string; rank 0 gets them in rank order.
std::vector<std::string> gather_text(const std::string& text, int rank, int size) {
  int len = static_cast<int>(text.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank == 0) {
    int off = 0;
    for (std::size_t i = 0; i < lens.size(); ++i) {
      offsets[i] = off;
      off += lens[i];
    }
    all.resize(static_cast<std::size_t>(off));
  }
  MPI_Gatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0)
    for (std::size_t i = 0; i < lens.size(); ++i)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lens[i])));
  return out;
}

// Rank 0's string to every rank.
std::string broadcast_text(std::string text, int rank) {
  int len = rank == 0 ? static_cast<int>(text.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return text;
}

// What this rank brings: its ports, read once, and how it chooses on each.
struct Local {
  verbs::DlopenApi api;
  std::string problem;  ///< why this rank has no ports to offer ("" when it has)
  std::vector<GidTable> tables;
  std::optional<StackLaunch> launch;  ///< --stack: the settings this rank's launch gives the stack
};

// This rank's ports: --device's, else every device's; ports 1, 2, ... until the driver says there
// is no more. A port that is down is read too: the report says so.
void read_ports(Local& l, const Options& o) {
  if (!l.api.loaded()) {
    l.problem = l.api.load_error().what();
    return;
  }
  std::vector<std::string> names;
  if (o.device) {
    names.push_back(*o.device);
  } else {
    auto found = l.api.device_names();
    if (!found) {
      l.problem = found.error().what();
      return;
    }
    names = std::move(found).value();
  }
  verbs::SnapshotOptions options{.allow_inactive = true};
  for (const auto& name : names) {
    for (std::uint32_t p = 1; p <= 255; ++p) {
      auto t = verbs::snapshot(l.api, name, p, options);
      if (!t) {
        if (p == 1) {
          l.problem = name + ": " + t.error().what();
          l.tables.clear();
          return;
        }
        break;  // past the device's last port
      }
      l.tables.push_back(std::move(t).value());
    }
  }
}

// The profile this rank runs on `t`: --profile's, or the stack's own choice under its launch.
result<Profile> profile_on(const Options& o, const Local& l, const GidTable& t) {
  if (!o.stack) return parse_profile(o.profile);
  const StackInfo* row = find_stack(*o.stack);
  if (!l.launch->uses(t.port().device, t.port().port))
    return fail(errc::invalid_argument,
                l.launch->devices->variable + " leaves " + port_name(t) + " out: the stack does not use it");
  return stack_profile_for(row->id, t, *l.launch);
}

// What rank 0 knows of one rank.
struct RankInfo {
  std::string host;
  std::string problem;
  std::string snapshot;                      ///< formats::write_json text
  std::map<std::string, std::string> specs;  ///< "device/port" -> the profile spec it runs there
};

std::string port_key(std::string_view device, std::uint32_t port) {
  return std::string(device) + "/" + std::to_string(port);
}

// One link to try: which ranks and ports, in which round.
struct Scheduled {
  std::uint64_t index = 0;
  int round = 0;
  int a = 0, b = 0;
  std::string a_device, b_device;
  std::uint32_t a_port = 1, b_port = 1;
  std::string qp = "rc";  ///< rc, uc or both
};

// Rounds of disjoint pairs: no rank in two links of a round. Links are taken lane by lane and,
// within a lane, in the round the circle method gives their pair (a mesh of n ranks is then n - 1
// rounds of n / 2 pairs, the fewest possible; n rounds when n is odd), each into the first round
// where both ranks are free (a ring: 2 rounds, 3 when n is odd).
int schedule(std::vector<Scheduled>& links, int n, std::vector<std::uint32_t> lanes) {
  const int m = n % 2 == 0 ? n : n + 1;
  const auto circle_round = [&](int x, int y) {
    if (x > y) std::swap(x, y);
    if (y == m - 1) return x;
    return ((x + y) * (m / 2)) % (m - 1);  // x + y = 2r (mod m - 1); m / 2 is 2's inverse there
  };
  std::vector<std::size_t> order(links.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return std::pair{lanes[x], circle_round(links[x].a, links[x].b)} <
           std::pair{lanes[y], circle_round(links[y].a, links[y].b)};
  });
  std::vector<std::vector<bool>> busy;  // busy[round][rank]
  int rounds = 0;
  for (std::size_t i : order) {
    auto& l = links[i];
    int r = 0;
    for (;; ++r) {
      if (r == static_cast<int>(busy.size())) busy.emplace_back(static_cast<std::size_t>(n), false);
      auto& row = busy[static_cast<std::size_t>(r)];
      if (!row[static_cast<std::size_t>(l.a)] && !row[static_cast<std::size_t>(l.b)]) {
        row[static_cast<std::size_t>(l.a)] = row[static_cast<std::size_t>(l.b)] = true;
        break;
      }
    }
    l.round = r;
    rounds = std::max(rounds, r + 1);
  }
  return rounds;
}

Json schedule_json(const std::vector<Scheduled>& links, int rounds) {
  Json j;
  j["rounds"] = rounds;
  Json arr = Json::array();
  for (const auto& l : links)
    arr.push_back(
        Json::array({l.index, l.round, l.a, l.a_device, l.a_port, l.b, l.b_device, l.b_port, l.qp}));
  j["links"] = std::move(arr);
  return j;
}

std::vector<Scheduled> schedule_from(const Json& j) {
  std::vector<Scheduled> out;
  for (const auto& e : j["links"])
    out.push_back(Scheduled{.index = e[0].get<std::uint64_t>(),
                            .round = e[1].get<int>(),
                            .a = e[2].get<int>(),
                            .b = e[5].get<int>(),
                            .a_device = e[3].get<std::string>(),
                            .b_device = e[6].get<std::string>(),
                            .a_port = e[4].get<std::uint32_t>(),
                            .b_port = e[7].get<std::uint32_t>(),
                            .qp = e[8].get<std::string>()});
  return out;
}

// This rank's side of one link: the port, a fresh table, the plan, the QPs, the exchange.
LinkOutcome try_link(const Options& o, Local& l, const Scheduled& s, int rank, std::mt19937& rng) {
  const bool is_a = rank == s.a;
  const int peer = is_a ? s.b : s.a;
  const std::string& device = is_a ? s.a_device : s.b_device;
  const std::uint32_t port = is_a ? s.a_port : s.b_port;
  const auto attempt =
      std::chrono::duration_cast<ProbeClock::duration>(std::chrono::duration<double>(o.attempt_deadline));
  MpiChannel ch(peer, kTagBase + static_cast<int>(s.index % kTagSpan), "rank " + std::to_string(peer));
  std::string problem;
  std::optional<GidTable> table;
  std::optional<Plan> plan;
  verbs::DeviceHandle dev;
  std::optional<Json> pin;
  DriverModel model = DriverModel::for_platform(host_platform());
  if (!l.problem.empty()) {
    problem = l.problem;
  } else if (auto d = l.api.open_device(device); !d) {
    problem = device + ": " + d.error().what();
  } else {
    dev = d.value();
    // The table as it is now (the one sent to rank 0 may have changed since: the plan is this one's).
    auto t = verbs::snapshot(l.api, dev, port);
    if (!t) {
      problem = port_name(device, port) + ": " + t.error().what();
    } else {
      table = std::move(t).value();
      model = DriverModel::for_table(*table);
      auto prof = profile_on(o, l, *table);
      auto p = prof ? prof.value().plan(*table) : result<Plan>(fail(prof.error()));
      if (p)
        plan = std::move(p).value();
      else
        problem = port_name(*table) + ": the selection failed: " + p.error().what();
      if (o.stack && l.launch) pin = stale_pin_cause(find_stack(*o.stack)->id, *l.launch, *table, model);
    }
  }
  LinkOutcome link;
  if (!plan) {
    const std::string why = "rank " + std::to_string(rank) + ": " + problem;
    (void)ch.send("abort", Json{{"reason", why}});
    link.problem = ProbeProblem{ProbeProblem::Kind::invalid, why};
    ProbeProblem ignored;  // the peer's hello (or its abort), taken so nothing is left behind
    (void)ch.receive("hello", "the peer's hello", ProbeClock::now() + attempt, ignored);
  } else {
    ProbeSide self = port_side(*table, model, o.stack ? "stack " + *o.stack : o.profile, rng);
    self.role = is_a ? "listener" : "connector";
    std::vector<QpKind> kinds;
    if (s.qp != "uc") kinds.push_back(QpKind::rc);
    if (s.qp != "rc") kinds.push_back(QpKind::uc);
    std::vector<LocalQp> qps;
    advertise_plan(self, *plan, l.api, dev, port, kinds, rng, qps);
    AttemptContext ctx{.api = &l.api, .table = &*table, .plan = &*plan, .model = model, .pin_cause = pin};
    link = run_link(ctx, self, qps, ch, attempt, ProbeClock::now() + 4 * attempt);
    for (auto& q : qps)
      if (q.qp) (void)l.api.destroy_qp(q.qp);
  }
  if (dev) (void)l.api.close_device(dev);
  return link;
}

// ---------------------------------------------------------------------------------------------
// Rank 0: the observations in the fleet's terms, the report.

// The probe's outcome in the fleet's terms (fleet_report.hpp, ObservedDirection).
gidpolicy::LinkOutcome fleet_outcome(const std::string& probe_outcome) {
  if (probe_outcome == "connected") return gidpolicy::LinkOutcome::ok;
  if (probe_outcome == "create_failed") return gidpolicy::LinkOutcome::qp_refused;
  if (probe_outcome == "completion_error" || probe_outcome == "no_delivery")
    return gidpolicy::LinkOutcome::times_out;
  if (probe_outcome == "payload_mismatch" || probe_outcome == "write_mismatch")
    return gidpolicy::LinkOutcome::dropped;
  if (probe_outcome == "not_attempted") return gidpolicy::LinkOutcome::unusable;
  return gidpolicy::LinkOutcome::rtr_error;  // rtr_failed, rts_failed, refused_before_rtr
}

struct Sides {
  std::string a, b;  ///< "host device port N", as the link's sides are named
};

// One direction of an observed link (the first QP type that failed in it).
ObservedDirection observed_direction(const Json& rec, std::size_t which, const Sides& names) {
  ObservedDirection d;
  if (rec["problem"].is_string()) {
    d.outcome = gidpolicy::LinkOutcome::unusable;
    d.text = rec["problem"].get<std::string>();
    return d;
  }
  for (const auto& q : rec["qps"]) {
    const Json& x = q["directions"][which];
    if (x["connected"].get<bool>()) continue;
    d.outcome = fleet_outcome(x["outcome"].get<std::string>());
    const std::string at =
        x["side"].is_string() ? (x["side"] == "listener" ? names.a : names.b) : std::string();
    d.text = q["kind"].get<std::string>() + " " + x["outcome"].get<std::string>();
    if (!at.empty()) d.text += " at " + at;
    if (x["errno"].is_number())
      d.text +=
          ": " + x["errno_name"].get<std::string>() + " (" + std::to_string(x["errno"].get<int>()) + ")";
    if (x["wc_status"].is_string()) d.text += ", " + x["wc_status"].get<std::string>();
    if (x["cause"].is_object())
      d.text += "; cause " + x["cause"].value("id", std::string("?")) + ": " +
                x["cause"].value("summary", std::string());
    return d;
  }
  return d;
}

struct Report {
  std::vector<ObservedLink> observed;  // by link index
  std::vector<Json> records;           // by link index (null: not tried)
  std::uint64_t connected = 0, contradicted = 0;
  // cause id -> (failed directions, links)
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> causes;
  // host index -> its fixes, in order of first appearance
  std::map<std::uint32_t, std::vector<std::string>> fixes;
};

Report judge(const fleet::Analysis& an, const std::vector<Json>& records) {
  Report r;
  r.observed.resize(an.link_count());
  r.records.resize(an.link_count());
  for (const Json& rec : records) {
    const auto k = rec["k"].get<std::uint64_t>();
    if (k >= an.link_count()) continue;
    const fleet::Link l = an.link(k);
    const auto& sa = an.sides()[l.a];
    const auto& sb = an.sides()[l.b];
    const Sides names{an.host(sa.host).host + " " + port_name(sa.device, sa.port),
                      an.host(sb.host).host + " " + port_name(sb.device, sb.port)};
    ObservedLink& o = r.observed[k];
    o.tried = true;
    o.a_to_b = observed_direction(rec, 0, names);
    o.b_to_a = observed_direction(rec, 1, names);
    r.records[k] = rec;
    if (o.connected()) ++r.connected;
    if (o.connected() != l.connected()) ++r.contradicted;
    // Causes and fixes: each failed direction's cause, put on the host at fault.
    std::set<std::string> link_causes;
    const auto note = [&](const std::string& id, const std::string& side, const std::string& remedy) {
      ++r.causes[id].first;
      link_causes.insert(id);
      if (remedy.empty() || side.empty()) return;
      // A remedy for the peer ("make the peer advertise ...") is that host's fix, not this one's.
      constexpr std::string_view peer_prefix = "make the peer ";
      const bool for_peer = remedy.starts_with(peer_prefix);
      const bool listener = (side == "listener") != for_peer;
      const std::string fix = for_peer ? remedy.substr(peer_prefix.size()) : remedy;
      auto& list = r.fixes[listener ? sa.host : sb.host];
      if (std::find(list.begin(), list.end(), fix) == list.end()) list.push_back(fix);
    };
    if (rec["problem"].is_string()) {
      note("side_problem", "", "");
      note("side_problem", "", "");
    } else {
      for (std::size_t which = 0; which < 2; ++which) {
        for (const auto& q : rec["qps"]) {
          const Json& x = q["directions"][which];
          if (x["connected"].get<bool>()) continue;
          const std::string side = x["side"].is_string() ? x["side"].get<std::string>() : std::string();
          if (x["cause"].is_object())
            note(x["cause"].value("id", std::string("unknown")), side,
                 x["cause"].value("remedy", std::string()));
          else
            note(x["outcome"].get<std::string>(), side, "");
          break;  // the direction's first failing QP type, as observed_direction() reports it
        }
      }
    }
    for (const auto& id : link_causes) ++r.causes[id].second;
  }
  return r;
}

std::string text_report(const fleet::Analysis& an, const Report& r, const Options& o, int ranks, int rounds,
                        const std::vector<RankInfo>& info) {
  const std::uint64_t links = an.link_count();
  std::string out = fmt::format(
      "gidpolicy-probe-mpi: {} of {} ranks, profile {}: {} of {} links connected on the wire "
      "(gidpolicy fleet predicted {} from the same snapshots); {} rounds of disjoint pairs\n",
      an.topology_name(), ranks, o.stack ? "stack " + *o.stack : an.profile_spec(), r.connected, links,
      an.summary().connected, rounds);
  if (r.contradicted == 0) {
    out += "every link did what was predicted\n";
  } else {
    out += fmt::format("THE WIRE CONTRADICTS THE PREDICTION on {} link{}:\n", r.contradicted,
                       r.contradicted == 1 ? "" : "s");
    for (std::uint64_t k = 0; k < links; ++k) {
      const auto& ol = r.observed[k];
      const fleet::Link l = an.link(k);
      if (!ol.tried || ol.connected() == l.connected()) continue;
      out += fmt::format("  {}: predicted {}, the wire {}\n", an.describe_link(l),
                         l.connected() ? "connected" : "failing", ol.connected() ? "connected" : "failed");
    }
  }
  if (!r.causes.empty()) {
    std::vector<std::pair<std::string, std::pair<std::uint64_t, std::uint64_t>>> causes(r.causes.begin(),
                                                                                        r.causes.end());
    std::stable_sort(causes.begin(), causes.end(),
                     [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
    out += "failures on the wire by cause:\n";
    for (const auto& [id, n] : causes)
      out += fmt::format("  {}: {} failed direction{} on {} link{}\n", id, n.first, n.first == 1 ? "" : "s",
                         n.second, n.second == 1 ? "" : "s");
  }
  const std::uint64_t failed = links - r.connected;
  if (failed) {
    out += fmt::format("failed links ({}{}):\n", failed > o.limit ? fmt::format("first {} of ", o.limit) : "",
                       failed);
    std::size_t shown = 0;
    for (std::uint64_t k = 0; k < links && shown < o.limit; ++k) {
      const auto& ol = r.observed[k];
      if (ol.connected()) continue;
      ++shown;
      const fleet::Link l = an.link(k);
      out += fmt::format("  {}{}:\n", an.describe_link(l), l.lane ? fmt::format(" (lane {})", l.lane) : "");
      if (!ol.tried) {
        out += "    not tried\n";
        continue;
      }
      const std::pair<const ObservedDirection*, const fleet::Direction*> dirs[] = {{&ol.a_to_b, &l.a_to_b},
                                                                                   {&ol.b_to_a, &l.b_to_a}};
      const char* arrow[] = {"->", "<-"};
      for (std::size_t i = 0; i < 2; ++i) {
        const auto& [seen, predicted] = dirs[i];
        if (seen->outcome == gidpolicy::LinkOutcome::ok && predicted->ok()) continue;
        out +=
            fmt::format("    {} wire: {}\n", arrow[i],
                        seen->outcome == gidpolicy::LinkOutcome::ok ? std::string("connected") : seen->text);
        out += fmt::format(
            "       predicted: {}{}\n",
            predicted->ok()
                ? std::string("ok")
                : std::string(gidpolicy::to_string(predicted->outcome)) + ": " + an.describe(*predicted),
            (seen->outcome == gidpolicy::LinkOutcome::ok) != predicted->ok() ? "  (CONTRADICTED)" : "");
      }
    }
    if (failed > shown) out += fmt::format("  ... and {} more (--json lists every link)\n", failed - shown);
  }
  if (!r.fixes.empty()) {
    out += "fixes, per host:\n";
    std::size_t shown = 0;
    for (const auto& [host, list] : r.fixes) {
      if (shown++ == o.limit) {
        out += fmt::format("  ... and {} more hosts (--json lists them)\n", r.fixes.size() - o.limit);
        break;
      }
      for (const auto& fix : list) out += fmt::format("  {} (rank {}): {}\n", an.host(host).host, host, fix);
    }
  }
  for (std::size_t k = 0; k < info.size(); ++k)
    if (!info[k].problem.empty()) out += fmt::format("rank {} ({}): {}\n", k, info[k].host, info[k].problem);
  out += "the prediction (gidpolicy fleet on the ranks' snapshots):\n";
  ReportOptions ro;
  ro.limit = o.limit;
  std::string fleet_text_out;
  fleet_text(an, ro, [&](std::string_view s) { fleet_text_out += s; });
  out += indent(fleet_text_out, "  ");
  return out;
}

std::string json_report(const fleet::Analysis& an, const Report& r, const Options& o, int ranks, int rounds,
                        const std::string& backend) {
  Json doc;
  doc["schema"] = "gidpolicy.probe.mpi";
  // Version 2: the fleet's envelope and document, every link's prediction beside what the wire did.
  doc["version"] = 2;
  doc["host"] = nullptr;  // many hosts, each named in its links
  doc["source"] = fmt::format("{} ranks under MPI ({})", ranks, backend);
  doc["topology"] = an.topology_name();
  doc["profile"] = an.profile_spec();
  doc["stack"] = o.stack ? Json(*o.stack) : Json(nullptr);
  doc["ranks"] = ranks;
  doc["rounds"] = rounds;
  doc["links"] = an.link_count();
  doc["connected"] = r.connected;
  doc["failed"] = an.link_count() - r.connected;
  doc["contradicted"] = r.contradicted;
  doc["ok"] = r.connected == an.link_count();
  std::string fleet_doc;
  ReportOptions ro;
  ro.limit = o.limit;
  fleet_json(an, ro, "", [&](std::string_view s) { fleet_doc += s; });
  doc["fleet"] = Json::parse(fleet_doc);
  Json results = Json::array();
  for (std::uint64_t k = 0; k < an.link_count(); ++k) {
    const fleet::Link l = an.link(k);
    const auto& sa = an.sides()[l.a];
    const auto& sb = an.sides()[l.b];
    Json j;
    j["index"] = k;
    j["a"] = an.host(sa.host).host;
    j["a_rank"] = sa.host;
    j["a_device"] = sa.device;
    j["a_port"] = sa.port;
    j["b"] = an.host(sb.host).host;
    j["b_rank"] = sb.host;
    j["b_device"] = sb.device;
    j["b_port"] = sb.port;
    j["lane"] = l.lane;
    j["predicted"] = Json{{"connected", l.connected()},
                          {"a_to_b", Json::parse(fleet_direction_json(an, l.a_to_b))},
                          {"b_to_a", Json::parse(fleet_direction_json(an, l.b_to_a))}};
    const Json& rec = r.records[k];
    const ObservedLink& ol = r.observed[k];
    Json seen;
    seen["tried"] = ol.tried;
    seen["connected"] = ol.connected();
    seen["problem"] = rec.is_object() ? rec["problem"] : Json(nullptr);
    seen["qps"] = rec.is_object() ? rec["qps"] : Json::array();
    j["observed"] = std::move(seen);
    j["agrees"] = ol.tried && ol.connected() == l.connected();
    results.push_back(std::move(j));
  }
  doc["link_results"] = std::move(results);
  Json causes = Json::array();
  for (const auto& [id, n] : r.causes)
    causes.push_back(Json{{"cause", id}, {"directions", n.first}, {"links", n.second}});
  doc["causes"] = std::move(causes);
  Json fixes = Json::array();
  for (const auto& [host, list] : r.fixes)
    fixes.push_back(Json{{"host", an.host(host).host}, {"rank", host}, {"fixes", list}});
  doc["fixes"] = std::move(fixes);
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// ---------------------------------------------------------------------------------------------

int run(int argc, char** argv, int rank, int size) {
  Options o;
  if (auto code = parse(argc, argv, o, rank == 0)) return *code;
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(rank));

  // 1. This rank's ports and choices, to rank 0.
  Local local;
  std::string setup_error;  // a usage error this rank found (its launch settings), said by rank 0
  if (o.stack) {
    const StackInfo* row = find_stack(*o.stack);
    if (!row || !row->predicted) {
      setup_error =
          "--stack: expected one of " + stack_names(StackSet::predicted) + ", found '" + *o.stack + "'";
    } else {
      auto settings = read_launch_settings(!o.no_env, o.env_file);
      if (!settings) {
        setup_error = settings.error().what();
      } else {
        local.launch = read_launch(row->id, settings.value());
        if (local.launch->refused)
          local.problem =
              "the stack does not start: " + local.launch->pin_variable + " " + *local.launch->refused;
      }
    }
  } else if (auto p = parse_profile(o.profile); !p) {
    setup_error = "--profile: " + p.error().what();
  }
  if (setup_error.empty() && local.problem.empty()) read_ports(local, o);
  Json mine;
  mine["host"] = host_name();
  mine["problem"] = local.problem;
  mine["setup_error"] = setup_error;
  mine["snapshot"] = local.problem.empty()
                         ? formats::write_json(local.tables, {.host = std::nullopt, .source = {}}, -1)
                         : std::string();
  Json specs = Json::object();
  if (o.stack && local.launch)
    for (const auto& t : local.tables)
      if (auto p = profile_on(o, local, t))
        specs[port_key(t.port().device, t.port().port)] = p.value().spec();
  mine["specs"] = std::move(specs);
  const auto gathered = gather_text(mine.dump(-1, ' ', false, Json::error_handler_t::replace), rank, size);

  // 2. Rank 0: the prediction and the schedule.
  std::optional<fleet::Analysis> analysis;
  std::vector<RankInfo> info;
  std::string plan_text;
  if (rank == 0) {
    Json plan;
    std::string error;
    for (int r = 0; r < size && error.empty(); ++r) {
      const Json j = Json::parse(gathered[static_cast<std::size_t>(r)]);
      RankInfo ri;
      ri.host = j["host"].get<std::string>();
      ri.problem = j["problem"].get<std::string>();
      ri.snapshot = j["snapshot"].get<std::string>();
      for (const auto& [k, v] : j["specs"].items()) ri.specs[k] = v.get<std::string>();
      if (!j["setup_error"].get<std::string>().empty())
        error = "rank " + std::to_string(r) + ": " + j["setup_error"].get<std::string>();
      info.push_back(std::move(ri));
    }
    // Host names: the machine's, or "HOST#RANK" where ranks share one (a rank per device).
    std::map<std::string, int> per_host;
    for (const auto& ri : info) ++per_host[ri.host];
    std::vector<fleet::HostSnapshot> hosts;
    for (std::size_t r = 0; r < info.size() && error.empty(); ++r) {
      const std::string name =
          per_host[info[r].host] > 1 ? info[r].host + "#" + std::to_string(r) : info[r].host;
      if (!info[r].problem.empty()) {
        hosts.push_back(fleet::HostSnapshot{name, "rank " + std::to_string(r), {}});
        continue;
      }
      auto s = fleet::parse_snapshot(info[r].snapshot, "rank " + std::to_string(r), name);
      if (!s) {
        error = s.error().what();
        break;
      }
      hosts.push_back(std::move(s).value());
    }
    fleet::Topology topo;
    topo.port = o.port;
    if (o.topology == "ring") topo.pairing = fleet::Pairing::ring;
    if (o.topology == "rail") {
      topo.pairing = fleet::Pairing::rail;
      topo.rails = o.rails;
    }
    if (error.empty() && o.topology == "jaccl") {
      auto devices = fleet::read_device_file(*o.jaccl_devices, hosts.size());
      if (!devices) {
        error = devices.error().what();
      } else {
        topo.pairing = fleet::Pairing::jaccl;
        topo.jaccl = std::move(devices).value();
        topo.jaccl_prefer_ring = o.jaccl_ring;
      }
    }
    fleet::Options fo;
    if (error.empty()) {
      auto fleet_profile = parse_profile(o.stack ? std::string(find_stack(*o.stack)->automatic) : o.profile);
      if (!fleet_profile)
        error = fleet_profile.error().what();
      else
        fo.profile = fleet_profile.value();
    }
    if (o.stack)
      fo.profile_for = [&info](std::uint32_t host, const GidTable& t) -> std::optional<Profile> {
        const auto& by_port = info[host].specs;
        const auto it = by_port.find(port_key(t.port().device, t.port().port));
        if (it == by_port.end()) return std::nullopt;
        auto p = parse_profile(it->second);
        return p ? std::optional<Profile>(p.value()) : std::nullopt;
      };
    if (error.empty() && size < 2) error = "a probe needs at least two ranks (mpirun -np 2 or more)";
    if (error.empty()) {
      auto an = fleet::Analysis::run(std::move(hosts), topo, fo);
      if (!an)
        error = an.error().what();
      else
        analysis.emplace(std::move(an).value());
    }
    if (error.empty()) {
      std::vector<Scheduled> links;
      std::vector<std::uint32_t> lanes;
      for (std::uint64_t k = 0; k < analysis->link_count(); ++k) {
        const fleet::Link l = analysis->link(k);
        const auto& sa = analysis->sides()[l.a];
        const auto& sb = analysis->sides()[l.b];
        links.push_back(Scheduled{.index = k,
                                  .round = 0,
                                  .a = static_cast<int>(sa.host),
                                  .b = static_cast<int>(sb.host),
                                  .a_device = sa.device,
                                  .b_device = sb.device,
                                  .a_port = sa.port,
                                  .b_port = sb.port});
        lanes.push_back(l.lane);
        // --qp auto: UC where a side is Apple's (its driver creates no RC QP: EOPNOTSUPP), as JACCL.
        if (o.qp == "auto") {
          const auto darwin = [&](const fleet::SideInfo& side) {
            for (const auto& t : analysis->host(side.host).ports)
              if (t.port().device == side.device && t.port().port == side.port)
                return DriverModel::for_table(t).platform == Platform::darwin;
            return false;
          };
          links.back().qp = darwin(sa) || darwin(sb) ? "uc" : "rc";
        } else {
          links.back().qp = o.qp;
        }
      }
      const int rounds = schedule(links, size, lanes);
      plan = schedule_json(links, rounds);
    } else {
      plan["error"] = error;
    }
    plan_text = plan.dump();
  }
  const Json plan = Json::parse(broadcast_text(plan_text, rank));
  if (plan.contains("error")) {
    if (rank == 0)
      std::fprintf(stderr, "gidpolicy-probe-mpi: %s\n", plan["error"].get<std::string>().c_str());
    return 2;
  }
  const auto links = schedule_from(plan);
  const int rounds = plan["rounds"].get<int>();

  // 3. The rounds: this rank's link of each (at most one), every pair of a round at once.
  Json records = Json::array();  // the links this rank records (those where it is side a)
  for (int round = 0; round < rounds; ++round) {
    for (const auto& s : links) {
      if (s.round != round || (rank != s.a && rank != s.b)) continue;
      LinkOutcome link = try_link(o, local, s, rank, rng);
      if (rank != s.a) continue;
      Json rec;
      rec["k"] = s.index;
      rec["connected"] = link.connected && !link.problem;
      rec["problem"] = link.problem ? Json(link.problem->text) : Json(nullptr);
      Json jq = Json::array();
      for (const auto& q : link.qps)
        jq.push_back(Json{{"kind", std::string(to_string(q.kind))},
                          {"directions", Json::array({direction_json(q.out), direction_json(q.in)})}});
      rec["qps"] = std::move(jq);
      records.push_back(std::move(rec));
    }
    MPI_Barrier(MPI_COMM_WORLD);  // a round ends everywhere before the next one starts
  }

  // 4. Rank 0: the report.
  const auto results = gather_text(records.dump(-1, ' ', false, Json::error_handler_t::replace), rank, size);
  int verdict = 0;
  if (rank == 0) {
    std::vector<Json> all;
    for (const auto& t : results)
      for (auto& rec : Json::parse(t)) all.push_back(std::move(rec));
    const Report r = judge(*analysis, all);
    std::optional<Output> svg;
    if (o.svg) {
      svg.emplace(Output::open(o.svg, "--svg"));
      if (svg->error()) verdict = 2;
    }
    Output out = Output::open(o.output, "--output");
    if (out.error()) verdict = 2;
    if (verdict == 2) {
      std::fprintf(stderr, "gidpolicy-probe-mpi: %s\n",
                   (svg && svg->error() ? *svg->error() : *out.error()).c_str());
    } else {
      if (svg) {
        ReportOptions ro;
        ro.observed = &r.observed;
        ro.title = "gidpolicy-probe-mpi";
        fleet_svg(*analysis, ro, [&](std::string_view s) { svg->write(s); });
      }
      out.write(o.json ? json_report(*analysis, r, o, size, rounds, local.api.backend_name())
                       : text_report(*analysis, r, o, size, rounds, info));
      std::optional<std::string> err;
      if (svg) err = svg->commit();
      if (!err) err = out.commit();
      if (err) {
        std::fprintf(stderr, "gidpolicy-probe-mpi: %s\n", err->c_str());  // "output error: ..."
        verdict = 2;
      } else {
        verdict = r.connected == analysis->link_count() ? 0 : 1;
      }
    }
  }
  MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return verdict;
}

}  // namespace detail_probe_mpi
}  // namespace gidpolicy::cli

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 2;
  try {
    code = gidpolicy::cli::detail_probe_mpi::run(argc, argv, rank, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gidpolicy-probe-mpi: rank %d: internal error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return code;
}
