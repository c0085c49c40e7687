/* fakelib_fork: after fork(), the parent's incoming messages stay the parent's (the HCA writes
 * the parent's pages), whatever the child does without ibv_fork_init(). Written against plain
 * libibverbs (run with LD_LIBRARY_PATH at the fake).
 *
 *   fakelib_fork <device> <gid_index> <own_qp|poll_inherited>
 *
 * The parent holds two connected RC QPs, A (sender) and B (receiver, 64 receives posted), then
 * forks. The child either creates a QP of its own (own_qp: the library starts a progress
 * thread in the child) or polls B's inherited CQ in a loop (poll_inherited). Meanwhile the parent
 * sends 50 numbered messages from A to B, each waited for. Then: A saw 50 successes, B received
 * exactly those 50, in order, intact, and the child took no completion at all.
 * Exit 0 when all hold, 1 on a failed check, 2 on a setup failure.
 */
#include "check.h"
#include "rc_side.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MESSAGES 50
#define MSG_BYTES 64
#define RECV_OFF 65536u

static int child_main(struct ibv_device* dev, struct rc_side* b, int own_qp, int ready_fd, int stop_fd) {
  struct rc_side mine;
  struct ibv_wc wc[8];
  char c = 1;
  int taken = 0, n;
  alarm(120); /* a hang guard: the child lives while the parent sends its 50 messages */
  if (own_qp && rc_open(&mine, dev, 4096, 4)) return 100;
  if (write(ready_fd, &c, 1) != 1) return 100;
  for (;;) {
    fd_set set;
    struct timeval tv = {0, 0};
    if (!own_qp) {
      n = ibv_poll_cq(b->cq, 8, wc);
      if (n > 0) taken += n;
    } else {
      tv.tv_usec = 1000;
    }
    FD_ZERO(&set);
    FD_SET(stop_fd, &set);
    if (select(stop_fd + 1, &set, NULL, NULL, &tv) > 0) break;
  }
  if (own_qp) rc_close(&mine);
  return taken > 99 ? 99 : taken;
}

int main(int argc, char** argv) {
  struct ibv_device* dev;
  struct rc_side a, b;
  struct rc_attrs at = {14, 7, 7, 12};
  struct ibv_wc wc[MESSAGES];
  int index, own_qp, i, ready[2], stop[2], status = 0, sent_ok = 0, got, in_order = 1;
  pid_t child;
  char c;
  if (argc != 4 || (strcmp(argv[3], "own_qp") != 0 && strcmp(argv[3], "poll_inherited") != 0)) {
    fprintf(stderr, "usage: %s <device> <gid_index> <own_qp|poll_inherited>\n", argv[0]);
    return 2;
  }
  index = atoi(argv[2]);
  own_qp = strcmp(argv[3], "own_qp") == 0;
  if (!(dev = rc_find_device(argv[1]))) return 2;
  if (rc_open(&a, dev, 4096, MESSAGES + 4) ||
      rc_open(&b, dev, RECV_OFF + MESSAGES * MSG_BYTES, MESSAGES + 14))
    return 2;
  if (rc_connect(&a, b.qp->qp_num, index, &at) || rc_connect(&b, a.qp->qp_num, index, &at)) return 2;
  for (i = 0; i < MESSAGES + 14; ++i)
    if (rc_post_recv(&b, (uint64_t)i, RECV_OFF + (size_t)(i % MESSAGES) * MSG_BYTES, MSG_BYTES)) return 2;
  if (pipe(ready) || pipe(stop)) return 2;
  child = fork();
  if (child < 0) return 2;
  if (child == 0) _exit(child_main(dev, &b, own_qp, ready[1], stop[0]));
  if (read(ready[0], &c, 1) != 1) return 2;

  for (i = 0; i < MESSAGES; ++i) {
    struct ibv_wc s;
    snprintf((char*)a.buf, MSG_BYTES, "message %d", i);
    if (rc_post(&a, IBV_WR_SEND, 1000 + (uint64_t)i, 0, MSG_BYTES, 0, 0)) return 2;
    if (rc_poll_for(a.cq, &s, 1, 30.0) == 1 && s.status == IBV_WC_SUCCESS) ++sent_ok;
  }
  /* Each send was acknowledged, so each message is in B's CQ by now: 30 s is a hang guard. */
  got = rc_poll_for(b.cq, wc, MESSAGES, 30.0);
  rc_sleep_ms(100);
  got += rc_poll_for(b.cq, wc + got, MESSAGES - got, 0.0);
  c = 1;
  if (write(stop[1], &c, 1) != 1 || waitpid(child, &status, 0) != child) return 2;

  CHECK(sent_ok == MESSAGES, "the sender saw %d of %d sends succeed", sent_ok, MESSAGES);
  CHECK(got == MESSAGES, "the parent received %d of the %d messages", got, MESSAGES);
  for (i = 0; i < got; ++i) {
    char want[MSG_BYTES];
    snprintf(want, sizeof want, "message %d", i);
    if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != (uint64_t)i ||
        strcmp((const char*)b.buf + RECV_OFF + (size_t)i * MSG_BYTES, want) != 0)
      in_order = 0;
  }
  CHECK(in_order, "each arrived intact, in order, in its own receive");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the child (%s) took no completion (exit %d, signal %d)",
        own_qp ? "with a QP of its own" : "polling B's CQ", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
        WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  rc_close(&a);
  rc_close(&b);
  rc_free_devices();
  return failures ? 1 : 0;
}
