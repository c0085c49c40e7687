// The subcommands of `gidpolicy`, one table: each subcommand's name, one-line summary and exit
// codes (its --help ends with them). Every message that lists subcommands comes from it: --help (CLI11 prints
// the summaries registered through add_subcommand() below), the unknown-subcommand error and the
// missing-subcommand error; docs/cli.md's synopsis and sections are checked against --help
// (tests/integration/cli_test.cpp, Usage.DocsListExactlyTheSubcommands).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace gidpolicy::cli {

struct SubcommandInfo {
  std::string_view name;
  std::string_view summary;     ///< one line, as --help shows it
  std::string_view exit_codes;  ///< what 0, 1 (and 125-127) mean for it; 2 is always usage or input
};

/// What exit status 2 means for every subcommand (each footer ends with it).
inline constexpr std::string_view kExitUsageMeaning =
    "2 bad usage, unreadable input or output that could not be written";

inline constexpr SubcommandInfo kSubcommands[] = {
    {"show", "Print the GID table(s): index, GID, type, IPv4, netdev, flags", "0 the tables printed"},
    {"select", "The entry a profile advertises and the sgid_index it routes from",
     "0 the profile selected an entry and routes from its index; 1 the selection failed or the routed index "
     "does not hold the advertised GID"},
    {"check", "Every named profile side by side: advertised GID, sgid_index, agreement, predicted RTR",
     "0 every profile shown agrees and its RTR is predicted to work (--stacks: every stack's own choice "
     "works; --pins: every pin is right); 1 one does not"},
    {"explain-errno", "What an RTR errno means on a platform, for a table's entry", "0 the causes printed"},
    {"convert", "Write the table(s) in another format",
     "0 written (a note on stderr says what the target format could not hold)"},
    {"simulate", "Connect fake hosts built from tables (one each) and report which pairs work",
     "0 every pair connects; 1 a pair does not"},
    {"watch",
     "Follow live GID tables through async events: one line per change and its re-plan, until SIGINT",
     "0 stopped by SIGINT or SIGTERM"},
    {"env", "The variables (or arguments) that make each stack use the GID a profile picks, and why",
     "0 the settings printed; 1 a stack cannot be made to use the profile's pick (the reason on stderr)"},
    {"fleet", "Which links of a whole cluster connect, from one `show --json` snapshot per host",
     "0 every link connects and no address is held by two hosts; 1 otherwise"},
    {"fake-host",
     "Run a program on a host that looks like the table (sysfs, /dev/infiniband, the fake libibverbs; "
     "--netns: its netdevs)",
     "COMMAND's own status (128 + N when signal N ended it); 125 the fake host could not be made; 126 "
     "COMMAND cannot be run; 127 COMMAND is not found"},
    {"probe",
     "Try one link on the wire with the GID a profile or stack uses: each direction connected (with its "
     "round trip) or its failure, beside the prediction",
     "0 every direction connected and its data arrived; 1 a direction failed, or the peer is absent or died "
     "(a peer speaking another protocol version or sending garbage is 2)"},
    {"doctor",
     "Is this host ready for RDMA: every port, GID, netdev address and peer route checked, each cause "
     "ranked with the commands that fix it (printed, never run)",
     "0 nothing blocks (warnings and notes may remain); 1 something blocks, a host without any RDMA device "
     "too"},
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
