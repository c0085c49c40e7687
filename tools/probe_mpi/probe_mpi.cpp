// gidpolicy-probe-mpi: `gidpolicy probe` for every link of a topology, one rank per host (or per
// device) under the launcher the cluster already runs (mpirun, srun), MPI carrying the exchange.
// A separate program so that `gidpolicy` never links MPI (docs/probe.md).
//
// The links (mesh: every pair; ring: each rank and the next) run in rounds of disjoint pairs, so
// no rank holds more than one link's queue pairs at once; every pair of a round runs at the same
// time. Each pair is tried exactly as pair mode tries it (probe_link.cpp: hello, prediction, RTR,
// a WRITE and a SEND both ways), over MPI instead of TCP. Rank 0 gathers every link and prints
// the report. Exit 0 (every rank) only when every link connected, 1 otherwise, 2 for usage.
#include "../gidpolicy/probe_link.hpp"

#include <gidpolicy/profiles.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <fmt/core.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gidpolicy::cli {
namespace detail_probe_mpi {

constexpr int kTag = 4242;

// The exchange of one pair over MPI point-to-point messages: each a probe message line.
class MpiChannel final : public ProbeChannel {
 public:
  MpiChannel(int peer, std::string name) : peer_(peer), name_(std::move(name)) {}
  [[nodiscard]] const std::string& peer() const noexcept override { return name_; }
  std::optional<ProbeProblem> send(const std::string& type, Json body) override {
    const std::string line = probe_message_line(type, body);
    if (MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, peer_, kTag, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
      return ProbeProblem{ProbeProblem::Kind::peer_died, "MPI_Send to " + name_ + " failed"};
    return std::nullopt;
  }
  result<Json> receive(const std::string& type, std::string_view phase, ProbeClock::time_point deadline,
                       ProbeProblem& problem) override {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(peer_, kTag, MPI_COMM_WORLD, &flag, &st);
      if (flag) {
        int count = 0;
        MPI_Get_count(&st, MPI_CHAR, &count);
        if (count < 0 || static_cast<std::size_t>(count) > kProbeMaxLine) {
          problem = {ProbeProblem::Kind::garbage,
                     name_ + " sent " + std::to_string(count) + " bytes during " + std::string(phase)};
          return fail(errc::invalid_argument, problem.text);
        }
        std::string line(static_cast<std::size_t>(count), '\0');
        MPI_Recv(line.data(), count, MPI_CHAR, peer_, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
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
    MPI_Iprobe(peer_, kTag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
  // MPI ends the whole job when a rank dies: there is nothing to notice here.
  bool pump(std::string_view, ProbeProblem&) override { return true; }

 private:
  int peer_;
  std::string name_;
};

struct Options {
  std::string topology = "mesh";
  std::optional<std::string> device;
  std::uint32_t port = 1;
  std::string profile = "auto";
  std::string qp = "rc";
  double attempt_deadline = 5.0;
  bool json = false;  ///< rank 0 prints schemas/gidpolicy.probe.mpi.schema.json's document
};

bool parse(int argc, char** argv, Options& o, std::string& why) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    std::optional<std::string> v;
    if (a == "--topology" || a == "--device" || a == "--port" || a == "--profile" || a == "--qp" ||
        a == "--attempt-deadline") {
      v = value();
      if (!v) {
        why = a + ": expected a value after it";
        return false;
      }
    }
    if (a == "--topology") {
      if (*v != "mesh" && *v != "ring") {
        why = "--topology: expected mesh or ring, found '" + *v + "'";
        return false;
      }
      o.topology = *v;
    } else if (a == "--device") {
      o.device = *v;
    } else if (a == "--port") {
      const int p = std::atoi(v->c_str());
      if (p < 1 || p > 255) {
        why = "--port: expected a port number 1..255, found '" + *v + "'";
        return false;
      }
      o.port = static_cast<std::uint32_t>(p);
    } else if (a == "--profile") {
      o.profile = *v;
    } else if (a == "--qp") {
      if (*v != "rc" && *v != "uc" && *v != "both") {
        why = "--qp: expected rc, uc or both, found '" + *v + "'";
        return false;
      }
      o.qp = *v;
    } else if (a == "--attempt-deadline") {
      const double d = std::atof(v->c_str());
      if (!(d >= 0.05 && d <= 600)) {
        why = "--attempt-deadline: expected seconds 0.05..600, found '" + *v + "'";
        return false;
      }
      o.attempt_deadline = d;
    } else if (a == "--json") {
      o.json = true;
    } else {
      why = "unexpected argument '" + a +
            "' (gidpolicy-probe-mpi [--topology mesh|ring] [--device D] [--port P] [--profile SPEC] "
            "[--qp rc|uc|both] [--attempt-deadline S] [--json])";
      return false;
    }
  }
  return true;
}

// Rounds of disjoint pairs; every rank computes the same schedule. Mesh: the circle method,
// n - 1 rounds of n / 2 pairs (n even; n rounds with one rank resting each round when n is odd),
// the fewest possible. Ring: the links taken greedily, 2 rounds (3 when n is odd).
std::vector<std::vector<std::pair<int, int>>> rounds_of(const std::string& topology, int n) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (topology != "ring") {
    const int m = n % 2 == 0 ? n : n + 1;  // with a resting slot when n is odd
    for (int r = 0; r + 1 < m; ++r) {
      std::vector<std::pair<int, int>> round;
      const auto add = [&](int x, int y) {
        if (x < n && y < n && x != y) round.emplace_back(std::min(x, y), std::max(x, y));
      };
      add(m - 1, r);
      for (int k = 1; k < m / 2; ++k) add((r + k) % (m - 1), (r - k + m - 1) % (m - 1));
      if (!round.empty()) rounds.push_back(std::move(round));
    }
    return rounds;
  }
  std::vector<std::pair<int, int>> links;
  for (int i = 0; i < n && n > 1; ++i) {
    const int j = (i + 1) % n;
    const std::pair<int, int> l{std::min(i, j), std::max(i, j)};
    if (std::find(links.begin(), links.end(), l) == links.end()) links.push_back(l);
  }
  while (!links.empty()) {
    std::vector<bool> busy(static_cast<std::size_t>(n), false);
    std::vector<std::pair<int, int>> round, rest;
    for (const auto& l : links) {
      if (!busy[static_cast<std::size_t>(l.first)] && !busy[static_cast<std::size_t>(l.second)]) {
        busy[static_cast<std::size_t>(l.first)] = busy[static_cast<std::size_t>(l.second)] = true;
        round.push_back(l);
      } else {
        rest.push_back(l);
      }
    }
    rounds.push_back(std::move(round));
    links = std::move(rest);
  }
  return rounds;
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

int run(int argc, char** argv, int rank, int size) {
  Options o;
  std::string why;
  if (!parse(argc, argv, o, why)) {
    if (rank == 0) std::fprintf(stderr, "gidpolicy-probe-mpi: %s\n", why.c_str());
    return 2;
  }
  // This rank's port, its table and its plan: a problem here is this rank's, said by it.
  verbs::DlopenApi api;
  std::string local_error;
  std::optional<GidTable> table;
  std::optional<Plan> plan;
  verbs::DeviceHandle dev;
  if (!api.loaded()) {
    local_error = api.load_error().what();
  } else {
    std::string device = o.device.value_or("");
    if (device.empty()) {
      auto names = api.device_names();
      if (names)
        device = names.value().front();
      else
        local_error = names.error().what();
    }
    if (local_error.empty()) {
      auto d = api.open_device(device);
      auto t = d ? verbs::snapshot(api, d.value(), o.port) : result<GidTable>(fail(d.error()));
      if (!t) {
        local_error = t.error().what();
      } else {
        dev = d.value();
        table = t.value();
        auto profile = parse_profile(o.profile);
        if (!profile) {
          if (rank == 0)
            std::fprintf(stderr, "gidpolicy-probe-mpi: --profile: %s\n", profile.error().what().c_str());
          return 2;
        }
        auto p = profile.value().plan(*table);
        if (p)
          plan = p.value();
        else
          local_error = "the selection failed: " + p.error().what();
      }
    }
  }
  const DriverModel model =
      table ? DriverModel::for_table(*table) : DriverModel::for_platform(host_platform());
  std::vector<QpKind> kinds;
  if (o.qp != "uc") kinds.push_back(QpKind::rc);
  if (o.qp != "rc") kinds.push_back(QpKind::uc);
  const auto attempt =
      std::chrono::duration_cast<ProbeClock::duration>(std::chrono::duration<double>(o.attempt_deadline));
  const std::string host = host_name();
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(rank));

  Json mine = Json::array();  // the links this rank records (those where it is the lower rank)
  const auto rounds = rounds_of(o.topology, size);
  for (const auto& round : rounds) {
    for (const auto& [a, b] : round) {
      if (rank != a && rank != b) continue;
      const int peer = rank == a ? b : a;
      Json rec{{"a", a}, {"b", b}};
      const std::string role = rank == a ? "listener" : "connector";
      ProbeSide self;
      self.role = role;
      std::vector<LocalQp> qps;
      LinkOutcome link;
      MpiChannel ch(peer, "rank " + std::to_string(peer));
      if (!plan) {
        (void)ch.send("abort", Json{{"reason", "rank " + std::to_string(rank) + ": " + local_error}});
        link.problem =
            ProbeProblem{ProbeProblem::Kind::invalid, "rank " + std::to_string(rank) + ": " + local_error};
        // Take the peer's first message so the next round starts clean.
        ProbeProblem ignored;
        (void)ch.receive("hello", "the peer's hello", ProbeClock::now() + attempt, ignored);
      } else {
        self = port_side(*table, model, o.profile, rng);
        self.role = role;
        advertise_plan(self, *plan, api, dev, o.port, kinds, rng, qps);
        AttemptContext ctx{
            .api = &api, .table = &*table, .plan = &*plan, .model = model, .pin_cause = std::nullopt};
        link = run_link(ctx, self, qps, ch, attempt, ProbeClock::now() + 4 * attempt);
        for (auto& q : qps)
          if (q.qp) (void)api.destroy_qp(q.qp);
      }
      if (rank != a) continue;  // the lower rank records the link
      rec["host_a"] = host + " " + (table ? port_name(*table) : std::string("(no port)"));
      rec["host_b"] =
          link.peer ? link.peer->device + " port " + std::to_string(link.peer->port) : std::string();
      rec["connected"] = link.connected && !link.problem;
      rec["problem"] = link.problem ? Json(link.problem->text) : Json(nullptr);
      Json jq = Json::array();
      for (const auto& q : link.qps)
        jq.push_back(Json{{"kind", std::string(to_string(q.kind))},
                          {"directions", Json::array({direction_json(q.out), direction_json(q.in)})}});
      rec["qps"] = std::move(jq);
      mine.push_back(std::move(rec));
    }
    MPI_Barrier(MPI_COMM_WORLD);  // a round ends everywhere before the next one starts
  }

  // Gather every rank's links on rank 0.
  const std::string text = mine.dump();
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
  int verdict = 0;
  if (rank == 0) {
    std::vector<Json> links;
    for (std::size_t i = 0; i < lens.size(); ++i)
      for (auto& l :
           Json::parse(all.substr(static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(lens[i]))))
        links.push_back(l);
    std::sort(links.begin(), links.end(), [](const Json& x, const Json& y) {
      return std::pair{x["a"].get<int>(), x["b"].get<int>()} <
             std::pair{y["a"].get<int>(), y["b"].get<int>()};
    });
    std::map<std::string, int> causes;
    int connected = 0;
    std::string out = fmt::format("{} of {} ranks, profile {}, {} links in {} rounds of disjoint pairs\n",
                                  o.topology, size, o.profile, links.size(), rounds.size());
    for (const auto& l : links) {
      const bool ok = l["connected"].get<bool>();
      connected += ok ? 1 : 0;
      out += fmt::format("rank {} <-> rank {}: {}", l["a"].get<int>(), l["b"].get<int>(),
                         ok ? "connected" : "FAILED");
      if (l["problem"].is_string()) out += ": " + l["problem"].get<std::string>();
      for (const auto& q : l["qps"]) {
        for (const auto& d : q["directions"]) {
          if (d["connected"].get<bool>()) continue;
          std::string cause =
              d["cause"].is_object() ? d["cause"]["id"].get<std::string>() : d["outcome"].get<std::string>();
          out += fmt::format("\n  {} {} -> {}: {}{}; cause {}; predicted {}{}", q["kind"].get<std::string>(),
                             d["from"].get<std::string>(), d["to"].get<std::string>(),
                             d["outcome"].get<std::string>(),
                             d["errno"].is_number() ? " errno " + std::to_string(d["errno"].get<int>()) : "",
                             cause, d["predicted"]["outcome"].get<std::string>(),
                             d["contradicts_prediction"].get<bool>() ? " (THE WIRE CONTRADICTS IT)" : "");
          ++causes[cause];
        }
      }
      out += "\n";
    }
    out += fmt::format("{} of {} links connected\n", connected, links.size());
    for (const auto& [cause, n] : causes) out += fmt::format("  {} failed directions: {}\n", n, cause);
    if (o.json) {
      // The one envelope (schema, version, host, source), the links in an array.
      Json doc;
      doc["schema"] = "gidpolicy.probe.mpi";
      doc["version"] = 1;
      doc["host"] = host;
      doc["source"] = "live devices (" + api.backend_name() + ")";
      doc["topology"] = o.topology;
      doc["profile"] = o.profile;
      doc["ranks"] = size;
      doc["rounds"] = rounds.size();
      doc["links"] = links;
      doc["connected"] = connected;
      doc["failed"] = static_cast<int>(links.size()) - connected;
      Json jc = Json::array();
      for (const auto& [cause, n] : causes) jc.push_back(Json{{"cause", cause}, {"directions", n}});
      doc["causes"] = std::move(jc);
      out = doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
    }
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    verdict = connected == static_cast<int>(links.size()) ? 0 : 1;
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
