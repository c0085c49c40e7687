/* fakelib_gid_fronts: the GID reads (and, with --qp, the QP calls) of the drop-in
 * libibverbs.so.1 give exactly the answers tests/data/c_fronts/<table>.expected
 * (<table>.qp.expected) lists, the transcript the in-process C ABI must give too
 * (tests/unit/fakes_fake_c_core_test.cpp runs the same sequences, gid_sequence.h and
 * qp_sequence.h).
 *
 *   fakelib_gid_fronts [--qp] EXPECTED      compare; prints the first line that differs
 *   fakelib_gid_fronts [--qp] --print       print the transcript (to write a new expected file)
 * GIDPOLICY_FAKE_TABLES names the table. Exit 0 when the transcript matches, 1 otherwise,
 * 2 on setup failure. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gid_sequence.h"
#include "qp_sequence.h"

/* ibv_query_port is verbs.h's macro over an inline (it zeroes the struct and calls the exported
 * compat symbol): a function of our own gives the sequence a pointer to it. */
static int drop_in_query_port(struct ibv_context* context, uint8_t port_num, struct ibv_port_attr* attr) {
  return ibv_query_port(context, port_num, attr);
}

static const struct gid_fronts_ops drop_in = {
    ibv_get_device_list, ibv_free_device_list, ibv_get_device_name, ibv_open_device,      ibv_close_device,
    drop_in_query_port,  ibv_query_gid,        _ibv_query_gid_ex,   _ibv_query_gid_table,
};

static const struct qp_fronts_ops drop_in_qp = {
    ibv_get_device_list, ibv_free_device_list, ibv_open_device, ibv_close_device,
    ibv_alloc_pd,        ibv_dealloc_pd,       ibv_create_cq,   ibv_destroy_cq,
    ibv_create_qp,       ibv_modify_qp,        ibv_query_qp,    ibv_destroy_qp,
};

static int qp_calls = 0; /* --qp: the QP sequence instead of the GID reads */

static int run(FILE* out) { return qp_calls ? qp_sequence(&drop_in_qp, out) : gid_sequence(&drop_in, out); }

static char* slurp(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  char* buf;
  long n;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  *size = (size_t)n;
  return buf;
}

int main(int argc, char** argv) {
  char* got = NULL;
  size_t got_size = 0, want_size = 0, line = 1, i;
  char* want;
  FILE* out;
  if (argc == 3 && strcmp(argv[1], "--qp") == 0) {
    qp_calls = 1;
    --argc;
    ++argv;
  }
  if (argc != 2) return 2;
  if (strcmp(argv[1], "--print") == 0) return run(stdout) == 0 ? 0 : 2;
  want = slurp(argv[1], &want_size);
  if (!want) {
    printf("cannot read %s\n", argv[1]);
    return 2;
  }
  out = open_memstream(&got, &got_size);
  if (!out || run(out) != 0) return 2;
  fclose(out);
  for (i = 0; i < got_size && i < want_size && got[i] == want[i]; ++i)
    if (got[i] == '\n') ++line;
  if (i == got_size && i == want_size) {
    printf("the drop-in's %zu transcript lines match %s\n", line - 1, argv[1]);
    free(got);
    free(want);
    return 0;
  }
  printf("FAILED: line %zu differs from %s\n", line, argv[1]);
  {
    const char* g = got + i;
    const char* w = want + i;
    while (g > got && g[-1] != '\n') --g;
    while (w > want && w[-1] != '\n') --w;
    printf("  expected: %.*s\n", (int)strcspn(w, "\n"), w);
    printf("  got:      %.*s\n", (int)strcspn(g, "\n"), g);
  }
  free(got);
  free(want);
  return 1;
}
