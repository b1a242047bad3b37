"""The split ``one`` (``mtgym.testing.benchmark``) registered, with counters of what it plays."""

from __future__ import annotations

import pytest

from mtgym.testing.benchmark import ONE


@pytest.fixture
def one_split(monkeypatch, tmp_path):
    """The split ``one`` with ``freetrain`` as its recorded reference, and counters of the
    episodes played (by policy class) and of the bounds computed."""
    import mtgym.policy.play as play_mod
    from mtgym.benchmark import references, runner, splits

    monkeypatch.setitem(splits.SPLITS, "one", ONE)
    monkeypatch.setattr(
        references, "recorded_references", lambda split: {"toy-two-jobs": "freetrain"}
    )
    played, bounds = [], []
    real_play, real_bound = play_mod.play, runner.episode_bound

    def play(instance, policy, **kw):
        played.append(type(policy).__name__)
        return real_play(instance, policy, **kw)

    def bound(instance, until=None):
        bounds.append(until)
        return real_bound(instance, until)

    monkeypatch.setattr(play_mod, "play", play)
    monkeypatch.setattr(runner, "episode_bound", bound)
    monkeypatch.chdir(tmp_path)
    return played, bounds
