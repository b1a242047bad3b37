"""``ClusterState``: everything that evolves, as padded numpy arrays (struct of arrays)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import JobStatus
from mtgym.sim.events import EventQueue

# The kernels' role of a field: the compiled engine sees the state through an
# ``mtgym.sim.kernel.SimKernel``, whose fields are these arrays by name, and these scalars as
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

    Attributes:
        time: the clock, seconds on the instance's time axis (``t_start`` .. ``t_end``).
        available: (N,) bool, the node is idle and lent to the scavenger now.
        node_job: (N,) int32, the job running on the node, -1 = none.
        window: (N,) int64, index (into the instance's supply) of the node's current idle
            window, -1 = none.
        status: (J,) int8 ``JobStatus``: FUTURE, ACTIVE, COMPLETED or STOPPED.
        n_nodes: (J,) int32 nodes held.
        rate: (J,) float64 samples/s on the current node set (0 without nodes); a pending
            pause (``stall_until``) is not subtracted.
        spread: (J,) int8 topology level spanned by the node set (0 without nodes).
        progress: (J,) float64 useful samples done, at most ``milestone``.
        milestone: (J,) float64 next progress threshold: the next campaign rung (a fraction
            of the work, in samples) or the work itself.
        rung: (J,) int16 campaign rungs passed.
        stall_until: (J,) float64 no progress before this time (rescale or start-up pause;
            -inf = none).
        debt: (J,) float64 samples to redo before progress counts again (pre-empted work,
            or BFTrainer's rescale charge ``R x rate``).
        ckpt_progress: (J,) float64 progress at the last checkpoint (voluntary changes and
            the periodic ``ckpt_every`` checkpoints); what a reclaim under
            ``PreemptionMode.CHECKPOINT`` falls back to.
        first_start: (J,) float64 first time the job held nodes (NaN = never).
        finish_time: (J,) float64 completion or stop time (NaN = not finished).
        rescales: (J,) int32 changes of a running job's node set (starts excluded; a stop
            counts under BFTrainer's accounting).
        starts: (J,) int32 starts from 0 nodes.
        preemptions: (J,) int32 events at which the host reclaimed some of its nodes.
        rescale_cost_s: (J,) float64 nominal seconds charged for rescales and starts.
        preempt_cost_s: (J,) float64 nominal seconds charged for pre-emptions.
        preempt_lost_samples: (J,) float64 progress since the last checkpoint lost to
            reclaims (``PreemptionMode.CHECKPOINT`` only).
        stalled_s: (J,) float64 job-seconds with nodes but no useful progress (pausing or
            paying debt).
        node_s: (J,) float64 node-seconds held.
        offered_node_s: node-seconds of idle (lent) nodes since ``t_start``.
        allocated_node_s: node-seconds held by jobs.
        unused_node_s: node-seconds offered but not given to any job (counted apart, so
            ``check_state`` can verify offered = allocated + unused).
        active_job_s: integral over time of the number of submitted, unfinished jobs (the
            JCT reward).
        productive_node_s: node-seconds of held nodes while their job made useful progress.
        events: individual events processed (a node reclaim, an arrival, a timer, ...).
        decisions: allocations applied.
        start_cursor: windows opened so far: the next one is ``supply.start_s[start_cursor]``.
        end_cursor: window ends processed so far, in ``supply.end_sorted_s`` order.
        arrival_cursor: jobs submitted so far (jobs are sorted by submission).
        timers: the scheduled timers (decision ticks, profiling probes), kept in Python.
    """

    time: float = field(metadata=FLOAT)
    # -- nodes (N,) --
    available: np.ndarray = field(metadata=NODE)
    node_job: np.ndarray = field(metadata=NODE)
    window: np.ndarray = field(metadata=NODE)
    # -- jobs (J,) --
    status: np.ndarray = field(metadata=JOB)
    n_nodes: np.ndarray = field(metadata=JOB)
    rate: np.ndarray = field(metadata=JOB)
    spread: np.ndarray = field(metadata=JOB)
    progress: np.ndarray = field(metadata=JOB)
    milestone: np.ndarray = field(metadata=JOB)
    rung: np.ndarray = field(metadata=JOB)
    stall_until: np.ndarray = field(metadata=JOB)
    debt: np.ndarray = field(metadata=JOB)
    ckpt_progress: np.ndarray = field(metadata=JOB)
    first_start: np.ndarray = field(metadata=JOB)
    finish_time: np.ndarray = field(metadata=JOB)
    rescales: np.ndarray = field(metadata=JOB)
    starts: np.ndarray = field(metadata=JOB)
    preemptions: np.ndarray = field(metadata=JOB)
    rescale_cost_s: np.ndarray = field(metadata=JOB)
    preempt_cost_s: np.ndarray = field(metadata=JOB)
    preempt_lost_samples: np.ndarray = field(metadata=JOB)
    stalled_s: np.ndarray = field(metadata=JOB)
    node_s: np.ndarray = field(metadata=JOB)
    # -- global accumulators --
    offered_node_s: float = field(metadata=FLOAT)
    allocated_node_s: float = field(metadata=FLOAT)
    unused_node_s: float = field(metadata=FLOAT)
    active_job_s: float = field(metadata=FLOAT)
    productive_node_s: float = field(metadata=FLOAT)
    events: int = field(metadata=INT)
    decisions: int = field(metadata=INT)
    # -- cursors into the instance's sorted streams --
    start_cursor: int = field(metadata=INT)
    end_cursor: int = field(metadata=INT)
    arrival_cursor: int = field(metadata=INT)
    timers: EventQueue

    @classmethod
    def initial(cls, instance: Instance) -> ClusterState:
        """The state at ``instance.t_start``, before any event at that time is processed.

        No node is idle and no job submitted yet (``dynamics.initial_state`` then applies
        the events due at ``t_start``); each job's first milestone is its first rung (or the
        work when it has none), pauses are -inf and times of events not yet seen are NaN.

        Args:
            instance: the episode's constants (sizes, the jobs' work and rungs, ``t_start``).

        Returns:
            A fresh state owning new arrays and an empty timer queue.
        """
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
        """A deep copy (arrays copied), so ``advance`` can stay pure.

        The timer queue is copied too; its payloads are shared (``EventQueue.copy``).
        """
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
    """The fields of ``ClusterState`` with the kernel role ``role``, in declaration order."""
    return tuple(f.name for f in fields(ClusterState) if f.metadata == role)


NODE_ARRAYS = _names(NODE)  # (N,) arrays (fields of ``SimKernel``, by name)
JOB_ARRAYS = _names(JOB)  # (J,) arrays
FLOAT_SCALARS = _names(FLOAT)  # float64 scalars (fields of ``SimKernel.scalars``)
INT_SCALARS = _names(INT)  # int64 scalars
