"""gidpolicy.probe reads `gidpolicy probe --json` and `gidpolicy-probe-mpi --json` into objects.

The pair documents are made here, live: `gidpolicy probe --listen/--connect` between two
processes on the drop-in fake libibverbs, each with its own table (GIDPOLICY_FAKE_TABLES), as
tests/integration/probe_pair.py runs them. python/tests/CMakeLists.txt passes the CLI
(GIDPOLICY_CLI) and the fake's directory (GIDPOLICY_FAKE_LIBIBVERBS); without them those tests
skip, saying which is missing.

The MPI document of version 2 is written by hand (python/tests/data/probe-mpi-v2.json, valid
against schemas/gidpolicy.probe.mpi.schema.json): its `fleet` is `gidpolicy fleet --json
--all-links --jaccl-devices examples/fleet/jaccl/devices.json --profile jaccl
examples/fleet/jaccl/hosts` as the CLI printed it, its links those of that analysis, and each
observed direction a direction object `gidpolicy probe --json` printed on the fake (a connected
one, and the EINVAL of `--profile jaccl` on macmini-mapped-at-2). One more is made live, where
gidpolicy-probe-mpi is built (GIDPOLICY_PROBE_MPI) and mpirun is installed: the same JACCL
cluster under mpirun, one table per rank.
"""

import copy
import dataclasses
import json
import os
import pickle
import shutil
import subprocess
import typing
from pathlib import Path

import pytest

import gidpolicy
from gidpolicy import probe

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
ROOT = HERE.parent.parent
TABLES = Path(os.environ.get("GIDPOLICY_EXAMPLE_TABLES", ROOT / "examples" / "tables"))
CLI = os.environ.get("GIDPOLICY_CLI")
FAKE = os.environ.get("GIDPOLICY_FAKE_LIBIBVERBS")
GUARD = 120  # seconds: a hang guard, never a verdict
# Generous deadlines, as probe_pair.py's: a loaded machine must not turn a working link into a failure.
SLOW_OK = ["--deadline", "120", "--attempt-deadline", "60"]


def _why_not_live():
    if not CLI:
        return "GIDPOLICY_CLI (the gidpolicy program) is not set: the CLI is not built"
    if not FAKE or not (Path(FAKE) / "libibverbs.so.1").exists():
        return "GIDPOLICY_FAKE_LIBIBVERBS (the fake libibverbs' directory) is not set or holds no libibverbs.so.1"
    return None


live = pytest.mark.skipif(_why_not_live() is not None, reason=str(_why_not_live()))


def _env(table):
    env = dict(os.environ, LD_LIBRARY_PATH=str(FAKE), GIDPOLICY_FAKE_TABLES=str(TABLES / table))
    for k in list(env):  # the stacks' own settings would change the pick
        if k.startswith(("NCCL_", "UCX_", "MC_", "FI_", "NVSHMEM_")):
            del env[k]
    return env


def run_pair(table, args):
    """Both sides' stdout (their --json documents) and exit codes."""
    common = ["--json"] + SLOW_OK + args
    listener = subprocess.Popen([CLI, "probe", "--listen", "127.0.0.1:0"] + common, env=_env(table),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port, said = None, []
    for line in listener.stderr:  # the listener says its port before it waits for the peer
        said.append(line)
        if "listening on port" in line:
            port = int(line.split()[-1])
            break
    if port is None:
        listener.kill()
        listener.communicate()
        pytest.fail("the listener never listened: " + "".join(said))
    connector = subprocess.Popen([CLI, "probe", "--connect", f"127.0.0.1:{port}"] + common, env=_env(table),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    for p in (connector, listener):
        try:
            stdout, stderr = p.communicate(timeout=GUARD)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            pytest.fail(f"hang guard: {p.args} still running after {GUARD} s")
        out.append((stdout, p.returncode, stderr))
    return {"connector": out[0], "listener": out[1]}


def check_against_document(report, doc):
    """Every field the report has is the document's, direction by direction."""
    assert (report.schema, report.version, report.host, report.source) == (
        doc["schema"], doc["version"], doc["host"], doc["source"])
    assert report.role == doc["role"] and report.connected is doc["connected"]
    assert report.local.device == doc["local"]["device"] and report.local.sgid_index == doc["local"]["sgid_index"]
    assert report.local.gid == doc["local"]["gid"] and report.local.mtu == doc["local"]["mtu"]
    assert [q.kind for q in report.qps] == [q["kind"] for q in doc["qps"]]
    for q, dq in zip(report.qps, doc["qps"]):
        assert len(q.directions) == 2
        for d, dd in zip(q.directions, dq["directions"]):
            assert d.kind == q.kind
            assert (d.from_, d.to, d.outcome, d.connected, d.side) == (
                dd["from"], dd["to"], dd["outcome"], dd["connected"], dd["side"])
            assert (d.errno, d.errno_name, d.wc_status, d.detail) == (
                dd["errno"], dd["errno_name"], dd["wc_status"], dd["detail"])
            assert d.rtt_us == dd["rtt_us"] and d.contradicts_prediction is dd["contradicts_prediction"]
            p = dd["predicted"]
            assert (d.prediction.outcome, d.prediction.errno, d.prediction.side, d.prediction.rule,
                    d.prediction.reason) == (p["outcome"], p["errno"], p["side"], p["rule"], p["reason"])
            if dd["cause"] is None:
                assert d.cause is None
            else:
                assert (d.cause.id, d.cause.summary, d.cause.remedy) == (
                    dd["cause"]["id"], dd["cause"]["summary"], dd["cause"].get("remedy"))


@pytest.fixture(scope="module")
def connected_pair():
    if _why_not_live():
        pytest.skip(_why_not_live())
    return run_pair("ds4-linux-unit.json", ["--qp", "both"])


@pytest.fixture(scope="module")
def einval_pair():
    if _why_not_live():
        pytest.skip(_why_not_live())
    return run_pair("macmini-mapped-at-2.json", ["--profile", "jaccl", "--qp", "uc"])


@live
def test_a_connected_pair_reads_as_connected(connected_pair):
    roles = set()
    for role, (stdout, rc, stderr) in connected_pair.items():
        assert rc == 0, stderr
        report = probe.load(stdout)
        assert isinstance(report, probe.PairReport)
        check_against_document(report, json.loads(stdout))
        assert report.role == role and report.connected and report.problem is None
        assert report.peer is not None and report.peer.role != role and report.peer.address
        assert [q.kind for q in report.qps] == ["rc", "uc"] and report.qp("rc").connected
        assert report.failed_directions() == () and report.contradictions() == ()
        for q in report.qps:
            other = report.peer.role  # this side's direction out first, then the one back in
            assert [(d.from_, d.to) for d in q.directions] == [(role, other), (other, role)]
            for d in q.directions:
                assert d.outcome == "connected" and d.errno is None and d.cause is None
                assert d.rtt_us is not None and d.rtt_us >= 0 and d.prediction.outcome == "ok"
        roles.add(role)
        # bytes and the parsed dict read the same
        assert probe.load(stdout.encode()) == report == probe.load(json.loads(stdout)) == probe.from_json(stdout)
    assert roles == {"listener", "connector"}


@live
def test_a_failing_pair_names_the_errno_its_cause_and_the_prediction(einval_pair):
    for role, (stdout, rc, stderr) in einval_pair.items():
        assert rc == 1, stderr
        report = probe.load(stdout)
        check_against_document(report, json.loads(stdout))
        assert not report.connected and report.qp("rc") is None and report.qp("uc") is not None
        failed = report.failed_directions()
        assert len(failed) == 2
        for d in failed:
            assert (d.kind, d.outcome, d.errno, d.errno_name) == ("uc", "rtr_failed", 22, "EINVAL")
            assert d.side in ("listener", "connector") and d.cause is not None and d.cause.id and d.cause.summary
            assert (d.prediction.outcome, d.prediction.errno) == ("error", 22) and d.prediction.reason
            assert not d.contradicts_prediction and "EINVAL (22)" in str(d)
        assert report.contradictions() == ()


def test_the_recorded_pair_document_reads():
    # The document the README's example reads: a live run's, kept (see the module docstring).
    report = probe.load_file(str(DATA / "probe-pair-jaccl-einval.json"))
    assert isinstance(report, probe.PairReport) and not report.connected
    assert [d.errno for d in report.failed_directions()] == [22, 22]
    check_against_document(report, json.loads((DATA / "probe-pair-jaccl-einval.json").read_text()))


# ---------------------------------------------------------------------------------------------
# MPI, version 2


@pytest.fixture
def mpi_doc():
    return json.loads((DATA / "probe-mpi-v2.json").read_text())


@pytest.mark.parametrize("name,schema", [("probe-mpi-v2.json", "gidpolicy.probe.mpi.schema.json"),
                                         ("probe-pair-jaccl-einval.json", "gidpolicy.probe.schema.json")])
def test_the_fixtures_are_valid_documents(name, schema):
    # The hand-made MPI document stays what gidpolicy-probe-mpi prints, as its schema says.
    jsonschema = pytest.importorskip("jsonschema", reason="no jsonschema (Debian python3-jsonschema)")
    validator = jsonschema.Draft202012Validator(json.loads((ROOT / "schemas" / schema).read_text()))
    assert [e.message for e in validator.iter_errors(json.loads((DATA / name).read_text()))] == []


def test_a_cluster_report_reads_every_link(mpi_doc):
    report = probe.load(json.dumps(mpi_doc))
    assert isinstance(report, probe.ClusterReport)
    assert (report.schema, report.version, report.topology, report.profile, report.stack) == (
        "gidpolicy.probe.mpi", 2, mpi_doc["topology"], mpi_doc["profile"], mpi_doc["stack"])
    assert (report.ranks, report.rounds, report.links, report.connected, report.failed, report.contradicted,
            report.ok) == tuple(mpi_doc[k] for k in ("ranks", "rounds", "links", "connected", "failed",
                                                     "contradicted", "ok"))
    assert len(report.link_results) == report.links
    assert report.fleet == mpi_doc["fleet"] and report.fleet["schema"] == "gidpolicy.fleet"
    for link, raw in zip(report.link_results, mpi_doc["link_results"]):
        assert (link.index, link.a, link.a_rank, link.a_device, link.a_port, link.b, link.b_rank, link.b_device,
                link.b_port, link.lane) == tuple(raw[k] for k in (
                    "index", "a", "a_rank", "a_device", "a_port", "b", "b_rank", "b_device", "b_port", "lane"))
        assert link.predicted.connected is raw["predicted"]["connected"]
        assert link.predicted.a_to_b.outcome == raw["predicted"]["a_to_b"]["outcome"]
        assert link.predicted.b_to_a.cause == raw["predicted"]["b_to_a"]["cause"]
        assert link.connected is raw["observed"]["connected"] and link.agrees is raw["agrees"]
        assert link.observed.problem == raw["observed"]["problem"] and link.observed.tried is True
        assert [q.kind for q in link.observed.qps] == [q["kind"] for q in raw["observed"]["qps"]]
    assert [(c.cause, c.directions, c.links) for c in report.causes] == [
        (c["cause"], c["directions"], c["links"]) for c in mpi_doc["causes"]]
    assert [(h.host, h.rank, list(h.fixes)) for h in report.fixes] == [
        (h["host"], h["rank"], h["fixes"]) for h in mpi_doc["fixes"]]


def test_a_cluster_report_says_which_links_failed_and_why(mpi_doc):
    report = probe.load(mpi_doc)
    failed = report.failed_links()
    assert not report.ok and report.failed == len(failed) > 0
    assert report.connected == sum(1 for l in report.link_results if l.connected)
    for link in failed:
        assert not link.predicted.connected and link.agrees  # predicted, and the wire agreed
        directions = link.failed_directions()
        assert directions and all(d.errno == 22 and d.errno_name == "EINVAL" for d in directions)
        assert all(d.cause is not None for d in directions)
    assert len(report.failed_directions()) == sum(len(l.failed_directions()) for l in failed)
    assert report.contradictions() == () and report.disagreements() == ()
    for link in failed:  # the prediction's cause is the fleet document's, by id
        fleet_cause = report.fleet_cause(link.predicted.a_to_b.cause)
        assert fleet_cause is not None and fleet_cause["errno"] == 22 and fleet_cause["device"] == link.a_device
        assert link.predicted.a_to_b.outcome == "rtr_error" and link.predicted.a_to_b.by in (link.a, link.b)
    assert report.fleet_cause(None) is None and report.fleet_cause(999) is None
    first = failed[0]
    assert report.link(first.b_rank, first.a_rank) is first
    assert report.link(0, 99) is None
    rank_with_fixes = report.fixes[0].rank
    assert report.fixes_for(rank_with_fixes) == report.fixes[0].fixes and report.fixes_for(99) == ()


def test_a_contradicted_link_is_found(mpi_doc):
    # The wire connected where the tables said EINVAL: the direction says so, and the link disagrees.
    link = next(l for l in mpi_doc["link_results"] if not l["observed"]["connected"])
    for q in link["observed"]["qps"]:
        for d in q["directions"]:
            d["contradicts_prediction"] = True
    link["agrees"] = False
    mpi_doc["contradicted"] = 1
    report = probe.load(mpi_doc)
    assert report.contradicted == 1
    assert [l.index for l in report.disagreements()] == [link["index"]]
    assert len(report.contradictions()) == sum(len(q["directions"]) for q in link["observed"]["qps"])


def test_unknown_keys_are_ignored(mpi_doc):
    want = probe.load(mpi_doc)
    mpi_doc["added_later"] = {"anything": [1, 2]}
    mpi_doc["link_results"][0]["added_later"] = 1
    mpi_doc["link_results"][0]["predicted"]["a_to_b"]["added_later"] = None
    mpi_doc["link_results"][0]["observed"]["qps"][0]["directions"][0]["added_later"] = "x"
    mpi_doc["causes"][0]["added_later"] = True
    assert probe.load(mpi_doc) == want


def test_a_document_without_tried_reads_it_as_none(mpi_doc):
    # The contract this reader was first written against had no "tried": it is optional here.
    del mpi_doc["link_results"][0]["observed"]["tried"]
    assert probe.load(mpi_doc).link_results[0].observed.tried is None


def test_a_link_without_a_port_reads_as_none(mpi_doc):
    mpi_doc["link_results"][0]["b_device"] = None
    mpi_doc["link_results"][0]["b_port"] = None
    link = probe.load(mpi_doc).link_results[0]
    assert link.b_device is None and link.b_port is None


def test_a_link_ended_before_its_queue_pairs_says_why(mpi_doc):
    mpi_doc["link_results"][1]["observed"].update(tried=False, problem="rank 2: no port to probe", qps=[])
    link = probe.load(mpi_doc).link_results[1]
    assert not link.connected and link.observed.problem == "rank 2: no port to probe" and link.observed.tried is False
    assert link.observed.qps == () and link.failed_directions() == ()


def test_the_report_owns_its_fleet(mpi_doc):
    report = probe.load(mpi_doc)
    mpi_doc["fleet"]["schema"] = "changed afterwards"
    assert report.fleet["schema"] == "gidpolicy.fleet"


PROBE_MPI = os.environ.get("GIDPOLICY_PROBE_MPI")


def _why_not_mpi():
    if _why_not_live():
        return _why_not_live()
    if not PROBE_MPI:
        return "GIDPOLICY_PROBE_MPI (gidpolicy-probe-mpi) is not set: it is not built (it needs MPI)"
    if not shutil.which("mpirun"):
        return "no mpirun (Debian openmpi-bin)"
    return None


@pytest.fixture(scope="module")
def jaccl_cluster(tmp_path_factory):
    """gidpolicy-probe-mpi --json under mpirun: JACCL's documented 4-Mac device file, one table
    per rank on the fake (as tests/integration/probe_mpi.py's jaccl case), m3-ultra-3's 3 links
    failing with EINVAL at RTR."""
    if _why_not_mpi():
        pytest.skip(_why_not_mpi())
    tmp = tmp_path_factory.mktemp("mpi")
    fleet_dir = ROOT / "examples" / "fleet" / "jaccl"
    tables = [str(fleet_dir / "hosts" / f"m3-ultra-{i}.json") for i in range(1, 5)]
    args = ["--jaccl-devices", str(fleet_dir / "devices.json"), "--profile", "jaccl", "--attempt-deadline", "60",
            "--json"]
    wrapper = tmp / "rank.sh"  # each rank's table by its rank
    wrapper.write_text('#!/bin/sh\nset -- $TABLES_BY_RANK\nshift "${OMPI_COMM_WORLD_RANK:-0}"\n'
                       'export GIDPOLICY_FAKE_TABLES="$1"\nexec "$PROBE_MPI" ' + " ".join(f"'{a}'" for a in args) + "\n")
    wrapper.chmod(0o755)
    env = dict(os.environ, LD_LIBRARY_PATH=str(FAKE), TABLES_BY_RANK=" ".join(tables), PROBE_MPI=str(PROBE_MPI))
    for k in list(env):  # the stacks' and JACCL's own settings would change the plan
        if k.startswith(("NCCL_", "UCX_", "MC_", "FI_", "NVSHMEM_", "JACCL_", "MLX_")):
            del env[k]
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", "--mca", "pml", "ob1",
           "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "-x", "LD_LIBRARY_PATH",
           "-x", "TABLES_BY_RANK", "-x", "PROBE_MPI", str(wrapper)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=4 * GUARD, cwd=str(tmp))
    return p.stdout, p.returncode, p.stderr


def test_a_live_cluster_report_reads_every_link(jaccl_cluster):
    stdout, rc, stderr = jaccl_cluster
    assert rc == 1, stderr[-2000:]
    report = probe.load(stdout)
    raw = json.loads(stdout)
    assert isinstance(report, probe.ClusterReport) and report.version == 2
    assert (report.topology, report.profile, report.ranks, report.links, report.connected, report.failed) == (
        "jaccl-mesh", "jaccl", 4, 6, 3, 3)
    assert not report.ok and report.contradicted == 0 and report.disagreements() == ()
    assert report.fleet == raw["fleet"] and report.fleet["schema"] == "gidpolicy.fleet"
    assert len(report.link_results) == 6
    for link, rl in zip(report.link_results, raw["link_results"]):
        assert (link.a_rank, link.b_rank, link.a_device, link.b_device) == (
            rl["a_rank"], rl["b_rank"], rl["a_device"], rl["b_device"])
        assert link.observed.tried == rl["observed"].get("tried")
        for q, rq in zip(link.observed.qps, rl["observed"]["qps"]):
            assert [(d.from_, d.to, d.outcome, d.errno, d.errno_name, d.rtt_us) for d in q.directions] == [
                (d["from"], d["to"], d["outcome"], d["errno"], d["errno_name"], d["rtt_us"]) for d in rq["directions"]]
    failed = report.failed_links()
    assert len(failed) == 3 and all(2 in (l.a_rank, l.b_rank) for l in failed)  # m3-ultra-3 is rank 2
    for link in failed:
        assert not link.predicted.connected and link.agrees
        assert report.fleet_cause(link.predicted.a_to_b.cause or link.predicted.b_to_a.cause) is not None
        for d in link.failed_directions():
            assert (d.outcome, d.errno, d.errno_name) == ("rtr_failed", 22, "EINVAL") and d.cause is not None
    assert report.contradictions() == ()
    assert sum(c.directions for c in report.causes) == len(report.failed_directions())


def test_mpi_version_1_is_refused_naming_the_version():
    doc = {"schema": "gidpolicy.probe.mpi", "version": 1, "host": "h", "source": None, "topology": "mesh",
           "profile": "auto", "ranks": 2, "rounds": 1, "links": [], "connected": 0, "failed": 0, "causes": []}
    with pytest.raises(ValueError, match=r"^version: gidpolicy.probe.mpi version 1 is not known .*reads version 2"):
        probe.load(doc)


# ---------------------------------------------------------------------------------------------
# Values


def test_reports_are_frozen_hashable_and_pickle(mpi_doc):
    for report in (probe.load(mpi_doc), probe.load_file(str(DATA / "probe-pair-jaccl-einval.json"))):
        with pytest.raises(dataclasses.FrozenInstanceError):
            report.version = 3
        assert hash(report) == hash(copy.deepcopy(report))
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            assert pickle.loads(pickle.dumps(report, protocol)) == report


def test_the_module_is_typed():
    # py.typed covers the package; probe.py carries its types inline (no stub to drift from it),
    # so every public class field and function must be annotated, and the annotations must resolve.
    assert (Path(probe.__file__).parent / "py.typed").is_file()
    assert not (Path(probe.__file__).parent / "probe.pyi").exists()
    assert gidpolicy.probe is probe
    for name in probe.__all__:
        obj = getattr(probe, name)
        if dataclasses.is_dataclass(obj):
            hints = typing.get_type_hints(obj)
            assert {f.name for f in dataclasses.fields(obj)} <= set(hints), name
            for attr, member in vars(obj).items():
                if callable(member) and not attr.startswith("_"):
                    assert "return" in typing.get_type_hints(member), f"{name}.{attr}"
        elif callable(obj):
            hints = typing.get_type_hints(obj)
            assert "return" in hints, name
            params = [p for p in __import__("inspect").signature(obj).parameters]
            assert set(params) <= set(hints), name


# ---------------------------------------------------------------------------------------------
# Hostile input: every refusal is a ValueError naming the JSON path of the field


@pytest.fixture
def pair_doc():
    return json.loads((DATA / "probe-pair-jaccl-einval.json").read_text())


@pytest.mark.parametrize("edit,message", [
    (lambda d: d["qps"][0]["directions"][1].__setitem__("errno", "22"),
     "qps[0].directions[1].errno: expected an integer or null, found a string"),
    (lambda d: d["qps"][0]["directions"][1].__setitem__("errno", True),
     "qps[0].directions[1].errno: expected an integer or null, found a boolean"),
    (lambda d: d["qps"][0]["directions"][0].__setitem__("errno", 22.0),
     "qps[0].directions[0].errno: expected an integer or null, found a number"),
    (lambda d: d["qps"][0]["directions"][0].pop("predicted"), "qps[0].directions[0].predicted: missing"),
    (lambda d: d["qps"][0]["directions"][0]["predicted"].__setitem__("outcome", "maybe"),
     'qps[0].directions[0].predicted.outcome: expected one of ok, error, times_out, unknown, found "maybe"'),
    (lambda d: d["qps"][0]["directions"][0].__setitem__("rtt_us", -1),
     "qps[0].directions[0].rtt_us: expected a number at least 0"),
    (lambda d: d["qps"][0]["directions"][0].__setitem__("cause", "stale_pin"),
     "qps[0].directions[0].cause: expected an object, found a string"),
    (lambda d: d["qps"][0]["directions"][0]["cause"].pop("summary"), "qps[0].directions[0].cause.summary: missing"),
    (lambda d: d["qps"][0]["directions"].pop(), "qps[0].directions: expected 2 directions (out and back), found 1"),
    (lambda d: d["qps"][0].__setitem__("kind", "ud"), 'qps[0].kind: expected one of rc, uc, found "ud"'),
    (lambda d: d.__setitem__("qps", {}), "qps: expected an array, found an object"),
    (lambda d: d["local"].__setitem__("port", 0), "local.port: expected an integer 1-255, found 0"),
    (lambda d: d["local"].__setitem__("mtu", 1500),
     "local.mtu: expected one of 256, 512, 1024, 2048, 4096, found 1500"),
    (lambda d: d.__setitem__("peer", []), "peer: expected an object or null, found an array"),
    (lambda d: d.__setitem__("connected", "yes"), "connected: expected a boolean, found a string"),
    (lambda d: d["settings"].pop("deadline_s"), "settings.deadline_s: missing"),
    (lambda d: d.__setitem__("problem", {"kind": "boom", "text": ""}), 'problem.kind: expected one of refused,'),
    (lambda d: d.__setitem__("version", 2), "version: gidpolicy.probe version 2 is not known to this reader"),
    (lambda d: d.__setitem__("version", "1"), "version: expected an integer, found a string"),
    (lambda d: d.__setitem__("schema", "gidpolicy.fleet"),
     'schema: expected "gidpolicy.probe" or "gidpolicy.probe.mpi", found "gidpolicy.fleet"'),
    (lambda d: d.pop("schema"), "schema: missing"),
])
def test_a_bad_pair_field_is_named(pair_doc, edit, message):
    edit(pair_doc)
    for doc in (pair_doc, json.dumps(pair_doc)):
        with pytest.raises(ValueError) as e:
            probe.load(doc)
        assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize("edit,message", [
    (lambda d: d["link_results"][1]["observed"]["qps"][0]["directions"][1].__setitem__("errno", "x"),
     "link_results[1].observed.qps[0].directions[1].errno: expected an integer or null, found a string"),
    (lambda d: d["link_results"][0]["predicted"].pop("b_to_a"), "link_results[0].predicted.b_to_a: missing"),
    (lambda d: d["link_results"][0].__setitem__("a_rank", -1),
     "link_results[0].a_rank: expected an integer at least 0"),
    (lambda d: d["link_results"][0].__setitem__("agrees", None),
     "link_results[0].agrees: expected a boolean, found null"),
    (lambda d: d["link_results"][2]["observed"].__setitem__("tried", "yes"),
     "link_results[2].observed.tried: expected a boolean, found a string"),
    (lambda d: d.__setitem__("topology", "torus"),
     'topology: expected one of mesh, ring, rail, jaccl-mesh, jaccl-ring'),
    (lambda d: d.__setitem__("links", []), "links: expected an integer, found an array"),
    (lambda d: d["fixes"][0]["fixes"].append(3), "fixes[0].fixes[2]: expected a string, found an integer"),
    (lambda d: d["causes"][0].__setitem__("directions", "2"), "causes[0].directions: expected an integer"),
    (lambda d: d.__setitem__("fleet", "{}"), "fleet: expected an object or null, found a string"),
    (lambda d: d["fleet"].__setitem__("schema", "gidpolicy.probe"), 'fleet.schema: expected "gidpolicy.fleet"'),
    (lambda d: d["link_results"][1]["predicted"]["a_to_b"].__setitem__("cause", [4]),
     "link_results[1].predicted.a_to_b.cause: expected a cause id (an integer), a string or null, found an array"),
    (lambda d: d["link_results"][1]["predicted"]["a_to_b"].__setitem__("cause", -4),
     "link_results[1].predicted.a_to_b.cause: expected an integer at least 0, found -4"),
    (lambda d: d["fleet"].__setitem__("later", {1, 2}), "fleet: not JSON data: Object of type set"),
    (lambda d: d["fleet"].__setitem__("later", float("inf")), "fleet: not JSON data: Out of range float"),
    (lambda d: d["link_results"][0]["observed"]["qps"][0]["directions"][0].__setitem__("rtt_us", float("nan")),
     "link_results[0].observed.qps[0].directions[0].rtt_us: expected a number at least 0, found nan"),
    (lambda d: d.__setitem__("version", 3), "version: gidpolicy.probe.mpi version 3 is not known to this reader"),
    (lambda d: d.pop("version"), "version: missing"),
])
def test_a_bad_cluster_field_is_named(mpi_doc, edit, message):
    edit(mpi_doc)
    with pytest.raises(ValueError) as e:
        probe.load(mpi_doc)
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize("text,message", [
    ("", "not JSON"),
    ("{", "not JSON"),
    ("[]", "the document: expected an object, found an array"),
    ("null", "the document: expected an object, found null"),
    ('{"schema": "gidpolicy.probe", "schema": "gidpolicy.probe.mpi"}', 'duplicate key "schema"'),
    ('{"schema": "gidpolicy.probe", "version": NaN}', "NaN is not JSON"),
    ("[" * 100000 + "]" * 100000, "nested deeper than 32 levels"),
    ('{"schema": "gidpolicy.probe", "x": ' + "[" * 40 + "]" * 40 + "}", "nested deeper than 32 levels"),
    (b"\xff{}", "not UTF-8 at byte 0"),
])
def test_malformed_text_is_refused(text, message):
    with pytest.raises(ValueError) as e:
        probe.load(text)
    assert str(e.value).startswith(message), str(e.value)


def test_nesting_is_bounded_at_32_levels_exactly(pair_doc):
    # The document is level 1: an unknown key holding 31 nested arrays reaches 32, one more 33.
    pair_doc["later"] = json.loads("[" * 31 + "]" * 31)
    assert probe.load(json.dumps(pair_doc)) == probe.load(pair_doc)
    pair_doc["later"] = json.loads("[" * 32 + "]" * 32)
    for doc in (pair_doc, json.dumps(pair_doc)):
        with pytest.raises(ValueError, match="^nested deeper than 32 levels"):
            probe.load(doc)


def test_brackets_inside_strings_are_not_nesting(pair_doc):
    pair_doc["qps"][0]["directions"][0]["detail"] = "[{" * 1000
    assert probe.load(json.dumps(pair_doc)).qps[0].directions[0].detail == "[{" * 1000


def test_a_deep_dict_is_refused_without_recursing():
    doc = {"schema": "gidpolicy.probe"}
    inner = doc
    for _ in range(100000):  # deeper than Python's recursion limit
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(ValueError, match="nested deeper than 32 levels"):
        probe.load(doc)


def test_a_huge_document_is_refused_before_it_is_parsed(pair_doc, tmp_path):
    text = json.dumps(pair_doc)
    big = text[:-1] + ', "pad": "' + " " * probe.MAX_INPUT_BYTES + '"}'
    with pytest.raises(ValueError, match=f"larger than {probe.MAX_INPUT_BYTES} bytes"):
        probe.load(big)
    with pytest.raises(ValueError, match=f"larger than {probe.MAX_INPUT_BYTES} bytes"):
        probe.load(big.encode())
    with pytest.raises(ValueError, match="larger than 100 bytes"):
        probe.load(text, max_bytes=100)
    # A multi-byte character counts as its UTF-8 bytes.
    with pytest.raises(ValueError, match="larger than 100 bytes"):
        probe.from_json('"' + "\u00e9" * 60 + '"', max_bytes=100)
    path = tmp_path / "big.json"
    path.write_text(big)
    with pytest.raises(ValueError, match=f"big.json: larger than {probe.MAX_INPUT_BYTES} bytes"):
        probe.load_file(str(path))
    assert probe.load(text, max_bytes=len(text)).connected is False


def test_wrong_argument_types_raise_type_error():
    with pytest.raises(TypeError, match="load\\(\\): doc: expected str, bytes or a dict, found int"):
        probe.load(42)
    with pytest.raises(TypeError, match="from_json\\(\\): text: expected str or bytes, found list"):
        probe.from_json([])
