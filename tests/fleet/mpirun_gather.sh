#!/bin/sh
# The mpirun gather of docs/fleet.md, for real: Open MPI's mpirun starts one rank per "host"
# (here several local ranks), each rank runs `gidpolicy show --json` on its own machine's
# devices (here the drop-in fake libibverbs.so.1 serving that rank's table) and writes one
# snapshot into a shared directory; then `gidpolicy fleet` analyses the directory against
# JACCL's device file.
#
#   mpirun_gather.sh CLI FAKELIB_DIR TABLES_DIR DEVICES_JSON
#
# TABLES_DIR holds one table file per rank (sorted by name: rank 0 first); rank r plays host
# "m3-ultra-<r+1>". The third host's mapped GIDs sit at index 2, so under JACCL's profile
# exactly the three links touching it fail, and none under auto.
# Exit 77 (ctest's SKIP_RETURN_CODE) only when mpirun is missing or refuses to start a rank here.
set -u
cli=$1 lib=$2 tables=$3 devices=$4

if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (Debian: apt-get install openmpi-bin)"
  exit 77
fi
# Open MPI refuses to run as root unless told twice.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No network probing beyond loopback: the ranks are local.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
# The probe's limit is a hang guard only: a slow start on a busy machine is not a reason to skip,
# and a probe that hangs is a failure, reported as one (124 is timeout's own status).
probe=0
timeout 120 mpirun --oversubscribe -np 1 true >"$work/probe.log" 2>&1 || probe=$?
if [ "$probe" = 124 ]; then
  echo "FAIL: mpirun -np 1 true did not end within 120 s:"
  sed 's/^/  /' "$work/probe.log" | head -5
  exit 1
elif [ "$probe" != 0 ]; then
  echo "SKIP: mpirun cannot start a rank on this machine (exit $probe):"
  sed 's/^/  /' "$work/probe.log" | head -5
  exit 77
fi

ranks=0
for t in "$tables"/*; do ranks=$((ranks + 1)); done
mkdir "$work/gathered"
# Each rank: its own table through the fake library, its own host name, one file written
# atomically (temporary name, then rename) so a reader never sees half a snapshot.
cat >"$work/rank.sh" <<'RANK'
r=${OMPI_COMM_WORLD_RANK:?not started by Open MPI}
table=$(ls "$TABLES"/* | sort | sed -n "$((r + 1))p")
host="m3-ultra-$((r + 1))"
out="$OUT/$host.json"
LD_LIBRARY_PATH="$LIB" GIDPOLICY_FAKE_TABLES="$table" "$CLI" show --json --host "$host" >"$out.tmp.$$" &&
  mv "$out.tmp.$$" "$out"
RANK
if ! CLI="$cli" LIB="$lib" TABLES="$tables" OUT="$work/gathered" \
  timeout 120 mpirun --oversubscribe -np "$ranks" -x CLI -x LIB -x TABLES -x OUT sh "$work/rank.sh" \
  >"$work/mpirun.log" 2>&1; then
  echo "FAIL: mpirun gather failed:"
  cat "$work/mpirun.log"
  exit 1
fi
n=$(ls "$work/gathered" | wc -l)
if [ "$n" -ne "$ranks" ]; then
  echo "FAIL: $ranks ranks but $n snapshots gathered:"
  ls -l "$work/gathered"
  exit 1
fi
for f in "$work/gathered"/*.json; do
  h=$(basename "$f" .json)
  grep -q "\"host\": \"$h\"" "$f" || { echo "FAIL: $f does not record host $h"; cat "$f"; exit 1; }
done
echo "gathered $n snapshots with mpirun: $(ls "$work/gathered" | tr '\n' ' ')"

# JACCL as it ships: exactly the links touching m3-ultra-3 fail, exit 1 as simulate.
timeout 60 "$cli" fleet --jaccl-devices "$devices" --profile jaccl "$work/gathered" >"$work/jaccl.txt" 2>&1
rc=$?
cat "$work/jaccl.txt"
[ $rc -eq 1 ] || { echo "FAIL: fleet --profile jaccl exited $rc, expected 1"; exit 1; }
grep -q "^jaccl-mesh of 4 hosts, profile jaccl: 3 of 6 links connected" "$work/jaccl.txt" ||
  { echo "FAIL: expected 3 of 6 links connected"; exit 1; }
failed=$(sed -n '/^failed links/,$p' "$work/jaccl.txt" | grep -c ' <-> ')
touching=$(sed -n '/^failed links/,$p' "$work/jaccl.txt" | grep ' <-> ' | grep -c 'm3-ultra-3 ')
[ "$failed" -eq 3 ] && [ "$touching" -eq 3 ] ||
  { echo "FAIL: expected the 3 links of m3-ultra-3 to fail, got $failed failed, $touching touching it"; exit 1; }

# gidpolicy's own profile: every link connects, exit 0.
timeout 60 "$cli" fleet --jaccl-devices "$devices" --profile auto "$work/gathered" >"$work/auto.txt" 2>&1
rc=$?
cat "$work/auto.txt"
[ $rc -eq 0 ] || { echo "FAIL: fleet --profile auto exited $rc, expected 0"; exit 1; }
echo "PASS"
