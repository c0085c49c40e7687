#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/link.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

namespace gidpolicy::fakes {

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
  std::string out = std::string(fleet::to_string(pairing)) + ": " + std::to_string(connected_count()) + "/" +
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

// Each host, once: open its device, snapshot its port through the seam, plan.
void FakeFabric::open_and_plan() {
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
}

/// One host's end of one pair.
struct FakeFabric::Side {
  Host* host;
  QpHandle qp;
  std::uint32_t qpn = 0;
  bool up = false;  // reached RTS
  LinkOutcome outcome = LinkOutcome::ok;
  std::string why;
  std::optional<int> rtr_errno;

  void failed(LinkOutcome o, std::string text) {
    outcome = o;
    why = host->spec.name + " " + std::move(text);
  }
  [[nodiscard]] Platform platform() const {
    return host->verbs.driver_model(host->table->port().device).value().platform;
  }
  /// Create a UC QP and take it to INIT (JACCL's INIT mask).
  void create_and_init() {
    Host& h = *host;
    auto q = h.verbs.create_qp(h.device, QpKind::uc);
    if (!q)
      return failed(LinkOutcome::qp_refused, "cannot create a QP: " + driver_error(q.error(), platform()));
    qp = q.value();
    h.qps.push_back(qp);
    qpn = h.verbs.qp(qp).value().qp_num;
    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.pkey_index = 0;
    init.port_num = static_cast<std::uint8_t>(h.table->port().port);
    init.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    auto r =
        h.verbs.modify_qp(qp, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (!r) failed(LinkOutcome::rtr_error, "INIT failed: " + r.error().what());
  }
};

// Build the RTR from the plan and what the peer told (the link judgment's step 1), apply it
// through the fake, whose modify_qp judges it with the same model (step 2); then RTS. Each side
// does this whatever the other side's did, so each direction names its own side's refusal (a
// peer whose RTR failed still has a QP number).
void FakeFabric::bring_up(Side& self, const Side& peer, const FabricOptions& options) {
  if (!self.why.empty() || !peer.qp) return;
  Host& h = *self.host;
  const Host& p = *peer.host;
  const Platform platform = self.platform();
  const DriverModel model = h.verbs.driver_model(h.table->port().device).value();
  const SideRtr built =
      judge_side_rtr(*h.table, *h.plan, told_by(*p.table, *p.plan, peer.qpn, options.psn), model);
  if (!built.attributes) return self.failed(LinkOutcome::rtr_error, built.text);
  const RtrAttributes& rtr = *built.attributes;
  const std::uint32_t port = h.table->port().port;
  auto applied = options.preflight
                     ? verbs::apply_rtr(h.verbs, self.qp, h.device, port, rtr, {.platform = platform})
                     : h.verbs.modify_qp(self.qp, rtr.attr, rtr.mask);
  if (!applied) {
    if (applied.error().code.category() == std::generic_category())
      self.rtr_errno = applied.error().code.value();
    return self.failed(LinkOutcome::rtr_error,
                       rtr_failure_text(rtr.sgid_index(), driver_error(applied.error(), platform)));
  }
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.sq_psn = options.psn;
  auto r = h.verbs.modify_qp(self.qp, rts, IBV_QP_STATE | IBV_QP_SQ_PSN);
  if (!r) return self.failed(LinkOutcome::rtr_error, "RTS failed: " + r.error().what());
  self.up = true;
}

namespace {

/// Delivery from s to d, the link judgment's order: the sender's failure, else the receiver's;
/// then a timeout the driver predicted at the sender's RTR; then the delivery rule on the
/// sender's table now; then the receiver's QP addressing the sender's QP.
template <class Side>
void deliver(const Side& s, const Side& d, DirectionResult& out) {
  out.rtr_errno = s.rtr_errno;
  const Side* failed = !s.why.empty() ? &s : !d.why.empty() ? &d : nullptr;
  if (failed) {
    out.outcome = failed->outcome;
    out.why = failed->why;
    return;
  }
  const auto& h = *s.host;
  const FakeQp q = h.verbs.qp(s.qp).value();
  if (q.rtr && q.rtr->outcome == RtrOutcome::times_out) {
    out.outcome = LinkOutcome::times_out;
    out.why = h.spec.name + "'s " + times_out_text(q.rtr->reason);
    return;
  }
  const GidTable now = h.verbs.table(h.table->port().device, h.table->port().port).value();
  if (auto why = delivery_failure(now, q.attr.ah_attr.grh.sgid_index, h.plan->selection.entry.gid)) {
    out.outcome = LinkOutcome::dropped;
    out.why = h.spec.name + " " + *why;
    return;
  }
  const FakeQp dq = d.host->verbs.qp(d.qp).value();
  // The framing rule: a port answers only the RoCE version its QP's path uses (a GRH-less
  // InfiniBand path is not framed by a GID type).
  if (q.attr.ah_attr.is_global && dq.attr.ah_attr.is_global) {
    const auto& dh = *d.host;
    const GidTable theirs = dh.verbs.table(dh.table->port().device, dh.table->port().port).value();
    if (auto why =
            framing_failure(now, q.attr.ah_attr.grh.sgid_index, theirs, dq.attr.ah_attr.grh.sgid_index)) {
      out.outcome = LinkOutcome::times_out;
      out.why = h.spec.name + " " + *why;
      return;
    }
  }
  if (dq.attr.dest_qp_num != s.qpn) {
    out.outcome = LinkOutcome::dropped;
    out.why = d.host->spec.name + "'s QP expects QPN " + std::to_string(dq.attr.dest_qp_num) + ", not " +
              std::to_string(s.qpn);
    return;
  }
  out.outcome = LinkOutcome::ok;
  out.delivered = true;
}

}  // namespace

PairResult FakeFabric::connect_pair(Host& A, Host& B, const FabricOptions& options) {
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
  if (!A.failure.empty() || !B.failure.empty()) {
    const std::string& why = !A.failure.empty() ? A.failure : B.failure;
    pr.a_to_b.why = pr.b_to_a.why = why;
    return pr;
  }
  Side sa{&A, {}, 0, false, LinkOutcome::ok, {}, {}}, sb{&B, {}, 0, false, LinkOutcome::ok, {}, {}};
  sa.create_and_init();
  sb.create_and_init();
  bring_up(sa, sb, options);
  bring_up(sb, sa, options);
  deliver(sa, sb, pr.a_to_b);
  deliver(sb, sa, pr.b_to_a);
  return pr;
}

// Tear down: QPs and devices of this run.
void FakeFabric::tear_down() {
  for (auto& h : hosts_) {
    for (QpHandle q : h->qps) (void)h->verbs.destroy_qp(q);
    h->qps.clear();
    if (h->device) (void)h->verbs.close_device(h->device);
    h->device = {};
  }
}

result<FabricReport> FakeFabric::connect(Pairing pairing, const FabricOptions& options) {
  if (hosts_.size() < 2) return fail(errc::invalid_argument, "a fabric needs at least two hosts");
  if (pairing != Pairing::mesh && pairing != Pairing::ring)
    return fail(errc::invalid_argument, "the fake fabric connects one port per host: mesh or ring, not " +
                                            std::string(fleet::to_string(pairing)));
  open_and_plan();
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  const std::size_t n = hosts_.size();
  if (pairing == Pairing::mesh) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < n; ++j) edges.emplace_back(i, j);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      if (n > 2 || i == 0) edges.emplace_back(i, (i + 1) % n);
  }
  FabricReport report;
  report.pairing = pairing;
  for (const auto& [ia, ib] : edges) report.pairs.push_back(connect_pair(*hosts_[ia], *hosts_[ib], options));
  tear_down();
  return report;
}

}  // namespace gidpolicy::fakes
