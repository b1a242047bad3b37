"""``mtgym evaluate --out DIR``: one line per finished policy in a log, every episode
journalled as it finishes, and ``--resume`` plays only what a killed run lacks, to the same
results."""

from __future__ import annotations

import json

import pytest

import mtgym.policy.play as play_mod
from mtgym.cli import main
from mtgym.testing.benchmark import untimed


def _argv(out, *extra):
    return [
        "evaluate", "--scenario", "toy-two-jobs", "--policy", "greedy", "--policy",
        "equal-share", "--seeds", "2", "--out", str(out), *extra,
    ]  # fmt: skip


def test_evaluate_resume__a_killed_run_resumes_to_the_same_results(tmp_path, monkeypatch, capsys):
    assert main(_argv(tmp_path / "whole", "--no-progress")) == 0
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    real, calls = play_mod.play, []

    def play(instance, policy, **kw):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(type(policy).__name__)
        return real(instance, policy, **kw)

    monkeypatch.setattr(play_mod, "play", play)
    import mtgym.evaluate as ev

    monkeypatch.setattr(ev, "play", play)
    with pytest.raises(KeyboardInterrupt):
        main(_argv(tmp_path / "cut", "--no-progress"))
    calls.clear()
    capsys.readouterr()
    assert main(_argv(tmp_path / "cut", "--no-progress", "--resume")) == 0
    out, err = capsys.readouterr()
    assert "resume: 3 episode(s) and 2 bound(s)" in out
    # the cost line counts what is left to play (mtgym.results.estimate)
    assert "to play: 1 episode(s) (greedy 0, equal-share 1) and 0 hindsight bound(s)" in err
    assert calls == ["EqualShare"]  # only the missing episode
    cut = json.loads((tmp_path / "cut" / "results.json").read_text())
    assert untimed(cut) == untimed(whole)


def test_evaluate_resume__refusals_and_log_lines(tmp_path, capsys):
    assert main(_argv(tmp_path / "o", "--resume")) == 2
    assert "does not exist; run without --resume" in capsys.readouterr().err
    assert main([*_argv(tmp_path / "o"), "--backend", "ray", "--resume"]) == 2
    assert "--resume needs --out DIR and the local backend" in capsys.readouterr().err
    assert main(_argv(tmp_path / "o")) == 0  # progress on, output captured: lines
    out = capsys.readouterr().out
    lines = [x for x in out.splitlines() if x.startswith("[")]
    assert [x.split("] ", 1)[1] for x in lines] == [
        "toy-two-jobs: greedy",
        "toy-two-jobs: equal-share",
    ]
    assert lines[0].startswith("[2/4 episodes, ")
