/* GIDPOLICY-RENAME-KEEP-BEGIN (the rename script leaves this file's old names alone)
 * Code written against the C API's old names (docs/concepts.md, "Old names that still build") still builds
 * and behaves the same: gidpolicy_policy is now gidpolicy_profile and gidpolicy_selection gidpolicy_plan, and
 * the old names stay as deprecated aliases for one release. Built with -DGIDPOLICY_NO_DEPRECATED this file
 * must NOT compile (capi.names.no_deprecated checks that the aliases are gone then). */
#include <gidpolicy/gidpolicy.h>

#include <stdio.h>
#include <string.h>

static const char kTable[] =
    "{\"schema\": \"gidpolicy.tables\", \"version\": 1, \"ports\": [{\"device\": \"rdma_en2\", \"port\": 1,"
    " \"state\": \"active\", \"link_layer\": \"thunderbolt\", \"gid_tbl_len\": 16, \"active_mtu\": 1024,"
    " \"lid\": 0, \"holes\": \"empty\", \"entries\": ["
    "{\"index\": 0, \"gid\": \"fe80::14a2:7cff:fe31:9d05\", \"type\": \"unknown\", \"state\": \"valid\"},"
    "{\"index\": 1, \"state\": \"empty\"},"
    "{\"index\": 2, \"gid\": \"::ffff:10.99.0.3\", \"type\": \"unknown\", \"state\": \"valid\"}]}]}";

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                          \
    }                                                                    \
  } while (0)

int main(void) {
  char err[512];
  char buf[512];
  uint8_t gid[16];
  gidpolicy_policy* policy = NULL;
  gidpolicy_table* table = NULL;
  gidpolicy_selection* sel = NULL;
  /* The old preflight name still names the new function. */
  gidpolicy_status (*preflight)(const gidpolicy_verbs_fns*, struct ibv_context*, uint32_t,
                                const gidpolicy_selection*, char*, size_t) = gidpolicy_preflight_selection;
  CHECK(preflight == gidpolicy_preflight_plan);

  CHECK(gidpolicy_policy_parse("jaccl", &policy, err, sizeof err) == GIDPOLICY_OK);
  CHECK(gidpolicy_policy_spec(policy, buf, sizeof buf) == strlen("jaccl") && strcmp(buf, "jaccl") == 0);
  CHECK(gidpolicy_table_from_json(kTable, sizeof kTable - 1, NULL, 1, &table, err, sizeof err) ==
        GIDPOLICY_OK);
  CHECK(gidpolicy_select(policy, table, &sel, err, sizeof err) == GIDPOLICY_OK);
  /* JACCL as it ships on the Mac mini of MLX PR 3389: advertises index 2, routes from 1. */
  CHECK(gidpolicy_selection_index(sel) == 2);
  CHECK(gidpolicy_selection_sgid_index(sel) == 1);
  CHECK(gidpolicy_selection_agrees(sel) == 0);
  CHECK(gidpolicy_selection_agreement(sel, buf, sizeof buf) > 0 &&
        strstr(buf, "sgid_index 1 is empty") != NULL);
  gidpolicy_selection_gid(sel, gid);
  CHECK(gid[10] == 0xff && gid[11] == 0xff && gid[12] == 10 && gid[15] == 3);
  CHECK(gidpolicy_selection_gid_type(sel) == GIDPOLICY_GID_TYPE_UNKNOWN);
  CHECK(gidpolicy_selection_trace(sel, buf, sizeof buf) > 0);
  gidpolicy_selection_free(sel);
  gidpolicy_table_free(table);
  gidpolicy_policy_free(policy);
  puts("old names: ok");
  return 0;
}
/* GIDPOLICY-RENAME-KEEP-END */
