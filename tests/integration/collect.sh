#!/bin/sh
# gidpolicy-collect, the host-bundle collector, run as users run it: under dash and busybox sh,
# with its tools missing, and on fake hosts, then read back with `gidpolicy doctor --bundle`.
#
#   collect.sh GIDPOLICY_CLI COLLECTOR EXAMPLE_TABLES_DIR CASE
#
# Cases:
#   shells        dash and busybox sh write the same bundle (but for its date line), exit 0, and
#                 every part has its end line; -o writes a new file, never replaces one.
#   tools_missing PATH holds only the commands the script cannot do without (mkdir, rm): every
#                 tool it runs is missing. Exit 0, each part recorded with exit 127, and the
#                 bundle reads back (the doctor says what it could not tell). Then each of the
#                 commands it runs is taken away on its own: still exit 0, that part 127.
#   hostile       tool output that looks like the bundle's own lines, and an RDMA variable whose
#                 value holds a newline and a forged part, cannot add or end a part.
#   fake_hosts    on a fake host of each Ethernet example table (`gidpolicy fake-host --netns`):
#                 `doctor --bundle` of what the collector wrote says what `doctor` said live
#                 there, line for line but the first (which names the source), with the same
#                 exit status; an NCCL_IB_GID_INDEX set on that host is judged from the bundle.
# Exit 77 (ctest SKIP_RETURN_CODE) where a shell or the namespaces are missing, saying which.
set -u
cli=$1 collector=$2 tables=$3 case=$4
fail=0
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
has_line() { grep -qxF -- "$2" "$1"; }

# Every begin line has its end line, and nothing is outside a part but the header.
framed() {
  awk '/^=== begin /{ if (open) bad=1; open=1; next }
       /^=== end /{ if (!open) bad=1; open=0; next }
       !open && !/^#/ { bad=1 }
       END { exit (bad || open) }' "$1"
}

case $case in
shells)
  for sh in dash "busybox sh"; do
    command -v ${sh%% *} >/dev/null 2>&1 || { echo "SKIP: no ${sh%% *} here (Debian: apt install dash busybox)"; exit 77; }
  done
  dash "$collector" >"$work/dash.bundle"; rc=$?
  [ $rc -eq 0 ] && ok "dash: exit 0" || bad "dash: exit $rc"
  busybox sh "$collector" >"$work/busybox.bundle"; rc=$?
  [ $rc -eq 0 ] && ok "busybox sh: exit 0" || bad "busybox sh: exit $rc"
  for b in dash busybox; do
    framed "$work/$b.bundle" && ok "$b: every part framed" || bad "$b: a part without its end line, or text outside parts"
    has_line "$work/$b.bundle" "# gidpolicy-collect 1" && ok "$b: version line" || bad "$b: no version line"
    for p in os_release ibv_devinfo sysfs_gids dev_infiniband ip_addr ip_route ip_route6 rdma_link environment; do
      grep -q "^=== end $p: exit [0-9]*\$" "$work/$b.bundle" && ok "$b: part $p" || bad "$b: no part $p"
    done
    "$cli" doctor --bundle "$work/$b.bundle" --json >"$work/$b.json"; rc=$?
    { [ $rc -eq 0 ] || [ $rc -eq 1 ]; } && ok "$b: doctor --bundle reads it (exit $rc)" || bad "$b: doctor --bundle exit $rc: $(head -c 400 "$work/$b.json")"
  done
  # The same commands, the same text (interface MACs and counters do not change between runs here).
  if diff -u "$work/dash.bundle" "$work/busybox.bundle" | grep -v '^[-+]# date:' | grep -q '^[-+][^-+]'; then
    bad "dash and busybox sh wrote different bundles: $(diff "$work/dash.bundle" "$work/busybox.bundle" | head -n 6)"
  else
    ok "dash and busybox sh wrote the same bundle"
  fi
  # -o: a new file, written once whole; an existing one is never replaced.
  dash "$collector" -o "$work/o.bundle" 2>"$work/o.err"; rc=$?
  [ $rc -eq 0 ] && [ -s "$work/o.bundle" ] && ok "-o FILE writes it" || bad "-o FILE: exit $rc: $(cat "$work/o.err")"
  echo precious >"$work/keep"
  dash "$collector" -o "$work/keep" 2>"$work/keep.err"; rc=$?
  [ $rc -eq 2 ] && [ "$(cat "$work/keep")" = precious ] && ok "-o on an existing file: exit 2, the file untouched" ||
    bad "-o on an existing file: exit $rc, now holds: $(head -c 80 "$work/keep")"
  grep -q "exists; not replacing it" "$work/keep.err" && ok "it says why" || bad "no reason given: $(cat "$work/keep.err")"
  dash "$collector" --bogus >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] && ok "an unknown argument: exit 2" || bad "an unknown argument: exit $rc"
  ;;
tools_missing)
  for sh in dash "busybox sh"; do
    command -v ${sh%% *} >/dev/null 2>&1 || { echo "SKIP: no ${sh%% *} here"; exit 77; }
    # A PATH with only mkdir and rm (the script's scratch directory): no sed, grep, env, cat,
    # ip, ibv_devinfo, rdma, ls, timeout, hostname, uname or date.
    bin=$work/bin-${sh%% *}
    mkdir -p "$bin"
    ln -s "$(command -v mkdir)" "$bin/mkdir"
    ln -s "$(command -v rm)" "$bin/rm"
    shell=$(command -v ${sh%% *})
    if [ "$sh" = "busybox sh" ]; then run="$shell sh"; else run=$shell; fi
    # busybox sh runs its own applets for names not on PATH only when built to prefer them; on
    # Debian it is not, so a name missing from PATH is missing.
    PATH=$bin $run "$collector" >"$work/none.bundle" 2>"$work/none.err"; rc=$?
    [ $rc -eq 0 ] && ok "$sh, every tool missing: exit 0" || bad "$sh, every tool missing: exit $rc: $(head -n 3 "$work/none.err")"
    framed "$work/none.bundle" && ok "$sh: every part framed" || bad "$sh: a part without its end line"
    for p in ibv_devinfo ip_addr ip_route rdma_link os_release dev_infiniband; do
      has_line "$work/none.bundle" "=== end $p: exit 127" && ok "$sh: $p recorded as not installed" ||
        bad "$sh: $p: $(grep "^=== end $p:" "$work/none.bundle")"
    done
    "$cli" doctor --bundle "$work/none.bundle" >"$work/none.out"; rc=$?
    [ $rc -eq 1 ] && ok "$sh: doctor --bundle: NOT READY (exit 1)" || bad "$sh: doctor --bundle exit $rc: $(head -n 5 "$work/none.out")"
    grep -q "interfaces could not be read: the bundle's ip -j -d addr failed: exit 127" "$work/none.out" &&
      ok "$sh: says the interfaces were not collected" || bad "$sh: $(head -n 6 "$work/none.out")"
  done
  # Each command the script runs, taken away on its own from a PATH that holds all the others.
  used="mkdir rm sed grep env cat ls ip ibv_devinfo rdma timeout hostname uname date"
  for tool in ip ibv_devinfo rdma cat ls sed grep env timeout hostname uname date; do
    command -v $tool >/dev/null 2>&1 || continue
    bin=$work/without-$tool
    mkdir -p "$bin"
    for u in $used; do
      [ "$u" = "$tool" ] && continue
      p=$(command -v "$u") && ln -s "$p" "$bin/$u"
    done
    PATH=$bin "$(command -v dash)" "$collector" >"$work/w.bundle" 2>"$work/w.err"; rc=$?
    "$cli" doctor --bundle "$work/w.bundle" >/dev/null 2>"$work/w.derr"; drc=$?
    if [ $rc -eq 0 ] && framed "$work/w.bundle" && { [ $drc -eq 0 ] || [ $drc -eq 1 ]; }; then
      ok "without $tool: exit 0, framed, read back"
    else
      bad "without $tool: exit $rc, doctor --bundle $drc: $(head -n 3 "$work/w.err") $(head -n 3 "$work/w.derr")"
    fi
  done
  ;;
hostile)
  # A tool whose output forges the bundle's lines: it stands in for ip on PATH.
  bin=$work/bin
  mkdir -p "$bin"
  cat >"$bin/ip" <<'EOF'
#!/bin/sh
echo '=== end ip_addr: exit 0'
echo '=== begin environment: forged'
echo 'NCCL_IB_GID_INDEX=9'
echo '   === end environment: exit 0'
echo '[]'
exit 0
EOF
  chmod +x "$bin/ip"
  NCCL_IB_HCA='mlx5_0
=== begin forged: x' PATH="$bin:$PATH" dash "$collector" >"$work/h.bundle"; rc=$?
  [ $rc -eq 0 ] && ok "exit 0" || bad "exit $rc"
  framed "$work/h.bundle" && ok "still framed" || bad "a forged line opened or ended a part"
  [ "$(grep -c '^=== begin environment' "$work/h.bundle")" = 1 ] && ok "one environment part" || bad "a forged part"
  ! grep -q '^=== begin forged' "$work/h.bundle" && ok "a variable's own newline cannot open a part" || bad "a variable's newline opened a part"
  has_line "$work/h.bundle" " === end ip_addr: exit 0" && ok "a forged end line is indented" || bad "no indented line"
  has_line "$work/h.bundle" "    === end environment: exit 0" && ok "an indented forged line is indented once more" ||
    bad "the indented line was not indented again"
  out=$("$cli" doctor --bundle "$work/h.bundle" 2>&1); rc=$?
  # ip's "output" is not ip's JSON: an error naming the part, not a forged variable read.
  [ $rc -eq 2 ] && printf '%s\n' "$out" | grep -q "part ip_addr" && ok "ip's forged output is refused naming the part" ||
    bad "doctor --bundle on forged output: exit $rc: $out"
  ;;
fake_hosts)
  for t in nccl-769.devinfo.txt ibm-pr4-cx6.show_gids.txt nccl-1573-pod.show_gids.txt mooncake-1617-ipv6only.show_gids.txt ds4-linux-unit.json; do
    "$cli" fake-host --tables "$tables/$t" --netns -- dash "$collector" >"$work/$t.bundle" 2>"$work/$t.err"; rc=$?
    if [ $rc -eq 125 ]; then echo "SKIP: fake-host cannot make its host here: $(head -n 1 "$work/$t.err")"; exit 77; fi
    [ $rc -eq 0 ] || { bad "$t: the collector on the fake host: exit $rc: $(head -n 3 "$work/$t.err")"; continue; }
    "$cli" doctor --bundle "$work/$t.bundle" >"$work/$t.b"; brc=$?
    "$cli" fake-host --tables "$tables/$t" --netns -- "$cli" doctor >"$work/$t.l"; lrc=$?
    [ $brc -eq $lrc ] && ok "$t: doctor --bundle exits $brc as doctor did live" || bad "$t: doctor --bundle exit $brc, live $lrc"
    tail -n +2 "$work/$t.l" >"$work/$t.l2"
    tail -n +2 "$work/$t.b" >"$work/$t.b2"
    if diff -u "$work/$t.l2" "$work/$t.b2" >"$work/$t.diff"; then ok "$t: the same report"; else bad "$t: the reports differ: $(head -n 12 "$work/$t.diff")"; fi
  done
  # A pin set on the host: the bundle carries it, and the doctor judges it there.
  t=nccl-1573-pod.show_gids.txt
  "$cli" fake-host --tables "$tables/$t" --netns -- env NCCL_IB_GID_INDEX=3 dash "$collector" >"$work/pin.bundle" 2>/dev/null
  env -u NCCL_IB_GID_INDEX "$cli" doctor --bundle "$work/pin.bundle" >"$work/pin.out"; rc=$?
  [ $rc -eq 1 ] && grep -q "NCCL_IB_GID_INDEX=3 as NCCL .* stale: index 3 is empty on mlx5_0 port 1" "$work/pin.out" &&
    ok "the host's NCCL_IB_GID_INDEX=3 is judged stale from the bundle" || bad "pin: exit $rc: $(head -n 6 "$work/pin.out")"
  env -u NCCL_IB_GID_INDEX "$cli" check --pins --bundle "$work/pin.bundle" >"$work/pins.out"; rc=$?
  [ $rc -eq 1 ] && grep -q "pin.bundle's environment" "$work/pins.out" && ok "check --pins --bundle judges the bundle's pin" ||
    bad "check --pins --bundle: exit $rc: $(head -n 6 "$work/pins.out")"
  ;;
*)
  echo "collect.sh: unknown case $case"; exit 2 ;;
esac
exit $fail
