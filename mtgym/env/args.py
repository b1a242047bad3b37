"""Checks of ``ScavengeEnv``'s keywords: a clear ``TypeError``/``ValueError`` naming the
keyword, its value and what is allowed, before anything is built.

Nothing is clipped silently: an explicit ``max_count`` above the scenario's node count is
an error (``None`` takes the largest ``max_nodes``, capped at the node count, as documented).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from mtgym.core.limits import MAX_HORIZON_S, MAX_SLOTS, MIN_DECISION_INTERVAL_S
from mtgym.core.names import INFO_MODES, REWARD_NAMES
from mtgym.env.actions import CODECS

RENDER_MODES = ("ansi", "rgb_array")


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {allowed}; got {value!r}")
    if value not in allowed:
        raise ValueError(f"{name} {value!r} is not one of {allowed}")
    return value


def _seconds(name: str, value: Any, lo: float, hi: float = MAX_HORIZON_S) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number of seconds or None; got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and lo <= v <= hi):
        raise ValueError(f"{name} must be finite and in [{lo:g}, {hi:g}] s; got {value!r}")
    return v


def _count(name: str, value: Any, lo: int, hi: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int or None; got {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}; got {value!r}")
    return int(value)


def check_keywords(
    *,
    action_mode: Any,
    reward: Any,
    info_mode: Any,
    horizon_s: Any,
    decision_interval_s: Any,
    max_jobs: Any,
    max_count: Any,
    render_mode: Any,
    debug: Any,
) -> dict[str, Any]:
    """The keywords (after the scenario's ``episode`` defaults are filled in), checked and
    normalised (floats, ints); raises ``TypeError`` or ``ValueError`` naming the keyword.
    """
    if render_mode is not None:
        _choice("render_mode", render_mode, RENDER_MODES)
    if not isinstance(debug, (bool, int)) or debug not in (0, 1):
        raise TypeError(f"debug must be a bool; got {debug!r}")
    return {
        "action_mode": _choice("action_mode", action_mode, tuple(CODECS)),
        "reward": _choice("reward", reward, REWARD_NAMES),
        "info_mode": _choice("info_mode", info_mode, INFO_MODES),
        "horizon_s": _seconds("horizon_s", horizon_s, 1e-9),
        "decision_interval_s": _seconds(
            "decision_interval_s", decision_interval_s, MIN_DECISION_INTERVAL_S
        ),
        "max_jobs": _count("max_jobs", max_jobs, 1, MAX_SLOTS),
        "max_count": _count("max_count", max_count, 1, 2**31 - 1),
        "render_mode": render_mode,
        "debug": bool(debug),
    }


def resolve_max_count(max_count: int | None, largest_max_nodes: int, num_nodes: int) -> int:
    """The count cap: ``max_count`` as given (at most the node count, else ``ValueError``),
    or, when None, the largest ``max_nodes`` of the probe instance capped at the node count.
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
    """``reset(options=...)``: no option is supported yet, so any key is an error."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise TypeError(f"reset options must be a dict or None; got {options!r}")
    if options:
        raise ValueError(
            f"unknown reset option(s) {sorted(map(str, options))}; ScavengeEnv takes none "
            "(pass scenario settings to gym.make)"
        )
