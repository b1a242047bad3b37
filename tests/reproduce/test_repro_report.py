"""Report writing and the ``reproduce`` subcommand (no simulation, or a tiny one)."""

from __future__ import annotations

import argparse
import json
import math

import pytest

from mtgym.reproduce import cli, pal
from mtgym.reproduce.common import (
    ROW_KEYS,
    ExperimentResult,
    Row,
    gain_from_ratios,
    geomean,
    quantiles,
    verdict,
)
from mtgym.reproduce.report import write_report


def _result(name="demo"):
    rows = [
        Row(name, "a gain", 0.42, 0.40, "close"),
        Row(name, "no paper value", None, float("nan"), "n/a | with a pipe"),
        Row(name, "a time", None, 12.5, "seconds", unit="s"),
    ]
    return ExperimentResult(name, rows, 1.5, True, raw={"x": [1.0, float("inf")]})


def test_row_dict_has_exact_keys_and_no_nan():
    d = _result().rows[1].as_dict()
    assert tuple(d) == ROW_KEYS
    assert d["paper"] is None and d["mtgym"] is None


def test_write_report_json_keys_and_markdown(tmp_path):
    md, js = write_report([_result()], tmp_path)
    rows = json.loads(js.read_text())
    assert isinstance(rows, list) and len(rows) == 3
    for r in rows:
        assert list(r) == ["experiment", "metric", "paper", "mtgym", "note", "verdict"]
    assert rows[0]["paper"] == 0.42 and rows[0]["mtgym"] == 0.40
    assert [r["verdict"] for r in rows] == ["reproduced", "n/a", "n/a"]
    text = md.read_text()
    assert "| demo | a gain | 42.0 % | 40.0 % | reproduced | close |" in text
    assert "Verdict rule" in text
    assert "n/a \\| with a pipe" in text  # pipes escaped in the table
    assert "12.5 s" in text and "Wall time" in text
    raw = json.loads((tmp_path / "demo_results.json").read_text())
    assert raw["x"] == [1.0, None]


def test_verdict_rule():
    assert verdict(0.40, 0.32) == "reproduced"  # within 25 % of 0.40
    assert verdict(0.40, 0.29) == "partly"  # same sign, further
    assert verdict(0.40, 0.9) == "partly"
    assert verdict(0.40, -0.01) == "not reproduced"  # wrong sign
    assert verdict(0.40, 0.0) == "not reproduced"  # zero has no sign
    assert verdict(-0.10, 0.009) == "not reproduced"
    assert verdict(0.40, 0.40, ordering=False) == "not reproduced"
    assert verdict(0.40, 0.35, ordering=True) == "reproduced"
    assert (
        verdict(0.40, None) == "not reproduced" and verdict(0.40, float("nan")) == "not reproduced"
    )
    assert verdict(None, 0.3) == "n/a"
    bad = Row("x", "m", 0.3, -0.1, "why")
    assert bad.as_dict()["note"].startswith("NOT REPRODUCED") and bad.as_dict()["verdict"] == (
        "not reproduced"
    )
    assert Row("x", "m", 0.3, 0.3, "why").as_dict()["note"] == "why"


def test_quantiles():
    q = quantiles([0.1, 0.2, 0.3, 0.4, 0.5])
    assert q == {"n": 5, "min": 0.1, "q1": 0.2, "median": 0.3, "q3": 0.4, "max": 0.5}


def test_geomean_helpers():
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert gain_from_ratios([0.5, 0.5]) == pytest.approx(0.5)
    assert math.isnan(geomean([]))
    assert math.isnan(geomean([1.0, 0.0]))


def test_parser_registration_and_help(capsys):
    parser = argparse.ArgumentParser(prog="mtgym")
    sub = parser.add_subparsers(dest="command")
    cli.add_reproduce_command(sub)
    args = parser.parse_args(["reproduce", "pal", "--out", "X", "--quick"])
    assert args.experiment == "pal" and args.out == "X" and args.quick and callable(args.func)
    for choice in ("freetrain", "malletrain", "pal", "all"):
        assert parser.parse_args(["reproduce", choice]).experiment == choice
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["reproduce", "nope"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["reproduce", "--help"])
    assert exc.value.code == 0
    assert "--quick" in capsys.readouterr().out


def test_missing_data_exits_2(tmp_path, capsys):
    code = cli.main(
        [
            "reproduce",
            "pal",
            "--quick",
            "--out",
            str(tmp_path / "o"),
            "--data",
            str(tmp_path / "nothing"),
            "--no-progress",
            "--workers",
            "1",
        ]
    )
    assert code == 2
    assert "lacks" in capsys.readouterr().err


def test_cli_end_to_end_tiny_pal(shared_data, tmp_path, monkeypatch, capsys):
    tiny = pal.Sizes(
        traces=(1,),
        draws=(),
        lambdas=(1.0, 3.0),
        growth=0.0,
        synergy_loads=(8.0,),
        synergy_jobs=12,
        max_jobs=40,
    )
    monkeypatch.setattr(pal, "QUICK", tiny)
    out = tmp_path / "out"
    code = cli.main(
        [
            "reproduce",
            "pal",
            "--quick",
            "--out",
            str(out),
            "--data",
            str(shared_data),
            "--no-progress",
            "--workers",
            "1",
            "--completion-at-round",
        ]
    )
    assert code == 0
    raw = json.loads((out / "pal_results.json").read_text())
    assert raw["completion_at_round"] is True
    assert "Completions recorded at the next round boundary" in (out / "report.md").read_text()
    rows = json.loads((out / "report.json").read_text())
    assert rows and all(list(r) == list(ROW_KEYS) for r in rows)
    assert {r["experiment"] for r in rows} == {"pal"}
    assert not any(r["metric"].startswith("workload-1") for r in rows)  # cut traces
    for f in ("report.md", "pal_jct.png", "pal_locality.png", "pal_results.json"):
        assert (out / f).stat().st_size > 0
    assert "report.md" in capsys.readouterr().out
