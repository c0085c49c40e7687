#!/usr/bin/env bash
# `gidpolicy --help` and every subcommand's --help, as an installed binary prints them: exit 0;
# no `Excludes:` (or `Needs:`) line that names nothing; each subcommand's own exit codes (what 0,
# 1 and 2 mean for it, its footer); and no path of the source tree (examples/tables/...,
# docs/cli.md, ...), which an installed system does not have. The subcommands come from
# tools/gidpolicy/subcommands.hpp, not from the binary.
#
#   check_help.sh SOURCE_DIR GIDPOLICY_BINARY
set -euo pipefail
src=$1 bin=$2
fail() {
  echo "check_help: $*" >&2
  exit 1
}
subs=$(sed -n '/kSubcommands\[\] = {/,/^};/p' "$src/tools/gidpolicy/subcommands.hpp" | grep -o '{"[a-z-]*",' | tr -d '{",')
[[ $(wc -w <<<"$subs") -ge 10 ]] || fail "fewer than 10 subcommands found in subcommands.hpp"
# A path inside the source tree: one of its top directories, not after another path component.
repo_path='(^|[^[:alnum:]_/.<-])(examples|tests|docs|tools|fakes|schemas|include|src|scripts|python|debian|build)/'
declare -A footers=()
for sub in "" $subs; do
  name=${sub:-gidpolicy}
  text=$("$bin" $sub --help) || fail "'gidpolicy $sub --help' exited $?"
  [[ -n $text ]] || fail "'gidpolicy $sub --help' printed nothing"
  # CLI11 prints "Excludes:" after an option's name, then the options it excludes: none shown
  # (a hidden one) leaves the label alone at the end of the line or before the description.
  if bad=$(grep -nE '(Excludes|Needs):([[:space:]]*$|[[:space:]]{2,})' <<<"$text"); then
    fail "'gidpolicy $sub --help': a line that names nothing: $bad"
  fi
  if bad=$(grep -nE "$repo_path" <<<"$text"); then
    fail "'gidpolicy $sub --help' names a path of the source tree: $bad"
  fi
  footer=$(grep -E '^Exit codes: ' <<<"$text") || fail "'gidpolicy $sub --help': no 'Exit codes:' line"
  [[ $footer == *"2 bad usage, unreadable input or output that could not be written"* ]] ||
    fail "'gidpolicy $sub --help': the exit codes do not say what 2 means: $footer"
  if [[ -n $sub && $sub != fake-host ]]; then
    [[ $footer == "Exit codes: 0 "* ]] || fail "'gidpolicy $sub --help': the exit codes do not start with 0: $footer"
  fi
  footers[$name]=$footer
done
# Each subcommand's footer is its own, not the top level's repeated.
for sub in $subs; do
  [[ ${footers[$sub]} != "${footers[gidpolicy]}" ]] || fail "'gidpolicy $sub --help' has the top level's exit codes"
done
[[ ${footers[fake-host]} == *"125 "* ]] || fail "fake-host's exit codes do not say what 125 means: ${footers[fake-host]}"
[[ ${footers[check]} == *"; 1 "* ]] || fail "check's exit codes do not say what 1 means: ${footers[check]}"
echo "check_help: gidpolicy and $(wc -w <<<"$subs") subcommands: exit codes of their own, no empty Excludes:, no source paths"
