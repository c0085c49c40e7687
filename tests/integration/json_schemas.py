#!/usr/bin/env python3
"""Validate every `--json` document of a representative set of CLI runs against schemas/.

Usage: json_schemas.py CLI SOURCE_DIR [FAKE_LIBIBVERBS_DIR]

Runs `gidpolicy` over examples/tables/* and tests/data/bundle/*.bundle (show, convert --to json,
select, check, check --stacks, check --pins, env --format json, doctor --input/--bundle, fleet),
validates each document with python3-jsonschema against schemas/<its "schema">.schema.json,
and checks that one port and several give the same shape (an envelope and arrays). With the
drop-in fake libibverbs' directory it also runs the live forms (show, doctor, and the first line
of watch) on a fake device. Exits 77 (skipped) without the jsonschema module.
"""
import glob
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import jsonschema
except ImportError:
    print("skipped: no python3-jsonschema (apt install python3-jsonschema; scripts/deps.sh)")
    sys.exit(77)

ENVELOPE = ["schema", "version", "host", "source"]
# The key holding a document's results, always an array (one port is an array of one).
RESULTS = {
    "gidpolicy.tables": "ports",
    "gidpolicy.check": "ports",
    "gidpolicy.select": "ports",
    "gidpolicy.check.stacks": "ports",
    "gidpolicy.check.pins": "pins",
    "gidpolicy.doctor": "findings",
    "gidpolicy.fleet": "sides",
}


def main():
    cli, root = sys.argv[1], sys.argv[2]
    schema_dir = os.path.join(root, "schemas")
    validators = {}
    for path in sorted(glob.glob(os.path.join(schema_dir, "*.schema.json"))):
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        # gidpolicy.check.schema.json describes the documents whose "schema" is gidpolicy.check.
        validators[os.path.basename(path)[: -len(".schema.json")]] = jsonschema.Draft202012Validator(schema)
    failures = []
    checked = 0

    def run(args, ok_codes=(0, 1)):
        p = subprocess.run([cli] + args, capture_output=True, text=True, cwd=root)
        if p.returncode == 2 and 2 in ok_codes and not p.stdout:
            return None  # refused with a message on stderr: no document to check
        if p.returncode not in ok_codes:
            failures.append(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[:300]}")
            return None
        try:
            return json.loads(p.stdout)
        except json.JSONDecodeError as e:
            failures.append(f"{' '.join(args)}: not JSON: {e}")
            return None

    def validate(args, doc):
        nonlocal checked
        if doc is None:
            return
        checked += 1
        if not isinstance(doc, dict) or list(doc)[:4] != ENVELOPE:
            failures.append(f"{' '.join(args)}: does not open with the envelope {ENVELOPE}")
            return
        v = validators.get(doc["schema"])
        if v is None:
            failures.append(f"{' '.join(args)}: no schema file for {doc['schema']}")
            return
        for err in v.iter_errors(doc):
            where = "/".join(str(p) for p in err.absolute_path)
            failures.append(f"{' '.join(args)}: {doc['schema']}: at /{where}: {err.message[:300]}")
        key = RESULTS.get(doc["schema"])
        if key and not isinstance(doc.get(key), list):
            failures.append(f"{' '.join(args)}: {key} is not an array")

    tables = sorted(glob.glob("examples/tables/*.txt", root_dir=root) +
                    glob.glob("examples/tables/*.json", root_dir=root))
    bundles = sorted(glob.glob("tests/data/bundle/*.bundle", root_dir=root))
    sources = [["--input", t] for t in tables] + [["--bundle", b] for b in bundles]
    for src in sources:
        for args in (["show", "--json"], ["convert", "--to", "json"], ["select", "--profile", "auto", "--json"],
                     ["check", "--json"], ["check", "--stacks", "--json"], ["check", "--pins", "--json"],
                     ["env", "--for", "nccl", "--format", "json"]):
            full = args + src
            # A bundle of a host without RDMA ports has no tables to show: exit 2, said on stderr.
            doc = run(full, ok_codes=(0, 1, 2) if src[0] == "--bundle" else (0, 1))
            validate(full, doc)
        validate(["doctor", "--json"] + src, run(["doctor", "--json"] + src))
    # Pinned variables: check --pins reads them from an env file.
    with tempfile.TemporaryDirectory() as tmp:
        env_file = os.path.join(tmp, "pins.env")
        with open(env_file, "w", encoding="utf-8") as f:
            f.write("NCCL_IB_GID_INDEX=3\nUCX_IB_GID_INDEX=0\n")
        args = ["check", "--pins", "--env-file", env_file, "--json", "--input", "examples/tables/nccl-1573-pod.show_gids.txt"]
        doc = run(args)
        validate(args, doc)
        if doc is not None and not doc["pins"]:
            failures.append(f"{' '.join(args)}: no pin row")
        # fleet: over `show --json` snapshots of this version and the previous one.
        snaps = []
        for i, t in enumerate(["examples/tables/nccl-1573-pod.show_gids.txt", "examples/tables/ibm-pr4-cx6.show_gids.txt"]):
            doc = run(["show", "--json", "--input", t])
            path = os.path.join(tmp, f"h{i}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            snaps.append(f"h{i}={path}")
        validate(["fleet", "--json"] + snaps, run(["fleet", "--json"] + snaps))

    # Live devices, on the drop-in fake libibverbs: the host is this machine's name.
    if len(sys.argv) > 3:
        live_env = dict(os.environ, LD_LIBRARY_PATH=sys.argv[3],
                        GIDPOLICY_FAKE_TABLES=os.path.join(root, "tests/data/watch/1-start.json"))
        for args in (["show", "--json"], ["check", "--json"], ["doctor", "--json", "--deadline", "60"]):
            p = subprocess.run([cli] + args, capture_output=True, text=True, cwd=root, env=live_env, timeout=120)
            try:
                doc = json.loads(p.stdout)
            except json.JSONDecodeError:
                failures.append(f"live {' '.join(args)}: exit {p.returncode}, not JSON: {p.stderr.strip()[:300]}")
                continue
            validate(["live"] + args, doc)
            if not isinstance(doc.get("host"), str):
                failures.append(f"live {' '.join(args)}: host is {doc.get('host')!r}, not this machine's name")
        # watch: its first line (the envelope), then SIGINT as a user would.
        w = subprocess.Popen([cli, "watch", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=root, env=live_env)
        first = ""
        deadline = time.monotonic() + 60
        while not first and time.monotonic() < deadline and w.poll() is None:
            ready, _, _ = select.select([w.stdout], [], [], 0.5)
            if ready:
                first = w.stdout.readline()
        w.send_signal(signal.SIGINT)
        try:
            w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            w.communicate()
        try:
            validate(["watch", "--json"], json.loads(first))
        except json.JSONDecodeError:
            failures.append(f"watch --json: first line is not JSON: {first[:300]!r}")
        # watch --stacks: a change line too. The table (a copy the test owns) is renamed over once the
        # first line is out; the change line then carries the re-plan and each stack's move.
        watch_dir = tempfile.TemporaryDirectory()
        table = os.path.join(watch_dir.name, "watched.json")
        shutil.copyfile(os.path.join(root, "tests/data/watch/roce-1-start.json"), table)
        w = subprocess.Popen([cli, "watch", "--json", "--stacks", "--no-env"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=root,
                             env=dict(live_env, GIDPOLICY_FAKE_TABLES=table))
        lines = []
        deadline = time.monotonic() + 60
        while len(lines) < 2 and time.monotonic() < deadline and w.poll() is None:
            ready, _, _ = select.select([w.stdout], [], [], 0.5)
            if ready:
                lines.append(w.stdout.readline())
                if len(lines) == 1:
                    shutil.copyfile(os.path.join(root, "tests/data/watch/roce-2-moved.json"), table + ".tmp")
                    os.replace(table + ".tmp", table)
        w.send_signal(signal.SIGINT)
        try:
            w.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            w.kill()
            w.communicate()
        if len(lines) < 2:
            failures.append(f"watch --json --stacks: {len(lines)} line(s) before the deadline, not 2")
        for line in lines:
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                failures.append(f"watch --json --stacks: a line is not JSON: {line[:300]!r}")
                continue
            validate(["watch", "--json", "--stacks"], doc)
            if doc.get("event") == "change" and not doc.get("stacks"):
                failures.append("watch --json --stacks: the change line has no stacks")
        watch_dir.cleanup()

    # One port and two give the same shape: the same keys, results in arrays.
    two = "examples/tables/nccl-1573-pod.show_gids.txt"
    for args in (["show", "--json"], ["select", "--profile", "auto", "--json"], ["check", "--json"],
                 ["check", "--stacks", "--json"]):
        one_doc = run(args + ["--input", two, "--device", "mlx5_0"])
        two_doc = run(args + ["--input", two])
        if one_doc is None or two_doc is None:
            continue
        if list(one_doc) != list(two_doc):
            failures.append(f"{' '.join(args)}: one port's keys {list(one_doc)} differ from two ports' {list(two_doc)}")
        elif len(one_doc["ports"]) != 1 or len(two_doc["ports"]) != 2:
            failures.append(f"{' '.join(args)}: expected 1 and 2 ports, found {len(one_doc['ports'])} and "
                            f"{len(two_doc['ports'])}")
        elif list(one_doc["ports"][0]) != list(two_doc["ports"][0]):
            failures.append(f"{' '.join(args)}: a port's keys differ between one port and two")

    for f in failures:
        print("FAIL:", f)
    print(f"{checked} documents validated against {len(validators)} schemas, {len(failures)} failures")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
