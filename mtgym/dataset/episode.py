"""One episode of a registered policy in the Gymnasium env, every step kept as arrays.

The policy decides on its own information-limited view at each of the env's decision
points; its allocation becomes the env's action through the action mode's codec
(``encode``, as ``agents.imitation`` labels demonstrations), and the env steps with that
action, paying every rescale and pre-emption cost and repairing what its joint limits
forbid. The episode is therefore the policy *as expressed in that action mode*: in
``shares`` it is close to, not always equal to, the policy's own ``mtgym evaluate`` episode.

What is kept (Minari's episode layout): T+1 observations (the reset's and each step's),
T actions, rewards, terminations and truncations, and T+1 infos of fixed keys
(``INFO_KEYS``: the reset's ``repaired`` is False). Same scenario, policy, seed and settings:
the same arrays, bit for bit, in any process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: the env id every dataset is collected in (``recover_environment`` makes it again)
ENV_ID = "mtgym/Scavenge-v0"
#: the infos kept per step: the legal-action mask, whether the env repaired the action,
#: and the simulated time
INFO_KEYS = ("action_mask", "repaired", "time")
#: the pseudo-policy of uniformly random actions among those the env need not repair
#: (``ScavengeEnv.sample_valid`` with the env's own generator, seeded by ``reset(seed)``):
#: D4RL's random policy, the zero of the normalised score
UNIFORM_RANDOM = "uniform-random"
#: the default decision interval: the shipped agents' recipe decides every 60 s
#: (``agents.cli.TRAIN_DECISION_INTERVAL_S``; a test keeps them equal)
DECISION_INTERVAL_S = 60.0


@dataclass(frozen=True)
class EnvSettings:
    """The env a dataset is collected in: the ``gymnasium.make`` keywords beside the scenario.

    Attributes:
        action_mode: the action mode the policy's decisions are encoded in.
        obs_layout: ``dict``, ``flat`` or ``masked`` (``mtgym.env.layout``).
        decision_interval_s: seconds between decisions (None: at every event).
        reward: the env's reward (None: its default).
    """

    action_mode: str = "shares"
    obs_layout: str = "dict"
    decision_interval_s: float | None = DECISION_INTERVAL_S
    reward: str | None = None

    def kwargs(self, scenario: str) -> dict[str, Any]:
        """``gymnasium.make`` keywords: JSON values only, so the env spec serialises."""
        kw = {k: v for k, v in asdict(self).items() if v is not None}
        return {"scenario": str(scenario), **kw}


@dataclass
class EpisodeArrays:
    """One episode's steps (module docstring).

    Attributes:
        seed: the instance seed (``env.reset(seed=seed)`` replays it).
        observations: (T+1, ...) arrays, or a dict of them (the ``dict`` and ``masked``
            layouts).
        actions: (T, A) the env actions.
        rewards: (T,) float64.
        terminations: (T,) bool.
        truncations: (T,) bool.
        infos: ``INFO_KEYS`` -> (T+1, ...) arrays.
        wall_s: the seconds the episode took to play (the env and the policy's decisions;
            what a dataset's collection time sums), not part of the data.
    """

    seed: int
    observations: dict[str, np.ndarray] | np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, np.ndarray]
    wall_s: float = 0.0

    @property
    def episode_return(self) -> float:
        """The undiscounted return (what Minari's normalised score divides)."""
        return float(self.rewards.sum())

    @property
    def repaired_share(self) -> float:
        """The share of steps whose action the env repaired."""
        flags = self.infos["repaired"][1:]
        return float(flags.mean()) if flags.size else 0.0

    def __len__(self) -> int:
        """T, the steps."""
        return int(self.rewards.shape[0])


def make_env(scenario: str, settings: EnvSettings) -> Any:
    """The wrapped env ``gymnasium.make`` builds for ``scenario`` (its spec is the dataset's)."""
    import gymnasium as gym

    import mtgym  # noqa: F401  (registers the env ids)

    return gym.make(ENV_ID, **settings.kwargs(scenario))


def _stack(items: list[Any]) -> dict[str, np.ndarray] | np.ndarray:
    if isinstance(items[0], dict):
        return {k: np.stack([o[k] for o in items]) for k in items[0]}
    return np.stack(items)


def _info(info: dict[str, Any]) -> dict[str, Any]:
    return {
        "action_mask": np.asarray(info["action_mask"], dtype=np.int8),
        "repaired": bool(info.get("repaired", False)),
        "time": float(info["time"]),
    }


def play_episode(
    scenario: str,
    policy: str | Any,
    seed: int,
    settings: EnvSettings,
    *,
    until: float | None = None,
    extra_info: Callable[[Any], dict[str, np.ndarray]] | None = None,
) -> EpisodeArrays:
    """Play instance ``seed`` of ``scenario`` with ``policy`` deciding (module docstring).

    Args:
        scenario: a scenario name or file (one machine: the env's spaces are fixed).
        policy: a registered policy string (``freetrain-speedup``, ``agent``,
            ``agent:runs/a``, ``module:factory``), configured as ``mtgym evaluate`` runs it
            on the scenario (its tuned knobs), or ``UNIFORM_RANDOM``; or a ``Policy``
            object, used as it is (a bridge trace's ``TracePolicy``).
        seed: the instance seed.
        settings: the env's keywords.
        until: end the episode (truncated) at the first step at or past this simulated
            time (None: where the env ends it).
        extra_info: called with the unwrapped env after the reset and after every step;
            its arrays join the step's infos (the same keys every time).

    Raises:
        PolicyUnsupportedError: the policy cannot run on the scenario.
    """
    from mtgym.evaluate import configure_policy, scenario_defaults
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator
    from mtgym.sim.view import ViewBuilder

    t0 = time.perf_counter()
    env = make_env(scenario, settings)
    more = extra_info or (lambda _env: {})
    try:
        base = env.unwrapped
        obs, info = env.reset(seed=int(seed))
        if not isinstance(policy, str):
            pol = policy
        elif policy != UNIFORM_RANDOM:
            defaults = scenario_defaults(get_generator(scenario))
            pol = configure_policy(make_policy(policy), defaults)
        if policy != UNIFORM_RANDOM:
            views = ViewBuilder(base.instance, pol.info_mode, policy_name=pol.name)
            pol.reset(views(base.state))
        observations, infos = [obs], [{**_info(info), **more(base)}]
        actions, rewards, terms, truncs = [], [], [], []
        while True:
            if policy == UNIFORM_RANDOM:
                action = base.sample_valid()
            else:
                node_job = np.asarray(pol.decide(views(base.state)).node_job)
                action = base.codec.encode(node_job, base.state, base.instance, base.slots)
            obs, reward, term, trunc, info = env.step(action)
            trunc = bool(trunc) or (until is not None and float(info["time"]) >= until)
            observations.append(obs)
            infos.append({**_info(info), **more(base)})
            actions.append(np.asarray(action))
            rewards.append(float(reward))
            terms.append(bool(term))
            truncs.append(bool(trunc))
            if term or trunc:
                break
    finally:
        env.close()
    info_arrays = {k: np.asarray([i[k] for i in infos]) for k in infos[0]}
    return EpisodeArrays(
        seed=int(seed),
        observations=_stack(observations),
        actions=np.stack(actions),
        rewards=np.asarray(rewards, dtype=np.float64),
        terminations=np.asarray(terms, dtype=bool),
        truncations=np.asarray(truncs, dtype=bool),
        infos=info_arrays,
        wall_s=time.perf_counter() - t0,
    )
