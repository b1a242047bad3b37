"""``mtgym tune --resume`` (``mtgym.tuning.journal``): a killed sweep keeps its finished
points, the resumed one plays only the others and records what an uninterrupted one does."""

from __future__ import annotations

import json
import re

import pytest

from mtgym.cli import main
from mtgym.scenario.tuning import TuningRecord
from mtgym.tuning import sweep
from mtgym.tuning.journal import FOLDER


def _fake(calls, kill_at=None):
    def play(scenario, policy, params, seed, horizon_s):
        if kill_at is not None and len(calls) == kill_at:
            raise KeyboardInterrupt
        calls.append((policy, params.get("max_jobs"), seed))
        return 10.0 + (params.get("max_jobs") or 0) % 7 + seed % 3 * 0.1, 1.0, 0.0

    return play


def _argv(path, *extra):
    return ["tune", "--policy", "greedy", "--scenario", "default", "--out", str(path), *extra]


def _record(path):
    rec = json.loads(path.read_text())
    for t in rec["policies"].values():
        t.pop("wall_s")
    return rec


def test_tune_journal__a_killed_sweep_resumes_to_the_uninterrupted_record(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr(sweep, "play_point", _fake(calls))
    assert main(_argv(tmp_path / "whole.json")) == 0
    total = len(calls)

    calls.clear()
    monkeypatch.setattr(sweep, "play_point", _fake(calls, kill_at=7))  # mid-sweep
    with pytest.raises(KeyboardInterrupt):
        main(_argv(tmp_path / "cut.json"))
    journal = (FOLDER / "default.jsonl").read_text().splitlines()
    assert len(journal) == 1 + 7 // 3  # the header, then each point whose 3 seeds finished
    calls.clear()
    monkeypatch.setattr(sweep, "play_point", _fake(calls))
    capsys.readouterr()
    assert main(_argv(tmp_path / "cut.json", "--resume")) == 0
    assert "resume: 2 finished point(s) from runs/tune/default.jsonl" in capsys.readouterr().err
    assert len(calls) == total - 2 * 3  # the two finished points are not played again
    assert _record(tmp_path / "cut.json") == _record(tmp_path / "whole.json")
    assert TuningRecord.model_validate_json((tmp_path / "cut.json").read_text()).reference


def test_tune_journal__resume_refuses_another_sweeps_journal(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sweep, "play_point", _fake([]))
    assert main(_argv(tmp_path / "a.json")) == 0
    capsys.readouterr()
    assert main(_argv(tmp_path / "b.json", "--horizon", "3600", "--resume")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith(
        "was written by another sweep (horizon_s differs (None then, 3600.0 now)); "
        "run without --resume to start over"
    )
    (FOLDER / "default.jsonl").unlink()
    assert main(_argv(tmp_path / "c.json", "--resume")) == 2
    assert "does not exist; run without --resume" in capsys.readouterr().err


def test_tune__prints_the_sweeps_cost_before_it_plays(capsys):
    """Before a sweep: at most how many points and episodes, and how long the recorded
    sweep of that (scenario, policy) took."""
    assert main(["tune", "--scenario", "default", "--policy", "freetrain", "--dry-run"]) == 0
    err = capsys.readouterr().out
    m = re.search(
        r"default / freetrain: at most (\d+) points x 3 seeds = (\d+) episodes; its "
        r"recorded sweep took [^(]+\((\d+) points",
        err,
    )
    assert m is not None, err
    assert int(m[2]) == 3 * int(m[1]) and int(m[3]) <= int(m[1])
