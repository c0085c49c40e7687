// Fleet analysis: plan each side once, judge each link from the two plans (see fleet.hpp).
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/link.hpp>
#include <gidpolicy/rtr.hpp>

#include "fleet_layout.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <thread>
#include <unordered_map>

namespace gidpolicy::fleet {

std::string_view to_string(ConflictKind k) noexcept {
  return k == ConflictKind::rail_subnet_overlap ? "rail_subnet_overlap" : "duplicate_address";
}

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

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
// A peer GID's class: the only properties of the peer RtrBuilder::build() and judge_rtr() read
// (is_zero, is_link_local, is_ipv4_mapped of the dgid; on InfiniBand without a GRH, whether
// the peer has a LID). Everything else about the peer (MTU) never changes a verdict.
constexpr unsigned kClasses = 16;
constexpr std::uint8_t kZero = 1, kLinkLocal = 2, kMapped = 4, kNoLid = 8;
// Counter slots per side: 0 unusable, 1 QP refused, 2.. RTR per class, 2+16.. delivery per class,
// then the framing (RoCE v1 against v2, link.hpp step 4): one cause per side, since a side's own
// framing is fixed and fails against every peer of the other one alike.
constexpr unsigned kSlots = 2 + 2 * kClasses + 1;
constexpr unsigned kFramingSlot = kSlots - 1;

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

}  // namespace

struct Analysis::Side {
  std::uint32_t host = 0;
  const GidTable* table = nullptr;
  std::optional<Plan> plan;
  DriverModel driver;
  std::uint32_t unusable = kNone;  // cause when the side cannot take part
  std::uint8_t cls = 0;            // its own class as somebody's peer
  // Step 4 of the link judgment per side, not per class: the wire framing of the entry it routes
  // from (wire_framing(): 0 unknown), read for every link, so beside `cls` (one cache line);
  // which peer classes it routes to with a GRH (the framing rule applies only when both QPs
  // route by GID); framing_cause is "sends this, the peer's port routes that".
  std::uint8_t framing = 0;
  std::uint16_t global_to = 0;  // bit c: its RTR towards class c sets a GRH
  std::uint32_t qp_limit = 0;   // 0: no limit
  std::uint32_t qp_cause = kNone;
  std::array<std::uint32_t, kClasses> rtr{};      // cause of a failed RTR per peer class, or kNone
  std::array<std::uint32_t, kClasses> deliver{};  // cause of a failed delivery per peer class, or kNone
  std::array<std::uint32_t, kSlots> slot_cause{};
  std::uint32_t framing_cause = kNone;  // step 4's cause, see `framing` below
  std::uint32_t conflict = kNone;       // a duplicate_address conflict its advertised GID is part of
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
  std::uint32_t add(LinkOutcome o, const std::string& device, int err, Platform p, std::string text) {
    std::string key = std::string(to_string(o)) + '\0' + device + '\0' + text;
    auto [it, fresh] = ids_.try_emplace(std::move(key), static_cast<std::uint32_t>(out_.size()));
    if (fresh) out_.push_back(Cause{o, device, err, p, std::move(text)});
    return it->second;
  }

 private:
  std::vector<Cause>& out_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

}  // namespace

namespace {

/// The hosts' names are unique and non-empty (a fleet names each host in its messages).
result<void> check_hosts(const std::vector<HostSnapshot>& hosts) {
  const std::size_t n = hosts.size();
  if (n < 2) return fail(errc::invalid_argument, "a fleet needs at least two hosts");
  if (n > std::numeric_limits<std::uint32_t>::max() / 2)
    return fail(errc::invalid_argument, "too many hosts: " + std::to_string(n));
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < n; ++i) {
    if (hosts[i].host.empty())
      return fail(errc::invalid_argument, hosts[i].source + ": the host has no name");
    auto [it, fresh] = seen.try_emplace(hosts[i].host, i);
    if (!fresh)
      return fail(errc::invalid_argument, "host '" + hosts[i].host + "' appears twice: " +
                                              hosts[it->second].source + " and " + hosts[i].source);
  }
  return success();
}

}  // namespace

namespace {

using Layout = Analysis::Layout;

/// Plan one side: what snapshot() and the profile say about its port, and the QP the driver
/// refuses. Leaves S.plan empty (and S.unusable set) when the side cannot take part.
void plan_side(const Layout::Want& w, const Profile& profile, const std::string& spec, const Options& options,
               Analysis::Side& S, SideInfo& I, CauseTable& causes) {
  S.host = I.host = w.host;
  S.table = w.table;
  I.device = w.table ? w.table->port().device : w.device;
  I.port = w.table ? w.table->port().port : w.port;
  S.rtr.fill(kNone);
  S.deliver.fill(kNone);
  S.slot_cause.fill(kNone);
  if (!w.table) {
    // What was asked for and is not there: a named device, a rail position, or any port.
    std::string text = w.device.empty() ? std::string("lists no port in its snapshot")
                       : w.device.starts_with("rail ")
                           ? "has fewer ports than rails: no port for " + w.device
                           : "has no " + port_name(w.device, w.port) + " in its snapshot";
    S.unusable = causes.add(LinkOutcome::unusable, I.device.empty() ? std::string("(none)") : I.device, 0,
                            Platform::linux_kernel, std::move(text));
    return;
  }
  const PortInfo& p = w.table->port();
  S.driver = options.driver ? *options.driver : DriverModel::for_table(*w.table);
  const Platform pf = S.driver.platform;
  // What snapshot() refuses on the host itself: a port that is not up.
  const bool up =
      p.state == PortState::active || p.state == PortState::armed || p.state == PortState::active_defer;
  if (!up) {
    S.unusable = causes.add(LinkOutcome::unusable, I.device, 0, pf,
                            port_name(p) + " is " + std::string(to_string(p.state)) +
                                ": its GID table is not meaningful until the link is up");
    return;
  }
  if (p.port == 0 || p.port > 255) {
    S.unusable = causes.add(LinkOutcome::unusable, I.device, 0, pf,
                            "port number " + std::to_string(p.port) + " is outside 1..255");
    return;
  }
  // A host's own profile (Options::profile_for) where hosts differ, else the fleet's.
  std::optional<Profile> own;
  if (options.profile_for) own = options.profile_for(w.host, *w.table);
  auto plan = (own ? *own : profile).plan(*w.table);
  if (!plan) {
    S.unusable = causes.add(LinkOutcome::unusable, I.device, 0, pf,
                            "(" + (own ? own->spec() : spec) + ") selects nothing: " + plan.error().what());
    return;
  }
  S.plan = std::move(plan).value();
  I.usable = true;
  I.advertised = S.plan->selection.entry.gid;
  I.sgid_index = S.plan->sgid_index;
  S.cls = peer_class(S.plan->selection.entry.gid, p.lid);
  if (const GidEntry* e = w.table->find(S.plan->sgid_index); e && e->usable())
    S.framing = wire_framing(e->type);
  if (S.driver.max_qps_per_device != 0) {
    // The QP the device refuses: judged by the same model the fake's create_qp uses.
    const RtrVerdict v = judge_create_qp(QpKind::uc, S.driver.max_qps_per_device, S.driver);
    if (v.outcome == RtrOutcome::error) {
      S.qp_limit = S.driver.max_qps_per_device;
      S.qp_cause =
          causes.add(LinkOutcome::qp_refused, I.device, v.err, pf, "cannot create a QP: " + v.to_string(pf));
    }
  }
}

/// Per side and peer class present in the fleet: the link judgment's steps 1-3 (link.hpp) with
/// one real peer of that class, as FakeFabric::connect runs them.
void judge_classes(std::vector<Analysis::Side>& sides, CauseTable& causes) {
  std::array<std::optional<std::uint32_t>, kClasses> rep{};
  for (std::uint32_t s = 0; s < sides.size(); ++s)
    if (sides[s].plan && !rep[sides[s].cls]) rep[sides[s].cls] = s;
  for (auto& S : sides) {
    if (!S.plan) continue;
    const GidTable& t = *S.table;
    const std::string& dev = t.port().device;
    const Platform pf = S.driver.platform;
    for (unsigned c = 0; c < kClasses; ++c) {
      if (!rep[c]) continue;
      const Analysis::Side& R = sides[*rep[c]];
      const std::string rep_gid = R.plan->selection.entry.gid.to_string();
      auto generic = [&](std::string text) {
        // The verdict is the same for every peer of this class; name none of them.
        replace_all(text, "the peer's GID " + rep_gid + " ", "the peer's GID ");
        replace_all(text, "the destination " + rep_gid + " ", "the destination ");
        return text;
      };
      const SideRtr rtr = judge_side_rtr(t, *S.plan, told_by(*R.table, *R.plan, 1, 7), S.driver);
      if (rtr.attributes && rtr.attributes->is_global()) S.global_to |= static_cast<std::uint16_t>(1u << c);
      if (rtr.outcome == LinkOutcome::rtr_error) {
        S.rtr[c] = causes.add(LinkOutcome::rtr_error, dev, rtr.verdict.err, pf, generic(rtr.text));
      } else if (rtr.outcome == LinkOutcome::times_out) {
        S.deliver[c] = causes.add(LinkOutcome::times_out, dev, rtr.verdict.err, pf, generic(rtr.text));
      } else if (auto why = delivery_failure(t, rtr.attributes->sgid_index(), S.plan->selection.entry.gid)) {
        S.deliver[c] = causes.add(LinkOutcome::dropped, dev, 0, pf, std::move(*why));
      }
    }
  }
  // The framing rule (link.hpp step 4): a side whose source entry frames as RoCE v1 fails
  // against every RoCE v2 peer alike, and the other way round: one cause per side, judged only
  // when some usable side frames the other way.
  std::array<bool, 3> frames{};
  for (const auto& S : sides)
    if (S.plan) frames[S.framing] = true;
  if (frames[1] && frames[2])
    for (auto& S : sides) {
      if (!S.plan || S.framing == 0) continue;
      const GidType other = S.framing == 1 ? GidType::roce_v2 : GidType::roce_v1;
      const GidEntry* e = S.table->find(S.plan->sgid_index);
      if (auto why = framing_failure(e->type, S.plan->sgid_index, other))
        S.framing_cause =
            causes.add(LinkOutcome::times_out, S.table->port().device, 0, S.driver.platform, std::move(*why));
    }
  for (auto& S : sides) {
    S.slot_cause[0] = S.unusable;
    S.slot_cause[1] = S.qp_cause;
    for (unsigned c = 0; c < kClasses; ++c) {
      S.slot_cause[2 + c] = S.rtr[c];
      S.slot_cause[2 + kClasses + c] = S.deliver[c];
    }
    S.slot_cause[kFramingSlot] = S.framing_cause;
  }
}

}  // namespace

result<void> Analysis::lay_links(const Topology& topo, const Layout& L) {
  const std::uint32_t n = static_cast<std::uint32_t>(hosts_.size());
  if (topo.pairing == Pairing::mesh || topo.pairing == Pairing::rail) {
    const std::uint64_t pairs = static_cast<std::uint64_t>(n) * (n - 1) / 2;
    if (pairs > (std::uint64_t{1} << 40) / lanes_)
      return fail(errc::invalid_argument, "too many links: " + std::to_string(pairs) + " pairs");
    link_count_ = pairs * lanes_;
    usable_prefix_.assign(lanes_, std::vector<std::uint32_t>(n + 1, 0));
    for (std::uint32_t k = 0; k < lanes_; ++k)
      for (std::size_t h = 0; h < n; ++h)
        usable_prefix_[k][h + 1] = usable_prefix_[k][h] + (sides_[h * lanes_ + k].plan ? 1u : 0u);
    return success();
  }
  // Explicit links, and each side's QP count before each link (what create_qp sees).
  std::vector<std::uint32_t> qps(sides_.size(), 0);
  auto add = [&](std::uint32_t a, std::uint32_t b, std::uint32_t lane) {
    Explicit e{a, b, lane, qps[a], qps[b]};
    if (sides_[a].plan && sides_[b].plan) {
      for (std::uint32_t s : {a, b})
        if (sides_[s].qp_limit == 0 || qps[s] < sides_[s].qp_limit) ++qps[s];
    }
    explicit_.push_back(e);
  };
  const JacclDevices& J = topo.jaccl;
  if (topo.pairing == Pairing::ring) {
    // gidpolicy simulate's ring: i with i+1, one link for two hosts.
    for (std::uint32_t i = 0; i < n; ++i)
      if (n > 2 || i == 0) add(i, (i + 1) % n, 0);
  } else if (L.jaccl_ring) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t r = (i + 1) % n;
      for (std::size_t k = 0; k < J.names[i][r].size(); ++k)
        add(L.jaccl_side[i].at(J.names[i][r][k]), L.jaccl_side[r].at(J.names[r][i][k]),
            static_cast<std::uint32_t>(k));
    }
  } else {
    for (std::uint32_t i = 0; i < n; ++i)
      for (std::uint32_t j = i + 1; j < n; ++j)
        add(L.jaccl_side[i].at(J.names[i][j][0]), L.jaccl_side[j].at(J.names[j][i][0]), 0);
  }
  link_count_ = explicit_.size();
  return success();
}

result<Analysis> Analysis::run(std::vector<HostSnapshot> hosts, const Topology& topo,
                               const Options& options) {
  GIDPOLICY_TRYV(check_hosts(hosts));
  Analysis an;
  an.hosts_ = std::move(hosts);
  an.profile_ = options.profile;
  an.pairing_ = topo.pairing;
  auto layout = lay_out(an.hosts_, topo);
  if (!layout) return layout.error();
  const Layout& L = layout.value();
  an.topology_name_ = L.name;
  an.lanes_ = L.lanes;

  // Plan every side once, then judge each side towards each peer class, then the links.
  CauseTable causes(an.causes_);
  an.sides_.resize(L.want.size());
  an.side_info_.resize(L.want.size());
  const std::string spec = an.profile_.spec();
  for (std::size_t s = 0; s < L.want.size(); ++s)
    plan_side(L.want[s], an.profile_, spec, options, an.sides_[s], an.side_info_[s], causes);
  judge_classes(an.sides_, causes);
  an.find_conflicts();
  GIDPOLICY_TRYV(an.lay_links(topo, L));
  an.summarize(std::max(1u, options.threads));
  return an;
}

// ---------------------------------------------------------------------------------------------
// Conflicts: one pass over every entry of every host, hashed; groups by host set.
namespace {

struct FleetGidHash {
  std::size_t operator()(const Gid& g) const noexcept {
    std::uint64_t a = 0, b = 0;
    std::memcpy(&a, g.bytes().data(), 8);
    std::memcpy(&b, g.bytes().data() + 8, 8);
    return static_cast<std::size_t>((a * 0x9e3779b97f4a7c15ull) ^ (b + 0x632be59bd9b4e019ull + (a << 6)));
  }
};

/// A GID that is an IP address a host answers for: IPv4-mapped or IPv6, not zero, not
/// link-local (fe80::/10, 169.254/16: see ConflictKind::duplicate_address).
bool fleet_ip_based(const Gid& g) noexcept {
  return !g.is_zero() && !g.is_link_local() && !g.is_ipv4_link_local();
}

std::string fleet_dotted(std::uint32_t v) {
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 0xff) + "." +
         std::to_string((v >> 8) & 0xff) + "." + std::to_string(v & 0xff);
}

}  // namespace

void Analysis::find_conflicts() {
  // Every IP-based GID of every port of every host (not only the ports the topology uses: a host
  // answers for its addresses whichever port holds them), each host once per GID.
  struct Holder {
    Gid gid;
    std::string device;                // where the first host holds it
    std::vector<std::uint32_t> hosts;  // in input order, each once
  };
  std::unordered_map<Gid, std::uint32_t, FleetGidHash> ids;
  std::vector<Holder> holders;
  for (std::uint32_t h = 0; h < hosts_.size(); ++h)
    for (const GidTable& t : hosts_[h].ports)
      for (const GidEntry& e : t) {
        if (e.state != EntryState::valid || !fleet_ip_based(e.gid)) continue;
        auto [it, fresh] = ids.try_emplace(e.gid, static_cast<std::uint32_t>(holders.size()));
        if (fresh) holders.push_back({e.gid, t.port().device, {}});
        auto& hs = holders[it->second].hosts;
        if (hs.empty() || hs.back() != h) hs.push_back(h);
      }
  // Group the duplicated GIDs by the set of hosts holding them: hosts cloned from one table
  // share all their addresses and are one finding.
  std::map<std::vector<std::uint32_t>, std::vector<std::uint32_t>> groups;
  for (std::uint32_t k = 0; k < holders.size(); ++k)
    if (holders[k].hosts.size() >= 2) groups[holders[k].hosts].push_back(k);
  struct Pending {
    Conflict c;
    std::vector<std::uint32_t> members;
  };
  std::vector<Pending> found;
  for (auto& [hosts, members] : groups) {
    Conflict c;
    c.kind = ConflictKind::duplicate_address;
    c.fatal = true;
    c.gid_count = members.size();
    for (std::size_t i = 0; i < members.size() && i < kConflictNamed; ++i)
      c.gids.push_back(holders[members[i]].gid);
    c.device = holders[members.front()].device;
    c.host_count = static_cast<std::uint32_t>(hosts.size());
    c.hosts.assign(hosts.begin(),
                   hosts.begin() + static_cast<std::ptrdiff_t>(std::min(hosts.size(), kConflictNamed)));
    found.push_back({std::move(c), std::move(members)});
  }
  std::stable_sort(found.begin(), found.end(), [](const Pending& x, const Pending& y) {
    return x.c.host_count != y.c.host_count ? x.c.host_count > y.c.host_count : x.c.hosts < y.c.hosts;
  });
  std::vector<std::uint32_t> conflict_of(holders.size(), kNone);
  for (auto& p : found) {
    for (std::uint32_t k : p.members) conflict_of[k] = static_cast<std::uint32_t>(conflicts_.size());
    conflicts_.push_back(std::move(p.c));
  }
  for (std::size_t s = 0; s < sides_.size(); ++s) {
    Side& S = sides_[s];
    if (!S.plan) continue;
    if (auto it = ids.find(S.plan->selection.entry.gid); it != ids.end())
      S.conflict = side_info_[s].conflict = conflict_of[it->second];
  }
  // Rails whose IPv4 ranges interleave: the range of each rail over the fleet, then each pair.
  if (pairing_ != Pairing::rail || lanes_ < 2) return;
  struct Range {
    std::uint32_t lo = std::numeric_limits<std::uint32_t>::max(), hi = 0;
    bool any = false;
  };
  auto each_v4 = [&](std::uint32_t side, auto&& fn) {
    if (const GidTable* t = sides_[side].table)
      for (const GidEntry& e : *t)
        if (e.state == EntryState::valid && e.gid.is_ipv4_mapped() && !e.gid.is_ipv4_link_local())
          fn(*e.gid.ipv4());
  };
  const std::uint32_t n = static_cast<std::uint32_t>(hosts_.size());
  std::vector<Range> range(lanes_);
  std::vector<std::string> rail_name(lanes_);
  for (std::uint32_t k = 0; k < lanes_; ++k)
    for (std::uint32_t h = 0; h < n; ++h) {
      const std::uint32_t s = h * lanes_ + k;
      if (rail_name[k].empty() && sides_[s].table)
        rail_name[k] = "rail " + std::to_string(k) + " (" + side_info_[s].device + ")";
      each_v4(s, [&](std::uint32_t v) {
        range[k].lo = std::min(range[k].lo, v);
        range[k].hi = std::max(range[k].hi, v);
        range[k].any = true;
      });
    }
  for (std::uint32_t k = 0; k < lanes_; ++k)
    for (std::uint32_t m = k + 1; m < lanes_; ++m) {
      if (!range[k].any || !range[m].any || range[k].hi < range[m].lo || range[m].hi < range[k].lo) continue;
      Conflict c;
      c.kind = ConflictKind::rail_subnet_overlap;
      c.device = rail_name[k];
      c.other_device = rail_name[m];
      c.detail = fleet_dotted(range[k].lo) + "-" + fleet_dotted(range[k].hi) + " and " +
                 fleet_dotted(range[m].lo) + "-" + fleet_dotted(range[m].hi);
      auto inside = [](const Range& r, std::uint32_t v) { return v >= r.lo && v <= r.hi; };
      for (std::uint32_t h = 0; h < n; ++h) {
        bool in = false;
        each_v4(h * lanes_ + m, [&](std::uint32_t v) { in = in || inside(range[k], v); });
        each_v4(h * lanes_ + k, [&](std::uint32_t v) { in = in || inside(range[m], v); });
        if (!in) continue;
        if (c.hosts.size() < kConflictNamed) c.hosts.push_back(h);
        ++c.host_count;
      }
      conflicts_.push_back(std::move(c));
    }
}

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
  // Both sides advertise: a GID another host holds too makes whatever follows unreliable.
  l.conflict = A.conflict != kNone ? A.conflict : B.conflict;
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
  // The framing rule, after the delivery rule (a packet from another GID is dropped whatever its
  // framing): only when both QPs route by GID and their entries frame differently.
  if (A.framing != B.framing && A.framing != 0 && B.framing != 0 && (A.global_to >> B.cls & 1u) &&
      (B.global_to >> A.cls & 1u)) {
    if (l.a_to_b.ok()) set(l.a_to_b, A.framing_cause, a);
    if (l.b_to_a.ok()) set(l.b_to_a, B.framing_cause, b);
  }
  return l;
}

namespace {

/// Row i of the upper triangle starts at link i*n - i*(i+1)/2.
std::uint64_t row_start(std::uint64_t i, std::uint64_t n) { return i * n - i * (i + 1) / 2; }

}  // namespace

Link Analysis::link(std::uint64_t k) const {
  if (!explicit_.empty()) {
    const Explicit& e = explicit_[static_cast<std::size_t>(k)];  // k < size(): fits a size_t
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
  // i < j < n = hosts_.size(): both fit a size_t (32 bits in the browser build).
  const std::uint32_t rank_a = pre[static_cast<std::size_t>(j)] - 1;
  const std::uint32_t rank_b = pre[static_cast<std::size_t>(i)];
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
             lane, pre[static_cast<std::size_t>(j)] - 1, pre[static_cast<std::size_t>(i)]));
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
    std::uint64_t unreliable = 0;
    std::vector<std::uint64_t> conflict_links;  // per conflict
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
    part.conflict_links.assign(conflicts_.size(), 0);
    const std::uint64_t b = total * t / threads, e = total * (t + 1) / threads;
    for_each_link(b, e, [&](const Link& l) {
      if (l.connected()) {
        ++part.connected;
        if (l.conflict != kNoConflict) {
          ++part.unreliable;
          const std::uint32_t ca = sides_[l.a].conflict, cb = sides_[l.b].conflict;
          if (ca != kNone) ++part.conflict_links[ca];
          if (cb != kNone && cb != ca) ++part.conflict_links[cb];
        }
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
  for (const auto& p : parts) {
    summary_.connected += p.connected;
    summary_.unreliable += p.unreliable;
    for (std::size_t c = 0; c < conflicts_.size(); ++c) conflicts_[c].links += p.conflict_links[c];
  }
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

bool Analysis::ok() const noexcept {
  return summary_.all_connected() &&
         std::none_of(conflicts_.begin(), conflicts_.end(), [](const Conflict& c) { return c.fatal; });
}

std::string Analysis::describe(const Conflict& c) const {
  std::string hosts;
  for (std::uint32_t h : c.hosts) hosts += (hosts.empty() ? "" : ", ") + hosts_[h].host;
  if (c.host_count > c.hosts.size()) hosts += ", ...";
  const std::string on = std::to_string(c.host_count) + " hosts (" + hosts + ")";
  if (c.kind == ConflictKind::rail_subnet_overlap)
    return c.device + " and " + c.other_device + ": IPv4 ranges " + c.detail +
           " interleave across the fleet, " + on +
           " holding an address inside the other rail's range: one subnet per rail cannot hold both " +
           "(routes by subnet send one rail's traffic out of the other's NIC)";
  auto gid_text = [](const Gid& g) {
    return g.is_ipv4_mapped() ? g.to_string() + " (" + g.ipv4_string() + ")" : g.to_string();
  };
  std::string s;
  if (c.gid_count == 1) {
    s = "GID " + gid_text(c.gids.front()) + " on " + on;
  } else {
    std::string list;
    for (const Gid& g : c.gids) list += (list.empty() ? "" : ", ") + gid_text(g);
    if (c.gid_count > c.gids.size()) list += ", ...";
    s = std::to_string(c.gid_count) + " GIDs (" + list + ") each on the same " + on;
  }
  s += ", " + c.device + " on " + hosts_[c.hosts.front()].host +
       ": one address on several hosts, a peer's packets reach only one of them -> ";
  s += c.links == 0
           ? std::string("no link of this topology advertises it, the hosts still answer for it")
           : std::to_string(c.links) + (c.links == 1 ? " link" : " links") + " not reliably connected";
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
