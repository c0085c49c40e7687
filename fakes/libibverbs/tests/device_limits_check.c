/* fakelib_device_limits: what ibv_query_device reports is what creation enforces, and no hidden
 * descriptor ceiling sits below it.
 *
 *   fakelib_device_limits counts <device> <index>
 *   fakelib_device_limits descriptors <device> <index> <log>
 *
 * counts: one object more than max_pd, max_cq, max_mr, max_srq, max_ah and max_qp is ENOMEM
 * (every one up to the limit succeeds), and an attribute above max_qp_wr, max_sge, max_cqe or
 * max_srq_wr is EINVAL.
 * descriptors: (a) with RLIMIT_NOFILE's soft limit at 1024 below a higher hard one, the fake
 * raises it at ibv_open_device and creates max_qp (1024) QPs, each costing it two sockets (a
 * fake that does not raise it fails with EMFILE near 500). (b) With the limit lowered to 300 for
 * good, ibv_query_device reports fewer QPs and that many are created, one more is ENOMEM.
 * (c) Two QPs are created; the program then takes every free descriptor itself: creating
 * another QP fails with ENOMEM (never EMFILE), the control log <log> says why, and the two QPs
 * still reach RTS and carry a message (their sockets were taken at create time).
 * Exit 0 when all hold, 1 otherwise, 2 on a setup failure (77: the hard limit is too low).
 */
#include "check.h"
#include "qp_pair.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static int counts(const char* name, uint8_t index) {
  struct ibv_context* ctx = pair_open(name);
  if (!ctx) return 2;
  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da)) return 2;
  printf("max_pd %d max_cq %d max_qp %d max_mr %d max_srq %d max_ah %d\n", da.max_pd, da.max_cq, da.max_qp,
         da.max_mr, da.max_srq, da.max_ah);

  static struct ibv_pd* pds[1 << 16];
  int n = 0;
  while (n < da.max_pd && (pds[n] = ibv_alloc_pd(ctx)) != NULL) ++n;
  errno = 0;
  struct ibv_pd* extra = n == da.max_pd ? ibv_alloc_pd(ctx) : NULL;
  CHECK(n == da.max_pd && !extra && errno == ENOMEM, "max_pd %d PDs, then ENOMEM (%d made, errno %d)",
        da.max_pd, n, errno);
  for (int i = 1; i < n; ++i) ibv_dealloc_pd(pds[i]);
  struct ibv_pd* pd = pds[0];

  static struct ibv_cq* cqs[1 << 16];
  n = 0;
  while (n < da.max_cq && (cqs[n] = ibv_create_cq(ctx, 4, NULL, NULL, 0)) != NULL) ++n;
  errno = 0;
  struct ibv_cq* xcq = n == da.max_cq ? ibv_create_cq(ctx, 4, NULL, NULL, 0) : NULL;
  CHECK(n == da.max_cq && !xcq && errno == ENOMEM, "max_cq %d CQs, then ENOMEM (%d made, errno %d)",
        da.max_cq, n, errno);
  for (int i = 1; i < n; ++i) ibv_destroy_cq(cqs[i]);
  struct ibv_cq* cq = cqs[0];
  errno = 0;
  CHECK(!ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0) && errno == EINVAL, "cqe max_cqe+1: EINVAL (%d)",
        errno);

  static char mem[4096];
  static struct ibv_mr* mrs[1 << 16];
  n = 0;
  while (n < da.max_mr && (mrs[n] = ibv_reg_mr(pd, mem, sizeof mem, IBV_ACCESS_LOCAL_WRITE)) != NULL) ++n;
  errno = 0;
  struct ibv_mr* xmr = n == da.max_mr ? ibv_reg_mr(pd, mem, sizeof mem, IBV_ACCESS_LOCAL_WRITE) : NULL;
  CHECK(n == da.max_mr && !xmr && errno == ENOMEM, "max_mr %d MRs, then ENOMEM (%d made, errno %d)",
        da.max_mr, n, errno);
  for (int i = 0; i < n; ++i) ibv_dereg_mr(mrs[i]);

  static struct ibv_srq* srqs[1 << 16];
  struct ibv_srq_init_attr sa;
  memset(&sa, 0, sizeof sa);
  sa.attr.max_wr = 2;
  sa.attr.max_sge = 1;
  n = 0;
  while (n < da.max_srq && (srqs[n] = ibv_create_srq(pd, &sa)) != NULL) ++n;
  errno = 0;
  struct ibv_srq* xsrq = n == da.max_srq ? ibv_create_srq(pd, &sa) : NULL;
  CHECK(n == da.max_srq && !xsrq && errno == ENOMEM, "max_srq %d SRQs, then ENOMEM (%d made, errno %d)",
        da.max_srq, n, errno);
  for (int i = 0; i < n; ++i) ibv_destroy_srq(srqs[i]);
  sa.attr.max_wr = (uint32_t)da.max_srq_wr + 1;
  errno = 0;
  CHECK(!ibv_create_srq(pd, &sa) && errno == EINVAL, "SRQ max_wr max_srq_wr+1: EINVAL (%d)", errno);

  static struct ibv_ah* ahs[1 << 17];
  struct ibv_ah_attr aa;
  memset(&aa, 0, sizeof aa);
  aa.port_num = 1;
  aa.is_global = 1;
  aa.grh.sgid_index = index;
  aa.grh.hop_limit = 1;
  if (ibv_query_gid(ctx, 1, index, &aa.grh.dgid)) return 2;
  n = 0;
  while (n < da.max_ah && n < (1 << 17) && (ahs[n] = ibv_create_ah(pd, &aa)) != NULL) ++n;
  errno = 0;
  struct ibv_ah* xah = n == da.max_ah ? ibv_create_ah(pd, &aa) : NULL;
  CHECK(n == da.max_ah && !xah && errno == ENOMEM, "max_ah %d AHs, then ENOMEM (%d made, errno %d)",
        da.max_ah, n, errno);
  for (int i = 0; i < n; ++i) ibv_destroy_ah(ahs[i]);

  static struct ibv_qp* qps[1 << 16];
  n = 0;
  while (n < da.max_qp && (qps[n] = pair_qp(pd, IBV_QPT_UC, cq, cq, 1, 1)) != NULL) ++n;
  errno = 0;
  struct ibv_qp* xqp = n == da.max_qp ? pair_qp(pd, IBV_QPT_UC, cq, cq, 1, 1) : NULL;
  CHECK(n == da.max_qp && !xqp && errno == ENOMEM, "max_qp %d QPs, then ENOMEM (%d made, errno %d)",
        da.max_qp, n, errno);
  for (int i = 0; i < n; ++i) ibv_destroy_qp(qps[i]);
  errno = 0;
  CHECK(!pair_qp(pd, IBV_QPT_UC, cq, cq, (uint32_t)da.max_qp_wr + 1, 1) && errno == EINVAL,
        "max_send_wr max_qp_wr+1: EINVAL (%d)", errno);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = (uint32_t)da.max_sge + 1;
  errno = 0;
  CHECK(!ibv_create_qp(pd, &ia) && errno == EINVAL, "max_send_sge max_sge+1: EINVAL (%d)", errno);

  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return 0;
}

static int descriptors(const char* name, uint8_t index, const char* log) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max < 4096) {
    printf("skipped: the hard RLIMIT_NOFILE is below 4096\n");
    return 77;
  }
  rl.rlim_cur = 1024;
  if (setrlimit(RLIMIT_NOFILE, &rl)) return 2;
  /* The log is appended to: start it empty, so that only this run's records are read below. */
  FILE* empty = fopen(log, "w");
  if (empty) fclose(empty);

  /* (a) The fake raises the soft limit; 1024 QPs fit. */
  struct ibv_context* ctx = pair_open(name);
  if (!ctx) return 2;
  struct rlimit now;
  getrlimit(RLIMIT_NOFILE, &now);
  CHECK(now.rlim_cur > 1024, "ibv_open_device raised the soft descriptor limit (1024 -> %lu)",
        (unsigned long)now.rlim_cur);
  struct ibv_device_attr da;
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  if (!pd || !cq || ibv_query_device(ctx, &da)) return 2;
  static struct ibv_qp* qps[4096];
  int n = 0;
  while (n < da.max_qp && n < 4096 && (qps[n] = pair_qp(pd, IBV_QPT_RC, cq, cq, 1, 1)) != NULL) ++n;
  const int err = errno;
  CHECK(da.max_qp >= 1024 && n == da.max_qp, "max_qp %d reported, %d QPs created (errno %d at the end)",
        da.max_qp, n, n < da.max_qp ? err : 0);
  for (int i = 0; i < n; ++i) ibv_destroy_qp(qps[i]);

  /* (b) A lower limit for good: the figure follows it and holds. */
  rl.rlim_cur = rl.rlim_max = 300;
  if (setrlimit(RLIMIT_NOFILE, &rl) || ibv_query_device(ctx, &da)) return 2;
  n = 0;
  while (n < da.max_qp && (qps[n] = pair_qp(pd, IBV_QPT_RC, cq, cq, 1, 1)) != NULL) ++n;
  errno = 0;
  struct ibv_qp* extra = n == da.max_qp ? pair_qp(pd, IBV_QPT_RC, cq, cq, 1, 1) : NULL;
  CHECK(da.max_qp < 150 && n == da.max_qp && !extra && errno == ENOMEM,
        "soft limit 300: max_qp %d reported, %d created, one more ENOMEM (errno %d)", da.max_qp, n, errno);
  for (int i = 0; i < n; ++i) ibv_destroy_qp(qps[i]);

  /* (c) The program exhausts descriptors itself. */
  static char buf[128];
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  struct ibv_qp* a = pair_qp(pd, IBV_QPT_RC, cq, cq, 4, 4);
  struct ibv_qp* b = pair_qp(pd, IBV_QPT_RC, cq, cq, 4, 4);
  if (!mr || !a || !b) return 2;
  int taken = 0;
  while (open("/dev/null", O_RDONLY) >= 0) ++taken;
  errno = 0;
  struct ibv_qp* c = pair_qp(pd, IBV_QPT_RC, cq, cq, 1, 1);
  CHECK(!c && errno == ENOMEM,
        "no descriptor left (%d taken by the program): create_qp fails with ENOMEM (errno %d)", taken, errno);
  CHECK(pair_init(a) == 0 && pair_init(b) == 0 && pair_connect(ctx, a, b->qp_num, index) == 0 &&
            pair_connect(ctx, b, a->qp_num, index) == 0,
        "the two QPs created before reach RTS with no descriptor free");
  struct ibv_sge rs = {(uintptr_t)(buf + 64), 64, mr->lkey};
  struct ibv_recv_wr rw, *rbad;
  memset(&rw, 0, sizeof rw);
  rw.wr_id = 2;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  strcpy(buf, "over the limit");
  struct ibv_sge ss = {(uintptr_t)buf, 16, mr->lkey};
  struct ibv_send_wr sw, *sbad;
  memset(&sw, 0, sizeof sw);
  sw.wr_id = 1;
  sw.sg_list = &ss;
  sw.num_sge = 1;
  sw.opcode = IBV_WR_SEND;
  sw.send_flags = IBV_SEND_SIGNALED;
  if (ibv_post_recv(b, &rw, &rbad) || ibv_post_send(a, &sw, &sbad)) return 2;
  struct ibv_wc wc[2];
  const int got = pair_poll(cq, 2, PAIR_WAIT_S, wc);
  CHECK(got == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
            strcmp(buf + 64, "over the limit") == 0,
        "and carry a message (%d completions, status %d/%d)", got, got > 0 ? (int)wc[0].status : -1,
        got > 1 ? (int)wc[1].status : -1);
  for (int fd = 3; fd < 300; ++fd) {
    /* Give the descriptors back before reading the log (the program's own are /dev/null). */
    char path[64], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    const ssize_t len = readlink(path, target, sizeof target - 1);
    if (len == 9 && memcmp(target, "/dev/null", 9) == 0) close(fd);
  }
  FILE* f = fopen(log, "r");
  int logged = 0;
  char line[4096];
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "\"call\":\"create_qp\"") && strstr(line, "\"result\":12,\"error\":\"ENOMEM\"") &&
        strstr(line, "no socket for the QP"))
      logged = 1;
  if (f) fclose(f);
  CHECK(logged, "the control log says why create_qp failed (%s)", log);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  return 0;
}

int main(int argc, char** argv) {
  int rc = 2;
  if (argc == 4 && strcmp(argv[1], "counts") == 0)
    rc = counts(argv[2], (uint8_t)atoi(argv[3]));
  else if (argc == 5 && strcmp(argv[1], "descriptors") == 0)
    rc = descriptors(argv[2], (uint8_t)atoi(argv[3]), argv[4]);
  else
    fprintf(stderr, "usage: %s counts <device> <index> | descriptors <device> <index> <log>\n", argv[0]);
  if (rc != 0) return rc;
  printf("%s\n", failures ? "device limit checks FAILED" : "device limit checks passed");
  return failures ? 1 : 0;
}
