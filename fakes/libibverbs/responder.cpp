// The responder's side of the data path: what a QP does with each data fragment the transport
// hands it. A connected (RC / UC) QP checks the path verdict, its state, the source QP and the
// GRH, then the opcode's rules (a receive for a SEND, or RNR; the R_Key, bounds and access of an
// RDMA write, read or atomic) and lands the bytes; a UD QP checks the Q_Key and GRH and writes
// the 40-byte GRH in front of the payload. RDMA writes may land straight from the socket. The
// rules each check stands for are listed in data_path.hpp.
#include "data_path.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <string>

namespace gidpolicy::fakelib {
namespace {

bool has_receive(const Qp& q) { return q.srq ? !q.srq->rq.empty() : !q.rq.empty(); }

// Whether a receive was posted when the packet `h` arrived. An HCA judges a SEND on arrival; the
// fake's responder reads its socket when its process gets to it, possibly after the program has
// posted a receive that did not exist when the packet came in (a resend the requester then
// abandoned would land in it). The packet's send time stands for its arrival time: a receive
// posted after it does not count.
bool receive_at_arrival(const Qp& q, const Wire& h) {
  if (!has_receive(q)) return false;
  const std::deque<RecvWr>& rq = q.srq ? q.srq->rq : q.rq;
  return rq.front().posted_ns <= h.sent_ns;
}

RecvWr take_receive(Qp& q) {
  std::deque<RecvWr>& rq = q.srq ? q.srq->rq : q.rq;
  RecvWr w = std::move(rq.front());
  rq.pop_front();
  return w;
}

// Check a receive's buffers can take `len` bytes.
ibv_wc_status check_receive(Library& lib, const Qp& q, const RecvWr& w, std::uint64_t len) {
  std::uint64_t room = 0;
  for (const ibv_sge& s : w.sge) {
    const Mr* m = find_mr(lib, s.lkey);
    if (!m || m->pd != q.pd || !(m->access & IBV_ACCESS_LOCAL_WRITE) || !covers(*m, s.addr, s.length, false))
      return IBV_WC_LOC_PROT_ERR;
    room += s.length;
  }
  return len > room ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

}  // namespace

// Copy `bytes` to `offset` of the buffers a scatter list describes. Every SGE written is checked
// against the live regions first (registered, in `pd`, local write, covering it) and written
// without faulting: false when one fails (the caller ends the work request in LOC_PROT_ERR).
bool scatter_at(const Library& lib, const Pd* pd, const std::vector<ibv_sge>& sges, std::uint64_t offset,
                std::span<const std::byte> bytes) {
  std::size_t done = 0;
  for (const ibv_sge& s : sges) {
    if (done == bytes.size()) break;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(s.length - offset, bytes.size() - done));
    if (!live_region(lib, s.lkey, pd, s.addr + offset, n, false, IBV_ACCESS_LOCAL_WRITE) ||
        !copy_to_program(s.addr + offset, bytes.data() + done, n))
      return false;
    done += n;
    offset = 0;
  }
  return true;
}

namespace {

void finish_inbound(Library& lib, Qp& q, const Wire& h) {
  Inbound& in = q.in;
  in.active = false;
  if (in.has_recv) {
    const bool imm_write = in.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    ibv_wc wc = make_wc(q, in.recv.wr_id, IBV_WC_SUCCESS, imm_write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                        static_cast<std::uint32_t>(in.total));
    wc.src_qp = h.src_qp;
    if (h.flags & kHasImm) {
      wc.wc_flags |= IBV_WC_WITH_IMM;
      wc.imm_data = h.imm;
    }
    complete(lib, *q.recv_cq, wc);
  }
  if (q.kind == QpKind::rc) {
    q.ack_pending = h.seq;
    q.ack_to_qp = h.src_qp;
  }
}

// A responder whose own receive failed: the requester is told (RC: a NAK with `status`) and this
// QP enters the error state. The acknowledgements it owes and the NAK still leave: the error
// state ends this QP's own requests, not the answers its peer waits for (a lost NAK would leave
// the requester waiting forever).
void nak_and_break(Library& lib, Qp& q, const Wire& h, ibv_wc_status status) {
  flush_ack(lib, q);
  if (q.kind == QpKind::rc) reply(lib, q, h, Kind::nak, status);
  std::deque<OutMsg> answers;
  for (OutMsg& m : q.outq)
    if (static_cast<Kind>(m.h.kind) == Kind::ack || static_cast<Kind>(m.h.kind) == Kind::nak)
      answers.push_back(std::move(m));
  enter_error(lib, q, true);
  q.outq = std::move(answers);
  if (!q.outq.empty()) flush(lib, q);
}

// One fragment's bytes, where the message being received puts them. A region deregistered (or
// memory unmapped) since the message began ends it: an RDMA write is NAKed with a remote access
// error (the R_Key check of every packet), a receive completes in LOC_PROT_ERR and the requester
// gets a remote operational error, as for a bad receive lkey. false: the message was ended.
bool land(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  if (payload.empty()) return true;
  Inbound& in = q.in;
  if (in.write) {
    const Mr* m = live_region(lib, in.rkey, q.pd, in.remote_addr + h.offset, payload.size(), true,
                              IBV_ACCESS_REMOTE_WRITE);
    const char* why = nullptr;
    if (!m)
      why = "RDMA write: the region was deregistered while the message was arriving";
    else if (!copy_to_program(
                 reinterpret_cast<std::uintptr_t>(m->mr.addr) + (in.remote_addr + h.offset - m->iova),
                 payload.data(), payload.size()))
      why = "RDMA write: a page of the region is no longer mapped (unmapped while registered)";
    if (!why) return true;
    log_drop(lib, q, h, why);
    if (q.kind == QpKind::rc) reply(lib, q, h, Kind::nak, IBV_WC_REM_ACCESS_ERR);
    in.dropping = true;
    in.active = h.offset + h.length < in.total;
    return false;
  }
  if (!in.has_recv || scatter_at(lib, q.pd, in.recv.sge, h.offset, payload)) return true;
  log_drop(lib, q, h,
           "the receive buffer's region was deregistered or unmapped while the message was arriving");
  ibv_wc wc = make_wc(q, in.recv.wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV);
  complete(lib, *q.recv_cq, wc);
  in.has_recv = false;
  nak_and_break(lib, q, h, IBV_WC_REM_OP_ERR);
  return false;
}

// RNR: an RC message that finds no receive is NAKed with this side's min_rnr_timer and not
// kept (the rest of its fragments, and the messages after it, are discarded until the
// requester sends it again). Logged once per message, not once per retry.
Outcome rnr_nak(Library& lib, Qp& q, const Wire& h, Inbound&& in, bool last) {
  if (q.rnr_told != h.seq) {
    q.rnr_told = h.seq;
    log_drop(lib, q, h, "no receive posted: RNR NAK, the requester sends it again after min_rnr_timer",
             "rnr_nak");
  }
  reply(lib, q, h, Kind::rnr, static_cast<ibv_wc_status>(q.min_rnr_timer));
  q.rnr_seq = h.seq;
  in.dropping = true;
  in.active = !last;
  q.in = std::move(in);
  return Outcome::consumed;
}

// The responder's side of one data fragment on a connected (RC / UC) QP.
Outcome handle_connected(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  const bool rc = q.kind == QpKind::rc;
  const bool first = h.offset == 0;
  auto drop = [&](const std::string& why) {
    if (first) {
      log_drop(lib, q, h, why);
      tell_dropped(q, h);
    }
    return Outcome::consumed;
  };
  if (q.times_out)
    return drop("this QP's RTR was judged to time out (" + q.times_out_reason +
                "): the path does not exist, nothing arrives and nothing is acknowledged");
  if (!q.connected || (q.hw_state != IBV_QPS_RTR && q.hw_state != IBV_QPS_RTS)) {
    // An RC requester retransmits until the responder is ready; so, under the Apple model, does
    // UC wait. Otherwise UC data that reaches a QP before its RTR is lost.
    if (q.hw_state == IBV_QPS_INIT && (rc || q.waits_for_receive)) return Outcome::hold;
    return drop("the QP is not ready to receive (not at RTR)");
  }
  if (h.src_qp != q.dest_qp_num)
    return drop("sent by QP " + std::to_string(h.src_qp) + ", but this QP is connected to QP " +
                std::to_string(q.dest_qp_num));
  if (q.is_global) {
    if (!(h.flags & kHasGrh)) return drop("no GRH, but this QP routes by GID");
    const Gid src = Gid::from_bytes(h.sgid);
    if (src != q.dgid)
      return drop("source GID " + src.to_string() + " is not the GID the peer advertised (" +
                  q.dgid.to_string() +
                  "): the peer routes from another table entry than the one it told us about");
    const Gid dst = Gid::from_bytes(h.dgid);
    auto it = q.port_gids.find(dst);
    if (it == q.port_gids.end())
      return drop("addressed to " + dst.to_string() + ", which port " + std::to_string(q.port) +
                  " does not hold");
    const std::uint32_t mine = wire_gid_type(q.source_type);
    if (h.gid_type != 0 && mine != 0 && h.gid_type != mine)
      return drop(std::string("a ") + wire_gid_type_name(h.gid_type) + " packet reaches a QP that routes " +
                  wire_gid_type_name(mine) + " (sgid_index " + std::to_string(q.sgid_index) +
                  "): the other encapsulation, dropped, the requester times out");
  }

  // After an RNR NAK the requester sends the NAKed message and all after it again: until that
  // message's first fragment is back, what was already on its way is discarded (in order, as an
  // HCA discards packets past the PSN it NAKed).
  if (rc && q.rnr_seq != 0) {
    if (h.seq != q.rnr_seq) return Outcome::consumed;
    if (first) q.rnr_seq = 0;
  }

  if (!first) {
    if (!q.in.active || q.in.seq != h.seq || q.in.dropping) {
      if (q.in.active && q.in.seq == h.seq && h.offset + h.length >= q.in.total) q.in.active = false;
      return Outcome::consumed;
    }
    if (land(lib, q, h, payload) && h.offset + h.length >= q.in.total) finish_inbound(lib, q, h);
    return Outcome::consumed;
  }

  const auto op = static_cast<ibv_wr_opcode>(h.opcode);
  const bool last = h.length >= h.total;
  Inbound in;
  in.active = true;
  in.seq = h.seq;
  in.opcode = h.opcode;
  in.total = h.total;
  // A message rejected at its first fragment: RC answers with a NAK, UC loses it silently.
  auto reject = [&](const std::string& why, ibv_wc_status nak) {
    log_drop(lib, q, h, why);
    if (rc) reply(lib, q, h, Kind::nak, nak);
    in.dropping = true;
    in.active = !last;
    q.in = std::move(in);
    return Outcome::consumed;
  };
  // nullptr with the message rejected, or the region; a zero-length write or read names none
  // (no R_Key, bounds or region access check applies to zero bytes: UCX flushes with rkey 0),
  // answered by `none`.
  static Mr none;
  auto remote_region = [&](int access, std::uint64_t len, const char* what) -> Mr* {
    Mr* m = find_mr(lib, h.rkey);
    if (!(q.access_flags & static_cast<unsigned>(access))) {
      reject(std::string(what) + ": the QP's access flags do not allow it", IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    if (len == 0 && access != IBV_ACCESS_REMOTE_ATOMIC) return &none;
    if (!m || m->pd != q.pd) {
      reject(std::string(what) + ": rkey " + std::to_string(h.rkey) + " names no region of this QP's PD",
             IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    if (!(m->access & access)) {
      reject(std::string(what) + ": the region's access flags do not allow it", IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    if (!covers(*m, h.remote_addr, len, true)) {
      reject(std::string(what) + ": outside the region (bounds)", IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    return m;
  };

  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: {
      const bool write = op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
      Mr* m = nullptr;
      if (write) {
        m = remote_region(IBV_ACCESS_REMOTE_WRITE, h.total, "RDMA write");
        if (!m) return Outcome::consumed;
      }
      if (op != IBV_WR_RDMA_WRITE) {
        // The Apple model's UC message waits for a receive (held, judged again when one is
        // posted); RC and the Linux model's UC judge the receive queue as the packet arrived.
        if ((q.waits_for_receive && !rc) ? !has_receive(q) : !receive_at_arrival(q, h)) {
          if (rc) return rnr_nak(lib, q, h, std::move(in), last);
          if (q.waits_for_receive) return Outcome::hold;
          log_drop(lib, q, h, "no receive posted: UC drops the message (the InfiniBand rule, Linux model)");
          in.dropping = true;
          in.active = !last;
          q.in = std::move(in);
          return Outcome::consumed;
        }
        in.recv = take_receive(q);
        in.has_recv = true;
        const ibv_wc_status st = check_receive(lib, q, in.recv, write ? 0 : h.total);
        if (st != IBV_WC_SUCCESS) {
          ibv_wc wc = make_wc(q, in.recv.wr_id, st, IBV_WC_RECV, static_cast<std::uint32_t>(h.total));
          complete(lib, *q.recv_cq, wc);
          log_drop(lib, q, h,
                   st == IBV_WC_LOC_LEN_ERR ? "the receive buffer is too short" : "bad receive lkey");
          nak_and_break(lib, q, h, st == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR);
          return Outcome::consumed;
        }
      }
      if (write) {
        in.write = true;
        in.rkey = h.rkey;
        in.remote_addr = h.remote_addr;
      }
      q.in = std::move(in);
      if (land(lib, q, h, payload) && last) finish_inbound(lib, q, h);
      return Outcome::consumed;
    }
    case IBV_WR_RDMA_READ: {
      if (!rc) return reject("RDMA read on a UC QP", IBV_WC_REM_INV_REQ_ERR);
      if (h.total > kMaxMessage) return reject("RDMA read longer than max_msg_sz", IBV_WC_REM_INV_REQ_ERR);
      Mr* m = remote_region(IBV_ACCESS_REMOTE_READ, h.total, "RDMA read");
      if (!m) return Outcome::consumed;
      // The response streams from the region as it is when it leaves, as a responder's DMA does.
      OutMsg r;
      r.h.magic = kMagic;
      r.h.version = kWireVersion;
      r.h.kind = static_cast<std::uint8_t>(Kind::read_resp);
      r.h.src_qp = q.qp.qp_num;
      r.h.dest_qp = h.src_qp;
      r.h.seq = h.seq;
      r.h.opcode = h.opcode;
      r.h.total = h.total;
      if (h.total)
        r.gather.push_back(
            {static_cast<std::byte*>(m->mr.addr) + (h.remote_addr - m->iova), h.total, h.rkey});
      r.total = h.total;
      enqueue(lib, q, std::move(r));
      return Outcome::consumed;
    }
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP: {
      if (!rc) return reject("atomic on a UC QP", IBV_WC_REM_INV_REQ_ERR);
      if (h.remote_addr % 8 != 0)
        return reject("atomic on an address not 8-byte aligned", IBV_WC_REM_INV_REQ_ERR);
      Mr* m = remote_region(IBV_ACCESS_REMOTE_ATOMIC, 8, "atomic");
      if (!m) return Outcome::consumed;
      // Atomic with respect to every other access through the fake: all of them hold mu.
      const std::uint64_t p = reinterpret_cast<std::uintptr_t>(m->mr.addr) + (h.remote_addr - m->iova);
      std::uint64_t old = 0;
      std::uint64_t next = 0;
      bool mapped = copy_from_program(&old, p, 8);
      if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
        next = old + h.compare_add;
      else
        next = old == h.compare_add ? h.swap : old;
      mapped = mapped && copy_to_program(p, &next, 8);
      if (!mapped)
        return reject("atomic: the region's page is no longer mapped (unmapped while registered)",
                      IBV_WC_REM_ACCESS_ERR);
      std::vector<std::byte> value(8);
      std::memcpy(value.data(), &old, 8);
      reply(lib, q, h, Kind::atomic_resp, IBV_WC_SUCCESS, std::move(value));
      return Outcome::consumed;
    }
    default:
      return reject("opcode " + std::to_string(h.opcode) + " is not a request this QP takes",
                    IBV_WC_REM_INV_REQ_ERR);
  }
}

// Whether the packet travels as RoCE v2 over IPv4 (an IPv4 header, not an IPv6 one).
bool ipv4_header(const Wire& h) {
  return h.gid_type == 2 && Gid::from_bytes(h.sgid).is_ipv4_mapped() &&
         Gid::from_bytes(h.dgid).is_ipv4_mapped();
}

// The 40 bytes a RoCE NIC writes in front of a UD payload.
std::array<std::byte, kGrhBytes> make_grh(const Wire& h) {
  std::array<std::uint8_t, kGrhBytes> g{};
  const Gid src = Gid::from_bytes(h.sgid);
  const Gid dst = Gid::from_bytes(h.dgid);
  const std::uint32_t payload = 12 + 8 + h.length + 4;  // BTH + DETH + data + ICRC
  if (ipv4_header(h)) {
    // RoCE v2 over IPv4: the IPv4 header sits in the GRH's last 20 bytes.
    std::uint8_t* ip = g.data() + 20;
    const std::uint32_t len = 20 + 8 + payload;
    ip[0] = 0x45;
    ip[2] = static_cast<std::uint8_t>(len >> 8);
    ip[3] = static_cast<std::uint8_t>(len);
    ip[6] = 0x40;           // don't fragment
    ip[8] = 64;             // TTL
    ip[9] = 17;             // UDP
    src.copy_to(g.data());  // scratch: bytes 12-15 are the address
    std::memcpy(ip + 12, g.data() + 12, 4);
    dst.copy_to(g.data());
    std::memcpy(ip + 16, g.data() + 12, 4);
    std::memset(g.data(), 0, 20);
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const std::uint16_t csum = static_cast<std::uint16_t>(~sum);
    ip[10] = static_cast<std::uint8_t>(csum >> 8);
    ip[11] = static_cast<std::uint8_t>(csum);
  } else {
    // IPv6 header (RoCE v2) or IBA GRH (RoCE v1, next header 0x1b): same layout.
    g[0] = 0x60;
    g[4] = static_cast<std::uint8_t>(payload >> 8);
    g[5] = static_cast<std::uint8_t>(payload);
    g[6] = h.gid_type == 2 ? 17 : 0x1b;
    g[7] = 64;
    std::memcpy(g.data() + 8, h.sgid, 16);
    std::memcpy(g.data() + 24, h.dgid, 16);
  }
  std::array<std::byte, kGrhBytes> out{};
  std::memcpy(out.data(), g.data(), kGrhBytes);
  return out;
}

void handle_ud(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  auto drop = [&](const std::string& why) { log_drop(lib, q, h, why); };
  if (!q.connected || (q.hw_state != IBV_QPS_RTR && q.hw_state != IBV_QPS_RTS))
    return drop("the UD QP is not ready to receive (not at RTR)");
  if (static_cast<ibv_wr_opcode>(h.opcode) != IBV_WR_SEND &&
      static_cast<ibv_wr_opcode>(h.opcode) != IBV_WR_SEND_WITH_IMM)
    return drop("not a send");
  if (h.qkey != q.qkey)
    return drop("Q_Key " + std::to_string(h.qkey) + " is not this QP's (" + std::to_string(q.qkey) + ")");
  if (!(h.flags & kHasGrh)) return drop("no GRH, but RoCE routes by GID");
  const Gid dst = Gid::from_bytes(h.dgid);
  auto it = q.port_gids.find(dst);
  if (it == q.port_gids.end())
    return drop("addressed to " + dst.to_string() + ", which port " + std::to_string(q.port) +
                " does not hold");
  if (h.gid_type != 0 && it->second != 0 && !(it->second & (1u << h.gid_type)))
    return drop(std::string("a ") + wire_gid_type_name(h.gid_type) + " packet to " + dst.to_string() +
                ", which port " + std::to_string(q.port) + " holds only as the other type");
  if (!receive_at_arrival(q, h)) return drop("no receive posted when it arrived: UD drops the datagram");
  RecvWr w = take_receive(q);
  const std::uint32_t len = kGrhBytes + h.length;
  ibv_wc_status st = check_receive(lib, q, w, len);
  ibv_wc wc = make_wc(q, w.wr_id, st, IBV_WC_RECV, len);
  if (st == IBV_WC_SUCCESS) {
    const auto grh = make_grh(h);
    if (!scatter_at(lib, q.pd, w.sge, 0, grh) || !scatter_at(lib, q.pd, w.sge, kGrhBytes, payload))
      wc.status = st = IBV_WC_LOC_PROT_ERR;
  }
  if (st == IBV_WC_SUCCESS) {
    wc.src_qp = h.src_qp;
    wc.wc_flags |= IBV_WC_GRH;
    // libmlx5 reports the RoCE header type in sl: 2 an IPv4 header, 1 IPv6 (RoCE v2), 0 a GRH
    // (RoCE v1, InfiniBand). UCX reads it to find the destination GID in the 40 bytes.
    wc.sl = ipv4_header(h) ? 2 : (h.gid_type == 2 ? 1 : 0);
    if (h.flags & kHasImm) {
      wc.wc_flags |= IBV_WC_WITH_IMM;
      wc.imm_data = h.imm;
    }
  }
  complete(lib, *q.recv_cq, wc);
  if (st != IBV_WC_SUCCESS) enter_error(lib, q, true);
}

}  // namespace

Outcome handle_data(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  if (q.kind == QpKind::ud) {
    handle_ud(lib, q, h, payload);
    return Outcome::consumed;
  }
  return handle_connected(lib, q, h, payload);
}

namespace {

// Whether a data fragment passes every check handle_connected makes before it looks at the
// opcode (path verdict, state, source QP, GRH), so it may land without that function. Any doubt
// answers false: the fragment then takes the ordinary path, which logs why it is refused.
bool plainly_accepted(const Qp& q, const Wire& h) {
  if (q.kind == QpKind::ud || q.times_out || !q.connected || !q.held.empty() ||
      (q.hw_state != IBV_QPS_RTR && q.hw_state != IBV_QPS_RTS) || h.src_qp != q.dest_qp_num)
    return false;
  // After an RNR NAK the ordinary path discards what follows the NAKed message until the
  // requester sends it again: nothing may land directly meanwhile.
  if (q.kind == QpKind::rc && q.rnr_seq != 0) return false;
  if (!q.is_global) return true;
  if (!(h.flags & kHasGrh) || Gid::from_bytes(h.sgid) != q.dgid) return false;
  const auto it = q.port_gids.find(Gid::from_bytes(h.dgid));
  const std::uint32_t mine = wire_gid_type(q.source_type);
  return it != q.port_gids.end() && (h.gid_type == 0 || mine == 0 || h.gid_type == mine);
}

}  // namespace

// An RDMA write fragment lands straight from the socket into the target region: one copy (the
// kernel's, which answers EFAULT for an unmapped page instead of faulting) rather than two.
// Taken only when the ordinary path would land it unchanged: a plain write (no immediate, so no
// receive) whose region is live, in this QP's PD, allows remote write and covers the whole
// message (first fragment), or the next fragment of the write being received. false: not taken
// (the datagram is still queued). `h`: the datagram's header, peeked.
bool land_write_directly(Library& lib, Qp& q, int fd, const Wire& h, std::size_t datagram_size) {
  if (h.magic != kMagic || h.version != kWireVersion || h.dest_qp != q.qp.qp_num ||
      static_cast<Kind>(h.kind) != Kind::data || h.length == 0 || h.length != datagram_size - sizeof h ||
      h.offset > h.total || h.length > h.total - h.offset || !plainly_accepted(q, h))
    return false;
  const bool first = h.offset == 0;
  if (first) {
    if (h.opcode != IBV_WR_RDMA_WRITE || !(q.access_flags & IBV_ACCESS_REMOTE_WRITE) ||
        !live_region(lib, h.rkey, q.pd, h.remote_addr, h.total, true, IBV_ACCESS_REMOTE_WRITE))
      return false;
  } else if (!q.in.active || !q.in.write || q.in.dropping || q.in.seq != h.seq || q.in.opcode != h.opcode) {
    return false;
  }
  const Mr* m =
      live_region(lib, h.rkey, q.pd, h.remote_addr + h.offset, h.length, true, IBV_ACCESS_REMOTE_WRITE);
  if (!m) return false;  // deregistered meanwhile: the ordinary path ends the message
  Wire copy{};
  iovec iov[2];
  iov[0].iov_base = &copy;
  iov[0].iov_len = sizeof copy;
  iov[1].iov_base = static_cast<std::byte*>(m->mr.addr) + (h.remote_addr + h.offset - m->iova);
  iov[1].iov_len = h.length;
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  const ssize_t r = ::recvmsg(fd, &msg, MSG_DONTWAIT);
  if (r < 0 && errno != EFAULT) return false;  // nothing was taken
  if (first) {
    Inbound in;
    in.active = true;
    in.seq = h.seq;
    in.opcode = h.opcode;
    in.total = h.total;
    in.write = true;
    in.rkey = h.rkey;
    in.remote_addr = h.remote_addr;
    q.in = std::move(in);
  }
  const bool last = h.offset + h.length >= h.total;
  if (r != static_cast<ssize_t>(sizeof h + h.length)) {
    // The datagram is gone and its bytes did not all land: memory unmapped while registered.
    log_drop(lib, q, h, "RDMA write: a page of the region is no longer mapped (unmapped while registered)");
    if (q.kind == QpKind::rc) reply(lib, q, h, Kind::nak, IBV_WC_REM_ACCESS_ERR);
    q.in.dropping = true;
    q.in.active = !last;
    return true;
  }
  if (last) finish_inbound(lib, q, h);
  return true;
}

}  // namespace gidpolicy::fakelib
