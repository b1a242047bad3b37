"""``mtgym compare --record NAME``: the result file in ``--out`` and in the registry, one row
per episode, the aggregates those of ``results.json`` without its rows."""

from __future__ import annotations

import json

import pytest

from agents.policy import PRETRAINED
from mtgym.cli import main
from mtgym.results import store


@pytest.mark.skipif(not (PRETRAINED / "model.zip").is_file(), reason="no shipped agent")
def test_compare__record_writes_a_result_file(tmp_path, capsys):
    out, reg = tmp_path / "cmp", tmp_path / "reg"
    argv = [
        "compare",
        "--scenario",
        "toy-two-jobs",
        "--policy",
        "equal-share",
        "--seeds",
        "2",
        "--no-bound",
        "--no-progress",
        "--out",
        str(out),
        "--record",
        "cmp",
        "--results-dir",
        str(reg),
    ]
    assert main(argv) == 0
    res = store.read_result(reg / "cmp.json")
    assert res.kind == "compare" and res.command == "mtgym " + " ".join(argv)
    assert (out / "result.json").read_bytes() == (reg / "cmp.json").read_bytes()
    assert res.seeds == [100, 101] and res.scenarios[0].name == "toy-two-jobs"
    assert [(r["policy"], r["seed"]) for r in res.rows] == [
        ("agent", 100),
        ("agent", 101),
        ("equal-share", 100),
        ("equal-share", 101),
    ]
    written = json.loads((out / "results.json").read_text())
    for name, entry in written["policies"].items():
        assert [r for r in res.rows if r["policy"] == name] == [
            {"scenario": "toy-two-jobs", "policy": name, **r} for r in entry.pop("per_seed")
        ]
    assert res.aggregates == written  # results.json's numbers, recomputed from the rows
    capsys.readouterr()
    assert main(argv) == 2  # the name is taken: refused before any episode
    assert "cmp.json exists: a record is never overwritten" in capsys.readouterr().err


@pytest.mark.skipif(not (PRETRAINED / "model.zip").is_file(), reason="no shipped agent")
def test_compare__resume_plays_nothing_a_finished_run_holds_and_refuses_another(tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "--scenario", "toy-two-jobs", "--policy", "equal-share", "--seeds", "2",
            "--no-bound", "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    first = json.loads((out / "results.json").read_text())
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    assert "resume: 4 episode(s) and 0 bound(s)" in capsys.readouterr().out
    again = json.loads((out / "results.json").read_text())
    for name, entry in first["policies"].items():
        strip = [{k: v for k, v in r.items() if k != "wall_s"} for r in entry["per_seed"]]
        assert strip == [
            {k: v for k, v in r.items() if k != "wall_s"}
            for r in again["policies"][name]["per_seed"]
        ]
    assert main([*argv[:6], "3", *argv[7:], "--resume"]) == 2  # other seeds
    assert "was written by another run (seeds differs" in capsys.readouterr().err
