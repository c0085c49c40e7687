#!/usr/bin/env bash
# gidpolicy-probe-mpi over a mesh of RANKS ranks (default 16: 120 links) under mpirun, on the
# drop-in fake libibverbs, one table per rank (written here: each rank its own RoCE v2 address
# at index 2, so every link connects). A benchmark, not a test: it prints the run's wall time,
# the number of links and rounds, and the cost per link and per round.
#
#   probe_mpi_mesh.sh BUILD_DIR [RANKS] [QP]
#
# BUILD_DIR must hold tools/probe_mpi/gidpolicy-probe-mpi and fakes/libibverbs/lib. QP: rc
# (default), uc or both. On this machine's 2 shared cores the ranks time-share: the figure is an
# upper bound of what one host per rank pays.
set -u
build=${1:?usage: probe_mpi_mesh.sh BUILD_DIR [RANKS] [QP]}
ranks=${2:-16}
qp=${3:-rc}
probe=$build/tools/probe_mpi/gidpolicy-probe-mpi
lib=$build/fakes/libibverbs/lib
[ -x "$probe" ] || { echo "no $probe: build the gidpolicy_probe_mpi target"; exit 2; }
command -v mpirun >/dev/null || { echo "no mpirun (Debian openmpi-bin)"; exit 2; }
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
tables=''
for r in $(seq 0 $((ranks - 1))); do
  a=$((r / 250)) b=$((r % 250 + 1))
  cat >"$work/rank$r.json" <<JSON
{"schema": "gidpolicy.tables", "version": 1, "ports": [{"device": "ds4_test0", "port": 1, "state": "active",
 "link_layer": "ethernet", "gid_tbl_len": 5, "active_mtu": 1024, "lid": 0, "holes": "empty", "entries": [
 {"index": 0, "gid": "::ffff:10.$a.$b.1", "type": "roce_v1", "netdev": "lo", "state": "valid"},
 {"index": 1, "gid": "::ffff:10.$a.$b.1", "type": "roce_v2", "netdev": "lo", "state": "valid"},
 {"index": 2, "gid": "::ffff:10.$a.$b.2", "type": "roce_v2", "netdev": "lo", "state": "valid"}]}]}
JSON
  tables="$tables $work/rank$r.json"
done
cat >"$work/rank.sh" <<'SH'
#!/bin/sh
set -- $TABLES_BY_RANK
shift "${OMPI_COMM_WORLD_RANK:-0}"
GIDPOLICY_FAKE_TABLES=$1 exec "$PROBE_MPI" --topology mesh --qp "$PROBE_QP"
SH
chmod +x "$work/rank.sh"
# mpirun's own start-up and tear-down, for the same number of ranks: what the probe does not cost.
s0=$(date +%s.%N)
mpirun --allow-run-as-root --oversubscribe -np "$ranks" /bin/true >/dev/null 2>&1
e0=$(date +%s.%N)
start=$(date +%s.%N)
LD_LIBRARY_PATH=$lib TABLES_BY_RANK=$tables PROBE_MPI=$probe PROBE_QP=$qp \
  mpirun --allow-run-as-root --oversubscribe -np "$ranks" --mca pml ob1 --mca btl self,tcp \
  --mca btl_tcp_if_include lo -x LD_LIBRARY_PATH -x TABLES_BY_RANK -x PROBE_MPI -x PROBE_QP \
  "$work/rank.sh" >"$work/out.txt" 2>"$work/err.txt"
rc=$?
end=$(date +%s.%N)
# The report's first line: "... N of LINKS links connected on the wire (...); ROUNDS rounds of ...".
links=$(sed -n '1s/.* of \([0-9]*\) links connected on the wire.*; \([0-9]*\) rounds.*/\1/p' "$work/out.txt")
rounds=$(sed -n '1s/.* of \([0-9]*\) links connected on the wire.*; \([0-9]*\) rounds.*/\2/p' "$work/out.txt")
[ -n "$links" ] || { echo "no report (exit $rc):"; cat "$work/out.txt" "$work/err.txt"; exit 1; }
head -1 "$work/out.txt"
awk -v s="$start" -v e="$end" -v s0="$s0" -v e0="$e0" -v l="$links" -v r="$rounds" -v n="$ranks" -v q="$qp" -v rc="$rc" 'BEGIN {
  w = e - s; base = e0 - s0; p = w - base
  printf "%d-rank mesh (%s): %d links in %d rounds, wall %.2f s, of which mpirun start-up %.2f s, exit %d\n", n, q, l, r, w, base, rc
  printf "probing: %.2f s: %.1f ms per link, %.1f ms per round; load average: ", p, 1000 * p / l, 1000 * p / r
}'
cut -d' ' -f1-3 /proc/loadavg
