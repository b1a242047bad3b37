"""Shared vocabulary: enums, the Allocation decision value, and small typed records."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np

NDArray = np.ndarray


class AppClass(enum.IntEnum):
    """PAL's application classes (arXiv 2408.11919).

    A = compute-bound and variability-sensitive (ResNet-50), B and C = BERT-like and
    memory-bound (VGG19), D = insensitive (PageRank-like, PointNet).
    """

    A = 0
    B = 1
    C = 2
    D = 3

    @classmethod
    def parse(cls, value: str | int) -> AppClass:
        """Accept "A".."D" (any case, spaces around ignored) or 0..3.

        Raises:
            ValueError: another string or number.
        """
        if isinstance(value, str):
            try:
                return cls[value.strip().upper()]
            except KeyError:
                raise ValueError(f"app class {value!r} is not one of A, B, C, D") from None
        return cls(int(value))


NUM_CLASSES = len(AppClass)


class JobStatus(enum.IntEnum):
    """Life cycle of a job. A job with status ACTIVE runs when it holds nodes.

    The order matters: ``status >= COMPLETED`` means finished (completed or stopped), as
    the metrics test it.
    """

    FUTURE = 0  # not submitted yet
    ACTIVE = 1  # submitted, not finished: waiting (0 nodes) or running
    COMPLETED = 2  # all its work is done
    STOPPED = 3  # stopped early by its campaign (a weak HPO trial)


class PerfKind(enum.IntEnum):
    """Which throughput form a job uses (see ``mtgym.model.throughput``)."""

    PARAMETRIC = 0  # slowest device + ring all-reduce over the spread's link
    TABLE = 1  # measured throughput per node count, times variability and locality factors


class RescaleMode(enum.StrEnum):
    """How a change of a job's node set is charged.

    ``pause``: the job makes no progress for R seconds at its new size (a real restart).
    ``bftrainer``: R x (rate before the change) samples are lost, as BFTrainer's replayer
    charges them; starting from 0 nodes is then free unless ``startup_s`` > 0.
    """

    PAUSE = "pause"
    BFTRAINER = "bftrainer"


class PreemptionMode(enum.StrEnum):
    """What a job loses when the host reclaims one of its nodes.

    ``rdown``: BFTrainer's R_down seconds (charged as the rescale mode says), once per job
    per event. ``checkpoint``: the progress since its last checkpoint must be redone, and it
    restarts on the remaining nodes (R_down pause).
    """

    RDOWN = "rdown"
    CHECKPOINT = "checkpoint"


class EventKind(enum.IntFlag):
    """Kinds of events; also a bit mask of the kinds that end an ``advance`` call.

    ``RUNG_REACHED`` (a trial passed a rung and continues) is the one kind left out of
    ``DECISION_EVENTS``; ``TIMER`` is a timer of ``ClusterState.timers`` falling due.
    """

    NONE = 0
    NODE_RECLAIMED = enum.auto()
    JOB_COMPLETED = enum.auto()
    TRIAL_STOPPED = enum.auto()
    RUNG_REACHED = enum.auto()
    NODE_IDLE = enum.auto()
    JOB_ARRIVED = enum.auto()
    TIMER = enum.auto()
    HORIZON = enum.auto()


#: Events after which a policy should decide again (BFTrainer re-solves on each of these).
DECISION_EVENTS = (
    EventKind.NODE_RECLAIMED
    | EventKind.JOB_COMPLETED
    | EventKind.TRIAL_STOPPED
    | EventKind.NODE_IDLE
    | EventKind.JOB_ARRIVED
    | EventKind.TIMER
    | EventKind.HORIZON
)


@dataclass(frozen=True, eq=False)
class Allocation:
    """A decision: which job each node runs (``-1`` = none).

    Policies return one; ``mtgym.sim.dynamics.apply_allocation`` validates it, repairs what is
    in range but infeasible (and says so), and charges the rescale costs. A policy never
    mutates the state.

    Attributes:
        node_job: (num_nodes,) int job index per node, -1 = idle (not given to any job).
    """

    node_job: NDArray

    @classmethod
    def from_assignment(cls, node_job: NDArray | list[int]) -> Allocation:
        """Wrap a node-to-job array (copied as int32, made read-only).

        Args:
            node_job: (num_nodes,) job index per node, -1 = none.
        """
        arr = np.array(node_job, dtype=np.int32, copy=True)
        arr.flags.writeable = False
        return cls(arr)


@dataclass
class Repair:
    """What ``apply_allocation`` changed in an allocation that was in range but infeasible.

    Attributes:
        unavailable_nodes: Nodes assigned while not idle: left unassigned.
        inactive_job_nodes: Nodes given to a job that is not active: left unassigned.
        over_max_nodes: Nodes above a job's ``max_nodes``: dropped (newest first).
        below_min_jobs: Jobs given 1..min-1 nodes: given none.
        jobs: Jobs whose allocation was repaired.
    """

    unavailable_nodes: int = 0
    inactive_job_nodes: int = 0
    over_max_nodes: int = 0
    below_min_jobs: int = 0
    jobs: list[int] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        """True when anything was changed."""
        return bool(
            self.unavailable_nodes
            or self.inactive_job_nodes
            or self.over_max_nodes
            or self.below_min_jobs
        )
