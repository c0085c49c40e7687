#!/usr/bin/env python3
"""gidpolicy-probe-mpi under mpirun on the drop-in fake libibverbs, one table per rank.

Usage: probe_mpi.py CASE CLI PROBE_MPI FAKE_LIB_DIR

Each rank's table is chosen by its rank (a wrapper sets GIDPOLICY_FAKE_TABLES from
OMPI_COMM_WORLD_RANK). In every case the report's links are compared, link for link, with
`gidpolicy fleet` on `show --json` snapshots of the same tables (the oracle the probe's
prediction must equal) and with what the wire did:

  mesh     4 ranks, rank 2's index 2 empty, `--profile ds4:index=2` (perftest -x 2): 6 links, the
           3 with rank 2 fail (ENODATA at rank 2, EINVAL at its peers for the zero GID), fixes
           named per host; --json valid against its schema; --svg coloured by the wire.
  ring     the same tables as a ring: 4 links, 2 fail.
  rail     3 ranks with 2 devices each, rank 1's second device without index 2: 6 links on 2
           rails, the 2 on rail 1 with rank 1 fail.
  jaccl    JACCL's documented 4-Mac device file (examples/fleet/jaccl) under `--profile jaccl`:
           the 3 links of m3-ultra-3 fail with EINVAL (22) at RTR, as Apple's driver answers.
  stack    `--stack nccl`, rank 1 alone launched with NCCL_IB_GID_INDEX=3 on a port whose
           index 3 is empty: its 3 links fail with ENODATA (61), cause stale_pin, and its fix
           names the variable; the other ranks' links connect.
  device   one rank's --device names a device it does not have: its links fail with that rank's
           problem named, the others connect; exit 1.
  usage    --help and --version (exit 0), a bad option and a single rank (exit 2, one line).

Exits 77 (skipped) without mpirun. Every wait is a hang guard, never a verdict.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASE = sys.argv[1]
CLI, PROBE_MPI, LIB = (os.path.abspath(a) for a in sys.argv[2:5])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUARD = 240
if not shutil.which("mpirun"):
    print("skipped: no mpirun (Debian openmpi-bin)")
    sys.exit(77)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def port(device, rank, entries_wanted, lid=0):
    entries = [{"index": 0, "gid": f"::ffff:10.{rank}.{device[-1]}.1", "type": "roce_v1", "netdev": "lo", "state": "valid"},
               {"index": 1, "gid": f"::ffff:10.{rank}.{device[-1]}.1", "type": "roce_v2", "netdev": "lo", "state": "valid"}]
    if entries_wanted:
        entries.append({"index": 2, "gid": f"::ffff:10.{rank}.{device[-1]}.2", "type": "roce_v2", "netdev": "lo",
                        "state": "valid"})
    return {"device": device, "port": 1, "state": "active", "link_layer": "ethernet", "gid_tbl_len": 5,
            "active_mtu": 1024, "lid": lid, "holes": "empty", "entries": entries}


def tables_doc(ports):
    return {"schema": "gidpolicy.tables", "version": 1, "ports": ports}


def write_tables(tmp, docs):
    paths = []
    for r, doc in enumerate(docs):
        p = os.path.join(tmp, f"rank{r}.json")
        with open(p, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        paths.append(p)
    return paths


def run_probe(tmp, tables, args, ranks=None, rank_env=None):
    """mpirun the probe, rank r on tables[r] with rank_env[r] (a dict) added to its environment."""
    ranks = ranks or len(tables)
    wrapper = os.path.join(tmp, "rank.sh")
    lines = ["#!/bin/sh", 'set -- $TABLES_BY_RANK', 'shift "${OMPI_COMM_WORLD_RANK:-0}"',
             'export GIDPOLICY_FAKE_TABLES="$1"', 'case "${OMPI_COMM_WORLD_RANK:-0}" in']
    for r, env in (rank_env or {}).items():
        lines.append(f"  {r}) export " + " ".join(f"{k}='{v}'" for k, v in env.items()) + " ;;")
    lines += ["esac", 'exec "$PROBE_MPI" ' + " ".join(f"'{a}'" for a in args)]
    with open(wrapper, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(wrapper, 0o755)
    env = dict(os.environ, LD_LIBRARY_PATH=LIB, TABLES_BY_RANK=" ".join(tables), PROBE_MPI=PROBE_MPI)
    for k in ("NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "MLX_JACCL_DEVICES", "JACCL_DEVICES", "JACCL_RING", "MLX_JACCL_RING"):
        env.pop(k, None)
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "--mca", "pml", "ob1",
           "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "-x", "LD_LIBRARY_PATH",
           "-x", "TABLES_BY_RANK", "-x", "PROBE_MPI", wrapper]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=GUARD, cwd=tmp)
    print(f"$ mpirun -np {ranks} gidpolicy-probe-mpi {' '.join(args)}  -> exit {p.returncode}")
    print(p.stdout[-6000:])
    if p.returncode not in (0, 1):
        print(p.stderr[-3000:])
    return p


def probe_json(tmp, tables, args, **kw):
    p = run_probe(tmp, tables, args + ["--json"], **kw)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        check(False, f"--json: not a document: {p.stdout[:300]!r} {p.stderr[-300:]!r}")
        return p, None
    check(list(doc)[:4] == ["schema", "version", "host", "source"], "--json: the envelope first")
    check(doc["schema"] == "gidpolicy.probe.mpi" and doc["version"] == 2, "--json: schema and version 2")
    try:
        import jsonschema
        with open(os.path.join(ROOT, "schemas", "gidpolicy.probe.mpi.schema.json"), encoding="utf-8") as f:
            errors = list(jsonschema.Draft202012Validator(json.load(f)).iter_errors(doc))
        check(not errors, f"--json: valid against its schema: {[e.message for e in errors][:3]}")
        with open(os.path.join(ROOT, "schemas", "gidpolicy.fleet.schema.json"), encoding="utf-8") as f:
            errors = list(jsonschema.Draft202012Validator(json.load(f)).iter_errors(doc["fleet"]))
        check(not errors, f"--json: its fleet document valid against gidpolicy.fleet: {[e.message for e in errors][:3]}")
    except ImportError:
        print("schema not checked: no python3-jsonschema")
    return p, doc


def wire_links(doc):
    """{(a_rank, b_rank, lane): connected on the wire}."""
    return {(l["a_rank"], l["b_rank"], l["lane"]): l["observed"]["connected"] for l in doc["link_results"]}


def fleet_links(tmp, tables, args):
    """`gidpolicy fleet` on show --json snapshots of the same tables: {(a, b, lane): connected}."""
    snaps = []
    for r, t in enumerate(tables):
        s = subprocess.run([CLI, "show", "--json", "--input", t], capture_output=True, text=True, timeout=GUARD)
        check(s.returncode == 0, f"show --json --input {t}: {s.stderr}")
        sp = os.path.join(tmp, f"snap{r}.json")
        with open(sp, "w", encoding="utf-8") as f:
            f.write(s.stdout)
        snaps.append(f"r{r}={sp}")
    f = subprocess.run([CLI, "fleet", "--json", "--all-links"] + args + snaps, capture_output=True, text=True,
                       timeout=GUARD)
    doc = json.loads(f.stdout)
    return {(int(l["a"][1:]), int(l["b"][1:]), l["lane"]): l["connected"] for l in doc["links_detail"]}


def agrees_with_fleet(tmp, tables, doc, fleet_args):
    fleet = fleet_links(tmp, tables, fleet_args)
    wire = wire_links(doc)
    check(fleet == wire, f"the wire agrees link for link with gidpolicy fleet: fleet {fleet}, wire {wire}")
    check(doc["contradicted"] == 0 and all(l["agrees"] for l in doc["link_results"]),
          "no link contradicts the prediction")
    return wire


def failed_directions(doc):
    out = []
    for l in doc["link_results"]:
        for q in l["observed"]["qps"]:
            out += [d for d in q["directions"] if not d["connected"]]
    return out


def case_mesh(tmp):
    tables = write_tables(tmp, [tables_doc([port("ds4_test0", r, r != 2)]) for r in range(4)])
    svg = os.path.join(tmp, "wire.svg")
    p = run_probe(tmp, tables, ["--profile", "ds4:index=2", "--attempt-deadline", "60", "--svg", svg])
    check(p.returncode == 1, f"exit {p.returncode}: a failed link is exit 1")
    out = p.stdout
    check("3 of 6 links connected on the wire (gidpolicy fleet predicted 3" in out, "the counts, beside the fleet's")
    check("every link did what was predicted" in out, "no contradiction")
    check(re.search(r"rtr_failed at \S+[#]2 ds4_test0 port 1: ENODATA \(61\); cause empty_slot", out) is not None,
          "ENODATA at rank 2, with its cause")
    check(re.search(r"rtr_failed at \S+[#]0 ds4_test0 port 1: EINVAL \(22\); cause dgid_zero", out) is not None,
          "EINVAL at rank 0 for the zero GID rank 2 advertised")
    check(re.search(r"#2 \(rank 2\): route from the index the advertised GID is at", out) is not None,
          "rank 2's fix")
    check(re.search(r"#2 \(rank 2\): advertise the GID it routes from", out) is not None,
          "the zero GID's fix is put on rank 2, which advertised it, not on its peers")
    check(not re.search(r"#[013] \(rank [013]\):", out), "no fix on the ranks that did nothing wrong")
    check("the prediction (gidpolicy fleet on the ranks' snapshots):" in out, "the fleet's report follows")
    with open(svg, encoding="utf-8") as f:
        picture = f.read()
    check(picture.startswith("<svg") and "gidpolicy-probe-mpi: mesh of 4 hosts" in picture, "--svg: the matrix")
    check("3 of 6 links connected on the wire (predicted: 3)" in picture, "--svg: the wire's count")
    check(picture.count("ENODATA (61)") >= 1 and "; predicted: rtr_error" in picture,
          "--svg: hover text puts the prediction beside the wire")
    _, doc = probe_json(tmp, tables, ["--profile", "ds4:index=2", "--attempt-deadline", "60"])
    if doc:
        check(doc["links"] == 6 and doc["connected"] == 3 and doc["failed"] == 3 and not doc["ok"], "--json: counts")
        check(doc["fleet"]["schema"] == "gidpolicy.fleet" and doc["fleet"]["connected"] == 3, "--json: the fleet inside")
        wire = agrees_with_fleet(tmp, tables, doc, ["--profile", "ds4:index=2"])
        check(all(ok == (2 not in (a, b)) for (a, b, _), ok in wire.items()) and len(wire) == 6,
              f"the links with rank 2 fail: {wire}")
        causes = {c["cause"]: c for c in doc["causes"]}
        check(set(causes) == {"empty_slot", "dgid_zero"} and causes["empty_slot"]["links"] == 3, f"causes {causes}")
        fixes = {f["rank"]: f["fixes"] for f in doc["fixes"]}
        check(list(fixes) == [2] and len(fixes[2]) == 2, f"fixes on rank 2 only: {fixes}")


def case_ring(tmp):
    tables = write_tables(tmp, [tables_doc([port("ds4_test0", r, r != 2)]) for r in range(4)])
    p, doc = probe_json(tmp, tables, ["--topology", "ring", "--profile", "ds4:index=2", "--attempt-deadline", "60"])
    check(p.returncode == 1, f"exit {p.returncode}")
    if doc:
        check(doc["topology"] == "ring" and doc["links"] == 4 and doc["connected"] == 2, "4 links, 2 connect")
        check(doc["rounds"] == 2, f"a ring of 4 in 2 rounds, found {doc['rounds']}")
        agrees_with_fleet(tmp, tables, doc, ["--topology", "ring", "--profile", "ds4:index=2"])


def case_rail(tmp):
    docs = [tables_doc([port("mlx5_0", r, True), port("mlx5_1", r, r != 1)]) for r in range(3)]
    tables = write_tables(tmp, docs)
    p, doc = probe_json(tmp, tables, ["--topology", "rail", "--profile", "ds4:index=2", "--attempt-deadline", "60"])
    check(p.returncode == 1, f"exit {p.returncode}")
    if doc:
        check(doc["links"] == 6 and doc["connected"] == 4, f"6 links on 2 rails, 4 connect: {doc['connected']}")
        wire = agrees_with_fleet(tmp, tables, doc, ["--topology", "rail", "--profile", "ds4:index=2"])
        failed = sorted(k for k, ok in wire.items() if not ok)
        check(failed == [(0, 1, 1), (1, 2, 1)], f"the rail-1 links of rank 1 fail: {failed}")
        devices = {(l["a_device"], l["b_device"], l["lane"]) for l in doc["link_results"]}
        check(devices == {("mlx5_0", "mlx5_0", 0), ("mlx5_1", "mlx5_1", 1)}, f"each rail on its own device: {devices}")


def case_jaccl(tmp):
    hosts = os.path.join(ROOT, "examples", "fleet", "jaccl", "hosts")
    tables = [os.path.join(hosts, f"m3-ultra-{i}.json") for i in range(1, 5)]
    devices = os.path.join(ROOT, "examples", "fleet", "jaccl", "devices.json")
    p, doc = probe_json(tmp, tables, ["--jaccl-devices", devices, "--profile", "jaccl", "--attempt-deadline", "60"])
    check(p.returncode == 1, f"exit {p.returncode}")
    if doc:
        check(doc["topology"] == "jaccl-mesh" and doc["links"] == 6 and doc["connected"] == 3, "3 of 6 connect")
        agrees_with_fleet(tmp, tables, doc, ["--jaccl-devices", devices, "--profile", "jaccl"])
        for d in failed_directions(doc):
            check(d["outcome"] == "rtr_failed" and d["errno"] == 22, f"EINVAL at RTR: {d['outcome']} {d['errno']}")
        failing = {l["a_rank"] for l in doc["link_results"] if not l["observed"]["connected"]} | \
                  {l["b_rank"] for l in doc["link_results"] if not l["observed"]["connected"]}
        check(2 in failing and all(2 in (l["a_rank"], l["b_rank"]) for l in doc["link_results"]
                                   if not l["observed"]["connected"]), "every failing link has m3-ultra-3 (rank 2)")


def case_stack(tmp):
    # Every rank holds index 3 only on rank 1... no: rank 1's index 3 is empty, the others' too,
    # but only rank 1 pins it. NCCL's own pick elsewhere is index 1 or 2 (RoCE v2, IPv4).
    tables = write_tables(tmp, [tables_doc([port("mlx5_0", r, True)]) for r in range(4)])
    p, doc = probe_json(tmp, tables, ["--stack", "nccl", "--attempt-deadline", "60"],
                        rank_env={1: {"NCCL_IB_GID_INDEX": "3"}})
    check(p.returncode == 1, f"exit {p.returncode}")
    if doc:
        check(doc["stack"] == "nccl" and doc["links"] == 6 and doc["connected"] == 3, "3 of 6 connect")
        check(doc["contradicted"] == 0, "the fleet, planning rank 1 with its own pin, predicted it")
        for l in doc["link_results"]:
            check(l["observed"]["connected"] == (1 not in (l["a_rank"], l["b_rank"])), f"link {l['index']}")
        stale = [d for d in failed_directions(doc) if d["cause"] and d["cause"]["id"] == "stale_pin"]
        check(stale and all(d["errno"] == 61 for d in stale), "ENODATA (61) with the stale pin as its cause")
        check(all("NCCL_IB_GID_INDEX=3" in d["cause"]["summary"] for d in stale), "the cause names the pin")
        fixes = {f["rank"]: f["fixes"] for f in doc["fixes"]}
        check(1 in fixes and any(x.startswith("unset NCCL_IB_GID_INDEX") for x in fixes[1]), f"rank 1's fix: {fixes}")


def case_device(tmp):
    tables = write_tables(tmp, [tables_doc([port("ds4_test0", r, True)]) for r in range(3)])
    p = run_probe(tmp, tables, ["--attempt-deadline", "60"], rank_env={})
    check(p.returncode == 0, f"every link connects without --device: exit {p.returncode}")
    wrapper_args = ["--attempt-deadline", "60", "--device", "ds4_test0"]
    p = run_probe(tmp, tables, wrapper_args)
    check(p.returncode == 0 and "3 of 3 links connected on the wire" in p.stdout, "--device on every rank")
    # Rank 2 alone has no device: the fake finds no table for it.
    p, doc = probe_json(tmp, tables, ["--attempt-deadline", "60"], rank_env={2: {"GIDPOLICY_FAKE_TABLES": "/nonexistent/x.json"}})
    check(p.returncode == 1, f"a rank without a device: exit {p.returncode}")
    if doc:
        check(doc["connected"] == 1, f"only the link between ranks 0 and 1 connects: {doc['connected']}")
        probs = [l["observed"]["problem"] for l in doc["link_results"] if l["observed"]["problem"]]
        check(len(probs) == 2 and all("rank 2" in x for x in probs), f"rank 2's problem named: {probs}")


def case_usage(tmp):
    env = dict(os.environ, LD_LIBRARY_PATH=LIB)
    for args, code, text in ((["--help"], 0, "--topology"), (["--version"], 0, "gidpolicy-probe-mpi "),
                             (["--topology", "star"], 2, "--topology"), (["--qp", "xx"], 2, "--qp"),
                             (["--no-env"], 2, "--stack")):
        p = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", PROBE_MPI] + args,
                           capture_output=True, text=True, env=env, timeout=GUARD)
        said = p.stdout + p.stderr
        check(p.returncode == code and text in said, f"{args}: exit {p.returncode} (expected {code}): {said[-300:]!r}")
        if code == 2:
            lines = [l for l in p.stderr.splitlines() if l.startswith("gidpolicy-probe-mpi:")]
            check(len(lines) == 1, f"{args}: one line, from rank 0 only: {lines}")
    tables = write_tables(tmp, [tables_doc([port("ds4_test0", 0, True)])])
    p = run_probe(tmp, tables, [], ranks=1)
    check(p.returncode == 2 and "at least two ranks" in p.stderr, f"one rank: exit {p.returncode}: {p.stderr[-300:]}")
    # Outputs that cannot be written, and a device file that is not one: exit 2, one line, nothing written.
    tables = write_tables(tmp, [tables_doc([port("ds4_test0", r, True)]) for r in range(2)])
    bad = os.path.join(tmp, "devices.json")
    with open(bad, "w", encoding="utf-8") as f:
        f.write('[[null, "x"]]')  # one rank's row for a job of two
    for args, text in ((["--output", os.path.join(tmp, "no", "such", "dir", "r.txt")], "does not exist"),
                       (["--svg", tmp], "directory"), (["--output", "/dev/full"], "No space left"),
                       (["--jaccl-devices", bad], bad), (["--jaccl-devices", "/dev/zero"], "not a regular file")):
        p = run_probe(tmp, tables, args)
        lines = [l for l in p.stderr.splitlines() if l.startswith("gidpolicy-probe-mpi:")]
        check(p.returncode == 2 and len(lines) == 1 and text in lines[0] and lines[0].count("output error") <= 1,
              f"{args}: exit {p.returncode}, {lines}")
    check(not os.path.exists(os.path.join(tmp, "no")), "nothing created for an output that cannot be written")


with tempfile.TemporaryDirectory() as tmp:
    globals()["case_" + CASE](tmp)
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
