"""The ``Policy`` protocol: ``reset(view)`` once per episode, then ``decide(view)``."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mtgym.core.types import Allocation
from mtgym.sim.view import InfoMode, SchedulerView


@runtime_checkable
class Policy(Protocol):
    """Anything that maps a ``SchedulerView`` to an ``Allocation``.

    ``info_mode`` says which job information the policy is entitled to (its view is built in
    that mode). A policy must not mutate the view; it returns a new allocation. A policy
    may also carry ``decision_interval_s`` (seconds, or None): ``play`` then decides on that
    interval unless its caller sets one (a learned agent trained on an interval has it).
    """

    name: str
    info_mode: InfoMode

    def reset(self, view: SchedulerView) -> None:
        """Start an episode (the first view)."""

    def decide(self, view: SchedulerView) -> Allocation:
        """Return the allocation to apply now."""
        ...
