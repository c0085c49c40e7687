"""Profiles and plans: the spec grammar, every registry spec, select with its trace, agreement."""

import pytest

import gidpolicy
from conftest import roce_table
from gidpolicy import Error, Gid, GidEntry, Profile


def test_every_registry_example_parses_and_round_trips():
    rows = gidpolicy.builtin_specs()
    names = [r["name"] for r in rows]
    assert names[:3] == ["jaccl", "jaccl-fixed", "jaccl-legacy"]
    assert {"auto", "ds4", "validated", "nccl", "ucx", "perftest", "mooncake", "libfabric", "rdma_cm", "first",
            "per-device"} <= set(names)
    count = 0
    for row in rows:
        assert row["kind"] in ("policy", "profile", "combinator")
        assert row["grammar"] and row["summary"] and row["examples"]
        for opt in row["options"]:
            assert set(opt) == {"key", "value", "repeats"}
        for spec in row["examples"]:
            p = Profile.parse(spec)
            assert p.spec == spec, (row["name"], spec)
            assert Profile(p.spec) == p and hash(Profile(spec)) == hash(p)
            count += 1
    assert count >= 30


def test_registry_rows():
    jaccl = gidpolicy.find_builtin_spec("jaccl")
    assert jaccl["kind"] == "profile" and jaccl["literal_source"] == 1 and jaccl["policy_alone"] == "jaccl-fixed"
    auto = gidpolicy.find_builtin_spec("auto")
    assert auto["literal_source"] is None and auto["policy_alone"] is None
    assert {o["key"] for o in auto["options"]} >= {"family", "subnet", "exclude", "peer"}
    assert [o["repeats"] for o in auto["options"] if o["key"] == "subnet"] == [True]
    assert gidpolicy.find_builtin_spec("nope") is None


def test_named_profiles():
    assert [p.spec for p in gidpolicy.profiles()] == ["jaccl", "jaccl-legacy", "jaccl-fixed", "ds4", "ds4-linux", "auto"]
    assert gidpolicy.parse_profile("jaccl").literal_source == 1
    assert gidpolicy.parse_profile("auto").literal_source is None
    assert gidpolicy.parse_profile("ds4@sgid=3").literal_source == 3
    assert str(gidpolicy.parse_profile("auto")) == "auto" and repr(Profile("auto")) == "Profile('auto')"


@pytest.mark.parametrize(
    "spec",
    ["", "bogus", "auto:bogus=1", "validated", "validated:index=x", "first(", "first(auto|", "ds4:index=-1",
     "auto@sgid=300", "a" * 10000, "first(" * 5000, "auto:subnet=10.0.0.0/99", "per-device(=auto)"],
)
def test_bad_specs_raise_invalid_policy_spec(spec):
    with pytest.raises(Error) as e:
        Profile.parse(spec)
    assert e.value.errc in ("invalid_policy_spec", "invalid_field"), str(e.value)
    assert e.value.detail
    assert len(str(e.value)) < 1000


def test_plan_jaccl_disagrees_where_the_mapped_gid_is_not_at_1(macmini):
    plan = Profile("jaccl").plan(macmini)
    assert plan.advertised == Gid("::ffff:10.99.0.3")
    assert plan.selection.entry.index == 2 and plan.selection.sgid_index == 2
    assert plan.sgid_index == 1 and not plan.agrees and not plan.agreement
    assert plan.agreement.explanation == "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2"
    assert plan.agreement.advertised_at == 2 and plan.agreement.at_index.state == "empty"
    with pytest.raises(Error) as e:
        plan.agreement.check()
    assert e.value.errc == "disagreement"
    fixed = Profile("jaccl-fixed").plan(macmini)
    assert fixed.agrees and fixed.sgid_index == 2
    fixed.agreement.check()
    assert "DISAGREES" in repr(plan) and "agrees" in repr(fixed)


def test_plan_trace(macmini):
    untraced = Profile("auto").plan(macmini)
    assert not untraced.trace and untraced.trace.attempts == []
    traced = Profile("auto").plan(macmini, trace=True)
    assert traced.trace and traced.selection.trace.attempts == traced.trace.attempts
    steps = traced.trace.attempts[0].steps
    assert [s.verdict for s in steps if s.accepted] == ["chosen"]
    by_index = {s.index: s for s in steps}
    assert by_index[0].verdict == "link_local" and by_index[1].verdict == "empty" and by_index[2].verdict == "chosen"
    assert traced.trace.attempts[0].policy == "auto" and traced.trace.attempts[0].error == ""
    assert "link_local" in str(traced.trace)


def test_failed_selection_raises_with_its_trace(macmini):
    with pytest.raises(Error) as e:
        Profile("validated:index=1").plan(macmini)
    assert e.value.errc == "entry_empty"
    assert e.value.trace is not None
    assert e.value.trace.attempts[0].steps[0].index == 1
    assert e.value.trace.attempts[0].steps[0].verdict == "empty"
    only_ll = roce_table(entries=[GidEntry(0, "fe80::1", "roce_v2")])
    with pytest.raises(Error) as e:
        Profile("auto").plan(only_ll)
    assert e.value.errc == "no_candidate"
    assert "link_local" in str(e.value.trace)
    with pytest.raises(Error) as e:
        Profile("jaccl-fixed").plan(only_ll)
    assert e.value.errc == "no_ipv4_mapped_gid"


def test_first_and_per_device(roce):
    p = Profile("first(validated:index=9|auto)").plan(roce, trace=True)
    assert p.selection.entry.index == 3
    assert [a.policy for a in p.trace.attempts] == ["validated:index=9", "auto"]
    assert p.trace.attempts[0].error
    per = Profile("per-device(mlx5_0=validated:index=2;*=auto)")
    assert per.plan(roce).sgid_index == 2
    assert per.plan(roce_table("mlx5_1")).sgid_index == 3


def test_check_agreement(macmini):
    a = gidpolicy.check_agreement(macmini, "::ffff:10.99.0.3", 2)
    assert a.agrees and a.sgid_index == 2 and a.at_index.index == 2
    b = gidpolicy.check_agreement(macmini, bytes(Gid("::ffff:10.99.0.3")), 1)
    assert not b.agrees and b.advertised_at == 2
    c = gidpolicy.check_agreement(macmini, "::ffff:10.99.0.3", 258)
    assert not c.agrees and c.at_index is None
    d = gidpolicy.check_agreement(macmini, "::ffff:1.2.3.4", 2)
    assert not d.agrees and d.advertised_at is None
    with pytest.raises(Error):
        gidpolicy.check_agreement(macmini, b"short", 2)
    with pytest.raises(TypeError):
        gidpolicy.check_agreement(macmini, "::1", -1)
