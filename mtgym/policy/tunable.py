"""Baselines with knobs: values given, set by the scenario, or tuned for it.

A baseline's knobs are the constructor keywords a paper exposes (FreeTrain's admission cap
``max_jobs`` and ``t_fwd``, PAL's round length ``round_s``, ...). Their value on a scenario
comes from, first to last:

1. the constructor (``make_policy("freetrain", max_jobs=32)``): always wins;
2. the scenario's ``episode.baselines[<policy name>]``: set by hand in the scenario file, or,
   for the policies the file does not name, the ``mtgym tune`` record of that scenario
   (``mtgym.scenario.tuning``; ``mtgym.evaluate.scenario_defaults`` merges it in);
3. the policy's own default, which may scale with the machine (``admission_cap``).

``tuned=False`` skips 2 (the untuned defaults stay reachable by argument). ``mtgym tune``
sweeps ``tuning_grid(episode)`` coordinate by coordinate (``mtgym.tuning.sweep``).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from mtgym.core.types import JobStatus
from mtgym.sim.view import SchedulerView

#: BFTrainer's maxJ (its replayer's default), the floor of the scaled admission cap
MAX_JOBS_PAPER = 10
#: the ceiling of the scaled admission cap of the node-level MILP (``freetrain-milp``) only:
#: its model has admitted jobs x idle nodes binaries, beyond what HiGHS solves within
#: BFTrainer's 10 s per event on large machines. The count DP of every other admitting
#: baseline has no ceiling: 4,096 admitted jobs on 4,734 nodes cost it milliseconds per
#: decision (``scripts/bench_decision.py``, ``docs/performance.md``).
MAX_JOBS_MILP = 128


def records_knobs(init: Callable[..., None]) -> Callable[..., None]:
    """Decorate a tunable policy's ``__init__``: remember which keywords the caller gave.

    The knobs given stay fixed when a scenario's values are applied (``Tunable``).

    After ``__init__`` runs, the instance holds ``_given`` (keyword -> value, positional
    arguments bound to their names; ``tuned`` included when given) and ``_init`` (the
    undecorated ``__init__``, which ``apply_knobs`` calls again).

    Args:
        init: The policy's ``__init__``.
    """
    sig = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self: Tunable, *args: Any, **kwargs: Any) -> None:
        """Run ``init`` and record the arguments the caller passed."""
        given = sig.bind_partial(self, *args, **kwargs).arguments
        given.pop("self", None)
        init(self, *args, **kwargs)
        self._given = dict(given)
        self._init = init

    return wrapper


class Tunable:
    """Mixin of a baseline with knobs (module docstring).

    Subclasses list their knobs in ``KNOBS`` (constructor keywords), decorate ``__init__``
    with ``records_knobs`` and accept ``tuned``; ``tuning_grid`` names the values
    ``mtgym tune`` tries on a scenario, each knob's first value being its default.

    Attributes:
        name: The policy's name, the key of ``episode.baselines``.
        KNOBS: The constructor keywords that are knobs.
        tuned: Whether the scenario's values apply (``use_scenario_defaults``).
    """

    name: str
    KNOBS: ClassVar[tuple[str, ...]] = ()
    tuned: bool = True
    _given: dict[str, Any]
    _init: Callable[..., None]

    @property
    def knobs(self) -> dict[str, Any]:
        """The current value of every knob (after any scenario values were applied)."""
        return {k: getattr(self, k) for k in self.KNOBS}

    def apply_knobs(self, values: dict[str, Any]) -> None:
        """Rebuild with ``values`` for the knobs the constructor was not given.

        The instance is re-initialised in place (``__init__`` again with the caller's
        arguments and the free knobs); its ``name`` and the caller's record survive, so a
        later call still treats the caller's knobs as fixed.

        Args:
            values: Knob -> value (a scenario's ``episode.baselines[name]``).

        Raises:
            ValueError: a name that is not one of ``KNOBS``, or a value the constructor
                refuses (the message names the policy).
        """
        unknown = sorted(set(values) - set(self.KNOBS))
        if unknown:
            raise ValueError(
                f"policy {self.name!r} has no knob {', '.join(unknown)} "
                f"(its knobs: {', '.join(self.KNOBS) or 'none'})"
            )
        free = {k: v for k, v in values.items() if k not in self._given}
        if not free:
            return
        name, given = self.name, self._given
        try:
            self._init(self, **{**given, **free})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"policy {name!r} on this scenario: {exc}") from None
        self.name, self._given = name, given  # a factory's name and the caller's choices

    def use_scenario_defaults(self, episode: object) -> None:
        """Apply the scenario's values for this policy (``episode.baselines[name]``), then
        the scenario defaults the policy reads itself (``scenario_hook``).

        With ``tuned=False`` the baselines table is ignored; the hook runs either way.

        Args:
            episode: The scenario's ``EpisodeSpec`` (any object; a missing ``baselines``
                counts as empty).
        """
        table = getattr(episode, "baselines", None) or {}
        if self.tuned and self.name in table:
            self.apply_knobs(dict(table[self.name]))
        self.scenario_hook(episode)

    def scenario_hook(self, episode: object) -> None:
        """Read other scenario defaults: the next class's hook in the MRO (e.g. a T_fwd
        mixin's), else nothing.
        """
        nxt = getattr(super(), "scenario_hook", None)
        if nxt is not None:
            nxt(episode)

    def tuning_grid(self, episode: object) -> dict[str, list[Any]]:
        """Knob -> values ``mtgym tune`` tries on a scenario (first = the default).

        Args:
            episode: The scenario's ``EpisodeSpec`` (grids may scale with it).

        Returns:
            Empty here: a policy with knobs overrides it.
        """
        return {}


def admission_cap(view: SchedulerView, max_jobs: int | None, ceiling: int | None = None) -> int:
    """How many active jobs an admitting baseline considers now.

    ``max_jobs`` given: that number (BFTrainer's maxJ). ``None``, the default: enough jobs
    to use the idle pool, scaling with the machine (``docs/baselines.md``): the active jobs
    in admission order (running first, then by submission), as many as it takes for their
    summed ``min_nodes`` to reach the idle nodes, never fewer than ``MAX_JOBS_PAPER``. So
    every job that could run at its minimum on the idle nodes is considered, on 64 nodes as
    on 4,734; the solver then sizes each job. No ceiling by default: the count DP needs
    none (``MAX_JOBS_MILP`` is the node-level MILP's).

    Args:
        view: The current state.
        max_jobs: The fixed cap, or None for the scaled one.
        ceiling: The scaled cap's ceiling (a solver's budget, e.g. ``MAX_JOBS_MILP``); None:
            none. A fixed ``max_jobs`` ignores it.

    Returns:
        The cap; it may exceed the number of active jobs (callers slice with it).
    """
    if max_jobs is not None:
        return int(max_jobs)
    order = admission_order(view)
    idle = int(np.count_nonzero(view.available))
    need = np.cumsum(np.maximum(view.min_nodes[order], 1))
    k = min(int(np.searchsorted(need, idle, side="left")) + 1, order.size)
    if ceiling is not None:
        k = min(k, int(ceiling))
    return max(MAX_JOBS_PAPER, k)


def admission_order(view: SchedulerView) -> np.ndarray:
    """Active jobs, running ones first (they keep their admission), then by submission.

    Within each group jobs keep index order, which is submission order.

    Returns:
        The job indices, int64.
    """
    active = np.flatnonzero(view.status == JobStatus.ACTIVE)
    running = active[view.n_nodes[active] > 0]
    waiting = active[view.n_nodes[active] == 0]
    return np.concatenate([running, waiting])


def admit(view: SchedulerView, max_jobs: int | None, ceiling: int | None = None) -> np.ndarray:
    """The admitted jobs: the first ``admission_cap`` of ``admission_order``."""
    return admission_order(view)[: admission_cap(view, max_jobs, ceiling)]


def cap_grid(default: int | None, episode: object) -> list[int | None]:
    """The admission caps ``mtgym tune`` tries before it knows the machine: the default,
    the paper's 10, the scenario's slot count, and 2x, 4x and 8x of it (sorted, no
    repeats). ``mtgym.tuning.sweep`` widens it to the scenario's job count
    (``widen_caps``).

    Args:
        default: The policy's default cap (None: scaled), tried first.
        episode: The scenario's ``EpisodeSpec``; its ``max_jobs`` (None or missing: 16)
            is the slot count.
    """
    slots = int(getattr(episode, "max_jobs", 16) or 16)
    fixed = sorted({MAX_JOBS_PAPER, slots, 2 * slots, 4 * slots, 8 * slots})
    return [default, *[v for v in fixed if v != default]]


def widen_caps(values: list[int | None], limit: int) -> list[int | None]:
    """An admission-cap grid carried up to ``limit`` (the scenario's job count): the fixed
    caps at or below it, then doublings of the largest up to it, then ``limit`` itself, so
    the sweep reaches a cap that admits every job of the scenario. Non-integer entries
    (None: the scaled default) keep their place; fixed caps above ``limit`` admit no more
    than ``limit`` does and are dropped.

    Args:
        values: The grid (``cap_grid``'s), default first.
        limit: The largest cap worth trying (>= 1).
    """
    limit = max(1, int(limit))
    out = [v for v in values if v is None or int(v) <= limit]
    fixed = [int(v) for v in out if v is not None]
    top = max(fixed, default=MAX_JOBS_PAPER)
    while 2 * top < limit:
        top *= 2
        out.append(top)
    if limit not in fixed:
        out.append(limit)
    return out


def scaled(values: list[float], base: float) -> list[float]:
    """``values`` x ``base``, rounded to 3 significant digits (a grid around a default).

    Products that are not finite are dropped.

    Args:
        values: Multipliers (e.g. ``[1, 0.5, 2]``).
        base: The default they scale.
    """
    return [float(f"{v * base:.3g}") for v in values if math.isfinite(v * base)]
