#include "subcommands.hpp"

#include <stdexcept>

namespace gidpolicy::cli {

const SubcommandInfo* find_subcommand(std::string_view name) noexcept {
  for (const SubcommandInfo& s : kSubcommands)
    if (s.name == name) return &s;
  return nullptr;
}

std::string subcommand_names() {
  std::string out;
  const std::size_t n = std::size(kSubcommands);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    out += kSubcommands[i].name;
  }
  return out;
}

CLI::App* add_subcommand(CLI::App& app, std::string_view name) {
  const SubcommandInfo* info = find_subcommand(name);
  if (!info) throw std::logic_error("subcommand '" + std::string(name) + "' is not in kSubcommands");
  CLI::App* sub = app.add_subcommand(std::string(info->name), std::string(info->summary));
  // fake-host passes COMMAND's status through: 2 is COMMAND's there, unless its own options fail.
  sub->footer("Exit codes: " + std::string(info->exit_codes) + "; " + std::string(kExitUsageMeaning) +
              (info->name == "fake-host" ? " (fake-host's own options).\nSee gidpolicy-fake-host(1)."
                                         : ".\nSee gidpolicy(1)."));
  return sub;
}

bool subcommands_match_table(const CLI::App& app, std::string& why) {
  const auto registered = app.get_subcommands({});
  for (const SubcommandInfo& s : kSubcommands) {
    bool found = false;
    for (const CLI::App* sub : registered) found = found || sub->get_name() == s.name;
    if (!found) {
      why = "subcommand '" + std::string(s.name) + "' is in kSubcommands but not registered";
      return false;
    }
  }
  for (const CLI::App* sub : registered) {
    if (!find_subcommand(sub->get_name())) {
      why = "subcommand '" + sub->get_name() + "' is registered but not in kSubcommands";
      return false;
    }
  }
  return true;
}

}  // namespace gidpolicy::cli
