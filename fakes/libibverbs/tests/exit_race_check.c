/* fakelib_exit_race: two threads of a program call exit() at once, and the fake must not abort
 * the process. rping of rdma-core 44 does this when it tears down: its event thread exits
 * (perror, exit) while main returns. glibc lets the two calls take exit handlers side by side,
 * so a library whose handler joins its thread while another handler destroys that same thread
 * object (a static std::thread) dies in std::terminate ("terminate called without an active
 * exception") - with the status of an abort, not the program's.
 *
 *   fakelib_exit_race <runs>
 *
 * Each run forks a child that opens the first device (GIDPOLICY_FAKE_TABLES names a file, so
 * the table watcher runs), starts a thread that calls exit(3), and returns 3 from main at the
 * same moment. Exit 0 when every child ended with status 3; 1 naming the first that did not.
 */
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int go;

static void* exiter(void* arg) {
  (void)arg;
  while (!atomic_load(&go)) {
  }
  exit(3);
}

static int child(void) {
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  if (!list || n < 1) return 2;
  struct ibv_context* ctx = ibv_open_device(list[0]);
  if (!ctx) return 2;
  pthread_t t;
  if (pthread_create(&t, NULL, exiter, NULL) != 0) return 2;
  atomic_store(&go, 1);
  return 3; /* main's exit() races the thread's */
}

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 100;
  for (int i = 0; i < runs; ++i) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) exit(child());
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 2;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 3) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        fprintf(stderr, "run %d: setup failed (no device)\n", i + 1);
        return 2;
      }
      fprintf(stderr, "run %d of %d: the child %s %d, not exit status 3\n", i + 1, runs,
              WIFSIGNALED(status) ? "died of signal" : "exited",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      return 1;
    }
  }
  printf("%d runs: two threads' exit() never aborted\n", runs);
  return 0;
}
