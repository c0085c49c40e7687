// `gidpolicy --complete ...`: what the shell completion (tools/completion/gidpolicy.bash) asks
// the binary, so the words it offers are the ones this binary parses: the subcommands and
// options registered on the CLI11 model, the values its validators accept, the spec names of
// the policy registry (include/gidpolicy/policies/registry.hpp) and the stack names of the stack
// table (include/gidpolicy/stack_table.hpp: env --for, fleet --stack). Not listed in --help: it is an
// interface for the completion script, documented in docs/cli.md ("Shell completion").
//
//   gidpolicy --complete subcommands        every subcommand, one a line
//   gidpolicy --complete options [SUB]      SUB's options (the top level's without SUB), one a
//                                           line as "NAME flag", "NAME value" or "NAME list" (a
//                                           comma-separated list of values: env --for nccl,ucx)
//   gidpolicy --complete values SUB OPTION  what OPTION takes: its words one a line, or one marker
//                                           line: ":file" (a path), ":device" (an RDMA device of
//                                           this host), ":none" (a number or free text)
//   gidpolicy --complete specs              every built-in spec name and alias
//   gidpolicy --complete variables          every environment variable of the stack table, one
//                                           line per variable and stack that reads it:
//                                           "NAME<TAB>STACK: what it does" (the man page's
//                                           ENVIRONMENT section is generated from it)
#pragma once

#include <CLI/CLI.hpp>

namespace gidpolicy::cli {

/// Answers the query in args (argv after "--complete") from `app`, fully registered. Exit 0, or
/// kExitUsage with one line on stderr for a query it does not know (an unknown subcommand or
/// option names them).
int run_complete(const CLI::App& app, int argc, const char* const* argv);

}  // namespace gidpolicy::cli
