"""``mtgym.benchmark.journal``: a benchmark writes each episode as it finishes; a killed run
keeps them, ``--resume`` plays only what is missing and reports what an uninterrupted run
reports, and a journal of another run is refused in one line."""

from __future__ import annotations

import json

import pytest

import mtgym.policy.play as play_mod
from mtgym.benchmark import journal as journal_mod
from mtgym.cli import main
from mtgym.results import store
from mtgym.testing.benchmark import bench_argv, untimed


def _kill_after(monkeypatch, n: int) -> None:
    """Make the (counting) ``play`` raise KeyboardInterrupt on its ``n+1``-th call."""
    real = play_mod.play
    calls = []

    def play(instance, policy, **kw):
        if len(calls) == n:
            raise KeyboardInterrupt
        calls.append(1)
        return real(instance, policy, **kw)

    monkeypatch.setattr(play_mod, "play", play)


def test_journal__a_killed_run_resumes_to_the_uninterrupted_result(
    one_split, tmp_path, monkeypatch, capsys
):
    played, bounds = one_split
    assert main(bench_argv(tmp_path, "whole", "--no-cache", "--record", "whole")) == 0
    capsys.readouterr()
    whole = store.read_result(tmp_path / "reg" / "whole.json")
    assert whole.aggregates["resumed"] == {"rows": 0, "bounds": 0}

    with monkeypatch.context() as m:
        _kill_after(m, 3)  # greedy's 2 seeds and the reference's first, then killed
        with pytest.raises(KeyboardInterrupt):
            main(bench_argv(tmp_path, "cut", "--no-cache"))
    lines = (tmp_path / "cut" / journal_mod.FILE).read_text().splitlines()
    items = [json.loads(x) for x in lines]
    assert items[0]["kind"] == journal_mod.KIND
    assert [i["type"] for i in items[1:]].count("row") == 3
    assert not (tmp_path / "cut" / "result.json").exists()

    played.clear()
    bounds.clear()
    argv = bench_argv(tmp_path, "cut", "--no-cache", "--resume", "--record", "resumed")
    assert main(argv) == 0
    log = capsys.readouterr().out
    assert "resume: 3 episode(s) and 2 bound(s) from " in log
    assert "to play: 1 episode(s)" in log and "and 0 hindsight bound(s)" in log
    assert played == ["FreeTrainPolicy"] and bounds == []  # only the missing episode
    resumed = store.read_result(tmp_path / "reg" / "resumed.json")
    assert resumed.aggregates["resumed"] == {"rows": 3, "bounds": 2}
    assert untimed(resumed.rows) == untimed(whole.rows)

    def report(agg):
        return untimed({k: v for k, v in agg.items() if k not in ("cache", "resumed")})

    assert report(resumed.aggregates) == report(whole.aggregates)


def test_journal__a_torn_last_line_is_played_again(one_split, tmp_path, capsys):
    played, _ = one_split
    assert main(bench_argv(tmp_path, "run", "--no-cache")) == 0
    path = tmp_path / "run" / journal_mod.FILE
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # the last row cut mid-line
    played.clear()
    capsys.readouterr()
    assert main(bench_argv(tmp_path, "run", "--no-cache", "--resume")) == 0
    assert played == ["FreeTrainPolicy"]
    assert "resume: 3 episode(s)" in capsys.readouterr().out


def test_journal__resume_refuses_another_runs_journal_in_one_line(one_split, tmp_path, capsys):
    assert main(bench_argv(tmp_path, "run", "--no-cache")) == 0
    capsys.readouterr()
    argv = bench_argv(tmp_path, "run", "--no-cache", "--resume", "--policy", "packed")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "was written by another run (policies differs" in err[0]
    assert main(bench_argv(tmp_path, "none", "--no-cache", "--resume")) == 2
    assert "does not exist; run without --resume to start" in capsys.readouterr().err


def test_journal__a_new_run_replaces_a_partial_one_and_says_so(one_split, tmp_path, capsys):
    assert main(bench_argv(tmp_path, "run", "--no-cache")) == 0
    capsys.readouterr()
    assert main(bench_argv(tmp_path, "run", "--no-cache")) == 0
    assert "a partial run's 6 item(s) replaced (--resume continues one)" in capsys.readouterr().out


def test_journal__a_log_gets_one_line_per_finished_batch(one_split, tmp_path, capsys):
    argv = [a for a in bench_argv(tmp_path, "log", "--no-cache") if a != "--no-progress"]
    assert main(argv) == 0
    out = capsys.readouterr().out  # (captured: not a terminal)
    batches = [x for x in out.splitlines() if x.startswith("[")]
    assert len(batches) == 2
    assert batches[0].startswith("[2/4 episodes, ") and batches[0].endswith(
        "toy-two-jobs: greedy: 2 seeds done"
    )
    assert batches[1].endswith("toy-two-jobs: freetrain: 2 seeds done")
    assert "to play: 4 episode(s) (2 policies incl. the references x 1 scenario(s) x 2 seeds" in out


def test_journal__the_identity_names_weights_and_code(tmp_path):
    model = tmp_path / "m.zip"
    model.write_bytes(b"weights")
    files = journal_mod.policy_files(["agent:" + str(model), "greedy", "agent:/nonexistent"])
    assert list(files) == ["agent:" + str(model)] and len(files["agent:" + str(model)]) == 64
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.py").write_text("x = 1\n")
    one = journal_mod.agents_sha256(tmp_path)
    (tmp_path / "agents" / "a.py").write_text("x = 2\n")
    assert journal_mod.agents_sha256(tmp_path) != one
    assert journal_mod.agents_sha256(tmp_path / "nowhere") is None
