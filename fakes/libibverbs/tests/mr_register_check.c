/* fakelib_mr_register: ibv_reg_mr refuses what the kernel refuses (ib_uverbs_reg_mr,
 * ib_check_mr_access, ib_umem_get), with NULL and the kernel's errno, and hands out keys that
 * look like an HCA's.
 * Written against plain libibverbs (run it with LD_LIBRARY_PATH pointing at the fake).
 *
 *   fakelib_mr_register <device>
 *
 * EFAULT: unmapped memory, a range running into an unmapped page, PROT_NONE memory, read-only
 * memory with an access that writes. EINVAL: a wrapping range, SIZE_MAX, length 0 at a page
 * boundary, unknown access bits, remote write or remote atomic without local write, an iova
 * whose page offset differs from the address's. EOPNOTSUPP: on-demand paging (not offered).
 * Accepted: read-only memory registered for remote read only, length 0 inside a page, the
 * optional relaxed-ordering hint. Keys: lkey == rkey, distinct per region, never 0.
 * Exit 0 when every check passes, 1 otherwise, 2 on a setup failure.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static struct ibv_pd* pd;

/* A registration that must fail with `want`. */
static void refused(void* addr, size_t len, unsigned access, int want, const char* what) {
  struct ibv_mr* mr;
  errno = 0;
  mr = ibv_reg_mr(pd, addr, len, access);
  CHECK(mr == NULL && errno == want, "%s: NULL with errno %d (got %s, errno %d)", what, want,
        mr ? "a region" : "NULL", errno);
  if (mr) ibv_dereg_mr(mr);
}

static struct ibv_mr* accepted(void* addr, size_t len, unsigned access, const char* what) {
  struct ibv_mr* mr = ibv_reg_mr(pd, addr, len, access);
  CHECK(mr != NULL, "%s: registered (errno %d)", what, mr ? 0 : errno);
  return mr;
}

int main(int argc, char** argv) {
  struct ibv_device** list;
  struct ibv_context* ctx = NULL;
  struct ibv_mr *a, *b, *mr;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const unsigned rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  unsigned char *map, *ro, *none, *gone;
  int n, i;
  if (argc != 2) {
    fprintf(stderr, "usage: %s <device>\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  list = ibv_get_device_list(&n);
  if (!list) return 2;
  for (i = 0; i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (!ctx || !(pd = ibv_alloc_pd(ctx))) return 2;

  /* Four pages: [0] read-write, [1] unmapped, [2] read-only, [3] PROT_NONE. */
  map = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return 2;
  memset(map, 1, 4 * page);
  gone = map + page;
  ro = map + 2 * page;
  none = map + 3 * page;
  if (munmap(gone, page) || mprotect(ro, page, PROT_READ) || mprotect(none, page, PROT_NONE)) return 2;

  refused(gone, page, rw, EFAULT, "unmapped memory");
  refused(map, 2 * page, rw, EFAULT, "a range running into an unmapped page");
  refused(none, page, IBV_ACCESS_REMOTE_READ, EFAULT, "PROT_NONE memory");
  refused(ro, page, IBV_ACCESS_LOCAL_WRITE, EFAULT, "read-only memory with local write");
  refused(ro, page, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, EFAULT,
          "read-only memory with remote atomic");
  mr = accepted(ro, page, IBV_ACCESS_REMOTE_READ, "read-only memory for remote read");
  if (mr) ibv_dereg_mr(mr);
  refused(NULL, page, 0, EFAULT, "address 0");

  refused(map, SIZE_MAX, rw, EINVAL, "SIZE_MAX");
  refused(map, (size_t)(UINTPTR_MAX - (uintptr_t)map) + 2, rw, EINVAL, "a range that wraps");
  refused(map, 0, rw, EINVAL, "length 0 at a page boundary");
  mr = accepted(map + 100, 0, rw, "length 0 inside a mapped page (the kernel counts that page)");
  if (mr) ibv_dereg_mr(mr);
  refused(gone + 100, 0, rw, EFAULT, "length 0 inside an unmapped page");

  refused(map, page, IBV_ACCESS_LOCAL_WRITE | (1u << 12), EINVAL, "an unknown access bit (1 << 12)");
  refused(map, page, IBV_ACCESS_LOCAL_WRITE | (1u << 30), EINVAL, "an access bit above the optional range");
  refused(map, page, IBV_ACCESS_REMOTE_WRITE, EINVAL, "remote write without local write");
  refused(map, page, IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ, EINVAL,
          "remote atomic without local write");
  refused(map, page, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, EOPNOTSUPP, "on-demand paging");
  {
    unsigned access =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING; /* not a constant: ibv_reg_mr_iova2 */
    mr = accepted(map, page, access, "relaxed ordering (an optional hint)");
    if (mr) ibv_dereg_mr(mr);
  }
  errno = 0;
  mr = ibv_reg_mr_iova(pd, map, page, 0x10000 + 8, rw);
  CHECK(mr == NULL && errno == EINVAL, "an iova at another page offset: NULL with errno EINVAL (errno %d)",
        errno);
  if (mr) ibv_dereg_mr(mr);
  mr = ibv_reg_mr_iova(pd, map + 8, 8, 0x10000 + 8, rw);
  CHECK(mr != NULL, "an iova at the same page offset: registered");
  if (mr) ibv_dereg_mr(mr);

  a = accepted(map, page, rw, "a read-write page");
  b = accepted(map, page, rw, "the same page again");
  if (a && b) {
    CHECK(a->lkey == a->rkey && b->lkey == b->rkey, "lkey == rkey");
    CHECK(a->rkey != b->rkey && a->rkey != 0 && b->rkey != 0,
          "two regions have distinct non-zero keys (%#x, %#x)", a->rkey, b->rkey);
  }
  if (a) ibv_dereg_mr(a);
  if (b) ibv_dereg_mr(b);

  munmap(map, page);
  munmap(ro, 2 * page);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  if (failures == 0) printf("registration checks passed\n");
  return failures ? 1 : 0;
}
