"""The scavenger against a real Slurm (Debian's slurm-wlm, 4 fake nodes on 127.0.0.1).

Drains, resumes, ``sbatch`` jobs, reservations, a pre-empted ``srun`` step, a killed
``slurmd`` and a stopped ``slurmctld``; every daemon and ``srun`` is stopped by PID.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mtgym.bridge.launcher import pid_alive
from mtgym.policy.equal_share import EqualShare
from mtgym.scavenger.launch import ReportLauncher, SlurmStepLauncher, TokenSlurmLauncher
from mtgym.scavenger.loop import Scavenger
from mtgym.scavenger.slurm import Backoff, SlurmClient, SlurmError
from mtgym.scavenger.source import SlurmSupply
from mtgym.scavenger.testing import LocalSlurm
from mtgym.testing.kit import linear_job, tiny_instance

pytestmark = pytest.mark.slow


def make_client(cluster: LocalSlurm, **kw) -> SlurmClient:
    kw.setdefault("backoff", Backoff(attempts=2, base_s=0.2, seed=0))
    return SlurmClient(env=cluster.env, timeout_s=kw.pop("timeout_s", 5.0), **kw)


def poll_until(sup: SlurmSupply, pred, timeout_s: float, period_s: float = 0.5):
    """Poll every ``period_s`` until ``pred(events)`` holds; returns (events, seconds)."""
    t0 = time.monotonic()
    seen = []
    while time.monotonic() - t0 < timeout_s:
        seen += sup.poll()
        if pred(seen):
            return seen, time.monotonic() - t0
        time.sleep(period_s)
    raise AssertionError(f"no matching event in {timeout_s} s; saw {seen}")


def kinds(events, kind):
    return {(e.name, e.reason) for e in events if e.kind == kind}


def two_jobs():
    return tiny_instance(4, [linear_job("a", 10.0, 2, 1e9), linear_job("b", 10.0, 2, 1e9)])


def report_scavenger(cluster: LocalSlurm, out: Path, token: str):
    """A report-only scavenger of the two jobs, opened and stepped once."""
    sup = SlurmSupply(make_client(cluster), partition="scav", own_prefix=f"mtgym-{token}-")
    launcher = ReportLauncher(TokenSlurmLauncher(token=token))
    scav = Scavenger(sup, EqualShare(), two_jobs(), launcher, out)
    scav.open()
    scav.step()
    return sup, scav


def test_drain_resume_sbatch_and_reservations_are_supply_events(slurm: LocalSlurm):
    sup = SlurmSupply(make_client(slurm), partition="scav", margin_s=30)
    ev = sup.poll()
    assert kinds(ev, "appear") == {(n, "idle") for n in slurm.node_names}
    assert sup.nodes["n1"].gpus == 2 and sup.nodes["n1"].gpu_type == "a100"
    # drain -> reclaim, resume -> appear: both on the next poll
    slurm.drain("n3", "owner_reclaim")
    assert kinds(sup.poll(), "reclaim") == {("n3", "drain")}
    slurm.resume("n3")  # Slurm pings it first: `idle*` for about a second, then idle
    _, dt = poll_until(sup, lambda e: ("n3", "idle") in kinds(e, "appear"), 6)
    print(f"resumed node lendable after {dt:.2f} s")
    # a host job: reclaim within one scheduler pass (sched_interval 2 s)
    jid = slurm.sbatch("-p", "main", "-w", "n2", "--wrap", "sleep 30")
    _, dt = poll_until(sup, lambda e: ("n2", f"alloc by job {jid}") in kinds(e, "reclaim"), 6)
    assert dt < 6
    # a reservation in 10 min: the end becomes known; one in 20 s (< margin): reclaimed
    slurm.scontrol(
        "create", "reservation", "reservationname=later", "starttime=now+600",
        "duration=10", "nodes=n4", "users=root",
    )  # fmt: skip
    ev = sup.poll()
    (e,) = [e for e in ev if e.kind == "end_known"]
    assert e.name == "n4" and 590 < e.known_end - time.time() < 610
    slurm.scontrol(
        "create", "reservation", "reservationname=soon", "starttime=now+20",
        "duration=10", "nodes=n1", "users=root",
    )  # fmt: skip
    assert kinds(sup.poll(), "reclaim") == {("n1", "needed soon")}
    assert set(sup.lendable) == {sup.index["n3"], sup.index["n4"]}


def test_lent_node_drained_is_released_within_one_poll(slurm: LocalSlurm, tmp_path: Path):
    _, scav = report_scavenger(slurm, tmp_path, "t")
    held = scav.holdings()
    assert sum(len(v) for v in held.values()) == 4
    slurm.drain("n2")
    scav.step()  # the very next poll releases it (scripts/bench_scavenger.py times this)
    assert all("n2" not in v for v in scav.holdings().values())
    scav.close()


def _our_jobs(slurm: LocalSlurm, prefix: str) -> dict[str, tuple[str, str]]:
    out = slurm.run(["squeue", "-h", "-o", "%j|%T|%N"]).stdout.splitlines()
    return {f[0]: (f[1], f[2]) for f in (x.split("|") for x in out) if f[0].startswith(prefix)}


def test_srun_steps_preempted_or_drained_are_released(slurm: LocalSlurm, tmp_path: Path):
    """Real ``srun`` generations on the lent nodes (a ``sleep`` per task): Slurm pre-empts
    one for a host job and drains another; the scavenger releases both within one poll.
    """
    client = make_client(slurm)
    slurm_l = TokenSlurmLauncher(token="live", partition="scav", command=("sleep", "300"))
    launcher = SlurmStepLauncher(slurm_l, client, graceful_s=2.0, exit_s=10.0)
    sup = SlurmSupply(client, partition="scav", own_prefix=slurm_l.own_prefix)
    scav = Scavenger(sup, EqualShare(), two_jobs(), launcher, tmp_path, poll_s=1.0)
    procs = []
    try:
        scav.open()
        t_launch = time.monotonic()
        scav.step()
        procs = [s.proc for s in launcher.steps]
        assert len(procs) == 2
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            jobs = _our_jobs(slurm, slurm_l.own_prefix)
            if len(jobs) == 2 and all(s == "RUNNING" for s, _ in jobs.values()):
                break
            time.sleep(0.2)
        t_running = time.monotonic() - t_launch
        assert all(s == "RUNNING" for s, _ in _our_jobs(slurm, slurm_l.own_prefix).values())
        # our own steps keep their nodes lendable: no reclaim
        assert [e for e in scav.step() if e.kind == "reclaim"] == []
        assert sum(len(v) for v in scav.holdings().values()) == 4
        # the host submits to the high-priority partition: Slurm cancels our step on n3
        victim = next(j for j, v in scav.holdings().items() if "n3" in v)
        jid = slurm.sbatch("-p", "main", "-w", "n3", "--wrap", "sleep 30")
        deadline = time.monotonic() + 15
        released = None
        while time.monotonic() < deadline and released is None:
            time.sleep(1.0)
            scav.step()
            if all("n3" not in v for v in scav.holdings().values()):
                released = time.monotonic()
        assert released is not None, "the pre-empted node was not released"
        fg = slurm.run(["squeue", "-h", "-j", jid, "-o", "%T"]).stdout.strip()
        assert fg == "RUNNING"
        # drain a node held by a running step: released on the next poll, step cancelled
        held = scav.holdings()
        node = next(n for v in held.values() for n in v)
        slurm.drain(node, "maintenance")
        scav.step()
        assert all(node not in v for v in scav.holdings().values())
        lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
        rel = [e for e in lines if e["event"] == "release"]
        assert rel[0]["job"] == victim and "n3" in rel[0]["nodes"] and rel[0]["why"] == "reclaim"
        assert all(e["release_s"] < 10 for e in rel)
        print(
            f"srun steps RUNNING {t_running:.2f} s after launch; releases {[e['release_s'] for e in rel]}"
        )
    finally:
        scav.close()
    assert not any(pid_alive(p.pid) for p in procs), "srun left running"
    left = _our_jobs(slurm, slurm_l.own_prefix)
    deadline = time.monotonic() + 15  # Slurm's epilogue (KillWait 2 s), then the job is gone
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = _our_jobs(slurm, slurm_l.own_prefix)
    assert left == {}


def test_killed_slurmd_is_not_lent_and_is_released(slurm: LocalSlurm, tmp_path: Path):
    sup, scav = report_scavenger(slurm, tmp_path, "k")
    assert any("n4" in v for v in scav.holdings().values())
    slurm.kill_slurmd("n4")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 40:
        time.sleep(1.0)
        scav.step()
        if all("n4" not in v for v in scav.holdings().values()):
            break
    assert all("n4" not in v for v in scav.holdings().values())
    assert sup.verdicts["n4"].reason in ("not_responding", "down")
    print(f"killed slurmd noticed after {time.monotonic() - t0:.1f} s")
    scav.step()
    assert sup.index["n4"] not in sup.lendable
    scav.close()


def test_slurm_unreachable_clear_error_retries_and_nothing_kept(need_slurm, tmp_path: Path):
    cluster = LocalSlurm(num_nodes=2)
    try:
        cluster.start()
        client = make_client(cluster, timeout_s=2.0)
        sup = SlurmSupply(client, partition="scav", own_prefix="mtgym-u-")
        inst = tiny_instance(2, [linear_job("a", 10.0, 2, 1e9)])
        scav = Scavenger(
            sup, EqualShare(), inst, ReportLauncher(TokenSlurmLauncher(token="u")), tmp_path
        )
        scav.open()
        scav.step()
        assert scav.holdings() == {0: ["n1", "n2"]}
        cluster.stop_ctl()
        t = time.monotonic()
        scav.step()
        took = time.monotonic() - t
        assert scav.holdings() == {}
        assert isinstance(sup.error, SlurmError) and "sinfo" in str(sup.error)
        # two attempts cut at 2 s + one back-off; without the timeout sinfo alone takes
        # about 9 s per attempt to give up (generous bound: the CI runner is shared)
        assert took < 16.0
        scav.close()
        lines = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
        assert [e["event"] for e in lines].count("retry") == 1
        assert any(e["event"] == "release" and e["why"] == "reclaim" for e in lines)
        # the CLI on an unreachable Slurm: a clear error, exit status 2
        env = {**cluster.env, "PATH": os.environ["PATH"]}
        p = subprocess.run(
            [sys.executable, "-m", "mtgym", "scavenge", "--slurm", "--timeout", "1",
             "--retries", "1", "--backoff", "0.1", "--out", str(tmp_path / "cli")],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert p.returncode == 2
        assert "error: slurm command `sinfo" in p.stderr and "after 2 attempts" in p.stderr
    finally:
        cluster.stop()
    assert cluster.pids() == []


def test_cli_end_to_end_lends_and_releases_a_drained_node(slurm: LocalSlurm, tmp_path: Path):
    out = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "mtgym", "scavenge", "--slurm", "--partition", "scav",
        "--policy", "equal-share", "--scenario", "default", "--max-jobs", "2",
        "--poll", "1", "--duration", "7", "--out", str(out),
    ]  # fmt: skip
    p = subprocess.Popen(cmd, env=slurm.env, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(3.5)
        slurm.drain("n1", "owner")
        stdout, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, stdout
    lines = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    launches = [e for e in lines if e["event"] == "launch"]
    assert launches and any("n1" in e["nodes"] for e in launches)
    rec = [e for e in lines if e["event"] == "node_reclaim" and e["name"] == "n1"]
    assert rec and rec[0]["reason"] == "drain"
    rel = [e for e in lines if e["event"] == "release" and e["why"] == "reclaim"]
    assert rel and "n1" in rel[0]["nodes"] and rel[0]["rel"] - rec[0]["rel"] < 5.0
    last_poll = [e for e in lines if e["event"] == "poll"][-1]
    assert all("n1" not in v for v in last_poll["lent"].values())
    assert "node n1" in stdout and "reclaim" in stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reclaims_released"] >= 1
