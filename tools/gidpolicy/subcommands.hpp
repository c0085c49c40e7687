// The subcommands of `gidpolicy`, one table: each subcommand's name, synopsis and one-line
// summary. Every message that lists subcommands comes from it: --help (CLI11 prints the
// summaries registered through add_subcommand() below), the unknown-subcommand error and the
// missing-subcommand error; docs/cli.md's synopsis and sections are checked against --help
// (tests/integration/cli_test.cpp, Usage.DocsListExactlyTheSubcommands).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace gidpolicy::cli {

struct SubcommandInfo {
  std::string_view name;
  std::string_view summary;  ///< one line, as --help shows it
};

inline constexpr SubcommandInfo kSubcommands[] = {
    {"show", "Print the GID table(s): index, GID, type, IPv4, netdev, flags"},
    {"select", "The entry a profile advertises and the sgid_index it routes from"},
    {"check", "Every named profile side by side: advertised GID, sgid_index, agreement, predicted RTR"},
    {"explain-errno", "What an RTR errno means on a platform, for a table's entry"},
    {"convert", "Write the table(s) in another format"},
    {"simulate", "Connect fake hosts built from tables (one each) and report which pairs work"},
    {"watch",
     "Follow live GID tables through async events: one line per change and its re-plan, until SIGINT"},
    {"env", "The variables (or arguments) that make each stack use the GID a profile picks, and why"},
    {"fleet", "Which links of a whole cluster connect, from one `show --json` snapshot per host"},
    {"fake-host",
     "Run a program on a host that looks like the table (sysfs, /dev/infiniband, the fake libibverbs; "
     "--netns: its netdevs)"},
    {"probe",
     "Try one link on the wire with the GID a profile or stack uses: each direction connected (with its "
     "round trip) or its failure, beside the prediction"},
    {"doctor",
     "Is this host ready for RDMA: every port, GID, netdev address and peer route checked, each cause "
     "ranked with the commands that fix it (printed, never run)"},
};

/// The row named `name`; nullptr when there is none.
const SubcommandInfo* find_subcommand(std::string_view name) noexcept;

/// "show, select, ..., watch or fleet": every subcommand, in table order.
std::string subcommand_names();

/// Registers the subcommand `name` (a row of kSubcommands) with its summary. A name that is not
/// in the table is a programming error: it throws std::logic_error, which main() reports.
CLI::App* add_subcommand(CLI::App& app, std::string_view name);

/// Every row registered on `app`, and nothing else: false names the first mismatch in `why`.
bool subcommands_match_table(const CLI::App& app, std::string& why);

}  // namespace gidpolicy::cli
