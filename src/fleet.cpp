// Fleet analysis: plan each side once, judge each link from the two plans (see fleet.hpp).
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/rtr.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <thread>
#include <unordered_map>

namespace gidpolicy::fleet {

std::string_view to_string(Pairing p) noexcept {
  switch (p) {
    case Pairing::mesh:
      return "mesh";
    case Pairing::ring:
      return "ring";
    case Pairing::rail:
      return "rail";
    case Pairing::jaccl:
      return "jaccl";
  }
  return "mesh";
}

std::string_view to_string(Outcome o) noexcept {
  switch (o) {
    case Outcome::ok:
      return "ok";
    case Outcome::dropped:
      return "dropped";
    case Outcome::times_out:
      return "times_out";
    case Outcome::rtr_error:
      return "rtr_error";
    case Outcome::qp_refused:
      return "qp_refused";
    case Outcome::unusable:
      return "unusable";
  }
  return "ok";
}

bool natural_less(std::string_view a, std::string_view b) noexcept {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      // Compare digit runs by value: skip leading zeros, then by length, then lexically.
      std::size_t si = i, sj = j;
      while (si < a.size() && a[si] == '0') ++si;
      while (sj < b.size() && b[sj] == '0') ++sj;
      std::size_t ei = si, ej = sj;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      if (ei - si != ej - sj) return ei - si < ej - sj;
      const int c = a.substr(si, ei - si).compare(b.substr(sj, ej - sj));
      if (c != 0) return c < 0;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
// A peer GID's class: the only properties of the peer RtrBuilder::build() and judge_rtr() read
// (is_zero, is_link_local, is_ipv4_mapped of the dgid; on InfiniBand without a GRH, whether
// the peer has a LID). Everything else about the peer (MTU) never changes a verdict.
constexpr unsigned kClasses = 16;
constexpr std::uint8_t kZero = 1, kLinkLocal = 2, kMapped = 4, kNoLid = 8;
// Counter slots per side: 0 unusable, 1 QP refused, 2.. RTR per class, 2+16.. delivery per class.
constexpr unsigned kSlots = 2 + 2 * kClasses;

std::uint8_t peer_class(const Gid& g, std::uint16_t lid) noexcept {
  std::uint8_t c = 0;
  if (g.is_zero()) c |= kZero;
  if (g.is_link_local()) c |= kLinkLocal;
  if (g.is_ipv4_mapped()) c |= kMapped;
  if (lid == 0) c |= kNoLid;
  return c;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

std::string port_label(const std::string& device, std::uint32_t port) {
  return device + " port " + std::to_string(port);
}

}  // namespace

struct Analysis::Side {
  std::uint32_t host = 0;
  const GidTable* table = nullptr;
  std::optional<Plan> plan;
  DriverModel driver;
  std::uint32_t unusable = kNone;  // cause when the side cannot take part
  std::uint8_t cls = 0;            // its own class as somebody's peer
  std::uint32_t qp_limit = 0;      // 0: no limit
  std::uint32_t qp_cause = kNone;
  std::array<std::uint32_t, kClasses> rtr{};      // cause of a failed RTR per peer class, or kNone
  std::array<std::uint32_t, kClasses> deliver{};  // cause of a failed delivery per peer class, or kNone
  std::array<std::uint32_t, kSlots> slot_cause{};
};

Analysis::Analysis() = default;
Analysis::Analysis(Analysis&&) noexcept = default;
Analysis& Analysis::operator=(Analysis&&) noexcept = default;
Analysis::~Analysis() = default;

namespace {

/// Interns causes by (outcome, device, text).
class CauseTable {
 public:
  explicit CauseTable(std::vector<Cause>& out) : out_(out) {}
  std::uint32_t add(Outcome o, const std::string& device, int err, Platform p, std::string text) {
    std::string key = std::string(to_string(o)) + '\0' + device + '\0' + text;
    auto [it, fresh] = ids_.try_emplace(std::move(key), static_cast<std::uint32_t>(out_.size()));
    if (fresh) out_.push_back(Cause{o, device, err, p, std::move(text)});
    return it->second;
  }

 private:
  std::vector<Cause>& out_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

/// The port a host uses for `device` (empty: its first port in natural order), or nullptr.
const GidTable* find_port(const HostSnapshot& h, const std::string& device, std::uint32_t port) {
  const GidTable* best = nullptr;
  for (const auto& t : h.ports) {
    if (device.empty()) {
      if (!best || natural_less(t.port().device, best->port().device) ||
          (t.port().device == best->port().device && t.port().port < best->port().port))
        best = &t;
    } else if (t.port().device == device && t.port().port == port) {
      return &t;
    }
  }
  return best;
}

/// A host's ports in natural order (rails by position).
std::vector<const GidTable*> natural_ports(const HostSnapshot& h) {
  std::vector<const GidTable*> v;
  for (const auto& t : h.ports) v.push_back(&t);
  std::stable_sort(v.begin(), v.end(), [](const GidTable* x, const GidTable* y) {
    if (x->port().device != y->port().device) return natural_less(x->port().device, y->port().device);
    return x->port().port < y->port().port;
  });
  return v;
}

}  // namespace

result<Analysis> Analysis::run(std::vector<HostSnapshot> hosts, const Topology& topo,
                               const Options& options) {
  const std::size_t n = hosts.size();
  if (n < 2) return fail(errc::invalid_argument, "a fleet needs at least two hosts");
  if (n > std::numeric_limits<std::uint32_t>::max() / 2)
    return fail(errc::invalid_argument, "too many hosts: " + std::to_string(n));
  {
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < n; ++i) {
      if (hosts[i].host.empty())
        return fail(errc::invalid_argument, hosts[i].source + ": the host has no name");
      auto [it, fresh] = seen.try_emplace(hosts[i].host, i);
      if (!fresh)
        return fail(errc::invalid_argument, "host '" + hosts[i].host + "' appears twice: " +
                                                hosts[it->second].source + " and " + hosts[i].source);
    }
  }

  Analysis an;
  an.hosts_ = std::move(hosts);
  an.profile_ = options.profile;
  an.pairing_ = topo.pairing;
  an.topology_name_ = std::string(to_string(topo.pairing));
  CauseTable causes(an.causes_);

  // ---- the sides each host takes part with, in host-major order
  struct Want {
    std::uint32_t host;
    const GidTable* table;
    std::string device;  // for a missing device
    std::uint32_t port;
  };
  std::vector<Want> want;
  // jaccl: (host, device name) -> side
  std::vector<std::map<std::string, std::uint32_t>> jaccl_side;
  bool jaccl_ring = false;
  if (topo.pairing == Pairing::mesh || topo.pairing == Pairing::ring) {
    for (std::uint32_t h = 0; h < n; ++h)
      want.push_back({h, find_port(an.hosts_[h], topo.device, topo.port), topo.device, topo.port});
  } else if (topo.pairing == Pairing::rail) {
    std::vector<std::vector<const GidTable*>> ordered(n);
    std::size_t lanes = topo.rails.size();
    if (topo.rails.empty())
      for (std::uint32_t h = 0; h < n; ++h) {
        ordered[h] = natural_ports(an.hosts_[h]);
        lanes = std::max(lanes, ordered[h].size());
      }
    if (lanes == 0) return fail(errc::invalid_argument, "rail: no host lists a port, so there is no rail");
    if (lanes > 4096)
      return fail(errc::invalid_argument, "rail: " + std::to_string(lanes) + " rails (at most 4096)");
    an.lanes_ = static_cast<std::uint32_t>(lanes);
    for (std::uint32_t h = 0; h < n; ++h)
      for (std::size_t k = 0; k < lanes; ++k) {
        if (!topo.rails.empty()) {
          want.push_back({h, find_port(an.hosts_[h], topo.rails[k], topo.port), topo.rails[k], topo.port});
        } else {
          const GidTable* t = k < ordered[h].size() ? ordered[h][k] : nullptr;
          want.push_back({h, t, t ? t->port().device : "rail " + std::to_string(k), t ? t->port().port : 1});
        }
      }
  } else {
    const JacclDevices& J = topo.jaccl;
    if (J.ranks() != n)
      return fail(errc::invalid_argument, "the JACCL device file has " + std::to_string(J.ranks()) +
                                              " ranks but " + std::to_string(n) +
                                              " hosts were given (rank i is the i-th host)");
    std::string why_mesh, why_ring;
    const bool mesh_ok = J.valid_mesh(&why_mesh);
    const bool ring_ok = J.valid_ring(&why_ring);
    // JACCL's own choice (jaccl::init): ring when asked and valid, else mesh, else ring.
    if (!mesh_ok && !ring_ok)
      return fail(errc::invalid_argument, "the JACCL device file forms neither a valid mesh (" + why_mesh +
                                              ") nor a valid ring (" + why_ring + "): JACCL would refuse it");
    jaccl_ring = ring_ok && (topo.jaccl_prefer_ring || !mesh_ok);
    an.topology_name_ = jaccl_ring ? "jaccl-ring" : "jaccl-mesh";
    jaccl_side.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::vector<std::string> used;
      if (jaccl_ring) {
        const std::size_t left = (i + n - 1) % n, right = (i + 1) % n;
        for (const auto& d : J.names[i][left]) used.push_back(d);
        for (const auto& d : J.names[i][right]) used.push_back(d);
      } else {
        for (std::size_t j = 0; j < n; ++j)
          if (j != i) used.push_back(J.names[i][j][0]);
      }
      std::sort(used.begin(), used.end(),
                [](const std::string& x, const std::string& y) { return natural_less(x, y); });
      used.erase(std::unique(used.begin(), used.end()), used.end());
      for (const auto& d : used) {
        jaccl_side[i].emplace(d, static_cast<std::uint32_t>(want.size()));
        // JACCL opens each device and uses port 1.
        want.push_back({i, find_port(an.hosts_[i], d, 1), d, 1});
      }
    }
  }

  // ---- plan every side once
  an.sides_.resize(want.size());
  an.side_info_.resize(want.size());
  const std::string spec = an.profile_.spec();
  for (std::size_t s = 0; s < want.size(); ++s) {
    const Want& w = want[s];
    Side& S = an.sides_[s];
    SideInfo& I = an.side_info_[s];
    S.host = I.host = w.host;
    S.table = w.table;
    I.device = w.table ? w.table->port().device : w.device;
    I.port = w.table ? w.table->port().port : w.port;
    S.rtr.fill(kNone);
    S.deliver.fill(kNone);
    S.slot_cause.fill(kNone);
    const Platform none_platform = Platform::linux_kernel;
    if (!w.table) {
      // What was asked for and is not there: a named device, a rail position, or any port.
      std::string text = w.device.empty() ? std::string("lists no port in its snapshot")
                         : w.device.starts_with("rail ")
                             ? "has fewer ports than rails: no port for " + w.device
                             : "has no " + port_label(w.device, w.port) + " in its snapshot";
      S.unusable = causes.add(Outcome::unusable, I.device.empty() ? std::string("(none)") : I.device, 0,
                              none_platform, std::move(text));
      continue;
    }
    const PortInfo& p = w.table->port();
    S.driver = options.driver ? *options.driver : DriverModel::for_link_layer(p.link_layer);
    // What snapshot() refuses on the host itself: a port that is not up.
    const bool up =
        p.state == PortState::active || p.state == PortState::armed || p.state == PortState::active_defer;
    if (!up) {
      S.unusable = causes.add(Outcome::unusable, I.device, 0, S.driver.platform,
                              port_label(p.device, p.port) + " is " + std::string(to_string(p.state)) +
                                  ": its GID table is not meaningful until the link is up");
      continue;
    }
    if (p.port == 0 || p.port > 255) {
      S.unusable = causes.add(Outcome::unusable, I.device, 0, S.driver.platform,
                              "port number " + std::to_string(p.port) + " is outside 1..255");
      continue;
    }
    auto plan = an.profile_.plan(*w.table);
    if (!plan) {
      S.unusable = causes.add(Outcome::unusable, I.device, 0, S.driver.platform,
                              "(" + spec + ") selects nothing: " + plan.error().what());
      continue;
    }
    S.plan = std::move(plan).value();
    I.usable = true;
    I.advertised = S.plan->selection.entry.gid;
    I.sgid_index = S.plan->sgid_index;
    S.cls = peer_class(S.plan->selection.entry.gid, p.lid);
    if (S.driver.max_qps_per_device != 0) {
      // The QP the device refuses: judged by the same model the fake's create_qp uses.
      const RtrVerdict v = judge_create_qp(QpKind::uc, S.driver.max_qps_per_device, S.driver);
      if (v.outcome == RtrOutcome::error) {
        S.qp_limit = S.driver.max_qps_per_device;
        S.qp_cause = causes.add(Outcome::qp_refused, I.device, v.err, S.driver.platform,
                                "cannot create a QP: " + v.to_string(S.driver.platform));
      }
    }
  }

  // ---- one real peer per class present in the fleet
  std::array<std::optional<std::uint32_t>, kClasses> rep{};
  for (std::uint32_t s = 0; s < an.sides_.size(); ++s)
    if (an.sides_[s].plan && !rep[an.sides_[s].cls]) rep[an.sides_[s].cls] = s;

  // ---- per side and present class: the fabric's RTR and delivery, through the real builder
  // and driver model (as FakeFabric::connect and FakeVerbs::modify_qp run them)
  for (auto& S : an.sides_) {
    if (!S.plan) continue;
    const GidTable& t = *S.table;
    const std::string& dev = t.port().device;
    const Platform pf = S.driver.platform;
    const Gid told = S.plan->selection.entry.gid;
    for (unsigned c = 0; c < kClasses; ++c) {
      if (!rep[c]) continue;
      const Side& R = an.sides_[*rep[c]];
      const std::string rep_gid = R.plan->selection.entry.gid.to_string();
      auto generic = [&](std::string text) {
        // The verdict is the same for every peer of this class; name none of them.
        replace_all(text, "the peer's GID " + rep_gid + " ", "the peer's GID ");
        replace_all(text, "the destination " + rep_gid + " ", "the destination ");
        return text;
      };
      PeerInfo info;
      info.qpn = 1;
      info.psn = 7;
      info.gid = R.plan->selection.entry.gid;
      info.lid = R.table->port().lid;
      info.mtu = R.table->port().active_mtu;
      auto rtr = RtrBuilder(QpKind::uc, t, *S.plan).remote(info).build();
      if (!rtr) {
        S.rtr[c] = causes.add(Outcome::rtr_error, dev, 0, pf,
                              generic("cannot build its RTR: " + rtr.error().what()));
        continue;
      }
      RtrRequest req = rtr.value().request();
      req.peer_gid_type.reset();  // the fake's modify_qp judges what ibv_qp_attr carries
      req.source_netdev_present = true;
      const RtrVerdict v = judge_rtr(t, req, S.driver);
      const std::uint8_t idx = rtr.value().sgid_index();
      if (v.outcome == RtrOutcome::error) {
        S.rtr[c] =
            causes.add(Outcome::rtr_error, dev, v.err, pf,
                       generic("RTR from sgid_index " + std::to_string(idx) + " failed: " + v.to_string(pf)));
        continue;
      }
      if (v.outcome == RtrOutcome::times_out) {
        S.deliver[c] =
            causes.add(Outcome::times_out, dev, v.err, pf, generic("traffic times out: " + v.reason));
        continue;
      }
      // Delivery: the GID the sender's packets carry (its entry at sgid_index) must be the one
      // its peer was told.
      const GidEntry* e = t.find(idx);
      if (!e || !e->usable()) {
        S.deliver[c] = causes.add(Outcome::dropped, dev, 0, pf,
                                  "sends from sgid_index " + std::to_string(idx) +
                                      ", which holds no GID; its peers expect " + told.to_string());
      } else if (e->gid != told) {
        S.deliver[c] = causes.add(Outcome::dropped, dev, 0, pf,
                                  "sends from " + e->gid.to_string() + " (sgid_index " + std::to_string(idx) +
                                      ") but advertises " + told.to_string() + ": dropped");
      }
    }
  }
  for (auto& S : an.sides_) {
    S.slot_cause[0] = S.unusable;
    S.slot_cause[1] = S.qp_cause;
    for (unsigned c = 0; c < kClasses; ++c) {
      S.slot_cause[2 + c] = S.rtr[c];
      S.slot_cause[2 + kClasses + c] = S.deliver[c];
    }
  }

  // ---- links
  if (topo.pairing == Pairing::mesh || topo.pairing == Pairing::rail) {
    const std::uint64_t pairs = static_cast<std::uint64_t>(n) * (n - 1) / 2;
    if (pairs > (std::uint64_t{1} << 40) / an.lanes_)
      return fail(errc::invalid_argument, "too many links: " + std::to_string(pairs) + " pairs");
    an.link_count_ = pairs * an.lanes_;
    an.usable_prefix_.assign(an.lanes_, std::vector<std::uint32_t>(n + 1, 0));
    for (std::uint32_t k = 0; k < an.lanes_; ++k)
      for (std::size_t h = 0; h < n; ++h)
        an.usable_prefix_[k][h + 1] = an.usable_prefix_[k][h] + (an.sides_[h * an.lanes_ + k].plan ? 1u : 0u);
  } else {
    // Explicit links, and each side's QP count before each link (what create_qp sees).
    std::vector<std::uint32_t> qps(an.sides_.size(), 0);
    auto add = [&](std::uint32_t a, std::uint32_t b, std::uint32_t lane) {
      Explicit e{a, b, lane, qps[a], qps[b]};
      if (an.sides_[a].plan && an.sides_[b].plan) {
        for (std::uint32_t s : {a, b})
          if (an.sides_[s].qp_limit == 0 || qps[s] < an.sides_[s].qp_limit) ++qps[s];
      }
      an.explicit_.push_back(e);
    };
    if (topo.pairing == Pairing::ring) {
      // gidpolicy simulate's ring: i with i+1, one link for two hosts.
      for (std::uint32_t i = 0; i < n; ++i)
        if (n > 2 || i == 0) add(i, static_cast<std::uint32_t>((i + 1) % n), 0);
    } else if (jaccl_ring) {
      const JacclDevices& J = topo.jaccl;
      for (std::uint32_t i = 0; i < n; ++i) {
        const auto r = static_cast<std::uint32_t>((i + 1) % n);
        for (std::size_t k = 0; k < J.names[i][r].size(); ++k)
          add(jaccl_side[i].at(J.names[i][r][k]), jaccl_side[r].at(J.names[r][i][k]),
              static_cast<std::uint32_t>(k));
      }
    } else {
      const JacclDevices& J = topo.jaccl;
      for (std::uint32_t i = 0; i < n; ++i)
        for (std::uint32_t j = i + 1; j < n; ++j)
          add(jaccl_side[i].at(J.names[i][j][0]), jaccl_side[j].at(J.names[j][i][0]), 0);
    }
    an.link_count_ = an.explicit_.size();
  }
  an.summarize(std::max(1u, options.threads));
  return an;
}

// ---------------------------------------------------------------------------------------------
namespace {

struct Slots {
  std::uint8_t a_to_b = 0, b_to_a = 0;
};

}  // namespace

Link Analysis::judge(std::uint64_t index, std::uint32_t a, std::uint32_t b, std::uint32_t lane,
                     std::uint32_t rank_a, std::uint32_t rank_b) const {
  Link l;
  l.index = index;
  l.a = a;
  l.b = b;
  l.lane = lane;
  const Side& A = sides_[a];
  const Side& B = sides_[b];
  auto set = [&](Direction& d, std::uint32_t cause, std::uint32_t culprit) {
    d.outcome = causes_[cause].outcome;
    d.cause = cause;
    d.culprit = culprit;
  };
  // The fabric's order: a side that cannot take part fails both directions (the first side's
  // reason first); then QP creation; then each side's own RTR, tried whatever the other's did
  // (a direction names its sender's refusal first, else the receiver's); then each direction's
  // delivery.
  if (!A.plan || !B.plan) {
    const std::uint32_t s = !A.plan ? a : b;
    set(l.a_to_b, sides_[s].unusable, s);
    set(l.b_to_a, sides_[s].unusable, s);
    return l;
  }
  const bool qa = A.qp_limit != 0 && rank_a >= A.qp_limit;
  const bool qb = B.qp_limit != 0 && rank_b >= B.qp_limit;
  if (qa || qb) {
    if (qa)
      set(l.a_to_b, A.qp_cause, a);
    else
      set(l.a_to_b, B.qp_cause, b);
    if (qb)
      set(l.b_to_a, B.qp_cause, b);
    else
      set(l.b_to_a, A.qp_cause, a);
    return l;
  }
  const std::uint32_t ra = A.rtr[B.cls], rb = B.rtr[A.cls];
  if (ra != kNone || rb != kNone) {
    if (ra != kNone)
      set(l.a_to_b, ra, a);
    else
      set(l.a_to_b, rb, b);
    if (rb != kNone)
      set(l.b_to_a, rb, b);
    else
      set(l.b_to_a, ra, a);
    return l;
  }
  if (const std::uint32_t c = A.deliver[B.cls]; c != kNone) set(l.a_to_b, c, a);
  if (const std::uint32_t c = B.deliver[A.cls]; c != kNone) set(l.b_to_a, c, b);
  return l;
}

namespace {

/// Row i of the upper triangle starts at link i*n - i*(i+1)/2.
std::uint64_t row_start(std::uint64_t i, std::uint64_t n) { return i * n - i * (i + 1) / 2; }

}  // namespace

Link Analysis::link(std::uint64_t k) const {
  if (!explicit_.empty()) {
    const Explicit& e = explicit_[k];
    return judge(k, e.a, e.b, e.lane, e.rank_a, e.rank_b);
  }
  const std::uint64_t n = hosts_.size();
  const std::uint64_t pair = k / lanes_;
  const auto lane = static_cast<std::uint32_t>(k % lanes_);
  // Invert row_start by the quadratic formula, then correct rounding.
  const double nn = static_cast<double>(n);
  auto i = static_cast<std::uint64_t>(std::max(
      0.0,
      std::floor(((2 * nn - 1) - std::sqrt((2 * nn - 1) * (2 * nn - 1) - 8.0 * static_cast<double>(pair))) /
                 2)));
  while (i > 0 && row_start(i, n) > pair) --i;
  while (i + 1 < n && row_start(i + 1, n) <= pair) ++i;
  const std::uint64_t j = i + 1 + (pair - row_start(i, n));
  const auto& pre = usable_prefix_[lane];
  // QP ranks in the fabric's pair order: host i has made a QP for every usable peer before j
  // (other than itself); host j for every usable peer before i.
  const std::uint32_t rank_a = pre[j] - 1;
  const std::uint32_t rank_b = pre[i];
  return judge(k, static_cast<std::uint32_t>(i * lanes_ + lane),
               static_cast<std::uint32_t>(j * lanes_ + lane), lane, rank_a, rank_b);
}

void Analysis::for_each_link(std::uint64_t begin, std::uint64_t end,
                             const std::function<void(const Link&)>& fn) const {
  end = std::min(end, link_count_);
  if (begin >= end) return;
  if (!explicit_.empty()) {
    for (std::uint64_t k = begin; k < end; ++k) fn(link(k));
    return;
  }
  const Link first = link(begin);
  std::uint64_t n = hosts_.size();
  std::uint64_t i = first.a / lanes_, j = first.b / lanes_;
  std::uint32_t lane = first.lane;
  for (std::uint64_t k = begin; k < end; ++k) {
    const auto& pre = usable_prefix_[lane];
    fn(judge(k, static_cast<std::uint32_t>(i * lanes_ + lane), static_cast<std::uint32_t>(j * lanes_ + lane),
             lane, pre[j] - 1, pre[i]));
    if (++lane == lanes_) {
      lane = 0;
      if (++j == n) {
        ++i;
        j = i + 1;
      }
    }
  }
}

void Analysis::summarize(unsigned threads) {
  const std::size_t ns = sides_.size();
  const std::uint64_t total = link_count_;
  // Each thread keeps its own counters (sides x slots): more threads than cores only costs
  // memory, so use at most the machine's cores (and 64).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  threads = std::clamp(threads, 1u, std::min(cores, 64u));
  if (total < 4096) threads = 1;
  struct Part {
    std::vector<std::uint64_t> counts;  // per side x slot
    std::uint64_t connected = 0;
  };
  std::vector<Part> parts(threads);
  auto slot_of = [&](const Direction& d) -> unsigned {
    const Side& S = sides_[d.culprit];
    for (unsigned q = 0; q < kSlots; ++q)
      if (S.slot_cause[q] == d.cause) return q;
    return 0;
  };
  auto work = [&](unsigned t) {
    Part& part = parts[t];
    part.counts.assign(ns * kSlots, 0);
    const std::uint64_t b = total * t / threads, e = total * (t + 1) / threads;
    for_each_link(b, e, [&](const Link& l) {
      if (l.connected()) {
        ++part.connected;
        return;
      }
      const bool fa = !l.a_to_b.ok(), fb = !l.b_to_a.ok();
      if (fa) ++part.counts[std::size_t{l.a_to_b.culprit} * kSlots + slot_of(l.a_to_b)];
      if (fb && !(fa && l.a_to_b.cause == l.b_to_a.cause && l.a_to_b.culprit == l.b_to_a.culprit))
        ++part.counts[std::size_t{l.b_to_a.culprit} * kSlots + slot_of(l.b_to_a)];
    });
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& th : pool) th.join();
  }
  summary_ = {};
  summary_.links = total;
  for (const auto& p : parts) summary_.connected += p.connected;
  std::vector<CauseGroup> groups(causes_.size());
  std::vector<std::uint32_t> last_host(causes_.size(), std::numeric_limits<std::uint32_t>::max());
  for (std::uint32_t c = 0; c < groups.size(); ++c) groups[c].cause = c;
  for (std::uint32_t s = 0; s < ns; ++s)
    for (unsigned q = 0; q < kSlots; ++q) {
      std::uint64_t cnt = 0;
      for (const auto& p : parts) cnt += p.counts[std::size_t{s} * kSlots + q];
      if (cnt == 0) continue;
      const std::uint32_t c = sides_[s].slot_cause[q];
      CauseGroup& g = groups[c];
      if (g.links == 0) g.first_side = s;
      g.links += cnt;
      if (last_host[c] != sides_[s].host) {
        ++g.hosts;
        last_host[c] = sides_[s].host;
      }
    }
  for (auto& g : groups)
    if (g.links) summary_.groups.push_back(g);
  std::stable_sort(summary_.groups.begin(), summary_.groups.end(),
                   [](const CauseGroup& x, const CauseGroup& y) { return x.links > y.links; });
}

std::string Analysis::describe(const CauseGroup& g) const {
  const Cause& c = causes_[g.cause];
  std::string s = c.device + " on " + std::to_string(g.hosts) + (g.hosts == 1 ? " host" : " hosts");
  if (g.hosts == 1) s += " (" + hosts_[sides_[g.first_side].host].host + ")";
  s += ": " + c.text + " -> " + std::to_string(g.links) + (g.links == 1 ? " link fails" : " links fail");
  return s;
}

std::string Analysis::describe(const Direction& d) const {
  if (d.ok()) return "ok";
  const Cause& c = causes_[d.cause];
  return hosts_[sides_[d.culprit].host].host + " " + c.device + ": " + c.text;
}

std::string Analysis::describe_link(const Link& l) const {
  const SideInfo& a = side_info_[l.a];
  const SideInfo& b = side_info_[l.b];
  return hosts_[a.host].host + " " + a.device + " <-> " + hosts_[b.host].host + " " + b.device;
}

}  // namespace gidpolicy::fleet
