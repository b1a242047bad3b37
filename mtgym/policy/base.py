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

    Any class with these members is a ``Policy`` (structural typing; ``isinstance`` checks
    the members' presence only, as ``mtgym.policy.registry`` does).

    Attributes:
        name: The name results are reported under (usually its registry name).
        info_mode: Which job information its views carry (``user``, ``profiled``,
            ``oracle``: ``mtgym.sim.view.InfoMode``).
    """

    name: str
    info_mode: InfoMode

    def reset(self, view: SchedulerView) -> None:
        """Start an episode (the first view).

        Args:
            view: The state at ``t_start``, in the policy's information mode; the cluster
                size is known from here on.

        Raises:
            PolicyUnsupportedError: the policy cannot run on this cluster.
        """

    def decide(self, view: SchedulerView) -> Allocation:
        """Return the allocation to apply now.

        Args:
            view: The current state, in the policy's information mode (read only).

        Returns:
            The node map wanted from now on; the simulator repairs what is infeasible and
            charges the rescales it implies.
        """
        ...
