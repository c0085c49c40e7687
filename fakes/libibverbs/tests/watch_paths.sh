#!/bin/sh
# The fake libibverbs' table watcher sees every way a GIDPOLICY_FAKE_TABLES path can change under
# a running program, and applies only whole tables. `gidpolicy watch` runs on the fake; this
# script changes the table one way per scenario and checks the lines the watcher prints (and,
# for refused files, the control log's table_reload records).
#
#   watch_paths.sh GIDPOLICY_CLI FAKELIB_DIR DATA_DIR SCENARIO [poll]
# poll: the same through the watcher's polling fallback (GIDPOLICY_FAKE_WATCH=poll).
# SCENARIO:
#   configmap       table.json -> ..data/table.json, ..data -> ..<timestamp>: ..data swapped
#                   atomically to a new timestamped directory, twice (as a Kubernetes ConfigMap)
#   symlink_target  table.json -> real/a.json: a.json rewritten in place, then the link retargeted
#   dir_recreated   the table's directory deleted and created again, then a later rewrite in it
#   line_by_line    an ibv_devinfo text table rewritten in place, one line per write, twice
#   partial         files that are not whole tables (renamed in at once): refused, logged, and
#                   the previous table stays until a whole one comes
# DATA_DIR holds 1-start.json, 2-removed.json, 3-back-at-3.json. Every wait is for a line the
# watcher prints or a control-log record, bounded by a hang guard (60 s: an idle machine needs
# well under one); only no_more waits a fixed time, and its comment says why that is sound.
set -u
cli=$1 lib=$2 data=$3 scenario=$4
if [ "${5:-}" = poll ]; then export GIDPOLICY_FAKE_WATCH=poll; scenario="$scenario, polling"; fi
work=$(mktemp -d) || exit 2
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL ($scenario): $*"
  echo "--- watch output:"; cat "$work/out"
  echo "--- watch stderr:"; cat "$work/err"
  echo "--- control log:"; cat "$work/log" 2>/dev/null
  exit 1
}
start_watch() {
  : >"$work/out"
  LD_LIBRARY_PATH=$lib GIDPOLICY_FAKE_TABLES=$1 GIDPOLICY_FAKE_LOG=$work/log "$cli" watch >"$work/out" 2>"$work/err" &
  pid=$!
  wait_lines 1
}
lines() { wc -l <"$work/out" 2>/dev/null || echo 0; }
# wait_lines N: until the watcher printed N lines (60 s at most).
wait_lines() {
  i=0
  while [ "$(lines)" -lt "$1" ]; do
    i=$((i + 1))
    [ $i -le 600 ] || fail "waited 60 s for line $1"
    sleep 0.1
  done
}
# expect_line N REGEX: line N is there and matches.
expect_line() {
  wait_lines "$1"
  sed -n "${1}p" "$work/out" | grep -Eq "$2" || fail "line $1 does not match '$2'"
}
# no_more N: after the watcher's quiet period and more, it still printed only N lines. A fixed
# wait, as no event says "nothing more will come"; it is called once line N (the last change)
# is out, and lines only ever add up, so a loaded machine can at worst make an extra line come
# too late to be seen (a missed failure), never make a right run fail.
no_more() {
  sleep 0.8
  [ "$(lines)" -eq "$1" ] || fail "expected $1 lines, got $(lines)"
}
# wait_log REGEX: a control-log line matches (60 s at most).
wait_log() {
  i=0
  while ! grep -Eq "$1" "$work/log" 2>/dev/null; do
    i=$((i + 1))
    [ $i -le 600 ] || fail "waited 60 s for a control-log record matching '$1'"
    sleep 0.1
  done
}
# write_lines SRC DST [slowly]: rewrite DST in place, one open-append-close per line, as a
# careless script would (slowly: 50 ms after each line, so a reader sees the states between).
# The verdict does not depend on that pace: every state between two lines is refused (no GID
# at all) or is the whole table, so a reader on a loaded machine may see fewer of them, no other.
write_lines() {
  : >"$2"
  while IFS= read -r l; do
    printf '%s\n' "$l" >>"$2"
    if [ -n "${3:-}" ]; then sleep 0.05; fi
  done <"$1"
}
devinfo() { "$cli" convert --to devinfo --input "$data/$1" 2>/dev/null; }

GONE='disappeared from index 1'
BACK='reappeared at index 3'
case $4 in
  configmap)
    d=$work/cm
    mkdir -p "$d/..2026_12_01_00_00_01.1" || exit 2
    cp "$data/1-start.json" "$d/..2026_12_01_00_00_01.1/table.json"
    ln -s ..2026_12_01_00_00_01.1 "$d/..data"
    ln -s ..data/table.json "$d/table.json"
    start_watch "$d/table.json"
    prev=..2026_12_01_00_00_01.1
    n=2
    for f in 2-removed.json 3-back-at-3.json; do
      ts=..2026_12_01_00_00_0$n.1
      mkdir "$d/$ts" && cp "$data/$f" "$d/$ts/table.json"
      ln -s "$ts" "$d/..data_tmp" && mv -T "$d/..data_tmp" "$d/..data"
      rm -rf "${d:?}/$prev"
      prev=$ts
      n=$((n + 1))
      if [ "$f" = 2-removed.json ]; then expect_line 2 "$GONE"; else expect_line 3 "$BACK"; fi
    done
    no_more 3
    ;;
  symlink_target)
    mkdir "$work/real" && cp "$data/1-start.json" "$work/real/a.json"
    ln -s real/a.json "$work/table.json"
    start_watch "$work/table.json"
    cp "$data/2-removed.json" "$work/real/a.json"  # the target, rewritten in place
    expect_line 2 "$GONE"
    cp "$data/3-back-at-3.json" "$work/real/b.json"
    ln -sfn real/b.json "$work/table.json"  # the link, retargeted
    expect_line 3 "$BACK"
    cp "$data/2-removed.json" "$work/real/b.json.tmp" && mv "$work/real/b.json.tmp" "$work/real/b.json"
    expect_line 4 'disappeared from index 3'
    no_more 4
    ;;
  dir_recreated)
    mkdir "$work/d" && cp "$data/1-start.json" "$work/d/table.json"
    start_watch "$work/d/table.json"
    rm -rf "$work/d" && mkdir "$work/d"
    cp "$data/2-removed.json" "$work/d/table.json.tmp" && mv "$work/d/table.json.tmp" "$work/d/table.json"
    expect_line 2 "$GONE"
    # Every later change in the new directory is seen too.
    cp "$data/3-back-at-3.json" "$work/d/table.json.tmp" && mv "$work/d/table.json.tmp" "$work/d/table.json"
    expect_line 3 "$BACK"
    no_more 3
    ;;
  line_by_line)
    # One GID per table (index 1, then 3), so every state a reader can catch between two lines
    # is either the table as it was or one with no GID at all: that one must never be applied.
    devinfo 1-start.json | grep -v 'GID\[  0\]' >"$work/at1.txt" || exit 2
    devinfo 3-back-at-3.json | grep -v 'GID\[  0\]' >"$work/at3.txt" || exit 2
    cp "$work/at1.txt" "$work/table.txt"
    start_watch "$work/table.txt"
    write_lines "$work/at1.txt" "$work/table.txt" slowly  # the same table again: nothing to report
    write_lines "$work/at3.txt" "$work/table.txt" slowly
    expect_line 2 'moved from index 1 to 3'
    no_more 2
    ;;
  partial)
    cp "$data/1-start.json" "$work/table.json"
    start_watch "$work/table.json"
    put() { cp "$1" "$work/table.json.tmp" && mv "$work/table.json.tmp" "$work/table.json"; }
    devinfo 2-removed.json >"$work/removed.txt" || exit 2
    # An ibv_devinfo table cut off after its port's header: no GID at all.
    grep -v 'GID\[' "$work/removed.txt" >"$work/cut.txt"
    put "$work/cut.txt"
    wait_log '"result":"unchanged","reason":"the file lists no GID at all'
    # Text cut off inside its last line.
    printf '%s' "$(cat "$work/removed.txt")" | head -c -3 >"$work/no_newline.txt"
    put "$work/no_newline.txt"
    wait_log '"result":"unchanged","reason":"the file does not end with a newline'
    # A file that lacks the port the program runs on.
    sed 's/rdma_en2/rdma_en9/' "$data/2-removed.json" >"$work/other.json"
    put "$work/other.json"
    wait_log '"result":"unchanged","reason":"rdma_en2 port 1 is not in the file'
    [ "$(lines)" -eq 1 ] || fail "a refused file changed the table"
    put "$data/2-removed.json"
    expect_line 2 "$GONE"
    wait_log '"result":"reloaded","ports_changed":1'
    no_more 2
    ;;
  *)
    echo "unknown scenario $scenario"; exit 2 ;;
esac

kill -INT "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "gidpolicy watch exited $rc after SIGINT (expected 0)"
echo "PASS ($scenario): $(lines) lines as expected"
