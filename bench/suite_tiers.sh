#!/usr/bin/env bash
# The test suite's tiers against their goals (docs/testing.md, docs/performance.md): a benchmark,
# not a test, because the figures are wall times of this machine. Prints each tier's time and the
# test counts of each tree, and says MET or MISSED beside each goal; exit 1 if a goal is missed.
#
#   bench/suite_tiers.sh [quick] [full-suite]     (default: both)
#
#   quick       on the current checkout: the dev tree is built (warm), one source is touched
#               (src/gid.cpp, its mtime only), then `scripts/test --quick` is timed.
#               Goal: <= 120 s.
#   full-suite  on a fresh clone of HEAD in a temporary directory: `scripts/test` (the README's
#               test command) is timed, and the JUnit files it leaves are counted.
#               Goals: <= 1,500 s; the dev tree runs >= 1,250 tests and the asan tree >= 1,231
#               less the `third-party` tests it skips by design (the counts of the tree before
#               the tiers; the issue asked for 1,237 and 1,218); and the wall time within 1.15x of the
#               CPU bound scripts/test prints (CPU / cores).
#
# The goals are the issue's figures for this project's 2-core machine; on another machine read
# the figures, not the verdicts.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
what=("$@")
((${#what[@]})) || what=(quick full-suite)
status=0
verdict() {  # verdict <label> <value> <op> <goal>
  local ok
  ok=$(awk -v v="$2" -v g="$4" -v op="$3" 'BEGIN { print (op == "<=" ? v <= g : v >= g) ? "MET" : "MISSED" }')
  printf '   %-52s %8s %s %-8s %s\n' "$1" "$2" "$3" "$4" "$ok"
  [ "$ok" = MET ] || status=1
}

for w in "${what[@]}"; do
  case $w in
    quick)
      cd "$here"
      echo "== quick tier: warm dev tree, one source touched, scripts/test --quick"
      scripts/test --quick >/dev/null 2>&1 || { echo "   the warm-up run failed (run scripts/test --quick)"; status=1; continue; }
      touch src/gid.cpp
      t0=$(date +%s.%N)
      log=$(mktemp)
      if ! scripts/test --quick >"$log" 2>&1; then
        tail -n 30 "$log"
        echo "   scripts/test --quick FAILED"
        status=1
      fi
      t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
      sed -n '/^== stage times/,/^== quick tier passed/p' "$log" | sed 's/^/   /'
      scripts/ctest-report --counts build/dev/Testing/junit.xml "dev (quick)" | sed 's/^/   /'
      verdict "scripts/test --quick after a one-file change (s)" "$t" "<=" 120
      rm -f "$log"
      ;;
    full-suite)
      d=$(mktemp -d)
      git clone -q "$here" "$d/gidpolicy"
      cd "$d/gidpolicy"
      echo "== full suite: scripts/test on a fresh clone ($d/gidpolicy)"
      log=$d/suite.log
      t0=$(date +%s)
      rc=0
      scripts/test >"$log" 2>&1 || rc=$?
      t=$(($(date +%s) - t0))
      if ((rc)); then
        tail -n 40 "$log"
        echo "   scripts/test FAILED (exit $rc); its log: $log"
        status=1
        continue
      fi
      sed -n '/^== stage times/,/^== all stages passed/p' "$log" | sed 's/^/   /'
      bound=$(sed -n 's/.*no schedule finishes in less than \([0-9]*\) s.*/\1/p' "$log")
      dev_n=$(scripts/ctest-report --counts build/dev/Testing/junit.xml dev)
      asan_n=$(scripts/ctest-report --counts build/asan/Testing/junit.xml asan)
      third=$(ctest --test-dir build/dev -N -L third-party | sed -n 's/^Total Tests: //p')
      echo "   $dev_n"
      echo "   $asan_n; the dev tree's third-party tests, which asan skips: $third"
      verdict "scripts/test on a fresh clone (s)" "$t" "<=" 1500
      verdict "wall / CPU bound (x)" "$(awk -v t="$t" -v b="$bound" 'BEGIN { printf "%.2f", t / b }')" "<=" 1.15
      verdict "dev tree tests run" "$(awk '{print $2}' <<<"$dev_n")" ">=" 1250
      verdict "asan tree tests run (goal: 1,231 less third-party)" "$(awk '{print $2}' <<<"$asan_n")" ">=" $((1231 - third))
      cd "$here"
      rm -rf "$d"
      ;;
    *)
      echo "usage: bench/suite_tiers.sh [quick] [full-suite]" >&2
      exit 2
      ;;
  esac
done
exit $status
