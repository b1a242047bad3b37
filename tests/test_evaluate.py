"""mtgym evaluate: same seeds for every policy, results.json keys, TensorBoard tags."""

from __future__ import annotations

import json

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from mtgym.cli import main
from mtgym.evaluate import RESULT_KEYS, TAGS


def test_evaluate__writes_results_and_shared_tags(tmp_path, capsys):
    out = tmp_path / "ev"
    code = main(
        [
            "evaluate",
            "--scenario",
            "toy-two-jobs",
            "--policy",
            "equal-share",
            "--policy",
            "freetrain",
            "--policy",
            "greedy",
            "--seeds",
            "2",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    res = json.loads((out / "results.json").read_text())
    assert res["seeds"] == [0, 1] and set(res["policies"]) == {"equal-share", "freetrain", "greedy"}
    for entry in res["policies"].values():
        assert set(RESULT_KEYS) <= set(entry) and len(entry["per_seed"]) == 2
    # the toy's optimum (100 N horizon) is reached by the MILP and greedy, not by equal share
    assert res["policies"]["freetrain"]["samples"] == pytest.approx(100 * 4 * 3600.0)
    assert res["policies"]["equal-share"]["samples"] == pytest.approx(100 * 3 * 3600.0)
    for name in res["policies"]:
        acc = EventAccumulator(str(out / "tb" / name))
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        # (no job completes in this toy, so there is no JCT to log: NaNs are not written)
        assert {
            TAGS[k]
            for k in (
                "throughput",
                "utilisation",
                "upper_bound_fraction",
                "decision_ms",
                "rescales",
            )
        } <= tags
        assert len(acc.Scalars("eval/throughput")) == 2
    assert "freetrain" in capsys.readouterr().out


def test_evaluate__unknown_policy_fails_before_simulating(capsys):
    assert main(["evaluate", "--policy", "nope", "--seeds", "1", "--no-progress"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err


def test_evaluate__jct_and_makespan_tags_when_jobs_complete(tmp_path):
    out = tmp_path / "ev"
    assert (
        main(
            [
                "evaluate",
                "--scenario",
                "toy-linear",
                "--policy",
                "greedy",
                "--seeds",
                "1",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    acc = EventAccumulator(str(out / "tb" / "greedy"))
    acc.Reload()
    assert acc.Scalars("eval/jct_mean")[0].value == pytest.approx(3000.0)
    assert acc.Scalars("eval/makespan")[0].value == pytest.approx(3000.0)
