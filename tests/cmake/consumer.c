/* A C consumer of gidpolicy's C API, shared by the pkg-config (`cc -std=c99 -pedantic-errors`)
 * and the C-only find_package consumer projects. It includes only gidpolicy.h (no verbs.h), so
 * it also proves the header is C99-clean on its own. */
#include <gidpolicy/gidpolicy.h>

#include <stdio.h>
#include <string.h>

/* The Mac mini of MLX PR 3389: link-local at 0, an empty slot, the IPv4-mapped GID at 2. */
static const char table_json[] =
    "{\"schema\": \"gidpolicy.tables\", \"version\": 1, \"ports\": ["
    " {\"device\": \"rdma_en2\", \"port\": 1, \"link_layer\": \"thunderbolt\", \"gid_tbl_len\": 16,"
    "  \"entries\": [{\"index\": 0, \"gid\": \"fe80::1\"}, {\"index\": 1, \"state\": \"empty\"},"
    "               {\"index\": 2, \"gid\": \"::ffff:10.99.0.3\"}]}]}";

int main(void) {
  char err[512], text[GIDPOLICY_GID_STRLEN];
  gidpolicy_profile *policy = NULL;
  gidpolicy_table *table = NULL;
  gidpolicy_plan *sel = NULL;
  uint8_t gid[16];
  int rc = 1;

  if (gidpolicy_profile_parse("auto", &policy, err, sizeof err) != GIDPOLICY_OK ||
      gidpolicy_table_from_json(table_json, strlen(table_json), NULL, 0, &table, err, sizeof err) != GIDPOLICY_OK ||
      gidpolicy_select(policy, table, &sel, err, sizeof err) != GIDPOLICY_OK) {
    fprintf(stderr, "c consumer: %s\n", err);
    goto out;
  }
  gidpolicy_plan_gid(sel, gid);
  gidpolicy_gid_to_string(gid, text, sizeof text);
  /* JACCL's literal index 1 must be refused on this table. */
  if (gidpolicy_preflight(table, 1, gid, err, sizeof err) != GIDPOLICY_ERR_DISAGREEMENT) {
    fprintf(stderr, "c consumer: index 1 was not refused\n");
    goto out;
  }
#if defined(GIDPOLICY_CONSUMER_C_VERBS) /* find_package consumer: also link gidpolicy::c_verbs */
  {
    gidpolicy_verbs_fns fns;
    gidpolicy_table *none = NULL;
    char verr[128];
    gidpolicy_verbs_fns_libibverbs(&fns);
    if (!fns.query_port ||
        gidpolicy_snapshot_context(NULL, 1, 0, &none, verr, sizeof verr) != GIDPOLICY_ERR_INVALID_ARGUMENT) {
      fprintf(stderr, "c consumer: gidpolicy::c_verbs misbehaves\n");
      goto out;
    }
    printf("c consumer: c_verbs linked\n");
  }
#endif
  printf("c consumer: advertise %s, route from sgid_index %u; index 1: %s\n", text,
         (unsigned)gidpolicy_plan_sgid_index(sel), err);
  rc = 0;
out:
  gidpolicy_plan_free(sel);
  gidpolicy_table_free(table);
  gidpolicy_profile_free(policy);
  return rc;
}
