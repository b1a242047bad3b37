"""Rewards: one class per reward (a module here), registered by name.

Each reward (``mtgym.env.reward.base.Reward``) declares its compiled kernel, the step's
values it reads by name (``INPUTS``), per-episode weights or a scale if it needs them, and
its meaning; the env's compiled step is specialised per reward and never branches on it.
Built in: ``progress``, ``throughput``, ``jct`` and ``normalized`` (the default); see their
modules.

To add a reward: one module, with a ``Reward`` subclass, and ``register(cls)`` (a built-in:
its module in this folder, named as the reward, with the class as its ``REWARD``, and the
name in ``mtgym.core.names.REWARD_NAMES``). ``docs/architecture.md`` has the recipe.
"""

from __future__ import annotations

from importlib import import_module

from mtgym.core.names import REWARD_NAMES
from mtgym.env.reward.base import INPUTS, REWARDS, Reward, make_reward, register, unregister

#: The built-in rewards, in ``REWARD_NAMES``' order: each name's module's ``REWARD``.
BUILT_IN: tuple[type[Reward], ...] = tuple(
    import_module(f"{__name__}.{name}").REWARD for name in REWARD_NAMES
)
for _cls in BUILT_IN:
    register(_cls)

__all__ = ["BUILT_IN", "INPUTS", "REWARDS", "Reward", "make_reward", "register", "unregister"]
