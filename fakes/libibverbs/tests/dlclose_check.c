/* fakelib_dlclose: a program may dlclose() the fake libibverbs.so.1 (ds4 does; a Python module
 * that loads libibverbs at run time may, too) and then go on. No thread of the library may run
 * after its pages are unmapped: the table watcher, woken by a rewrite of the table file, would
 * crash the process.
 *
 *   fakelib_dlclose <path of the fake libibverbs.so.1> <table file> <scratch directory>
 *
 * Copies the table into the scratch directory, points GIDPOLICY_FAKE_TABLES at the copy, loads
 * the library, opens and closes its first device (starting the watcher), unloads it, then
 * rewrites the copy and waits 500 ms. Exit 0 when the process survives, 2 on a setup failure.
 */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int copy_file(const char* from, const char* to, const char* extra) {
  char buf[65536];
  size_t n;
  FILE* in = fopen(from, "rb");
  FILE* out = fopen(to, "wb");
  int ok = in && out;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  if (ok && extra) ok = fputs(extra, out) >= 0;
  if (in) fclose(in);
  if (out && fclose(out)) ok = 0;
  return ok ? 0 : 2;
}

int main(int argc, char** argv) {
  char table[4096];
  void* lib;
  struct ibv_device** (*get_list)(int*);
  void (*free_list)(struct ibv_device**);
  struct ibv_context* (*open_dev)(struct ibv_device*);
  int (*close_dev)(struct ibv_context*);
  struct ibv_device** list;
  struct ibv_context* ctx;
  struct timespec half = {0, 500000000};
  int n = 0;
  if (argc != 4) {
    fprintf(stderr, "usage: %s <libibverbs.so.1> <table> <scratch dir>\n", argv[0]);
    return 2;
  }
  snprintf(table, sizeof table, "%s/dlclose_table.txt", argv[3]);
  if (copy_file(argv[2], table, NULL) || setenv("GIDPOLICY_FAKE_TABLES", table, 1)) return 2;
  if (!(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  *(void**)&get_list = dlsym(lib, "ibv_get_device_list");
  *(void**)&free_list = dlsym(lib, "ibv_free_device_list");
  *(void**)&open_dev = dlsym(lib, "ibv_open_device");
  *(void**)&close_dev = dlsym(lib, "ibv_close_device");
  if (!get_list || !free_list || !open_dev || !close_dev) return 2;
  if (!(list = get_list(&n)) || n < 1 || !(ctx = open_dev(list[0]))) return 2;
  close_dev(ctx);
  free_list(list);
  if (dlclose(lib)) return 2;
  /* The rewrite wakes a watcher that is still there. */
  if (copy_file(argv[2], table, "\n")) return 2;
  /* No event says "the watcher would have run by now" (it is gone, which is the point): the
   * rewrite is read after 200 ms of quiet, so 500 ms gives a stale watcher time to crash the
   * process. A loaded machine can only make such a crash come after the exit (a missed failure),
   * never make a right library fail. */
  nanosleep(&half, NULL);
  printf("survived dlclose and a rewrite of the table\n");
  return 0;
}
