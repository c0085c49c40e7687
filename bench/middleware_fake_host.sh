#!/usr/bin/env bash
# UCX 1.13 and Open MPI 4.1, unmodified, over the fake libibverbs under `gidpolicy fake-host`:
# the figures the fake's data path must keep for middleware. Two processes on this machine, each
# in its own fake host (UCX), or mpirun's two ranks in one; only UCX_TLS and UCX_NET_DEVICES set.
#
#   middleware_fake_host.sh BUILD_DIR [TABLE] [DEV:PORT] [REPS]
#
# Prints, per run: UCX tag_lat's typical round trip (2 x ucx_perftest's 50th-percentile
# latency, which is half a round trip; goal <= 30 us), tag_bw at 64 KiB (goal >= 1 GB/s) and the
# MPI ping-pong at 1 MiB (tests/middleware/mpi_pingpong.c; goal >= 1 GB/s); then each figure's
# median, lowest and highest over the runs, and the load average (the figures depend on what
# else the machine runs). On two cores a single run says little: each ucx_perftest has its main
# thread, UCX's async thread and the fake's progress thread, and where the scheduler puts them
# moves tag_bw by a factor of two from one run to the next, so the median is the figure.
# On a virtual machine the hypervisor may also take CPU time from it ("steal" in /proc/stat):
# each figure is printed with the share of the machine's CPU time stolen while it ran, and the
# summary gives the median of the runs with less than 10% stolen beside the median of all.
# BUILD_DIR: build/release for figures worth quoting (it needs tools/gidpolicy/gidpolicy, and
# tests/middleware/mpi_pingpong for the MPI figure). Defaults: examples/tables/nccl-769.devinfo.txt,
# mlx5_bond_0:1, 5 runs.
set -u
build=${1:?usage: middleware_fake_host.sh BUILD_DIR [TABLE] [DEV:PORT] [REPS]}
here=$(cd "$(dirname "$0")" && pwd)
table=${2:-$here/../examples/tables/nccl-769.devinfo.txt}
export UCX_NET_DEVICES=${3:-mlx5_bond_0:1} UCX_TLS=rc_verbs,ud_verbs
reps=${4:-5}
gidpolicy=$build/tools/gidpolicy/gidpolicy
mpi=$build/tests/middleware/mpi_pingpong
port=$((36000 + RANDOM % 2000))
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT

# ucx_pair ARGS...: server and client of ucx_perftest, each in a fake host; the client's Final line.
ucx_pair() {
  port=$((port + 1))
  timeout 120 "$gidpolicy" fake-host --tables "$table" -- ucx_perftest -p "$port" "$@" >"$work/server.out" 2>&1 &
  local server=$!
  for _ in $(seq 1 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
  timeout 120 "$gidpolicy" fake-host --tables "$table" -- ucx_perftest -p "$port" "$@" 127.0.0.1 \
    >"$work/client.out" 2>&1
  wait "$server"
  grep '^Final:' "$work/client.out" || { tail -3 "$work/client.out" >&2; return 1; }
}

# CPU time of the whole machine so far, from /proc/stat's first line: "ALL STOLEN" (clock ticks).
cpu_ticks() { awk '$1 == "cpu" {t = 0; for (i = 2; i <= 9; ++i) t += $i; print t, $9; exit}' /proc/stat; }
# stolen_since "ALL STOLEN": the percentage of the CPU time since then that the hypervisor took.
stolen_since() {
  local a s b t
  read -r a s <<< "$1"
  read -r b t <<< "$(cpu_ticks)"
  awk -v d=$((b - a)) -v st=$((t - s)) 'BEGIN {printf "%d", (d > 0 ? 100 * st / d + 0.5 : 0)}'
}

echo "table $table, $UCX_NET_DEVICES, UCX_TLS=$UCX_TLS"
echo "commands: gidpolicy fake-host --tables TABLE -- ucx_perftest -t tag_lat -n 20000 (and -t tag_bw -s 65536 -n 4000),"
echo "          gidpolicy fake-host --tables TABLE -- mpirun -np 2 --mca pml ucx mpi_pingpong 5"
root=()
[ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
for r in $(seq 1 "$reps"); do
  # Final: iterations, 50%ile latency, average, overall (us), bandwidth average, overall (MB/s), ...
  t0=$(cpu_ticks)
  lat=$(ucx_pair -t tag_lat -n 20000 | awk '{printf "%.1f", 2 * $3}')
  lat_st=$(stolen_since "$t0")
  t0=$(cpu_ticks)
  bw=$(ucx_pair -t tag_bw -s 65536 -n 4000 | awk '{printf "%.2f", $6 * 1048576 / 1e9}')
  bw_st=$(stolen_since "$t0")
  mpibw=n/a mpi_st=0
  if [ -x "$mpi" ]; then
    t0=$(cpu_ticks)
    mpibw=$(timeout 120 "$gidpolicy" fake-host --tables "$table" -- mpirun "${root[@]}" -np 2 --mca pml ucx "$mpi" 5 |
      awk '/1048576 B/ {printf "%.2f", $(NF-1) / 1000}')
    mpi_st=$(stolen_since "$t0")
  fi
  echo "run $r: UCX tag_lat round trip ${lat:-failed} us (goal <= 30; ${lat_st}% stolen)," \
    "tag_bw 64 KiB ${bw:-failed} GB/s (goal >= 1; ${bw_st}% stolen)," \
    "MPI ping-pong 1 MiB ${mpibw:-failed} GB/s (goal >= 1; ${mpi_st}% stolen)"
  echo "${lat:-failed} $lat_st" >>"$work/lat"
  echo "${bw:-failed} $bw_st" >>"$work/bw"
  echo "${mpibw:-failed} $mpi_st" >>"$work/mpi"
done
# summary FILE UNIT GOAL: over the lines "FIGURE STOLEN%", the median (the lower middle for an
# even count), lowest and highest of the runs that gave a figure, how many did not, and the
# median of the runs the hypervisor took less than 10% from.
summary() {
  sort -g "$1" | awk -v unit="$2" -v goal="$3" '
    $1 ~ /^[0-9.]+$/ {v[n++] = $1; if ($2 < 10) q[m++] = $1; next} {bad++}
    END {
      if (n == 0) {printf "no run gave a figure (goal %s)\n", goal; exit}
      printf "median %s %s, lowest %s, highest %s over %d runs (goal %s)", v[int((n - 1) / 2)], unit, v[0], v[n - 1], n, goal
      if (m) printf "; median %s of the %d runs with < 10%% stolen", q[int((m - 1) / 2)], m
      else printf "; every run had 10%% or more stolen"
      if (bad) printf "; %d runs failed", bad
      printf "\n"
    }'
}
echo "UCX tag_lat round trip: $(summary "$work/lat" us "<= 30 us")"
echo "UCX tag_bw 64 KiB:      $(summary "$work/bw" GB/s ">= 1 GB/s")"
echo "MPI ping-pong 1 MiB:    $(summary "$work/mpi" GB/s ">= 1 GB/s")"
# The same fake under perftest, for scale: what the machine gives any verbs program right now.
port=$((port + 1))
dev=${UCX_NET_DEVICES%:*}
x=$(GIDPOLICY=$gidpolicy "$here/../tests/middleware/ucx_gid_choice.sh" "$table" | awk -v d="$dev" '$1 == d {print $3}')
if command -v ib_send_lat >/dev/null && [ -n "$x" ]; then
  timeout 60 "$gidpolicy" fake-host --tables "$table" -- ib_send_lat -d "$dev" -x "$x" -p "$port" -n 5000 \
    >"$work/server.out" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.1; done
  t=$(timeout 60 "$gidpolicy" fake-host --tables "$table" -- ib_send_lat -d "$dev" -x "$x" -p "$port" -n 5000 \
    127.0.0.1 2>/dev/null | awk '$1 == 2 {print 2 * $5}')
  wait "$server"
  echo "for scale, perftest ib_send_lat on the same fake host: round trip ${t:-failed} us (2 x t_typical)"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
