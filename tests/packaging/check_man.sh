#!/usr/bin/env bash
# The generated man pages: man(1) reads them without a warning (man --warnings, as lintian runs
# it), gidpolicy(1) has a synopsis line and a section for every subcommand of
# tools/gidpolicy/subcommands.hpp, gidpolicy-fake-host(1) documents fake-host, and gidpolicy(3)
# every function gidpolicy.h declares; gidpolicy(1), gidpolicy-collect(1) and
# gidpolicy-probe-mpi(1) have ENVIRONMENT (every variable of the stack table, in gidpolicy(1)) and
# EXAMPLES sections; gidpolicy-probe-mpi(1) has every section a program's page needs and an OPTIONS
# entry for every option its SYNOPSIS names; no page names a path of the source tree.
#
#   check_man.sh SOURCE_DIR MAN_DIR
set -euo pipefail
src=$1 man_dir=$2
fail() {
  echo "check_man: $*" >&2
  exit 1
}
export LC_ALL=C.UTF-8 MANWIDTH=200
for page in gidpolicy.1 gidpolicy-fake-host.1 gidpolicy.3; do
  [[ -s $man_dir/$page ]] || fail "$man_dir/$page is missing"
  warnings=$(man --warnings -E UTF-8 -l -Tutf8 -Z "$man_dir/$page" 2>&1 >/dev/null) || fail "man -l $page failed: $warnings"
  [[ -z $warnings ]] || fail "$page: man --warnings: $warnings"
done

subs=$(sed -n '/kSubcommands\[\] = {/,/^};/p' "$src/tools/gidpolicy/subcommands.hpp" | grep -o '{"[a-z-]*",' | tr -d '{",')
[[ -n $subs ]] || fail "no subcommand found in subcommands.hpp"
text=$(man -P cat -l "$man_dir/gidpolicy.1")
# The COMMANDS section: from its heading to the next section heading.
commands=$(awk '/^COMMANDS$/ { on = 1; next } on && /^[A-Z]/ { on = 0 } on' <<<"$text")
for sub in $subs; do
  grep -q "^       gidpolicy $sub\b" <<<"$text" || fail "gidpolicy.1: no synopsis line for '$sub'"
  grep -q "^   $sub\b" <<<"$commands" || fail "gidpolicy.1: no section for '$sub' under COMMANDS"
done

text=$(man -P cat -l "$man_dir/gidpolicy-fake-host.1")
grep -q "^       gidpolicy fake-host --tables FILE" <<<"$text" || fail "gidpolicy-fake-host.1: no synopsis"
grep -q "LD_LIBRARY_PATH" <<<"$text" || fail "gidpolicy-fake-host.1: says nothing of LD_LIBRARY_PATH"

text=$(man -P cat -l "$man_dir/gidpolicy.3")
funcs=$(grep -o '\bgidpolicy_[a-z_0-9]*(' "$src/include/gidpolicy/gidpolicy.h" | sort -u | tr -d '(')
for f in $funcs; do
  grep -q "$f" <<<"$text" || fail "gidpolicy.3: no $f"
done
# Installed pages: ENVIRONMENT and EXAMPLES sections (gidpolicy(1), gidpolicy-fake-host(1) and
# gidpolicy-collect(1)), and
# no path of the source tree (an installed system has no examples/tables/ or docs/).
# The hand-written pages (installed as they are in the tree).
collect_page=$src/tools/collect/gidpolicy-collect.1
probe_page=$src/docs/man/gidpolicy-probe-mpi.1
for page in "$collect_page" "$probe_page"; do
  warnings=$(man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null) || fail "man -l $(basename "$page") failed"
  [[ -z $warnings ]] || fail "$(basename "$page"): man --warnings: $warnings"
done
repo_path='(^|[^[:alnum:]_/.<-])(examples|tests|docs|tools|fakes|schemas|include|src|scripts|python|debian|build)/'
for page in "$man_dir/gidpolicy.1" "$man_dir/gidpolicy-fake-host.1" "$man_dir/gidpolicy.3" "$collect_page" "$probe_page"; do
  text=$(man -P cat -l "$page")
  if bad=$(grep -nE "$repo_path" <<<"$text"); then
    fail "$(basename "$page"): names a path of the source tree: $bad"
  fi
done
for page in "$man_dir/gidpolicy.1" "$man_dir/gidpolicy-fake-host.1" "$collect_page" "$probe_page"; do
  text=$(man -P cat -l "$page")
  for section in ENVIRONMENT EXAMPLES; do
    body=$(awk -v s="$section" '$0 == s { on = 1; next } on && /^[A-Z]/ { on = 0 } on' <<<"$text")
    [[ $(grep -c '[[:alnum:]]' <<<"$body") -ge 3 ]] || fail "$(basename "$page"): no $section section (or an empty one)"
  done
done
# gidpolicy-probe-mpi(1): a program's sections, each with a body; its synopsis; every option the
# SYNOPSIS names (and --help, --version) an entry of OPTIONS; the three exit statuses.
text=$(man -P cat -l "$probe_page")
for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" "SEE ALSO"; do
  body=$(awk -v s="$section" '$0 == s { on = 1; next } on && /^[A-Z]/ { on = 0 } on' <<<"$text")
  [[ $(grep -c '[[:alnum:]]' <<<"$body") -ge 1 ]] || fail "gidpolicy-probe-mpi.1: no $section section (or an empty one)"
done
grep -q '^       gidpolicy-probe-mpi --help | --version$' <<<"$text" || fail "gidpolicy-probe-mpi.1: no synopsis line for --help | --version"
synopsis=$(awk '$0 == "SYNOPSIS" { on = 1; next } on && /^[A-Z]/ { on = 0 } on' <<<"$text")
options_body=$(awk '$0 == "OPTIONS" { on = 1; next } on && /^[A-Z]/ { on = 0 } on' <<<"$text")
probe_options=$(grep -o -- '--[a-z][a-z-]*' <<<"$synopsis" | sort -u)
[[ $(wc -w <<<"$probe_options") -ge 18 ]] || fail "gidpolicy-probe-mpi.1: fewer than 18 options in its SYNOPSIS: $probe_options"
for opt in $probe_options; do
  grep -q -- "^       $opt\b" <<<"$options_body" || fail "gidpolicy-probe-mpi.1: OPTIONS has no entry for $opt"
done
exit_body=$(awk '$0 == "EXIT STATUS" { on = 1; next } on && /^[A-Z]/ { on = 0 } on' <<<"$text")
for code in 0 1 2; do
  grep -q "^       $code " <<<"$exit_body" || fail "gidpolicy-probe-mpi.1: EXIT STATUS does not list $code"
done

# gidpolicy(1)'s ENVIRONMENT names every variable of the stack table (namespace stack_vars in
# stack_table.hpp; the arguments, -x or --rdma-gid-index, are not variables) and the stacks that
# read them.
text=$(man -P cat -l "$man_dir/gidpolicy.1")
environment=$(awk '$0 == "ENVIRONMENT" { on = 1; next } on && /^[A-Z]/ { on = 0 } on' <<<"$text")
vars=$(sed -n '/^namespace stack_vars {/,/^}  \/\/ namespace stack_vars/p' "$src/include/gidpolicy/stack_table.hpp" |
  grep -o '= "[A-Z][A-Z0-9_]*";' | tr -d '=";' | sort -u)
[[ $(wc -w <<<"$vars") -ge 20 ]] || fail "fewer than 20 variables found in stack_table.hpp's stack_vars"
for v in $vars; do
  grep -q "^       $v\b" <<<"$environment" || fail "gidpolicy.1: ENVIRONMENT does not list $v"
done
grep -q "nccl: pins its GID index" <<<"$environment" || fail "gidpolicy.1: ENVIRONMENT does not say which stack reads a pin"

echo "check_man: 5 pages clean; gidpolicy-probe-mpi(1) documents its $(wc -w <<<"$probe_options") options; $(wc -w <<<"$subs") subcommands and $(wc -w <<<"$funcs") C functions documented; ENVIRONMENT lists $(wc -w <<<"$vars") stack variables; EXAMPLES; no source paths"
