// One side of `gidpolicy probe`'s attempt on one QP type (probe_attempt.hpp).
#include "probe_attempt.hpp"

#include "probe_cmd.hpp"

#include <gidpolicy/rtr.hpp>

#include <algorithm>
#include <cstring>

namespace gidpolicy::cli {
namespace detail_probe_attempt {

// Offsets in the probe's buffer.
constexpr std::size_t kRecvA = 0, kRecvB = 64, kPingOut = 128, kPongOut = 192, kWriteIn = 256,
                      kWriteOut = 320;
constexpr std::uint64_t kWrWrite = 10, kWrPing = 11, kWrPong = 12, kWrRecvA = 1, kWrRecvB = 2;

// The 64 bytes a message carries: a tag ('P' ping, 'O' pong, 'W' write) and bytes derived from
// the sender's nonce, so the receiver checks every byte against what it must be.
void fill(unsigned char* out, char tag, std::uint32_t nonce) {
  out[0] = static_cast<unsigned char>(tag);
  std::uint32_t x = nonce * 2654435761u + static_cast<std::uint32_t>(static_cast<unsigned char>(tag));
  for (std::uint32_t i = 1; i < kProbeMessage; ++i) {
    x = x * 1103515245u + 12345u + i;
    out[i] = static_cast<unsigned char>(x >> 16);
  }
}

bool matches(const unsigned char* got, char tag, std::uint32_t nonce) {
  unsigned char want[kProbeMessage];
  fill(want, tag, nonce);
  return std::memcmp(got, want, kProbeMessage) == 0;
}

int errno_of(const Error& e) { return e.code.category() == std::generic_category() ? e.code.value() : 0; }

Json causes_json(const Diagnosis& d) {
  Json out = Json::array();
  for (const auto& c : d.causes) {
    if (c.likelihood != Likelihood::confirmed && c.likelihood != Likelihood::likely) continue;
    Json j;
    j["id"] = c.id;
    j["likelihood"] = std::string(to_string(c.likelihood));
    j["summary"] = c.summary;
    j["remedy"] = c.remedy;
    out.push_back(std::move(j));
    if (out.size() == 3) break;
  }
  return out;
}

std::string_view wc_name(ibv_wc_status s) {
  switch (s) {
    case IBV_WC_SUCCESS:
      return "success";
    case IBV_WC_RETRY_EXC_ERR:
      return "retry_exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "rnr_retry_exceeded";
    case IBV_WC_WR_FLUSH_ERR:
      return "flushed";
    case IBV_WC_REM_ACCESS_ERR:
      return "remote_access_error";
    case IBV_WC_LOC_PROT_ERR:
      return "local_protection_error";
    case IBV_WC_LOC_LEN_ERR:
      return "local_length_error";
    case IBV_WC_REM_INV_REQ_ERR:
      return "remote_invalid_request";
    default:
      return "error";
  }
}

std::optional<QpKind> kind_from(const std::string& s) {
  if (s == "rc") return QpKind::rc;
  if (s == "uc") return QpKind::uc;
  return std::nullopt;
}

}  // namespace detail_probe_attempt

using namespace detail_probe_attempt;

Json hello_json(const ProbeSide& s) {
  Json j;
  j["role"] = s.role;
  j["device"] = s.device;
  j["port"] = s.port;
  j["link_layer"] = s.link_layer;
  j["platform"] = s.platform;
  j["profile"] = s.profile;
  j["gid"] = s.gid.to_string();
  j["gid_index"] = s.gid_index;
  j["sgid_index"] = s.sgid_index;
  j["gid_type"] = std::string(to_string(s.gid_type));
  j["lid"] = s.lid;
  j["mtu"] = mtu_bytes(s.mtu);
  j["nonce"] = s.nonce;
  Json qps = Json::array();
  for (const auto& q : s.qps) {
    Json jq;
    jq["kind"] = std::string(to_string(q.kind));
    jq["created"] = !q.create_errno.has_value();
    jq["qpn"] = q.qpn;
    jq["psn"] = q.psn;
    jq["addr"] = q.addr;
    jq["rkey"] = q.rkey;
    qps.push_back(std::move(jq));
  }
  j["qps"] = std::move(qps);
  return j;
}

std::optional<ProbeSide> hello_from_json(const Json& j, std::string& why) {
  ProbeSide s;
  auto role = probe_text(j, "role", 16, why);
  if (!role) return std::nullopt;
  if (*role != "listener" && *role != "connector") {
    why = "field 'role': expected listener or connector";
    return std::nullopt;
  }
  s.role = *role;
  auto device = probe_text(j, "device", 64, why);
  auto port = device ? probe_field(j, "port", 255, why) : std::nullopt;
  auto ll = port ? probe_text(j, "link_layer", 32, why) : std::nullopt;
  auto platform = ll ? probe_text(j, "platform", 16, why) : std::nullopt;
  auto profile = platform ? probe_text(j, "profile", 300, why) : std::nullopt;
  auto gid = profile ? probe_text(j, "gid", 64, why) : std::nullopt;
  auto gid_index = gid ? probe_field(j, "gid_index", 0xffffffffu, why) : std::nullopt;
  auto sgid = gid_index ? probe_field(j, "sgid_index", 255, why) : std::nullopt;
  auto type = sgid ? probe_text(j, "gid_type", 16, why) : std::nullopt;
  auto lid = type ? probe_field(j, "lid", 0xffff, why) : std::nullopt;
  auto mtu = lid ? probe_field(j, "mtu", 4096, why) : std::nullopt;
  auto nonce = mtu ? probe_field(j, "nonce", 0xffffffffu, why) : std::nullopt;
  if (!nonce) return std::nullopt;
  if (*port == 0) {
    why = "field 'port': expected 1..255, found 0";
    return std::nullopt;
  }
  if (*platform != "linux" && *platform != "darwin") {
    why = "field 'platform': expected linux or darwin";
    return std::nullopt;
  }
  auto g = Gid::parse(*gid);
  if (!g) {
    why = "field 'gid': " + g.error().what();
    return std::nullopt;
  }
  auto t = gid_type_from_string(*type);
  auto m = mtu_from_bytes(static_cast<unsigned>(*mtu));
  if (!t) {
    why = "field 'gid_type': expected ib, roce_v1, roce_v2 or unknown";
    return std::nullopt;
  }
  if (!m) {
    why = "field 'mtu': expected 256, 512, 1024, 2048 or 4096, found " + std::to_string(*mtu);
    return std::nullopt;
  }
  s.device = *device;
  s.port = static_cast<std::uint32_t>(*port);
  s.link_layer = *ll;
  s.platform = *platform;
  s.profile = *profile;
  s.gid = g.value();
  s.gid_index = static_cast<std::uint32_t>(*gid_index);
  s.sgid_index = static_cast<std::uint32_t>(*sgid);
  s.gid_type = *t;
  s.lid = static_cast<std::uint16_t>(*lid);
  s.mtu = *m;
  s.nonce = static_cast<std::uint32_t>(*nonce);
  if (!j.contains("qps") || !j["qps"].is_array() || j["qps"].empty() || j["qps"].size() > 2) {
    why = "field 'qps': expected an array of one or two queue pairs";
    return std::nullopt;
  }
  for (const Json& jq : j["qps"]) {
    QpAdvert q;
    auto kind = probe_text(jq, "kind", 4, why);
    if (!kind) return std::nullopt;
    auto k = kind_from(*kind);
    if (!k) {
      why = "field 'qps[].kind': expected rc or uc";
      return std::nullopt;
    }
    q.kind = *k;
    if (!jq.contains("created") || !jq["created"].is_boolean()) {
      why = "field 'qps[].created': expected true or false";
      return std::nullopt;
    }
    if (!jq["created"].get<bool>()) q.create_errno = 0;
    auto qpn = probe_field(jq, "qpn", 0xffffff, why);
    auto psn = qpn ? probe_field(jq, "psn", 0xffffff, why) : std::nullopt;
    auto addr = psn ? probe_field(jq, "addr", ~std::uint64_t{0}, why) : std::nullopt;
    auto rkey = addr ? probe_field(jq, "rkey", 0xffffffffu, why) : std::nullopt;
    if (!rkey) {
      why = "qps[]: " + why;
      return std::nullopt;
    }
    q.qpn = static_cast<std::uint32_t>(*qpn);
    q.psn = static_cast<std::uint32_t>(*psn);
    q.addr = *addr;
    q.rkey = static_cast<std::uint32_t>(*rkey);
    s.qps.push_back(q);
  }
  return s;
}

Json outcome_json(const SideOutcome& s, Platform p) {
  Json j;
  j["predicted"] = s.predicted;
  j["predicted_errno"] = s.predicted_errno;
  j["predicted_errno_name"] = s.predicted_errno ? Json(errno_name(p, s.predicted_errno)) : Json(nullptr);
  j["predicted_rule"] = s.predicted_rule;
  j["predicted_reason"] = s.predicted_reason;
  j["builder_refused"] = s.builder_refused ? Json(*s.builder_refused) : Json(nullptr);
  j["stage"] = s.stage;
  j["errno"] = s.err;
  j["errno_name"] = s.err ? Json(errno_name(p, s.err)) : Json(nullptr);
  j["error"] = s.err_text;
  j["causes"] = s.causes;
  j["send_status"] = s.send_status ? Json(*s.send_status) : Json(nullptr);
  j["pong_received"] = s.pong_received;
  j["rtt_us"] = s.rtt_us ? Json(*s.rtt_us) : Json(nullptr);
  j["ping_received"] = s.ping_received;
  j["payload_ok"] = s.payload_ok;
  j["write_ok"] = s.write_ok;
  return j;
}

std::optional<SideOutcome> outcome_from_json(const Json& j, std::string& why) {
  SideOutcome s;
  auto predicted = probe_text(j, "predicted", 16, why);
  auto perr = predicted ? probe_field(j, "predicted_errno", 4095, why) : std::nullopt;
  auto rule = perr ? probe_text(j, "predicted_rule", 64, why) : std::nullopt;
  auto reason = rule ? probe_text(j, "predicted_reason", 2000, why) : std::nullopt;
  auto stage = reason ? probe_text(j, "stage", 16, why) : std::nullopt;
  auto err = stage ? probe_field(j, "errno", 4095, why) : std::nullopt;
  auto text = err ? probe_text(j, "error", 2000, why) : std::nullopt;
  if (!text) return std::nullopt;
  static const char* kOutcomes[] = {"ok", "error", "times_out", "unknown"};
  static const char* kStages[] = {"ok", "create_qp", "builder", "rtr", "rts"};
  if (std::find(std::begin(kOutcomes), std::end(kOutcomes), *predicted) == std::end(kOutcomes)) {
    why = "field 'predicted': expected ok, error, times_out or unknown";
    return std::nullopt;
  }
  if (std::find(std::begin(kStages), std::end(kStages), *stage) == std::end(kStages)) {
    why = "field 'stage': expected ok, create_qp, builder, rtr or rts";
    return std::nullopt;
  }
  s.predicted = *predicted;
  s.predicted_errno = static_cast<int>(*perr);
  s.predicted_rule = *rule;
  s.predicted_reason = *reason;
  if (j.contains("builder_refused") && j["builder_refused"].is_string())
    s.builder_refused = j["builder_refused"].get<std::string>().substr(0, 2000);
  s.stage = *stage;
  s.err = static_cast<int>(*err);
  s.err_text = *text;
  if (j.contains("causes") && j["causes"].is_array() && j["causes"].size() <= 8) {
    for (const Json& c : j["causes"]) {
      std::string w;
      auto id = probe_text(c, "id", 64, w);
      auto summary = id ? probe_text(c, "summary", 2000, w) : std::nullopt;
      if (!summary) {
        why = "causes[]: " + w;
        return std::nullopt;
      }
      Json k;
      k["id"] = *id;
      k["likelihood"] = c.value("likelihood", std::string("confirmed")).substr(0, 16);
      k["summary"] = *summary;
      k["remedy"] = c.value("remedy", std::string()).substr(0, 2000);
      s.causes.push_back(std::move(k));
    }
  }
  const auto flag = [&](const char* key) {
    return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
  };
  if (j.contains("send_status") && j["send_status"].is_string())
    s.send_status = j["send_status"].get<std::string>().substr(0, 32);
  s.pong_received = flag("pong_received");
  if (j.contains("rtt_us") && j["rtt_us"].is_number() && j["rtt_us"].get<double>() >= 0)
    s.rtt_us = j["rtt_us"].get<double>();
  s.ping_received = flag("ping_received");
  s.payload_ok = flag("payload_ok");
  s.write_ok = flag("write_ok");
  return s;
}

ProbeSide port_side(const GidTable& t, const DriverModel& model, std::string profile, std::mt19937& rng) {
  ProbeSide self;
  self.device = t.port().device;
  self.port = t.port().port;
  self.link_layer = std::string(to_string(t.port().link_layer));
  self.platform = std::string(to_string(model.platform));
  self.profile = std::move(profile);
  self.lid = t.port().lid;
  self.mtu = t.port().active_mtu;
  self.nonce = static_cast<std::uint32_t>(rng());
  return self;
}

void advertise_plan(ProbeSide& self, const Plan& plan, verbs::VerbsApi& api, verbs::DeviceHandle dev,
                    std::uint32_t port, const std::vector<QpKind>& kinds, std::mt19937& rng,
                    std::vector<LocalQp>& qps) {
  self.gid = plan.selection.entry.gid;
  self.gid_index = plan.selection.entry.index;
  self.sgid_index = plan.sgid_index;
  self.gid_type = plan.selection.entry.type;
  for (QpKind k : kinds) {
    qps.push_back(make_local_qp(api, dev, port, k, static_cast<std::uint32_t>(rng())));
    const LocalQp& q = qps.back();
    self.qps.push_back(QpAdvert{.kind = k,
                                .create_errno = q.create_errno,
                                .qpn = q.qpn,
                                .psn = q.psn,
                                .addr = q.keys.addr,
                                .rkey = q.keys.rkey});
  }
}

LocalQp make_local_qp(verbs::VerbsApi& api, verbs::DeviceHandle dev, std::uint32_t port, QpKind kind,
                      std::uint32_t psn) {
  LocalQp q;
  q.kind = kind;
  q.psn = psn & 0xffffff;
  auto h = api.create_data_qp(dev, kind, verbs::QpCapacity{});
  if (!h) {
    q.create_errno = errno_of(h.error());
    q.create_text = h.error().what();
    return q;
  }
  q.qp = h.value();
  auto info = api.query_qp(q.qp);
  if (info) q.qpn = info.value().qp_num;
  q.buffer = std::make_unique<unsigned char[]>(kProbeBuffer);
  std::memset(q.buffer.get(), 0, kProbeBuffer);
  auto keys = api.register_memory(q.qp, q.buffer.get(), kProbeBuffer,
                                  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!keys) {
    q.create_errno = errno_of(keys.error());
    q.create_text = keys.error().what();
    return q;
  }
  q.keys = keys.value();
  ibv_qp_attr a;
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<std::uint8_t>(port);
  a.qp_access_flags = static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  auto r = api.modify_qp(q.qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (!r) {
    q.create_errno = errno_of(r.error());
    q.create_text = "RESET->INIT: " + r.error().what();
  }
  return q;
}

bool prepare_qp(const AttemptContext& c, LocalQp& q, const ProbeSide& self, const ProbeSide& peer,
                const QpAdvert& remote, SideOutcome& out) {
  const PeerInfo told{.qpn = remote.qpn,
                      .psn = remote.psn,
                      .gid = peer.gid,
                      .lid = peer.lid,
                      .mtu = peer.mtu,
                      .gid_type = peer.gid_type};
  // The prediction, before anything is attempted: creation, then the RTR judged on the table.
  const RtrVerdict created = judge_create_qp(q.kind, 0, c.model);
  if (created.outcome != RtrOutcome::ok) {
    out.predicted = std::string(to_string(created.outcome));
    out.predicted_errno = created.err;
    out.predicted_rule = std::string(to_string(created.rule));
    out.predicted_reason = created.reason;
  } else {
    const RtrPrediction p = predict_rtr(*c.table, *c.plan, told, c.model, q.kind);
    out.predicted = std::string(to_string(p.verdict.outcome));
    out.predicted_errno = p.verdict.err;
    out.predicted_rule = p.verdict.rule == RtrRule::none ? "" : std::string(to_string(p.verdict.rule));
    out.predicted_reason = p.verdict.reason;
    if (p.refused) out.builder_refused = p.refused->what();
  }
  const auto diagnose_here = [&](int err, std::uint32_t sgid) {
    DiagnoseContext ctx;
    ctx.table = c.table;
    ctx.sgid_index = sgid;
    ctx.advertised = self.gid;
    ctx.peer_gid = peer.gid;
    ctx.peer_gid_type = peer.gid_type;
    ctx.qp_type = q.kind;
    Json causes = causes_json(diagnose(err, c.model, ctx));
    if (c.pin_cause) causes.insert(causes.begin(), *c.pin_cause);
    return causes;
  };
  if (q.create_errno) {
    out.stage = "create_qp";
    out.err = *q.create_errno;
    out.err_text = q.create_text;
    if (out.err) out.causes = diagnose_here(out.err, self.sgid_index);
    return false;
  }
  if (remote.create_errno) {
    out.stage = "ok";  // nothing failed here: the peer's QP does not exist
    return false;
  }
  // The attributes the stack sends: RtrBuilder from the plan advertised, told what a stack
  // exchanges (no GID type: only UCX sends one), so a v1/v2 pair reaches the wire.
  PeerInfo wire = told;
  wire.gid_type.reset();
  RtrBuilder builder(q.kind, *c.table, *c.plan);
  builder.remote(wire);
  if (q.kind == QpKind::rc) builder.max_dest_rd_atomic(1).min_rnr_timer(kProbeMinRnrTimer);
  auto built = builder.build();
  RtrAttributes attrs;
  if (built) {
    attrs = built.value();
  } else {
    out.builder_refused = built.error().what();
    // Apple's Thunderbolt port reportedly wedges after failed RTRs: never sent there.
    if (c.table->port().link_layer.kind() == LinkLayer::Kind::thunderbolt) {
      out.stage = "builder";
      out.err_text = "RtrBuilder refused, not sent on a Thunderbolt port: " + built.error().what();
      return false;
    }
    attrs = builder.unchecked();  // what a stack that builds its attributes by hand sends
  }
  auto r = c.api->modify_qp(q.qp, attrs.attr, attrs.mask);
  if (!r) {
    out.stage = "rtr";
    out.err = errno_of(r.error());
    out.err_text = "ibv_modify_qp INIT->RTR: " + r.error().what();
    out.causes = diagnose_here(out.err ? out.err : EIO, attrs.sgid_index());
    return false;
  }
  ibv_qp_attr rts;
  std::memset(&rts, 0, sizeof rts);
  rts.qp_state = IBV_QPS_RTS;
  rts.sq_psn = q.psn;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (q.kind == QpKind::rc) {
    rts.timeout = kProbeRcTimeout;
    rts.retry_cnt = kProbeRcRetryCount;
    rts.rnr_retry = kProbeRnrRetry;
    rts.max_rd_atomic = 1;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  r = c.api->modify_qp(q.qp, rts, mask);
  if (!r) {
    out.stage = "rts";
    out.err = errno_of(r.error());
    out.err_text = "ibv_modify_qp RTR->RTS: " + r.error().what();
    return false;
  }
  return true;
}

std::optional<ProbeProblem> exchange_data(const AttemptContext& c, LocalQp& q, const ProbeSide& self,
                                          const ProbeSide& peer, const QpAdvert& remote, ProbeChannel& sock,
                                          ProbeClock::time_point deadline, SideOutcome& out) {
  verbs::VerbsApi& api = *c.api;
  unsigned char* buf = q.buffer.get();
  const std::uint64_t base = q.keys.addr;
  for (auto [wr, off] : {std::pair{kWrRecvA, kRecvA}, std::pair{kWrRecvB, kRecvB}}) {
    auto r = api.post_recv(q.qp, wr, base + off, kProbeMessage, q.keys.lkey);
    if (!r) out.send_status = "post_recv: " + r.error().what();
  }
  const std::string kind(to_string(q.kind));
  ProbeProblem problem;
  if (auto p = sock.send("ready", Json{{"kind", kind}})) return p;
  if (!sock.receive("ready", "the peer's ready for " + kind, deadline, problem)) return problem;

  const auto started = ProbeClock::now();
  fill(buf + kWriteOut, 'W', self.nonce);
  fill(buf + kPingOut, 'P', self.nonce);
  auto w = api.post_send(q.qp, {.op = verbs::SendRequest::Op::rdma_write,
                                .wr_id = kWrWrite,
                                .local_addr = base + kWriteOut,
                                .length = kProbeMessage,
                                .lkey = q.keys.lkey,
                                .remote_addr = remote.addr + kWriteIn,
                                .rkey = remote.rkey});
  auto s = api.post_send(q.qp, {.op = verbs::SendRequest::Op::send,
                                .wr_id = kWrPing,
                                .local_addr = base + kPingOut,
                                .length = kProbeMessage,
                                .lkey = q.keys.lkey,
                                .remote_addr = 0,
                                .rkey = 0});
  std::optional<std::string> write_status, ping_status, pong_status;
  if (!w) write_status = "post_send: " + w.error().what();
  if (!s) ping_status = "post_send: " + s.error().what();
  bool pong_posted = false, sent_said = false, peer_sent_read = false;
  std::optional<std::string> peer_send_status;
  const auto say_sent = [&]() -> std::optional<ProbeProblem> {
    sent_said = true;
    Json body{{"kind", kind}};
    body["status"] = ping_status ? Json(*ping_status) : Json(nullptr);
    return sock.send("sent", body);
  };
  for (;;) {
    auto comps = api.poll_completions(q.qp, 8);
    if (comps) {
      for (const auto& wc : comps.value()) {
        const std::string status(wc_name(wc.status));
        if (wc.wr_id == kWrWrite) {
          write_status = status;
        } else if (wc.wr_id == kWrPing) {
          ping_status = status;
        } else if (wc.wr_id == kWrPong) {
          pong_status = status;
        } else if ((wc.wr_id == kWrRecvA || wc.wr_id == kWrRecvB) && wc.status == IBV_WC_SUCCESS) {
          const unsigned char* got = buf + (wc.wr_id == kWrRecvA ? kRecvA : kRecvB);
          if (got[0] == 'P' && !out.ping_received) {
            out.ping_received = true;
            out.payload_ok = wc.byte_len == kProbeMessage && matches(got, 'P', peer.nonce);
            out.write_ok = matches(buf + kWriteIn, 'W', peer.nonce);
            fill(buf + kPongOut, 'O', peer.nonce);
            auto p = api.post_send(q.qp, {.op = verbs::SendRequest::Op::send,
                                          .wr_id = kWrPong,
                                          .local_addr = base + kPongOut,
                                          .length = kProbeMessage,
                                          .lkey = q.keys.lkey,
                                          .remote_addr = 0,
                                          .rkey = 0});
            pong_posted = p.has_value();
          } else if (got[0] == 'O' && matches(got, 'O', self.nonce) && !out.pong_received) {
            out.pong_received = true;
            out.rtt_us = std::chrono::duration<double, std::micro>(ProbeClock::now() - started).count();
          } else if (got[0] == 'P') {
            out.payload_ok = false;  // a second ping: not what the peer sends
          }
        }
      }
    }
    if (ping_status && !sent_said)
      if (auto p = say_sent()) return p;
    if (!peer_sent_read && sock.readable()) {
      auto m = sock.receive("sent", "the peer's send status for " + kind, deadline, problem);
      if (!m) return problem;
      peer_sent_read = true;
      const Json& st = m.value()["status"];
      peer_send_status = st.is_string() ? st.get<std::string>().substr(0, 64) : std::string("none");
    } else if (peer_sent_read && !sock.pump("the data exchange on " + kind, problem)) {
      return problem;  // the peer died while this side waited for its data
    }
    const bool own_settled = ping_status && (out.pong_received || *ping_status != "success" ||
                                             (write_status && *write_status != "success"));
    const bool peer_settled = out.ping_received || (peer_send_status && *peer_send_status != "success");
    const bool pong_settled = !pong_posted || pong_status;
    if (own_settled && peer_settled && pong_settled) break;
    if (ProbeClock::now() >= deadline) break;
  }
  // The first error of the WRITE and the SEND is what the wire said of this direction.
  if (write_status && *write_status != "success")
    out.send_status = *write_status;
  else if (ping_status)
    out.send_status = *ping_status;
  else
    out.send_status.reset();  // nothing completed within the deadline
  if (!sent_said)
    if (auto p = say_sent()) return p;
  if (!peer_sent_read) {
    // The peer says its send status once, at the latest when its own deadline passed.
    auto m = sock.receive("sent", "the peer's send status for " + kind, deadline + std::chrono::seconds(2),
                          problem);
    if (!m) return problem;
  }
  return std::nullopt;
}

// The pin's verdict as a cause, when the stack is launched with a pin that is stale on this port.
std::optional<Json> stale_pin_cause(StackId id, const StackLaunch& launch, const GidTable& table,
                                    const DriverModel& model) {
  if (!launch.pinned) return std::nullopt;
  for (const SettingReading& r : launch.read) {
    if (r.variable != launch.pin_variable) continue;
    for (const PinReading& reading : read_pin(r.variable, r.value, false)) {
      if (reading.stack != id) continue;
      const PinJudgement j = judge_pin(reading, table, model);
      if (j.status != PinJudgement::Status::stale) return std::nullopt;
      std::string remedy = "unset " + launch.pin_variable;
      if (j.right_index) remedy += ", or set it to " + std::to_string(*j.right_index);
      return Json{{"id", "stale_pin"},
                  {"likelihood", "confirmed"},
                  {"summary", r.variable + "=" + r.value + " (" + r.origin + "): " + j.summary},
                  {"remedy", remedy}};
    }
  }
  return std::nullopt;
}

}  // namespace gidpolicy::cli
