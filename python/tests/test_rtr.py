"""RTR: driver models, judge_rtr and predict_rtr, the errno explanation, `check`'s rows."""

import pytest

import gidpolicy
from conftest import roce_table
from gidpolicy import DriverModel, Error, Gid, Profile


def test_platform_and_errno_names():
    assert gidpolicy.host_platform() == "linux"
    assert gidpolicy.errno_name(61) == "ENODATA"
    assert gidpolicy.errno_name(61, "darwin") == "ECONNREFUSED"
    assert gidpolicy.errno_name(60, "darwin") == "ETIMEDOUT"
    assert gidpolicy.errno_name(12345) == "errno 12345"
    with pytest.raises(Error) as e:
        gidpolicy.errno_name(22, "windows")
    assert e.value.errc == "invalid_argument"


def test_driver_models(macmini, roce):
    linux, apple = DriverModel.linux_kernel(), DriverModel.apple_thunderbolt()
    assert linux.name == "linux" and linux.platform == "linux" and linux.enodata_for_empty_slot
    assert apple.platform == "darwin" and apple.uc_only and apple.max_qps_per_device == 10
    assert DriverModel.by_name("thunderbolt").name == "apple_thunderbolt"
    assert DriverModel.for_table(macmini).name == "apple_thunderbolt"
    assert DriverModel.for_table(roce).name == "linux"
    assert DriverModel.for_table(roce, platform="darwin").platform == "darwin"
    with pytest.raises(Error) as e:
        DriverModel.by_name("windows")
    assert e.value.errc == "invalid_argument"
    m = DriverModel.linux_kernel()
    m.enodata_for_empty_slot = False  # an older kernel: EINVAL for an empty slot
    m.platform = "darwin"
    assert m.platform == "darwin"
    with pytest.raises(Error):
        m.platform = "beos"
    assert "linux" in repr(linux)


def test_judge_rtr(roce, macmini):
    ok = gidpolicy.judge_rtr(roce, 3, "::ffff:10.0.0.2")
    assert ok.outcome == "ok" and ok.err == 0 and ok.rule == "none" and "empty_slot" in ok.passed
    assert ok.to_string() == "ok"
    empty = gidpolicy.judge_rtr(roce, 5, "::ffff:10.0.0.2")
    assert (empty.outcome, empty.err, empty.rule) == ("error", 61, "empty_slot")
    old = DriverModel.linux_kernel()
    old.enodata_for_empty_slot = False
    assert gidpolicy.judge_rtr(roce, 5, "::ffff:10.0.0.2", model=old).err == 22
    ll = gidpolicy.judge_rtr(roce, 1, "::ffff:10.0.0.2")
    assert ll.rule in ("family_mismatch", "link_local_source")
    assert gidpolicy.judge_rtr(roce, 3, "::").rule == "dgid_zero"
    assert gidpolicy.judge_rtr(roce, 3, "::ffff:10.0.0.2", is_global=False).rule == "no_grh"
    assert gidpolicy.judge_rtr(roce, 16, "::ffff:10.0.0.2").rule == "index_out_of_range"
    wrapped = gidpolicy.judge_rtr(roce, 259, "::ffff:10.0.0.2")  # (uint8_t)259 == 3
    assert "259" in wrapped.reason
    mismatch = gidpolicy.judge_rtr(roce, 2, "::ffff:10.0.0.2", peer_gid_type="roce_v2")
    assert mismatch.outcome == "times_out" and mismatch.rule == "roce_version_mismatch"
    gone = gidpolicy.judge_rtr(roce, 3, "::ffff:10.0.0.2", source_netdev_present=False)
    assert gone.rule == "netdev_gone" and gone.err == 19
    apple = gidpolicy.judge_rtr(macmini, 1, "::ffff:10.99.0.4")
    assert (apple.outcome, apple.err) == ("error", 22)
    assert gidpolicy.judge_rtr(macmini, 0, "::ffff:10.99.0.4").err in (22, 60)
    assert gidpolicy.judge_rtr(macmini, 2, "::ffff:10.99.0.4", qp_type="rc").rule == "qp_type"
    assert apple.to_string("darwin").startswith("EINVAL (22)")
    for kwargs in (dict(qp_type="xrc"), dict(peer_gid_type="v3"), dict(platform="vms")):
        with pytest.raises(Error) as e:
            gidpolicy.judge_rtr(roce, 3, "::ffff:10.0.0.2", **kwargs)
        assert e.value.errc == "invalid_argument"
    with pytest.raises(Error):
        gidpolicy.judge_rtr(roce, 3, "not a gid")


def test_judge_create_qp():
    apple = DriverModel.apple_thunderbolt()
    assert gidpolicy.judge_create_qp("uc", 0, apple).outcome == "ok"
    rc = gidpolicy.judge_create_qp("rc", 0, apple)
    assert rc.rule == "qp_type" and rc.err == 102
    cap = gidpolicy.judge_create_qp("uc", 10, apple)
    assert cap.rule == "qp_limit" and cap.err == 16
    assert gidpolicy.judge_create_qp("rc", 1000, DriverModel.linux_kernel()).outcome == "ok"


def test_predict_rtr(macmini, roce):
    jaccl = Profile("jaccl").plan(macmini)
    p = gidpolicy.predict_rtr(macmini, jaccl, "::ffff:10.99.0.4")
    assert p.reaches_driver and p.refused is None
    assert (p.verdict.outcome, p.verdict.err) == ("error", 22)
    assert p.to_string("darwin") == "EINVAL (22): sgid_index 1 is empty"
    fixed = gidpolicy.predict_rtr(macmini, Profile("jaccl-fixed").plan(macmini), "::ffff:10.99.0.4")
    assert fixed.verdict.outcome == "ok"
    refused = gidpolicy.predict_rtr(roce, Profile("auto").plan(roce), "::")
    assert not refused.reaches_driver
    assert isinstance(refused.refused, Error) and refused.refused.errc == "peer_gid_zero"
    assert refused.verdict.rule == "dgid_zero"
    fam = gidpolicy.predict_rtr(roce, Profile("auto").plan(roce), "fd00::2")
    assert fam.refused.errc == "family_mismatch"
    mtu = gidpolicy.predict_rtr(roce, Profile("auto").plan(roce), "::ffff:10.0.0.2", peer_mtu=4096, peer_gid_type="roce_v2")
    assert mtu.reaches_driver and mtu.verdict.outcome == "ok"
    with pytest.raises(Error):
        gidpolicy.predict_rtr(roce, Profile("auto").plan(roce), "::ffff:10.0.0.2", peer_mtu=1500)
    with pytest.raises(TypeError):
        gidpolicy.predict_rtr(roce, Profile("auto").plan(roce), "::ffff:10.0.0.2", peer_qpn=-1)


def test_diagnose(macmini):
    bare = gidpolicy.diagnose(22, "darwin")
    assert bare.err == 22 and bare.platform == "darwin" and bare.name == "EINVAL"
    assert bare.causes and all(c.likelihood in ("confirmed", "likely", "possible", "ruled_out") for c in bare.causes)
    d = gidpolicy.diagnose(22, "darwin", table=macmini, sgid_index=1, advertised="::ffff:10.99.0.3",
                           peer_gid="::ffff:10.99.0.4", qp_type="uc")
    assert d.causes[0].likelihood == "confirmed"
    assert "sgid_index 1 is empty" in d.causes[0].summary and d.causes[0].remedy
    order = ["confirmed", "likely", "possible", "ruled_out"]
    assert [order.index(c.likelihood) for c in d.causes] == sorted(order.index(c.likelihood) for c in d.causes)
    assert str(d).startswith("EINVAL (22) on darwin:")
    same = gidpolicy.diagnose(22, model=DriverModel.apple_thunderbolt(), table=macmini, sgid_index=1,
                              advertised="::ffff:10.99.0.3", peer_gid="::ffff:10.99.0.4", qp_type="uc")
    assert [c.id for c in same.causes] == [c.id for c in d.causes]
    busy = gidpolicy.diagnose(16, "darwin", qps_on_device=10, qp_type="uc")
    assert any(c.likelihood == "confirmed" for c in busy.causes)
    unknown = gidpolicy.diagnose(9999)
    assert [c.id for c in unknown.causes] == ["unknown"]
    assert gidpolicy.diagnose(61).name == "ENODATA"
    assert gidpolicy.diagnose(61, "darwin").name == "ECONNREFUSED"
    with pytest.raises(Error):
        gidpolicy.diagnose(22, advertised="zz")
    with pytest.raises(Error):
        gidpolicy.diagnose(22, peer_gid_type="v9")


def test_check_rows(macmini):
    rows = gidpolicy.check(macmini)
    assert [r.profile for r in rows] == ["jaccl", "jaccl-legacy", "jaccl-fixed", "ds4", "ds4-linux", "auto"]
    by = {r.profile: r for r in rows}
    j = by["jaccl"]
    assert j.error is None and not j.agrees and j.plan.sgid_index == 1
    assert j.prediction.to_string("darwin") == "EINVAL (22): sgid_index 1 is empty"
    assert by["jaccl-fixed"].agrees and by["jaccl-fixed"].prediction.verdict.outcome == "ok"
    legacy = by["jaccl-legacy"]
    assert not legacy.agrees and not legacy.prediction.reaches_driver
    assert repr(j) == "CheckRow('jaccl')"


def test_check_given_profiles_and_failures(roce):
    only_ll = roce_table(entries=[gidpolicy.GidEntry(0, "fe80::1", "roce_v2")])
    rows = gidpolicy.check(only_ll, ["auto", Profile("validated:index=0,family=any,allow-link-local")])
    assert rows[0].plan is None and rows[0].prediction is None and not rows[0].agrees
    assert isinstance(rows[0].error, Error) and rows[0].error.errc == "no_candidate" and rows[0].error.trace
    # The row's peer runs the same profile on a like table, so it advertises fe80::1 too: a
    # link-local pair on one link passes (the prediction isolates this side's index choice).
    assert rows[1].plan.sgid_index == 0 and rows[1].prediction.verdict.outcome == "ok"
    assert gidpolicy.check(roce, ["auto"], platform="darwin")[0].prediction.verdict.outcome in ("ok", "error")
    with pytest.raises(Error) as e:
        gidpolicy.check(roce, ["auto:nope"])
    assert e.value.errc == "invalid_policy_spec"
    with pytest.raises(Error) as e:
        gidpolicy.check(roce, [42])
    assert e.value.errc == "invalid_argument"
