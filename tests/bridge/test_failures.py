"""Failure is failure; predictions at the world size that ran (``--max-world-size``)."""

from __future__ import annotations

import json

import pytest
from test_measure import T0, _steps, fake_replay

from mtgym.bridge.cli import main
from mtgym.bridge.measure import measure_replay
from mtgym.bridge.predict import from_trace, simulate_replay
from mtgym.bridge.record import trace_header
from mtgym.bridge.report import build_report, write_report
from mtgym.bridge.trace import Trace, TraceEvent, read_trace, write_trace
from mtgym.testing import linear_job, tiny_instance


def _crashed_job(folder, job="1", launches=4, gave_up=True):
    """Replace job ``job`` of a fake replay by one whose every launch crashed at once."""
    events = [json.loads(x) for x in (folder / "events.jsonl").read_text().splitlines()]
    events = [e for e in events if e.get("job") != job]
    for g in range(launches):
        kind = "start" if g == 0 else "restart"
        events += [
            {"t": T0 + 3 * g, "job": job, "event": kind, "gen": g, "world_size": 1},
            {"t": T0 + 3 * g + 2, "job": job, "event": "crash", "gen": g, "rc": 1},
        ]
    if gave_up:
        events.append({"t": T0 + 3 * launches, "job": job, "event": "gave_up", "restarts": 3})
    (folder / "events.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    (folder / "jobs" / job / "progress.jsonl").write_text("")
    meta = json.loads((folder / "replay.json").read_text())
    meta["config"]["max_restarts"] = 3
    (folder / "replay.json").write_text(json.dumps(meta))


def test_failures__no_progress_and_gave_up_fail_the_report(tmp_path):
    folder = fake_replay(tmp_path / "run")
    ok = build_report(folder)
    assert ok["ok"] is True and ok["failures"] == [] and ok["totals"]["failed_jobs"] == 0
    _crashed_job(folder)
    rep = build_report(folder)
    assert rep["ok"] is False
    assert rep["failures"] == [
        "job 1 made no progress and exhausted --max-restarts (3): 4 launch(es), 4 crash(es), "
        "0 steps (see jobs/1/logs)"
    ]
    assert rep["jobs"]["1"]["gave_up"] is True and rep["jobs"]["1"]["launches"] == 4
    _, md = write_report(folder, rep)
    first = md.read_text().splitlines()[0]
    assert first.startswith("FAILED: job 1 made no progress and exhausted --max-restarts")
    # job 0 still measured: the report command rewrites the calibration, and exits 1
    assert main(["report", str(folder)]) == 1
    assert (folder / "calibration.json").exists()
    # gave up after some progress: still a failure, for that reason only
    _crashed_job(folder, gave_up=True)
    recs, _, _ = _steps(T0 + 1, T0 + 2, 0.1, 64, 1, 0, 0, 0)
    (folder / "jobs" / "1" / "progress.jsonl").write_text(
        "\n".join(json.dumps(r) for r in recs) + "\n"
    )
    assert build_report(folder)["failures"][0].startswith(
        "job 1 exhausted --max-restarts (3): 4 launch(es)"
    )
    # crashed once, recovered, progressed: no failure
    _crashed_job(folder, launches=2, gave_up=False)
    (folder / "jobs" / "1" / "progress.jsonl").write_text(
        "\n".join(json.dumps(r) for r in recs) + "\n"
    )
    assert build_report(folder)["failures"] == []


def test_failures__empty_measurements_write_no_calibration(tmp_path, capsys):
    folder = fake_replay(tmp_path / "run")
    _crashed_job(folder, job="0")
    _crashed_job(folder, job="1")
    assert measure_replay(folder).empty
    assert main(["report", str(folder)]) == 1
    assert not (folder / "calibration.json").exists()
    assert not (folder / "calibration.csv").exists()
    out = capsys.readouterr()
    assert "no steady-state measurements: no calibration written" in out.out
    assert out.err.startswith("FAILED: job 0 made no progress")
    md = (folder / "report.md").read_text()
    assert md.startswith("FAILED: job 0 made no progress and exhausted --max-restarts (3)")
    assert main(["calibrate", str(folder), "--out", str(tmp_path / "cal.json")]) == 2
    assert "nothing to calibrate" in capsys.readouterr().err
    assert not (tmp_path / "cal.json").exists()


def _capped_replay(folder):
    """Job 0 on 2 nodes in the trace ([0, 100) simulated s), replayed with the cap at 1:
    one generation of 1 worker, 0.1 s per step of 64 samples for 10 wall s (scale 10)."""
    folder.mkdir(parents=True)
    inst = tiny_instance(2, [linear_job("a", 100, 2, 1e9)], t_end=100)
    h = trace_header(inst, scenario="tiny", policy="script", seed=0)
    write_trace(folder / "trace.jsonl", Trace(h, [TraceEvent(0.0, "0", (0, 1), rate=200.0)], 100.0))
    meta = {
        "config": {"time_scale": 10.0, "max_world_size": 1, "max_restarts": 3},
        "t0_wall": T0,
        "sim0": 0.0,
        "t_end_wall": T0 + 10,
        "workers_per_node": 1,
        "jobs": {"0": {"name": "a", "model": "cnn", "job_dir": "jobs/0"}},
    }  # no "capped": a folder of an older replay; the report works it out
    (folder / "replay.json").write_text(json.dumps(meta))
    ev = [{"t": T0, "job": "0", "event": "start", "gen": 0, "world_size": 1}]
    (folder / "events.jsonl").write_text("\n".join(json.dumps(e) for e in ev) + "\n")
    recs, _, _ = _steps(T0 + 1.0, T0 + 9.9, 0.1, 64, 1, 0, 0, 0)
    (folder / "jobs" / "0").mkdir(parents=True)
    (folder / "jobs" / "0" / "progress.jsonl").write_text(
        "\n".join(json.dumps(r) for r in recs) + "\n"
    )
    return folder


def test_cap__predictions_at_the_capped_world_size(tmp_path):
    folder = _capped_replay(tmp_path / "run")
    rep = build_report(folder)
    w = rep["jobs"]["0"]["world_sizes"]
    assert list(w) == ["1"]
    # the scenario's rate on 1 node (100/s) on the replay clock (x 10), not 2 nodes' 200
    assert w["1"]["predicted"] == pytest.approx(1000.0)
    assert w["1"]["measured"] == pytest.approx(640.0)
    assert rep["max_world_size"] == 1 and rep["capped"] == {"0": 2}
    assert rep["jobs"]["0"]["capped_from"] == 2
    # the total is the simulator's run at the capped count too
    tr = read_trace(folder / "trace.jsonl")
    preds = from_trace(tr, 10.0)
    capped = simulate_replay(tr, preds, time_scale=10.0, sim0=0.0, max_world_size=1)["0"]
    full = simulate_replay(tr, preds, time_scale=10.0, sim0=0.0)["0"]
    assert rep["totals"]["predicted_samples"] == pytest.approx(capped)
    assert capped == pytest.approx(full / 2, rel=0.02)
    _, md = write_report(folder, rep)
    text = md.read_text()
    assert "- world size capped at 1 node(s) (--max-world-size) for job 0 (trace up to 2)" in text
    assert "| 1 | 1 | 1,000.0 | 640.0 |" in text
    # no cap note when the cap cut nothing
    meta = json.loads((folder / "replay.json").read_text())
    meta["config"]["max_world_size"] = 2
    (folder / "replay.json").write_text(json.dumps(meta))
    rep2 = build_report(folder)
    assert rep2["capped"] == {} and "capped" not in write_report(folder, rep2)[1].read_text()


def test_cli__needs_more_gpus_than_visible_fails_before_launching(tmp_path, monkeypatch, capsys):
    trace = tmp_path / "t.jsonl"
    inst = tiny_instance(3, [linear_job("a", 100, 3, 1e9)], t_end=100)
    h = trace_header(inst, scenario="tiny", policy="script", seed=0)
    write_trace(trace, Trace(h, [TraceEvent(0.0, "0", (0, 1, 2), rate=300.0)], 100.0))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    out = tmp_path / "run"
    rc = main(["replay", str(trace), "--out", str(out), "--device", "cuda", "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: job 0: world size 3 node(s) x 1 worker(s) needs 3 GPUs, 2 visible; lower "
        "--max-world-size or --workers-per-node, or pass --share-gpus (workers share GPUs "
        "over gloo)"
    )
    assert not (out / "events.jsonl").exists()  # nothing started
    # capped to what fits: the check passes (the launch itself is not run here)
    from mtgym.bridge.controller import capped_jobs

    assert capped_jobs(read_trace(trace), 2) == {"0": 3}


@pytest.mark.slow
def test_cli__replay_where_nothing_runs_exits_nonzero(bridge_dir, monkeypatch, capsys):
    """Every worker crashes at start (fault injection): exit 1, the report's first line says
    why, and no calibration is written."""
    trace = bridge_dir / "t.jsonl"
    # 60 s of trace (6 s at --time-scale 10): the crashes come in the first seconds
    inst = tiny_instance(1, [linear_job("a", 100, 1, 1e9)], t_end=60)
    h = trace_header(inst, scenario="tiny", policy="script", seed=0)
    write_trace(trace, Trace(h, [TraceEvent(0.0, "0", (0,), rate=100.0)], 60.0))
    monkeypatch.setenv("MTGYM_FAULT", "crash-at-start")
    out = bridge_dir / "run"
    args = ["replay", str(trace), "--out", str(out), "--time-scale", "10", "--quiet"]
    args += ["--model", "tiny-mlp", "--dp", "allreduce", "--max-restarts", "1", "--device", "cpu"]
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()  # --quiet: the console is stderr
    assert err[-1].startswith("FAILED: job 0 made no progress")
    md = (out / "report.md").read_text()
    assert md.startswith("FAILED: job 0 made no progress")
    assert not (out / "calibration.json").exists()
    rep = json.loads((out / "report.json").read_text())
    assert rep["ok"] is False and rep["jobs"]["0"]["launches"] >= 1
    assert rep["totals"]["measured_samples"] == 0 and rep["jobs"]["0"]["steps"] == 0
