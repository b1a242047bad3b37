"""Measurement, calibration and report on a synthetic replay folder (fast, exact)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mtgym.bridge.calibrate import (
    calibrate,
    job_rows,
    rate,
    read_calibration,
    write_bftrainer_csv,
    write_calibration,
    write_scenario,
)
from mtgym.bridge.measure import MeasureOptions, measure_job, measure_replay
from mtgym.bridge.predict import from_calibration, simulate_replay
from mtgym.bridge.record import trace_header
from mtgym.bridge.report import build_report, check_monotone, write_report
from mtgym.bridge.trace import Trace, TraceEvent, write_trace
from mtgym.core.errors import DataError
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.readers import read_bftrainer_jobs
from mtgym.scenario.registry import get_generator
from mtgym.testing import linear_job, tiny_instance

T0 = 1000.0


def _steps(t_first, t_last, dt, batch, ws, gen, step0, samples0):
    out, t, step, samples = [], t_first, step0, samples0
    while t <= t_last + 1e-9:
        step += 1
        samples += batch
        out.append(
            {
                "event": "step",
                "t": round(t, 6),
                "step": step,
                "world_size": ws,
                "samples": samples,
                "batch": batch,
                "gen": gen,
                "redo": False,
            }
        )
        t += dt
    return out, step, samples


def fake_replay(folder, *, second_job=True):
    """Job 0: 1 node (0.1 s/step, 64 samples) on [1000, 1010), 2 nodes (0.08 s, 128) on
    [1010, 1020), 1 node on [1020, 1030); restarts take about 2.7 s."""
    rows = [linear_job("a", 100, 2, 1e9), linear_job("b", 50, 2, 1e9)]
    inst = tiny_instance(2, rows, t_end=300)
    h = trace_header(inst, scenario="tiny", policy="script", seed=0)
    evs = [
        TraceEvent(0.0, "0", (0,), rate=100.0),
        TraceEvent(100.0, "0", (0, 1), rate=200.0),
        TraceEvent(200.0, "0", (0,), "reclaim", rate=100.0),
    ]
    if second_job:
        evs.insert(1, TraceEvent(0.0, "1", (1,), rate=50.0))
        evs.insert(2, TraceEvent(100.0, "1", (), rate=0.0))
    else:
        del h.jobs["1"]
    write_trace(folder / "trace.jsonl", Trace(h, evs, 300.0))
    meta = {
        "config": {"time_scale": 10.0, "max_world_size": None},
        "t0_wall": T0,
        "sim0": 0.0,
        "t_end_wall": T0 + 30,
        "workers_per_node": 1,
        "jobs": {"0": {"name": "a", "model": "cnn", "job_dir": "jobs/0"}},
    }
    if second_job:
        meta["jobs"]["1"] = {"name": "b", "model": "cnn", "job_dir": "jobs/1"}
    (folder / "replay.json").write_text(json.dumps(meta))
    ev = [
        {"t": T0, "job": "0", "event": "start", "gen": 0, "world_size": 1, "after_stop": False},
        {"t": T0 + 10, "job": "0", "event": "stop_request", "gen": 0},
        {
            "t": T0 + 10.5,
            "job": "0",
            "event": "stopped",
            "gen": 0,
            "latency_s": 0.5,
            "reclaim": False,
            "signalled": "",
        },
        {
            "t": T0 + 10.5,
            "job": "0",
            "event": "start",
            "gen": 1,
            "world_size": 2,
            "after_stop": True,
        },
        {"t": T0 + 20, "job": "0", "event": "stop_request", "gen": 1},
        {
            "t": T0 + 20.6,
            "job": "0",
            "event": "stopped",
            "gen": 1,
            "latency_s": 0.6,
            "reclaim": True,
            "deadline_met": True,
            "release_s": 0.6,
            "signalled": "",
        },
        {
            "t": T0 + 20.6,
            "job": "0",
            "event": "start",
            "gen": 2,
            "world_size": 1,
            "after_stop": True,
        },
        {"t": T0 + 30, "job": "0", "event": "stop_request", "gen": 2},
        {
            "t": T0 + 30.4,
            "job": "0",
            "event": "stopped",
            "gen": 2,
            "latency_s": 0.4,
            "reclaim": False,
            "signalled": "",
        },
    ]
    recs = [{"event": "start", "t": T0 + 1.9, "gen": 0, "step": 0}]
    s0, st, sm = _steps(T0 + 2.0, T0 + 10.2, 0.1, 64, 1, 0, 0, 0)
    recs += [*s0, {"event": "ckpt", "t": T0 + 10.25, "step": st}]
    s1, st, sm = _steps(T0 + 13.0, T0 + 20.3, 0.08, 128, 2, 1, st, sm)
    recs += [*s1, {"event": "ckpt", "t": T0 + 20.35, "step": st}]
    s2, st, sm = _steps(T0 + 23.0, T0 + 30.2, 0.1, 64, 1, 2, st, sm)
    recs += s2
    (folder / "jobs" / "0").mkdir(parents=True)
    (folder / "jobs" / "0" / "progress.jsonl").write_text(
        "\n".join(json.dumps(r) for r in recs) + '\n{"event": "st'  # a torn last line
    )
    if second_job:
        ev += [
            {"t": T0, "job": "1", "event": "start", "gen": 0, "world_size": 1, "after_stop": False},
            {"t": T0 + 10, "job": "1", "event": "stop_request", "gen": 0},
            {"t": T0 + 10.3, "job": "1", "event": "stopped", "gen": 0, "latency_s": 0.3},
        ]
        b, _, _ = _steps(T0 + 1.5, T0 + 10.1, 0.2, 64, 1, 0, 0, 0)
        (folder / "jobs" / "1").mkdir(parents=True)
        (folder / "jobs" / "1" / "progress.jsonl").write_text(
            "\n".join(json.dumps(r) for r in b) + "\n"
        )
    (folder / "events.jsonl").write_text("\n".join(json.dumps(e) for e in ev) + "\n")
    return folder


def test_measure__throughput_and_rescale_costs(tmp_path):
    m = measure_replay(fake_replay(tmp_path), exclude_foreign=False)
    jm = m.jobs["0"]
    assert jm.bad_lines == 1  # the torn tail is skipped, not fatal
    assert jm.throughput[1].samples_per_s == pytest.approx(640.0, rel=1e-6)
    assert jm.throughput[2].samples_per_s == pytest.approx(1600.0, rel=1e-6)
    assert jm.throughput[1].generations == [0, 2]
    kinds = [t.kind for t in jm.transitions]
    assert kinds == ["start", "up", "down"]
    start, up, down = jm.transitions
    assert start.cost_s == pytest.approx(2.0 - 0.1, abs=1e-6)
    assert up.cost_s == pytest.approx((13.0 - 10.2) - 0.08, abs=1e-6)
    assert down.cost_s == pytest.approx((23.0 - 20.28) - 0.1, abs=1e-6)  # last step 20.28
    assert down.reclaim and down.deadline_met and not up.reclaim
    # useful samples by the end of the trace (T0 + 30): 83 + 92 + 71 steps
    assert jm.total_samples == 83 * 64 + 92 * 128 + 71 * 64
    assert jm.committed_steps == [83, 175]


def test_measure__foreign_restarts_are_left_out(tmp_path):
    folder = fake_replay(tmp_path)
    # job 1 restarts around T0 + 10: job 0's iterations near it are not steady state
    m = measure_replay(folder, exclude_foreign=True)
    t = m.jobs["0"].throughput[1]
    assert t.samples_per_s == pytest.approx(640.0, rel=1e-6)
    full = measure_replay(folder, exclude_foreign=False).jobs["0"].throughput[1]
    assert t.seconds < full.seconds


def test_measure__crash_restart_and_redo():
    recs, _, _ = _steps(1.0, 2.0, 0.1, 64, 1, 0, 0, 0)  # steps 1..11, killed after 11
    recs.append({"event": "ckpt", "t": 1.55, "step": 6})
    redo, _, _ = _steps(5.0, 5.4, 0.1, 64, 1, 1, 6, 6 * 64)  # 7..11 again
    for r in redo:
        r["redo"] = True
    new, _, _ = _steps(5.5, 6.5, 0.1, 64, 1, 1, 11, 11 * 64)
    events = [
        {"t": 0.0, "event": "start", "gen": 0, "world_size": 1},
        {"t": 2.5, "event": "crash", "gen": 0, "rc": 1},
        {"t": 2.6, "event": "restart", "gen": 1, "world_size": 1},
    ]
    jm = measure_job("0", recs + redo + new, events, MeasureOptions(skip_first=0, skip_last=0))
    assert [t.kind for t in jm.transitions] == ["start", "restart"]
    rs = jm.transitions[1]
    assert rs.cost_s == pytest.approx(5.5 - 2.0 - 0.1, abs=1e-6)  # includes the redone steps
    assert jm.redone_steps == 5 and jm.crashes == 1
    assert jm.total_samples == 22 * 64  # never counts redone samples twice
    assert jm.throughput[1].samples_per_s == pytest.approx(640.0, rel=1e-6)


def test_calibrate__file_rows_csv_scenario(tmp_path):
    folder = fake_replay(tmp_path / "run")
    m = measure_replay(folder)
    from mtgym.bridge.trace import read_trace

    cal = calibrate(m, read_trace(folder / "trace.jsonl"))
    e = cal["jobs"]["0"]
    assert e["curve_nodes"] == [0.0, 1.0, 2.0]
    assert e["curve_tput"] == pytest.approx([0.0, 640.0, 1600.0])
    assert e["r_up_s"] == pytest.approx(2.72) and e["r_down_s"] == pytest.approx(2.62)
    assert e["startup_s"] == pytest.approx(1.9)
    assert e["cost_source"] == {
        "r_up_s": "measured",
        "r_down_s": "measured",
        "startup_s": "measured",
    }
    # job 1 never rescaled: pooled costs from job 0
    assert cal["jobs"]["1"]["cost_source"]["r_up_s"] == "pooled"
    assert cal["jobs"]["1"]["r_up_s"] == pytest.approx(2.72)
    assert rate(e, 1.5) == pytest.approx(1120.0) and rate(e, 5) == pytest.approx(1600.0)

    p = write_calibration(tmp_path / "cal.json", cal)
    back = read_calibration(p)
    rows = job_rows(back)
    assert [r.name for r in rows] == ["a", "b"]
    assert list(rows[0].curve_tput) == pytest.approx([0, 640, 1600])
    inst = tiny_instance(2, rows, t_end=100.0)  # JobRow-compatible: the simulator runs it
    res = play(inst, make_policy("equal-share"))
    assert res.metrics.as_dict()["samples"] > 0

    csv = write_bftrainer_csv(back, tmp_path / "cal.csv")
    bj = read_bftrainer_jobs(csv)
    assert list(bj.curve_nodes) == [0, 1, 2]
    np.testing.assert_allclose(bj.curve_tput[0], [0, 640, 1600], rtol=1e-6)
    np.testing.assert_allclose(bj.rescale_up_s, [2.72, 2.72], rtol=1e-3)

    scen = write_scenario(
        back, tmp_path / "scenario.json", csv_name="cal.csv", num_nodes=2, horizon_s=60.0
    )
    inst2 = get_generator(str(scen))(0)
    assert inst2.num_nodes == 2 and inst2.num_jobs == 2
    np.testing.assert_allclose(inst2.jobs.curve_tput[0][:3], [0, 640, 1600], rtol=1e-6)
    assert play(inst2, make_policy("equal-share")).metrics.as_dict()["samples"] > 0


def test_calibrate__rejects_bad_files(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"format": "mtgym-calibration", "version": 9, "jobs": {}}))
    with pytest.raises(DataError, match="version"):
        read_calibration(p)
    p.write_text(
        json.dumps(
            {
                "format": "mtgym-calibration",
                "version": 1,
                "jobs": {
                    "0": {
                        "name": "a",
                        "curve_nodes": [0, 2, 1],
                        "curve_tput": [0, 1, 2],
                        "r_up_s": 1,
                        "r_down_s": 1,
                        "startup_s": 0,
                    }
                },
            }
        )
    )
    with pytest.raises(DataError, match=r"'jobs.0.curve_nodes' has value \[0, 2, 1\].*sorted"):
        read_calibration(p)


def _cal(**job):
    e = {
        "name": "a",
        "curve_nodes": [0.0, 1.0],
        "curve_tput": [0.0, 100.0],
        "r_up_s": 1.0,
        "r_down_s": 1.0,
        "startup_s": 2.0,
    }
    e.update(job)
    return {"format": "mtgym-calibration", "version": 1, "jobs": {"0": e}}


@pytest.mark.parametrize(
    ("cal", "match"),
    [
        # corrupt structures used to raise AttributeError deep in the reader
        ([1, 2], "'file' has value 'list'"),
        ({"format": "mtgym-calibration", "version": 1}, "'jobs' has value .*Field required"),
        ({"format": "mtgym-calibration", "version": 1, "jobs": []}, "'jobs' has value \\[\\]"),
        ({"format": "mtgym-calibration", "version": 1, "jobs": {"0": "x"}}, "'jobs.0' has"),
        # a NaN cost is an error, not "n/a" in the report
        (_cal(r_up_s=float("nan")), "'jobs.0.r_up_s' has value nan.*finite"),
        (_cal(startup_s=float("inf")), "'jobs.0.startup_s' has value inf"),
        (_cal(r_down_s=-1.0), "'jobs.0.r_down_s' has value -1.0.*greater than or equal to 0"),
        (_cal(r_down_s="2"), "'jobs.0.r_down_s' has value '2'"),
        (_cal(curve_tput=[0.0, float("nan")]), "'jobs.0.curve_tput.1' has value nan"),
        (_cal(curve_tput=[0.0]), "'jobs.0.curve_tput' has value \\[0.0\\].*2 values"),
        (_cal(min_nodes=1.5), "'jobs.0.min_nodes' has value 1.5"),
        (_cal(min_nodes=True), "'jobs.0.min_nodes' has value True"),
        (_cal(app_class="Z"), "'jobs.0.app_class' has value 'Z'"),
        (_cal(name=None), "'jobs.0.name' has value None"),
        ({**_cal(), "format": "other"}, "'format' has value 'other'"),
    ],
)
def test_calibrate__corrupt_files_name_file_field_value(tmp_path, cal, match):
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(cal))
    with pytest.raises(DataError, match=match) as ei:
        read_calibration(p)
    assert str(ei.value).startswith(f"{p}: field ")


def test_calibrate__nan_cost_is_a_cli_error(tmp_path, capsys):
    """``bridge report --calibration`` with a NaN cost: exit 2, one line naming it."""
    from mtgym.bridge.cli import main

    folder = fake_replay(tmp_path / "run")
    p = tmp_path / "cal.json"
    p.write_text(json.dumps(_cal(r_up_s=float("nan"))))
    assert main(["report", str(folder), "--calibration", str(p), "--no-calibration"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"error: {p}: field 'jobs.0.r_up_s' has value nan; allowed: Input should be a finite number"
    ]


def test_predict__simulator_with_calibration_matches_hand_count(tmp_path):
    folder = fake_replay(tmp_path / "run", second_job=False)
    from mtgym.bridge.trace import read_trace

    tr = read_trace(folder / "trace.jsonl")
    cal = {
        "jobs": {
            "0": {
                "curve_nodes": [0, 1, 2],
                "curve_tput": [0, 600, 1500],
                "r_up_s": 3.0,
                "r_down_s": 2.0,
                "startup_s": 1.0,
            }
        }
    }
    got = simulate_replay(tr, from_calibration(cal), time_scale=10.0, sim0=0.0, dt=0.05)
    # 600 x (10 - 1) + 1500 x (10 - 3) + 600 x (10 - 2)
    assert got["0"] == pytest.approx(600 * 9 + 1500 * 7 + 600 * 8, rel=2e-3)


def test_report__files_and_errors(tmp_path):
    folder = fake_replay(tmp_path / "run")
    rep = build_report(folder)
    w = rep["jobs"]["0"]["world_sizes"]
    # trace predictions on the replay clock: 100 samples per simulated s x 10
    assert w["1"]["predicted"] == pytest.approx(1000.0)
    assert w["1"]["error"] == pytest.approx((1000 - 640) / 640)
    assert w["2"]["predicted_speedup"] == pytest.approx(2.0)
    assert w["2"]["measured_speedup"] == pytest.approx(2.5)
    assert rep["jobs"]["0"]["rescale"]["up"]["mean_s"] == pytest.approx(2.72)
    assert rep["totals"]["reclaims"] == 1 and rep["totals"]["reclaim_deadlines_met"] is True
    assert rep["jobs"]["0"]["monotone_violations"] == []
    pj, pm = write_report(folder, rep)
    json.loads(pj.read_text())  # strict JSON
    md = pm.read_text()
    assert "| 2 | 2 |" in md and "error" in md and "reclaim" in md
    cal = {
        "jobs": {
            "0": {
                "curve_nodes": [0, 1, 2],
                "curve_tput": [0, 640, 1600],
                "r_up_s": 2.72,
                "r_down_s": 2.62,
                "startup_s": 1.9,
            }
        }
    }
    rep2 = build_report(folder, calibration=cal, calibration_path="cal.json")
    assert rep2["jobs"]["0"]["world_sizes"]["2"]["error"] == pytest.approx(0.0, abs=1e-9)
    assert rep2["prediction_source"] == "calibration:cal.json"
    assert abs(rep2["jobs"]["0"]["samples"]["error"]) < 0.05


def test_check_monotone():
    assert check_monotone({1: 100, 2: 190}, {1: 1, 2: 2}) == []
    assert check_monotone({1: 100, 2: 97}, {1: 1, 2: 2}) == []  # within 5 %
    assert len(check_monotone({1: 100, 2: 80}, {1: 1, 2: 2})) == 1
    assert check_monotone({1: 100, 2: 80}, {1: 1, 2: 1}) == []  # the model says flat
