#!/usr/bin/env bash
# The bash completion (tools/completion/gidpolicy.bash) driven as bash drives it: COMP_WORDS and
# COMP_CWORD set, the function called, COMPREPLY read. The expected words come from the sources
# (subcommands.hpp, registry.hpp, stack_table.hpp), not from the binary the completion asks.
#
#   check_completion.sh SOURCE_DIR GIDPOLICY_BINARY COMPLETION_SCRIPT [--devices NAME...]
# With --devices: also `--device <TAB>` offers exactly NAME... (run under `gidpolicy fake-host`,
# whose /sys/class/infiniband holds the table's devices).
set -euo pipefail
src=$1 bin=$2 script=$3
shift 3
fail() {
  echo "check_completion: $*" >&2
  exit 1
}
# shellcheck source=/dev/null
source "$script"
complete_words() {  # complete_words WORD... : the completions of the last word
  COMP_WORDS=("$bin" "$@")
  COMP_CWORD=$#
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _gidpolicy
  printf '%s\n' "${COMPREPLY[@]}" | sort -u
}
expect() {  # expect "WORDS" "EXPECTED (sorted, one a line)"
  local got words
  read -ra words <<<"$1"
  [[ $1 == *" " ]] && words+=("")  # the word being completed is empty
  got=$(complete_words "${words[@]}")
  [[ $got == "$2" ]] || fail "'gidpolicy $1<TAB>': expected [$(echo $2)], got [$(echo $got)]"
}
subs=$(sed -n '/kSubcommands\[\] = {/,/^};/p' "$src/tools/gidpolicy/subcommands.hpp" | grep -o '{"[a-z-]*",' | tr -d '{",')
[[ -n $subs ]] || fail "no subcommand found in subcommands.hpp"
# Every subcommand; a prefix narrows them.
got=$(COMP_WORDS=("$bin" ""); COMP_CWORD=1; COMPREPLY=(); _gidpolicy; printf '%s\n' "${COMPREPLY[@]}" | sort)
[[ $got == "$(sort <<<"$subs")" ]] || fail "'gidpolicy <TAB>': expected [$(echo $subs)], got [$(echo $got)]"
expect "ex" "explain-errno"
expect "fa" "fake-host"
expect "--v" "--version"
# Spec names: every name of the registry after --profile, and a prefix narrows them. The registry's
# rows are positional, each field after a comment naming it (/* name */ "jaccl").
names=$(sed -n '/kBuiltinSpecs\[\] = {/,/^};/p' "$src/include/gidpolicy/policies/registry.hpp" |
  grep -o '/\* name *\*/ "[^"]*"' | sed 's/.*"\(.*\)"/\1/' | sort)
[[ $(wc -l <<<"$names") -ge 5 ]] || fail "fewer than 5 spec names found in registry.hpp"
offered=$(COMP_WORDS=("$bin" select --profile ""); COMP_CWORD=3; COMPREPLY=(); _gidpolicy; printf '%s\n' "${COMPREPLY[@]}" | sort)
missing=$(comm -23 <(echo "$names") <(echo "$offered"))
[[ -z $missing ]] || fail "'gidpolicy select --profile <TAB>' misses spec names: $(echo $missing)"
expect "select --profile ds4-" "ds4-linux"
expect "check --profile jaccl-" $'jaccl-fixed\njaccl-legacy'
# Stack names: every row of the stack table after env --for, the predicted rows after fleet --stack.
table=$(sed -n '/kStacks\[\] = {/,/^};/p' "$src/include/gidpolicy/stack_table.hpp")
stacks=$(grep -o '\.name = "[^"]*"' <<<"$table" | sed 's/.*"\(.*\)"/\1/' | sort)
[[ $(wc -l <<<"$stacks") -ge 9 ]] || fail "fewer than 9 stacks found in stack_table.hpp"
expect "env --for " "$stacks"
predicted=$(awk '/\.name = "/ { n = $0; sub(/.*\.name = "/, "", n); sub(/".*/, "", n) }
                 /\.predicted = true/ { print n }' <<<"$table" | sort)
[[ -n $predicted ]] || fail "no predicted stack found in stack_table.hpp"
expect "fleet --stack " "$predicted"
# env --for takes a list: the item after the last comma completes, the ones before it stay.
expect "env --for nccl,u" "nccl,ucx"
expect "env --for nccl,ucx,m" "nccl,ucx,mooncake"
expect "env --for nccl," "$(sed 's/^/nccl,/' <<<"$stacks")"
expect "env --for nv" "nvshmem"
# Options of the subcommand, values of an option, files where a path goes.
expect "show --js" "--json"
expect "select --ex" "--explain"
expect "convert --to " $'devinfo\njson\nshow_gids\nsysfs'
expect "check --platform d" "darwin"
expect "show --port " ""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/table-one.json"
expect "show --input $tmp/table-o" "$tmp/table-one.json"
# After `fake-host ... --`: a command.
expect "fake-host --tables t.json -- bas" "$(compgen -c -- bas | sort -u)"
if [[ ${1:-} == --devices ]]; then
  shift
  expect "show --device " "$(printf '%s\n' "$@" | sort)"
  expect "watch --device " "$(printf '%s\n' "$@" | sort)"
fi
echo "check_completion: $(wc -w <<<"$subs") subcommands, $(wc -l <<<"$names") spec names, options, values and files complete"
