// `gidpolicy fleet --stack STACK`: the per-host judgment of the stack's choice (fleet_stack.hpp).
#include "fleet_stack.hpp"

#include "env_cmd.hpp"
#include "render.hpp"

#include <gidpolicy/names.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace gidpolicy::cli {

std::string launch_spec_options(const StackLaunch& launch) {
  std::string out;
  for (const auto& opt : launch.options) out += "," + opt;
  if (launch.pinned) {
    switch (launch.stack) {
      case StackId::nccl:
      case StackId::nvshmem:
      case StackId::ucx:
      case StackId::mooncake:
        out += ",gid_index=" + std::to_string(*launch.pinned);
        break;
      case StackId::libfabric:
        out += ",gid_idx=" + std::to_string(*launch.pinned);
        break;
      case StackId::perftest:
      case StackId::ds4:
      case StackId::llama_cpp:
      case StackId::jaccl:
      case StackId::exo:
        break;  // their index is a command-line argument or not theirs to read from the environment
    }
  }
  if (!out.empty()) out[0] = ':';
  return out;
}

std::vector<StackHost> judge_stack_hosts(const fleet::Analysis& a, const Profile& profile, const FleetArgs& o,
                                         const StackInfo* stack, std::string_view options,
                                         const StackLaunch* launch) {
  std::vector<StackHost> out;
  out.reserve(a.host_count());
  for (std::uint32_t h = 0; h < a.host_count(); ++h) {
    const auto& host = a.host(h);
    StackHost sh{.host = host.host, .right = true, .ports = {}};
    for (const auto& t : host.ports) {
      const LinkLayer link = t.port().link_layer;
      if (stack && !stack->runs_on.has(link)) {
        // A port this stack never opens (JACCL on a RoCE port): nothing to judge there.
        sh.ports.push_back(StackPort{.device = t.port().device,
                                     .port = t.port().port,
                                     .index = std::nullopt,
                                     .works = false,
                                     .outcome = "not run here: " + std::string(stack->title) +
                                                " does not run on " + std::string(to_string(link)) + " ports",
                                     .auto_index = std::nullopt,
                                     .right = true});
        continue;
      }
      if (launch && !launch->uses(t.port().device, t.port().port)) {
        // The launch's device list leaves it out: the stack never opens it.
        sh.ports.push_back(StackPort{.device = t.port().device,
                                     .port = t.port().port,
                                     .index = std::nullopt,
                                     .works = false,
                                     .outcome = "not used: " + launch->devices->variable + " leaves it out",
                                     .auto_index = std::nullopt,
                                     .right = true});
        continue;
      }
      // The stack's path on this link layer (ds4-linux on RoCE), with the options given.
      std::optional<Profile> other;
      if (stack && automatic_spec(*stack, link) != stack->automatic) {
        auto p = parse_profile(std::string(automatic_spec(*stack, link)) + std::string(options));
        if (!p) {  // the options do not fit that path: said on the port, never the other spec instead
          sh.ports.push_back(
              StackPort{.device = t.port().device,
                        .port = t.port().port,
                        .index = std::nullopt,
                        .works = false,
                        .outcome = "--stack on " + std::string(to_string(link)) + ": " + p.error().detail,
                        .auto_index = std::nullopt,
                        .right = false});
          sh.right = false;
          continue;
        }
        other = std::move(p).value();
      }
      const StackPrediction p = predict_profile(other ? *other : profile, t, driver_for(t, o.platform));
      const auto good = profiles::automatic().plan(t);
      StackPort sp{.device = t.port().device,
                   .port = t.port().port,
                   .index = p.chose ? std::optional<std::uint32_t>(p.index) : std::nullopt,
                   .works = p.works,
                   .outcome = p.outcome,
                   .auto_index = good ? std::optional<std::uint32_t>(good.value().sgid_index) : std::nullopt,
                   .right = false};
      sp.right = p.works && good && good.value().sgid_index == p.index;
      if (!sp.right) sh.right = false;
      sh.ports.push_back(std::move(sp));
    }
    out.push_back(std::move(sh));
  }
  return out;
}

bool print_stack_hosts(const std::vector<StackHost>& hosts, const Profile& profile, const FleetArgs& o,
                       Output& out) {
  std::size_t right = 0;
  std::vector<std::string> wrong;
  for (const StackHost& h : hosts) {
    if (h.right) {
      ++right;
      continue;
    }
    std::string bad;
    for (const StackPort& p : h.ports) {
      if (p.right) continue;
      bad += (bad.empty() ? "" : "; ") + port_name(p.device, p.port) + ": " +
             (p.index ? "index " + std::to_string(*p.index) + ", " : std::string()) + p.outcome +
             (p.auto_index ? ", auto picks " + std::to_string(*p.auto_index)
                           : std::string(", auto finds nothing"));
    }
    wrong.push_back(h.host + ": " + bad);
  }
  out.write(
      fmt::format("\n--stack {}: the entry to use on {} of {} hosts\n", profile.spec(), right, hosts.size()));
  for (std::size_t i = 0; i < wrong.size() && i < o.limit; ++i) out.write("  " + wrong[i] + "\n");
  if (wrong.size() > o.limit) out.write(fmt::format("  ... and {} more hosts\n", wrong.size() - o.limit));
  return !wrong.empty();
}

std::string stack_json(const std::vector<StackHost>& hosts, const Profile& profile,
                       const StackLaunch* launch) {
  using OJson = nlohmann::ordered_json;
  const auto opt = [](const std::optional<std::uint32_t>& v) { return v ? OJson(*v) : OJson(nullptr); };
  OJson s;
  s["profile"] = profile.spec();  // a profile spec is "profile" in every document
  OJson read = OJson::array();
  if (launch)
    for (const SettingReading& r : launch->read)
      read.push_back({{"variable", r.variable},
                      {"value", r.value},
                      {"origin", r.origin},
                      {"reading", r.reading},
                      {"applied", r.applied}});
  s["settings"] = std::move(read);
  std::size_t right = 0;
  for (const StackHost& h : hosts) right += h.right ? 1 : 0;
  s["hosts_right"] = right;
  s["hosts_wrong"] = hosts.size() - right;
  OJson list = OJson::array();
  for (const StackHost& h : hosts) {
    OJson jh;
    jh["host"] = h.host;
    jh["right"] = h.right;
    OJson ports = OJson::array();
    for (const StackPort& p : h.ports)
      ports.push_back({{"device", p.device},
                       {"port", p.port},
                       {"index", opt(p.index)},
                       {"works", p.works},
                       {"outcome", p.outcome},
                       {"auto_index", opt(p.auto_index)},
                       {"right", p.right}});
    jh["ports"] = std::move(ports);
    list.push_back(std::move(jh));
  }
  s["hosts"] = std::move(list);
  return s.dump(-1, ' ', false, OJson::error_handler_t::replace);
}

result<void> write_env_dir(const fleet::Analysis& a, const std::string& stack, StagedTree& tree,
                           bool& conflict) {
  for (std::uint32_t h = 0; h < a.host_count(); ++h) {
    const auto& host = a.host(h);
    // The host name is a file name here, never a path: a snapshot naming its host "../x" or
    // "/etc/cron.d/x" is refused (join_file_name(), quoting.hpp), not written outside the tree.
    // The host alone must be a file name too: ".." + ".env" is one, ".." is not.
    auto why = file_name_problem(host.host);
    if (!why) why = file_name_problem(host.host + ".env");
    if (why)
      return fail(errc::invalid_argument, "fleet --env-dir: host " + quote_name(host.host, 80) +
                                              " cannot name a file (HOST.env): the name " + *why +
                                              "; nothing was written");
    const EnvPlan plan = plan_env({stack}, host.ports, profiles::automatic());
    std::string text = "# " + stack + " on " + host.host + " (gidpolicy fleet --env-dir)\n";
    for (const auto& c : plan.conflicts) {
      conflict = true;
      text += "# no value: " + c + "\n";
    }
    GIDPOLICY_TRY(body, render_dotenv(plan));
    text += body;
    GIDPOLICY_TRYV(tree.write_file(host.host + ".env", text));
  }
  return success();
}

}  // namespace gidpolicy::cli
