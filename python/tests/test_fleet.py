"""Fleet: host snapshots, JACCL device files, and the judged links of a cluster."""

import json

import pytest

import gidpolicy
from conftest import FLEET, TABLES, roce_table
from gidpolicy import Error, GidEntry, fleet


@pytest.fixture
def jaccl_hosts():
    return fleet.read_snapshots([str(FLEET / "jaccl" / "hosts")])


@pytest.fixture
def jaccl_devices(jaccl_hosts):
    text = (FLEET / "jaccl" / "devices.json").read_text()
    return fleet.parse_jaccl_devices(text, "devices.json", len(jaccl_hosts))


def test_read_snapshots_and_devices(jaccl_hosts, jaccl_devices):
    assert [h.host for h in jaccl_hosts] == ["m3-ultra-1", "m3-ultra-2", "m3-ultra-3", "m3-ultra-4"]
    assert all(h.ports and h.source.endswith(".json") for h in jaccl_hosts)
    assert jaccl_devices.ranks == 4 and jaccl_devices.names[0][0] == [] and jaccl_devices.names[0][1] == ["rdma_en5"]
    assert jaccl_devices.valid_mesh() == (True, "")
    ok, why = fleet.parse_jaccl_devices('[[null, "a"], ["b", "c"]]').valid_mesh()
    assert not ok and why


def test_jaccl_fleet_finds_the_host_whose_mapped_gid_moved(jaccl_hosts, jaccl_devices):
    a = fleet.analyze(jaccl_hosts, "jaccl", jaccl=jaccl_devices, profile="jaccl")
    assert a.topology_name == "jaccl-mesh" and a.profile_spec == "jaccl" and a.host_count == 4
    assert a.hosts == [h.host for h in jaccl_hosts]
    s = a.summary
    assert (s.links, s.connected, s.all_connected) == (6, 3, False)
    assert len(s.groups) == 3 and all(g.links == 1 and g.hosts == 1 for g in s.groups)
    text = a.describe(s.groups[0])
    assert "m3-ultra-3" in text and "EINVAL (22)" in text
    cause = a.causes[s.groups[0].cause]
    assert cause.outcome == "rtr_error" and cause.err == 22 and cause.platform == "darwin"
    links = a.links()
    assert len(links) == a.link_count == 6 and [l.index for l in links] == list(range(6))
    bad = [l for l in links if not l.connected]
    assert len(bad) == 3
    d = bad[0].a_to_b if not bad[0].a_to_b.ok else bad[0].b_to_a
    assert d.outcome == "rtr_error" and a.sides[d.culprit].host == 2
    assert "m3-ultra-3" in a.describe_direction(d) and "<->" in a.describe_link(bad[0])
    assert a.link(bad[0].index).connected == bad[0].connected
    side = a.sides[0]
    assert side.device and side.usable and side.advertised.is_ipv4_mapped and side.sgid_index == 1
    fixed = fleet.analyze(jaccl_hosts, "jaccl", jaccl=jaccl_devices, profile=gidpolicy.Profile("jaccl-fixed"))
    assert fixed.summary.all_connected


def test_mesh_from_python_tables_and_paging():
    hosts = [fleet.HostSnapshot(f"h{i}", [roce_table()]) for i in range(5)]
    a = fleet.analyze(hosts, threads=1)
    assert a.topology_name == "mesh" and a.link_count == 10 and a.summary.all_connected
    assert [l.index for l in a.links(3, 6)] == [3, 4, 5]
    assert a.links(8, 100)[-1].index == 9 and a.links(20) == [] and a.links(7, 2) == []
    with pytest.raises(IndexError):
        a.link(10)
    ring = fleet.analyze(hosts, "ring")
    assert ring.link_count == 5
    rail = fleet.analyze(hosts, "rail", rails=["mlx5_0"])
    assert rail.link_count == 10


def test_hosts_from_one_table_share_an_address():
    hosts = [fleet.HostSnapshot(f"h{i}", [roce_table()]) for i in range(5)]
    a = fleet.analyze(hosts, threads=1)
    # The fabric model connects every pair; the fleet sees five hosts answering for 10.0.0.1.
    assert a.summary.all_connected and a.summary.unreliable == 10 and not a.ok
    (c,) = a.conflicts
    assert c.kind == "duplicate_address" and c.fatal and c.host_count == 5 and c.links == 10
    assert [str(g) for g in c.gids] == ["::ffff:10.0.0.1"] and c.hosts == [0, 1, 2, 3, 4]
    assert "on 5 hosts (h0, h1, h2, h3, h4)" in a.describe_conflict(c)
    link = a.link(0)
    assert link.connected and not link.reliable and link.conflict == 0
    assert a.sides[0].conflict == 0
    distinct = [
        fleet.HostSnapshot(f"h{i}", [roce_table(entries=[gidpolicy.GidEntry(3, f"::ffff:10.0.0.{i + 1}", "roce_v2")])])
        for i in range(3)
    ]
    d = fleet.analyze(distinct, threads=1)
    assert d.conflicts == [] and d.ok and d.summary.unreliable == 0 and d.link(0).conflict is None


def test_fleet_failures_are_errors():
    one = [fleet.HostSnapshot("h0", [roce_table()])]
    with pytest.raises(Error) as e:
        fleet.analyze(one)
    assert e.value.errc
    two = [fleet.HostSnapshot("a", [roce_table()]), fleet.HostSnapshot("a", [roce_table()])]
    with pytest.raises(Error) as e:
        fleet.analyze(two)
    assert "a" in e.value.detail
    hosts = [fleet.HostSnapshot("a", [roce_table()]), fleet.HostSnapshot("b", [roce_table()])]
    for kwargs in (dict(topology="star"), dict(topology="jaccl"), dict(threads=0), dict(profile="nope")):
        with pytest.raises(Error):
            fleet.analyze(hosts, **kwargs)
    with pytest.raises(Error) as e:
        fleet.analyze(hosts, "jaccl", jaccl=fleet.parse_jaccl_devices('[[null,"a","b"],["a",null,"b"],["a","b",null]]'))
    assert e.value.errc
    with pytest.raises(Error) as e:
        fleet.HostSnapshot("bad\nname", [])
    assert e.value.errc == "invalid_argument"


def test_snapshot_parsing_names_the_field(jaccl_hosts):
    text = (FLEET / "jaccl" / "hosts" / "m3-ultra-1.json").read_text()
    snap = fleet.parse_snapshot(text, "m3-ultra-1.json")
    assert snap.host == "m3-ultra-1" and snap.ports == jaccl_hosts[0].ports
    assert fleet.parse_snapshot(text, "x.json", host="renamed").host == "renamed"
    doc = json.loads(text)
    doc[0]["entries"][0]["gid"] = "not-a-gid"
    with pytest.raises(Error) as e:
        fleet.parse_snapshot(json.dumps(doc), "h3.json")
    assert "h3.json" in e.value.detail and "gid" in e.value.detail
    with pytest.raises(Error):
        fleet.parse_snapshot("[" * 100000, "deep.json")
    with pytest.raises(Error) as e:
        fleet.read_snapshots(["/nonexistent.json"])
    assert "/nonexistent.json" in str(e.value)


@pytest.mark.parametrize(
    "text", ["", "{}", "[" * 10000, '[[null, 1], [1, null]]', '[[null, "a\\n"], ["b", null]]']
)
def test_bad_device_files(text):
    with pytest.raises(Error) as e:
        fleet.parse_jaccl_devices(text, "devices.json")
    assert "devices.json" in str(e.value)


def test_one_rank_parses_but_is_no_mesh():
    one = fleet.parse_jaccl_devices("[[null]]")
    assert one.ranks == 1 and not one.valid_mesh()[0] and one.valid_mesh()[1]


def test_device_file_rank_count_must_match():
    with pytest.raises(Error):
        fleet.parse_jaccl_devices('[[null, "a"], ["b", null]]', "d.json", expected_ranks=3)


def test_parse_snapshot_reads_the_tables_document_and_the_old_port_shape():
    # `show --json` prints the tables document (version 2), its "host" naming the host; the port
    # objects `show --json` printed before, which clusters keep on disk, still read.
    tables = gidpolicy.read_tables_file(str(TABLES / "nccl-1573-pod.show_gids.txt"))
    doc = json.loads(gidpolicy.write_tables(tables, "json"))
    assert (doc["schema"], doc["version"], doc["host"], doc["source"]) == ("gidpolicy.tables", 2, None, None)
    assert isinstance(doc["ports"], list) and len(doc["ports"]) == 2
    doc["host"] = "node-a"
    snap = fleet.parse_snapshot(json.dumps(doc), "a.json")
    assert snap.host == "node-a" and snap.ports == tables
    old = [dict(p, host="node-b") for p in doc["ports"]]
    snap = fleet.parse_snapshot(json.dumps(old), "b.json")
    assert snap.host == "node-b" and snap.ports == tables
    assert gidpolicy.read_tables(json.dumps(doc), "a.json") == tables
    doc["version"] = 9
    with pytest.raises(Error) as e:
        fleet.parse_snapshot(json.dumps(doc), "f.json")
    assert e.value.errc == "unsupported_version" and "f.json: version" in e.value.detail
