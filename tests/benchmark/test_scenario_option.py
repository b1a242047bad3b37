"""``mtgym benchmark --scenario``: only the named scenarios of a split are played, and the
suite score and aggregates are then not defined ("not defined: ran N of M scenarios"), never
computed over part of the split; the example policy of ``docs/policies.md`` runs in it under
its own name."""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from mtgym.benchmark import splits
from mtgym.benchmark.cli import _default_out, _split
from mtgym.benchmark.splits import Split, SuiteScenario
from mtgym.cli import main

REPO = Path(__file__).resolve().parents[2]
#: two toy scenarios (4 nodes each): the run plays one of them
TOYS = Split(
    name="toys",
    description="two toy scenarios for tests",
    scenarios=(
        SuiteScenario("toy-two-jobs", quick_horizon_s=None),
        SuiteScenario("toy-linear", quick_horizon_s=None),
    ),
    quick_seeds=2,
)
SPEC = "examples.min_then_grow:factory"


def test_split__only_keeps_the_order_and_refuses_a_stranger():
    assert TOYS.only(["toy-linear", "toy-two-jobs"]).names == ["toy-two-jobs", "toy-linear"]
    part = TOYS.only(["toy-linear"])
    assert part.names == ["toy-linear"] and part.seeds(quick=True) == TOYS.seeds(quick=True)
    with pytest.raises(KeyError, match="'polaris' is not in the toys split; its scenarios: toy"):
        TOYS.only(["polaris"])


def test_benchmark_cli__default_out_of_part_of_a_split_is_its_own(monkeypatch, capsys):
    monkeypatch.setitem(splits.SPLITS, "toys", TOYS)
    part, skipped = _split(Namespace(split="toys", scenario=["toy-linear"]))
    assert "not defined: ran 1 of 2 scenarios" in capsys.readouterr().out
    assert skipped == ["toy-two-jobs"]
    assert _default_out(part, True, skipped) == "runs/benchmark-toys-quick-toy-linear"
    assert _default_out(TOYS, False, []) == "runs/benchmark-toys"


def test_benchmark_cli__scenario_runs_part_of_the_split_with_no_suite_score(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.setitem(splits.SPLITS, "toys", TOYS)
    monkeypatch.chdir(REPO)  # (examples/ is imported from the current folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    out = tmp_path / "b"
    argv = [
        "benchmark",
        "--split",
        "toys",
        "--quick",
        "--no-progress",
        "--no-cache",
        "--no-clairvoyant",
    ]
    argv += ["--out", str(out), "--policy", SPEC, "--policy", "equal-share"]
    assert main([*argv, "--scenario", "nope"]) == 2
    assert "'nope' is not in the toys split" in capsys.readouterr().err
    assert main([*argv, "--scenario", "toy-two-jobs"]) == 0
    printed = capsys.readouterr().out
    assert "not defined: ran 1 of 2 scenarios" in printed
    assert "## toy-two-jobs" in printed and "## toy-linear" not in printed
    assert "| min-then-grow |" in printed and SPEC not in printed.split("## toy-two-jobs")[1]
    assert "**Warning: intervals from 2 seeds (fewer than 5)" in printed
    data = json.loads((out / "results.json").read_text())
    assert [s["scenario"] for s in data["scenarios"]] == ["toy-two-jobs"]
    assert data["skipped"] == ["toy-linear"]
    assert data["policies"] == ["min-then-grow", "equal-share"]
    for name in data["policies"]:
        assert data["suite"][name]["score"] is None and not data["suite"][name]["complete"]
        iqm = data["aggregates"]["policies"][name]["iqm"]
        assert iqm["point"] is None and iqm["reason"] == "not defined: ran 1 of 2 scenarios"
    assert sorted(p.name for p in (out / "tb").iterdir()) == ["equal-share", "min-then-grow"]
    result = json.loads((out / "result.json").read_text())
    assert [s["name"] for s in result["scenarios"]] == ["toy-two-jobs"]
    assert {r["policy"] for r in result["rows"]} == {"min-then-grow", "equal-share"}
