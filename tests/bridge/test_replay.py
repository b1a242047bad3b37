"""End to end on real torch jobs (CPU, gloo): record a schedule, replay it, measure."""

from __future__ import annotations

import json

import pytest

from mtgym.bridge.calibrate import job_rows, read_calibration
from mtgym.bridge.cli import main
from mtgym.bridge.record import record_episode
from mtgym.bridge.trace import read_trace
from mtgym.core.types import AppClass
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.readers import read_bftrainer_jobs
from mtgym.scenario.registry import get_generator
from mtgym.testing import ScriptPolicy, linear_job, tiny_instance


def one_two_one_trace(path):
    """Two jobs on two nodes (node 2 only creates decision events), each 1 -> 2 -> 1:

    [0, 100): a 1, b 1 | [100, 200): a 2 | [200, 300): b 2 | 300: b's second node is
    reclaimed (b 1) | 310: the node is back, a 1 | end 400.
    At most two workers run at once: this machine has two cores, and the model (linear)
    says two nodes beat one, which only holds when the workers do not share a core.
    """
    rows = [
        linear_job("a", 100, 2, 1e9, app_class=AppClass.A),
        linear_job("b", 100, 2, 1e9, app_class=AppClass.A),
    ]
    windows = [(0, 0, 400), (1, 0, 300), (1, 310, 400), (2, 100, 150), (2, 200, 250)]
    inst = tiny_instance(3, rows, windows=windows, t_end=400)
    plan = [(0, {0: 0, 1: 1}), (100, {0: 0, 1: 0}), (200, {0: 1, 1: 1}), (300, {0: 1, 1: 0})]
    record_episode(inst, ScriptPolicy(plan), path, scenario="one-two-one", seed=0)
    return read_trace(path)


@pytest.mark.slow
@pytest.mark.serial  # measures real scaling: needs the cores to itself (see the Makefile)
def test_replay__two_jobs_one_two_one(bridge_dir):
    trace_path = bridge_dir / "trace.jsonl"
    tr = one_two_one_trace(trace_path)
    assert [w for _, w in tr.world_sizes("0")] == [1, 2, 0, 1]
    assert [w for _, w in tr.world_sizes("1")] == [1, 0, 2, 1]
    out = bridge_dir / "run"
    rc = main(
        [
            "replay",
            str(trace_path),
            "--out",
            str(out),
            "--time-scale",
            "6",
            "--reclaim-deadline",
            "10",
            "--quiet",
        ]
    )
    assert rc == 0
    for name in (
        "report.md",
        "report.json",
        "calibration.json",
        "calibration.csv",
        "calibrated-scenario.json",
        "measurements.json",
        "events.jsonl",
        "trace.jsonl",
        "replay.json",
    ):
        assert (out / name).is_file(), name
    rep = json.loads((out / "report.json").read_text())
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    for j in ("0", "1"):
        jb = rep["jobs"][j]
        # the trace's world sizes were replayed, in order
        sizes = [e["world_size"] for e in events if e.get("job") == j and e["event"] == "start"]
        assert sizes == [1, 2, 1], (j, sizes)
        # a non-empty measured table, monotone where the model says so
        ws = jb["world_sizes"]
        assert set(ws) == {"1", "2"}, (j, ws.keys())
        assert all(w["measured"] > 0 and w["intervals"] >= 5 for w in ws.values())
        assert ws["2"]["predicted_speedup"] == pytest.approx(2.0)
        assert jb["monotone_violations"] == [], jb["monotone_violations"]
        assert ws["2"]["measured"] > ws["1"]["measured"] * 0.95
        # rescale costs were measured (checkpoint, stop, restart: seconds); a grows 1 -> 2
        # then stops, b stops then starts at 2 and shrinks 2 -> 1: starts from 0 for both
        kind = {"0": "up", "1": "down"}[j]
        assert len(jb["rescale"][kind]["measured_s"]) == 1
        assert len(jb["rescale"]["start"]["measured_s"]) == 2
        costs = [c for k in ("up", "down", "start") for c in jb["rescale"][k]["measured_s"]]
        assert all(0 < c < 60 for c in costs)
        assert jb["crashes"] == 0 and jb["redone_steps"] == 0
        # the step never goes backwards; no committed step is lost across the restarts
        recs = [
            json.loads(x) for x in (out / "jobs" / j / "progress.jsonl").read_text().splitlines()
        ]
        steps = [r["step"] for r in recs if r["event"] == "step"]
        assert steps == list(range(1, len(steps) + 1))
        committed = 0
        for r in recs:
            if r["event"] == "ckpt":
                assert r["step"] >= committed
                committed = r["step"]
            if r["event"] == "start":
                assert r["step"] == committed  # resumed exactly at the last commit
    # job 1 lost its second node to a reclaim: shrunk within the deadline
    rec = rep["jobs"]["1"]["reclaims"]
    assert len(rec) == 1 and rec[0]["deadline_met"] is True and rec[0]["release_s"] <= 10
    assert rep["totals"]["measured_samples"] > 0
    assert rep["totals"]["predicted_samples"] is not None
    # the calibration closes the loop: the simulator runs the measured jobs
    cal = read_calibration(out / "calibration.json")
    for j in ("0", "1"):
        e = cal["jobs"][j]
        assert e["curve_nodes"] == [0.0, 1.0, 2.0] and min(e["curve_tput"][1:]) > 0
        assert e["cost_source"]["startup_s"] == "measured"
    assert cal["jobs"]["0"]["cost_source"]["r_up_s"] == "measured"
    assert cal["jobs"]["1"]["cost_source"]["r_down_s"] == "measured"
    rows = job_rows(cal)
    res = play(tiny_instance(2, rows, t_end=60.0), make_policy("equal-share"))
    assert res.metrics.as_dict()["samples"] > 0
    assert len(read_bftrainer_jobs(out / "calibration.csv")) == 2
    scen = get_generator(str(out / "calibrated-scenario.json"))(0)
    assert scen.num_jobs == 2 and play(scen, make_policy("equal-share")).metrics
    md = (out / "report.md").read_text()
    assert "| 1 | 1 |" in md and "| 2 | 2 |" in md and "reclaim" in md
