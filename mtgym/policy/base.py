"""The ``Policy`` protocol: ``reset(view)`` once per episode, then ``decide(view)``."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mtgym.core.types import Allocation
from mtgym.sim.view import InfoMode, SchedulerView


@runtime_checkable
class Policy(Protocol):
    """Anything that maps a ``SchedulerView`` to an ``Allocation``.

    ``info_mode`` says which job information the policy is entitled to (its view is built in
    that mode). A policy must not mutate the view; it returns a new allocation.
    """

    name: str
    info_mode: InfoMode

    def reset(self, view: SchedulerView) -> None:
        """Start an episode (the first view)."""

    def decide(self, view: SchedulerView) -> Allocation:
        """Return the allocation to apply now."""
        ...
