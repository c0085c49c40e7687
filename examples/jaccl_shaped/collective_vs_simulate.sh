#!/bin/sh
# Runs jaccl_collective (one process per host table, on the fake libibverbs.so.1) and
# `gidpolicy simulate --profile jaccl` on the same tables and topology, and checks they agree:
# the same pairs connect, the same hosts' RTRs fail with the same errno; when every pair
# connects, every all-sum is right.
#
#   collective_vs_simulate.sh CLI PROGRAM mesh|ring FRAMES ITERS TABLE...
set -u
cli=$1 program=$2 topology=$3 frames=$4 iters=$5
shift 5
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT

"$cli" simulate --profile jaccl --topology "$topology" "$@" >"$work/simulate.out" 2>&1
sim_rc=$?
# "  A <-> B: connected (sgid 1 / 1)" -> "A <-> B: connected"
# "  A <-> B: FAILED: ... H RTR from sgid_index 1 failed: EINVAL (22) ..." -> "A <-> B: FAILED: H errno 22,"
grep ' <-> ' "$work/simulate.out" | while IFS= read -r line; do
  pair=$(printf '%s\n' "$line" | sed -E 's/^ *//; s/: (connected|FAILED).*//')
  case "$line" in
    *": connected"*) echo "$pair: connected" ;;
    *) fails=$(printf '%s\n' "$line" | grep -oE '[^ ;:]+ RTR from sgid_index [0-9]+ failed: [A-Z]+ \([0-9]+\)' |
               sed -E 's/ RTR from sgid_index [0-9]+ failed: [A-Z]+ \(([0-9]+)\)/ errno \1/' | sort -u | tr '\n' ',')
       echo "$pair: FAILED: $fails" ;;
  esac
done | sort >"$work/simulate.pairs"

"$program" --topology "$topology" --frames "$frames" --iters "$iters" "$@" >"$work/program.out" 2>&1
prog_rc=$?
# The program prints each failing host once per direction it failed in; compare the sets.
grep '^pair: ' "$work/program.out" | sed 's/^pair: //' | while IFS= read -r line; do
  case "$line" in
    *": FAILED: "*) head=${line%%: FAILED: *}
       fails=$(printf '%s\n' "${line#*: FAILED: }" | tr ',' '\n' | grep . | sort -u | tr '\n' ',')
       echo "$head: FAILED: $fails" ;;
    *) echo "$line" ;;
  esac
done | sort >"$work/program.pairs"

echo "--- gidpolicy simulate (exit $sim_rc)"; cat "$work/simulate.out"
echo "--- jaccl_collective (exit $prog_rc)"; cat "$work/program.out"
status=0
if ! [ -s "$work/simulate.pairs" ] || ! cmp -s "$work/simulate.pairs" "$work/program.pairs"; then
  echo "FAIL: the pairs differ (simulate, then program):"; cat "$work/simulate.pairs" "$work/program.pairs"; status=1
fi
if [ $sim_rc -eq 0 ]; then
  if [ $prog_rc -ne 0 ]; then echo "FAIL: simulate connects every pair, the collective failed"; status=1; fi
  for f in $(echo "$frames" | tr ',' ' '); do
    grep -q "$iters all-sums of $f-byte frames correct" "$work/program.out" ||
      { echo "FAIL: no correct all-sums of $f-byte frames"; status=1; }
  done
else
  if [ $prog_rc -eq 0 ]; then echo "FAIL: simulate predicts failures, the collective passed"; status=1; fi
fi
[ $status -eq 0 ] && echo "PASS: jaccl_collective agrees with gidpolicy simulate"
exit $status
