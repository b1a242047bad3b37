"""``ClusterState``: everything that evolves, as padded numpy arrays (struct of arrays)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import JobStatus
from mtgym.sim.events import EventQueue

# The kernels' role of a field: the compiled engine sees the state through an
# ``mtgym.sim.episode.Episode``, whose fields are these arrays by name, and these scalars as
# fields of its record ``scalars``. The state's fields are declared here only: a new one is
# its line below plus its value in ``initial``.
NODE, JOB, FLOAT, INT = ({"kernel": role} for role in ("node", "job", "float", "int"))


@dataclass(eq=False)
class ClusterState:
    """The simulation state at ``time``. Per-node arrays have length N, per-job arrays J.

    Progress is *useful* samples and never decreases: work lost to a pre-emption is recorded
    as ``debt`` (samples to redo before progress resumes) and rescale pauses as
    ``stall_until``, so completion times stay exact under piecewise-constant rates.

    ``advance(copy=False)`` and the env update the arrays in place (they keep their
    identity); to restore a state, replace the whole object (``env.state = saved.copy()``).
    """

    time: float = field(metadata=FLOAT)
    # -- nodes (N,) --
    available: np.ndarray = field(metadata=NODE)  # bool: idle and lent to the scavenger now
    node_job: np.ndarray = field(metadata=NODE)  # int32: job running on the node, -1 = none
    window: np.ndarray = field(
        metadata=NODE
    )  # int64: index of the node's current idle window, -1 = none
    # -- jobs (J,) --
    status: np.ndarray = field(metadata=JOB)  # int8 JobStatus
    n_nodes: np.ndarray = field(metadata=JOB)  # int32 nodes held
    rate: np.ndarray = field(
        metadata=JOB
    )  # float64 samples/s on the current node set (0 without nodes)
    spread: np.ndarray = field(metadata=JOB)  # int8 topology level spanned by the node set
    progress: np.ndarray = field(metadata=JOB)  # float64 useful samples done
    milestone: np.ndarray = field(
        metadata=JOB
    )  # float64 next progress threshold (a rung or the work)
    rung: np.ndarray = field(metadata=JOB)  # int16 rungs passed
    # float64 no progress before this time (rescale/start-up pause)
    stall_until: np.ndarray = field(metadata=JOB)
    debt: np.ndarray = field(metadata=JOB)  # float64 samples to redo before progress counts again
    ckpt_progress: np.ndarray = field(metadata=JOB)  # float64 progress at the last checkpoint
    first_start: np.ndarray = field(
        metadata=JOB
    )  # float64 first time the job held nodes (nan = never)
    finish_time: np.ndarray = field(
        metadata=JOB
    )  # float64 completion or stop time (nan = not finished)
    # int32 changes of a running job's node set (starts excluded)
    rescales: np.ndarray = field(metadata=JOB)
    starts: np.ndarray = field(metadata=JOB)  # int32 starts from 0 nodes
    # int32 events at which the host reclaimed some of its nodes
    preemptions: np.ndarray = field(metadata=JOB)
    # float64 nominal seconds charged for rescales and starts
    rescale_cost_s: np.ndarray = field(metadata=JOB)
    preempt_cost_s: np.ndarray = field(
        metadata=JOB
    )  # float64 nominal seconds charged for pre-emptions
    # float64 progress since checkpoint lost to reclaims
    preempt_lost_samples: np.ndarray = field(metadata=JOB)
    stalled_s: np.ndarray = field(
        metadata=JOB
    )  # float64 job-seconds with nodes but no useful progress
    node_s: np.ndarray = field(metadata=JOB)  # float64 node-seconds held
    # -- global accumulators --
    offered_node_s: float = field(metadata=FLOAT)
    allocated_node_s: float = field(metadata=FLOAT)
    unused_node_s: float = field(metadata=FLOAT)  # offered but not given to any job
    # integral of the number of submitted, unfinished jobs (JCT reward)
    active_job_s: float = field(metadata=FLOAT)
    productive_node_s: float = field(metadata=FLOAT)
    events: int = field(
        metadata=INT
    )  # individual events processed (a node reclaim, an arrival, ...)
    decisions: int = field(metadata=INT)  # allocations applied
    # -- cursors into the instance's sorted streams --
    start_cursor: int = field(metadata=INT)
    end_cursor: int = field(metadata=INT)
    arrival_cursor: int = field(metadata=INT)
    timers: EventQueue

    @classmethod
    def initial(cls, instance: Instance) -> ClusterState:
        """The state at ``instance.t_start``, before any event at that time is processed."""
        N, J = instance.num_nodes, instance.num_jobs
        jobs = instance.jobs
        first_rung = (
            np.where(np.isnan(jobs.rungs[:, 0]), 1.0, jobs.rungs[:, 0])
            if jobs.rungs.shape[1]
            else np.ones(J)
        )
        return cls(
            time=float(instance.t_start),
            available=np.zeros(N, dtype=bool),
            node_job=np.full(N, -1, dtype=np.int32),
            window=np.full(N, -1, dtype=np.int64),
            status=np.full(J, JobStatus.FUTURE, dtype=np.int8),
            n_nodes=np.zeros(J, dtype=np.int32),
            rate=np.zeros(J),
            spread=np.zeros(J, dtype=np.int8),
            progress=np.zeros(J),
            milestone=np.minimum(first_rung, 1.0) * jobs.work,
            rung=np.zeros(J, dtype=np.int16),
            stall_until=np.full(J, -np.inf),
            debt=np.zeros(J),
            ckpt_progress=np.zeros(J),
            first_start=np.full(J, np.nan),
            finish_time=np.full(J, np.nan),
            rescales=np.zeros(J, dtype=np.int32),
            starts=np.zeros(J, dtype=np.int32),
            preemptions=np.zeros(J, dtype=np.int32),
            rescale_cost_s=np.zeros(J),
            preempt_cost_s=np.zeros(J),
            preempt_lost_samples=np.zeros(J),
            stalled_s=np.zeros(J),
            node_s=np.zeros(J),
            offered_node_s=0.0,
            allocated_node_s=0.0,
            unused_node_s=0.0,
            active_job_s=0.0,
            productive_node_s=0.0,
            events=0,
            decisions=0,
            start_cursor=0,
            end_cursor=0,
            arrival_cursor=0,
            timers=EventQueue(),
        )

    def copy(self) -> ClusterState:
        """A deep copy (arrays copied), so ``advance`` can stay pure."""
        new = copy.copy(self)
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                setattr(new, f.name, v.copy())
        new.timers = self.timers.copy()
        return new

    @property
    def active(self) -> np.ndarray:
        """(J,) bool: submitted and not finished."""
        return self.status == JobStatus.ACTIVE

    @property
    def finished(self) -> np.ndarray:
        """(J,) bool: completed or stopped."""
        return self.status >= JobStatus.COMPLETED


def _names(role: dict[str, str]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(ClusterState) if f.metadata == role)


NODE_ARRAYS = _names(NODE)  # (N,) arrays (fields of ``Episode``, by name)
JOB_ARRAYS = _names(JOB)  # (J,) arrays
FLOAT_SCALARS = _names(FLOAT)  # float64 scalars (fields of ``Episode.scalars``)
INT_SCALARS = _names(INT)  # int64 scalars
