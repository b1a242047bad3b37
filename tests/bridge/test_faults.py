"""Faults on real torch jobs: a killed worker, a corrupt checkpoint, a forced reclaim."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time

import pytest
from bridge_helpers import alive

from mtgym.bridge import checkpoint as ck
from mtgym.bridge.controller import ReplayConfig, replay
from mtgym.bridge.launcher import JobSpec, LocalLauncher
from mtgym.bridge.record import trace_header
from mtgym.bridge.trace import Trace, TraceEvent, write_trace
from mtgym.testing import linear_job, tiny_instance


def progress(job_dir):
    p = job_dir / "progress.jsonl"
    if not p.exists():
        return []
    out = []
    for line in p.read_text().splitlines():
        with contextlib.suppress(ValueError):  # a line torn by the kill
            out.append(json.loads(line))
    return out


def wait_for(cond, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def check_progress_invariants(recs):
    """Committed steps never go back; every (re)start resumes at or after the last commit;
    new (not redone) steps strictly increase: the global step never goes backwards."""
    committed = 0
    last_new = 0
    for r in recs:
        if r["event"] == "ckpt":
            assert r["step"] >= committed
            committed = r["step"]
        elif r["event"] == "start":
            assert r["step"] >= committed, (r, committed)  # no committed step lost
            committed = r["step"]
        elif r["event"] == "step" and not r["redo"]:
            assert r["step"] == last_new + 1, (r, last_new)
            last_new = r["step"]


@pytest.mark.slow
def test_fault__killed_worker_and_corrupt_checkpoint(bridge_dir):
    """torchrun path: SIGKILL one worker mid-run, restart, corrupt the newest checkpoint."""
    launcher = LocalLauncher(launch="torchrun")
    jd = bridge_dir / "jobs" / "0"
    spec = JobSpec("0", jd, model="cnn", dp="allreduce", ckpt_every=10, sync_every=1)
    g0 = launcher.start(spec, [0, 1], 0)
    try:
        wait_for(lambda: sum(r["event"] == "ckpt" for r in progress(jd)) >= 2, 120, "2 commits")
        wait_for(lambda: len(launcher.worker_pids(g0)) == 2, 10, "worker pids")
        victim = launcher.worker_pids(g0)[-1]
        os.kill(victim, signal.SIGKILL)
        assert launcher.wait(g0, 30) not in (None, 0)  # the agent reports the failure
        res = launcher.stop(g0, graceful_s=0.0)
        assert not res.leftover_pids and not alive(victim)
        before = progress(jd)
        committed = max(r["step"] for r in before if r["event"] == "ckpt")
        last_step = max(r["step"] for r in before if r["event"] == "step")

        g1 = launcher.start(spec, [0, 1], 1)
        wait_for(
            lambda: any(
                r["event"] == "step" and r["gen"] == 1 and not r["redo"] for r in progress(jd)
            ),
            120,
            "new steps after the restart",
        )
        res = launcher.stop(g1, graceful_s=30.0)
        assert res.graceful and res.reported_stop and not res.leftover_pids
        recs = progress(jd)
        start1 = next(r for r in recs if r["event"] == "start" and r["gen"] == 1)
        assert start1["step"] >= committed  # no committed step lost
        assert ck.checkpoint_path(jd / "ckpt", start1["step"]).exists() or start1["step"] in {
            r["step"] for r in recs if r["event"] == "ckpt"
        }
        redo = [r["step"] for r in recs if r["event"] == "step" and r["gen"] == 1 and r["redo"]]
        assert redo == list(range(start1["step"] + 1, last_step + 1))  # redone, flagged
        check_progress_invariants(recs)

        # a torn newest checkpoint is never loaded: the previous good one is used
        newest, prev = ck.list_checkpoints(jd / "ckpt")[:2]
        data = newest.path.read_bytes()
        newest.path.write_bytes(data[: len(data) // 3])
        g2 = launcher.start(spec, [0], 2)
        wait_for(
            lambda: any(r["event"] == "start" and r["gen"] == 2 for r in progress(jd)),
            120,
            "generation 2",
        )
        res = launcher.stop(g2, graceful_s=30.0)
        assert res.graceful
        recs = progress(jd)
        start2 = next(r for r in recs if r["event"] == "start" and r["gen"] == 2)
        assert start2["step"] == prev.step and start2["world_size"] == 1
        bad = [r for r in recs if r["event"] == "ckpt_invalid" and r["gen"] == 2]
        assert len(bad) == 1 and bad[0]["path"].endswith(newest.path.name)
        assert "truncated" in bad[0]["reason"]
    finally:
        for g in [x for x in ("g0", "g1", "g2") if x in locals()]:
            launcher.kill(locals()[g], term_grace_s=1.0)


@pytest.mark.slow
def test_fault__replay_recovers_a_crash_and_forces_a_reclaim(bridge_dir):
    """Controller: a worker killed mid-replay is restarted from its last checkpoint; a
    reclaim on a job that ignores stop requests is forced within the deadline."""
    inst = tiny_instance(2, [linear_job("a", 100, 2, 1e9)], t_end=200)
    h = trace_header(inst, scenario="fault", policy="hand", seed=0)
    evs = [
        TraceEvent(0.0, "0", (0, 1), rate=200.0),
        TraceEvent(150.0, "0", (0,), "reclaim", rate=100.0),
    ]
    trace = Trace(h, evs, 200.0)
    write_trace(bridge_dir / "t.jsonl", trace)
    deadline = 6.0
    cfg = ReplayConfig(
        time_scale=5.0,
        reclaim_deadline_s=deadline,
        stop_timeout_s=4.0,
        term_grace_s=1.5,
        dp="allreduce",
        model="cnn",
        ckpt_every=10,
        sync_every=1,
        worker_args={"0": ["--ignore-stop"]},
    )
    jd = bridge_dir / "run" / "jobs" / "0"
    killed: list[int] = []

    def inject(t_sim, drivers):
        cur = drivers["0"].current
        if killed or cur is None or cur.gen != 0 or t_sim > 140:
            return
        if any(r["event"] == "ckpt" for r in progress(jd)):
            pids = drivers["0"].launcher.worker_pids(cur)
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

    replay(bridge_dir / "t.jsonl", bridge_dir / "run", cfg, hooks=inject)
    assert killed, "the worker was never killed (job too slow to checkpoint?)"
    events = [json.loads(x) for x in (bridge_dir / "run" / "events.jsonl").read_text().splitlines()]
    kinds = [e["event"] for e in events if e.get("job") == "0"]
    assert "crash" in kinds and "restart" in kinds
    assert kinds.index("crash") < kinds.index("restart")
    stops = [e for e in events if e["event"] == "stopped" and e.get("reclaim")]
    assert len(stops) == 1
    st = stops[0]
    # the job ignored the stop file: it was signalled, and released in time anyway
    assert st["signalled"] in ("SIGTERM", "SIGKILL") and not st["reported_stop"]
    assert st["deadline_met"] is True and st["release_s"] <= deadline
    assert not st["leftover_pids"]
    recs = progress(jd)
    check_progress_invariants(recs)
    gens = [r for r in recs if r["event"] == "start"]
    assert [g["world_size"] for g in gens][:2] == [2, 2]  # restarted at the same size
    assert gens[-1]["world_size"] == 1 or len(gens) == 2
    assert not alive(killed[0])
