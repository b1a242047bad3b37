"""Checks of ``ScavengeEnv``'s keywords: a clear ``TypeError``/``ValueError`` naming the
keyword, its value and what is allowed, before anything is built.

Nothing is clipped silently: an explicit ``max_count`` above the scenario's node count is
an error (``None`` takes the largest ``max_nodes``, capped at the node count, as documented).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from mtgym.core.limits import MAX_HORIZON_S, MAX_SLOTS, MIN_DECISION_INTERVAL_S
from mtgym.core.names import (
    DEFAULT_ACTION_MODE,
    DEFAULT_INFO_MODE,
    DEFAULT_REWARD,
    INFO_MODES,
)
from mtgym.env.actions import CODECS
from mtgym.env.layout import OBS_LAYOUTS
from mtgym.env.reward import REWARDS

RENDER_MODES = ("ansi", "rgb_array")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """``value`` if it is one of the names ``allowed``.

    Args:
        name: the keyword, for the messages.
        value: its value.
        allowed: the names it may take.

    Raises:
        TypeError: not a ``str``.
        ValueError: a ``str`` not in ``allowed``.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {allowed}; got {value!r}")
    if value not in allowed:
        raise ValueError(f"{name} {value!r} is not one of {allowed}")
    return value


def _seconds(name: str, value: Any, lo: float, hi: float = MAX_HORIZON_S) -> float | None:
    """A duration in seconds as a float, or None.

    Args:
        name: the keyword, for the messages.
        value: None, or a real number (not a bool).
        lo: the smallest allowed value.
        hi: the largest.

    Raises:
        TypeError: neither None nor a real number.
        ValueError: not finite, or outside [lo, hi].
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds or None; got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and lo <= v <= hi):
        raise ValueError(f"{name} must be finite and in [{lo:g}, {hi:g}] s; got {value!r}")
    return v


def _count(name: str, value: Any, lo: int, hi: int) -> int | None:
    """A count as an int, or None.

    Args:
        name: the keyword, for the messages.
        value: None, or an integral number (not a bool; numpy integers too).
        lo: the smallest allowed value.
        hi: the largest.

    Raises:
        TypeError: neither None nor an integral number.
        ValueError: outside lo..hi.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int or None; got {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}; got {value!r}")
    return int(value)


@dataclass(frozen=True)
class EnvKeywords:
    """``ScavengeEnv``'s keywords but ``scenario``: as given (any types; None = not set), or
    as ``check_keywords`` returns them (the types below).

    Attributes:
        action_mode: a registered action mode, a key of ``CODECS`` (``"counts"``, ...).
        reward: a registered reward (``mtgym.env.reward.REWARDS``).
        info_mode: one of ``INFO_MODES``: what the observation tells of the jobs.
        horizon_s: the episode's length in simulated seconds, in [1e-9, ``MAX_HORIZON_S``];
            None: up to the instance's own ``t_end``.
        decision_interval_s: decide every that many simulated seconds, in
            [``MIN_DECISION_INTERVAL_S``, ``MAX_HORIZON_S``]; None: at every decision event.
        max_jobs: job slots S, 1..``MAX_SLOTS``; None: ``mtgym.env.slots.slot_rule``.
        max_count: the count cap of the action space, >= 1 here and at most the node count
            (``resolve_max_count``, once the nodes are known); None: derived there.
        obs_layout: the observation's layout, one of ``OBS_LAYOUTS`` (``mtgym.env.layout``);
            None: ``"dict"``. A client's choice, not a scenario's: no ``episode`` section
            sets it.
        render_mode: ``"ansi"``, ``"rgb_array"`` (``RENDER_MODES``) or None: no rendering.
        debug: check every invariant after each step (slow); a bool, or the int 0 or 1.
    """

    action_mode: Any = None
    reward: Any = None
    info_mode: Any = None
    horizon_s: Any = None
    decision_interval_s: Any = None
    max_jobs: Any = None
    max_count: Any = None
    obs_layout: Any = None
    render_mode: Any = None
    debug: Any = False


#: The keywords a scenario file's ``episode`` section (``EpisodeSpec``) may set, each with
#: the built-in default taken when neither the keyword nor the section sets it.
SCENARIO_DEFAULTS = {
    "action_mode": DEFAULT_ACTION_MODE,
    "reward": DEFAULT_REWARD,
    "info_mode": DEFAULT_INFO_MODE,
    "horizon_s": None,
    "decision_interval_s": None,
    "max_jobs": None,
}


def resolve_keywords(given: EnvKeywords, section: Any) -> EnvKeywords:
    """Fill the keywords left None: an explicit keyword wins over the scenario file's
    ``episode`` section, which wins over the built-in default (``SCENARIO_DEFAULTS``).

    Args:
        given: the keywords as passed to ``ScavengeEnv`` (unchecked).
        section: the scenario's ``EpisodeSpec`` (its attributes named as the keywords), or
            None for a generator or instance without one; a None attribute sets nothing.

    Returns:
        ``given`` with the ``SCENARIO_DEFAULTS`` keywords filled in (still unchecked);
        ``max_count``, ``render_mode`` and ``debug`` as given.
    """
    filled = {}
    for key, default in SCENARIO_DEFAULTS.items():
        value = getattr(given, key)
        if value is None:
            value = getattr(section, key, None) if section is not None else None
            value = default if value is None else value
        filled[key] = value
    return replace(given, **filled)


def check_keywords(kw: EnvKeywords) -> EnvKeywords:
    """The keywords (after ``resolve_keywords``), checked and normalised.

    Checked in the order ``render_mode``, ``debug``, then the attributes' order: with
    several wrong keywords, the first of them is the one named.

    Args:
        kw: the keywords, of any types.

    Returns:
        The same values as Python ``str``, ``float`` and ``int`` (``debug`` a ``bool``).

    Raises:
        TypeError: a keyword of the wrong type (a bool is not a number), naming it and the
            value.
        ValueError: a value not allowed (an unknown name, a number out of its range, a
            non-finite number of seconds), naming the keyword, the value and what is allowed.
    """
    render_mode, debug = kw.render_mode, kw.debug
    if render_mode is not None:
        _choice("render_mode", render_mode, RENDER_MODES)
    if not isinstance(debug, (bool, int)) or debug not in (0, 1):
        raise TypeError(f"debug must be a bool; got {debug!r}")
    return EnvKeywords(
        action_mode=_choice("action_mode", kw.action_mode, tuple(CODECS)),
        reward=_choice("reward", kw.reward, tuple(REWARDS)),
        info_mode=_choice("info_mode", kw.info_mode, INFO_MODES),
        horizon_s=_seconds("horizon_s", kw.horizon_s, 1e-9),
        decision_interval_s=_seconds(
            "decision_interval_s", kw.decision_interval_s, MIN_DECISION_INTERVAL_S
        ),
        max_jobs=_count("max_jobs", kw.max_jobs, 1, MAX_SLOTS),
        max_count=_count("max_count", kw.max_count, 1, 2**31 - 1),
        obs_layout=_choice(
            "obs_layout", OBS_LAYOUTS[0] if kw.obs_layout is None else kw.obs_layout, OBS_LAYOUTS
        ),
        render_mode=render_mode,
        debug=bool(debug),
    )


def keywords_from_config(config: Mapping[str, Any], given: EnvKeywords) -> tuple[Any, EnvKeywords]:
    """``ScavengeEnv(config)``: the scenario and the keywords of a mapping (an RLlib
    ``env_config``: ``PPOConfig().environment(ScavengeEnv, env_config={...})`` calls the
    class with it), for an env built with no keyword of its own.

    Args:
        config: ``"scenario"`` (default ``"default"``) and any of ``ScavengeEnv``'s keywords.
            RLlib's ``EnvContext`` carries the worker's index as attributes, not keys.
        given: the keywords passed beside the mapping: all must be left unset.

    Returns:
        (the scenario, the keywords of ``config``), unchecked.

    Raises:
        TypeError: a key that is not a keyword (all such keys are named), a key that is not
            a str, a keyword also passed beside the mapping, or ``num_envs`` (the class
            given to RLlib's ``vector_entry_point`` mode: the message names the id to use).
    """
    if given != EnvKeywords():
        raise TypeError("give the keywords inside the config mapping or beside it, not both")
    if "num_envs" in config:  # (RLlib's vector_entry_point mode calls the class so)
        raise TypeError(
            "ScavengeEnv is one env, not a vector of num_envs: for RLlib's "
            "gym_env_vectorize_mode='vector_entry_point' give the id "
            "'mtgym:mtgym/Scavenge-v0' (its vector entry point batches them), or use 'sync'"
        )
    names = {f.name for f in fields(EnvKeywords)}
    unknown = sorted(map(repr, set(config) - names - {"scenario"}))
    if unknown:
        raise TypeError(
            f"unknown ScavengeEnv keyword(s) in the config: {', '.join(unknown)}; "
            f"allowed: 'scenario', {', '.join(sorted(names))}"
        )
    kw = {k: v for k, v in config.items() if k != "scenario"}
    return config.get("scenario", "default"), EnvKeywords(**kw)


def resolve_max_count(max_count: int | None, largest_max_nodes: int, num_nodes: int) -> int:
    """The count cap: ``max_count`` as given (at most the node count, else ``ValueError``),
    or, when None, the largest ``max_nodes`` of the probe instance capped at the node count.

    Args:
        max_count: the checked keyword, >= 1, or None.
        largest_max_nodes: the largest ``max_nodes`` of the scenario's jobs (1 without
            jobs).
        num_nodes: the scenario's node count.

    Returns:
        The count cap C, 1..num_nodes.

    Raises:
        ValueError: ``max_count`` above ``num_nodes`` (nothing is clipped silently).
    """
    if max_count is None:
        return max(1, min(largest_max_nodes, num_nodes))
    if max_count > num_nodes:
        raise ValueError(
            f"max_count={max_count} is above the scenario's {num_nodes} nodes; give at most "
            f"{num_nodes} (or None: the largest max_nodes, {min(largest_max_nodes, num_nodes)})"
        )
    return max_count


def check_reset_options(options: dict[str, Any] | None) -> None:
    """``reset(options=...)``: no option is supported yet, so any key is an error.

    Args:
        options: ``reset``'s options; None and ``{}`` pass.

    Raises:
        TypeError: not a dict.
        ValueError: any key (all of them are named).
    """
    if options is None:
        return
    if not isinstance(options, dict):
        raise TypeError(f"reset options must be a dict or None; got {options!r}")
    if options:
        raise ValueError(
            f"unknown reset option(s) {sorted(map(str, options))}; ScavengeEnv takes none "
            "(pass scenario settings to gym.make)"
        )
