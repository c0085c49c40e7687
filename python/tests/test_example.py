"""The example python/examples/check_peer_gids.py, run as a user runs it and imported as a hook."""

import subprocess
import sys
from pathlib import Path

import pytest

import gidpolicy
from conftest import TABLES

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "check_peer_gids.py"
RANKS = [str(TABLES / "apple-ds4qa-rdma_en1.devinfo.txt"), str(TABLES / "macmini-mapped-at-2.json")]


def run(*args):
    return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, timeout=60)


def test_jaccl_as_shipped_fails_on_the_rank_whose_mapped_gid_is_at_2():
    r = run("--profile", "jaccl", *RANKS)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rank 1: routes from sgid_index 1: sgid_index 1 is empty" in r.stdout
    assert "rank 1 -> rank 0 (::ffff:10.99.0.2): EINVAL (22)" in r.stdout
    assert "rank 0 ->" not in r.stdout  # rank 0's mapped GID is at 1: its side is fine


def test_jaccl_fixed_passes():
    r = run("--profile", "jaccl-fixed", *RANKS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 1: rdma_en2 port 1 advertises ::ffff:10.99.0.3, routes from 2" in r.stdout
    assert "every RTR is predicted to work" in r.stdout


def test_a_peer_advertising_zeros_is_caught():
    r = run("--profile", "jaccl-fixed", "--advertised", "1=::", *RANKS)
    assert r.returncode == 1
    assert "rank 0 -> rank 1 (::): refused before RTR" in r.stdout


def test_bad_arguments_exit_2():
    assert run("--profile", "nope", *RANKS).returncode == 2
    assert run(RANKS[0]).returncode == 2
    assert run("--advertised", "9=::", *RANKS).returncode == 2
    assert run("/nonexistent", RANKS[0]).returncode == 2
    assert run("--device", "mlx5_9", *RANKS).returncode == 2


def test_hook_with_gathered_bytes():
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import check_peer_gids
    finally:
        sys.path.pop(0)
    mac = gidpolicy.read_tables_file(RANKS[1])[0]
    plan = gidpolicy.Profile("jaccl-fixed").plan(mac)
    mine = bytes(plan.advertised)
    assert check_peer_gids.check_before_rtr(mac, plan, [bytes(gidpolicy.Gid("::ffff:10.99.0.2")), mine], 1) == []
    problems = check_peer_gids.check_before_rtr(mac, plan, [b"\x00" * 15, mine, bytes(gidpolicy.Gid("fd00::9"))], 1)
    assert len(problems) == 2
    assert "rank 0 sent 15 bytes" in problems[0]
    assert "rank 1 -> rank 2 (fd00::9): refused before RTR" in problems[1]
    with pytest.raises(ValueError):
        check_peer_gids.check_before_rtr(mac, plan, [mine], 3)
