/* fakelib_gid_calls: the GID-reading calls of the fake libibverbs.so.1 keep rdma-core's
 * semantics, through the verbs.h inlines a program compiles against. Run on
 * examples/tables/nccl-1573-pod.show_gids.txt (device mlx5_0: slots 0-3 empty, 4/5 fe80 v1/v2,
 * 6/7 ::ffff:10.152.0.12 v1/v2; device mlx5_1 likewise with 10.152.4.12).
 *
 *  - ibv_query_port (the _compat_ibv_port_attr path): Ethernet, gid_tbl_len covers index 7;
 *  - ibv_query_gid: an empty slot is a success with zeros; past gid_tbl_len is -1;
 *  - ibv_query_gid_ex: an empty slot is ENODATA; a valid one has its type and index;
 *  - ibv_query_gid_table: the valid entries of every port, a count; too small a buffer: -EINVAL;
 *  - ibv_query_gid_type (rdma-core private): an empty slot reads "IB/RoCE v1" with success.
 * Exit 0 when every check holds, 1 otherwise (each failure is printed), 2 on setup failure.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* rdma-core private (driver.h); 0 = IB/RoCE v1, 1 = RoCE v2. */
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index, int* type);

#include "check.h"

static int is_zero(const union ibv_gid* g) {
  static const unsigned char zero[16];
  return memcmp(g->raw, zero, 16) == 0;
}

int main(void) {
  struct ibv_device** list;
  struct ibv_context* ctx;
  struct ibv_port_attr port;
  union ibv_gid gid;
  struct ibv_gid_entry entry, table[16];
  ssize_t n;
  int num = 0, type = -1, rc, tbl_len;

  list = ibv_get_device_list(&num);
  if (!list || num != 2) {
    printf("expected the table's two devices, got %d\n", num);
    return 2;
  }
  CHECK(strcmp(ibv_get_device_name(list[0]), "mlx5_0") == 0, "first device is mlx5_0");
  ctx = ibv_open_device(list[0]);
  if (!ctx) return 2;

  memset(&port, 0xab, sizeof port);
  rc = ibv_query_port(ctx, 1, &port);
  CHECK(rc == 0 && port.link_layer == IBV_LINK_LAYER_ETHERNET && port.state == IBV_PORT_ACTIVE,
        "query_port: active Ethernet port");
  tbl_len = port.gid_tbl_len;
  CHECK(tbl_len >= 8, "query_port: gid_tbl_len %d covers index 7", tbl_len);
  CHECK(ibv_query_port(ctx, 2, &port) != 0, "query_port: port 2 does not exist");

  memset(&gid, 0xab, sizeof gid);
  CHECK(ibv_query_gid(ctx, 1, 2, &gid) == 0 && is_zero(&gid),
        "query_gid: empty slot 2 is a success with zeros");
  CHECK(ibv_query_gid(ctx, 1, 7, &gid) == 0 && gid.raw[10] == 0xff && gid.raw[12] == 10 && gid.raw[13] == 152,
        "query_gid: slot 7 holds ::ffff:10.152.0.12");
  CHECK(ibv_query_gid(ctx, 1, tbl_len, &gid) == -1, "query_gid: index gid_tbl_len is -1");

  rc = ibv_query_gid_ex(ctx, 1, 2, &entry, 0);
  CHECK(rc == ENODATA, "query_gid_ex: empty slot 2 is ENODATA (got %d)", rc);
  rc = ibv_query_gid_ex(ctx, 1, 7, &entry, 0);
  CHECK(rc == 0 && entry.gid_index == 7 && entry.port_num == 1 && entry.gid_type == IBV_GID_TYPE_ROCE_V2,
        "query_gid_ex: slot 7 is RoCE v2 at index 7 port 1");
  rc = ibv_query_gid_ex(ctx, 1, 6, &entry, 0);
  CHECK(rc == 0 && entry.gid_type == IBV_GID_TYPE_ROCE_V1, "query_gid_ex: slot 6 is RoCE v1");
  rc = ibv_query_gid_ex(ctx, 1, (uint32_t)tbl_len, &entry, 0);
  CHECK(rc == EINVAL, "query_gid_ex: index gid_tbl_len is EINVAL (got %d)", rc);

  n = ibv_query_gid_table(ctx, table, 16, 0);
  CHECK(n == 4, "query_gid_table: 4 valid entries (got %zd)", n);
  CHECK(n == 4 && table[0].gid_index == 4 && table[3].gid_index == 7 &&
            table[3].gid_type == IBV_GID_TYPE_ROCE_V2,
        "query_gid_table: indices 4..7 in order");
  n = ibv_query_gid_table(ctx, table, 2, 0);
  CHECK(n == -EINVAL, "query_gid_table: a 2-entry buffer is -EINVAL (got %zd)", n);

  CHECK(ibv_query_gid_type(ctx, 1, 2, &type) == 0 && type == 0,
        "query_gid_type: empty slot 2 reads IB/RoCE v1");
  CHECK(ibv_query_gid_type(ctx, 1, 7, &type) == 0 && type == 1, "query_gid_type: slot 7 reads RoCE v2");

  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return failures ? 1 : 0;
}
