// The C API's GIDs and tables: parsing and printing GIDs, snapshots through the caller's function
// table, tables from and to JSON.
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <string>

using gidpolicy::capi::guarded;
using gidpolicy::capi::guarded_text;
using gidpolicy::capi::report;

extern "C" {

// ---- GIDs ---------------------------------------------------------------------------------

gidpolicy_status gidpolicy_gid_parse(const char* text, uint8_t gid[16], char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!text) return gidpolicy::capi::null_argument("text", err, errlen);
    if (!gid) return gidpolicy::capi::null_argument("gid", err, errlen);
    auto g = gidpolicy::parse_address(text);
    if (!g) return report(g.error(), err, errlen);
    g.value().copy_to(gid);
    return GIDPOLICY_OK;
  });
}

size_t gidpolicy_gid_to_string(const uint8_t gid[16], char* buf, size_t len) {
  return guarded_text(buf, len,
                      [&] { return gid ? gidpolicy::Gid::from_bytes(gid).to_string() : std::string(); });
}

// ---- tables -------------------------------------------------------------------------------

gidpolicy_status gidpolicy_snapshot(const gidpolicy_verbs_fns* fns, struct ibv_context* context,
                                    uint32_t port, unsigned flags, gidpolicy_table** out, char* err,
                                    size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!fns) return gidpolicy::capi::null_argument("fns", err, errlen);
    if (!context) return gidpolicy::capi::null_argument("context", err, errlen);
    // Arguments first, then what the function table offers: port 0 is the caller's mistake
    // whatever the table holds (the header promises INVALID_ARGUMENT for it).
    if (port == 0 || port > 255)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT, "port " + std::to_string(port) + " is not in 1..255", err,
                    errlen);
    if (!fns->query_port)
      return report(GIDPOLICY_ERR_NOT_SUPPORTED, "gidpolicy_verbs_fns.query_port is NULL", err, errlen);
    if (!fns->query_gid && !fns->query_gid_ex && !fns->query_gid_ex_sized)
      return report(GIDPOLICY_ERR_NOT_SUPPORTED,
                    "gidpolicy_verbs_fns has no GID read (query_gid, query_gid_ex or query_gid_ex_sized)",
                    err, errlen);
    if (flags &
        ~static_cast<unsigned>(GIDPOLICY_SNAPSHOT_ALLOW_INACTIVE | GIDPOLICY_SNAPSHOT_STOP_AT_IPV4_MAPPED |
                               GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES | GIDPOLICY_SNAPSHOT_WHOLE_TABLE))
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT, "unknown snapshot flags " + std::to_string(flags), err,
                    errlen);

    gidpolicy::verbs::FunctionTableApi api =
        gidpolicy::capi::context_api(*fns, (flags & GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES) == 0);
    auto device = api.adopt(context);
    if (!device) return report(device.error(), err, errlen);
    gidpolicy::verbs::SnapshotOptions options;
    options.allow_inactive = (flags & GIDPOLICY_SNAPSHOT_ALLOW_INACTIVE) != 0;
    options.whole_table = (flags & GIDPOLICY_SNAPSHOT_WHOLE_TABLE) != 0;
    if (flags & GIDPOLICY_SNAPSHOT_STOP_AT_IPV4_MAPPED)
      options.stop_after = gidpolicy::verbs::stop_at_first_ipv4_mapped();
    auto table = gidpolicy::verbs::snapshot(api, device.value(), port, options);
    if (!table) return report(table.error(), err, errlen);
    *out = new gidpolicy_table{std::move(table).value()};
    return GIDPOLICY_OK;
  });
}

gidpolicy_status gidpolicy_table_from_json(const char* text, size_t text_len, const char* device,
                                           uint32_t port, gidpolicy_table** out, char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return gidpolicy::capi::null_argument("out", err, errlen);
    *out = nullptr;
    if (!text) return gidpolicy::capi::null_argument("text", err, errlen);
    auto tables = gidpolicy::formats::read_json(std::string_view(text, text_len), "<json>");
    if (!tables) return report(tables.error(), err, errlen);
    for (gidpolicy::GidTable& t : tables.value()) {
      if (device && (t.port().device != device || t.port().port != port)) continue;
      *out = new gidpolicy_table{std::move(t)};
      return GIDPOLICY_OK;
    }
    // The caller's device name is quoted (names.hpp): it may hold anything.
    std::string what = device ? "no " + gidpolicy::port_name(gidpolicy::quote_name(device, 64), port)
                              : std::string("no port");
    std::string seen;
    for (const gidpolicy::GidTable& t : tables.value())
      seen += (seen.empty() ? "" : ", ") + gidpolicy::port_name(t);
    return report(GIDPOLICY_ERR_INVALID_ARGUMENT,
                  what + " in the document" + (seen.empty() ? "" : "; it has " + seen), err, errlen);
  });
}

size_t gidpolicy_table_to_json(const gidpolicy_table* table, char* buf, size_t len) {
  return guarded_text(buf, len,
                      [&] { return table ? gidpolicy::formats::write_json({table->table}) : std::string(); });
}

uint32_t gidpolicy_table_length(const gidpolicy_table* table) { return table ? table->table.length() : 0; }

void gidpolicy_table_free(gidpolicy_table* table) { delete table; }

}  // extern "C"
