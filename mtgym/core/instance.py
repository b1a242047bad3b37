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
    """Mark an array read-only and return it."""
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class Cluster:
    """The host machine's nodes.

    Attributes:
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
        """Check shapes and ranges (raises ``ConfigError``)."""
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
    A node's windows never overlap.
    """

    node: np.ndarray  # (W,) int32
    start_s: np.ndarray  # (W,) float64
    end_s: np.ndarray  # (W,) float64
    end_known: np.ndarray  # (W,) bool
    end_order: np.ndarray  # (W,) int64
    end_sorted_s: np.ndarray  # (W,) float64 = end_s[end_order], for O(log W) look-ups

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
        """Sort, validate and freeze windows (raises ``ConfigError`` on overlap or bad range)."""
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
        """Idle node-seconds offered on [t0, t1)."""
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
    """

    name: tuple[str, ...]
    model: tuple[str, ...]
    app_class: np.ndarray  # (J,) int8, AppClass
    submit_s: np.ndarray  # (J,) float64, non-decreasing
    min_nodes: np.ndarray  # (J,) int32 >= 1
    max_nodes: np.ndarray  # (J,) int32 >= min_nodes
    work: np.ndarray  # (J,) float64 samples to complete
    r_up_s: np.ndarray  # (J,) s of lost progress when scaled up (BFTrainer: about 18 s)
    r_down_s: np.ndarray  # (J,) s when scaled down or pre-empted (about 12 s)
    startup_s: np.ndarray  # (J,) s to launch from 0 nodes (BFTrainer charges 0)
    ckpt_every: np.ndarray  # (J,) samples between periodic checkpoints (inf = only at rescale)
    perf_kind: np.ndarray  # (J,) int8, PerfKind
    curve_nodes: np.ndarray  # (J, K) float64 breakpoints, [0, 1, 2, 4, ...]
    curve_tput: np.ndarray  # (J, K) float64 samples/s at the breakpoints
    type_rate: np.ndarray  # (J, T) float64
    local_batch: np.ndarray  # (J,) float64 samples per GPU per iteration
    grad_bytes: np.ndarray  # (J,) float64 bytes all-reduced per iteration
    overlap: np.ndarray  # (J,) float64 in [0, 1): share of communication hidden by compute
    declared_curve_tput: np.ndarray  # (J, K) what the user declares (FreeTrain's knowledge)
    declared_r_up_s: np.ndarray  # (J,)
    declared_r_down_s: np.ndarray  # (J,)
    campaign: np.ndarray  # (J,) int32, -1 = none
    rungs: np.ndarray  # (J, R) float64 fractions of work where the campaign judges, nan-padded
    quality: np.ndarray  # (J,) float64 hidden trial quality (higher = better)

    @property
    def num_jobs(self) -> int:
        """Number of jobs."""
        return int(self.submit_s.shape[0])

    def validate(self, num_gpu_types: int) -> None:
        """Check shapes and ranges (raises ``ConfigError`` naming the job and field)."""
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
    """

    name: tuple[str, ...] = ()
    kind: tuple[str, ...] = ()  # "nas" or "hpo"
    eta: np.ndarray = field(default_factory=lambda: frozen(np.zeros(0)))  # (C,) float64 >= 1

    @property
    def num_campaigns(self) -> int:
        """Number of campaigns."""
        return len(self.name)


@dataclass(frozen=True)
class CostModel:
    """How rescales and pre-emptions are charged (see ``RescaleMode``/``PreemptionMode``)."""

    rescale: RescaleMode = RescaleMode.PAUSE
    preemption: PreemptionMode = PreemptionMode.RDOWN


@dataclass(frozen=True, eq=False)
class Instance:
    """One episode's immutable problem: what is simulated between ``t_start`` and ``t_end``."""

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
        """Check the whole instance; returns it for chaining."""
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
