// The connection steps JACCL (MLX's RDMA backend, mlx/distributed/jaccl) performs between two
// ranks, written against plain libibverbs in this project's own words. Both jaccl_plain.cpp
// (JACCL as it ships) and jaccl_gidpolicy.cpp (the same program choosing its GID with
// gidpolicy) use these steps; they differ only in which GID is advertised and which sgid_index
// the RTR routes from.
//
// The steps, as docs/facts.md#jaccl-current describes JACCL since MLX PR 3412:
//   open the device, PD, CQ, one UC queue pair (Thunderbolt RDMA has no RC);
//   INIT with STATE | PKEY_INDEX | PORT | ACCESS_FLAGS on port 1;
//   info(): a Destination {queue pair number, PSN (the constant 7), GID} sent to the peer;
//   RTR with STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN, path MTU 1024, port 1, and a GRH
//     (hop limit 1) only when the peer GID's interface id is non-zero;
//   RTS with STATE | SQ_PSN; then messages flow.
// The two ranks run in one process and exchange their Destinations in memory (JACCL uses a TCP
// side channel); each rank opens the device itself, as two hosts would.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace jaccl_shaped {

/// What a rank tells its peer (JACCL's Destination).
struct Destination {
  std::uint32_t queue_pair_number = 0;
  std::uint32_t packet_sequence_number = 0;
  ibv_gid global_identifier{};
};

inline constexpr std::uint32_t kPsn = 7;  // JACCL's constant PSN
inline constexpr std::size_t kMessage = 64;

/// Interface id (bytes 8-15) non-zero: JACCL sets a GRH only then.
inline bool has_interface_id(const ibv_gid& g) {
  for (int i = 8; i < 16; ++i)
    if (g.raw[i] != 0) return true;
  return false;
}

inline std::string gid_text(const ibv_gid& g) {
  char out[64];
  std::snprintf(out, sizeof out, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
                g.raw[0], g.raw[1], g.raw[2], g.raw[3], g.raw[4], g.raw[5], g.raw[6], g.raw[7], g.raw[8],
                g.raw[9], g.raw[10], g.raw[11], g.raw[12], g.raw[13], g.raw[14], g.raw[15]);
  return out;
}

/// One rank's verbs objects. Failures print JACCL-style messages and leave ok() false.
class Rank {
 public:
  Rank(int id, const char* device_name) : id_(id) {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    if (!list_) {
      std::fprintf(stderr, "[jaccl] rank %d: no RDMA devices (%s)\n", id_, std::strerror(errno));
      return;
    }
    ibv_device* dev = nullptr;
    for (int i = 0; i < n; ++i)
      if (std::strcmp(ibv_get_device_name(list_[i]), device_name) == 0) dev = list_[i];
    if (!dev) {
      std::fprintf(stderr, "[jaccl] rank %d: no device %s\n", id_, device_name);
      return;
    }
    ctx_ = ibv_open_device(dev);
    if (!ctx_) return;
    pd_ = ibv_alloc_pd(ctx_);
    cq_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    if (!pd_ || !cq_) return;
    // An int, not the enum: the ibv_reg_mr macro masks it with a flag of another enum type.
    mr_ = ibv_reg_mr(pd_, buffer_, sizeof buffer_, static_cast<int>(IBV_ACCESS_LOCAL_WRITE));
    if (!mr_) return;
    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_UC;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    qp_ = ibv_create_qp(pd_, &init);
    if (!qp_) {
      std::fprintf(stderr, "[jaccl] rank %d: couldn't create queue pair (errno %d)\n", id_, errno);
      return;
    }
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = 1;
    // Two enums in rdma-core 44 (ibv_access_flags, ib_uverbs_access_flags): combined as integers.
    attr.qp_access_flags =
        static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE) | static_cast<unsigned>(IBV_ACCESS_REMOTE_WRITE);
    const int err =
        ibv_modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (err) {
      std::fprintf(stderr, "[jaccl] rank %d: changing queue pair to INIT failed with errno %d\n", id_, err);
      return;
    }
    ok_ = true;
  }
  ~Rank() {
    if (qp_) ibv_destroy_qp(qp_);
    if (mr_) ibv_dereg_mr(mr_);
    if (cq_) ibv_destroy_cq(cq_);
    if (pd_) ibv_dealloc_pd(pd_);
    if (ctx_) ibv_close_device(ctx_);
    if (list_) ibv_free_device_list(list_);
  }
  Rank(const Rank&) = delete;
  Rank& operator=(const Rank&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] int id() const { return id_; }
  [[nodiscard]] ibv_context* context() const { return ctx_; }
  [[nodiscard]] std::uint32_t qp_num() const { return qp_->qp_num; }
  [[nodiscard]] ibv_qp* qp() const { return qp_; }

  /// RTR with attributes the caller built; prints JACCL's message on failure.
  bool rtr(ibv_qp_attr& attr, int mask) {
    const int err = ibv_modify_qp(qp_, &attr, mask);
    if (err) {
      std::printf("[jaccl] rank %d: Changing queue pair to RTR failed with errno %d\n", id_, err);
      return false;
    }
    return true;
  }

  /// RTS: STATE | SQ_PSN.
  bool rts() {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = kPsn;
    const int err = ibv_modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
    if (err) std::printf("[jaccl] rank %d: Changing queue pair to RTS failed with errno %d\n", id_, err);
    return err == 0;
  }

  bool post_recv() {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buffer_ + kMessage), static_cast<std::uint32_t>(kMessage),
                mr_->lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = 2;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(qp_, &wr, &bad) == 0;
  }

  bool send(const char* text) {
    std::snprintf(buffer_, kMessage, "%s", text);
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buffer_), static_cast<std::uint32_t>(kMessage), mr_->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    return ibv_post_send(qp_, &wr, &bad) == 0;
  }

  /// Polls until the receive completes or `ms` pass; returns the received text or "".
  std::string wait_recv(int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      ibv_wc wc{};
      if (ibv_poll_cq(cq_, 1, &wc) > 0 && wc.wr_id == 2)
        return wc.status == IBV_WC_SUCCESS ? std::string(buffer_ + kMessage) : std::string();
    }
    return {};
  }

 private:
  int id_;
  bool ok_ = false;
  ibv_device** list_ = nullptr;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_qp* qp_ = nullptr;
  char buffer_[2 * kMessage] = {};
};

/// JACCL's RTR attributes, except for sgid_index, which the caller sets.
inline int jaccl_rtr_attributes(const Destination& dst, ibv_qp_attr& attr) {
  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = dst.queue_pair_number;
  attr.rq_psn = dst.packet_sequence_number;
  attr.ah_attr.port_num = 1;
  if (has_interface_id(dst.global_identifier)) {
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.hop_limit = 1;
    attr.ah_attr.grh.dgid = dst.global_identifier;
  }
  return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
}

/// After RTR and RTS on both ranks: one message each way.
inline int exchange_messages(Rank& a, Rank& b) {
  if (!a.post_recv() || !b.post_recv() || !a.send("hello from rank 0") || !b.send("hello from rank 1")) {
    std::printf("[jaccl] posting work requests failed\n");
    return 1;
  }
  // Both messages are due at once on loopback: 30 s is a hang guard, so that a loaded machine is
  // never taken for a lost message.
  const std::string at_b = b.wait_recv(30000);
  const std::string at_a = a.wait_recv(30000);
  std::printf("rank 1 received: %s\nrank 0 received: %s\n", at_b.empty() ? "(nothing)" : at_b.c_str(),
              at_a.empty() ? "(nothing)" : at_a.c_str());
  if (at_a.empty() || at_b.empty()) {
    std::printf("[jaccl] connected, but messages did not arrive\n");
    return 1;
  }
  std::printf("connected: rank 0 <-> rank 1, both messages delivered\n");
  return 0;
}

}  // namespace jaccl_shaped
