// The settings that make each stack use the GID a profile picks (env.hpp). A stack that takes one
// index per process on a host whose HCAs need different ones gets no value at all (a value wrong
// on one HCA fails there a minute into the run): the plan's conflicts name each.
#include <gidpolicy/env.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/stacks.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {
namespace {

// An item of the list quoted for the error: as given when it is printable UTF-8 of at most 60
// bytes, cut on a code point otherwise, and quoted by the name rule when it would break the line.
std::string bounded(const std::string& s, std::size_t max = 60) {
  const bool printable = is_utf8(s) && std::none_of(s.begin(), s.end(), [](char c) {
                           const auto u = static_cast<unsigned char>(c);
                           return u < 0x20 || u == 0x7f;
                         });
  if (!printable) return quote_name(s, max);
  return s.size() <= max ? s : std::string(cut_utf8(s, max)) + "...";
}

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

/// jaccl with a device file: every device of this host's row must be one of its ports (JACCL
/// opens port 1) with a GID the profile picks; then MLX_IBV_DEVICES names the file. Each device
/// also says what JACCL as it ships (the jaccl profile) would do there.
void plan_jaccl_row(const JacclRow& row, const std::vector<GidTable>& tables, const Profile& profile,
                    EnvPlan& plan) {
  const std::vector<std::string> devices = row.devices.devices_of(row.rank, row.ring);
  const std::string layout = row.ring ? "ring" : "mesh";
  const std::string where = row.path + " (rank " + std::to_string(row.rank) + " of " +
                            std::to_string(row.devices.ranks()) + ", JACCL's " + layout + ")";
  const std::string spec = profile.spec();
  bool ok = true;
  for (const std::string& d : devices) {
    const auto t = std::find_if(tables.begin(), tables.end(), [&](const GidTable& g) {
      return g.port().device == d && g.port().port == 1;
    });
    if (t == tables.end()) {
      std::string have;
      for (const auto& g : tables) have += (have.empty() ? "" : ", ") + port_name(g);
      plan.conflicts.push_back("jaccl: " + where + " names " + d + ", but this host has no " +
                               port_name(d, 1) + " (it has " + (have.empty() ? "no port" : have) +
                               "): JACCL fails to open it; fix the file's row or give this host's rank");
      ok = false;
      continue;
    }
    auto p = profile.plan(*t);
    if (!p) {
      plan.conflicts.push_back("jaccl: " + where + " names " + d + ", where " + spec +
                               " finds no GID to use: " + p.error().detail);
      ok = false;
      continue;
    }
    if (!p.value().agrees()) {  // the profile itself routes from another entry (jaccl's index 1)
      plan.conflicts.push_back(
          "jaccl: " + where + " names " + d + ", where " + spec +
          " does not route from the GID it advertises: " + p.value().agreement.explanation);
      ok = false;
      continue;
    }
    const GidEntry& e = p.value().selection.entry;
    std::string line = "jaccl on " + port_name(*t) + ": " + spec + " picks index " + std::to_string(e.index) +
                       " (" + e.gid.to_string() + ")";
    // What stock JACCL does with the same device: its own pick, routed from index 1.
    auto stock = profiles::jaccl().plan(*t);
    if (!stock)
      line += "; JACCL as it ships fails there: " + stock.error().detail;
    else if (!stock.value().agrees())
      line += "; JACCL as it ships disagrees there (" + stock.value().agreement.explanation + ")";
    else if (stock.value().selection.entry.index != e.index)
      line += "; JACCL as it ships uses index " + std::to_string(stock.value().selection.entry.index) +
              " instead";
    else
      line += "; JACCL as it ships uses the same entry";
    plan.why.push_back(line);
  }
  if (!ok) return;
  std::string list;
  for (const auto& d : devices) list += (list.empty() ? "" : ", ") + d;
  plan.settings.push_back({"MLX_IBV_DEVICES", row.path});
  plan.why.push_back("jaccl: MLX_IBV_DEVICES=" + row.path + ": rank " + std::to_string(row.rank) + " opens " +
                     list +
                     " (JACCL reads JACCL_IBV_DEVICES first: leave it unset, or set it to the same file)");
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
                 const Profile& profile, const std::optional<JacclRow>& jaccl) {
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
    // jaccl: the device file names, per rank, the devices it opens; this host is one row.
    if (jaccl)
      plan_jaccl_row(*jaccl, tables, profile, plan);
    else
      plan.why.push_back(
          "jaccl: MLX_IBV_DEVICES names JACCL's device file, a matrix over every host's devices: give it "
          "with --jaccl-devices FILE --rank R (or MLX_IBV_DEVICES, MLX_RANK) to check this host's row, or "
          "check the whole matrix with gidpolicy fleet --topology jaccl");
    // The patched fork takes the policy itself.
    plan.settings.push_back({"JACCL_GID_POLICY", spec});
    plan.why.push_back("jaccl: JACCL_GID_POLICY is read only by the patched JACCL");
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

}  // namespace gidpolicy
