"""``ScavengeVectorEnv``: ``mtgym/Scavenge-v0`` as a Gymnasium ``VectorEnv`` on the batched core.

    envs = gymnasium.make_vec("mtgym:mtgym/Scavenge-v0", num_envs=64,
                              vectorization_mode="vector_entry_point", action_mode="delta")
    obs, info = envs.reset(seed=0)          # env i plays instance 0 + i
    obs, rewards, terminated, truncated, info = envs.step(actions)   # actions: (64, A)

One compiled call steps every episode (``mtgym.env.batched``); what it returns is, value
for value, what ``SyncVectorEnv`` of 64 ``ScavengeEnv``s with the same keywords returns
(``tests/env/test_vector.py``): the observation as a dict of (B, ...) arrays in the default
``obs_layout="dict"`` (batched action masks in ``obs["action_mask"]``,
``info["action_mask"]`` and ``action_masks()``; ``"flat"``: one (B, size) float32 array,
``"masked"``: ``{"observations", "action_mask"}``, as ``mtgym.env.layout`` lays them out),
float64 rewards, and ``info`` as Gymnasium's vector envs give it (each key's (B, ...)
array with its ``_key`` mask; ``repair`` and, for the episodes that ended, ``metrics`` as
nested dicts). Seeds as ``SyncVectorEnv``: ``reset(seed=s)`` resets env i with ``s + i``,
an auto-reset draws the next instance seed from env i's own generator.

Auto-reset (``metadata["autoreset_mode"]``): Gymnasium 1.x's ``NEXT_STEP`` by default (the
step after an episode ended resets it, ignoring its action: reward 0, not terminated, the
reset's info), or ``SAME_STEP`` (``info["final_obs"]``, ``info["final_info"]``) or
``DISABLED`` (reset ended episodes with ``reset(options={"reset_mask": mask})``), as the
``autoreset_mode`` keyword of ``SyncVectorEnv``. Resets build the instance in Python (the
generator), for the episodes that need one only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from mtgym.env.actions.base import ENGINE_REPAIRS
from mtgym.env.batched import COUNTER_COLUMNS, F_TIME, I_REPAIR, BatchedCore
from mtgym.env.env import ScavengeEnv
from mtgym.env.step import INFO_ALIASES, STEP_COUNTERS

#: The step's counter keys of ``info`` and their aliases, in ``ScavengeEnv.step``'s order,
#: and where each is in the core's arrays (``COUNTER_COLUMNS``: in ``floats``?, column).
_COUNTER_KEYS = (*STEP_COUNTERS, *INFO_ALIASES)
_COLUMNS = (
    *COUNTER_COLUMNS,
    *(COUNTER_COLUMNS[STEP_COUNTERS.index(key)] for key in INFO_ALIASES.values()),
)
#: The ``ints`` columns of the integer counter keys, and the ``floats`` columns of the time
#: and of the float ones, in ``_COUNTER_KEYS``' order (one fancy index each: fresh rows).
_INT_COLUMNS = [c for is_float, c in _COLUMNS if not is_float]
_FLOAT_COLUMNS = [F_TIME, *(c for is_float, c in _COLUMNS if is_float)]


def make_envs(num_envs: int, scenario: Any = "default", **kwargs: Any) -> list[ScavengeEnv]:
    """``num_envs`` ``ScavengeEnv``s with the same keywords (the scenario's generator is
    loaded once and shared: it is a pure function of the seed).

    Args:
        num_envs: how many, >= 1.
        scenario: ``ScavengeEnv``'s first argument (a mapping's keywords go to every env).
        **kwargs: ``ScavengeEnv``'s keywords, the same for every env.

    Returns:
        The envs, not reset.

    Raises:
        ValueError: ``num_envs`` is not a positive int.
    """
    if not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if isinstance(scenario, Mapping):  # (an env_config: every env gets its keywords)
        scenario, kwargs = (
            scenario.get("scenario", "default"),
            {
                **{k: v for k, v in scenario.items() if k != "scenario"},
                **kwargs,
            },
        )
    first = ScavengeEnv(scenario, **kwargs)
    shared = first._fixed if first._fixed is not None else first._generator
    return [first, *(ScavengeEnv(shared, **kwargs) for _ in range(num_envs - 1))]  # type: ignore[arg-type]  # one is set


class ScavengeVectorEnv(VectorEnv):
    """``num_envs`` episodes of ``ScavengeEnv`` stepped in one compiled call (module
    docstring); the keywords are ``ScavengeEnv``'s (``render_mode`` excepted).

    Args:
        num_envs: the episodes B stepped together.
        scenario: ``ScavengeEnv``'s first argument, shared by every episode.
        autoreset_mode: Gymnasium's ``AutoresetMode`` (or its value as a str).
        **kwargs: ``ScavengeEnv``'s keywords.

    Attributes:
        core: the ``BatchedCore`` that steps the episodes.
        layout: the observation's layout (``obs_layout``; ``mtgym.env.layout.ObsLayout``).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        num_envs: int = 1,
        scenario: Any = "default",
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> None:
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        envs = make_envs(num_envs, scenario, **kwargs)
        self.core = BatchedCore(envs)
        self.num_envs = num_envs
        self.layout = envs[0].layout  # the envs' ``obs_layout``
        self.single_observation_space = self.layout.space
        self.single_action_space = self.core.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = None
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)
        self._reset_done = False

    # -- Gymnasium's vector API ----------------------------------------------------------
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every episode (or those of ``options["reset_mask"]``), seeds as
        ``SyncVectorEnv``: an int ``s`` gives env i ``s + i``.

        Args:
            seed: None (each env draws its next instance), an int ``s`` (env i plays
                instance ``s + i``) or one seed (or None) per env.
            options: ``{"reset_mask": (B,) bool}`` resets only those envs (at least one);
                any other option goes to ``ScavengeEnv.reset`` (which takes none).

        Returns:
            The batched observation and the reset envs' infos (Gymnasium's vector layout).

        Raises:
            ValueError: a seed list of the wrong length, or a bad ``reset_mask``.
        """
        n = self.num_envs
        if seed is None:
            seed = [None] * n
        elif isinstance(seed, (int, np.integer)):
            seed = [int(seed) + i for i in range(n)]
        if len(seed) != n:
            raise ValueError(f"If seeds are passed as a list the length must match num_envs={n}")
        options = dict(options) if options else None
        mask = np.ones(n, dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options.pop("reset_mask"))
            if mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a ({n},) bool array with a True")
            options = options or None
        elif self._reset_done is False and not mask.all():  # pragma: no cover - defensive
            raise RuntimeError("the first reset resets every env")
        infos: dict[str, Any] = {}
        for i in np.flatnonzero(mask):
            _, info = self.core.reset(int(i), seed=seed[i], options=options)
            infos = self._add_info(infos, info, int(i))
        self._autoreset[mask] = False
        self._reset_done = True
        return self._observations(), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """One decision of every episode (module docstring: auto-reset).

        Args:
            actions: (B, A) integer actions; the rows of episodes being auto-reset this
                step (``NEXT_STEP``) are checked but not applied.

        Returns:
            (observations, rewards (B,) float64, terminated (B,) bool, truncated (B,) bool,
            infos), as ``SyncVectorEnv`` of ``ScavengeEnv``s returns them.

        Raises:
            RuntimeError: before ``reset``, or an ended episode not reset while
                ``autoreset_mode`` is ``DISABLED``.
            ValueError: an action out of the space or a placement that does not fit,
                naming the env.
        """
        if not self._reset_done:
            raise RuntimeError("call reset() before step()")
        core, n = self.core, self.num_envs
        if self.autoreset_mode is AutoresetMode.DISABLED and self._autoreset.any():
            raise RuntimeError(
                "autoreset_mode is DISABLED: reset the ended envs with options={'reset_mask': ...}"
            )
        resetting = self._autoreset.copy()
        live = ~resetting
        a = (
            core.check_actions(actions)
            if live.any()
            else np.zeros((n, core.codec.nvec.size), np.int64)
        )
        ended = core.step(a, live) if live.any() else np.zeros(0, dtype=np.int64)
        rewards = np.where(live, core.rewards, 0.0)
        terminated = live & core.terminated
        truncated = live & core.truncated
        finals: dict[str, Any] = {}
        if self.autoreset_mode is AutoresetMode.SAME_STEP and ended.size:
            final_obs = np.full(n, None, dtype=object)
            for i in ended:
                final_obs[i] = self.layout(core.observation(int(i)))
            finals = {"final_obs": final_obs, "_final_obs": np.isin(np.arange(n), ended)}
            final_info: dict[str, Any] = {}
            for i in ended:
                final_info = self._add_info(final_info, core.info(int(i)), int(i))
            finals["final_info"], finals["_final_info"] = final_info, finals["_final_obs"].copy()
            stepped = live.copy()
            stepped[ended] = False
            infos = self._step_infos(stepped, ended=np.zeros(0, dtype=np.int64))
            for i in ended:
                core.reset(int(i))
            infos = self._merge_resets(infos, ended)
        else:
            infos = self._step_infos(live, ended)
            for i in np.flatnonzero(resetting):
                core.reset(int(i))
            infos = self._merge_resets(infos, np.flatnonzero(resetting))
        infos.update(finals)
        if self.autoreset_mode is not AutoresetMode.SAME_STEP:
            self._autoreset = terminated | truncated
        return self._observations(), rewards, terminated, truncated, infos

    # -- info as Gymnasium's vector envs give it -----------------------------------------
    def _step_infos(self, live: np.ndarray, ended: np.ndarray) -> dict[str, Any]:
        """The steps' infos of the ``live`` episodes (``ScavengeEnv.step``'s keys, each with
        its ``_key`` mask; zeros elsewhere), the episodes that ended with their ``metrics``.
        Each value is fresh; the counters are rows of one array filled in one go.

        Args:
            live: (B,) bool, the episodes stepped.
            ended: the indices of those whose step ended them (they get ``metrics``).

        Returns:
            key -> (B,) value array (``action_mask`` and ``slots`` (B, ...)), ``_key`` ->
            (B,) bool; ``repair`` a nested dict of the same layout. Empty when none is
            live.
        """
        core = self.core
        if not live.any():
            return {}
        every = bool(live.all())
        repair_keys = (*core.codec.repair_keys, *ENGINE_REPAIRS)
        # integer columns: queued, the repair counts, then the integer counter keys
        ints = np.concatenate(
            (
                core.queued[None],
                core.decoded.T,
                core.ints[:, I_REPAIR : I_REPAIR + len(ENGINE_REPAIRS)].T,
                core.ints[:, _INT_COLUMNS].T,
            )
        )
        floats = core.floats[:, _FLOAT_COLUMNS].T  # time, then the float counter keys (fresh)
        mask, slots = core.mask.copy(), core.slots.copy()
        if not every:
            dead = ~live
            for a in (ints, floats):
                a[:, dead] = 0
            mask[dead] = 0
            slots[dead] = 0
        masks = np.repeat(live[None], 6 + len(_COUNTER_KEYS) + len(repair_keys), axis=0)
        rep = ints[1 : 1 + len(repair_keys)]
        infos: dict[str, Any] = {
            "time": floats[0],
            "_time": masks[0],
            "action_mask": mask,
            "_action_mask": masks[1],
            "slots": slots,
            "_slots": masks[2],
            "queued": ints[0],
            "_queued": masks[3],
        }
        repair: dict[str, Any] = {}
        for k, key in enumerate(repair_keys):
            repair[key], repair["_" + key] = rep[k], masks[6 + len(_COUNTER_KEYS) + k]
        infos["repair"], infos["_repair"] = repair, masks[4]
        infos["repaired"], infos["_repaired"] = rep.any(axis=0), masks[5]
        int_rows, float_rows = iter(ints[1 + len(repair_keys) :]), iter(floats[1:])
        for k, (key, (is_float, _)) in enumerate(zip(_COUNTER_KEYS, _COLUMNS, strict=True)):
            value = next(float_rows) if is_float else next(int_rows)
            infos[key], infos["_" + key] = value, masks[6 + k]
        for i in ended:
            infos = self._add_info(infos, {"metrics": core.metrics(int(i))}, int(i))
        return infos

    def _merge_resets(self, infos: dict[str, Any], reset: np.ndarray) -> dict[str, Any]:
        """Add the reset infos of the episodes ``reset`` (time, mask, slots, queued).

        Args:
            infos: the step's infos, completed in place (a missing key gets a zeroed array
                and mask).
            reset: the indices of the episodes just reset.

        Returns:
            ``infos``.
        """
        if not len(reset):
            return infos
        core = self.core
        for key, values in (
            ("time", core.time),
            ("action_mask", core.mask),
            ("slots", core.slots),
            ("queued", core.queued),
        ):
            if key not in infos:
                arr = np.zeros_like(values)
                infos[key], infos["_" + key] = arr, np.zeros(self.num_envs, dtype=np.bool_)
            infos[key][reset] = values[reset]
            infos["_" + key][reset] = True
        return infos

    def _observations(self) -> Any:
        """The batched observation in the envs' ``obs_layout``, fresh arrays (a step
        overwrites the core's).
        """
        if self.layout.name != "dict":
            return self.layout(self.core.obs)  # (fresh: flattened, the mask cast)
        return {key: a.copy() for key, a in self.core.obs.items()}

    # -- masks and helpers ---------------------------------------------------------------
    @property
    def envs(self) -> list[Any]:
        """The episodes' ``ScavengeEnv``s, in sync with the batch (to read, not to step)."""
        return self.core.envs

    def action_masks(self) -> np.ndarray:
        """(B, mask size) bool: each episode's legal actions (sb3-contrib's layout)."""
        return self.core.mask.astype(bool)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method (or read an attribute) of every episode's ``ScavengeEnv``
        (``noop``, ``sample_valid``, ...), in sync with the batch.

        Args:
            name: the method or attribute (of the env as given, wrappers included).
            *args: the call's positional arguments (unused for an attribute).
            **kwargs: its keyword arguments.

        Returns:
            One result per env, in order.
        """
        out = []
        for i in range(self.num_envs):
            value = getattr(self.core.env(i), name)
            out.append(value(*args, **kwargs) if callable(value) else value)
        return tuple(out)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """An attribute of every episode's ``ScavengeEnv``.

        Args:
            name: the attribute (a method is called without arguments, as ``call``).

        Returns:
            One value per env, in order.
        """
        return self.call(name)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every episode's env (Gymnasium's ``close`` calls this); ``kwargs`` unused."""
        for env in self.envs:
            env.close()
