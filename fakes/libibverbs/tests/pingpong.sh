#!/bin/sh
# Two-process ibv_rc_pingpong / ibv_uc_pingpong run on the fake libibverbs.so.1.
#
#   pingpong.sh --tool PATH --lib DIR --tables FILE --port N --log FILE
#               --expect ok|server-rtr-fails|server-rtr-fails-only|server-create-fails|server-ah-fails|times-out
#               [--server "ARGS"] [--client "ARGS"] [--driver NAME] [--timeout SECONDS]
#               [--log-has REGEX]...
#
# times-out: both RTRs pass but no message arrives (the driver model's "times out" verdict): the
# client's sends end in "transport retry counter exceeded" and it exits; the server, left waiting
# for a peer that is gone (as on hardware), is stopped once the client has ended.
# server-rtr-fails-only: the server fails at RTR; the client is not checked, because
# ibv_srq_pingpong's client spins on the closed socket (its read loop takes EOF for progress),
# on real hardware as here: it is stopped once the server has ended.
# --timeout (default 60 s) is only a hang guard for each process (the server gets 60 s more, for
# the wait for it to listen): no verdict waits for it.
#
# Pitfalls this script exists for:
#  * Both processes run under `timeout`: if the client dies early the server waits forever.
#  * The server accepts exactly one TCP connection, so its port is never probed with connect():
#    the script waits until `ss -Hltn` shows it listening (or the server has exited: some
#    expectations fail it before it listens). Each test passes its own --port.
#  * /bin/sh may be dash, which reaps background jobs only when waited for: an exited server is
#    still a zombie to `kill -0`. Each process's end is its <role>.rc file instead.
set -u
tool= lib= tables= port= log= expect= server_args= client_args= driver= checks= limit=60
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

start() {  # start <role> <seconds> <args...>: the tool on the fake in the background, bounded
  # in time; <role>.pid holds timeout's pid (a TERM to it reaches the tool), <role>.rc its status.
  role=$1 seconds=$2
  shift 2
  (
    timeout "$seconds" env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$tables" GIDPOLICY_FAKE_LOG="$log" \
      ${driver:+GIDPOLICY_FAKE_DRIVER="$driver"} "$tool" -p "$port" "$@" >"$work/$role.out" 2>&1 &
    echo $! >"$work/$role.pid"
    wait $!
    echo $? >"$work/$role.rc"
  ) &
}
done_() { [ -s "$work/$1.rc" ]; }
# until_done <role>: bounded by the role's own `timeout`, which writes its .rc when it fires.
until_done() { while ! done_ "$1"; do sleep 0.1; done; }
# stop <role>: TERM to its `timeout` (once the pid is written), which passes it to the tool.
stop() {
  while [ ! -s "$work/$1.pid" ] && ! done_ "$1"; do sleep 0.1; done
  done_ "$1" || kill "$(cat "$work/$1.pid")" 2>/dev/null
}
listening() { ss -Hltn "sport = :$port" | grep -q .; }

# The server's guard also covers the wait for it to listen (below).
# shellcheck disable=SC2086 # the argument strings are meant to split
start server $((limit + 60)) $server_args
# Until the server listens or has exited. 60 s: far above the milliseconds this takes idle, as a
# loaded machine may take seconds to start the tool; a server that does neither fails the test.
i=0
until listening || done_ server; do
  i=$((i + 1))
  if [ $i -gt 600 ]; then
    echo "FAIL: the server neither listened on port $port nor exited within 60 s"
    stop server
    wait
    cat "$work/server.out"
    exit 1
  fi
  sleep 0.1
done
# shellcheck disable=SC2086
start client "$limit" $client_args 127.0.0.1
case "$expect" in
  # The client ends by itself (retry exceeded); its peer would wait for it forever.
  times-out) until_done client; stop server ;;
  # The server ends by itself (its RTR fails); the client would spin forever.
  server-rtr-fails-only) until_done server; stop client ;;
esac
wait
server_rc=$(cat "$work/server.rc")
client_rc=$(cat "$work/client.rc")

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
    # The client's own end is the signal that nothing arrives: its send failed once its retry
    # budget ran out (a completion, not a wait of this script's).
    if [ $server_rc -eq 0 ] || [ $client_rc -eq 0 ] || [ $client_rc -ge 124 ] || grep -q 'iters in' "$work/server.out" ||
       grep -q 'iters in' "$work/client.out" || grep -q 'Failed to modify QP' "$work/server.out" ||
       grep -q 'Failed to modify QP' "$work/client.out" ||
       ! grep -q 'Failed status transport retry counter exceeded' "$work/client.out"; then
      echo "FAIL: expected both RTRs to pass, no side to complete and the client's send to end in retry exceeded"; status=1
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
