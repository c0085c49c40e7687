#!/bin/sh
# Two-process ibv_rc_pingpong / ibv_uc_pingpong run on the fake libibverbs.so.1.
#
#   pingpong.sh --tool PATH --lib DIR --tables FILE --port N --log FILE
#               --expect ok|server-rtr-fails|server-rtr-fails-only|server-create-fails|server-ah-fails|times-out
#               [--server "ARGS"] [--client "ARGS"] [--driver NAME] [--timeout SECONDS]
#               [--log-has REGEX]...
#
# times-out: both RTRs pass but no message arrives (the driver model's "times out" verdict):
# neither side completes; the pair is stopped after --timeout seconds (default 20).
# server-rtr-fails-only: the server fails at RTR; the client is not checked, because
# ibv_srq_pingpong's client spins on the closed socket (its read loop takes EOF for progress),
# on real hardware as here; --timeout stops it.
#
# Pitfalls this script exists for:
#  * Both processes run under `timeout`: if the client dies early the server waits forever.
#  * The server accepts exactly one TCP connection, so its port is never probed with connect():
#    the script waits until `ss -Hltn` shows it listening. Each test passes its own --port.
set -u
tool= lib= tables= port= log= expect= server_args= client_args= driver= checks= limit=20
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2 ;;
    --lib) lib=$2 ;;
    --tables) tables=$2 ;;
    --port) port=$2 ;;
    --log) log=$2 ;;
    --expect) expect=$2 ;;
    --server) server_args=$2 ;;
    --client) client_args=$2 ;;
    --driver) driver=$2 ;;
    --timeout) limit=$2 ;;
    --log-has) checks="$checks
$2" ;;
    *) echo "pingpong.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
rm -f "$log"

run() {  # run <role> <args...>: the tool on the fake, bounded in time
  role=$1
  shift
  timeout "$limit" env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$tables" GIDPOLICY_FAKE_LOG="$log" \
    ${driver:+GIDPOLICY_FAKE_DRIVER="$driver"} "$tool" -p "$port" "$@" >"$work/$role.out" 2>&1
}

# shellcheck disable=SC2086 # the argument strings are meant to split
run server $server_args &
server_pid=$!
i=0
while [ $i -lt 100 ]; do
  ss -Hltn "sport = :$port" | grep -q . && break
  kill -0 "$server_pid" 2>/dev/null || break  # the server gave up before listening
  sleep 0.1
  i=$((i + 1))
done
# shellcheck disable=SC2086
run client $client_args 127.0.0.1
client_rc=$?
wait "$server_pid"
server_rc=$?

echo "--- server (exit $server_rc): $tool -p $port $server_args"; cat "$work/server.out"
echo "--- client (exit $client_rc): $tool -p $port $client_args 127.0.0.1"; cat "$work/client.out"
echo "--- control log $log"; cat "$log" 2>/dev/null | grep -v '"call":"query_gid' | grep -v '"call":"get_device_list'

status=0
case "$expect" in
  ok)
    if [ $server_rc -ne 0 ] || [ $client_rc -ne 0 ] || ! grep -q 'iters in' "$work/server.out" ||
       ! grep -q 'iters in' "$work/client.out"; then
      echo "FAIL: expected both sides to complete"; status=1
    fi ;;
  server-rtr-fails)
    # 124 is timeout's: a hang is a failure of the fake, not the expected RTR error.
    if [ $server_rc -eq 0 ] || [ $server_rc -ge 124 ] || [ $client_rc -eq 0 ] || [ $client_rc -ge 124 ] ||
       ! grep -q 'Failed to modify QP to RTR' "$work/server.out"; then
      echo "FAIL: expected the server to fail at RTR and both to exit with an error"; status=1
    fi ;;
  server-rtr-fails-only)
    if [ $server_rc -eq 0 ] || [ $server_rc -ge 124 ] || ! grep -Eq 'Failed to modify QP(\[0\])? to RTR' "$work/server.out"; then
      echo "FAIL: expected the server to fail at RTR"; status=1
    fi ;;
  server-create-fails)
    if [ $server_rc -eq 0 ] || [ $server_rc -ge 124 ] || [ $client_rc -eq 0 ] || [ $client_rc -ge 124 ] ||
       ! grep -q "Couldn't create QP" "$work/server.out"; then
      echo "FAIL: expected the server to fail creating its QP"; status=1
    fi ;;
  server-ah-fails)
    if [ $server_rc -eq 0 ] || [ $server_rc -ge 124 ] || [ $client_rc -eq 0 ] || [ $client_rc -ge 124 ] ||
       ! grep -q 'Failed to create AH' "$work/server.out"; then
      echo "FAIL: expected the server to fail creating its address handle"; status=1
    fi ;;
  times-out)
    if [ $server_rc -eq 0 ] || [ $client_rc -eq 0 ] || grep -q 'iters in' "$work/server.out" ||
       grep -q 'iters in' "$work/client.out" || grep -q 'Failed to modify QP' "$work/server.out" ||
       grep -q 'Failed to modify QP' "$work/client.out"; then
      echo "FAIL: expected both RTRs to pass and no side to complete"; status=1
    fi ;;
  *) echo "pingpong.sh: unknown --expect $expect" >&2; exit 2 ;;
esac
old_ifs=$IFS
IFS='
'
for re in $checks; do
  if ! grep -Eq -- "$re" "$log"; then
    echo "FAIL: no control log line matches: $re"; status=1
  fi
done
IFS=$old_ifs
[ $status -eq 0 ] && echo "PASS"
exit $status
