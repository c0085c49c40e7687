// The --json documents of `gidpolicy` (schemas in docs/cli.md). Key names are part of the
// tool's interface: change them only with a version bump of the document.
#pragma once

#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/trace.hpp>

#include <nlohmann/json.hpp>

#include "sources.hpp"

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace gidpolicy::cli {

using Json = nlohmann::ordered_json;

/// The errc enumerator's name ("no_ipv4_mapped_gid"), or "errno" for a driver errno.
std::string error_code_name(const std::error_code& code);
/// {"code", "category", "value", "message"}.
Json json_error(const Error& e);
/// [{"policy", "error", "steps": [{"index", "verdict", "note"}]}].
Json json_trace(const Trace& t);
/// {"outcome", "errno", "errno_name", "reason", "text"}.
Json json_verdict(const RtrVerdict& v, Platform p);
/// A check prediction: json_verdict() of the judged attributes plus "refused" (RtrBuilder's
/// error or null); a refused one has outcome "refused" and "if_sent" (the outcome had they been sent).
Json json_prediction(const RtrPrediction& p, Platform platform);
/// The envelope every --json document opens with (docs/cli.md, schemas/*.schema.json):
/// {"schema", "version", "host", "source"}, the results following in arrays whatever their
/// count (one port is an array of one), so a consumer has one code path. `host` is the host
/// judged where known (live devices: this machine; a bundle: its host), null for a table file
/// (a pasted table may come from anywhere); `source` is what was read.
Json json_envelope(const char* schema, int version, Json host, const std::string& source);
/// The envelope for tables read through load_tables(): the bundle's host, this machine for live
/// devices, null for a table file; the source as load_tables() names it.
Json json_envelope(const char* schema, int version, const SourceArgs& options, const Loaded& loaded);
/// This machine's host name, or null when it has none or it breaks the name rule (names.hpp).
Json this_host_name();

/// One key of a row about a plan (select's and check's rows): its value from the plan, and what
/// it holds when the selection failed (null unless said).
struct PlanKey {
  const char* key;
  std::function<Json(const Plan&)> value;
  Json if_failed = nullptr;
};
/// Write `keys` in order, each valued from the plan or with its if_failed value, then "error"
/// (null, or json_error() of the failure): a row keeps every key whatever the outcome, as
/// docs/cli.md documents, so a script can index it without testing "ok" first.
void json_plan_keys(Json& row, const result<Plan>& plan, std::initializer_list<PlanKey> keys);

}  // namespace gidpolicy::cli
