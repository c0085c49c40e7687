#!/bin/sh
# Unmodified perftest (Debian perftest 4.5) over the fake libibverbs.so.1, server and client on
# loopback: the figures the fake's polling and data path must keep. Prints perftest's own result
# lines for ib_send_lat (t_typical is the figure to quote) and ib_write_bw at 64 KiB and 1 MiB
# (BW average, MB/s), each run `reps` times.
#
#   fakelib_perftest.sh LIB_DIR [TABLE] [DEVICE] [GID_INDEX] [REPS] [PORT]
#
# LIB_DIR holds the fake libibverbs.so.1 (build/release/fakes/libibverbs/lib for figures worth
# quoting). Defaults: examples/tables/ds4-linux-unit.json, ds4_test0, 3, 3 runs, port 18990.
set -u
lib=${1:?usage: fakelib_perftest.sh LIB_DIR [TABLE] [DEVICE] [GID_INDEX] [REPS] [PORT]}
tables=${2:-$(dirname "$0")/../examples/tables/ds4-linux-unit.json}
device=${3:-ds4_test0}
x=${4:-3}
reps=${5:-3}
port=${6:-18990}
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT

# run <tool> <args...>: one server/client pair, both bounded in time; prints the result line.
run() {
  tool=$1
  shift
  env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$tables" timeout 120 \
    "$tool" -d "$device" -x "$x" -p "$port" "$@" >"$work/server.out" 2>&1 &
  server=$!
  n=100
  while [ $n -gt 0 ] && ! ss -Hltn "sport = :$port" | grep -q .; do
    sleep 0.1
    n=$((n - 1))
  done
  env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$tables" timeout 120 \
    "$tool" -d "$device" -x "$x" -p "$port" "$@" 127.0.0.1 >"$work/client.out" 2>&1
  rc=$?
  wait $server
  line=$(grep -E '^ *[0-9]+ +[0-9]+ ' "$work/client.out" | tail -n 1)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "$tool $*: failed (exit $rc)"
    cat "$work/client.out"
  else
    echo "$tool $*: $line"
  fi
  port=$((port + 1))
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ib_send_lat columns: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9% (usec)"
echo "ib_write_bw columns: #bytes #iterations BW_peak BW_average (MB/s) MsgRate (Mpps)"
i=0
while [ $i -lt "$reps" ]; do
  run ib_send_lat
  run ib_write_bw -s 65536
  run ib_write_bw -s 1048576
  i=$((i + 1))
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
