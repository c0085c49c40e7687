#!/bin/sh
# The perftest profile against real perftest: on every Ethernet port of every example table,
# ib_send_bw without -x on the fake libibverbs, and the GID index it reports must be the one
# `gidpolicy select --profile perftest` predicts. The ports come from the tables themselves
# (`gidpolicy show`), so no table has an expectation written by hand.
#
#   perftest_oracle.sh --tool IB_SEND_BW --lib DIR --tables-dir DIR --port-base N --max-ports N
#                      --log-dir DIR --cli GIDPOLICY --perftest-sh SCRIPT
set -u
tool='' lib='' dir='' base='' max='' logs='' cli='' script=''
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2 ;;
    --lib) lib=$2 ;;
    --tables-dir) dir=$2 ;;
    --port-base) base=$2 ;;
    --max-ports) max=$2 ;;
    --log-dir) logs=$2 ;;
    --cli) cli=$2 ;;
    --perftest-sh) script=$2 ;;
    *) echo "perftest_oracle.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
n=0 status=0
for table in "$dir"/*; do
  case "$table" in *.md) continue ;; esac
  # "mlx5_0 port 1: ethernet, active, ..." for every port: the Ethernet ones, port 1.
  for device in $("$cli" show --input "$table" | sed -n 's/^\([^ ]*\) port 1: ethernet,.*/\1/p'); do
    if [ "$n" -ge "$max" ]; then
      echo "FAIL: more Ethernet ports than the $max TCP ports this test has"; exit 1
    fi
    echo "=== $(basename "$table") $device"
    if ! "$script" --tool "$tool" --lib "$lib" --tables "$table" --device "$device" --port $((base + n)) \
         --log "$logs/perftest.oracle.$n.jsonl" --cli "$cli" --server-gid none --client-gid none \
         --expect pick --pick profile=perftest --args "-n 5 -s 64"; then
      status=1
    fi
    n=$((n + 1))
  done
done
[ "$n" -gt 0 ] || { echo "FAIL: no Ethernet port found in $dir"; exit 1; }
echo "$n Ethernet ports compared"
[ $status -eq 0 ] && echo "PASS"
exit $status
