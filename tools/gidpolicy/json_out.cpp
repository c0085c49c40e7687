#include "json_out.hpp"

#include <gidpolicy/names.hpp>

#include <string_view>

#include <unistd.h>

namespace gidpolicy::cli {
namespace {

Json nullable(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace

std::string error_code_name(const std::error_code& code) {
  if (code.category() == error_category()) {
    const std::string_view name = to_string(static_cast<errc>(code.value()));
    if (!name.empty()) return std::string(name);
    return "errc_" + std::to_string(code.value());
  }
  return "errno";
}

Json json_error(const Error& e) {
  Json j;
  j["code"] = error_code_name(e.code);
  j["category"] = e.code.category().name();
  j["value"] = e.code.value();
  j["message"] = e.what();
  return j;
}

Json json_trace(const Trace& t) {
  Json out = Json::array();
  for (const auto& a : t.attempts) {
    Json ja;
    ja["policy"] = a.policy;
    ja["error"] = nullable(a.error);
    Json steps = Json::array();
    for (const auto& s : a.steps)
      steps.push_back(
          Json{{"index", s.index}, {"verdict", std::string(to_string(s.verdict))}, {"note", s.note}});
    ja["steps"] = std::move(steps);
    out.push_back(std::move(ja));
  }
  return out;
}

Json json_verdict(const RtrVerdict& v, Platform p) {
  Json j;
  j["outcome"] = std::string(to_string(v.outcome));
  j["errno"] = v.err != 0 ? Json(v.err) : Json(nullptr);
  j["errno_name"] = v.err != 0 ? Json(errno_name(p, v.err)) : Json(nullptr);
  j["reason"] = v.reason;
  j["text"] = v.to_string(p);
  return j;
}

Json json_prediction(const RtrPrediction& p, Platform platform) {
  Json j = json_verdict(p.verdict, platform);
  j["refused"] = p.refused ? Json(p.refused->what()) : Json(nullptr);
  if (p.refused) {
    // errno, errno_name and reason keep saying what sending the attributes anyway would return.
    j["if_sent"] = j["outcome"];
    j["outcome"] = "refused";
  }
  j["text"] = p.to_string(platform);
  return j;
}

Json json_envelope(const char* schema, int version, Json host, const std::string& source) {
  Json j;
  j["schema"] = schema;
  j["version"] = version;
  j["host"] = std::move(host);
  j["source"] = source;
  return j;
}

Json json_envelope(const char* schema, int version, const SourceArgs& options, const Loaded& loaded) {
  Json host = nullptr;
  if (loaded.bundle_host)
    host = loaded.bundle_host->host.empty() ? Json(nullptr) : Json(loaded.bundle_host->host);
  else if (!options.input && !options.sysfs && !options.bundle)
    host = this_host_name();
  return json_envelope(schema, version, std::move(host), loaded.source);
}

Json this_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return nullptr;
  if (name_problem(name, NameKind::host)) return nullptr;
  return std::string(name);
}

void json_plan_keys(Json& row, const result<Plan>& plan, std::initializer_list<PlanKey> keys) {
  for (const PlanKey& k : keys) row[k.key] = plan ? k.value(plan.value()) : k.if_failed;
  row["error"] = plan ? Json(nullptr) : json_error(plan.error());
}

}  // namespace gidpolicy::cli
