/* One sequence of GID reads, run through both C fronts over the fake model: the drop-in
 * libibverbs.so.1 (fakelib_gid_fronts, a C program) and the in-process C ABI
 * (gidpolicy::fakes::c_abi, a unit test). Both print the same transcript and compare it with the
 * same expected file (tests/data/c_fronts/<table>.expected), so the two fronts cannot drift
 * apart: every errno, gid_type, index, byte zeroed and byte left alone is in the transcript.
 *
 * The sequence, per device: query_gid, _ibv_query_gid_ex and its tail (the bytes past the struct
 * of a larger caller struct) for ports 0-2, after query_port for ports 0-3
 * (never without a buffer: verbs.h's inline zeroes it first, so a NULL one crashes in libibverbs too) and
 * indices -1..17; query_gid_ex with a flag, a short entry_size, no buffer; _ibv_query_gid_table with room for
 * 64, 1 and 0 entries, with a flag, and with a larger stride. Then the three calls on a context no front
 * handed out. C99 and C++: a static function over a table of function pointers, written to a FILE. */
#ifndef GIDPOLICY_TESTS_FAKELIB_GID_SEQUENCE_H
#define GIDPOLICY_TESTS_FAKELIB_GID_SEQUENCE_H

#include <infiniband/verbs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

struct gid_fronts_ops {
  struct ibv_device** (*get_device_list)(int* num_devices);
  void (*free_device_list)(struct ibv_device** list);
  const char* (*get_device_name)(struct ibv_device* device);
  struct ibv_context* (*open_device)(struct ibv_device* device);
  int (*close_device)(struct ibv_context* context);
  int (*query_port)(struct ibv_context* context, uint8_t port_num, struct ibv_port_attr* attr);
  int (*query_gid)(struct ibv_context* context, uint8_t port_num, int index, union ibv_gid* gid);
  int (*query_gid_ex)(struct ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry* entry, uint32_t flags, size_t entry_size);
  ssize_t (*query_gid_table)(struct ibv_context* context, struct ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size);
};

/* An entry followed by 8 bytes a larger caller struct would have: they must come back zeroed. */
union gid_seq_big_entry {
  struct ibv_gid_entry e;
  unsigned char bytes[sizeof(struct ibv_gid_entry) + 8];
};

static void gid_seq_hex(FILE* out, const unsigned char* raw) {
  int i;
  for (i = 0; i < 16; ++i) fprintf(out, "%02x", raw[i]);
}

static const char* gid_seq_tail(const unsigned char* bytes) {
  size_t i;
  int zero = 1, kept = 1;
  for (i = sizeof(struct ibv_gid_entry); i < sizeof(struct ibv_gid_entry) + 8; ++i) {
    if (bytes[i] != 0) zero = 0;
    if (bytes[i] != 0xab) kept = 0;
  }
  return zero ? "zeroed" : kept ? "untouched" : "garbled";
}

/* Every field of ibv_port_attr both fronts write (the drop-in's ABI stops before
 * port_cap_flags2, so that one is not compared). */
static void gid_seq_port(FILE* out, const struct gid_fronts_ops* ops, struct ibv_context* ctx,
                         unsigned port) {
  struct ibv_port_attr a;
  int rc;
  memset(&a, 0xab, sizeof a);
  rc = ops->query_port(ctx, (uint8_t)port, &a);
  fprintf(out, "query_port %u: %d", port, rc);
  if (rc == 0)
    fprintf(out,
            " state %d max_mtu %d active_mtu %d gid_tbl_len %d port_cap_flags 0x%x max_msg_sz %u"
            " bad_pkey_cntr %u qkey_viol_cntr %u pkey_tbl_len %u lid %u sm_lid %u lmc %u max_vl_num %u"
            " sm_sl %u subnet_timeout %u init_type_reply %u active_width %u active_speed %u"
            " phys_state %u link_layer %u flags %u",
            (int)a.state, (int)a.max_mtu, (int)a.active_mtu, a.gid_tbl_len, a.port_cap_flags, a.max_msg_sz,
            a.bad_pkey_cntr, a.qkey_viol_cntr, a.pkey_tbl_len, a.lid, a.sm_lid, a.lmc, a.max_vl_num, a.sm_sl,
            a.subnet_timeout, a.init_type_reply, a.active_width, a.active_speed, a.phys_state, a.link_layer,
            a.flags);
  fprintf(out, "\n");
}

static void gid_seq_entry(FILE* out, const struct ibv_gid_entry* e) {
  fprintf(out, " gid ");
  gid_seq_hex(out, e->gid.raw);
  fprintf(out, " index %u port %u type %u ifindex %u", e->gid_index, e->port_num, e->gid_type,
          e->ndev_ifindex);
}

static void gid_seq_table(FILE* out, const struct gid_fronts_ops* ops, struct ibv_context* ctx, size_t max,
                          uint32_t flags, int wide) {
  static union gid_seq_big_entry big[64];
  static struct ibv_gid_entry plain[64];
  const size_t stride = wide ? sizeof(union gid_seq_big_entry) : sizeof(struct ibv_gid_entry);
  ssize_t n, i;
  memset(big, 0xab, sizeof big);
  memset(plain, 0xab, sizeof plain);
  n = ops->query_gid_table(ctx, wide ? &big[0].e : plain, max, flags, stride);
  fprintf(out, "query_gid_table max %zu flags %u stride %s: %zd\n", max, flags, wide ? "wide" : "plain", n);
  for (i = 0; i < n && i < 64; ++i) {
    fprintf(out, "  [%zd]", i);
    gid_seq_entry(out, wide ? &big[i].e : &plain[i]);
    if (wide) fprintf(out, " tail %s", gid_seq_tail(big[i].bytes));
    fprintf(out, "\n");
  }
}

/* Run the sequence; 0 when the device list could be read. */
static int gid_sequence(const struct gid_fronts_ops* ops, FILE* out) {
  struct ibv_device** list;
  struct ibv_context bogus;
  union gid_seq_big_entry big;
  struct ibv_port_attr bogus_port; /* whole: verbs.h's inline zeroes all of it before the call */
  union ibv_gid gid;
  int num = 0, d, index, rc;
  unsigned port;

  list = ops->get_device_list(&num);
  fprintf(out, "devices %d\n", num);
  if (!list) return -1;
  for (d = 0; d < num; ++d) {
    struct ibv_context* ctx = ops->open_device(list[d]);
    int node_type, transport;
    /* Copied as integers: Apple's transport (100) is outside enum ibv_transport_type, and this
     * header is compiled as C++ too, where loading such an enum value is undefined. */
    memcpy(&node_type, &list[d]->node_type, sizeof node_type);
    memcpy(&transport, &list[d]->transport_type, sizeof transport);
    fprintf(out, "device %s: %s node_type %d transport %d dev_name %s\n", ops->get_device_name(list[d]),
            ctx ? "open" : "not open", node_type, transport, list[d]->dev_name);
    if (!ctx) continue;
    for (port = 0; port <= 3; ++port) gid_seq_port(out, ops, ctx, port);
    for (port = 0; port <= 2; ++port) {
      for (index = -1; index <= 17; ++index) {
        memset(&gid, 0xab, sizeof gid);
        errno = 0;
        rc = ops->query_gid(ctx, (uint8_t)port, index, &gid);
        fprintf(out, "query_gid %u %d: %d", port, index, rc);
        if (rc == 0) {
          fprintf(out, " ");
          gid_seq_hex(out, gid.raw);
        } else {
          fprintf(out, " errno %d", errno);
        }
        fprintf(out, "\n");
        if (index < 0) continue;
        memset(&big, 0xab, sizeof big);
        rc = ops->query_gid_ex(ctx, port, (uint32_t)index, &big.e, 0, sizeof big);
        fprintf(out, "query_gid_ex %u %d: %d", port, index, rc);
        if (rc == 0) gid_seq_entry(out, &big.e);
        fprintf(out, " tail %s\n", gid_seq_tail(big.bytes));
      }
    }
    memset(&big, 0xab, sizeof big);
    fprintf(out, "query_gid_ex flags 1: %d\n", ops->query_gid_ex(ctx, 1, 0, &big.e, 1, sizeof big.e));
    fprintf(out, "query_gid_ex flags 0x80000000: %d\n",
            ops->query_gid_ex(ctx, 1, 0, &big.e, 0x80000000u, sizeof big.e));
    fprintf(out, "query_gid_ex entry_size short: %d\n",
            ops->query_gid_ex(ctx, 1, 0, &big.e, 0, sizeof big.e - 1));
    fprintf(out, "query_gid_ex no entry: %d\n", ops->query_gid_ex(ctx, 1, 0, NULL, 0, sizeof big.e));
    gid_seq_table(out, ops, ctx, 64, 0, 0);
    gid_seq_table(out, ops, ctx, 64, 0, 1);
    gid_seq_table(out, ops, ctx, 1, 0, 0);
    gid_seq_table(out, ops, ctx, 0, 0, 0);
    gid_seq_table(out, ops, ctx, 64, 1, 0);
    fprintf(out, "close: %d\n", ops->close_device(ctx));
  }
  /* A device no front handed out, even one carrying a real device's name: ENODEV. */
  if (num > 0) {
    static struct ibv_device fake_device;
    struct ibv_context* opened;
    memcpy(&fake_device, list[0], sizeof fake_device);
    errno = 0;
    opened = ops->open_device(&fake_device);
    rc = errno; /* read after the call: argument evaluation order is unspecified */
    fprintf(out, "foreign device open_device: %s errno %d\n", opened ? "open" : "NULL", rc);
    if (opened) ops->close_device(opened);
  }
  /* A context no front handed out: refused, never read. */
  memset(&bogus, 0, sizeof bogus);
  fprintf(out, "foreign context close_device: %d\n", ops->close_device(&bogus));
  errno = 0;
  rc = ops->query_gid(&bogus, 1, 0, &gid);
  fprintf(out, "foreign context query_gid: %d errno %d\n", rc, errno);
  fprintf(out, "foreign context query_port: %d\n", ops->query_port(&bogus, 1, &bogus_port));
  fprintf(out, "foreign context query_gid_ex: %d\n",
          ops->query_gid_ex(&bogus, 1, 0, &big.e, 0, sizeof big.e));
  gid_seq_table(out, ops, &bogus, 64, 0, 0);
  ops->free_device_list(list);
  return 0;
}

#endif
