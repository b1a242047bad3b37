"""``ModeMapped``: a policy's decisions played through an action mode, to measure what the
mode can express.

Each decision of ``base`` (a node map) is encoded as the mode's nearest action
(``ActionCodec.encode``, on the env's own slots and observation of the view:
``mtgym.policy.observe.ViewObserver``) and decoded back by the mode's kernel, exactly as the
env would apply that action. Played over whole episodes, the ratio of its normalised
throughput to the base's is the mode's resolution for that policy (``tests/env/
test_shares.py`` holds ``shares`` to >= 0.98 for ``packed`` and ``freetrain`` on every preset;
``scripts/mode_resolution.py`` prints the table).
"""

from __future__ import annotations

from typing import Any

from mtgym.core.types import Allocation
from mtgym.policy.base import Policy
from mtgym.policy.observe import ViewObserver
from mtgym.sim.view import SchedulerView


class ModeMapped:
    """``base``'s allocations as the nearest actions of ``action_mode`` (module docstring).

    Args:
        base: the policy whose decisions are mapped (configured already: its knobs are its
            own).
        action_mode: a registered action mode with an ``encode``.
        max_jobs: the env's job slots (None: ``mtgym.env.slots.slot_rule``).

    Attributes:
        name: ``<base name>@<action mode>``.
        unexpressed: Decisions so far whose decoded map differs from the base's (not
            reset by ``reset``: it counts over every episode played).
    """

    def __init__(self, base: Policy, action_mode: str = "shares", max_jobs: int | None = None):
        self.base = base
        self.name = f"{base.name}@{action_mode}"
        self.info_mode = base.info_mode
        self.decision_interval_s = getattr(base, "decision_interval_s", None)
        self.observer = ViewObserver(
            action_mode=action_mode, max_jobs=max_jobs, max_count=None, info_mode=base.info_mode
        )
        self.unexpressed = 0  # decisions whose decoded map differs from the base's

    def reset(self, view: SchedulerView) -> None:
        """Reset the base policy and size the mode for the view's cluster."""
        self.base.reset(view)
        self.observer.reset(view)

    def decide(self, view: SchedulerView) -> Allocation:
        """The base's allocation, encoded as an action of the mode and decoded back."""
        want = self.base.decide(view).node_job
        self.observer.observe(view)
        got = self.observer.decode(self.observer.encode(want))
        self.unexpressed += int((got != want).any())
        return Allocation.from_assignment(got)

    def __getattr__(self, name: str) -> Any:
        """The base's attribute: its knobs and hooks (``configure_policy`` reaches them)."""
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)
