#include "json_out.hpp"

#include <string_view>

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

std::vector<std::string> entry_flags(const GidEntry& e) {
  std::vector<std::string> f;
  if (e.state == EntryState::empty) f.emplace_back("empty");
  if (e.state == EntryState::unreadable) f.emplace_back("unreadable");
  if (e.state != EntryState::valid) return f;
  if (e.gid.is_zero()) f.emplace_back("zero");
  if (e.gid.is_link_local()) f.emplace_back("link-local");
  if (e.gid.is_ipv4_mapped() && !e.gid.is_zero()) f.emplace_back("ipv4-mapped");
  if (e.gid.is_ipv4_link_local()) f.emplace_back("ipv4-link-local");
  return f;
}

Json json_show_table(const GidTable& t) {
  const PortInfo& p = t.port();
  Json j;
  j["device"] = p.device;
  j["port"] = p.port;
  j["state"] = std::string(to_string(p.state));
  j["link_layer"] = to_string(p.link_layer);
  j["gid_tbl_len"] = p.gid_tbl_len ? Json(*p.gid_tbl_len) : Json(nullptr);
  j["active_mtu"] = mtu_bytes(p.active_mtu);
  j["lid"] = p.lid;
  j["holes"] = std::string(to_string(t.holes()));
  Json entries = Json::array();
  for (const auto& e : t) {
    Json je;
    je["index"] = e.index;
    je["state"] = std::string(to_string(e.state));
    je["gid"] = e.state == EntryState::valid ? Json(e.gid.to_string()) : Json(nullptr);
    je["type"] = std::string(to_string(e.type));
    je["ipv4"] = e.state == EntryState::valid ? nullable(e.gid.ipv4_string()) : Json(nullptr);
    je["netdev"] = nullable(e.netdev);
    je["errno"] = e.state == EntryState::unreadable ? Json(e.read_error.value()) : Json(nullptr);
    je["flags"] = entry_flags(e);
    entries.push_back(std::move(je));
  }
  j["entries"] = std::move(entries);
  return j;
}

Json one_or_array(std::vector<Json> items) {
  if (items.size() == 1) return std::move(items.front());
  Json a = Json::array();
  for (auto& i : items) a.push_back(std::move(i));
  return a;
}

void json_plan_keys(Json& row, const result<Plan>& plan, std::initializer_list<PlanKey> keys) {
  for (const PlanKey& k : keys) row[k.key] = plan ? k.value(plan.value()) : k.if_failed;
  row["error"] = plan ? Json(nullptr) : json_error(plan.error());
}

}  // namespace gidpolicy::cli
