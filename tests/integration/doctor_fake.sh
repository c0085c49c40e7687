#!/bin/sh
# `gidpolicy doctor` over the drop-in fake libibverbs: a wedged device (GIDPOLICY_FAKE_HANG) is
# reported within its deadline and never hangs the doctor; an unknown call name is refused by the
# fake; on a fake host (`fake-host --netns`) whose netdevs hold the table's addresses the doctor
# says READY, and with a hung ibv_query_port it names the device.
#
#   doctor_fake.sh GIDPOLICY_CLI FAKE_LIB_DIR DATA_DIR CASE
# no_device: the fake with no table lists no device: a NOT-READY report with the cause (exit 1);
# provider_missing: the same under a private /sys/class/infiniband that lists a device.
# Exit 77 (ctest SKIP_RETURN_CODE) for the fake-host cases where this machine refuses the
# namespaces fake-host needs, after saying why.
# Time: GIDPOLICY_FAKE_HANG's call never returns, so "did not answer within D" is the doctor's
# deadline at work whatever the load. Every call before the hung one must answer within D too:
# the deadlines here (1.5 s for the first call, 3 s otherwise) are far above the milliseconds those
# take. Where no call hangs, the deadline is a hang guard (60 s) so that a slow machine is never
# reported as a wedged device. The bounds on how long the doctor took are hang guards (60 s).
set -u
cli=$1 lib=$2 data=$3 case=$4
unset NCCL_IB_GID_INDEX NVSHMEM_IB_GID_INDEX UCX_IB_GID_INDEX MC_GID_INDEX FI_VERBS_GID_IDX GGML_RDMA_GID MLX_RANK
fail=0
expect() {
  if printf '%s\n' "$out" | grep -qF -- "$2"; then echo "ok: $1"; else echo "FAIL: $1: no line with: $2"; fail=1; fi
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
fake() {  # fake VAR=VALUE... -- gidpolicy ARGS: the CLI on the fake library
  env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$data/fake-host.json" "$@"
}
on_fake_host() {  # on_fake_host ARGS...: gidpolicy doctor ARGS on a fake host, or exit 77
  out=$(env "$@" 2>&1); rc=$?
  if [ $rc -eq 125 ]; then
    echo "SKIP: fake-host cannot make its host here: $(printf '%s\n' "$out" | head -n 1)"; exit 77
  fi
}

# The code the doctor gives a host whose library lists no device, from /sys/class/infiniband as
# the doctor itself reads it: none there (absent or empty) is no kernel device, some is a missing
# provider.
no_device_code() {
  if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then echo verbs_provider_missing; else echo no_kernel_rdma_device; fi
}

case $case in
no_device)
  # The fake without a table lists no device, as libibverbs does on a machine without RDMA: a
  # NOT-READY report with the cause (exit 1), in JSON too; it was exit 2 with nothing on stdout.
  out=$(env -u GIDPOLICY_FAKE_TABLES LD_LIBRARY_PATH="$lib" "$cli" doctor --deadline 60 --json 2>/dev/null); rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "not ready" '"ready": false'
  expect "the cause" "\"code\": \"$(no_device_code)\""
  out=$(env -u GIDPOLICY_FAKE_TABLES LD_LIBRARY_PATH="$lib" "$cli" doctor --deadline 60 2>/dev/null)
  expect "the text report" "NOT READY: 1 blocker, 0 warnings (Linux commands; live devices (dlopen))"
  ;;
provider_missing)
  # The kernel lists a device (mlx5_0 under a private /sys/class/infiniband: a tmpfs over
  # /sys/class in a mount namespace of this test's own) and the library lists none.
  if [ "${5:-}" != "--inside" ]; then
    command -v unshare >/dev/null 2>&1 || { echo "SKIP: needs unshare (util-linux)"; exit 77; }
    if unshare --mount true 2>/dev/null; then set -- unshare --mount
    elif unshare --user --map-root-user --mount true 2>/dev/null; then set -- unshare --user --map-root-user --mount
    else echo "SKIP: this machine does not allow a private mount namespace: $(unshare --mount true 2>&1 | head -n 1)"; exit 77
    fi
    exec "$@" sh -c 'mount -t tmpfs tmpfs /sys/class && mkdir -p /sys/class/infiniband/mlx5_0 || { echo "SKIP: cannot mount a tmpfs over /sys/class"; exit 77; }; exec "$0" "$@"' \
      "$0" "$cli" "$lib" "$data" "$case" --inside
  fi
  out=$(env -u GIDPOLICY_FAKE_TABLES LD_LIBRARY_PATH="$lib" "$cli" doctor --deadline 60 --json 2>/dev/null); rc=$?
  printf '%s\n' "$out"
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "the cause" '"code": "verbs_provider_missing"'
  expect "the kernel's device named" "the kernel has RDMA devices (mlx5_0) but the verbs library lists none"
  expect "the providers' package" "sudo apt install ibverbs-providers"
  ;;
hang_query_port)
  # Each case below must return within its deadline (plus the time the other calls take).
  t0=$(now_ms)
  out=$(fake GIDPOLICY_FAKE_HANG=ibv_query_port "$cli" doctor --deadline 3 2>&1); rc=$?
  t1=$(now_ms)
  printf '%s\n' "$out"
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "mlx5_0 named with the call and the deadline" \
    "mlx5_0 did not answer ibv_query_port within 3 s: the port may be wedged; replug the cable or reboot"
  expect "the other device is reported too" "rdma_gpt0 did not answer ibv_query_port within 3 s"
  took=$((t1 - t0))
  # It returns rather than hangs. The bounds are far above the deadlines (two devices, one each):
  # a deadline's child also loads the library, which a loaded machine can make slow, and how
  # long the doctor takes is a figure, not a test.
  [ $took -lt 60000 ] && echo "ok: returned in $took ms" || { echo "FAIL: took $took ms for two 3 s deadlines"; fail=1; }
  # The default deadline is 5 s, and the message says so.
  t0=$(now_ms)
  out=$(fake GIDPOLICY_FAKE_HANG=ibv_query_port "$cli" doctor --device mlx5_0 2>&1); rc=$?
  t1=$(now_ms)
  expect "the default deadline" "mlx5_0 did not answer ibv_query_port within 5 s"
  took=$((t1 - t0))
  [ $took -lt 60000 ] && echo "ok: returned in $took ms" || { echo "FAIL: took $took ms for one 5 s deadline"; fail=1; }
  ;;
hang_listing)
  t0=$(now_ms)
  out=$(fake GIDPOLICY_FAKE_HANG=ibv_get_device_list "$cli" doctor --deadline 1.5 --json 2>&1); rc=$?
  t1=$(now_ms)
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; printf '%s\n' "$out"; fail=1; }
  expect "the listing that did not answer" "did not answer ibv_get_device_list within 1500 ms"
  expect "as a JSON finding" '"code": "no_answer"'
  took=$((t1 - t0))
  [ $took -lt 60000 ] && echo "ok: returned in $took ms" || { echo "FAIL: took $took ms"; fail=1; }
  ;;
hang_unknown_call)
  out=$(fake GIDPOLICY_FAKE_HANG=ibv_frobnicate "$cli" doctor 2>&1); rc=$?
  printf '%s\n' "$out"
  # The fake refuses its configuration as a machine without RDMA does (no device listed): a
  # finding, exit 1, not bad usage.
  [ $rc -eq 1 ] && echo "ok: exit 1 (no devices)" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "the fake refuses the name, listing the ones it takes" \
    "GIDPOLICY_FAKE_HANG=ibv_frobnicate is not a call the fake can hang in (one of: ibv_get_device_list, ibv_open_device"
  ;;
no_hang)
  # The same library without the fault: the tables are read (no netdevs here: the doctor says so).
  out=$(fake "$cli" doctor --deadline 60 --json 2>&1); rc=$?
  expect "both ports read" '"device": "rdma_gpt0"'
  if printf '%s\n' "$out" | grep -q '"no_answer"'; then echo "FAIL: a device reported as not answering"; fail=1; fi
  ;;
killed_mid_read)
  # The doctor ended by a signal while its reading process is wedged in a driver call: the
  # reading process ends with it (it would otherwise hold the device for ever). KILL too, which
  # no handler can see. The deadline (60 s) is far above the test: the doctor is still waiting.
  for sig in TERM HUP KILL; do
    # env execs the doctor: $! is the doctor's pid (fake(), a function, would be a subshell's).
    env LD_LIBRARY_PATH="$lib" GIDPOLICY_FAKE_TABLES="$data/fake-host.json" GIDPOLICY_FAKE_HANG=ibv_query_port \
      "$cli" doctor --device mlx5_0 --deadline 60 >/dev/null 2>&1 &
    doc=$!
    reader=
    i=0
    while [ $i -lt 600 ] && [ -z "$reader" ]; do  # hang guard: 60 s for the reader to start
      reader=$(cat /proc/$doc/task/*/children 2>/dev/null | tr -s ' ' '\n' | head -n 1)
      [ -n "$reader" ] || sleep 0.1
      i=$((i + 1))
    done
    if [ -z "$reader" ]; then echo "FAIL: SIG$sig: the doctor started no reading process"; fail=1; kill -KILL $doc; wait $doc; continue; fi
    # Wedged: its last call is the hung one (the fake never returns from it).
    i=0
    while [ $i -lt 600 ] && ! grep -q '^State:.*S (sleeping)' /proc/$reader/status 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
    kill -$sig $doc
    wait $doc
    gone=
    i=0
    while [ $i -lt 600 ]; do  # hang guard: 60 s
      state=$(awk '{print $3}' /proc/$reader/stat 2>/dev/null)
      if [ -z "$state" ] || [ "$state" = Z ]; then gone=1; break; fi
      sleep 0.1
      i=$((i + 1))
    done
    if [ -n "$gone" ]; then echo "ok: SIG$sig to the doctor ended its reading process $reader"
    else echo "FAIL: SIG$sig to the doctor left its reading process $reader running"; fail=1; kill -KILL "$reader"; fi
  done
  ;;
fake_host_ready)
  on_fake_host "$cli" fake-host --tables "$data/fake-host.json" --netns -- "$cli" doctor --deadline 60
  printf '%s\n' "$out"
  [ $rc -eq 0 ] && echo "ok: exit 0" || { echo "FAIL: exit $rc, expected 0"; fail=1; }
  expect "ready" "READY: 0 blockers"
  expect "live source" "live devices (dlopen)"
  # The fake reports each GID's netdev (ndev_ifindex) as the kernel does, so mlx5_0's address
  # checks run against gpd0 rather than being skipped for want of a netdev.
  expect "mlx5_0's netdev named" "mlx5_0 port 1: active, ethernet, gpd0, 4 GIDs"
  expect "rdma_gpt0's netdev named" "rdma_gpt0 port 1: active, thunderbolt, gpt0, 2 GIDs"
  ;;
fake_host_hang)
  on_fake_host GIDPOLICY_FAKE_HANG=ibv_query_port "$cli" fake-host --tables "$data/fake-host.json" --netns -- \
    "$cli" doctor --deadline 3
  printf '%s\n' "$out"
  [ $rc -eq 1 ] && echo "ok: exit 1" || { echo "FAIL: exit $rc, expected 1"; fail=1; }
  expect "wedged" "mlx5_0 did not answer ibv_query_port within 3 s"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
exit $fail
