"""Gymnasium wrappers for ``ScavengeEnv``: time discounting (a semi-MDP) and training seeds.

``TimeDiscount(env, gamma_per_hour)``
    Steps last different simulated times (a decision at every event), so a fixed per-step
    discount weighs a one-second step like a one-hour one. The wrapper gives each step the
    discount of its duration, ``gamma_per_hour ** (dt / 3600)`` with ``dt = info["dt"]``,
    in ``info["discount"]``, for agents that take a per-step discount (the semi-MDP target
    ``G_k = r_k + discount_k * G_{k+1}``). For learners whose gamma is fixed, such as
    stable-baselines3 (PPO, MaskablePPO, A2C), it also converts the rewards
    (``scale_rewards=True``, the default): the reward of step k is multiplied by the
    discount accumulated from the episode's start to the step's start,
    ``gamma_per_hour ** ((t_k - t_0) / 3600)`` (``info["cumulative_discount"]``), so the
    plain sum of the returned rewards is the episode's return discounted in simulated time.
    Use it with ``gamma=1.0`` in SB3 (keep ``gae_lambda`` < 1 for variance); the value
    function then estimates the time-discounted return, which shrinks with elapsed time as
    the observation's ``global[0]`` (time / horizon) lets it see. Each step's reward is
    discounted at the step's start (the samples accrued over the step are not discounted
    within it). ``info["raw_reward"]`` keeps the undiscounted reward.

        env = TimeDiscount(ScavengeEnv("default"), gamma_per_hour=0.9)
        model = MaskablePPO("MultiInputPolicy", env, gamma=1.0)

``SeedOffset(env, offset)``
    ``reset(seed=s)`` plays instance ``s + offset``. ``env.reset(seed=s)`` plays the
    evaluator's instance ``s`` (``mtgym evaluate --seed s``), so training envs seeded with
    small integers would train on the evaluation instances; ``mtgym train`` offsets its
    training seeds by ``TRAIN_SEED_OFFSET`` to keep them apart.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym

TRAIN_SEED_OFFSET = 1 << 30  # training instances: seeds >= 2**30 (evaluation uses small ones)


class TimeDiscount(gym.Wrapper):
    """Per-step discount of a semi-MDP from a discount per simulated hour (module docstring).

    Args:
        env: the env; its step's info must have ``dt`` (``ScavengeEnv``'s has).
        gamma_per_hour: the discount of one simulated hour, in (0, 1].
        scale_rewards: multiply each reward by the discount accumulated up to its step's
            start (for a learner with gamma = 1); False only adds the info keys.

    Raises:
        ValueError: ``gamma_per_hour`` outside (0, 1].
    """

    def __init__(self, env: gym.Env, gamma_per_hour: float, *, scale_rewards: bool = True) -> None:
        super().__init__(env)
        if not 0.0 < gamma_per_hour <= 1.0:
            raise ValueError(f"gamma_per_hour must be in (0, 1], got {gamma_per_hour!r}")
        self.gamma_per_hour = float(gamma_per_hour)
        self.scale_rewards = scale_rewards
        self._log_gamma = math.log(self.gamma_per_hour)
        self._elapsed_s = 0.0  # simulated seconds since the episode's start

    def discount(self, dt: float) -> float:
        """The discount of a step lasting ``dt`` simulated seconds.

        Args:
            dt: the duration, simulated seconds.

        Returns:
            ``gamma_per_hour ** (dt / 3600)``, computed as ``exp(log(gamma) dt / 3600)``.
        """
        return math.exp(self._log_gamma * dt / 3600.0)

    def reset(self, **kwargs: Any):
        """The inner env's ``reset(**kwargs)``; the episode's clock restarts at 0."""
        self._elapsed_s = 0.0
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        """The inner env's step, the reward discounted to the episode's start.

        Args:
            action: the inner env's action.

        Returns:
            Its (obs, reward, terminated, truncated, info); the reward times
            ``info["cumulative_discount"]`` when ``scale_rewards``; ``info`` gains
            ``discount``, ``cumulative_discount`` and ``raw_reward``.

        Raises:
            KeyError: the inner info has no ``dt``.
        """
        obs, reward, terminated, truncated, info = self.env.step(action)
        if "dt" not in info:
            raise KeyError("TimeDiscount needs info['dt'] (the step's simulated seconds)")
        dt = float(info["dt"])
        cumulative = self.discount(self._elapsed_s)
        self._elapsed_s += dt
        info["discount"] = self.discount(dt)
        info["cumulative_discount"] = cumulative
        info["raw_reward"] = reward
        if self.scale_rewards:
            reward = reward * cumulative  # type: ignore[operator]  # SupportsFloat: a float
        return obs, reward, terminated, truncated, info


class SeedOffset(gym.Wrapper):
    """``reset(seed=s)`` -> the inner env's ``reset(seed=s + offset)`` (module docstring).

    Args:
        env: the env.
        offset: added to every reset seed; ``TRAIN_SEED_OFFSET`` by default, which keeps
            training instances apart from the evaluation ones.
    """

    def __init__(self, env: gym.Env, offset: int = TRAIN_SEED_OFFSET) -> None:
        super().__init__(env)
        self.offset = int(offset)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """The inner env's reset with ``seed + offset`` (None stays None: the inner env
        draws its next seed); ``options`` passed on.
        """
        return self.env.reset(seed=None if seed is None else seed + self.offset, options=options)
