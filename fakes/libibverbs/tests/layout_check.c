/* fakelib_layout: the fake's contexts and devices are laid out as rdma-core's struct
 * verbs_context / struct verbs_device, so code that reaches past struct ibv_context (the verbs.h
 * inlines, the providers' dv libraries) finds what a real provider leaves there.
 *
 *   fakelib_layout <device>
 *
 * verbs_get_ctx() returns the context's verbs_context (abi_compat = __VERBS_ABI_IS_EXTENDED, sz
 * its size); ibv_query_device_ex takes the legacy path and agrees with ibv_query_device;
 * ibv_query_port answers through the inline; ibv_create_cq_ex, which needs an op the fake does
 * not model, is NULL with EOPNOTSUPP. The device's verbs_device ops pointer is NULL. libefa's
 * efadv_query_device and libmlx5's mlx5dv_query_device / mlx5dv_is_supported, loaded with
 * dlopen when installed, answer "not my device" (EOPNOTSUPP / false) instead of crashing.
 * Exit 0 when all hold, 1 otherwise, 2 on a setup failure.
 */
#include "check.h"
#include "qp_pair.h"

#include <infiniband/efadv.h>
#include <infiniband/mlx5dv.h>

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

static void* open_provider(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) printf("skipped: %s is not installed (%s)\n", soname, dlerror());
  return h;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <device>\n", argv[0]);
    return 2;
  }
  struct ibv_context* ctx = pair_open(argv[1]);
  if (!ctx) return 2;

  struct verbs_context* vctx = verbs_get_ctx(ctx);
  CHECK(vctx != NULL && &vctx->context == ctx, "verbs_get_ctx() finds the context's struct verbs_context");
  CHECK(vctx && vctx->sz == sizeof(struct verbs_context), "its sz is sizeof(struct verbs_context) (%zu)",
        vctx ? vctx->sz : (size_t)0);
  CHECK(vctx && !vctx->query_device_ex && !vctx->create_cq_ex && !vctx->query_port,
        "the ops the fake does not model are NULL");

  struct ibv_device_attr da;
  struct ibv_device_attr_ex dx;
  memset(&dx, 0xa5, sizeof dx);
  const int rq = ibv_query_device(ctx, &da);
  const int rx = ibv_query_device_ex(ctx, NULL, &dx);
  CHECK(rq == 0 && rx == 0 && dx.orig_attr.max_qp == da.max_qp &&
            dx.orig_attr.phys_port_cnt == da.phys_port_cnt && dx.comp_mask == 0,
        "ibv_query_device_ex takes the legacy path and agrees with ibv_query_device (rc %d/%d)", rq, rx);
  struct ibv_port_attr pa;
  CHECK(ibv_query_port(ctx, 1, &pa) == 0, "ibv_query_port answers through the verbs.h inline");
  struct ibv_cq_init_attr_ex ca;
  memset(&ca, 0, sizeof ca);
  ca.cqe = 4;
  errno = 0;
  CHECK(ibv_create_cq_ex(ctx, &ca) == NULL && errno == EOPNOTSUPP, "ibv_create_cq_ex: NULL, EOPNOTSUPP (%d)",
        errno);

  /* rdma-core's struct verbs_device (driver.h) starts with the ibv_device, then the ops. */
  const void* ops = NULL;
  memcpy(&ops, (const char*)ctx->device + sizeof(struct ibv_device), sizeof ops);
  CHECK(ops == NULL, "the device's verbs_device ops pointer is NULL (no provider drives it)");

  void* efa = open_provider("libefa.so.1");
  if (efa) {
    int (*query)(struct ibv_context*, struct efadv_device_attr*, uint32_t) = NULL;
    void* sym = dlsym(efa, "efadv_query_device");
    memcpy(&query, &sym, sizeof sym); /* POSIX: a dlsym result may be a function pointer */
    struct efadv_device_attr ea;
    memset(&ea, 0, sizeof ea);
    const int r = query ? query(ctx, &ea, sizeof ea) : -1;
    CHECK(r == EOPNOTSUPP, "libefa's efadv_query_device on a fake device: EOPNOTSUPP (%d)", r);
  }
  void* mlx5 = open_provider("libmlx5.so.1");
  if (mlx5) {
    int (*query)(struct ibv_context*, struct mlx5dv_context*) = NULL;
    bool (*supported)(struct ibv_device*) = NULL;
    void* sym = dlsym(mlx5, "mlx5dv_query_device");
    memcpy(&query, &sym, sizeof sym);
    sym = dlsym(mlx5, "mlx5dv_is_supported");
    memcpy(&supported, &sym, sizeof sym);
    struct mlx5dv_context mc;
    memset(&mc, 0, sizeof mc);
    const int r = query ? query(ctx, &mc) : -1;
    CHECK(r == EOPNOTSUPP, "libmlx5's mlx5dv_query_device on a fake device: EOPNOTSUPP (%d)", r);
    CHECK(supported && !supported(ctx->device), "mlx5dv_is_supported: false");
  }
  ibv_close_device(ctx);
  printf("%s\n", failures ? "layout checks FAILED" : "layout checks passed");
  return failures ? 1 : 0;
}
