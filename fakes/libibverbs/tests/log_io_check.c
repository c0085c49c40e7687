/* fakelib_log_io: the fake libibverbs.so.1's control log (GIDPOLICY_FAKE_LOG) never hangs or
 * kills the program that loaded it, and never loses a record without saying so.
 *
 *   fakelib_log_io fifo_no_reader   the log is a FIFO nobody reads: the first verbs call returns
 *                                   (it used to block in open() forever), the loss is said once
 *                                   on stderr, and a reader that comes later gets the records
 *   fakelib_log_io reader_leaves    the FIFO's reader exits while the program runs: no SIGPIPE
 *                                   (it used to kill the program), the program's own SIGPIPE
 *                                   disposition and signal mask are untouched, the loss said once
 *   fakelib_log_io full             the log is /dev/full: ENOSPC is said once, not swallowed
 *
 * GIDPOLICY_FAKE_TABLES must name a table with device ds4_test0 (examples/tables/ds4-linux-unit.json).
 * The program sets GIDPOLICY_FAKE_LOG itself, before its first verbs call, and captures its own
 * stderr to count the library's lines. Every wait is bounded by a hang guard, far above what an
 * idle machine needs: a reader waits 30 s for a record, and a hang ends the run after 45 s.
 * Exit 0 when every check holds, 1 otherwise (each failure is printed), 2 on setup failure.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static char g_dir[] = "/tmp/fakelib_log_io.XXXXXX";
static char g_fifo[256];
static char g_err[256];

static void on_alarm(int sig) {
  static const char msg[] = "FAILED: the program hung for 45 s inside the fake library\n";
  (void)sig;
  (void)!write(1, msg, sizeof msg - 1);
  _exit(3);
}

/* Some verbs calls, each of which writes a control-log record. 0 when they all answered. */
static int verbs_calls(int rounds) {
  struct ibv_device** list;
  struct ibv_context* ctx;
  union ibv_gid gid;
  struct ibv_port_attr port;
  int num = 0, i, bad = 0;
  list = ibv_get_device_list(&num);
  if (!list || num < 1) return -1;
  ctx = ibv_open_device(list[0]);
  if (!ctx) {
    ibv_free_device_list(list);
    return -1;
  }
  for (i = 0; i < rounds; ++i) {
    if (ibv_query_gid(ctx, 1, i % 4, &gid) != 0) ++bad;
    if (ibv_query_port(ctx, 1, &port) != 0) ++bad;
  }
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return bad;
}

/* How many lines of the captured stderr say that records of `log` were lost. */
static int lost_lines(const char* log) {
  char line[1024], want[512];
  int n = 0;
  FILE* f = fopen(g_err, "r");
  if (!f) return -1;
  snprintf(want, sizeof want, "control log %s: records lost: ", log);
  while (fgets(line, sizeof line, f))
    if (strstr(line, want)) ++n;
  fclose(f);
  return n;
}

static void show_stderr(void) {
  char line[1024];
  FILE* f = fopen(g_err, "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) printf("  stderr: %s", line);
  fclose(f);
}

static int sigpipe_untouched(void) {
  struct sigaction sa;
  sigset_t mask, pending;
  if (sigaction(SIGPIPE, NULL, &sa) != 0 || sa.sa_handler != SIG_DFL) return 0;
  if (sigprocmask(SIG_BLOCK, NULL, &mask) != 0 || sigismember(&mask, SIGPIPE)) return 0;
  if (sigpending(&pending) != 0 || sigismember(&pending, SIGPIPE)) return 0;
  return 1;
}

/* A child that opens the FIFO for reading (without waiting for a writer), tells the parent on
 * `ready`, then reads until it has `want` bytes or 30 s pass without any (a hang guard: the
 * parent's records follow within milliseconds on an idle machine); exit 0 when it saw a record. */
static pid_t reader(int ready, size_t want) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  {
    char buf[4096];
    size_t got = 0;
    int seen = 0;
    int fd = open(g_fifo, O_RDONLY | O_NONBLOCK);
    if (fd < 0) _exit(2);
    (void)!write(ready, "r", 1);
    while (got < want) {
      struct pollfd p = {fd, POLLIN, 0};
      ssize_t n;
      if (poll(&p, 1, 30000) <= 0) break;
      n = read(fd, buf, sizeof buf - 1);
      if (n <= 0) {
        if (n < 0 && errno == EAGAIN) continue;
        break; /* EOF: no writer yet or any more */
      }
      buf[n] = '\0';
      if (strstr(buf, "\"call\"")) seen = 1;
      got += (size_t)n;
    }
    _exit(seen ? 0 : 1);
  }
}

static int wait_child(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void fifo_no_reader(void) {
  int sync[2], rc;
  pid_t pid;
  char c;
  const struct timespec pause = {0, 300 * 1000 * 1000};
  setenv("GIDPOLICY_FAKE_LOG", g_fifo, 1);
  CHECK(verbs_calls(20) == 0, "verbs calls answer while the control log is a FIFO nobody reads");
  rc = lost_lines(g_fifo);
  CHECK(rc == 1, "the loss is said once on stderr (%d lines)", rc);

  /* A reader comes: the records written from then on reach it. */
  if (pipe(sync) != 0) return;
  pid = reader(sync[1], 1);
  (void)!read(sync[0], &c, 1);
  /* The library retries opening the FIFO at most every 100 ms: after at least 300 ms (load can
   * only make the pause longer) the next record's write opens it. */
  nanosleep(&pause, NULL);
  CHECK(verbs_calls(5) == 0, "verbs calls answer once a reader is there");
  rc = wait_child(pid);
  CHECK(rc == 0, "the reader that came later got control-log records (child exit %d)", rc);
  rc = lost_lines(g_fifo);
  CHECK(rc == 1, "still said once (%d lines)", rc);
}

static void reader_leaves(void) {
  int sync[2], rc;
  pid_t pid;
  char c;
  if (pipe(sync) != 0) return;
  pid = reader(sync[1], 1);
  (void)!read(sync[0], &c, 1);
  setenv("GIDPOLICY_FAKE_LOG", g_fifo, 1);
  CHECK(verbs_calls(1) == 0, "verbs calls answer while the FIFO has its reader");
  rc = wait_child(pid);
  CHECK(rc == 0, "the reader got a record, then left (child exit %d)", rc);
  /* No reader any more: every record now meets EPIPE. */
  CHECK(verbs_calls(20) == 0, "verbs calls answer after the reader left (no SIGPIPE)");
  CHECK(sigpipe_untouched(), "SIGPIPE: still the default action, not blocked, not pending");
  rc = lost_lines(g_fifo);
  CHECK(rc == 1, "the loss is said once on stderr (%d lines)", rc);
}

static void full(void) {
  int rc;
  setenv("GIDPOLICY_FAKE_LOG", "/dev/full", 1);
  CHECK(verbs_calls(20) == 0, "verbs calls answer while every control-log write fails with ENOSPC");
  rc = lost_lines("/dev/full");
  CHECK(rc == 1, "the loss is said once on stderr (%d lines)", rc);
}

int main(int argc, char** argv) {
  int fd;
  if (argc != 2) {
    fprintf(stderr, "usage: %s fifo_no_reader|reader_leaves|full\n", argv[0]);
    return 2;
  }
  if (!mkdtemp(g_dir)) return 2;
  snprintf(g_fifo, sizeof g_fifo, "%s/log.fifo", g_dir);
  snprintf(g_err, sizeof g_err, "%s/stderr", g_dir);
  if (mkfifo(g_fifo, 0600) != 0) return 2;
  fd = open(g_err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || dup2(fd, 2) < 0) return 2;
  close(fd);
  setvbuf(stdout, NULL, _IONBF, 0); /* a dying program's lines are not lost in its buffer */
  signal(SIGALRM, on_alarm);
  alarm(45);

  if (strcmp(argv[1], "fifo_no_reader") == 0) {
    fifo_no_reader();
  } else if (strcmp(argv[1], "reader_leaves") == 0) {
    reader_leaves();
  } else if (strcmp(argv[1], "full") == 0) {
    full();
  } else {
    return 2;
  }
  alarm(0);
  if (failures) show_stderr();
  unlink(g_fifo);
  unlink(g_err);
  rmdir(g_dir);
  return failures ? 1 : 0;
}
