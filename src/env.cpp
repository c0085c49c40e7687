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

// How stack `s`'s device setting writes `t`'s port ("mlx5_0", "mlx5_0:1", "=mlx5_0:1").
std::string device_text(const StackInfo& s, const GidTable& t) {
  switch (s.launch.device_form) {
    case DeviceForm::none:
      return {};
    case DeviceForm::device:
      return t.port().device;
    case DeviceForm::device_port:
      return dev_port(t);
    case DeviceForm::exact_device_port:
      return "=" + dev_port(t);
    case DeviceForm::file:  // a file names the devices: plan_jaccl_row() writes it, never a port
      return {};
  }
  return {};
}

// The device-selection setting that pairs with one process per HCA; a stack without one (its
// own configuration lists devices: Mooncake) is told to name only that device there.
std::string one_hca_setting(const StackInfo& s, const GidTable& t) {
  if (s.launch.device.empty()) return "its device list naming only " + t.port().device;
  return std::string(s.launch.device) + "=" + device_text(s, t);
}

/// jaccl with a device file: every device of this host's row must be one of its ports (JACCL
/// opens port 1) with a GID the profile picks; then the jaccl row's device variable names the file. Each
/// device also says what JACCL as it ships (the jaccl profile) would do there.
void plan_jaccl_row(const JacclRow& row, const std::vector<GidTable>& tables, const Profile& profile,
                    EnvPlan& plan) {
  const std::vector<std::string>& devices = row.devices;
  const std::string layout = row.ring ? "ring" : "mesh";
  const std::string where = row.path + " (rank " + std::to_string(row.rank) + " of " +
                            std::to_string(row.ranks) + ", JACCL's " + layout + ")";
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
  const StackInfo& s = stack_row(StackId::jaccl);
  const std::string var(s.launch.device);
  plan.settings.push_back({var, row.path});
  plan.why.push_back("jaccl: " + var + "=" + row.path + ": rank " + std::to_string(row.rank) + " opens " +
                     list + " (JACCL reads " + std::string(s.launch.read_first) +
                     " first: leave it unset, or set it to the same file)");
}

}  // namespace

result<std::vector<std::string>> parse_env_stacks(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& s : items) {
    if (!find_stack(s))
      return fail(errc::invalid_argument,
                  "--for: expected one of " + stack_names(StackSet::all) + ", found '" + bounded(s) + "'");
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  if (out.empty())
    return fail(errc::invalid_argument, "--for: expected one of " + stack_names(StackSet::all));
  return out;
}

namespace {

// A stack that takes one index per process for every HCA it uses: one value when every port's
// pick has the same index, otherwise none and a conflict naming how to run one process per HCA.
void plan_per_process(const StackInfo& s, const std::vector<Pick>& picks,
                      const std::vector<std::string>& left_out, const std::vector<std::string>& unpicked,
                      const StackLaunch& launch, bool pin, EnvPlan& plan) {
  const std::string stack(s.name);
  const std::string var(s.launch.choice);
  // The stack's own choice on a port, under the launch's other settings (its pins left out).
  const auto own_on = [&](const GidTable& t) -> result<StackPrediction> {
    auto prof = stack_profile_for(s.id, t, launch, false);
    if (!prof) return prof.error();
    return predict_profile(prof.value(), t, DriverModel::for_link_layer(t.port().link_layer));
  };
  std::set<std::uint32_t> indices;
  for (const auto& p : picks) indices.insert(p.index);
  if (indices.size() > 1) {
    std::string c = stack + " takes one GID index per process (" + var + "), but";
    std::string way;
    for (std::size_t i = 0; i < picks.size(); ++i) {
      c += (i ? "," : "") + std::string(" ") + port_name(*picks[i].table) + " needs " +
           std::to_string(picks[i].index);
      way += (i ? "; " : "") + one_hca_setting(s, *picks[i].table) + " with " + var + "=" +
             std::to_string(picks[i].index);
    }
    plan.conflicts.push_back(c + ": run one process per HCA (" + way + ")");
    return;
  }
  const std::uint32_t index = *indices.begin();
  // No pin where the stack already picks it on every port it uses (and no port it opens was left
  // out): a pin only outlives the table it was right for.
  bool own_right = !pin && unpicked.empty();
  for (const auto& p : picks) {
    if (!own_right) break;
    const auto own = own_on(*p.table);
    own_right = own && own.value().chose && own.value().works && own.value().index == p.index;
  }
  if (own_right) {
    std::string where;
    for (const auto& p : picks) where += (where.empty() ? "" : ", ") + port_name(*p.table);
    plan.why.push_back(stack + ": its own choice" +
                       (launch.read.empty() ? std::string() : std::string(" under the settings given")) +
                       " is already index " + std::to_string(index) + " on every port it uses (" + where +
                       "): no " + var + " needed" +
                       (launch.pin_variable.empty()
                            ? std::string()
                            : "; the " + launch.pin_variable + " set can be deleted") +
                       " (--pin prints one anyway)");
    return;
  }
  plan.settings.push_back({var, std::to_string(index)});
  // The device list: always where the stack would otherwise use (and check) every device, only
  // when a port was left out where it would otherwise use that port too.
  const bool list = s.launch.device_list == DeviceList::always ||
                    (s.launch.device_list == DeviceList::when_left_out && !left_out.empty());
  if (list) {
    std::string devs;
    for (const auto& p : picks) {
      std::string d = device_text(s, *p.table);
      // NCCL's exact-match '=' prefixes the whole list once.
      if (s.launch.device_form == DeviceForm::exact_device_port && !devs.empty()) d.erase(0, 1);
      devs += (devs.empty() ? "" : ",") + d;
    }
    plan.settings.push_back({std::string(s.launch.device), devs});
  }
  for (const auto& p : picks) {
    const std::string target = "index " + std::to_string(index) + " (" + p.gid.to_string() + " " +
                               std::string(to_string(p.type)) + ")";
    const auto own = own_on(*p.table);
    if (!own) {
      plan.why.push_back(stack + " on " + port_name(*p.table) + ": " + own.error().detail + "; " + var + "=" +
                         std::to_string(index) + " makes it use " + target);
    } else if (own.value().chose && own.value().works && own.value().index == index) {
      plan.why.push_back(stack + " on " + port_name(*p.table) + ": its own choice is already " + target +
                         "; " + var + " only pins it");
    } else {
      const StackPrediction& o = own.value();
      plan.why.push_back(stack + " on " + port_name(*p.table) + ": its own choice " +
                         (o.chose ? "is index " + std::to_string(o.index) + ", which " + o.outcome
                                  : std::string(o.outcome)) +
                         " (" + o.why + "): " + var + "=" + std::to_string(index) + " makes it use " +
                         target);
    }
  }
}

// A stack given its device, port and index on the command line: one line per port. For a stack
// whose choice is predicted, what it would do without the index argument.
void plan_per_port_args(const StackInfo& s, const std::vector<Pick>& picks, EnvPlan& plan) {
  const std::string stack(s.name);
  const std::string choice(s.launch.choice);
  for (const auto& p : picks) {
    const std::string idx = std::to_string(p.index);
    plan.args.push_back(stack + ": " + fix_setting(s, *p.table, p.index));
    if (!s.predicted) continue;
    const auto own = predict_stack(s.id, *p.table);
    if (!own) continue;
    const StackPrediction& o = own.value();
    plan.why.push_back(
        stack + " on " + port_name(*p.table) +
        (o.chose && o.works && o.index == p.index
             ? ": without " + choice + " it picks index " + idx + " itself; " + choice + " only pins it"
             : ": without " + choice + " it " +
                   (o.chose ? "picks index " + std::to_string(o.index) + ", which " + o.outcome
                            : o.outcome)));
  }
}

// A stack that opens one device per process: the first usable port, the others named as the
// alternatives.
void plan_one_device(const StackInfo& s, const std::vector<Pick>& picks, EnvPlan& plan) {
  const std::string device(s.launch.device);
  const std::string choice(s.launch.choice);
  plan.settings.push_back({device, device_text(s, *picks.front().table)});
  plan.settings.push_back({choice, std::to_string(picks.front().index)});
  for (std::size_t i = 1; i < picks.size(); ++i)
    plan.why.push_back(std::string(s.name) + " uses one device: or " + device + "=" +
                       device_text(s, *picks[i].table) + " with " + choice + "=" +
                       std::to_string(picks[i].index));
}

}  // namespace

EnvPlan plan_env(const std::vector<std::string>& stacks, const std::vector<GidTable>& tables,
                 const Profile& profile, const std::optional<JacclRow>& jaccl) {
  EnvOptions pinned;
  pinned.pin = true;
  return plan_env(stacks, tables, profile, jaccl, pinned);
}

EnvPlan plan_env(const std::vector<std::string>& stacks, const std::vector<GidTable>& tables,
                 const Profile& profile, const std::optional<JacclRow>& jaccl, const EnvOptions& options) {
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
    const StackInfo* row = find_stack(stack);
    if (!row) {  // parse_env_stacks() lets none through; a caller that skipped it is told
      plan.conflicts.push_back(stack + ": not a stack (expected one of " + stack_names(StackSet::all) + ")");
      continue;
    }
    const StackInfo& s = *row;
    // The ports this stack runs on (StackInfo::runs_on): NCCL's settings name no Thunderbolt port,
    // JACCL's no RoCE one.
    const StackLaunch launch = read_launch(s.id, options.settings);
    std::vector<Pick> here;
    std::vector<std::string> not_here;
    for (const Pick& p : picks) {
      if (!launch.uses(p.table->port().device, p.table->port().port)) {
        // The launch's own device list leaves it out: the stack never opens it.
        plan.why.push_back(std::string(s.name) + ": " + port_name(*p.table) +
                           " left out: " + launch.devices->variable + " leaves it out");
        continue;
      }
      (s.runs_on.has(p.table->port().link_layer) ? here.push_back(p)
                                                 : not_here.push_back(port_name(*p.table)));
    }
    if (here.empty()) {
      plan.conflicts.push_back(
          std::string(s.name) + ": " + std::string(s.title) + " runs on " + runs_on_text(s.runs_on) +
          " ports, and none of these is one (" +
          (not_here.empty() ? std::string("no port") : not_here.front()) +
          (not_here.size() > 1 ? " and " + std::to_string(not_here.size() - 1) + " more" : "") + ")");
      continue;
    }
    for (const auto& n : not_here)
      plan.why.push_back(std::string(s.name) + ": " + n + " left out: " + std::string(s.title) +
                         " does not run on its link layer");
    std::vector<std::string> left(left_out);
    left.insert(left.end(), not_here.begin(), not_here.end());
    switch (s.env) {
      case EnvShape::per_process_variable:
        plan_per_process(s, here, left, left_out, launch, options.pin, plan);
        break;
      case EnvShape::per_port_args:
        plan_per_port_args(s, here, plan);
        break;
      case EnvShape::one_device_per_process:
        plan_one_device(s, here, plan);
        break;
      case EnvShape::jaccl_device_file:
        // The device file names, per rank, the devices it opens; this host is one row.
        if (jaccl)
          plan_jaccl_row(*jaccl, tables, profile, plan);
        else
          plan.why.push_back(
              "jaccl: " + std::string(s.launch.device) +
              " names JACCL's device file, a matrix over every host's devices: give it with --jaccl-devices "
              "FILE --rank R (or " +
              std::string(s.launch.device) + ", " + std::string(stack_vars::kMlxRank) +
              ") to check this host's row, or check the whole matrix with gidpolicy fleet "
              "--topology jaccl");
        // The stack as it ships: its choice is fixed (JACCL routes from index 1), so where it fails
        // no variable helps and the plan fails, saying what must hold on the host instead.
        for (const Pick& p : here) {
          if (jaccl && std::find(jaccl->devices.begin(), jaccl->devices.end(), p.table->port().device) ==
                           jaccl->devices.end())
            continue;  // a port this rank's row does not open
          if (auto why = unsteerable_failure(s, *p.table, DriverModel::for_table(*p.table)))
            plan.conflicts.push_back(std::string(s.name) + ": " + *why);
        }
        // The patched fork takes the policy itself.
        plan.settings.push_back({std::string(s.launch.choice), spec});
        plan.why.push_back(std::string(s.name) + ": " + std::string(s.launch.choice) + "=" + spec +
                           " needs the patched JACCL fork: " + std::string(s.title) +
                           " as it ships ignores it");
        break;
    }
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
