/* gidpolicy.h: the C API of gidpolicy (C99, also usable from C++).
 *
 * Choose the RDMA GID a side advertises to its peer and build the queue pair's INIT->RTR
 * attributes from that same choice, so the advertised GID and the routed sgid_index always name
 * the same table entry. This is the API for C code bases (ds4) and for anything that wants a
 * stable ABI instead of gidpolicy's C++ headers.
 *
 * The flow, in the order a connection setup calls it:
 *
 *   gidpolicy_profile_parse("auto", &profile, err, sizeof err);          once, at start-up
 *   gidpolicy_snapshot(&fns, ctx, port, 0, &table, err, sizeof err);     after ibv_open_device
 *   gidpolicy_select(profile, table, &plan, err, sizeof err);            the decision
 *   gidpolicy_plan_gid(plan, my_gid);                                    advertise these 16 bytes
 *   ... exchange QPN, PSN, GID (and MTU) with the peer ...
 *   gidpolicy_rtr_options_init(&o); o.qp_type = IBV_QPT_RC;             the QP's own type
 *   gidpolicy_rtr_fill(plan, &peer, &o, &attr, &mask, err, sizeof err); RTR from the same pick
 *   gidpolicy_preflight_plan(&fns, ctx, port, plan, err, sizeof err);   the slot still holds it?
 *   rc = ibv_modify_qp(qp, &attr, mask);
 *   if (rc) gidpolicy_explain_errno(rc, GIDPOLICY_PLATFORM_AUTO, plan, &peer, msg, sizeof msg);
 *
 * Not in <gidpolicy/gidpolicy.hpp>: this is the C API (C99, linked as gidpolicy::c), whose handles
 * wrap the C++ types the front door declares; a C++ program uses those types directly.
 *
 * Names (docs/concepts.md): a gidpolicy_profile is a policy and its source-index rule (C++
 * gidpolicy::Profile); a gidpolicy_plan is what it makes of one table: the selection (entry and
 * trace), the sgid_index it routes from and their agreement (C++ gidpolicy::Plan).
 *
 * Hardware gotchas this API exists for (sources: docs/facts.md in the gidpolicy repository):
 *  - JACCL advertises the first IPv4-mapped GID but routes from the literal index 1: on a Mac
 *    mini with that GID at index 2 the RTR fails with errno 22 (MLX PR 3389).
 *  - ds4's macOS path accepts any forced index ibv_query_gid can read, zeros included, and casts
 *    it to uint8_t: index 257 silently routes from index 1 ("ds4:index=N" reproduces it). Its
 *    Linux RoCE path validates a forced index (RoCE v2, non-zero, in range, <= 255):
 *    "ds4-linux:local=ADDR,index=N".
 *  - An index is not a stable name for a GID: after a port flap the same address can come back
 *    at another index (NCCL 2157). gidpolicy_preflight_*() re-read the entry right before
 *    modify_qp; repeated failed RTRs reportedly wedge Apple's Thunderbolt port until reboot, so
 *    failing before modify_qp matters.
 *  - mlx5 lists each address twice, as RoCE v1 and v2 with the same bytes; after a link flap the
 *    twins can swap indices, and routing from the v1 twin passes RTR and then times out.
 *    gidpolicy_preflight_plan() and gidpolicy_preflight_live_typed() check the type too.
 *  - The same errno means different things per platform (61 is ENODATA on Linux and
 *    ECONNREFUSED on Darwin): gidpolicy_explain_errno() takes the platform.
 *
 * Conventions:
 *  - Every fallible function returns a gidpolicy_status (GIDPOLICY_OK is 0) and takes a
 *    caller-owned message buffer `char *err, size_t errlen` as its last two arguments, in ds4's
 *    style. On failure it holds one NUL-terminated, possibly truncated, explanation ("index 1 is
 *    empty; ..."); on success it holds "". `err` may be NULL (and `errlen` 0).
 *  - Text getters are snprintf-like: they write at most `len` bytes including the NUL and return
 *    the length of the whole text, so `n = f(..., NULL, 0)` sizes a buffer of n + 1 bytes.
 *  - Handles are opaque, allocated by gidpolicy and released only by the matching
 *    gidpolicy_*_free() (which accepts NULL). Nothing else is allocated for the caller. A handle is
 *    immutable once returned: it may be read from several threads at once.
 *  - GIDs are 16 bytes in wire order, exactly `union ibv_gid`'s `raw`.
 *  - No C++ exception crosses this API; an allocation failure is GIDPOLICY_ERR_NO_MEMORY.
 *  - The header needs no <infiniband/verbs.h>: verbs types appear only behind pointers. Include
 *    verbs.h yourself to fill or read them.
 *
 * Libraries (CMake targets / pkg-config names):
 *  - gidpolicy::c  (gidpolicy-c.pc): everything here except the functions marked "c_verbs".
 *    It does not link libibverbs: programs that dlopen it (ds4, JACCL) hand over their own
 *    function pointers in a gidpolicy_verbs_fns.
 *  - gidpolicy::c_verbs  (gidpolicy-c-verbs.pc): gidpolicy_verbs_fns_libibverbs() and
 *    gidpolicy_snapshot_context(), for programs that link libibverbs and hold an ibv_context.
 */
#ifndef GIDPOLICY_GIDPOLICY_H
#define GIDPOLICY_GIDPOLICY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Declared at file scope so that the prototypes below name libibverbs' own types. */
struct ibv_context;
struct ibv_device;
struct ibv_port_attr;
struct ibv_gid_entry;
struct ibv_qp_attr;
struct ibv_async_event;
union ibv_gid;

/** The version of this API; bumped when a function or struct changes incompatibly. */
#define GIDPOLICY_C_API_VERSION 2 /* 2: gidpolicy_rtr_fill() needs options with the QP type */

/* ------------------------------------------------------------------------------------------ */
/* Status codes                                                                               */

/** What went wrong. The message buffer says which entry, index, call or position. */
typedef enum gidpolicy_status {
  GIDPOLICY_OK = 0,
  GIDPOLICY_ERR_INVALID_ARGUMENT = 1, /**< a NULL handle/pointer, port outside 1..255, bad option */
  GIDPOLICY_ERR_INVALID_SPEC = 2,     /**< a policy spec that does not parse (position, token) */
  GIDPOLICY_ERR_PARSE = 3,            /**< a GID text or table document that does not parse */
  GIDPOLICY_ERR_NO_CANDIDATE = 4,     /**< the policy found no acceptable entry, or rejected the
                                           forced index (empty, zero, wrong type, > 255...) */
  GIDPOLICY_ERR_DRIVER = 5,           /**< a verbs call failed, or answered what no driver can mean
                                           (EPROTO: a negative gid_tbl_len, an active_mtu outside
                                           1..5, a device name that breaks the name rule): the
                                           message names the call and its errno */
  GIDPOLICY_ERR_PORT_NOT_ACTIVE = 6,  /**< the port is not ACTIVE/ARMED: its table is not meaningful */
  GIDPOLICY_ERR_NOT_SUPPORTED = 7,    /**< missing function pointers, a UD queue pair, ... */
  GIDPOLICY_ERR_RTR = 8,              /**< RTR refused before the driver: zero peer GID, IPv4/IPv6
                                           family mismatch, RoCE v1/v2 mismatch, a path MTU above
                                           either side's */
  GIDPOLICY_ERR_DISAGREEMENT = 9,     /**< the entry at sgid_index does not hold the advertised GID */
  GIDPOLICY_ERR_GID_CHANGED = 10,     /**< the table changed since the snapshot (re-select) */
  GIDPOLICY_ERR_NO_MEMORY = 11,       /**< an allocation failed */
  GIDPOLICY_ERR_INTERNAL = 12         /**< a bug in gidpolicy: please report the message */
} gidpolicy_status;

/** "GIDPOLICY_OK", "GIDPOLICY_ERR_NO_CANDIDATE", ...; "unknown" for any other value. Static
 *  string. Takes an int so that a status kept in an int (or a future code) is always accepted. */
const char* gidpolicy_status_name(int status);

/* ------------------------------------------------------------------------------------------ */
/* GIDs                                                                                       */

/** The kernel's GID type of an entry (what ibv_gid_entry::gid_type and sysfs say). */
typedef enum gidpolicy_gid_type {
  GIDPOLICY_GID_TYPE_UNKNOWN = 0, /**< not reported (ibv_query_gid, ibv_devinfo without ", RoCE vN") */
  GIDPOLICY_GID_TYPE_IB = 1,
  GIDPOLICY_GID_TYPE_ROCE_V1 = 2,
  GIDPOLICY_GID_TYPE_ROCE_V2 = 3
} gidpolicy_gid_type;

/** Parse any GID text people paste ("::ffff:10.0.0.1", "fe80::1", the 8x4 hex form of sysfs
 *  and ibv_devinfo) into 16 wire-order bytes. An IPv4 dotted quad becomes ::ffff:a.b.c.d.
 *  Error: GIDPOLICY_ERR_PARSE naming the position.
 *  Example: uint8_t g[16]; gidpolicy_gid_parse("::ffff:10.0.0.1", g, err, sizeof err); */
gidpolicy_status gidpolicy_gid_parse(const char* text, uint8_t gid[16], char* err, size_t errlen);

/** Compressed text of a GID ("::ffff:10.0.0.1", "fe80::1"); snprintf-like. A GID text fits in
 *  46 bytes (GIDPOLICY_GID_STRLEN). */
size_t gidpolicy_gid_to_string(const uint8_t gid[16], char* buf, size_t len);
#define GIDPOLICY_GID_STRLEN 46

/* ------------------------------------------------------------------------------------------ */
/* Profiles                                                                                   */

/** A parsed profile spec: a policy (which entry to pick) and its source-index rule (which index
 *  to route from). C++: gidpolicy::Profile. */
typedef struct gidpolicy_profile gidpolicy_profile;

/** Parse a profile spec, the same grammar as the CLI's --policy and C++'s parse_profile():
 *    "auto"                          the recommended ranking (IPv4-mapped RoCE v2 first, never a
 *                                    link-local GID on Ethernet/Thunderbolt)
 *    "auto:family=ipv4,roce=v2,subnet=10.0.0.0/8"
 *    "validated:index=3,type=roce_v2" a forced index, checked (ds4's --rdma-gid-index, fixed)
 *    "ds4" / "ds4:index=N"           ds4's macOS path as it ships (forced index accepted unchecked)
 *    "ds4-linux:local=10.0.0.1"      ds4's Linux RoCE path, tp_rdma_linux_gid (non-zero RoCE v2, the
 *                                    control socket's address first); ",index=N" its forced index
 *    "jaccl-fixed"                   JACCL's first IPv4-mapped GID, routed from where it was found
 *    "jaccl"                         JACCL as it ships: routes from the literal index 1 (may
 *                                    disagree: kept to reproduce the bug, see gidpolicy_plan_agrees)
 *    "first(validated:index=3|auto)", "per-device(mlx5_0=validated:index=7;*=auto)"
 *  Error: GIDPOLICY_ERR_INVALID_SPEC, "at position P: expected ..., found '...'".
 *  Example: gidpolicy_profile *p; if (gidpolicy_profile_parse(getenv("GID_POLICY"), &p, err, sizeof err))
 *             fprintf(stderr, "GID_POLICY: %s\n", err);
 */
gidpolicy_status gidpolicy_profile_parse(const char* spec, gidpolicy_profile** out, char* err, size_t errlen);

/** The canonical spec of a profile (parses back to an equal profile); snprintf-like. */
size_t gidpolicy_profile_spec(const gidpolicy_profile* profile, char* buf, size_t len);

/** Release a profile. NULL is ignored. */
void gidpolicy_profile_free(gidpolicy_profile* profile);

/* ------------------------------------------------------------------------------------------ */
/* Tables: snapshots of one port's GID table                                                  */

/** One port's GID table, read once. Selection and RTR work on this value, not on the device. */
typedef struct gidpolicy_table gidpolicy_table;

/** libibverbs entry points, each with the signature of the exported function of that name:
 *  what a program that dlopen()s libibverbs (ds4's API struct, JACCL's IBVWrapper) already holds.
 *
 *  - query_port: the exported `ibv_query_port` symbol (dlsym finds the IBVERBS_1.1 entry, which
 *    fills only rdma-core's compat prefix of struct ibv_port_attr; gidpolicy zeroes the struct
 *    first, as verbs.h's inline does). In C, `ibv_query_port` is a macro: assign a wrapper
 *    function, or the dlsym() result. Required.
 *  - query_gid: `ibv_query_gid`; an empty in-range slot reads as success and 16 zero bytes.
 *  - query_gid_ex: verbs.h's inline `ibv_query_gid_ex` form (5 arguments), through a wrapper;
 *    query_gid_ex_sized: the exported `_ibv_query_gid_ex` (6 arguments, what dlsym finds,
 *    rdma-core >= v32). They add the GID type and netdev; an empty slot fails with ENODATA.
 *  At least one of query_gid, query_gid_ex, query_gid_ex_sized is required; the richest one
 *  present is used (query_gid_ex*, then query_gid). get_device_name is optional (without it the
 *  name is read from ctx->device->name). Unused members must be NULL: zero-initialise the struct. */
typedef struct gidpolicy_verbs_fns {
  int (*query_port)(struct ibv_context* context, uint8_t port_num, struct ibv_port_attr* port_attr);
  int (*query_gid)(struct ibv_context* context, uint8_t port_num, int index, union ibv_gid* gid);
  int (*query_gid_ex)(struct ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry* entry, uint32_t flags);
  int (*query_gid_ex_sized)(struct ibv_context* context, uint32_t port_num, uint32_t gid_index,
                            struct ibv_gid_entry* entry, uint32_t flags, size_t entry_size);
  const char* (*get_device_name)(struct ibv_device* device);
} gidpolicy_verbs_fns;

/** Flags of gidpolicy_snapshot(). */
enum {
  /** Read a port that is not ACTIVE/ARMED anyway (its GIDs may not be there yet). */
  GIDPOLICY_SNAPSHOT_ALLOW_INACTIVE = 1u << 0,
  /** Stop at the first usable IPv4-mapped entry, as JACCL's own scan does: k+1 GID reads for an
   *  entry at index k instead of gid_tbl_len. Later slots are then "not shown", not empty, so a
   *  policy that looks past the stop (auto, ds4-linux) sees fewer candidates. */
  GIDPOLICY_SNAPSHOT_STOP_AT_IPV4_MAPPED = 1u << 1,
  /** Keep each entry's ndev_ifindex but do not turn it into a netdev name (if_indextoname()):
   *  for contexts whose ifindex values mean nothing in this network namespace (a fake, a pod). */
  GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES = 1u << 2,
  /** Read every index below gid_tbl_len. Without it a per-index scan stops at 256 (what a
   *  uint8_t sgid_index can name) and later slots are "not shown". Either way a gid_tbl_len that
   *  is negative or above 65536 is GIDPOLICY_ERR_DRIVER (EPROTO), not minutes of reads. */
  GIDPOLICY_SNAPSHOT_WHOLE_TABLE = 1u << 3
};

/** Snapshot port `port` (1..255) of an open context through the caller's function pointers.
 *  Nothing is kept: the context is not closed and may be used concurrently by the caller only
 *  if its verbs functions allow that. A slot whose read fails with an errno other than "empty"
 *  becomes an unreadable entry (selection skips it), not an error.
 *  The port's active MTU is what query_port reports; an active_mtu outside 1..5 (IBV_MTU_256 ..
 *  IBV_MTU_4096) is an unknown MTU, refused (never taken as 1024, which would become the path
 *  MTU of every RTR). The device name (get_device_name, else ctx->device->name) follows the
 *  device-name rule: 1-63 bytes of printable ASCII without spaces or '/'; a name with a newline,
 *  an escape sequence or bytes that are not ASCII is refused, shown quoted with \xNN escapes.
 *  Errors: GIDPOLICY_ERR_INVALID_ARGUMENT (NULL fns/ctx/out, port 0, unknown flags),
 *  GIDPOLICY_ERR_NOT_SUPPORTED (no query_port or no GID read), GIDPOLICY_ERR_DRIVER (query_port
 *  failed: errno in the message; EPROTO for a gid_tbl_len below 0 or above 65536, an unknown
 *  active_mtu or a device name that breaks the rule), GIDPOLICY_ERR_PORT_NOT_ACTIVE.
 *  Example (ds4's API struct): gidpolicy_verbs_fns fns = {0}; fns.query_port = api->query_port;
 *                 fns.query_gid = api->query_gid;
 *                 gidpolicy_snapshot(&fns, ctx, 1, 0, &table, err, sizeof err); */
gidpolicy_status gidpolicy_snapshot(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                    uint32_t port, unsigned flags, gidpolicy_table** out, char* err,
                                    size_t errlen);

/** [c_verbs] Fill `fns` with the linked libibverbs' functions (wrappers of the verbs.h inlines).
 *  Lives in gidpolicy::c_verbs, which links libibverbs. */
void gidpolicy_verbs_fns_libibverbs(gidpolicy_verbs_fns* fns);

/** [c_verbs] gidpolicy_snapshot() through the linked libibverbs.
 *  Example (JACCL-style C++ or any linked program):
 *    gidpolicy_snapshot_context(ctx, 1, 0, &table, err, sizeof err); */
gidpolicy_status gidpolicy_snapshot_context(struct ibv_context* context, uint32_t port, unsigned flags,
                                            gidpolicy_table** out, char* err, size_t errlen);

/** A table from gidpolicy's canonical JSON document (the format of `gidpolicy snapshot --json`
 *  and examples/tables/): the port of `device` number `port`, or the first port when `device` is
 *  NULL. For tests, replays and offline checks.
 *  Errors: GIDPOLICY_ERR_PARSE (line/column or field path), GIDPOLICY_ERR_INVALID_ARGUMENT (no
 *  such port in the document). */
gidpolicy_status gidpolicy_table_from_json(const char* text, size_t text_len, const char* device,
                                           uint32_t port, gidpolicy_table** out, char* err, size_t errlen);

/** The table as a canonical JSON document (one port); snprintf-like. */
size_t gidpolicy_table_to_json(const gidpolicy_table* table, char* buf, size_t len);

/** gid_tbl_len when known, else one past the highest index present. */
uint32_t gidpolicy_table_length(const gidpolicy_table* table);

/** Release a table. NULL is ignored. */
void gidpolicy_table_free(gidpolicy_table* table);

/* ------------------------------------------------------------------------------------------ */
/* Plans                                                                                      */

/** What a profile makes of a table: the GID to advertise (the policy's selection and its trace),
 *  the index to route from, and whether they agree. C++: gidpolicy::Plan (with the table).
 *  It keeps a copy of the table, so the table may be freed before the plan. */
typedef struct gidpolicy_plan gidpolicy_plan;

/** Plan on `table` with `profile`. The trace (every entry looked at and why it was taken or rejected)
 *  is always recorded; on failure it follows the message in `err`.
 *  Errors: GIDPOLICY_ERR_NO_CANDIDATE ("no candidate: index 0: link-local fe80::... rejected on
 *  thunderbolt ...", or a per-device(...) spec that covers neither the table's device nor '*'),
 *  GIDPOLICY_ERR_INVALID_ARGUMENT. */
gidpolicy_status gidpolicy_select(const gidpolicy_profile* profile, const gidpolicy_table* table,
                                  gidpolicy_plan** out, char* err, size_t errlen);

/** ds4's port choice on Linux, for a "ds4-linux:local=ADDR[,index=N]" policy: run it on every
 *  table in `tables` (one per active port of the candidate devices: all, or --rdma-device's) and
 *  take the port whose pick is the control address, the first such; a port that alone picks
 *  anything is taken without a match. Several ports that pick and none holding the address is
 *  ds4's refusal, reproduced: picking one GID per port would connect where ds4 refuses. Ports
 *  that are not ACTIVE/ARMED are skipped. `*chosen` is the index into `tables`.
 *  Errors: GIDPOLICY_ERR_NO_CANDIDATE ("... 2 ports tie (...) and none holds the control address
 *  ...; use the direct RoCE address for --coordinator, or select --rdma-device and
 *  --rdma-gid-index", or the only port's own reason), GIDPOLICY_ERR_NOT_SUPPORTED (not a
 *  ds4-linux policy), GIDPOLICY_ERR_INVALID_ARGUMENT.
 *  Example (port k is ds4's): gidpolicy_select_port(pol, tables, n, &k, &plan, err, sizeof err); */
gidpolicy_status gidpolicy_select_port(const gidpolicy_profile* profile, const gidpolicy_table* const* tables,
                                       size_t count, size_t* chosen, gidpolicy_plan** out, char* err,
                                       size_t errlen);

/** The index of the chosen entry: its GID is what this side advertises. */
uint32_t gidpolicy_plan_index(const gidpolicy_plan* plan);
/** The sgid_index to route from: the chosen index, except under a spec ending in "@sgid=N" or
 *  the "jaccl" profile (the literal index 1). */
uint8_t gidpolicy_plan_sgid_index(const gidpolicy_plan* plan);
/** 1 when the entry at sgid_index holds the advertised GID (always, unless a literal index was
 *  asked for); 0 otherwise, with the reason in gidpolicy_plan_agreement(). */
int gidpolicy_plan_agrees(const gidpolicy_plan* plan);
/** One line: "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2";
 *  snprintf-like. */
size_t gidpolicy_plan_agreement(const gidpolicy_plan* plan, char* buf, size_t len);
/** The 16 bytes to advertise to the peer (wire order). */
void gidpolicy_plan_gid(const gidpolicy_plan* plan, uint8_t gid[16]);
/** The advertised GID's type (RoCE v1/v2...), GIDPOLICY_GID_TYPE_UNKNOWN when not read. */
gidpolicy_gid_type gidpolicy_plan_gid_type(const gidpolicy_plan* plan);
/** The printable trace: one line per policy tried, one indented line per entry; snprintf-like. */
size_t gidpolicy_plan_trace(const gidpolicy_plan* plan, char* buf, size_t len);
/** Release a plan. NULL is ignored. */
void gidpolicy_plan_free(gidpolicy_plan* plan);

/* ------------------------------------------------------------------------------------------ */
/* Watching a port: GID table changes as the kernel announces them                            */

/** Follows one port of an open context through its asynchronous events (IBV_EVENT_GID_CHANGE,
 *  IBV_EVENT_PORT_ACTIVE/ERR): after a link renegotiation or failover the kernel re-adds an
 *  address first-free, so the advertised GID can come back at another index (NCCL 2157). Use it
 *  from an event loop: poll gidpolicy_watch_fd() for POLLIN, then gidpolicy_watch_process()
 *  (never blocks). Not thread-safe; one watch per context and port (two readers of one
 *  context's events race for them). C++: gidpolicy::verbs::GidWatcher (also a thread form). */
typedef struct gidpolicy_watch gidpolicy_watch;

/** What happened to the followed GID (gidpolicy::ChangeKind). */
typedef enum gidpolicy_change_kind {
  GIDPOLICY_CHANGE_NONE = 0,         /**< nothing pending changed the port */
  GIDPOLICY_CHANGE_UNCHANGED = 1,    /**< the port changed, the followed entry did not */
  GIDPOLICY_CHANGE_MOVED = 2,        /**< same GID and type at another index */
  GIDPOLICY_CHANGE_DISAPPEARED = 3,  /**< no entry holds it any more */
  GIDPOLICY_CHANGE_REAPPEARED = 4,   /**< it was gone and is back */
  GIDPOLICY_CHANGE_TWIN_CHANGED = 5, /**< its other-RoCE-version twin came, went or moved */
  GIDPOLICY_CHANGE_UNTRACKED = 6     /**< the port changed and no GID is followed */
} gidpolicy_change_kind;

/** The event calls: the exported ibv_get_async_event / ibv_ack_async_event (IBVERBS_1.1). */
typedef struct gidpolicy_async_fns {
  int (*get_async_event)(struct ibv_context* context, struct ibv_async_event* event);
  void (*ack_async_event)(struct ibv_async_event* event);
} gidpolicy_async_fns;

/** Start watching `port` of `context` and follow the GID `follow` advertises (NULL: follow
 *  nothing until gidpolicy_watch_replan()). The first snapshot is taken now (a port that is
 *  down is read too). The context stays the caller's; its async_fd's flags are not changed.
 *  Errors: GIDPOLICY_ERR_INVALID_ARGUMENT, GIDPOLICY_ERR_NOT_SUPPORTED (no event calls, or a
 *  context without async_fd), GIDPOLICY_ERR_DRIVER.
 *  Example: gidpolicy_async_fns a = {api->get_async_event, api->ack_async_event};
 *           gidpolicy_watch_open(&fns, &a, ctx, 1, sel, &w, err, sizeof err); */
gidpolicy_status gidpolicy_watch_open(const gidpolicy_verbs_fns* fns, const gidpolicy_async_fns* async_fns,
                                      struct ibv_context* context, uint32_t port,
                                      const gidpolicy_plan* follow, gidpolicy_watch** out, char* err,
                                      size_t errlen);

/** [c_verbs] gidpolicy_watch_open() through the linked libibverbs. */
gidpolicy_status gidpolicy_watch_open_context(struct ibv_context* context, uint32_t port,
                                              const gidpolicy_plan* follow, gidpolicy_watch** out, char* err,
                                              size_t errlen);

/** The fd to poll for POLLIN (the context's async_fd). -1 for NULL. */
int gidpolicy_watch_fd(const gidpolicy_watch* watch);

/** Read and ack every pending event, re-read the port once, and say what happened to the
 *  followed GID in `*kind` (GIDPOLICY_CHANGE_NONE when nothing visible changed) and, when it is
 *  in the table, its index now in `*index` (else UINT32_MAX). A failed re-read is retried by
 *  the next call. Errors: GIDPOLICY_ERR_DRIVER, GIDPOLICY_ERR_INVALID_ARGUMENT. */
gidpolicy_status gidpolicy_watch_process(gidpolicy_watch* watch, gidpolicy_change_kind* kind, uint32_t* index,
                                         char* err, size_t errlen);

/** The last change as one line ("rdma_en2 port 1: ::ffff:169.254.10.2 (ib) moved from index 1 to
 *  3 [gid_change]"); "" before the first. snprintf-like. */
size_t gidpolicy_watch_describe(const gidpolicy_watch* watch, char* buf, size_t len);

/** The plan after the last change (gidpolicy::replan): the same GID followed to its new index when
 *  `profile` accepts it there, else selected again. `*tell_peer` is 1 when the GID to advertise
 *  differs from `current`'s (send it to the peer before the next RTR). On success the watch
 *  follows the new plan. With no change yet, `current` re-checked on the last table.
 *  Errors: GIDPOLICY_ERR_PORT_NOT_ACTIVE (the port is down), GIDPOLICY_ERR_NO_CANDIDATE (with the
 *  trace): advertise nothing and RTR nothing until a later change. */
gidpolicy_status gidpolicy_watch_replan(gidpolicy_watch* watch, const gidpolicy_profile* profile,
                                        const gidpolicy_plan* current, gidpolicy_plan** out, int* tell_peer,
                                        char* err, size_t errlen);

/** Stop watching (the context is not closed). NULL is ignored. */
void gidpolicy_watch_free(gidpolicy_watch* watch);

/** The callback form: a thread that polls the watch and calls `callback(user, kind, index,
 *  description)` for each change (the arguments of gidpolicy_watch_process() and the line of
 *  gidpolicy_watch_describe()), on the watch thread. A failed re-read calls it with
 *  GIDPOLICY_CHANGE_NONE, UINT32_MAX and the error message, and is retried 100 ms later. The
 *  context's verbs functions must then be safe to call from that thread (libibverbs' are). */
typedef struct gidpolicy_watch_thread gidpolicy_watch_thread;
typedef void (*gidpolicy_watch_callback)(void* user, gidpolicy_change_kind kind, uint32_t index,
                                         const char* description);

/** Move `*watch` into a new thread (`*watch` becomes NULL: the thread owns it).
 *  Errors: GIDPOLICY_ERR_INVALID_ARGUMENT, GIDPOLICY_ERR_DRIVER (the thread's stop signal).
 *  Example: gidpolicy_watch_thread_start(&w, on_change, &state, &t, err, sizeof err); */
gidpolicy_status gidpolicy_watch_thread_start(gidpolicy_watch** watch, gidpolicy_watch_callback callback,
                                              void* user, gidpolicy_watch_thread** out, char* err,
                                              size_t errlen);

/** Stop the thread (a callback in progress finishes first), join it, free it and its watch.
 *  NULL is ignored. Never call it from the callback. */
void gidpolicy_watch_thread_stop(gidpolicy_watch_thread* thread);

/* ------------------------------------------------------------------------------------------ */
/* RTR attributes                                                                             */

/** What the peer sent over the side channel. */
typedef struct gidpolicy_peer {
  uint32_t qpn;    /**< its QP number (24 bits): dest_qp_num */
  uint32_t psn;    /**< its starting PSN (24 bits): rq_psn */
  uint8_t gid[16]; /**< the GID it advertised: grh.dgid */
  uint16_t lid;    /**< its LID (InfiniBand without GRH); 0 on RoCE/Thunderbolt */
  int mtu;         /**< its active MTU as enum ibv_mtu (IBV_MTU_256=1 .. IBV_MTU_4096=5); 0 = not sent */
  int gid_type;    /**< gidpolicy_gid_type of its GID when it sent one; 0 = not sent */
} gidpolicy_peer;

/** Knobs of gidpolicy_rtr_fill(). Initialise with gidpolicy_rtr_options_init(), set qp_type, then
 *  change what else differs. */
typedef struct gidpolicy_rtr_options {
  int qp_type;                /**< enum ibv_qp_type the QP was created with: IBV_QPT_RC (2) or
                                   IBV_QPT_UC (3). Required: 0 (what init sets) is an error, because
                                   a guess is an EINVAL at RTR (RC needs MAX_DEST_RD_ATOMIC and
                                   MIN_RNR_TIMER, UC refuses them) */
  int path_mtu;               /**< enum ibv_mtu; 0 (default) = min(local active MTU, peer MTU) */
  uint8_t hop_limit;          /**< grh.hop_limit; default 64 (JACCL's 1 works on one L2 segment only) */
  uint8_t traffic_class;      /**< grh.traffic_class; default 0 */
  uint32_t flow_label;        /**< grh.flow_label (20 bits); default 0 */
  uint8_t service_level;      /**< ah_attr.sl; default 0 */
  uint8_t max_dest_rd_atomic; /**< RC only; default 1 */
  uint8_t min_rnr_timer;      /**< RC only; default 12 (0.64 ms) */
} gidpolicy_rtr_options;

/** Set the defaults documented in gidpolicy_rtr_options; qp_type is left 0 (unset). */
void gidpolicy_rtr_options_init(gidpolicy_rtr_options* options);

/** Fill `*attr` (overwritten entirely) and `*attr_mask` for ibv_modify_qp(INIT->RTR): qp_state,
 *  path_mtu, dest_qp_num, rq_psn and the address vector with grh.sgid_index taken from the
 *  selection and grh.dgid from the peer. Each field is set together with its mask bit, and the
 *  bits the QP type requires are checked. `options` is required: its qp_type must be the type the
 *  QP was created with (ds4 on Linux: IBV_QPT_RC; JACCL and ds4 on macOS: IBV_QPT_UC).
 *  Errors: GIDPOLICY_ERR_RTR (peer GID zero, IPv4-mapped source with an IPv6 peer or the reverse,
 *  RoCE v1/v2 mismatch, options->path_mtu above the local port's active MTU or peer->mtu),
 *  GIDPOLICY_ERR_NOT_SUPPORTED (UD), GIDPOLICY_ERR_INVALID_ARGUMENT (NULL
 *  plan/peer/options/attr/attr_mask, qp_type not set or not a QP type, peer->mtu,
 *  options->path_mtu or peer->gid_type outside its enum, a value wider than its field: qpn,
 *  psn, flow_label; an InfiniBand peer with neither a global GID nor a LID).
 *  Example: struct ibv_qp_attr attr; int mask; gidpolicy_rtr_options o;
 *           gidpolicy_rtr_options_init(&o);
 *           o.qp_type = IBV_QPT_RC;
 *           if (gidpolicy_rtr_fill(sel, &peer, &o, &attr, &mask, err, sizeof err) == GIDPOLICY_OK)
 *             rc = ibv_modify_qp(qp, &attr, mask); */
gidpolicy_status gidpolicy_rtr_fill(const gidpolicy_plan* plan, const gidpolicy_peer* peer,
                                    const gidpolicy_rtr_options* options, struct ibv_qp_attr* attr,
                                    int* attr_mask, char* err, size_t errlen);

/* ------------------------------------------------------------------------------------------ */
/* Preflight: check before modify_qp, not after                                               */

/** Does the entry at `sgid_index` of `table` hold `advertised`? (Offline: on a snapshot.)
 *  An empty, unreadable or out-of-range slot, or an index above 255, never agrees.
 *  Error: GIDPOLICY_ERR_DISAGREEMENT, "sgid_index 1 is empty; the advertised GID ... is at index 2". */
gidpolicy_status gidpolicy_preflight(const gidpolicy_table* table, uint32_t sgid_index,
                                     const uint8_t advertised[16], char* err, size_t errlen);

/** Re-read the entry at `sgid_index` now, through the caller's functions, and check that it
 *  still holds `advertised`: call it immediately before ibv_modify_qp(RTR). One GID read when it
 *  does; when it does not, a scan to say where the advertised GID went.
 *  Compares the 16 bytes only: a slot that now holds the same bytes as the other RoCE version
 *  passes. Use gidpolicy_preflight_live_typed() (or _selection()) when the type is known.
 *  Errors: GIDPOLICY_ERR_GID_CHANGED (the slot is empty or holds another GID now: snapshot,
 *  select and exchange again; the message says what the slot holds and where the GID is),
 *  GIDPOLICY_ERR_DISAGREEMENT (an index above 255), GIDPOLICY_ERR_DRIVER (the slot cannot be
 *  read: errno in the message), GIDPOLICY_ERR_INVALID_ARGUMENT, GIDPOLICY_ERR_NOT_SUPPORTED.
 *  Example: gidpolicy_preflight_live(&fns, ctx, 1, attr.ah_attr.grh.sgid_index, my_gid, err, sizeof err); */
gidpolicy_status gidpolicy_preflight_live(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                          uint32_t port, uint32_t sgid_index, const uint8_t advertised[16],
                                          char* err, size_t errlen);

/** gidpolicy_preflight_live() that also checks the GID type: the slot must still hold
 *  `advertised` as `type` (a gidpolicy_gid_type, e.g. gidpolicy_plan_gid_type()).
 *  mlx5 lists each address twice, as RoCE v1 and RoCE v2 with the same 16 bytes, and after a
 *  link flap the twins can come back at each other's index: the bytes still match, but routing
 *  from the v1 twin passes RTR and then times out. That slot is GIDPOLICY_ERR_GID_CHANGED here,
 *  and the message says where the `type` entry went. The type is checked only when the read
 *  reports one (query_gid_ex or query_gid_ex_sized; plain query_gid does not);
 *  GIDPOLICY_GID_TYPE_UNKNOWN checks the bytes only, as gidpolicy_preflight_live().
 *  Errors: those of gidpolicy_preflight_live(); GIDPOLICY_ERR_INVALID_ARGUMENT for a `type` that
 *  is not a gidpolicy_gid_type.
 *  Example: gidpolicy_preflight_live_typed(&fns, ctx, 1, sgid_index, my_gid, GIDPOLICY_GID_TYPE_ROCE_V2,
 *                                          err, sizeof err); */
gidpolicy_status gidpolicy_preflight_live_typed(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                                uint32_t port, uint32_t sgid_index,
                                                const uint8_t advertised[16], int type, char* err,
                                                size_t errlen);

/** The last check before ibv_modify_qp(RTR) for a plan: a plan that disagrees (a
 *  literal sgid_index, "jaccl") is refused with GIDPOLICY_ERR_DISAGREEMENT and no driver call;
 *  otherwise gidpolicy_preflight_live_typed() of its sgid_index, GID and the type the snapshot
 *  showed at that index (the selected entry's, gidpolicy_plan_gid_type(), unless the spec
 *  ends in "@sgid=N"), so a RoCE v1 twin now in the selected v2 slot is GIDPOLICY_ERR_GID_CHANGED.
 *  Example: gidpolicy_status s = gidpolicy_preflight_plan(&fns, ctx, 1, sel, err, sizeof err);
 *           if (s != GIDPOLICY_OK) return s; */
gidpolicy_status gidpolicy_preflight_plan(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                          uint32_t port, const gidpolicy_plan* plan, char* err,
                                          size_t errlen);

/* ------------------------------------------------------------------------------------------ */
/* Explaining an errno                                                                        */

/** Whose errno numbering applies. */
typedef enum gidpolicy_platform {
  /** Darwin when the selection's port is Thunderbolt (Apple's driver), otherwise the platform
   *  gidpolicy was built for. */
  GIDPOLICY_PLATFORM_AUTO = 0,
  GIDPOLICY_PLATFORM_LINUX = 1,
  GIDPOLICY_PLATFORM_DARWIN = 2, /**< macOS Thunderbolt RDMA: 60 ETIMEDOUT, 96 ENODATA, ... */
  /** Not a platform: makes the enum able to hold any non-negative int a C caller may pass
   *  (values gidpolicy does not know are treated as GIDPOLICY_PLATFORM_AUTO). */
  GIDPOLICY_PLATFORM_MAX_ENUM_ = 0x7fffffff
} gidpolicy_platform;

/** Explain an errno from ibv_modify_qp(RTR) (or QP creation): the errno's name on that platform
 *  and its known causes, most likely first, confirmed or ruled out by what `selection` (the
 *  table, the sgid_index, the advertised GID) and `peer` show. Both may be NULL. snprintf-like.
 *  Example output for errno 22 on Darwin with sgid_index 1 empty:
 *    "EINVAL (22) on darwin:\n  confirmed: sgid_index 1 is empty; ..." */
size_t gidpolicy_explain_errno(int errnum, gidpolicy_platform platform, const gidpolicy_plan* plan,
                               const gidpolicy_peer* peer, char* buf, size_t len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GIDPOLICY_GIDPOLICY_H */
