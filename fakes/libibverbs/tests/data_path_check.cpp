// The verbs seam's data path (VerbsApi::create_data_qp, register_memory, post_send, post_recv,
// poll_completions: what `gidpolicy probe` moves data with) through the real dynamic loader onto
// the drop-in fake: two QPs of one process connected to each other with RtrBuilder, an RDMA WRITE
// and a SEND from each to the other, every byte checked; then a table without reg_mr refuses
// register_memory naming it, and the in-process seam's default refuses the data path.
//
//   data_path_check <linked|dlopen> <rc|uc>      (GIDPOLICY_FAKE_TABLES: a table whose auto pick connects)
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/libibverbs_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace gidpolicy::data_path_check {

int failures = 0;
void check(bool ok, const std::string& what) {
  std::cout << (ok ? "ok: " : "FAIL: ") << what << "\n";
  if (!ok) ++failures;
}

struct End {
  verbs::QpHandle qp;
  std::vector<unsigned char> buf = std::vector<unsigned char>(4096, 0);
  verbs::MemoryKeys keys;
  std::uint32_t qpn = 0;
};

int run(const std::string& backend, QpKind kind) {
  std::unique_ptr<verbs::FunctionTableApi> api;
  if (backend == "linked") {
    api = std::make_unique<verbs::LibibverbsApi>();
  } else {
    auto d = std::make_unique<verbs::DlopenApi>();
    if (!d->loaded()) {
      std::cerr << d->load_error().what() << "\n";
      return 2;
    }
    api = std::move(d);
  }
  auto names = api->device_names();
  if (!names) {
    std::cerr << names.error().what() << "\n";
    return 2;
  }
  auto dev = api->open_device(names.value().front());
  auto table = dev ? verbs::snapshot(*api, dev.value(), 1) : result<GidTable>(fail(dev.error()));
  if (!table) {
    std::cerr << table.error().what() << "\n";
    return 2;
  }
  auto plan = profiles::automatic().plan(table.value());
  if (!plan) {
    std::cerr << plan.error().what() << "\n";
    return 2;
  }
  End ends[2];
  for (End& e : ends) {
    auto qp = api->create_data_qp(dev.value(), kind, verbs::QpCapacity{});
    check(qp.has_value(), "create_data_qp");
    if (!qp) return 1;
    e.qp = qp.value();
    e.qpn = api->query_qp(e.qp).value().qp_num;
    auto keys = api->register_memory(e.qp, e.buf.data(), e.buf.size(),
                                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    check(keys.has_value() && keys.value().length == e.buf.size(), "register_memory 4 KiB");
    if (!keys) return 1;
    e.keys = keys.value();
    ibv_qp_attr init;
    std::memset(&init, 0, sizeof init);
    init.qp_state = IBV_QPS_INIT;
    init.port_num = 1;
    init.qp_access_flags = static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    check(api->modify_qp(e.qp, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
              .has_value(),
          "RESET->INIT");
  }
  for (int i = 0; i < 2; ++i) {
    End& me = ends[i];
    End& peer = ends[1 - i];
    RtrBuilder b(kind, table.value(), plan.value());
    b.remote({.qpn = peer.qpn,
              .psn = 0,
              .gid = plan.value().selection.entry.gid,
              .lid = 0,
              .mtu = table.value().port().active_mtu,
              .gid_type = std::nullopt});
    if (kind == QpKind::rc) b.max_dest_rd_atomic(1).min_rnr_timer(12);
    auto rtr = b.build();
    check(rtr.has_value(), "RtrBuilder");
    if (!rtr) return 1;
    check(api->modify_qp(me.qp, rtr.value().attr, rtr.value().mask).has_value(), "INIT->RTR");
    ibv_qp_attr rts;
    std::memset(&rts, 0, sizeof rts);
    rts.qp_state = IBV_QPS_RTS;
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (kind == QpKind::rc) {
      rts.timeout = 14;
      rts.retry_cnt = 3;
      rts.rnr_retry = 3;
      rts.max_rd_atomic = 1;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    check(api->modify_qp(me.qp, rts, mask).has_value(), "RTR->RTS");
    check(api->post_recv(me.qp, 1, me.keys.addr, 64, me.keys.lkey).has_value(), "post_recv");
  }
  for (int i = 0; i < 2; ++i) {
    End& me = ends[i];
    End& peer = ends[1 - i];
    for (std::size_t k = 0; k < 64; ++k) {
      me.buf[128 + k] = static_cast<unsigned char>(i * 100 + static_cast<int>(k));      // the SEND's bytes
      me.buf[192 + k] = static_cast<unsigned char>(255 - i * 7 - static_cast<int>(k));  // the WRITE's
    }
    check(api->post_send(me.qp, {.op = verbs::SendRequest::Op::rdma_write,
                                 .wr_id = 2,
                                 .local_addr = me.keys.addr + 192,
                                 .length = 64,
                                 .lkey = me.keys.lkey,
                                 .remote_addr = peer.keys.addr + 256,
                                 .rkey = peer.keys.rkey})
              .has_value(),
          "post_send RDMA WRITE");
    check(api->post_send(me.qp, {.op = verbs::SendRequest::Op::send,
                                 .wr_id = 3,
                                 .local_addr = me.keys.addr + 128,
                                 .length = 64,
                                 .lkey = me.keys.lkey,
                                 .remote_addr = 0,
                                 .rkey = 0})
              .has_value(),
          "post_send SEND");
  }
  // Three completions per QP (WRITE, SEND, the receive); a hang guard of 30 s, never a verdict.
  int got[2] = {0, 0};
  bool all_success = true;
  const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((got[0] < 3 || got[1] < 3) && std::chrono::steady_clock::now() < guard) {
    for (int i = 0; i < 2; ++i) {
      auto wcs = api->poll_completions(ends[i].qp, 8);
      if (!wcs) {
        check(false, "poll_completions: " + wcs.error().what());
        return 1;
      }
      for (const auto& wc : wcs.value()) {
        ++got[i];
        all_success = all_success && wc.status == IBV_WC_SUCCESS;
        if (wc.wr_id == 1) all_success = all_success && wc.opcode == IBV_WC_RECV && wc.byte_len == 64;
      }
    }
  }
  check(got[0] == 3 && got[1] == 3, "three completions on each QP");
  check(all_success, "every completion IBV_WC_SUCCESS, the receive of 64 bytes");
  for (int i = 0; i < 2; ++i) {
    const End& me = ends[i];
    const End& peer = ends[1 - i];
    check(std::memcmp(me.buf.data(), peer.buf.data() + 128, 64) == 0, "the SEND's 64 bytes arrived");
    check(std::memcmp(me.buf.data() + 256, peer.buf.data() + 192, 64) == 0, "the WRITE's 64 bytes landed");
  }
  for (End& e : ends) check(api->destroy_qp(e.qp).has_value(), "destroy_qp deregisters and frees");

  // A table without reg_mr: the data path says what is missing, never crashes.
  verbs::VerbsFunctions f = api->functions();
  f.reg_mr = nullptr;
  verbs::FunctionTableApi partial(f, {.name = "no-reg-mr", .resolve_netdev_names = false});
  auto pdev = partial.open_device(names.value().front());
  auto pqp = pdev ? partial.create_data_qp(pdev.value(), kind, verbs::QpCapacity{})
                  : result<verbs::QpHandle>(fail(pdev.error()));
  check(pqp.has_value(), "create_data_qp without reg_mr");
  if (pqp) {
    std::vector<unsigned char> b(64);
    auto k = partial.register_memory(pqp.value(), b.data(), b.size(), IBV_ACCESS_LOCAL_WRITE);
    check(!k && k.error().code == make_error_code(errc::not_supported) &&
              k.error().detail.find("reg_mr") != std::string::npos,
          "register_memory without reg_mr: not_supported, naming reg_mr");
  }
  return failures ? 1 : 0;
}

}  // namespace gidpolicy::data_path_check

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: data_path_check <linked|dlopen> <rc|uc>\n";
    return 2;
  }
  const std::string kind = argv[2];
  return gidpolicy::data_path_check::run(argv[1],
                                         kind == "uc" ? gidpolicy::QpKind::uc : gidpolicy::QpKind::rc);
}
