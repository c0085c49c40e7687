// jaccl_collective: JACCL-shaped all-sums between N processes, one per host GID table.
//
//   jaccl_collective [--topology mesh|ring] [--frames BYTES[,BYTES...]] [--iters N] TABLE...
//
// What real JACCL clusters do, in this project's own words: every rank opens its Thunderbolt
// device, creates one UC queue pair per peer (mesh: every other rank; ring: its two
// neighbours), advertises the first IPv4-mapped GID it finds and routes its RTR from the
// literal sgid_index 1 (docs/facts.md#jaccl-current). Then it runs back-to-back all-sums with NO receive
// credits: each step posts its sends first and its receive after, so a fast rank's message
// regularly reaches a peer that has not re-posted its receive yet. Under the Apple Thunderbolt
// model the message waits for the receive (what real clusters depend on); under the Linux
// model UC drops it and the collective stalls.
//
// Each rank is a process started with GIDPOLICY_FAKE_TABLES=<its TABLE> (run it with
// LD_LIBRARY_PATH pointing at the fake libibverbs.so.1); ranks exchange their Destinations
// through pipes (JACCL uses a TCP side channel). The program prints one line per pair in the
// shape `gidpolicy simulate` prints them, named as simulate names hosts (the table's file
// name, "#2" for a repeat):
//
//   pair: A <-> B: connected
//   pair: A <-> B: FAILED: A errno 22,
//
// and, when every pair connected, one line per frame size:
//
//   mesh of 3 ranks: 100 all-sums of 4096-byte frames correct
//
// Exit 0 when every pair connected and every sum was right, 1 otherwise, 2 on bad usage.
#include <infiniband/verbs.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr std::uint32_t kPsn = 7;  // JACCL's constant PSN
constexpr int kWaitMs = 60000;     // a step that takes longer has lost a message (a hang guard:
                                   // a step takes milliseconds, seconds on a loaded machine)

struct Destination {  // what a rank tells a peer (JACCL's Destination), plus who it is from
  std::int32_t from;
  std::uint32_t qpn;
  std::uint32_t psn;
  std::uint8_t gid[16];
};

struct Report {       // rank -> launcher
  std::int32_t kind;  // 1: RTR towards `peer` ended with `err`; 2: ready; 3: done (err 0 = sums right)
  std::int32_t rank;
  std::int32_t peer;
  std::int32_t err;
};

bool write_all(int fd, const void* p, std::size_t n) { return ::write(fd, p, n) == static_cast<ssize_t>(n); }

bool read_all(int fd, void* p, std::size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

struct Options {
  bool ring = false;
  std::vector<std::size_t> frames{4096, 512 * 1024};
  int iters = 100;
  std::vector<std::string> tables;
};

// ---- one rank ------------------------------------------------------------------------------

class RankProcess {
 public:
  RankProcess(const Options& o, int rank, int to_me, const std::vector<int>& to_peer, int report, int go)
      : o_(o),
        rank_(rank),
        n_(static_cast<int>(o.tables.size())),
        to_me_(to_me),
        to_peer_(to_peer),
        report_(report),
        go_(go) {}

  int run() {
    if (!setup()) return 1;
    if (!connect()) return 1;
    char go = 0;
    if (!read_all(go_, &go, 1) || go != 'g') return 1;
    bool all_right = true;
    for (std::size_t frame : o_.frames) {
      for (int k = 0; k < o_.iters && all_right; ++k)
        all_right = o_.ring ? ring_sum(frame, k) : mesh_sum(frame, k);
      if (!all_right) break;
    }
    send_report(3, -1, all_right ? 0 : 1);
    return all_right ? 0 : 1;
  }

 private:
  void send_report(int kind, int peer, int err) {
    const Report r{kind, rank_, peer, err};
    write_all(report_, &r, sizeof r);
  }

  bool setup() {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) {
      std::fprintf(stderr, "[jaccl] rank %d: no RDMA devices\n", rank_);
      return false;
    }
    ctx_ = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (!ctx_) return false;
    pd_ = ibv_alloc_pd(ctx_);
    if (o_.ring) {
      peers_ = {(rank_ + n_ - 1) % n_, (rank_ + 1) % n_};
    } else {
      for (int p = 0; p < n_; ++p)
        if (p != rank_) peers_.push_back(p);
    }
    cq_ = ibv_create_cq(ctx_, static_cast<int>(4 * peers_.size() + 8), nullptr, nullptr, 0);
    if (!pd_ || !cq_) return false;
    const std::size_t largest = *std::max_element(o_.frames.begin(), o_.frames.end());
    // Send area (ring: n chunks), then one receive area per peer.
    const std::size_t send_bytes = largest * static_cast<std::size_t>(o_.ring ? n_ : 1);
    memory_.assign(send_bytes + largest * peers_.size(), std::byte{0});
    send_area_ = memory_.data();
    for (std::size_t i = 0; i < peers_.size(); ++i)
      recv_area_.push_back(memory_.data() + send_bytes + i * largest);
    mr_ = ibv_reg_mr(pd_, memory_.data(), memory_.size(), static_cast<int>(IBV_ACCESS_LOCAL_WRITE));
    if (!mr_) return false;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      ibv_qp_init_attr init{};
      init.send_cq = cq_;
      init.recv_cq = cq_;
      init.qp_type = IBV_QPT_UC;
      init.cap.max_send_wr = 8;
      init.cap.max_recv_wr = 8;
      init.cap.max_send_sge = 1;
      init.cap.max_recv_sge = 1;
      ibv_qp* qp = ibv_create_qp(pd_, &init);
      if (!qp) {
        std::fprintf(stderr, "[jaccl] rank %d: couldn't create queue pair (errno %d)\n", rank_, errno);
        return false;
      }
      ibv_qp_attr attr{};
      attr.qp_state = IBV_QPS_INIT;
      attr.port_num = 1;
      attr.qp_access_flags =
          static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE) | static_cast<unsigned>(IBV_ACCESS_REMOTE_WRITE);
      if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        return false;
      qps_.push_back(qp);
    }
    return true;
  }

  // JACCL's info(): the first IPv4-mapped GID in [0, gid_tbl_len); the index is not kept.
  bool info(ibv_gid& out) {
    ibv_port_attr port{};
    if (ibv_query_port(ctx_, 1, &port)) return false;
    for (int i = 0; i < port.gid_tbl_len; ++i) {
      ibv_gid gid{};
      if (ibv_query_gid(ctx_, 1, i, &gid)) continue;
      bool mapped = gid.raw[10] == 0xff && gid.raw[11] == 0xff;
      for (int b = 0; b < 10; ++b) mapped = mapped && gid.raw[b] == 0;
      if (mapped) {
        out = gid;
        return true;
      }
    }
    std::fprintf(stderr, "[jaccl] rank %d: No IPv4-mapped GID found\n", rank_);
    return false;
  }

  bool connect() {
    ibv_gid mine{};
    if (!info(mine)) {
      for (int p : peers_) send_report(1, p, -1);
      send_report(2, -1, 0);
      return false;
    }
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      Destination d{rank_, qps_[i]->qp_num, kPsn, {}};
      std::memcpy(d.gid, mine.raw, 16);
      write_all(to_peer_[static_cast<std::size_t>(peers_[i])], &d, sizeof d);
    }
    std::map<int, Destination> from;
    while (from.size() < std::set<int>(peers_.begin(), peers_.end()).size()) {
      Destination d{};
      if (!read_all(to_me_, &d, sizeof d)) return false;
      from[d.from] = d;
    }
    bool ok = true;
    for (std::size_t i = 0; i < peers_.size(); ++i) {
      const Destination& d = from[peers_[i]];
      // JACCL's queue_pair_rtr(): the GRH only when the peer GID's interface id is non-zero,
      // and the literal sgid_index 1.
      ibv_qp_attr attr{};
      attr.qp_state = IBV_QPS_RTR;
      attr.path_mtu = IBV_MTU_1024;
      attr.dest_qp_num = d.qpn;
      attr.rq_psn = d.psn;
      attr.ah_attr.port_num = 1;
      bool iid = false;
      for (int b = 8; b < 16; ++b) iid = iid || d.gid[b] != 0;
      if (iid) {
        attr.ah_attr.is_global = 1;
        attr.ah_attr.grh.hop_limit = 1;
        std::memcpy(attr.ah_attr.grh.dgid.raw, d.gid, 16);
        attr.ah_attr.grh.sgid_index = 1;
      }
      int err = ibv_modify_qp(qps_[i], &attr,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
      if (err == 0) {
        ibv_qp_attr rts{};
        rts.qp_state = IBV_QPS_RTS;
        rts.sq_psn = kPsn;
        err = ibv_modify_qp(qps_[i], &rts, IBV_QP_STATE | IBV_QP_SQ_PSN);
      } else {
        std::fprintf(stderr, "[jaccl] rank %d: Changing queue pair to RTR failed with errno %d\n", rank_,
                     err);
      }
      send_report(1, peers_[i], err);
      ok = ok && err == 0;
    }
    send_report(2, -1, 0);
    return ok;
  }

  static std::uint32_t value(int rank, std::size_t i, int k) {
    return static_cast<std::uint32_t>(rank + 1) * static_cast<std::uint32_t>(i % 1000) +
           static_cast<std::uint32_t>(k);
  }
  std::uint32_t expected(std::size_t i, int k) const {
    const auto n = static_cast<std::uint32_t>(n_);
    return static_cast<std::uint32_t>(i % 1000) * n * (n + 1) / 2 + n * static_cast<std::uint32_t>(k);
  }

  bool post_send(std::size_t peer_slot, const std::byte* at, std::size_t len) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(at), static_cast<std::uint32_t>(len), mr_->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 1000 + peer_slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    return ibv_post_send(qps_[peer_slot], &wr, &bad) == 0;
  }

  bool post_recv(std::size_t peer_slot, std::size_t len) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(recv_area_[peer_slot]), static_cast<std::uint32_t>(len),
                mr_->lkey};
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = 2000 + peer_slot;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    return ibv_post_recv(qps_[peer_slot], &wr, &bad) == 0;
  }

  // Wait for `sends` send and `recvs` receive completions.
  bool wait(std::size_t sends, std::size_t recvs) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
    while (sends + recvs > 0) {
      ibv_wc wc[8];
      const int got = ibv_poll_cq(cq_, 8, wc);
      if (got < 0) return false;
      for (int i = 0; i < got; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) {
          std::fprintf(stderr, "[jaccl] rank %d: completion failed: %s\n", rank_,
                       ibv_wc_status_str(wc[i].status));
          return false;
        }
        if (wc[i].wr_id >= 2000) {
          if (recvs) --recvs;
        } else if (sends) {
          --sends;
        }
      }
      // Busy polling, as JACCL does, but yielding: on a small machine the peers (and the fake's
      // progress threads) need the CPU this rank would spin on.
      if (got == 0) sched_yield();
      if (got == 0 && std::chrono::steady_clock::now() > end) {
        std::fprintf(
            stderr,
            "[jaccl] rank %d: timed out waiting for %zu sends and %zu receives (a message was lost)\n", rank_,
            sends, recvs);
        return false;
      }
    }
    return true;
  }

  std::uint32_t* words(std::byte* p) {
    return reinterpret_cast<std::uint32_t*>(p);
  }  // NOLINT: our own buffer

  // Mesh: everyone sends its frame to everyone, then posts its receives (no credits), sums.
  bool mesh_sum(std::size_t frame, int k) {
    const std::size_t count = frame / 4;
    std::uint32_t* mine = words(send_area_);
    for (std::size_t i = 0; i < count; ++i) mine[i] = value(rank_, i, k);
    for (std::size_t s = 0; s < peers_.size(); ++s)
      if (!post_send(s, send_area_, frame)) return false;
    for (std::size_t s = 0; s < peers_.size(); ++s)
      if (!post_recv(s, frame)) return false;
    if (!wait(peers_.size(), peers_.size())) return false;
    for (std::size_t i = 0; i < count; ++i) {
      std::uint32_t sum = mine[i];
      for (std::size_t s = 0; s < peers_.size(); ++s) sum += words(recv_area_[s])[i];
      if (sum != expected(i, k)) {
        std::fprintf(stderr,
                     "[jaccl] rank %d: all-sum %d of %zu-byte frames wrong at element %zu: %u, not %u\n",
                     rank_, k, frame, i, sum, expected(i, k));
        return false;
      }
    }
    return true;
  }

  // Ring: reduce-scatter then all-gather, one frame-sized chunk per message, sent to the right
  // neighbour, received from the left; again the send is posted before the receive.
  bool ring_sum(std::size_t frame, int k) {
    const std::size_t count = frame / 4;
    const auto n = static_cast<std::size_t>(n_);
    const auto r = static_cast<std::size_t>(rank_);
    std::uint32_t* v = words(send_area_);
    for (std::size_t i = 0; i < count * n; ++i) v[i] = value(rank_, i, k);
    const std::size_t left = 0, right = 1;  // slots in peers_
    std::uint32_t* in = words(recv_area_[left]);
    for (std::size_t s = 0; s + 1 < n; ++s) {
      const std::size_t out_chunk = (r + n - s) % n, in_chunk = (r + 2 * n - s - 1) % n;
      if (!post_send(right, send_area_ + out_chunk * frame, frame) || !post_recv(left, frame) || !wait(1, 1))
        return false;
      for (std::size_t i = 0; i < count; ++i) v[in_chunk * count + i] += in[i];
    }
    for (std::size_t s = 0; s + 1 < n; ++s) {
      const std::size_t out_chunk = (r + 1 + n - s) % n, in_chunk = (r + n - s) % n;
      if (!post_send(right, send_area_ + out_chunk * frame, frame) || !post_recv(left, frame) || !wait(1, 1))
        return false;
      std::memcpy(v + in_chunk * count, in, frame);
    }
    for (std::size_t i = 0; i < count * n; ++i)
      if (v[i] != expected(i, k)) {
        std::fprintf(stderr,
                     "[jaccl] rank %d: ring all-sum %d of %zu-byte frames wrong at element %zu: %u, not %u\n",
                     rank_, k, frame, i, v[i], expected(i, k));
        return false;
      }
    return true;
  }

  const Options& o_;
  int rank_;
  int n_;
  int to_me_;
  std::vector<int> to_peer_;
  int report_;
  int go_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<int> peers_;
  std::vector<ibv_qp*> qps_;
  std::vector<std::byte> memory_;
  std::byte* send_area_ = nullptr;
  std::vector<std::byte*> recv_area_;
};

// ---- the launcher --------------------------------------------------------------------------

std::vector<std::string> host_names(const std::vector<std::string>& tables) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const std::string& t : tables) {
    const std::string base = t.substr(t.find_last_of('/') == std::string::npos ? 0 : t.find_last_of('/') + 1);
    std::string name = base;
    for (int k = 2; seen.count(name); ++k) name = base + "#" + std::to_string(k);
    seen.insert(name);
    names.push_back(name);
  }
  return names;
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--topology mesh|ring] [--frames BYTES[,BYTES...]] [--iters N] TABLE...\n",
               argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--topology" && i + 1 < argc) {
      const std::string t = argv[++i];
      if (t != "mesh" && t != "ring") return usage(argv[0]);
      o.ring = t == "ring";
    } else if (a == "--frames" && i + 1 < argc) {
      o.frames.clear();
      std::string list = argv[++i];
      for (std::size_t pos = 0; pos <= list.size();) {
        const std::size_t comma = std::min(list.find(',', pos), list.size());
        const unsigned long v = std::strtoul(list.substr(pos, comma - pos).c_str(), nullptr, 10);
        if (v < 4 || v % 4 != 0 || v > (64ul << 20)) return usage(argv[0]);
        o.frames.push_back(v);
        pos = comma + 1;
      }
    } else if (a == "--iters" && i + 1 < argc) {
      o.iters = std::atoi(argv[++i]);
      if (o.iters < 1 || o.iters > 100000) return usage(argv[0]);
    } else if (!a.empty() && a[0] == '-') {
      return usage(argv[0]);
    } else {
      o.tables.push_back(a);
    }
  }
  const int n = static_cast<int>(o.tables.size());
  if (n < 3 || n > 8) {
    std::fprintf(stderr, "%s: give 3 to 8 tables (one host each)\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::vector<int> to_rank_r(static_cast<std::size_t>(n)), to_rank_w(static_cast<std::size_t>(n)),
      go_r(static_cast<std::size_t>(n)), go_w(static_cast<std::size_t>(n));
  int report[2];
  if (::pipe(report)) return 2;
  for (std::size_t r = 0; r < static_cast<std::size_t>(n); ++r) {
    int p[2], g[2];
    if (::pipe(p) || ::pipe(g)) return 2;
    to_rank_r[r] = p[0];
    to_rank_w[r] = p[1];
    go_r[r] = g[0];
    go_w[r] = g[1];
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) return 2;
    if (pid == 0) {
      // The fake reads its table when the process first calls a verb: here, after the fork.
      ::setenv("GIDPOLICY_FAKE_TABLES", o.tables[static_cast<std::size_t>(r)].c_str(), 1);
      ::alarm(120);
      RankProcess rank(o, r, to_rank_r[static_cast<std::size_t>(r)], to_rank_w, report[1],
                       go_r[static_cast<std::size_t>(r)]);
      std::_Exit(rank.run());
    }
    pids.push_back(pid);
  }
  ::close(report[1]);

  // Connection: every rank reports each RTR and then "ready".
  const auto names = host_names(o.tables);
  std::map<std::pair<int, int>, int> rtr;  // (rank, peer) -> errno
  int ready = 0;
  while (ready < n) {
    Report rep{};
    if (!read_all(report[0], &rep, sizeof rep)) break;
    if (rep.kind == 1) rtr[{rep.rank, rep.peer}] = rep.err;
    if (rep.kind == 2) ++ready;
  }
  std::vector<std::pair<int, int>> pairs;
  if (o.ring) {
    for (int i = 0; i < n; ++i) pairs.emplace_back(i, (i + 1) % n);
  } else {
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) pairs.emplace_back(i, j);
  }
  bool all_connected = ready == n;
  for (const auto& [a, b] : pairs) {
    std::string failed;
    for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
      auto it = rtr.find({x, y});
      if (it == rtr.end())
        failed += names[static_cast<std::size_t>(x)] + " no report,";
      else if (it->second != 0)
        failed += names[static_cast<std::size_t>(x)] + " errno " + std::to_string(it->second) + ",";
    }
    const auto& na = names[static_cast<std::size_t>(a)];
    const auto& nb = names[static_cast<std::size_t>(b)];
    if (failed.empty())
      std::printf("pair: %s <-> %s: connected\n", na.c_str(), nb.c_str());
    else
      std::printf("pair: %s <-> %s: FAILED: %s\n", na.c_str(), nb.c_str(), failed.c_str());
    all_connected = all_connected && failed.empty();
  }
  const char go = all_connected ? 'g' : 'a';
  for (int w : go_w) write_all(w, &go, 1);

  bool sums_right = all_connected;
  if (all_connected) {
    int done = 0;
    while (done < n) {
      Report rep{};
      if (!read_all(report[0], &rep, sizeof rep)) break;
      if (rep.kind != 3) continue;
      ++done;
      sums_right = sums_right && rep.err == 0;
    }
    sums_right = sums_right && done == n;
  }
  bool exits_clean = true;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    exits_clean = exits_clean && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  if (!all_connected) {
    std::printf("%s of %d ranks: not every pair connected\n", o.ring ? "ring" : "mesh", n);
    return 1;
  }
  if (sums_right && exits_clean) {
    for (std::size_t f : o.frames)
      std::printf("%s of %d ranks: %d all-sums of %zu-byte frames correct\n", o.ring ? "ring" : "mesh", n,
                  o.iters, f);
    return 0;
  }
  std::printf("%s of %d ranks: all-sums FAILED\n", o.ring ? "ring" : "mesh", n);
  return 1;
}
