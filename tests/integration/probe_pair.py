#!/usr/bin/env python3
"""`gidpolicy probe --listen/--connect` between two processes on the drop-in fake libibverbs.

Usage: probe_pair.py CLI FAKE_LIB_DIR SOURCE_DIR CASE

Each side is its own process with its own table (GIDPOLICY_FAKE_TABLES), as two hosts would be;
the fake carries the data between them. Each case asserts the probe's observation per direction,
that it agrees with the prediction (and with `gidpolicy simulate` for the same tables), and, where
perftest is installed, that `ib_send_bw -x N` between the same two fake hosts passes or fails
alike. Every wait is a hang guard far above what the case needs; no verdict depends on time: the
bounds asserted are the probe's own deadlines, which end the run with their own message.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

GUARD = 120  # seconds: a hang guard, never a verdict
CLI, LIB, ROOT, CASE = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
TABLES = os.path.join(ROOT, "examples", "tables")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def env_for(table, extra=None):
    env = dict(os.environ, LD_LIBRARY_PATH=LIB, GIDPOLICY_FAKE_TABLES=os.path.join(TABLES, table))
    for k in list(env):  # the stacks' own settings come only from the case
        if k.startswith(("NCCL_", "UCX_", "MC_", "FI_", "NVSHMEM_")):
            del env[k]
    env.update(extra or {})
    return env


class Side:
    def __init__(self, table, args, extra_env=None):
        self.p = subprocess.Popen([CLI, "probe"] + args, env=env_for(table, extra_env), cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err_lines = []

    def wait_listening(self):
        # The listener says its port on stderr before it waits for the peer.
        for line in self.p.stderr:
            self.err_lines.append(line)
            if "listening on port" in line:
                return int(line.split()[-1])
        return None

    def finish(self):
        try:
            out, err = self.p.communicate(timeout=GUARD)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, err = self.p.communicate()
            failures.append(f"hang guard: {self.p.args} still running after {GUARD} s")
        self.rc = self.p.returncode
        self.out = out
        self.err = "".join(self.err_lines) + err
        try:
            self.doc = json.loads(out) if out.strip() else None
        except json.JSONDecodeError:
            self.doc = None
        return self


# Generous deadlines for the pairs: a loaded machine must not turn a working link into a failure.
# A case that asserts a bound gives its own (the probe's deadlines are what end those runs).
SLOW_OK = ["--deadline", "120", "--attempt-deadline", "60"]


def pair(table_l, args_l, table_c, args_c, env_l=None, env_c=None, during=None):
    if "--deadline" not in args_l:
        args_l, args_c = SLOW_OK + args_l, SLOW_OK + args_c
    lst = Side(table_l, ["--listen", "127.0.0.1:0", "--json"] + args_l, env_l)
    port = lst.wait_listening()
    if port is None:
        lst.finish()
        failures.append(f"the listener never listened: {lst.err}")
        return lst, lst
    con = Side(table_c, ["--connect", f"127.0.0.1:{port}", "--json"] + args_c, env_c)
    if during:
        during(lst, con)
    return lst.finish(), con.finish()


def directions(side, kind="rc"):
    if not side.doc:
        return []
    for q in side.doc.get("qps", []):
        if q["kind"] == kind:
            return q["directions"]
    return []


def simulate(tables, profile):
    p = subprocess.run([CLI, "simulate", "--profile", profile] + [os.path.join(TABLES, t) for t in tables],
                       capture_output=True, text=True, timeout=GUARD, cwd=ROOT)
    return p.returncode


def perftest(table_s, table_c, device, xs, xc, extra=()):
    """ib_send_bw between two fake hosts: True when both sides completed, None without perftest."""
    tool = shutil.which("ib_send_bw")
    if not tool:
        return None
    with socket.socket() as s:  # a free port for perftest's own TCP exchange
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = [tool, "-d", device, "-i", "1", "-p", str(port), "-n", "5", "-s", "64"] + list(extra)
    srv = subprocess.Popen(base + ["-x", str(xs)], env=env_for(table_s), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    # perftest's server accepts one connection: wait until it listens (a hang guard, not a verdict)
    for _ in range(GUARD * 10):
        if srv.poll() is not None:
            break
        ss = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True)
        if ss.stdout.strip():
            break
        time.sleep(0.1)
    cli = subprocess.Popen(base + ["-x", str(xc), "127.0.0.1"], env=env_for(table_c), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    ok = True
    for p in (cli, srv):
        try:
            p.communicate(timeout=30 if p is cli else 10)
        except subprocess.TimeoutExpired:  # a side left waiting for its peer, as on hardware
            p.kill()
            p.communicate()
        ok = ok and p.returncode == 0
    return ok


def case_connects():
    t = "ds4-linux-unit.json"
    lst, con = pair(t, ["--qp", "both"], t, ["--qp", "both"])
    for side in (lst, con):
        check(side.rc == 0, f"connects: {side.doc and side.doc['role']}: exit {side.rc}: {side.err.strip()}")
        check(side.doc is not None and side.doc["connected"] is True, "connects: document says connected")
        for kind in ("rc", "uc"):
            ds = directions(side, kind)
            check(len(ds) == 2, f"connects: two {kind} directions")
            for d in ds:
                check(d["outcome"] == "connected", f"connects: {kind} {d['from']}->{d['to']}: {d['outcome']}")
                check(d["rtt_us"] is not None and d["rtt_us"] > 0, f"connects: {kind} round trip {d['rtt_us']}")
                check(d["predicted"]["outcome"] == "ok", f"connects: predicted {d['predicted']}")
                check(d["contradicts_prediction"] is False, "connects: no contradiction")
    check(simulate([t, t], "auto") == 0, "connects: simulate predicts the pair connects")
    idx = lst.doc["local"]["sgid_index"] if lst.doc else 0
    pt = perftest(t, t, lst.doc["local"]["device"] if lst.doc else "", idx, idx)
    check(pt in (None, True), f"connects: ib_send_bw -x {idx} between the same fake hosts: {pt}")


def case_stale_pin():
    # The listener's host is launched with a stale pin (index 3 is empty there), the connector's
    # is not: the pinned side's RTR fails with ENODATA, named as the stale pin; the other side
    # is handed the all-zero GID the pinned side advertised (NCCL reads the empty slot as zeros).
    t = "nccl-1573-pod.show_gids.txt"
    args = ["--stack", "nccl", "--device", "mlx5_0"]
    lst, con = pair(t, args, t, args, env_l={"NCCL_IB_GID_INDEX": "3"})
    for side in (lst, con):
        check(side.rc == 1, f"stale pin: exit {side.rc} (expected 1): {side.err.strip()}")
        ds = {(d["from"], d["to"]): d for d in directions(side)}
        d = ds.get(("listener", "connector"))
        check(d is not None, "stale pin: the listener's direction is reported")
        if d is None:
            continue
        check(d["outcome"] == "rtr_failed" and d["side"] == "listener", f"stale pin: {d['outcome']} at {d['side']}")
        check(d["errno"] == 61 and d["errno_name"] == "ENODATA", f"stale pin: errno {d['errno']}")
        check(d["cause"] is not None and d["cause"]["id"] == "stale_pin" and "NCCL_IB_GID_INDEX=3" in
              d["cause"]["summary"], f"stale pin: cause {d['cause']}")
        check(d["predicted"]["outcome"] == "error" and d["predicted"]["errno"] == 61,
              f"stale pin: predicted {d['predicted']}")
        check(d["contradicts_prediction"] is False, "stale pin: the prediction holds")
        back = ds.get(("connector", "listener"))
        check(back is not None and back["outcome"] != "connected" and not back["contradicts_prediction"],
              f"stale pin: the other direction fails as predicted: {back}")
    # `check --pins` predicted the same errno for the same table and pin.
    p = subprocess.run([CLI, "check", "--pins", "--json", "--input", os.path.join(TABLES, t), "--device", "mlx5_0"],
                       capture_output=True, text=True, timeout=GUARD, env=env_for(t, {"NCCL_IB_GID_INDEX": "3"}))
    nccl = [r for r in json.loads(p.stdout)["pins"] if r["reader"].startswith("NCCL")] if p.stdout else []
    check(len(nccl) == 1 and nccl[0]["status"] == "stale" and nccl[0]["errno"] == 61, f"stale pin: check --pins {nccl}")
    auto = con.doc["local"]["sgid_index"] if con.doc else 7
    pt = perftest(t, t, "mlx5_0", 3, auto)
    check(pt in (None, False), f"stale pin: ib_send_bw -x 3 against -x {auto} fails too: {pt}")


def case_stacks():
    # --stacks: each stack's own pick, in one run; the listener's host has NCCL's stale pin. A
    # stack's link connects exactly where `check --stacks` says its pick works on both hosts.
    t = "nccl-1573-pod.show_gids.txt"
    pin = {"NCCL_IB_GID_INDEX": "3"}
    args = ["--stacks", "--device", "mlx5_0"]
    lst, con = pair(t, args, t, args, env_l=pin)

    def works(extra):
        p = subprocess.run([CLI, "check", "--stacks", "--json", "--input", os.path.join(TABLES, t), "--device",
                            "mlx5_0"], capture_output=True, text=True, timeout=GUARD, env=env_for(t, extra))
        return {r["stack"]: r["works"] for r in json.loads(p.stdout)["ports"][0]["stacks"]}

    expect = {k: bool(v) and bool(works({}).get(k)) for k, v in works(pin).items() if v is not None}
    for side in (lst, con):
        check(side.rc == 1, f"stacks: exit {side.rc} (expected 1): {side.err.strip()}")
        if not side.doc:
            continue
        tried = {}
        for q in side.doc["qps"]:
            tried[q["stack"]] = tried.get(q["stack"], True) and all(d["connected"] for d in q["directions"])
            for d in q["directions"]:
                check(not d["contradicts_prediction"], f"stacks: {q['stack']} {d['from']}: {d}")
        skipped = {r["stack"] for r in side.doc["skipped"]}
        check(set(tried) | skipped == set(expect), f"stacks: every stack tried or skipped: {tried} {skipped}")
        for stack, ok in expect.items():
            got = tried.get(stack, False)
            check(got == ok, f"stacks: {stack}: connected {got}, check --stacks says works on both: {ok}")
        nccl = [d for q in side.doc["qps"] if q["stack"] == "nccl" for d in q["directions"] if d["from"] == "listener"]
        check(len(nccl) == 1 and nccl[0]["errno"] == 61 and nccl[0]["cause"]["id"] == "stale_pin",
              f"stacks: nccl's stale pin named: {nccl}")


def case_jaccl_einval():
    t = "macmini-mapped-at-2.json"
    args = ["--profile", "jaccl", "--qp", "uc"]
    lst, con = pair(t, args, t, args)
    for side in (lst, con):
        check(side.rc == 1, f"jaccl: exit {side.rc} (expected 1): {side.err.strip()}")
        ds = directions(side, "uc")
        check(len(ds) == 2, "jaccl: two directions")
        for d in ds:
            check(d["outcome"] == "rtr_failed" and d["errno"] == 22, f"jaccl: {d['outcome']} errno {d['errno']}")
            check(d["cause"] is not None, "jaccl: a cause is named")
            check(d["predicted"]["errno"] == 22 and not d["contradicts_prediction"], f"jaccl: {d['predicted']}")
    check(simulate([t, t], "jaccl") == 1, "jaccl: simulate predicts failure")


def case_roce_v1_v2():
    # nccl-769's bond port holds the same address as RoCE v1 (index 2) and v2 (index 3).
    t = "nccl-769.devinfo.txt"
    common = ["--device", "mlx5_bond_0", "--deadline", "120", "--attempt-deadline", "60"]
    lst, con = pair(t, common + ["--sgid-index", "2"], t, common + ["--sgid-index", "3"])
    for side in (lst, con):
        check(side.rc == 1, f"v1/v2: exit {side.rc} (expected 1): {side.err.strip()}")
        for d in directions(side):
            check(d["outcome"] in ("completion_error", "no_delivery"), f"v1/v2: outcome {d['outcome']}")
            check(d["predicted"]["outcome"] == "times_out", f"v1/v2: predicted {d['predicted']}")
            check(d["cause"] is not None and d["cause"]["id"] == "roce_version_mismatch", f"v1/v2: cause {d['cause']}")
            check(not d["contradicts_prediction"], "v1/v2: the prediction holds")
        # RC: the sender's requests end in IBV_WC_RETRY_EXC_ERR within the probe's retry budget.
        check(any(d["wc_status"] == "retry_exceeded" for d in directions(side)), "v1/v2: retry exceeded")
    pt = perftest(t, t, "mlx5_bond_0", 2, 3)
    check(pt in (None, False), f"v1/v2: ib_send_bw -x 2 against -x 3 fails too: {pt}")


def case_roce_v1_only_v2():
    # Two different hosts, plain auto on each: the v1-only host selects its IPv4 entry at 1
    # (RoCE v1), the other its IPv4 entry at 3 (RoCE v2). Both RTRs pass; each port answers only
    # its own framing (v1: Ethertype 0x8915, v2: UDP 4791), so nothing is delivered either way.
    data = os.path.join(ROOT, "tests", "data", "roce_versions")
    v1, v2 = os.path.join(data, "v1-only-a.json"), os.path.join(data, "v2-a.json")
    lst, con = pair(v1, [], v2, [])
    for side in (lst, con):
        check(side.rc == 1, f"v1-only/v2: exit {side.rc} (expected 1): {side.err.strip()}")
        ds = directions(side)
        check(len(ds) == 2, f"v1-only/v2: two rc directions, found {len(ds)}")
        for d in ds:
            check(d["outcome"] in ("completion_error", "no_delivery"), f"v1-only/v2: outcome {d['outcome']}")
            check(d["predicted"]["outcome"] == "times_out", f"v1-only/v2: predicted {d['predicted']}")
            check(not d["contradicts_prediction"], "v1-only/v2: the prediction holds")
        check(any(d["wc_status"] == "retry_exceeded" for d in ds), "v1-only/v2: retry exceeded")
    if lst.doc:
        check(lst.doc["local"]["sgid_index"] == 1, f"v1-only/v2: the v1-only host routes from 1: {lst.doc['local']}")
    if con.doc:
        check(con.doc["local"]["sgid_index"] == 3, f"v1-only/v2: the v2 host routes from 3: {con.doc['local']}")
    # simulate on the same two tables predicts the failure, naming both framings.
    sim = subprocess.run([CLI, "simulate", "--profile", "auto", v1, v2], capture_output=True, text=True,
                         timeout=GUARD, cwd=ROOT)
    check(sim.returncode == 1, f"v1-only/v2: simulate exit {sim.returncode}: {sim.stdout} {sim.stderr}")
    check("sends RoCE v1 frames (sgid_index 1); the peer's port routes RoCE v2" in sim.stdout,
          f"v1-only/v2: simulate names both types: {sim.stdout}")
    # fleet on the two tables as host snapshots (`show --json`) predicts the same: times_out.
    with tempfile.TemporaryDirectory() as tmp:
        snaps = []
        for name, t in (("v1host", v1), ("v2host", v2)):
            s = subprocess.run([CLI, "show", "--json", "--host", name, "--input", t], capture_output=True,
                               text=True, timeout=GUARD)
            check(s.returncode == 0, f"v1-only/v2: show --json {t}: {s.stderr}")
            sp = os.path.join(tmp, name + ".json")
            with open(sp, "w", encoding="utf-8") as f:
                f.write(s.stdout)
            snaps.append(sp)
        f = subprocess.run([CLI, "fleet", "--json", "--all-links", "--profile", "auto"] + snaps,
                           capture_output=True, text=True, timeout=GUARD)
        check(f.returncode == 1, f"v1-only/v2: fleet exit {f.returncode}: {f.stderr}")
        try:
            doc = json.loads(f.stdout)
        except json.JSONDecodeError:
            doc = None
        check(doc is not None and doc["connected"] == 0 and len(doc["links_detail"]) == 1,
              f"v1-only/v2: fleet says the link fails: {f.stdout[:500]}")
        if doc and doc["links_detail"]:
            link = doc["links_detail"][0]
            for way in ("a_to_b", "b_to_a"):
                check(link[way]["outcome"] == "times_out", f"v1-only/v2: fleet {way}: {link[way]}")
                cause = doc["causes"][link[way]["cause"]]
                check("frames" in cause["text"] and "RoCE v1" in cause["text"] and "RoCE v2" in cause["text"],
                      f"v1-only/v2: fleet cause names both types: {cause}")
    pt = perftest(v1, v2, "mlx5_bond_0", 1, 3)
    check(pt in (None, False), f"v1-only/v2: ib_send_bw -x 1 against -x 3 fails too: {pt}")


def case_link_local():
    # mooncake-1617's port holds a link-local GID (index 0) and a routable ULA (index 1).
    t = "mooncake-1617-ipv6only.show_gids.txt"
    lst, con = pair(t, ["--sgid-index", "1"], t, ["--sgid-index", "0"])
    for side in (lst, con):
        check(side.rc == 1, f"link-local: exit {side.rc} (expected 1): {side.err.strip()}")
        ds = directions(side)
        check(len(ds) == 2, "link-local: two directions")
        for d in ds:
            check(d["outcome"] in ("completion_error", "no_delivery"), f"link-local: outcome {d['outcome']}")
            check(d["predicted"]["outcome"] == "times_out" and d["predicted"]["side"] == "connector",
                  f"link-local: predicted {d['predicted']}")
            check(d["cause"] is not None and d["cause"]["id"] == "link_local_source", f"link-local: {d['cause']}")
            check(not d["contradicts_prediction"], "link-local: the prediction holds")
    dev = lst.doc["local"]["device"] if lst.doc else "rocep105s0"
    pt = perftest(t, t, dev, 1, 0)
    check(pt in (None, False), f"link-local: ib_send_bw -x 1 against -x 0 fails too: {pt}")


def case_absent_listener():
    side = Side("ds4-linux-unit.json", ["--listen", "127.0.0.1:0", "--deadline", "1"])
    side.wait_listening()
    side.finish()
    lines = [line for line in side.err.splitlines() if "listening on port" not in line]
    check(side.rc == 1, f"absent: exit {side.rc}")
    check(len(lines) == 1 and "absent peer: nobody connected within --deadline 1 s" in lines[0], f"absent: {lines}")


def silent_server(behaviour):
    """A TCP server that accepts one connection and then does `behaviour(conn)`."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        behaviour(conn)
        conn.close()
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


def connect_to(port, extra=()):
    return Side("ds4-linux-unit.json", ["--connect", f"127.0.0.1:{port}"] + list(extra)).finish()


def case_absent_connect():
    # A peer that accepts and never speaks: the attempt's deadline (5 s by default) ends it.
    port = silent_server(lambda c: c.recv(4096) and time.sleep(30))
    side = connect_to(port)
    lines = side.err.strip().splitlines()
    check(side.rc == 1, f"silent peer: exit {side.rc}")
    check(len(lines) == 1 and "sent nothing for 5.0 s" in lines[0], f"silent peer: {lines}")


def case_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    side = connect_to(port)
    lines = side.err.strip().splitlines()
    check(side.rc == 1, f"refused: exit {side.rc}")
    check(len(lines) == 1 and "connection refused" in lines[0], f"refused: {lines}")


def case_garbage():
    port = silent_server(lambda c: c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n") or time.sleep(2))
    side = connect_to(port)
    lines = side.err.strip().splitlines()
    check(side.rc == 2, f"garbage: exit {side.rc}")
    check(len(lines) == 1 and "garbage on the socket" in lines[0] and "HTTP/1.1" in lines[0], f"garbage: {lines}")


def case_version():
    msg = json.dumps({"gidpolicy_probe": 2, "type": "hello"}).encode() + b"\n"
    port = silent_server(lambda c: c.sendall(msg) or time.sleep(2))
    side = connect_to(port)
    lines = side.err.strip().splitlines()
    check(side.rc == 2, f"version: exit {side.rc}")
    check(len(lines) == 1 and "protocol version 2" in lines[0], f"version: {lines}")


GOOD_HELLO = {"gidpolicy_probe": 1, "type": "hello", "role": "listener", "device": "d", "port": 1,
              "link_layer": "ethernet", "platform": "linux", "profile": "auto", "gid": "::ffff:10.0.0.1",
              "gid_index": 1, "sgid_index": 1, "gid_type": "roce_v2", "lid": 0, "mtu": 1024, "nonce": 1,
              "qps": [{"kind": "rc", "created": True, "qpn": 1, "psn": 1, "addr": 0, "rkey": 0}]}


def case_invalid_field():
    # Each hello differs from a valid one in one field; the connector refuses it naming the field.
    bad = [({"mtu": 1000}, "field 'mtu'"), ({"gid": "not-a-gid"}, "field 'gid'"), ({"port": 0}, "field 'port'"),
           ({"sgid_index": 256}, "field 'sgid_index'"), ({"gid_type": "v3"}, "field 'gid_type'"),
           ({"qps": [{"kind": "ud", "created": True, "qpn": 1, "psn": 1, "addr": 0, "rkey": 0}]}, "'qps[].kind'"),
           ({"qps": [{"kind": "rc", "created": True, "qpn": 1 << 24, "psn": 1, "addr": 0, "rkey": 0}]}, "'qpn'"),
           ({"role": "connector"}, "is a connector too"), ({"nonce": -1}, "field 'nonce'")]
    for change, named in bad:
        hello = dict(GOOD_HELLO, **change)
        port = silent_server(lambda c, h=hello: c.sendall(json.dumps(h).encode() + b"\n") or time.sleep(2))
        side = connect_to(port)
        lines = side.err.strip().splitlines()
        check(side.rc == 2, f"invalid {change}: exit {side.rc}")
        check(len(lines) == 1 and named in lines[0], f"invalid {change}: {lines}")


def case_peer_killed():
    # UC on a v1/v2 pair delivers nothing, so both sides wait in the data exchange: the listener
    # is killed there (after the fake logged a dropped packet), and the connector must say so in
    # one line long before its 60 s attempt deadline.
    t = "nccl-769.devinfo.txt"
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "fake.jsonl")
        common = ["--device", "mlx5_bond_0", "--qp", "uc", "--deadline", "120", "--attempt-deadline", "60"]
        env = {"GIDPOLICY_FAKE_LOG": log}

        def kill_listener(lst, con):
            for _ in range(GUARD * 10):
                if os.path.exists(log) and '"call":"deliver"' in open(log, encoding="utf-8").read():
                    break
                time.sleep(0.1)
            lst.p.kill()

        lst, con = pair(t, common + ["--sgid-index", "2"], t, common + ["--sgid-index", "3"], env, env,
                        during=kill_listener)
    lines = [line for line in con.err.strip().splitlines()]
    check(con.rc == 1, f"peer killed: exit {con.rc}")
    check(len(lines) == 1 and "died or was killed mid-exchange" in lines[0], f"peer killed: {lines}")
    check(con.doc is not None and con.doc["problem"]["kind"] == "peer_died", "peer killed: problem peer_died")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    if CASE not in CASES:
        print(f"unknown case {CASE}: {', '.join(CASES)}")
        sys.exit(2)
    CASES[CASE]()
    if failures:
        sys.exit(1)
    print(f"probe.{CASE}: ok")
