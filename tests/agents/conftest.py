"""Fixtures of the agent tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_train() -> Callable[..., Path]:
    """``train(out, **kw)``: a 256-step ``mtgym train`` run of the default model and settings
    (2 envs, 64-step rollouts, no evaluation or checkpoints); ``kw`` overrides ``Args``
    fields. Returns the model's path.
    """
    from agents.train import Args, train

    def run(out: Path, **kw) -> Path:
        base = {
            "timesteps": 256,
            "n_envs": 2,
            "n_steps": 64,
            "batch_size": 64,
            "eval_freq": 0,
            "checkpoint_freq": 10**9,
            "progress": False,
        }
        return train(Args(out=out, **(base | kw)))

    return run
