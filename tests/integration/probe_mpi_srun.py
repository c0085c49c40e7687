#!/usr/bin/env python3
"""gidpolicy-probe-mpi under Slurm's srun (PMIx) on the drop-in fake libibverbs, one table per rank.

Usage: probe_mpi_srun.py CLI PROBE_MPI FAKE_LIB_DIR

Starts a private single-node Slurm in a temporary directory: its own munge daemon (its own key
and socket), slurmctld and slurmd on ports chosen free here, state, spool, logs and PMIx files in
that directory; nothing under /etc/slurm, /etc/munge or /run is read or written. Then
`srun --mpi=pmix -n 4` runs the mesh, each rank taking the table of its SLURM_PROCID (ranks 0, 1
and 3 hold a RoCE v2 GID at index 2, rank 2's index 2 is empty). Rank 0's `--json` document must
list the 6 links, exactly the 3 with rank 2 failing, and agree link for link with the same tables
under mpirun and under `gidpolicy fleet`. The daemons, and any process they left carrying this
run's SLURM_CONF, are killed and the directory removed whatever happens.

Exits 77 (skipped, saying why) without srun/slurmctld/slurmd/munged, when not root (slurmd
launches the tasks as their user), or when the daemons refuse to start. munge rather than
auth/none: with auth/none any local user could submit jobs as root to the private slurmctld
while the test runs. Every wait is a hang guard, never a verdict.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

CLI, PROBE_MPI, LIB = sys.argv[1], sys.argv[2], sys.argv[3]
GUARD = 240
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def skip(why):
    print("skipped:", why)
    sys.exit(77)


tools = {t: shutil.which(t, path=SBIN) for t in ("srun", "sinfo", "scancel", "slurmctld", "slurmd", "munged")}
missing = [t for t, p in tools.items() if not p]
if missing:
    skip(f"no {', '.join(missing)} (Debian slurm-client, slurmctld, slurmd, munge)")
if os.geteuid() != 0:
    skip("not root: the private slurmd runs as SlurmdUser=root to launch the tasks")

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


def free_ports(n):
    # Bound together so the n differ; released just before the daemons bind them. Another process
    # taking one in between makes a daemon refuse to start: a skip, never a false verdict.
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def links_of(doc):
    # Version 2 of the document: every link with its ranks, what the wire did and the fleet's
    # prediction; `agrees` must hold on each (the prediction made from the same snapshots).
    check(all(l["agrees"] for l in doc["link_results"]), "every link as the fleet predicted it")
    return {(int(l["a_rank"]), int(l["b_rank"])): bool(l["observed"]["connected"]) for l in doc["link_results"]}


def wait_for(pred, guard):
    end = time.monotonic() + guard
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.2)
    return False


def ours(conf):
    # Every process carrying this run's SLURM_CONF: slurmstepd (forked by our slurmd) and the
    # tasks (srun's environment). The path is unique to this run, so no other job is touched.
    needle = b"SLURM_CONF=" + conf.encode() + b"\0"
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read() + b"\0":
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def stop(procs, conf):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    for pid in ours(conf):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


host = socket.gethostname().split(".")[0]
tmp = tempfile.mkdtemp(prefix="gidpolicy-srun-")
conf = os.path.join(tmp, "slurm.conf")
procs = []
started = time.monotonic()
try:
    # munged insists that its socket's directory, and the directories above it, be searchable by all.
    os.chmod(tmp, 0o755)
    for d in ("state", "spool", "log", "pmix", "munge"):
        os.mkdir(os.path.join(tmp, d), 0o755)
    key = os.path.join(tmp, "munge", "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    msock = os.path.join(tmp, "munge", "munge.socket")
    mlog = open(os.path.join(tmp, "log", "munged.out"), "w", encoding="utf-8")
    procs.append(subprocess.Popen(
        [tools["munged"], "-F", f"--key-file={key}", f"--socket={msock}",
         f"--pid-file={tmp}/munge/munged.pid", f"--log-file={tmp}/log/munged.log",
         f"--seed-file={tmp}/munge/munged.seed"],
        stdout=mlog, stderr=subprocess.STDOUT, start_new_session=True))
    if not wait_for(lambda: os.path.exists(msock) or procs[0].poll() is not None, 30) or not os.path.exists(msock):
        mlog.flush()
        with open(os.path.join(tmp, "log", "munged.out"), encoding="utf-8") as f:
            print(f.read()[-1000:])
        skip("munged refused to start")

    ctld_port, d_port = free_ports(2)
    with open(os.path.join(tmp, "plugstack.conf"), "w", encoding="utf-8"):
        pass  # empty: not /etc/slurm/plugstack.conf's SPANK plugins
    with open(conf, "w", encoding="utf-8") as f:
        f.write(f"""ClusterName=gidpolicytest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={msock}
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/log/slurmctld.log
SlurmdLogFile={tmp}/log/slurmd.log
PlugStackConfig={tmp}/plugstack.conf
TmpFS={tmp}/pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=100 State=UNKNOWN
PartitionName=gidpolicy Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
""")
    # (CPUs=4 with config_overrides: 4 tasks on however few cores the machine has.)
    env = dict(os.environ, SLURM_CONF=conf, TMPDIR=os.path.join(tmp, "pmix"))
    for name, cmd in (("slurmctld", [tools["slurmctld"], "-D", "-i", "-f", conf]),
                      ("slurmd", [tools["slurmd"], "-D", "-f", conf, "-N", host])):
        out = open(os.path.join(tmp, "log", name + ".out"), "w", encoding="utf-8")
        procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))

    def idle():
        if any(p.poll() is not None for p in procs):
            return True
        s = subprocess.run([tools["sinfo"], "-h", "-o", "%t", "-n", host], env=env, capture_output=True, text=True,
                           timeout=30)
        return s.stdout.strip() == "idle"

    if not wait_for(idle, 60) or any(p.poll() is not None for p in procs):
        for name in ("slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"):
            path = os.path.join(tmp, "log", name)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    print(f"--- {name}\n{f.read()[-1500:]}")
        skip("the private slurmctld/slurmd refused to start or the node never came up idle")

    paths = []
    for r in range(4):
        p = os.path.join(tmp, f"rank{r}.json")
        with open(p, "w", encoding="utf-8") as f:
            json.dump(table(r, r != 2), f)
        paths.append(p)
    # Each rank's table by SLURM_PROCID, the rank srun gives (equal to the MPI rank under PMIx).
    wrapper = os.path.join(tmp, "rank.sh")
    with open(wrapper, "w", encoding="utf-8") as f:
        f.write('#!/bin/sh\nset -- $TABLES_BY_RANK\nshift "$RANK"\n'
                'GIDPOLICY_FAKE_TABLES=$1 exec "$PROBE_MPI" --topology mesh --profile ds4:index=2 '
                '--attempt-deadline 60 --json\n')
    os.chmod(wrapper, 0o755)
    # The MPI transport kept on TCP over lo, as under mpirun (probe_mpi.py).
    jenv = dict(env, LD_LIBRARY_PATH=LIB, TABLES_BY_RANK=" ".join(paths), PROBE_MPI=PROBE_MPI,
                OMPI_MCA_pml="ob1", OMPI_MCA_btl="self,tcp", OMPI_MCA_btl_tcp_if_include="lo")
    srun_wrapper = os.path.join(tmp, "srun_rank.sh")
    with open(srun_wrapper, "w", encoding="utf-8") as f:
        f.write(f'#!/bin/sh\nRANK="$SLURM_PROCID" exec {wrapper}\n')
    os.chmod(srun_wrapper, 0o755)
    t0 = time.monotonic()
    p = subprocess.run([tools["srun"], "--mpi=pmix", "-N", "1", "-n", "4", "--oversubscribe", "--kill-on-bad-exit=0",
                        srun_wrapper], capture_output=True, text=True, env=jenv, timeout=GUARD)
    print(f"srun: {time.monotonic() - t0:.1f} s, exit {p.returncode}")
    try:
        jdoc = json.loads(p.stdout)
    except json.JSONDecodeError:
        jdoc = None
    check(p.returncode != 0, f"srun exit {p.returncode}: a failed link is a failure")
    check(jdoc is not None, f"srun --json: one document: {p.stdout[:300]!r} {p.stderr[-800:]!r}")
    links = links_of(jdoc) if jdoc is not None else {}
    if jdoc is not None:
        print(json.dumps({"ranks": jdoc.get("ranks"), "connected": jdoc.get("connected"),
                          "failed": jdoc.get("failed"), "links": sorted(links.items())}))
        check(jdoc.get("ranks") == 4, f"4 ranks under srun: {jdoc.get('ranks')}")
        check(len(links) == 6, f"6 links, found {len(links)}")
        failed = sorted(k for k, ok in links.items() if not ok)
        check(failed == [(0, 2), (1, 2), (2, 3)], f"exactly rank 2's links failed: {failed}")

    # The same tables under mpirun (OMPI_COMM_WORLD_RANK picks the table): the same verdicts.
    if shutil.which("mpirun"):
        mpi_wrapper = os.path.join(tmp, "mpirun_rank.sh")
        with open(mpi_wrapper, "w", encoding="utf-8") as f:
            f.write(f'#!/bin/sh\nRANK="$OMPI_COMM_WORLD_RANK" exec {wrapper}\n')
        os.chmod(mpi_wrapper, 0o755)
        m = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", "--mca", "pml", "ob1",
                            "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "-x", "LD_LIBRARY_PATH",
                            "-x", "TABLES_BY_RANK", "-x", "PROBE_MPI", mpi_wrapper],
                           capture_output=True, text=True, env=dict(os.environ, **{k: jenv[k] for k in (
                               "LD_LIBRARY_PATH", "TABLES_BY_RANK", "PROBE_MPI")}), timeout=GUARD)
        try:
            mlinks = links_of(json.loads(m.stdout))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            mlinks = None
        check(mlinks == links, f"mpirun agrees link for link: mpirun {mlinks}, srun {links}")
    else:
        print("mpirun comparison not run: no mpirun (Debian openmpi-bin)")

    # The same tables through `gidpolicy fleet` (one `show --json` snapshot per host).
    snaps = []
    for r, t in enumerate(paths):
        s = subprocess.run([CLI, "show", "--json", "--input", t], capture_output=True, text=True, timeout=GUARD)
        sp = os.path.join(tmp, f"snap{r}.json")
        with open(sp, "w", encoding="utf-8") as f:
            f.write(s.stdout)
        snaps.append(f"r{r}={sp}")
    fl = subprocess.run([CLI, "fleet", "--json", "--all-links", "--profile", "ds4:index=2"] + snaps,
                        capture_output=True, text=True, timeout=GUARD)
    doc = json.loads(fl.stdout)
    fleet = {(int(l["a"][1:]), int(l["b"][1:])): l["connected"] for l in doc["links_detail"]}
    check(fleet == links, f"fleet agrees link for link: fleet {fleet}, srun {links}")
finally:
    stop(procs, conf)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"whole run (daemons up to down): {time.monotonic() - started:.1f} s")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
