// `gidpolicy env --for STACK[,STACK...]`: each stack's variables (or arguments) for the GID the
// chosen profile picks, and why: when the stack's own choice is already that one, and when it is
// not. A stack that takes one index per process on a host whose HCAs need different ones gets
// no value at all (a value wrong on one HCA fails there a minute into the run): exit 1 names each.
#include "env_cmd.hpp"

#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/stacks.hpp>

#include <fmt/core.h>

#include <map>
#include <set>

namespace gidpolicy::cli {
namespace {

struct Pick {
  const GidTable* table;
  std::uint32_t index;
  Gid gid;
  GidType type;
};

std::string dev_port(const GidTable& t) { return t.port().device + ":" + std::to_string(t.port().port); }

/// The variable that pins a per-process stack, and its stack id.
struct PerProcess {
  std::string_view var;
  StackId id;
};
const std::map<std::string, PerProcess, std::less<>>& per_process() {
  static const std::map<std::string, PerProcess, std::less<>> kVars{
      {"nccl", {"NCCL_IB_GID_INDEX", StackId::nccl}},
      {"nvshmem", {"NVSHMEM_IB_GID_INDEX", StackId::nvshmem}},
      {"ucx", {"UCX_IB_GID_INDEX", StackId::ucx}},
      {"mooncake", {"MC_GID_INDEX", StackId::mooncake}},
      {"libfabric", {"FI_VERBS_GID_IDX", StackId::libfabric}},
  };
  return kVars;
}

// The device-selection variable that pairs with one process per HCA.
std::string one_hca_setting(std::string_view stack, const GidTable& t) {
  if (stack == "nccl") return "NCCL_IB_HCA==" + dev_port(t);
  if (stack == "nvshmem") return "NVSHMEM_HCA_LIST=" + dev_port(t);
  if (stack == "ucx") return "UCX_NET_DEVICES=" + dev_port(t);
  if (stack == "mooncake") return "its device list naming only " + t.port().device;
  return "FI_VERBS_DEVICE_NAME=" + t.port().device;
}

}  // namespace

result<std::vector<std::string>> parse_env_stacks(const std::vector<std::string>& items) {
  static const std::set<std::string, std::less<>> kKnown{
      "nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest", "ds4", "llama.cpp", "jaccl"};
  std::vector<std::string> out;
  for (const auto& s : items) {
    if (!kKnown.count(s))
      return fail(errc::invalid_argument,
                  "--for: expected one of " + std::string(kEnvStacks) + ", found '" + bounded(s) + "'");
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  if (out.empty()) return fail(errc::invalid_argument, "--for: expected one of " + std::string(kEnvStacks));
  return out;
}

EnvPlan plan_env(const std::vector<std::string>& stacks, const std::vector<GidTable>& tables,
                 const Profile& profile) {
  EnvPlan plan;
  std::vector<Pick> picks;
  std::vector<std::string> left_out;
  for (const auto& t : tables) {
    auto p = profile.plan(t);
    if (!p) {
      left_out.push_back(port_name(t) + " (" + profile.spec() + " finds nothing usable: " + p.error().detail +
                         ")");
      continue;
    }
    picks.push_back(
        {&t, p.value().sgid_index, p.value().selection.entry.gid, p.value().selection.entry.type});
  }
  const std::string spec = profile.spec();
  if (picks.empty()) {
    plan.conflicts.push_back("no port has a GID " + spec + " would use" +
                             (left_out.empty() ? std::string() : ": " + left_out.front()));
    return plan;
  }
  for (const auto& l : left_out) plan.why.push_back("left out: " + l);
  for (const auto& stack : stacks) {
    if (const auto it = per_process().find(stack); it != per_process().end()) {
      const std::string var(it->second.var);
      std::set<std::uint32_t> indices;
      for (const auto& p : picks) indices.insert(p.index);
      if (indices.size() > 1) {
        std::string c = stack + " takes one GID index per process (" + var + "), but";
        std::string way;
        for (std::size_t i = 0; i < picks.size(); ++i) {
          c += (i ? "," : "") + std::string(" ") + port_name(*picks[i].table) + " needs " +
               std::to_string(picks[i].index);
          way += (i ? "; " : "") + one_hca_setting(stack, *picks[i].table) + " with " + var + "=" +
                 std::to_string(picks[i].index);
        }
        plan.conflicts.push_back(c + ": run one process per HCA (" + way + ")");
        continue;
      }
      const std::uint32_t index = *indices.begin();
      plan.settings.push_back({var, std::to_string(index)});
      if (stack == "ucx") {
        std::string devs;
        for (const auto& p : picks) devs += (devs.empty() ? "" : ",") + dev_port(*p.table);
        plan.settings.push_back({"UCX_NET_DEVICES", devs});
      }
      if ((stack == "nccl" || stack == "nvshmem") && !left_out.empty()) {
        std::string devs;
        for (const auto& p : picks) devs += (devs.empty() ? "" : ",") + dev_port(*p.table);
        plan.settings.push_back(
            {stack == "nccl" ? "NCCL_IB_HCA" : "NVSHMEM_HCA_LIST", (stack == "nccl" ? "=" : "") + devs});
      }
      for (const auto& p : picks) {
        const StackPrediction own = predict_stack(it->second.id, *p.table);
        const std::string target = "index " + std::to_string(index) + " (" + p.gid.to_string() + " " +
                                   std::string(to_string(p.type)) + ")";
        if (own.chose && own.works && own.index == index) {
          plan.why.push_back(stack + " on " + port_name(*p.table) + ": its own choice is already " + target +
                             "; " + var + " only pins it");
        } else {
          plan.why.push_back(stack + " on " + port_name(*p.table) + ": its own choice " +
                             (own.chose ? "is index " + std::to_string(own.index) + ", which " + own.outcome
                                        : std::string(own.outcome)) +
                             " (" + own.why + "): " + var + "=" + std::to_string(index) + " makes it use " +
                             target);
        }
      }
      continue;
    }
    if (stack == "perftest" || stack == "ds4") {
      for (const auto& p : picks) {
        const std::string idx = std::to_string(p.index);
        plan.args.push_back(stack == "perftest" ? "perftest: -d " + p.table->port().device + " -i " +
                                                      std::to_string(p.table->port().port) + " -x " + idx
                                                : "ds4: --rdma-device " + p.table->port().device +
                                                      " --rdma-gid-index " + idx);
        if (stack == "perftest") {
          const StackPrediction own = predict_stack(StackId::perftest, *p.table);
          plan.why.push_back(
              "perftest on " + port_name(*p.table) +
              (own.chose && own.works && own.index == p.index
                   ? ": without -x it picks index " + idx + " itself; -x only pins it"
                   : ": without -x it " +
                         (own.chose ? "picks index " + std::to_string(own.index) + ", which " + own.outcome
                                    : own.outcome)));
        }
      }
      continue;
    }
    if (stack == "llama.cpp") {
      // One device per process: the first usable port, the others named as the alternatives.
      plan.settings.push_back({"GGML_RDMA_DEV", picks.front().table->port().device});
      plan.settings.push_back({"GGML_RDMA_GID", std::to_string(picks.front().index)});
      for (std::size_t i = 1; i < picks.size(); ++i)
        plan.why.push_back("llama.cpp uses one device: or GGML_RDMA_DEV=" + picks[i].table->port().device +
                           " with GGML_RDMA_GID=" + std::to_string(picks[i].index));
      continue;
    }
    // jaccl: the patched fork takes the policy itself; the device matrix needs every host.
    plan.settings.push_back({"JACCL_GID_POLICY", spec});
    plan.why.push_back(
        "jaccl: MLX_IBV_DEVICES is a matrix over every host's devices: gidpolicy fleet --topology jaccl "
        "checks one; JACCL_GID_POLICY is read only by the patched JACCL");
  }
  return plan;
}

namespace {

bool dotenv_safe(std::string_view v) {
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u == 0x7f || c == '"' || c == '\'' || c == '\\' || c == '#' || c == '$' || c == '`')
      return false;
  }
  return true;
}

std::string sh_quote(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string comment(std::string_view text) {
  // One line per comment: nothing from a table (a device name) may end the comment early.
  std::string out = "# ";
  for (char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  return out + "\n";
}

}  // namespace

result<std::string> render_dotenv(const EnvPlan& plan) {
  std::string out;
  for (const auto& w : plan.why) out += comment(w);
  for (const auto& a : plan.args) out += comment(a);
  for (const auto& s : plan.settings) {
    if (!dotenv_safe(s.value))
      return fail(errc::invalid_argument,
                  s.name + ": the value " + quote_name(s.value, 40) +
                      " cannot be written in a dotenv file (quotes, spaces or control bytes)");
    out += s.name + "=" + s.value + "\n";
  }
  return out;
}

int run_env(const EnvArgs& o) {
  auto stacks = parse_env_stacks(o.stacks);
  if (!stacks) return usage_error(stacks.error());
  auto profile = parse_profile(o.profile);
  if (!profile)
    return usage_error(
        Error(profile.error().code, "--profile " + bounded(o.profile) + ": " + profile.error().detail));
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  const EnvPlan plan = plan_env(stacks.value(), loaded.value().tables, profile.value());
  Output& out = standard_output();
  if (!plan.conflicts.empty()) {
    for (const auto& c : plan.conflicts) print_error(c);
  }
  if (o.format == "json") {
    Json j;
    j["profile"] = profile.value().spec();
    Json settings = Json::object();
    for (const auto& s : plan.settings) settings[s.name] = s.value;
    j["settings"] = std::move(settings);
    j["args"] = plan.args;
    j["why"] = plan.why;
    j["conflicts"] = plan.conflicts;
    print_json(j);
  } else if (o.format == "dotenv") {
    auto text = render_dotenv(plan);
    if (!text) return usage_error(text.error());
    out.write(text.value());
  } else {
    for (const auto& w : plan.why) out.write(comment(w));
    for (const auto& a : plan.args) out.write(comment(a));
    for (const auto& s : plan.settings) out.write("export " + s.name + "=" + sh_quote(s.value) + "\n");
  }
  return plan.conflicts.empty() ? kExitOk : kExitFinding;
}

}  // namespace gidpolicy::cli
