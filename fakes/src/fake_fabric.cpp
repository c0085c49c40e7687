#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

namespace gidpolicy::fakes {

std::string_view to_string(Topology t) noexcept { return t == Topology::ring ? "ring" : "mesh"; }

std::string PairResult::why() const {
  std::string out;
  if (!a_to_b.delivered) out += a + " -> " + b + ": " + a_to_b.why;
  if (!b_to_a.delivered) out += (out.empty() ? "" : "; ") + b + " -> " + a + ": " + b_to_a.why;
  return out;
}

bool FabricReport::all_connected() const noexcept { return connected_count() == pairs.size(); }

std::size_t FabricReport::connected_count() const noexcept {
  std::size_t n = 0;
  for (const auto& p : pairs) n += p.connected() ? 1u : 0u;
  return n;
}

const PairResult* FabricReport::pair(std::string_view x, std::string_view y) const noexcept {
  for (const auto& p : pairs)
    if ((p.a == x && p.b == y) || (p.a == y && p.b == x)) return &p;
  return nullptr;
}

std::string FabricReport::to_string() const {
  std::string out = std::string(fakes::to_string(topology)) + ": " + std::to_string(connected_count()) + "/" +
                    std::to_string(pairs.size()) + " pairs connected\n";
  for (const auto& p : pairs) {
    out += "  " + p.a + " <-> " + p.b + ": ";
    if (p.connected()) {
      out += "connected (sgid " + std::to_string(*p.a_sgid_index) + " / " + std::to_string(*p.b_sgid_index) +
             ")";
    } else {
      out += "FAILED: " + p.why();
    }
    out += "\n";
  }
  return out;
}

struct FakeFabric::Host {
  FabricHost spec;
  FakeVerbs verbs;
  // Per connect() run:
  DeviceHandle device;
  std::optional<GidTable> table;
  std::optional<Plan> plan;
  std::string failure;  // why this host cannot take part at all
  std::vector<QpHandle> qps;
};

FakeFabric::FakeFabric() = default;
FakeFabric::~FakeFabric() = default;

result<void> FakeFabric::add_host(FabricHost host) {
  if (host.name.empty()) return fail(errc::invalid_argument, "a fabric host needs a name");
  for (const auto& h : hosts_)
    if (h->spec.name == host.name)
      return fail(errc::invalid_argument, "host '" + host.name + "' was added twice");
  auto h = std::make_unique<Host>();
  GIDPOLICY_TRYV(h->verbs.add_port(host.table, host.driver));
  h->spec = std::move(host);
  hosts_.push_back(std::move(h));
  return success();
}

std::vector<std::string> FakeFabric::hosts() const {
  std::vector<std::string> out;
  for (const auto& h : hosts_) out.push_back(h->spec.name);
  return out;
}

FakeVerbs* FakeFabric::verbs(std::string_view host) noexcept {
  for (auto& h : hosts_)
    if (h->spec.name == host) return &h->verbs;
  return nullptr;
}

namespace {

/// "EINVAL (22): <what the driver model said>" in the errno numbering of the host's driver.
std::string driver_error(const Error& e, Platform platform) {
  if (e.code.category() != std::generic_category()) return e.what();
  return errno_name(platform, e.code.value()) + " (" + std::to_string(e.code.value()) + "): " + e.detail;
}

}  // namespace

result<FabricReport> FakeFabric::connect(Topology topology, const FabricOptions& options) {
  if (hosts_.size() < 2) return fail(errc::invalid_argument, "a fabric needs at least two hosts");

  // Each host, once: open its device, snapshot its port through the seam, plan.
  for (auto& h : hosts_) {
    h->table.reset();
    h->plan.reset();
    h->failure.clear();
    h->qps.clear();
    const PortInfo& port = h->spec.table.port();
    auto dev = h->verbs.open_device(port.device);
    if (!dev) {
      h->failure = h->spec.name + " cannot open " + port.device + ": " + dev.error().what();
      continue;
    }
    h->device = dev.value();
    auto t = verbs::snapshot(h->verbs, h->device, port.port);
    if (!t) {
      h->failure = h->spec.name + " cannot read its GID table: " + t.error().what();
      continue;
    }
    h->table = std::move(t).value();
    auto plan = h->spec.profile.plan(*h->table);
    if (!plan) {
      h->failure = h->spec.name + " (" + h->spec.profile.spec() + ") selects nothing: " + plan.error().what();
      continue;
    }
    h->plan = std::move(plan).value();
  }

  std::vector<std::pair<std::size_t, std::size_t>> edges;
  const std::size_t n = hosts_.size();
  if (topology == Topology::mesh) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) edges.emplace_back(i, j);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      if (n > 2 || i == 0) edges.emplace_back(i, (i + 1) % n);
  }

  FabricReport report;
  report.topology = topology;
  for (const auto& [ia, ib] : edges) {
    Host& A = *hosts_[ia];
    Host& B = *hosts_[ib];
    PairResult pr;
    pr.a = A.spec.name;
    pr.b = B.spec.name;
    if (A.plan) {
      pr.a_advertised = A.plan->selection.entry.gid;
      pr.a_sgid_index = A.plan->sgid_index;
    }
    if (B.plan) {
      pr.b_advertised = B.plan->selection.entry.gid;
      pr.b_sgid_index = B.plan->sgid_index;
    }
    auto both = [&](const std::string& why) {
      pr.a_to_b.why = why;
      pr.b_to_a.why = why;
    };
    if (!A.failure.empty() || !B.failure.empty()) {
      both(!A.failure.empty() ? A.failure : B.failure);
      report.pairs.push_back(std::move(pr));
      continue;
    }

    // Each side creates a UC QP and takes it to INIT (JACCL's INIT mask).
    struct Side {
      Host* host;
      QpHandle qp;
      std::uint32_t qpn = 0;
      bool up = false;  // reached RTS
      std::string why;
      std::optional<int> rtr_errno;
    };
    Side sa{&A, {}, 0, false, {}, {}}, sb{&B, {}, 0, false, {}, {}};
    for (Side* s : {&sa, &sb}) {
      Host& h = *s->host;
      auto qp = h.verbs.create_qp(h.device, QpKind::uc);
      if (!qp) {
        s->why = h.spec.name + " cannot create a QP: " +
                 driver_error(qp.error(), h.verbs.driver_model(h.table->port().device).value().platform);
        continue;
      }
      s->qp = qp.value();
      h.qps.push_back(s->qp);
      s->qpn = h.verbs.qp(s->qp).value().qp_num;
      ibv_qp_attr init{};
      init.qp_state = IBV_QPS_INIT;
      init.pkey_index = 0;
      init.port_num = static_cast<std::uint8_t>(h.table->port().port);
      init.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
      auto r = h.verbs.modify_qp(s->qp, init,
                                 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      if (!r) s->why = h.spec.name + " INIT failed: " + r.error().what();
    }

    // Exchange what each advertises, build RTR from the plan, and apply it; then RTS.
    // Each side builds and applies its own RTR whatever the other side's did, so each
    // direction names its own side's refusal (a peer whose RTR failed still has a QP number).
    auto bring_up = [&](Side& self, const Side& peer) {
      if (!self.why.empty() || !peer.qp) return;
      Host& h = *self.host;
      const Host& p = *peer.host;
      const Platform platform = h.verbs.driver_model(h.table->port().device).value().platform;
      PeerInfo info;
      info.qpn = peer.qpn;
      info.psn = options.psn;
      info.gid = p.plan->selection.entry.gid;
      info.lid = p.table->port().lid;
      info.mtu = p.table->port().active_mtu;
      auto rtr = RtrBuilder(QpKind::uc, *h.table, *h.plan).remote(info).build();
      if (!rtr) {
        self.why = h.spec.name + " cannot build its RTR: " + rtr.error().what();
        return;
      }
      const std::uint32_t port = h.table->port().port;
      auto applied = options.preflight ? verbs::apply_rtr(h.verbs, self.qp, h.device, port, rtr.value(),
                                                          {.platform = platform})
                                       : h.verbs.modify_qp(self.qp, rtr.value().attr, rtr.value().mask);
      if (!applied) {
        if (applied.error().code.category() == std::generic_category())
          self.rtr_errno = applied.error().code.value();
        self.why = h.spec.name + " RTR from sgid_index " + std::to_string(rtr.value().sgid_index()) +
                   " failed: " + driver_error(applied.error(), platform);
        return;
      }
      ibv_qp_attr rts{};
      rts.qp_state = IBV_QPS_RTS;
      rts.sq_psn = options.psn;
      auto r = h.verbs.modify_qp(self.qp, rts, IBV_QP_STATE | IBV_QP_SQ_PSN);
      if (!r) {
        self.why = h.spec.name + " RTS failed: " + r.error().what();
        return;
      }
      self.up = true;
    };
    bring_up(sa, sb);
    bring_up(sb, sa);

    // Delivery from s to d: both up, the driver did not predict a timeout, and the GID the
    // sender's packets carry (its table's entry at its sgid_index, now) is what d was told.
    auto deliver = [&](const Side& s, const Side& d, DirectionResult& out) {
      out.rtr_errno = s.rtr_errno;
      if (!s.why.empty()) {
        out.why = s.why;
        return;
      }
      if (!d.why.empty()) {
        out.why = d.why;
        return;
      }
      const Host& h = *s.host;
      const FakeQp q = h.verbs.qp(s.qp).value();
      if (q.rtr && q.rtr->outcome == RtrOutcome::times_out) {
        out.why = h.spec.name + "'s traffic times out: " + q.rtr->reason;
        return;
      }
      const std::uint8_t idx = q.attr.ah_attr.grh.sgid_index;
      const GidTable now = h.verbs.table(h.table->port().device, h.table->port().port).value();
      const GidEntry* e = now.find(idx);
      const Gid told = h.plan->selection.entry.gid;
      if (!e || !e->usable()) {
        out.why = h.spec.name + " sends from sgid_index " + std::to_string(idx) + ", which holds no GID; " +
                  d.host->spec.name + " expects " + told.to_string();
        return;
      }
      if (e->gid != told) {
        out.why = h.spec.name + " sends from " + e->gid.to_string() + " (sgid_index " + std::to_string(idx) +
                  ") but " + d.host->spec.name + " was told " + told.to_string() + ": dropped";
        return;
      }
      const FakeQp dq = d.host->verbs.qp(d.qp).value();
      if (dq.attr.dest_qp_num != s.qpn) {
        out.why = d.host->spec.name + "'s QP expects QPN " + std::to_string(dq.attr.dest_qp_num) + ", not " +
                  std::to_string(s.qpn);
        return;
      }
      out.delivered = true;
    };
    deliver(sa, sb, pr.a_to_b);
    deliver(sb, sa, pr.b_to_a);
    report.pairs.push_back(std::move(pr));
  }

  // Tear down: QPs and devices of this run.
  for (auto& h : hosts_) {
    for (QpHandle q : h->qps) (void)h->verbs.destroy_qp(q);
    h->qps.clear();
    if (h->device) (void)h->verbs.close_device(h->device);
    h->device = {};
  }
  return report;
}

}  // namespace gidpolicy::fakes
