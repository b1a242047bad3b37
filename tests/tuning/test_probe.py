"""The reference probe (``mtgym.tuning.probe``): its grid, its verdict and ``--apply``."""

from __future__ import annotations

import json

import pytest

from mtgym.scenario.tuning import TuningRecord, save_record
from mtgym.tuning import probe, sweep


def test_probe_values_reach_the_job_count_and_widen_t_fwd():
    caps = probe.probe_values("max_jobs", [None, 10, 16, 32], 10.0, 100)
    assert caps == [None, 10, 16, 32, 8, 64, 100]
    t = probe.probe_values("t_fwd", [None, 2.5, 40.0], 10.0, 100)
    assert t[:3] == [None, 2.5, 40.0] and min(t[3:]) == 0.625 and max(t[3:]) == 2560.0
    assert probe.probe_values("order", ["fifo", "las"], 10.0, 100) == ["fifo", "las"]
    assert None in probe.probe_values("round_s", [360.0], 10.0, 100)


def _record(tmp_path):
    """A record of ``default`` with two tuned policies; ``greedy`` is the reference."""
    rec = TuningRecord(scenario="default", seeds=[0], horizon_s=None, rule=sweep.RULE)
    for name, mean in (("greedy", 10.0), ("equal-share", 9.0)):
        pt = sweep.Point(
            knob="",
            params={"max_jobs": None},
            headline=[mean],
            jobs_completed=[1.0],
            mean=mean,
            wall_s=0.0,
        )
        rec.policies[name] = sweep.PolicyTuning(
            default={"max_jobs": None},
            chosen={"max_jobs": None},
            default_mean=mean,
            chosen_mean=mean,
            sweep=[pt],
            wall_s=0.0,
        )
    rec.reference = rec.best()
    return save_record(rec, tmp_path / "default.json")


@pytest.mark.parametrize("apply", [False, True])
def test_a_point_that_beats_the_reference_is_reported_and_taken(tmp_path, monkeypatch, apply):
    played = []

    def fake(scenario, policy, params, seed, horizon_s):
        played.append((policy, params["max_jobs"]))
        # equal-share with every job admitted beats greedy's 10.0 by 5 %
        return (10.5 if (policy, params["max_jobs"]) == ("equal-share", 30) else 9.0), 1.0, 0.0

    monkeypatch.setattr(sweep, "play_point", fake)
    path = _record(tmp_path)
    res = probe.probe_scenario("default", apply=apply, path=path)
    # the recorded points are reused, not replayed; every other probe value is played once
    assert ("greedy", None) not in played and ("equal-share", None) not in played
    assert len(played) == len(set(played))
    assert [(b.policy, b.params["max_jobs"]) for b in res.beats] == [("equal-share", 30)]
    assert res.reference_before == "greedy"
    out = json.loads((tmp_path / "probes" / "default.json").read_text())
    assert out["beats"][0]["ratio"] == pytest.approx(1.05)
    rec = TuningRecord.model_validate_json(path.read_text())
    if apply:
        assert res.reference_after == rec.reference == "equal-share"
        assert rec.policies["equal-share"].chosen == {"max_jobs": 30}
        assert rec.policies["equal-share"].chosen_mean == 10.5
    else:
        assert res.reference_after == rec.reference == "greedy"
    assert "beat the reference" in probe.report(res)


def test_apply_takes_the_best_beating_point_and_marks_the_verdict_stale_later(
    tmp_path, monkeypatch
):
    best = {16: 10.6, 30: 10.9}  # both beat greedy's 10.0 by > 2 %; 30 is the best

    def fake(scenario, policy, params, seed, horizon_s):
        v = best.get(params["max_jobs"], 9.0) if policy == "equal-share" else 9.0
        return v, 1.0, 0.0

    monkeypatch.setattr(sweep, "play_point", fake)
    path = _record(tmp_path)
    res = probe.probe_scenario("default", apply=True, path=path)
    rec = TuningRecord.model_validate_json(path.read_text())
    assert rec.policies["equal-share"].chosen == {"max_jobs": 30}
    assert rec.policies["equal-share"].chosen_mean == 10.9
    assert not probe.is_stale(res, path)
    rec.policies["greedy"].chosen_mean = 11.5  # a later re-tune
    rec.reference = rec.best()
    save_record(rec, path)
    assert probe.is_stale(res, path)


def test_apply_refuses_a_record_changed_while_probing(tmp_path, monkeypatch):
    path = _record(tmp_path)

    def fake(scenario, policy, params, seed, horizon_s):
        if policy == "equal-share" and params["max_jobs"] == 30:
            rec = TuningRecord.model_validate_json(path.read_text())
            rec.policies["equal-share"].chosen_mean = 9.5  # a concurrent mtgym tune
            save_record(rec, path)
            return 10.5, 1.0, 0.0
        return 9.0, 1.0, 0.0

    monkeypatch.setattr(sweep, "play_point", fake)
    with pytest.raises(ValueError, match="changed while the probe ran"):
        probe.probe_scenario("default", apply=True, path=path)
    rec = TuningRecord.model_validate_json(path.read_text())
    assert rec.reference == "greedy" and rec.policies["equal-share"].chosen_mean == 9.5


def test_a_second_probe_of_the_same_record_plays_only_new_or_beating_points(tmp_path, monkeypatch):
    played = []

    def fake(scenario, policy, params, seed, horizon_s):
        played.append((policy, params["max_jobs"]))
        return (10.5 if (policy, params["max_jobs"]) == ("equal-share", 30) else 9.0), 1.0, 0.0

    monkeypatch.setattr(sweep, "play_point", fake)
    path = _record(tmp_path)
    first = probe.probe_scenario("default", path=path)  # finds equal-share@30, not applied
    n_first = len(played)
    played.clear()
    monkeypatch.setattr(probe, "MIN_CAP", 4)  # a wider grid: one more cap
    second = probe.probe_scenario("default", path=path)
    # only the new value and the beating point (which --apply needs whole) are played
    assert sorted(played) == [("equal-share", 4), ("equal-share", 30), ("greedy", 4)]
    assert n_first > len(played)
    assert [(b.policy, b.params["max_jobs"]) for b in second.beats] == [("equal-share", 30)]
    assert len(second.points) == len(first.points) + 2
    rec = TuningRecord.model_validate_json(path.read_text())
    rec.policies["greedy"].chosen_mean = 10.01  # a re-tune: the earlier probe is stale
    save_record(rec, path)
    played.clear()
    probe.probe_scenario("default", path=path)
    assert len(played) == len(second.points) - 2  # all replayed but the record's own points


def test_no_beat_within_the_margin(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "play_point", lambda *a: (10.1, 1.0, 0.0))  # +1 % < 2 %
    res = probe.probe_scenario("default", path=_record(tmp_path))
    assert res.beats == [] and "no point beats" in probe.report(res)


def test_probe_cli_refuses_a_scenario_without_a_record(capsys):
    from mtgym.cli import main

    assert main(["probe", "--scenario", "toy-two-jobs"]) == 2
    assert "no tuning record" in capsys.readouterr().err


def test_a_probe_policy_by_policy_keeps_the_others_points(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "play_point", lambda *a: (9.0, 1.0, 0.0))
    path = _record(tmp_path)
    first = probe.probe_scenario("default", ["greedy"], path=path)
    assert probe.probed_policies(first) == ["greedy"]
    both = probe.probe_scenario("default", ["equal-share"], path=path)
    assert probe.probed_policies(both) == ["equal-share", "greedy"]
    assert len(both.points) == len(first.points) + len(
        [p for p in both.points if p.policy == "equal-share"]
    )
    saved = probe.ProbeResult.model_validate_json(
        (tmp_path / "probes" / "default.json").read_text()
    )
    assert probe.probed_policies(saved) == ["equal-share", "greedy"]
    rec = TuningRecord.model_validate_json(path.read_text())
    rec.policies["greedy"].chosen_mean = 10.01  # a re-tune: the earlier points are dropped
    save_record(rec, path)
    again = probe.probe_scenario("default", ["equal-share"], path=path)
    assert probe.probed_policies(again) == ["equal-share"]


def test_the_tuning_page_names_the_policies_a_probe_has_not_covered(tmp_path, monkeypatch):
    from mtgym.tuning import report

    monkeypatch.setattr(sweep, "play_point", lambda *a: (9.0, 1.0, 0.0))
    path = _record(tmp_path)
    monkeypatch.setattr(report, "tuning_dir", lambda: tmp_path)
    assert report._probe_verdict("default") == "not run"
    probe.probe_scenario("default", ["greedy"], path=path)
    verdict = report._probe_verdict("default")
    assert verdict.startswith("no beat (") and verdict.endswith("; not yet probed: equal-share)")
    probe.probe_scenario("default", ["equal-share"], path=path)
    assert "not yet probed" not in report._probe_verdict("default")
