#include "complete.hpp"

#include "commands.hpp"
#include "output.hpp"
#include "subcommands.hpp"

#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/stack_table.hpp>

#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::cli {

namespace {

// Every named option of `app`, including those of its option groups (CLI11 keeps a group as an
// unnamed sub-App), except hidden ones (an empty group: old names such as --policy).
void collect_options(const CLI::App& app, std::vector<const CLI::Option*>& out) {
  for (const CLI::Option* opt : app.get_options({}))
    if (!opt->get_lnames().empty() && !opt->get_group().empty()) out.push_back(opt);
  for (const CLI::App* sub : app.get_subcommands({}))
    if (sub->get_name().empty()) collect_options(*sub, out);
}

const CLI::App* find_sub(const CLI::App& app, std::string_view name) {
  for (const CLI::App* sub : app.get_subcommands({}))
    if (!sub->get_name().empty() && sub->get_name() == name) return sub;
  return nullptr;
}

const CLI::Option* find_option(const CLI::App& sub, std::string_view dashed) {
  std::vector<const CLI::Option*> opts;
  collect_options(sub, opts);
  for (const CLI::Option* opt : opts)
    for (const std::string& l : opt->get_lnames())
      if ("--" + l == dashed) return opt;
  return nullptr;
}

int refuse(const std::string& why) {
  std::cerr << "gidpolicy: --complete: " << why << "\n";
  return kExitUsage;
}

// The words an IsMember validator accepts: CLI11 appends its description, "{a,b,c}", to the
// option's type name ("TEXT:{json,devinfo}").
std::vector<std::string> member_words(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  const std::size_t open = type.find('{');
  const std::size_t close = type.find('}', open == std::string::npos ? 0 : open);
  std::vector<std::string> words;
  if (open == std::string::npos || close == std::string::npos) return words;
  std::string word;
  for (const char c : type.substr(open + 1, close - open - 1)) {
    if (c == ',') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else if (c != ' ') {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

void print_specs(Output& out) {
  for (const BuiltinSpec& s : kBuiltinSpecs) {
    out.print("{}\n", s.name);
    for (const std::string_view alias : s.aliases) out.print("{}\n", alias);
  }
}

// An environment variable, not a command-line argument (perftest's and ds4's start with a dash).
bool variable_is_env(std::string_view name) {
  return !name.empty() && name.front() >= 'A' && name.front() <= 'Z';
}

std::string_view setting_effect_words(SettingEffect e) {
  switch (e) {
    case SettingEffect::family:
      return "the address family it prefers";
    case SettingEffect::range:
      return "the address range it takes GIDs from";
    case SettingEffect::roce_version:
      return "the RoCE version it prefers";
    case SettingEffect::reachability:
      return "which remote addresses it counts as reachable (read; not its local choice)";
    case SettingEffect::not_in_model:
      return "read by a later release than the one modelled: reported, not applied";
    case SettingEffect::not_modelled:
      return "read for a path gidpolicy does not model: reported, not applied";
  }
  return "a setting";
}

// Every variable of the stack table with the stack that reads it and what it does: pins,
// settings, device lists, JACCL's policy, rank and ring.
void print_stack_variables(Output& out) {
  for (const StackInfo& s : kStacks) {
    for (const PinVariable& p : s.pins)
      if (variable_is_env(p.name)) out.print("{}\t{}: pins its GID index\n", p.name, s.name);
    for (const SettingVariable& v : s.settings)
      if (variable_is_env(v.name)) out.print("{}\t{}: {}\n", v.name, s.name, setting_effect_words(v.effect));
    const LaunchSettings& l = s.launch;
    bool pinned = false;
    for (const PinVariable& p : s.pins) pinned = pinned || p.name == l.choice;
    if (variable_is_env(l.choice) && !pinned)
      out.print("{}\t{}: {}\n", l.choice, s.name,
                l.choice_reader == ChoiceReader::patched_fork ? "its GID policy (read only by a patched fork)"
                                                              : "the GID it uses");
    if (variable_is_env(l.read_first))
      out.print("{}\t{}: its device file, read before {} (the default of --jaccl-devices)\n", l.read_first,
                s.name, l.device);
    if (variable_is_env(l.device))
      out.print("{}\t{}: {}\n", l.device, s.name,
                l.device_form == DeviceForm::file ? "its device file (the default of --jaccl-devices)"
                                                  : "the devices (and ports) it uses");
  }
  out.print("{}\tjaccl: this host's rank (the default of --rank)\n", stack_vars::kJacclRank);
  out.print("{}\tjaccl: this host's rank, read after {}\n", stack_vars::kMlxRank, stack_vars::kJacclRank);
  out.print("{}\tjaccl: set, JACCL is asked for its ring (the default of --jaccl-ring)\n",
            stack_vars::kJacclRing);
  out.print("{}\tjaccl: as {}\n", stack_vars::kMlxJacclRing, stack_vars::kJacclRing);
}

bool numeric(const CLI::Option& opt) {
  const std::string type = opt.get_type_name();
  return type.rfind("UINT", 0) == 0 || type.rfind("INT", 0) == 0 || type.rfind("FLOAT", 0) == 0;
}

}  // namespace

int run_complete(const CLI::App& app, int argc, const char* const* argv) {
  const std::vector<std::string> args(argv, argv + argc);
  Output& out = standard_output();
  if (args.size() == 1 && args[0] == "subcommands") {
    for (const SubcommandInfo& s : kSubcommands) out.print("{}\n", s.name);
    return kExitOk;
  }
  if (args.size() == 1 && args[0] == "specs") {
    print_specs(out);
    return kExitOk;
  }
  if (args.size() == 1 && args[0] == "variables") {
    print_stack_variables(out);
    return kExitOk;
  }
  if (!args.empty() && args[0] == "options" && args.size() <= 2) {
    const CLI::App* sub = &app;
    if (args.size() == 2 && !(sub = find_sub(app, args[1]))) return refuse("no subcommand '" + args[1] + "'");
    std::vector<const CLI::Option*> opts;
    collect_options(*sub, opts);
    std::set<std::string> seen;  // each option group has its own --help
    for (const CLI::Option* opt : opts)
      for (const std::string& l : opt->get_lnames())
        if (seen.insert(l).second)
          out.print("--{} {}\n", l,
                    opt->get_expected_max() == 0   ? "flag"
                    : opt->get_delimiter() != '\0' ? "list"
                                                   : "value");
    return kExitOk;
  }
  if (args.size() == 3 && args[0] == "values") {
    const CLI::App* sub = find_sub(app, args[1]);
    if (!sub) return refuse("no subcommand '" + args[1] + "'");
    const CLI::Option* opt = find_option(*sub, args[2]);
    if (!opt) return refuse("gidpolicy " + args[1] + " has no option '" + args[2] + "'");
    const std::string& name = opt->get_lnames().front();
    if (name == "profile" || name == "policy") {
      print_specs(out);
    } else if (name == "for" || name == "stack") {
      // The stack table's names: every row for env --for, the predicted ones for fleet --stack.
      for (const StackInfo& s : kStacks)
        if (name == "for" || s.predicted) out.print("{}\n", s.name);
    } else if (name == "device") {
      out.print(":device\n");
    } else if (const auto words = member_words(*opt); !words.empty()) {
      for (const std::string& w : words) out.print("{}\n", w);
    } else {
      out.print("{}\n", opt->get_expected_max() == 0 || numeric(*opt) ? ":none" : ":file");
    }
    return kExitOk;
  }
  return refuse("expected subcommands, specs, variables, options [SUB] or values SUB OPTION");
}

}  // namespace gidpolicy::cli
