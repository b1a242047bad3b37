"""The command line: --help everywhere, run prints metrics, bad input exits 2 with a message."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mtgym.cli import build_parser, main


def test_cli__help_on_every_subcommand(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"run", "info", "policies", "evaluate", "scenario", "data", "benchmark"} <= set(
        sub.choices
    )
    commands = [[name] for name in sub.choices]
    commands += [["scenario", a] for a in ("validate", "list", "show", "schema")]
    commands += [["data", a] for a in ("list", "fetch")]
    for cmd in commands:
        with pytest.raises(SystemExit) as exc:
            main([*cmd, "--help"])
        assert exc.value.code == 0
        assert "usage: mtgym" in capsys.readouterr().out


def test_cli__run_json_on_toy(capsys):
    assert main(["run", "--scenario", "toy-linear", "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["jobs_completed"] == 1
    assert m["samples"] == 1.2e6
    # the toy's optimum: all 4 nodes from t = 0, done at 1.2e6 / 400 = 3000 s
    assert m["duration_s"] == 3000.0


def test_cli__run_table_default(capsys):
    assert main(["run"]) == 0
    out = capsys.readouterr().out
    assert "utilisation" in out and "jct_mean" in out and "upper_bound_fraction" in out


def test_cli__unknown_scenario_and_policy_exit_2(capsys):
    assert main(["run", "--scenario", "nope"]) == 2
    assert "unknown scenario 'nope'" in capsys.readouterr().err
    assert main(["run", "--policy", "nope"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err


def test_cli__python_dash_m_entry_point():
    out = subprocess.run(
        [sys.executable, "-m", "mtgym", "policies"], capture_output=True, text=True, check=True
    )
    assert "equal-share" in out.stdout


def test_cli__info(capsys):
    assert main(["info", "--scenario", "default"]) == 0
    assert "64 x 4" in capsys.readouterr().out


def test_cli__data_list_and_unknown_fetch(capsys):
    assert main(["data", "list"]) == 0
    assert "lublin-256" in capsys.readouterr().out
    assert main(["data", "fetch", "nope", "--to", "/tmp/mtgym-none"]) == 2
    assert "unknown data source 'nope'" in capsys.readouterr().err
