"""Stacks: each stack's own pick, pins, and the `env` settings."""

import pytest

import gidpolicy
from conftest import TABLES, roce_table
from gidpolicy import EnvPlan, EnvSetting, Error, GidEntry


def test_catalogue():
    rows = gidpolicy.stacks()
    names = ["nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest", "ds4", "llama.cpp", "jaccl", "exo"]
    assert [r["name"] for r in rows] == names
    nccl = rows[0]
    assert nccl["pin"] == "NCCL_IB_GID_INDEX" and nccl["per_process"] and nccl["version"] and nccl["source"]
    assert nccl["pins"] == [("NCCL_IB_GID_INDEX", "nccl_param")] and nccl["env"] == "per_process_variable"
    assert nccl["launch"]["device"] == "NCCL_IB_HCA" and nccl["runs_on"] == ["infiniband", "ethernet"]
    # Mooncake reads NCCL's pin when its own is unset: the second of its pins.
    assert rows[3]["pins"] == [("MC_GID_INDEX", "atoi"), ("NCCL_IB_GID_INDEX", "atoi_fallback")]
    # The other variables that steer a stack: NCCL's family, range and RoCE version.
    assert nccl["settings"] == [
        ("NCCL_IB_ADDR_FAMILY", "family"),
        ("NCCL_IB_ADDR_RANGE", "range"),
        ("NCCL_IB_ROCE_VERSION_NUM", "roce_version"),
    ]
    assert [r["name"] for r in rows if r["predicted"]] == names[:7] + ["jaccl", "exo"]
    assert rows[5]["pin"] == "" and rows[5]["env"] == "per_port_args" and rows[5]["launch"]["port"] == "-i"
    assert rows[7]["spec"] is None and rows[7]["env"] == "one_device_per_process"
    assert rows[8]["env"] == "jaccl_device_file" and rows[8]["runs_on"] == ["thunderbolt"]
    assert rows[8]["launch"]["choice_reader"] == "patched_fork" and nccl["launch"]["choice_reader"] == "stack"
    assert rows[9]["spec"] == "jaccl" and rows[9]["env"] == "jaccl_device_file"  # exo runs JACCL
    assert rows[6]["paths"] == [
        {"spec": "ds4", "runs_on": ["thunderbolt"], "automatic": True, "assumes": None},
        {"spec": "ds4-linux", "runs_on": ["ethernet"], "automatic": True, "assumes": rows[6]["paths"][1]["assumes"]},
    ]
    assert "control connection on the port's own IPv4 address" in rows[6]["paths"][1]["assumes"]
    assert rows[7]["paths"] == [] and rows[7]["runs_on"] == ["ethernet", "thunderbolt"]
    for r in rows:
        assert r["title"] and r["summary"] and r["runs_on"]
        if r["spec"] is not None:
            gidpolicy.parse_profile(r["spec"])  # every modelled choice is in the grammar


def test_stack_profile():
    assert gidpolicy.stack_profile("nccl").spec == "nccl"
    assert gidpolicy.stack_profile("nccl", 3).spec == "nccl:gid_index=3"
    assert gidpolicy.stack_profile("perftest", 7).spec == "perftest:x=7"
    assert gidpolicy.stack_profile("jaccl").spec == "jaccl"
    assert gidpolicy.stack_profile("ds4", 3).spec == "ds4:index=3"
    assert gidpolicy.stack_profile("llama.cpp", 2).spec == "libfabric:gid_idx=2"
    with pytest.raises(Error) as e:
        gidpolicy.stack_profile("llama.cpp")  # its own choice is not modelled
    assert e.value.errc == "not_supported" and "GGML_RDMA_GID" in e.value.detail
    with pytest.raises(Error) as e:
        gidpolicy.stack_profile("mpich")
    assert e.value.errc == "invalid_argument" and "mpich" in e.value.detail and "llama.cpp" in e.value.detail


def test_predict_stack_on_nccl_769():
    # NCCL 769: the only routable GID is RoCE v1; NCCL's own choice there.
    t = gidpolicy.read_tables_file(str(TABLES / "nccl-769.devinfo.txt"))[0]
    for name in ("nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest"):
        p = gidpolicy.predict_stack(name, t)
        assert p.outcome
        if p.chose:
            assert t.find(p.index) is not None and p.gid == t.find(p.index).gid
        if not p.works and p.fix is not None:
            assert t.find(p.fix).usable
    with pytest.raises(Error):
        gidpolicy.predict_stack("nope", t)


def test_predict_profile(roce):
    p = gidpolicy.predict_profile("validated:index=1,family=any,allow-link-local", roce)
    # Against a healthy peer (auto's pick there, IPv4-mapped) a link-local source is the other family.
    assert p.chose and p.index == 1 and not p.works and p.err == 22 and p.outcome.startswith("EINVAL (22)")
    assert p.fix == 3
    good = gidpolicy.predict_profile(gidpolicy.Profile("auto"), roce)
    assert good.chose and good.works and good.index == 3 and good.fix is None and good.err == 0
    assert "ok" in repr(good)
    refused = gidpolicy.predict_profile("validated:index=9", roce)
    assert not refused.chose and not refused.works
    assert gidpolicy.predict_profile("auto", roce, platform="darwin").chose
    assert gidpolicy.predict_profile("auto", roce, model=gidpolicy.DriverModel.linux_kernel()).works


def test_pins(roce):
    readings = gidpolicy.read_pin("NCCL_IB_GID_INDEX", "3", False)
    assert readings and all(r.value == 3 and not r.refused for r in readings)
    assert {r.stack for r in readings} >= {"nccl"}
    assert {r.stack for r in gidpolicy.read_pin("NCCL_IB_GID_INDEX", "3", True)} == {"nccl"}
    ucx = gidpolicy.read_pin("UCX_IB_GID_INDEX", "three", False)
    assert ucx and ucx[0].refused
    assert gidpolicy.read_pin("UCX_IB_GID_INDEX", "auto", False)[0].value is None
    assert gidpolicy.read_pin("NOT_A_PIN", "3", False) == []
    fine = gidpolicy.judge_pin(readings[0], roce)
    assert fine.status == "fine" and fine.right_index == 3
    stale = gidpolicy.judge_pin(gidpolicy.read_pin("NCCL_IB_GID_INDEX", "5", False)[0], roce)
    assert stale.status == "stale" and stale.err == 61 and "5" in stale.summary
    assert gidpolicy.judge_pin(ucx[0], roce).status == "fails"
    gidpolicy.judge_pin(readings[0], roce, platform="linux")


def test_plan_env_one_value_per_process():
    tables = [roce_table("mlx5_0"), roce_table("mlx5_1")]
    plan = gidpolicy.plan_env(["nccl", "ucx", "perftest", "llama.cpp"], tables)
    assert plan.variables["NCCL_IB_GID_INDEX"] == "3"
    assert plan.variables["UCX_IB_GID_INDEX"] == "3"
    assert plan.variables["UCX_NET_DEVICES"] == "mlx5_0:1,mlx5_1:1"
    assert plan.variables["GGML_RDMA_GID"] == "3"
    assert "perftest: -d mlx5_0 -i 1 -x 3" in plan.args
    assert plan.conflicts == [] and plan.why
    assert plan.settings[0] == EnvSetting("NCCL_IB_GID_INDEX", "3")
    assert "NCCL_IB_GID_INDEX" in repr(plan.settings[0])
    dotenv = gidpolicy.render_dotenv(plan)
    assert "NCCL_IB_GID_INDEX=3\n" in dotenv and dotenv.startswith("# ")
    # JACCL runs on no RoCE port: a conflict, and no JACCL_GID_POLICY for these ports.
    jaccl = gidpolicy.plan_env(["jaccl"], tables)
    assert "JACCL_GID_POLICY" not in jaccl.variables
    assert jaccl.conflicts and "runs on thunderbolt ports, and none of these is one" in jaccl.conflicts[0]


def test_plan_env_conflict_when_hcas_need_different_indices():
    other = roce_table("mlx5_1", entries=[GidEntry(5, "::ffff:10.0.1.1", "roce_v2", "eth1")])
    plan = gidpolicy.plan_env(["nccl"], [roce_table("mlx5_0"), other], profile=gidpolicy.Profile("auto"))
    assert "NCCL_IB_GID_INDEX" not in plan.variables
    assert len(plan.conflicts) == 1 and "one process per HCA" in plan.conflicts[0]
    nothing = gidpolicy.plan_env(["nccl"], [roce_table(entries=[GidEntry(0, "fe80::1", "roce_v2")])])
    assert nothing.settings == [] and nothing.conflicts


def test_plan_env_bad_input(roce):
    for stacks in (["mpich"], [], ["nccl", "x" * 1000]):
        with pytest.raises(Error) as e:
            gidpolicy.plan_env(stacks, [roce])
        assert e.value.errc == "invalid_argument" and len(str(e.value)) < 400
    with pytest.raises(Error) as e:
        gidpolicy.plan_env(["nccl"], [roce], profile="auto:nope")
    assert e.value.errc == "invalid_policy_spec"


def test_render_dotenv_refuses_what_it_cannot_hold():
    for value in ("a b", 'x"y', "line\nbreak", "$(rm)"):
        with pytest.raises(Error) as e:
            gidpolicy.render_dotenv(EnvPlan(settings=[EnvSetting("NCCL_IB_HCA", value)]))
        assert e.value.errc == "invalid_argument" and "NCCL_IB_HCA" in e.value.detail
    text = gidpolicy.render_dotenv(EnvPlan(settings=[EnvSetting("A", "1")], why=["two\nlines"], args=["x"]))
    assert text == "# two lines\n# x\nA=1\n"
    assert EnvPlan().settings == [] and EnvPlan(conflicts=["c"]).conflicts == ["c"]


def test_the_macs_stacks_run_on_thunderbolt(macmini):
    # A Mac's Thunderbolt port: JACCL, exo, ds4 and llama.cpp, never NCCL and its kin.
    assert gidpolicy.stacks_on(macmini) == ["ds4", "llama.cpp", "jaccl", "exo"]
    nccl_769 = gidpolicy.read_tables_file(str(TABLES / "nccl-769.devinfo.txt"))[0]
    assert gidpolicy.stacks_on(nccl_769) == [
        "nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest", "ds4", "llama.cpp"]
    j = gidpolicy.predict_stack("jaccl", macmini)
    assert not j.works and j.index == 1 and j.err == 22  # routes from the literal 1, empty here
    assert gidpolicy.predict_stack("exo", macmini).outcome == j.outcome
    # ds4's Linux path, its control connection on the port's own address: that address's v2 entry
    assert gidpolicy.predict_stack("ds4", nccl_769).index == 3
    with pytest.raises(Error) as e:
        gidpolicy.predict_stack("nccl", macmini)
    assert e.value.errc == "not_supported" and "does not run on thunderbolt" in e.value.detail
    assert gidpolicy.stack_profile_on("ds4", "ethernet", 3).spec == "ds4-linux:index=3"
    assert gidpolicy.stack_profile_on("ds4", "thunderbolt").spec == "ds4"
    with pytest.raises(Error):
        gidpolicy.stack_profile_on("ds4", "wire")


def test_unsteerable_failure(macmini):
    why = gidpolicy.unsteerable_failure("jaccl", macmini)
    assert why is not None and "it works once the first IPv4-mapped GID sits at index 1" in why
    assert gidpolicy.unsteerable_failure("nccl", macmini) is None  # steered by its variable
    ds4qa = gidpolicy.read_tables_file(str(TABLES / "apple-ds4qa-rdma_en1.devinfo.txt"))[0]
    assert gidpolicy.unsteerable_failure("jaccl", ds4qa) is None  # stock JACCL works there


def test_the_launch_settings_steer_the_prediction_and_the_plan():
    # Under NCCL_IB_ADDR_FAMILY=AF_INET6 NCCL picks what the nccl profile with that family picks (not
    # its default); a device list leaves the other ports out.
    table = roce_table("mlx5_0")
    want = gidpolicy.Profile("nccl:family=AF_INET6").plan(table).sgid_index
    assert gidpolicy.predict_stack("nccl", table, settings={"NCCL_IB_ADDR_FAMILY": "AF_INET6"}).index == want
    assert gidpolicy.predict_stack("nccl", table, settings={}).index == gidpolicy.predict_stack("nccl", table).index
    unused = gidpolicy.predict_stack("nccl", table, settings={"NCCL_IB_HCA": "=mlx5_1"})
    assert not unused.chose and unused.outcome.startswith("not used")
    # NCCL's own choice is already auto's pick: no pin with settings given, unless pin=True.
    plan = gidpolicy.plan_env(["nccl"], [table], settings={})
    assert not plan.settings and any("no NCCL_IB_GID_INDEX needed" in w for w in plan.why)
    assert [s.name for s in gidpolicy.plan_env(["nccl"], [table], settings={}, pin=True).settings] == [
        "NCCL_IB_GID_INDEX"
    ]
