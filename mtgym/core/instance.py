"""The immutable problem instance: cluster, idle-node supply, jobs and cost model.

An ``Instance`` is produced once per episode by a generator and never changes; everything
that evolves lives in ``mtgym.sim.state.ClusterState``. All arrays are read-only. Ground truth
(true scaling curves, true slowdowns, future window ends) lives here and policies only see it
through ``mtgym.sim.view``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.topology import Topology
from mtgym.core.types import NUM_CLASSES, PerfKind, PreemptionMode, RescaleMode


def frozen(arr: np.ndarray) -> np.ndarray:
    """Mark an array read-only and return it (the same object, not a copy).

    Only this array object is frozen: its base and views taken before stay writable.
    """
    arr.flags.writeable = False
    return arr


def readonly_view(arr: np.ndarray) -> np.ndarray:
    """A read-only view of ``arr`` (``arr`` itself when already read-only; never a copy).

    The compiled kernels take the arrays they only read this way. numba types a read-only
    array apart from a writable one and compiles a kernel again for each: an instance's
    arrays are frozen, but those of a copy, an unpickled instance (a Ray worker's, a
    ``deepcopy`` of an env) or one a caller built with ``dataclasses.replace`` are not, and
    each such mix cost another compilation of the engine and the env's step (10-25 s each).
    """
    if not arr.flags.writeable:
        return arr
    view = arr.view()
    view.flags.writeable = False
    return view


def readonly_views(values: tuple) -> tuple:
    """``values`` with every array a ``readonly_view`` (other values unchanged)."""
    return tuple(readonly_view(v) if isinstance(v, np.ndarray) else v for v in values)


@dataclass(frozen=True, eq=False)
class Cluster:
    """The host machine's nodes.

    Attributes:
        gpu_type_names: The GPU types' names (``A100``, ``V100``, ...), indexed by
            ``gpu_type``.
        gpus_per_node: GPUs per node (a node is the allocation unit; PAL-style scenarios use
            one GPU per "node" and a host level in the topology).
        gpu_type: (N,) int16 index into ``gpu_type_names``.
        device_slowdown: (N, gpus_per_node, 4) true per-device, per-class slowdown factors.
        slowdown: (N, 4) the node's factor = max over its devices (the straggler gates).
        profiled_slowdown: (N, 4) what a variability profile (PAL) reports: the true factor
            times measurement noise.
        topology: levels, coordinates and link costs.
        node_names: optional host names (e.g. Summit's ``a01n01``).
    """

    gpus_per_node: int
    gpu_type_names: tuple[str, ...]
    gpu_type: np.ndarray
    device_slowdown: np.ndarray
    slowdown: np.ndarray
    profiled_slowdown: np.ndarray
    topology: Topology
    node_names: tuple[str, ...] | None = None

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return int(self.gpu_type.shape[0])

    @property
    def num_gpu_types(self) -> int:
        """Number of GPU types."""
        return len(self.gpu_type_names)

    def validate(self) -> None:
        """Check shapes and ranges (raises ``ConfigError``).

        Checks: ``gpus_per_node`` >= 1, a topology of the same node count, the slowdown
        arrays' shapes (N, ``gpus_per_node``, 4) and (N, 4) with positive factors, and
        ``gpu_type`` within ``gpu_type_names``.
        """
        n = self.num_nodes
        if self.gpus_per_node < 1:
            raise ConfigError("gpus_per_node", self.gpus_per_node, ">= 1")
        if self.topology.num_nodes != n:
            raise ConfigError("topology", self.topology.num_nodes, f"{n} nodes")
        if self.device_slowdown.shape != (n, self.gpus_per_node, NUM_CLASSES):
            raise ConfigError(
                "device_slowdown", self.device_slowdown.shape, f"({n}, {self.gpus_per_node}, 4)"
            )
        for name, arr in (
            ("slowdown", self.slowdown),
            ("profiled_slowdown", self.profiled_slowdown),
        ):
            if arr.shape != (n, NUM_CLASSES) or not np.all(arr > 0):
                raise ConfigError(name, arr.shape, f"({n}, 4) positive factors")
        if n and (self.gpu_type.min() < 0 or self.gpu_type.max() >= self.num_gpu_types):
            raise ConfigError("gpu_type", int(self.gpu_type.max()), f"0..{self.num_gpu_types - 1}")


@dataclass(frozen=True, eq=False)
class Supply:
    """Idle windows lent to the scavenger: node ``node[w]`` is idle on [start_s[w], end_s[w]).

    Windows of one node that touch (one ends where the next starts) are merged: the node was
    never busy in between.

    ``end_known[w]`` says whether the scavenger knows the window's end when it opens (a
    reservation or a drain for a known job start); otherwise the end is a surprise.
    Windows are sorted by (start_s, node); ``end_order`` lists them by (end_s, node).
    A node's windows never overlap. Build one with ``from_windows``.

    Attributes:
        node: (W,) int32 the node of each window.
        start_s: (W,) float64 when it becomes idle, seconds.
        end_s: (W,) float64 when the host takes it back, seconds (> start_s, finite).
        end_known: (W,) bool whether the end is announced when the window opens.
        end_order: (W,) int64 window indices by (end_s, node).
        end_sorted_s: (W,) float64 ``end_s[end_order]``, for O(log W) look-ups.
    """

    node: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    end_known: np.ndarray
    end_order: np.ndarray
    end_sorted_s: np.ndarray

    @property
    def num_windows(self) -> int:
        """Number of idle windows."""
        return int(self.node.shape[0])

    @classmethod
    def from_windows(
        cls,
        node: np.ndarray,
        start_s: np.ndarray,
        end_s: np.ndarray,
        end_known: np.ndarray | None = None,
        *,
        num_nodes: int | None = None,
    ) -> Supply:
        """Sort, validate and freeze windows (raises ``ConfigError`` on overlap or bad range).

        Touching windows of one node are merged (the merged window's ``end_known`` is
        that of its last part). The inputs are not modified.

        Args:
            node: (W,) node of each window.
            start_s: (W,) window starts, seconds.
            end_s: (W,) window ends, seconds; each finite and > its start.
            end_known: (W,) whether each end is announced; None: all surprises.
            num_nodes: The cluster's node count, to range-check ``node``; None: only
                ``node >= 0`` is checked.

        Raises:
            ConfigError: unequal or non-1-D shapes, a node out of range, a window that
                is not finite or has end <= start, or two overlapping windows of one
                node (named in the message).
        """
        node = np.asarray(node, dtype=np.int32)
        start = np.asarray(start_s, dtype=np.float64)
        end = np.asarray(end_s, dtype=np.float64)
        known = (
            np.zeros(node.shape, dtype=bool) if end_known is None else np.asarray(end_known, bool)
        )
        if not (node.shape == start.shape == end.shape == known.shape) or node.ndim != 1:
            raise ConfigError("windows", (node.shape, start.shape, end.shape), "equal 1-D shapes")
        if node.size:
            if node.min() < 0 or (num_nodes is not None and node.max() >= num_nodes):
                raise ConfigError("window node", int(node.max()), f"0..{(num_nodes or 1) - 1}")
            bad = np.flatnonzero(~(np.isfinite(start) & np.isfinite(end) & (end > start)))
            if bad.size:
                w = bad[0]
                raise ConfigError(
                    "window", (int(node[w]), float(start[w]), float(end[w])), "finite, end > start"
                )
        by_node = np.lexsort((start, node))
        node, start, end, known = node[by_node], start[by_node], end[by_node], known[by_node]
        same = node[1:] == node[:-1]
        overlap = same & (start[1:] < end[:-1])
        if overlap.any():
            a = int(np.flatnonzero(overlap)[0])
            b = a + 1
            raise ConfigError(
                "windows",
                f"node {int(node[a])}: [{start[a]}, {end[a]}) and [{start[b]}, {end[b]})",
                "non-overlapping windows per node",
            )
        # A node idle on [a, b) and again from b was never busy: one window [a, c).
        touch = same & (start[1:] == end[:-1])
        if touch.any():
            first = np.concatenate(([True], ~touch))
            last = np.concatenate((~touch, [True]))
            node, start = node[first], start[first]
            end, known = end[last], known[last]
        order = np.lexsort((node, start))
        node, start, end, known = node[order], start[order], end[order], known[order]
        end_order = np.lexsort((node, end)).astype(np.int64)
        return cls(
            frozen(node),
            frozen(start),
            frozen(end),
            frozen(known),
            frozen(end_order),
            frozen(end[end_order]),
        )

    def offered_node_seconds(self, t0: float, t1: float) -> float:
        """Idle node-seconds offered on [t0, t1): each window clipped to it, summed.

        Args:
            t0: Start of the span, seconds.
            t1: Its end, seconds (may be inf).
        """
        lo = np.maximum(self.start_s, t0)
        hi = np.minimum(self.end_s, t1)
        return float(np.clip(hi - lo, 0.0, None).sum())


@dataclass(frozen=True, eq=False)
class Jobs:
    """The job table (struct of arrays, one row per job, in submission order).

    Throughput: ``perf_kind`` selects the form (``mtgym.model.throughput``). Table jobs use
    ``curve_nodes``/``curve_tput`` (breakpoints including (0, 0), padded by repeating the last
    point); parametric jobs use ``local_batch``, ``grad_bytes`` and ``overlap``. Both use
    ``type_rate[j, t]``: the per-GPU samples/s on GPU type t at slowdown 1 (parametric), or the
    speed of type t relative to the type the table was measured on (table).

    What users declare (FreeTrain's inputs) is kept apart from the truth:
    ``declared_curve_tput``, ``declared_r_up_s`` and ``declared_r_down_s``.

    Attributes:
        name: (J,) job names.
        model: (J,) model names.
        app_class: (J,) int8 ``AppClass``: which column of the slowdowns applies.
        submit_s: (J,) float64 submission times, seconds, non-decreasing.
        min_nodes: (J,) int32 fewest nodes the job runs on, >= 1.
        max_nodes: (J,) int32 most nodes it uses, >= min_nodes.
        work: (J,) float64 samples to complete.
        r_up_s: (J,) seconds of lost progress when scaled up (BFTrainer: about 18 s).
        r_down_s: (J,) seconds when scaled down or pre-empted (about 12 s).
        startup_s: (J,) seconds to launch from 0 nodes (BFTrainer charges 0).
        ckpt_every: (J,) samples between periodic checkpoints (inf = only at rescale).
        perf_kind: (J,) int8 ``PerfKind``: table or parametric throughput.
        curve_nodes: (J, K) float64 breakpoints, [0, 1, 2, 4, ...].
        curve_tput: (J, K) float64 true samples/s at the breakpoints.
        type_rate: (J, T) float64 per GPU type (see above), > 0.
        local_batch: (J,) float64 samples per GPU per iteration (parametric).
        grad_bytes: (J,) float64 bytes all-reduced per iteration (parametric).
        overlap: (J,) float64 in [0, 1): share of communication hidden by compute.
        declared_curve_tput: (J, K) the curve the user declares (FreeTrain's knowledge).
        declared_r_up_s: (J,) the declared scale-up cost, seconds.
        declared_r_down_s: (J,) the declared scale-down cost, seconds.
        campaign: (J,) int32 index into ``Campaigns``, -1 = none.
        rungs: (J, R) float64 fractions of work where the campaign judges, NaN-padded.
        quality: (J,) float64 hidden trial quality (higher = better).
    """

    name: tuple[str, ...]
    model: tuple[str, ...]
    app_class: np.ndarray
    submit_s: np.ndarray
    min_nodes: np.ndarray
    max_nodes: np.ndarray
    work: np.ndarray
    r_up_s: np.ndarray
    r_down_s: np.ndarray
    startup_s: np.ndarray
    ckpt_every: np.ndarray
    perf_kind: np.ndarray
    curve_nodes: np.ndarray
    curve_tput: np.ndarray
    type_rate: np.ndarray
    local_batch: np.ndarray
    grad_bytes: np.ndarray
    overlap: np.ndarray
    declared_curve_tput: np.ndarray
    declared_r_up_s: np.ndarray
    declared_r_down_s: np.ndarray
    campaign: np.ndarray
    rungs: np.ndarray
    quality: np.ndarray

    @property
    def num_jobs(self) -> int:
        """Number of jobs."""
        return int(self.submit_s.shape[0])

    def validate(self, num_gpu_types: int) -> None:
        """Check shapes and ranges (raises ``ConfigError`` naming the job and field).

        Per-job ranges (first bad job named), then submission order, shapes, table curves
        (starting at (0, 0), sorted node counts, finite non-negative rates) and the
        parametric fields (finite, ``local_batch`` > 0).

        Args:
            num_gpu_types: T, the cluster's GPU types (``type_rate``'s second axis).
        """
        J = self.num_jobs
        if len(self.name) != J or len(self.model) != J:
            raise ConfigError("name/model", (len(self.name), len(self.model)), f"{J} entries")
        checks: list[tuple[str, np.ndarray, str]] = [
            ("min_nodes", self.min_nodes >= 1, ">= 1"),
            ("max_nodes", self.max_nodes >= self.min_nodes, ">= min_nodes"),
            ("work", (self.work > 0) & np.isfinite(self.work), "finite and > 0"),
            ("r_up_s", self.r_up_s >= 0, ">= 0"),
            ("r_down_s", self.r_down_s >= 0, ">= 0"),
            ("startup_s", self.startup_s >= 0, ">= 0"),
            ("ckpt_every", self.ckpt_every > 0, "> 0 (inf = never)"),
            ("submit_s", np.isfinite(self.submit_s), "finite"),
            ("app_class", (self.app_class >= 0) & (self.app_class < NUM_CLASSES), "0..3"),
            ("overlap", (self.overlap >= 0) & (self.overlap < 1), "0 <= overlap < 1"),
            ("type_rate", np.all(self.type_rate > 0, axis=1), "> 0 for every GPU type"),
        ]
        for fname, ok, allowed in checks:
            bad = np.flatnonzero(~np.asarray(ok))
            if bad.size:
                j = int(bad[0])
                value = getattr(self, fname)[j]
                raise ConfigError(f"jobs[{j}] ({self.name[j]}).{fname}", value, allowed)
        if J and np.any(np.diff(self.submit_s) < 0):
            raise ConfigError("submit_s", "not sorted", "jobs in submission order")
        if self.type_rate.shape != (J, num_gpu_types):
            raise ConfigError("type_rate", self.type_rate.shape, f"({J}, {num_gpu_types})")
        if self.curve_nodes.shape != self.curve_tput.shape or self.curve_nodes.shape[0] != J:
            raise ConfigError("curve", self.curve_nodes.shape, "curve_nodes and curve_tput (J, K)")
        table = self.perf_kind == PerfKind.TABLE
        if np.any(table):
            cn, ct = self.curve_nodes[table], self.curve_tput[table]
            if np.any(cn[:, 0] != 0) or np.any(ct[:, 0] != 0):
                raise ConfigError("curve", "first breakpoint", "(0 nodes, 0 samples/s)")
            if np.any(np.diff(cn, axis=1) < 0) or np.any(ct < 0) or not np.all(np.isfinite(ct)):
                raise ConfigError("curve", "breakpoints", "sorted node counts, finite tput >= 0")
        param = ~table
        if np.any(param):
            for fname in ("local_batch", "grad_bytes"):
                arr = getattr(self, fname)[param]
                if np.any(arr < 0) or not np.all(np.isfinite(arr)):
                    raise ConfigError(fname, arr.min(), "finite and >= 0 for parametric jobs")
            if np.any(self.local_batch[param] <= 0):
                raise ConfigError("local_batch", 0, "> 0 for parametric jobs")


@dataclass(frozen=True, eq=False)
class Campaigns:
    """NAS/HPO campaigns: groups of trials that a campaign may stop early.

    At each rung (a fraction of a trial's work) a trial continues only if its hidden quality
    is among the best ``1/eta`` of the trials of its campaign that have reached that rung so
    far (an asynchronous successive-halving rule, as ASHA uses); otherwise it is stopped.
    The trials' rungs and qualities are in ``Jobs`` (``campaign``, ``rungs``, ``quality``).

    Attributes:
        name: (C,) campaign names.
        kind: (C,) ``"nas"`` or ``"hpo"``.
        eta: (C,) float64 reduction factors, >= 1.
    """

    name: tuple[str, ...] = ()
    kind: tuple[str, ...] = ()
    eta: np.ndarray = field(default_factory=lambda: frozen(np.zeros(0)))

    @property
    def num_campaigns(self) -> int:
        """Number of campaigns."""
        return len(self.name)


@dataclass(frozen=True)
class CostModel:
    """How rescales and pre-emptions are charged (see ``RescaleMode``/``PreemptionMode``).

    Attributes:
        rescale: ``pause`` (no progress for R seconds) or ``bftrainer`` (R x rate samples
            lost, as BFTrainer's replayer charges them).
        preemption: ``rdown`` (an R_down charge per reclaim event) or ``checkpoint``
            (the progress since the last checkpoint is redone).
    """

    rescale: RescaleMode = RescaleMode.PAUSE
    preemption: PreemptionMode = PreemptionMode.RDOWN


@dataclass(frozen=True, eq=False)
class Instance:
    """One episode's immutable problem: what is simulated between ``t_start`` and ``t_end``.

    Attributes:
        name: The scenario's name (in messages and results).
        cluster: The nodes.
        supply: Their idle windows.
        jobs: The job table.
        campaigns: The NAS/HPO campaigns the jobs' ``campaign`` indexes.
        costs: How rescales and pre-emptions are charged.
        t_start: The episode's start, seconds.
        t_end: Its horizon, seconds (inf: until the workload is done).
        seed: The seed it was generated from, if any.
    """

    name: str
    cluster: Cluster
    supply: Supply
    jobs: Jobs
    campaigns: Campaigns = field(default_factory=Campaigns)
    costs: CostModel = field(default_factory=CostModel)
    t_start: float = 0.0
    t_end: float = float("inf")
    seed: int | None = None

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return self.cluster.num_nodes

    @property
    def num_jobs(self) -> int:
        """Number of jobs."""
        return self.jobs.num_jobs

    def validate(self) -> Instance:
        """Check the whole instance; returns it for chaining.

        The cluster and jobs (``validate`` of each), window nodes within the cluster,
        a finite ``t_start`` before ``t_end``, and campaign indices in -1..C-1.

        Raises:
            ConfigError: the first check that fails, naming the field and value.
        """
        self.cluster.validate()
        self.jobs.validate(self.cluster.num_gpu_types)
        if self.supply.num_windows and self.supply.node.max() >= self.num_nodes:
            raise ConfigError("supply.node", int(self.supply.node.max()), f"< {self.num_nodes}")
        if not (np.isfinite(self.t_start) and self.t_end > self.t_start):
            raise ConfigError("t_start/t_end", (self.t_start, self.t_end), "t_start < t_end")
        c = self.jobs.campaign
        if c.size and (c.max() >= self.campaigns.num_campaigns or c.min() < -1):
            raise ConfigError(
                "jobs.campaign", int(c.max()), f"-1..{self.campaigns.num_campaigns - 1}"
            )
        return self
