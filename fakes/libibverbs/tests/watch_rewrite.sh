#!/bin/sh
# Acceptance of `gidpolicy watch` on the drop-in fake libibverbs: the watcher runs on a
# table file, this script rewrites the file under it (address removed, then re-added at another
# index) and checks the lines it prints, in order, and that SIGINT ends it cleanly (exit 0).
#
#   watch_rewrite.sh GIDPOLICY_CLI FAKELIB_DIR DATA_DIR [--json]
# DATA_DIR holds 1-start.json, 2-removed.json, 3-back-at-3.json. Every wait is for a line the
# watcher prints, bounded by a hang guard (60 s: an idle machine needs well under one).
set -u
cli=$1 lib=$2 data=$3 json=${4:-}
work=$(mktemp -d) || exit 2
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

cp "$data/1-start.json" "$work/table.json"
# The output file exists before the watcher starts: the background job's redirection is opened
# by the child, and a wait that finds no file yet must keep waiting, not rewrite the table early.
: >"$work/out"
LD_LIBRARY_PATH=$lib GIDPOLICY_FAKE_TABLES=$work/table.json "$cli" watch $json >"$work/out" 2>"$work/err" &
pid=$!

# wait_lines N: until the output has N lines (60 s at most).
wait_lines() {
  i=0
  while [ "$(wc -l <"$work/out" 2>/dev/null || echo 0)" -lt "$1" ]; do
    i=$((i + 1))
    if [ $i -gt 600 ]; then
      echo "FAIL: waited 60 s for line $1; output so far:"; cat "$work/out"; cat "$work/err"
      exit 1
    fi
    sleep 0.1
  done
}
# Rewrite as documented: a complete file renamed over the old one.
rewrite() {
  cp "$data/$1" "$work/table.json.tmp" && mv "$work/table.json.tmp" "$work/table.json"
}

wait_lines 1
rewrite 2-removed.json
wait_lines 2
rewrite 3-back-at-3.json
wait_lines 3
kill -INT "$pid"
wait "$pid"
rc=$?
pid=
if [ "$rc" -ne 0 ]; then
  echo "FAIL: gidpolicy watch exited $rc after SIGINT (expected 0)"; cat "$work/err"; exit 1
fi

if [ -z "$json" ]; then
  cat >"$work/expected" <<'EOT'
rdma_en2 port 1: watching ::ffff:169.254.10.2 (ib) at index 1 (auto)
rdma_en2 port 1: ::ffff:169.254.10.2 (ib) disappeared from index 1 [gid_change]; re-plan: none (no acceptable GID: rdma_en2 port 1: no entry qualifies (looked at: [0] link_local))
rdma_en2 port 1: ::ffff:169.254.10.2 (ib) reappeared at index 3 [gid_change]; re-plan: ::ffff:169.254.10.2 (ib) at index 3 (followed)
EOT
else
  cat >"$work/expected" <<'EOT'
{"schema":"gidpolicy.watch","version":4,"host":"HOST","source":"live device rdma_en2","event":"watching","device":"rdma_en2","port":1,"profile":"auto","gid":"::ffff:169.254.10.2","index":1}
{"schema":"gidpolicy.watch","version":4,"host":"HOST","source":"live device rdma_en2","event":"change","device":"rdma_en2","port":1,"kind":"disappeared","cause":"gid_change","gid":"::ffff:169.254.10.2","type":"ib","old_index":1,"new_index":null,"twin_old_index":null,"twin_new_index":null,"port_state":"active","replan":{"ok":false,"error":{"code":"no_candidate","category":"gidpolicy","value":NUM,"message":"MSG"}}}
{"schema":"gidpolicy.watch","version":4,"host":"HOST","source":"live device rdma_en2","event":"change","device":"rdma_en2","port":1,"kind":"reappeared","cause":"gid_change","gid":"::ffff:169.254.10.2","type":"ib","old_index":null,"new_index":3,"twin_old_index":null,"twin_new_index":null,"port_state":"active","replan":{"ok":true,"gid":"::ffff:169.254.10.2","index":3,"followed":true,"tell_peer":false,"why":"followed ::ffff:169.254.10.2 to index 3"}}
EOT
  # The error's number and message are the error model's, not this feature's, and the host is
  # this machine's name: normalise them.
  sed -e 's/"value":[0-9]*,"message":"[^"]*"/"value":NUM,"message":"MSG"/' \
      -e 's/"host":\("[^"]*"\|null\)/"host":"HOST"/' "$work/out" >"$work/out.n"
  mv "$work/out.n" "$work/out"
fi
if ! diff -u "$work/expected" "$work/out"; then
  echo "FAIL: gidpolicy watch printed other lines than expected"; exit 1
fi
echo "PASS: $(wc -l <"$work/out") lines as expected, clean exit on SIGINT"
