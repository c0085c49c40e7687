/* fakelib_abi_check: the entry points beyond what the device model answers.
 *
 *   fakelib_abi_check <symbols.txt> <fake lib dir> <control log>
 *
 * Run with LD_LIBRARY_PATH=<fake lib dir>, GIDPOLICY_FAKE_TABLES=ds4-linux-unit.json and
 * GIDPOLICY_FAKE_LOG=<control log> (a fresh file).
 *
 *  - verbs_register_driver_34, as a provider's constructor calls it before main: accepted, and
 *    the provider's name is logged once the fake is configured;
 *  - every row of symbols.txt that is not `modelled` resolves to the fake and, called, returns
 *    what its column states (NULL, EOPNOTSUPP, -1, -EOPNOTSUPP, 0, its argument, nothing) with
 *    errno = EOPNOTSUPP, and leaves a control-log record with its name and "not_modelled":true;
 *    verbs_allow_disassociate_destroy is false;
 *  - the modelled helpers: rate conversions, P_Key index, fork ranges, the sysfs root.
 * The stubs read no argument (see unsupported_calls.cpp), so each is called with the same
 * integer arguments through a pointer of its return type only.
 * Exit 0 when every check holds, 1 otherwise (each failure is printed), 2 on setup failure.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* rdma-core private (driver.h). */
struct verbs_device_ops;
void verbs_register_driver_34(const struct verbs_device_ops* ops);
const char* ibv_get_sysfs_path(void);
int ibv_dontfork_range(void* base, size_t size);
int ibv_dofork_range(void* base, size_t size);

#include "check.h"

typedef void* (*ptr_fn)(long, long, long, long, long, long);
typedef int (*int_fn)(long, long, long, long, long, long);
typedef unsigned int (*uint_fn)(unsigned int, long, long, long, long, long);
typedef void (*void_fn)(long, long, long, long, long, long);

/* A provider's struct verbs_device_ops begins with its name. */
struct provider_head {
  const char* name;
  unsigned int pad[8];
};
static const struct provider_head test_provider = {"abi_check_provider", {0}};

static char* read_file(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 1 << 20, len = 0;
  char* buf = malloc(cap + 1);
  if (buf) {
    len = fread(buf, 1, cap, f);
    buf[len] = '\0';
  }
  fclose(f);
  return buf;
}

static void check_stub(const char* name, const char* how, const char* lib_dir) {
  void* sym = dlsym(RTLD_DEFAULT, name);
  if (!sym) {
    CHECK(0, "%s resolves", name);
    return;
  }
  Dl_info info;
  CHECK(dladdr(sym, &info) && info.dli_fname && strncmp(info.dli_fname, lib_dir, strlen(lib_dir)) == 0,
        "%s comes from the fake (%s)", name, info.dli_fname ? info.dli_fname : "?");
  if (strcmp(how, "data") == 0) {
    bool value = true;
    memcpy(&value, sym, sizeof value);
    CHECK(!value, "%s is false", name);
    return;
  }
  errno = 0;
  if (strcmp(how, "null") == 0) {
    ptr_fn f;
    memcpy(&f, &sym, sizeof f);
    void* r = f(3, 0, 0, 0, 0, 0);
    CHECK(r == NULL && errno == EOPNOTSUPP, "%s: NULL, errno EOPNOTSUPP (got %p, errno %d)", name, r, errno);
  } else if (strcmp(how, "void") == 0) {
    void_fn f;
    memcpy(&f, &sym, sizeof f);
    f(3, 0, 0, 0, 0, 0);
    CHECK(errno == EOPNOTSUPP, "%s: errno EOPNOTSUPP (got %d)", name, errno);
  } else if (strcmp(how, "arg1") == 0) {
    uint_fn f;
    memcpy(&f, &sym, sizeof f);
    unsigned int r = f(3, 0, 0, 0, 0, 0);
    CHECK(r == 3, "%s: returns its argument (got %u)", name, r);
  } else {
    int want = 0;
    if (strcmp(how, "errno") == 0) {
      want = EOPNOTSUPP;
    } else if (strcmp(how, "minus1") == 0) {
      want = -1;
    } else if (strcmp(how, "negerrno") == 0) {
      want = -EOPNOTSUPP;
    } else if (strcmp(how, "zero") != 0) {
      CHECK(0, "%s: unknown convention '%s' in symbols.txt", name, how);
      return;
    }
    int_fn f;
    memcpy(&f, &sym, sizeof f);
    int r = f(3, 0, 0, 0, 0, 0);
    CHECK(r == want && errno == EOPNOTSUPP, "%s: returns %d, errno EOPNOTSUPP (got %d, errno %d)", name, want,
          r, errno);
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s <symbols.txt> <fake lib dir> <control log>\n", argv[0]);
    return 2;
  }
  FILE* fresh = fopen(argv[3], "w"); /* the log of this run only (the fake appends) */
  if (!fresh) {
    fprintf(stderr, "cannot write %s\n", argv[3]);
    return 2;
  }
  fclose(fresh);
  /* Before anything configures the fake, as a constructor would. */
  verbs_register_driver_34((const struct verbs_device_ops*)(const void*)&test_provider);

  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  if (!list || n < 1) {
    fprintf(stderr, "no devices (GIDPOLICY_FAKE_TABLES?)\n");
    return 2;
  }
  struct ibv_context* ctx = ibv_open_device(list[0]);
  if (!ctx) {
    fprintf(stderr, "ibv_open_device failed\n");
    return 2;
  }

  /* ---- every not-modelled row */
  FILE* f = fopen(argv[1], "r");
  if (!f) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  char names[256][64];
  int stubs = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char name[64], version[64], how[32];
    if (line[0] == '#' || sscanf(line, "%63s %63s %31s", name, version, how) != 3) continue;
    if (strcmp(how, "modelled") == 0) continue;
    check_stub(name, how, argv[2]);
    if (strcmp(how, "data") != 0 && stubs < 256) snprintf(names[stubs++], sizeof names[0], "%s", name);
  }
  fclose(f);
  CHECK(stubs > 50, "%d not-modelled entry points called", stubs);

  /* ---- the modelled helpers */
  CHECK(ibv_rate_to_mult(IBV_RATE_10_GBPS) == 4 && ibv_rate_to_mult(IBV_RATE_400_GBPS) == 160 &&
            ibv_rate_to_mult(IBV_RATE_14_GBPS) == -1,
        "ibv_rate_to_mult: 10 Gb/s is 4 x 2.5, 400 is 160, 14 (FDR lane) has no multiple");
  CHECK(mult_to_ibv_rate(16) == IBV_RATE_40_GBPS && mult_to_ibv_rate(7) == IBV_RATE_MAX,
        "mult_to_ibv_rate: 16 is 40 Gb/s, 7 is no rate");
  CHECK(ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125 && ibv_rate_to_mbps(IBV_RATE_MAX) == -1,
        "ibv_rate_to_mbps: 100 Gb/s is 103125 Mb/s");
  CHECK(mbps_to_ibv_rate(25781) == IBV_RATE_25_GBPS && mbps_to_ibv_rate(1) == IBV_RATE_MAX,
        "mbps_to_ibv_rate: 25781 Mb/s is 25 Gb/s");
  CHECK(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)) == 0, "ibv_get_pkey_index: the default P_Key at 0");
  CHECK(ibv_get_pkey_index(ctx, 1, htobe16(0x8001)) < 0, "ibv_get_pkey_index: an absent P_Key is negative");
  static char buf[8192];
  CHECK(ibv_dontfork_range(buf, sizeof buf) == 0 && ibv_dofork_range(buf, sizeof buf) == 0,
        "ibv_dontfork_range / ibv_dofork_range succeed (nothing is pinned)");
  const char* sysfs = ibv_get_sysfs_path();
  CHECK(sysfs && strcmp(sysfs, getenv("SYSFS_PATH") ? getenv("SYSFS_PATH") : "/sys") == 0,
        "ibv_get_sysfs_path: %s", sysfs ? sysfs : "(null)");

  ibv_close_device(ctx);
  ibv_free_device_list(list);

  /* ---- the control log names every not-modelled call, and the registered provider */
  char* log = read_file(argv[3]);
  if (!log) {
    fprintf(stderr, "cannot read %s\n", argv[3]);
    return 2;
  }
  CHECK(strstr(log, "\"call\":\"register_driver\",\"provider\":\"abi_check_provider\"") != NULL,
        "the provider registration is logged");
  for (int i = 0; i < stubs; ++i) {
    char want[128];
    snprintf(want, sizeof want, "\"call\":\"%s\",\"not_modelled\":true", names[i]);
    CHECK(strstr(log, want) != NULL, "logged: %s", want);
  }
  free(log);
  return failures ? 1 : 0;
}
