#!/usr/bin/env python3
"""gidpolicy-probe-mpi under mpirun on the drop-in fake libibverbs, one table per rank.

Usage: probe_mpi.py CLI PROBE_MPI FAKE_LIB_DIR

Four ranks, each its own table (written here): ranks 0, 1 and 3 hold a RoCE v2 GID at index 2,
rank 2's index 2 is empty. Under `--profile ds4:index=2` (route from index 2, as perftest -x 2)
rank 0's report must list the 6 links of the mesh, the 3 with rank 2 failing with their causes
(ENODATA at rank 2, the zero GID it advertised at its peer), and agree link for link with
`gidpolicy fleet` on `show --json` snapshots of the same tables. Exits 77 (skipped) without
mpirun. Every wait is a hang guard, never a verdict.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

CLI, PROBE_MPI, LIB = sys.argv[1], sys.argv[2], sys.argv[3]
GUARD = 240
if not shutil.which("mpirun"):
    print("skipped: no mpirun (Debian openmpi-bin)")
    sys.exit(77)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def table(rank, index2):
    entries = [{"index": 0, "gid": f"::ffff:10.0.{rank}.1", "type": "roce_v1", "netdev": "lo", "state": "valid"},
               {"index": 1, "gid": f"::ffff:10.0.{rank}.1", "type": "roce_v2", "netdev": "lo", "state": "valid"}]
    if index2:
        entries.append({"index": 2, "gid": f"::ffff:10.0.{rank}.2", "type": "roce_v2", "netdev": "lo", "state": "valid"})
    return {"schema": "gidpolicy.tables", "version": 1, "ports": [
        {"device": "ds4_test0", "port": 1, "state": "active", "link_layer": "ethernet", "gid_tbl_len": 5,
         "active_mtu": 1024, "lid": 0, "holes": "empty", "entries": entries}]}


with tempfile.TemporaryDirectory() as tmp:
    paths = []
    for r in range(4):
        p = os.path.join(tmp, f"rank{r}.json")
        with open(p, "w", encoding="utf-8") as f:
            json.dump(table(r, r != 2), f)
        paths.append(p)
    # Each rank's table: the fake reads GIDPOLICY_FAKE_TABLES, set here from the rank mpirun gives.
    wrapper = os.path.join(tmp, "rank.sh")
    with open(wrapper, "w", encoding="utf-8") as f:
        f.write('#!/bin/sh\nset -- $TABLES_BY_RANK\nshift "${OMPI_COMM_WORLD_RANK:-0}"\n'
                'GIDPOLICY_FAKE_TABLES=$1 exec "$PROBE_MPI" --profile ds4:index=2 --attempt-deadline 60\n')
    os.chmod(wrapper, 0o755)
    env = dict(os.environ, LD_LIBRARY_PATH=LIB, TABLES_BY_RANK=" ".join(paths), PROBE_MPI=PROBE_MPI)
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", "--mca", "pml", "ob1", "--mca", "btl",
           "self,tcp", "--mca", "btl_tcp_if_include", "lo", "-x", "LD_LIBRARY_PATH", "-x", "TABLES_BY_RANK",
           "-x", "PROBE_MPI", wrapper]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=GUARD)
    print(p.stdout)
    links = {}
    for m in re.finditer(r"^rank (\d+) <-> rank (\d+): (connected|FAILED)", p.stdout, re.M):
        links[(int(m.group(1)), int(m.group(2)))] = m.group(3) == "connected"
    check(p.returncode != 0, f"mpirun exit {p.returncode}: a failed link is a failure")
    check(len(links) == 6, f"6 links reported, found {len(links)}: {p.stderr[-500:]}")
    for (a, b), ok in links.items():
        check(ok == (2 not in (a, b)), f"rank {a} <-> rank {b}: connected {ok}")
    check("rtr_failed errno 61; cause empty_slot; predicted error" in p.stdout, "ENODATA at rank 2, named")
    check("rtr_failed errno 22; cause dgid_zero; predicted error" in p.stdout, "EINVAL at its peers, named")
    check("CONTRADICTS" not in p.stdout, "no prediction contradicted")
    check("3 of 6 links connected" in p.stdout, "the count")

    # --json: the same links in the document of schemas/gidpolicy.probe.mpi.schema.json.
    jwrapper = os.path.join(tmp, "rank_json.sh")
    with open(wrapper, encoding="utf-8") as f, open(jwrapper, "w", encoding="utf-8") as g:
        g.write(f.read().replace("--attempt-deadline 60", "--attempt-deadline 60 --json"))
    os.chmod(jwrapper, 0o755)
    pj = subprocess.run(cmd[:-1] + [jwrapper], capture_output=True, text=True, env=env, timeout=GUARD)
    try:
        jdoc = json.loads(pj.stdout)
    except json.JSONDecodeError:
        jdoc = None
    check(jdoc is not None, f"--json: a document: {pj.stdout[:300]!r}")
    if jdoc is not None:
        check(list(jdoc)[:4] == ["schema", "version", "host", "source"], "--json: the envelope first")
        check({(l["a"], l["b"]): l["connected"] for l in jdoc["links"]} == links, "--json: the same links")
        check(jdoc["connected"] == 3 and jdoc["failed"] == 3, "--json: the counts")
        try:
            import jsonschema
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            with open(os.path.join(root, "schemas", "gidpolicy.probe.mpi.schema.json"), encoding="utf-8") as f:
                errors = list(jsonschema.Draft202012Validator(json.load(f)).iter_errors(jdoc))
            check(not errors, f"--json: valid against its schema: {[e.message for e in errors][:3]}")
        except ImportError:
            print("schema not checked: no python3-jsonschema")

    # The same tables through `gidpolicy fleet` (one `show --json` snapshot per host).
    snaps = []
    for r, t in enumerate(paths):
        s = subprocess.run([CLI, "show", "--json", "--input", t], capture_output=True, text=True, timeout=GUARD)
        sp = os.path.join(tmp, f"snap{r}.json")
        with open(sp, "w", encoding="utf-8") as f:
            f.write(s.stdout)
        snaps.append(f"r{r}={sp}")
    f = subprocess.run([CLI, "fleet", "--json", "--all-links", "--profile", "ds4:index=2"] + snaps,
                       capture_output=True, text=True, timeout=GUARD)
    doc = json.loads(f.stdout)
    fleet = {(int(l["a"][1:]), int(l["b"][1:])): l["connected"] for l in doc["links_detail"]}
    check(fleet == links, f"fleet agrees link for link: fleet {fleet}, probe {links}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
