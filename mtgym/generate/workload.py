"""Workloads: job rows, user declarations, synthetic job mixes and NAS/HPO campaigns.

A workload is a list of ``JobRow`` turned into a ``Jobs`` table by ``build_jobs``. Rows are
either *table* jobs (a measured throughput curve, e.g. BFTrainer's ImageNet jobs) or
*parametric* jobs (a ``ModelProfile``). For parametric jobs ``build_jobs`` also tabulates the
true curve on the cluster (packed placement on median devices of the fastest type), so every
job has a curve that users can declare and oracles can read.

User declarations (what FreeTrain is given) are the true curve and costs times
``Declaration`` noise and bias: users who profiled on another machine, or guessed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Campaigns, Cluster, Jobs, frozen
from mtgym.generate import mix_defaults as mix
from mtgym.generate.catalog import CATALOG, ModelProfile
from mtgym.model.throughput import ThroughputModel

if TYPE_CHECKING:
    from mtgym.readers import BFTrainerJobs
from mtgym.core.types import AppClass, PerfKind

_PARAMETRIC, _TABLE = int(PerfKind.PARAMETRIC), int(PerfKind.TABLE)  # (enum lookups are slow)
#: BFTrainer's measured rescale costs (s): scale-up about 18, scale-down about 12.
BFTRAINER_R_UP_S = 18.0
BFTRAINER_R_DOWN_S = 12.0


class WorkloadSource(Protocol):
    """Anything that draws job rows (``rng`` is the "arrivals" stream)."""

    def rows(self, rng: np.random.Generator, prefix: str = "job") -> list[JobRow]:
        """The jobs.

        Args:
            rng: the "arrivals" stream of the instance's seed (a table source ignores it).
            prefix: start of each job's name.

        Returns:
            The rows in any order (``build_jobs`` sorts them by submission).
        """
        ...


@dataclass
class JobRow:
    """One job before tabulation. Give ``work`` in samples, or ``work_hours`` to size it as
    that many hours on ``work_ref_nodes`` nodes (parametric jobs).

    A row has either the table form (``curve_nodes`` and ``curve_tput``) or the parametric
    form (``profile``); with a profile the curve fields are ignored.

    Attributes:
        name: the job's name (instance-unique by convention, not checked here).
        model: the DNN's name (a catalog name, or a table's own).
        app_class: variability class, the column of the slowdown tables that applies.
        submit_s: submission time, seconds on the instance's clock.
        min_nodes: fewest nodes the job runs on (>= 1).
        max_nodes: most nodes it runs on (>= min_nodes).
        work: samples to completion; None: sized from ``work_hours``.
        work_hours: hours of work at the job's rate on ``work_ref_nodes`` nodes: the
            exact rate, packed, on the best device type (parametric), or the curve
            interpolated (table).
        work_ref_nodes: node count ``work_hours`` refers to.
        r_up_s: cost of a grow, seconds (BFTrainer measured about 18).
        r_down_s: cost of a shrink or a pre-emption, seconds (BFTrainer: about 12).
        startup_s: pause when the job starts from 0 nodes, seconds.
        ckpt_every: samples between periodic checkpoints (inf = none); a negative value is
            seconds of one-node work, turned into samples by ``build_jobs``.
        curve_nodes: table form: the measured node counts, ascending (a 0 is prepended
            when the first is not 0).
        curve_tput: table form: the whole job's samples/s at those counts.
        type_speed: table form: GPU type name -> speed relative to the type the table was
            measured on (a type not listed: 1.0; None: 1.0 for all).
        profile: parametric form: the model's per-GPU rates, batch and gradient size.
        rate_scale: multiplies the profile's per-GPU rates (a NAS architecture).
        params_scale: multiplies the profile's gradient size.
        local_batch: per-GPU batch (None: the profile's).
        campaign: index of the job's campaign, -1 = none.
        rungs: increasing fractions in (0, 1) of the work at which the campaign judges the
            trial (empty: never stopped).
        quality: the trial's hidden quality (higher ranks better at a rung).
    """

    name: str
    model: str
    app_class: AppClass
    submit_s: float
    min_nodes: int = 1
    max_nodes: int = 1
    work: float | None = None
    work_hours: float | None = None
    work_ref_nodes: int = 1
    r_up_s: float = BFTRAINER_R_UP_S
    r_down_s: float = BFTRAINER_R_DOWN_S
    startup_s: float = 0.0
    ckpt_every: float = np.inf
    # table form
    curve_nodes: Sequence[float] | None = None
    curve_tput: Sequence[float] | None = None
    type_speed: Mapping[str, float] | None = None
    # parametric form
    profile: ModelProfile | None = None
    rate_scale: float = 1.0
    params_scale: float = 1.0
    local_batch: int | None = None
    # campaign
    campaign: int = -1
    rungs: Sequence[float] = ()
    quality: float = 0.0


@dataclass(frozen=True)
class Declaration:
    """How users misdeclare: declared = true x bias x lognormal(0, sigma) (per breakpoint for
    curves, per job for costs). The default is exact declarations.

    Attributes:
        curve_bias: multiplies every declared throughput (> 0; < 1 = users underclaim).
        curve_sigma: lognormal noise of each declared breakpoint, in [0, 3).
        cost_bias: multiplies the declared rescale costs (> 0).
        cost_sigma: lognormal noise of each job's declared up and down costs (drawn apart),
            in [0, 3).

    Raises:
        ConfigError: a bias <= 0 or a sigma outside [0, 3).
    """

    curve_bias: float = 1.0
    curve_sigma: float = 0.0
    cost_bias: float = 1.0
    cost_sigma: float = 0.0

    def __post_init__(self) -> None:
        for name in ("curve_bias", "cost_bias"):
            if getattr(self, name) <= 0:
                raise ConfigError(name, getattr(self, name), "> 0")
        for name in ("curve_sigma", "cost_sigma"):
            if not (0 <= getattr(self, name) < 3):
                raise ConfigError(name, getattr(self, name), "0 <= sigma < 3")


@functools.lru_cache(maxsize=256)
def _breakpoints(max_nodes: int) -> np.ndarray:
    """0, 1, 2, 4, ... up to ``max_nodes`` (read-only, shared: every reset asks again)."""
    pts = [0, 1]
    while pts[-1] * 2 < max_nodes:
        pts.append(pts[-1] * 2)
    if pts[-1] != max_nodes:
        pts.append(max_nodes)
    out = np.array(pts, dtype=np.float64)
    out.flags.writeable = False
    return out


def build_jobs(
    rows: Sequence[JobRow],
    cluster: Cluster,
    rng: np.random.Generator | None = None,
    declaration: Declaration | None = None,
) -> Jobs:
    """Tabulate rows (sorted by submission, stable) into a validated ``Jobs``.

    Parametric curves are tabulated at 0, 1, 2, 4, ... ``max_nodes`` nodes on this
    cluster; work given in hours and checkpoint periods given in seconds become samples;
    declarations get ``declaration``'s noise. Every array of the result is read-only.

    Args:
        rows: the jobs, any order.
        cluster: the machine the curves are computed on (its GPU types and topology).
        rng: the "declarations" stream; needed only when ``declaration`` is not exact.
        declaration: how users misdeclare (None: exactly).

    Returns:
        The jobs table, sorted by submission time.

    Raises:
        ConfigError: a row with bad node bounds, rungs or curve, with neither curve nor
            profile, or without work; a noisy declaration without ``rng``; any value
            ``Jobs.validate`` refuses (work <= 0, a negative cost, ...).
        KeyError: a profile without a rate for one of the cluster's GPU types.
    """
    rows = sorted(rows, key=lambda r: r.submit_s)
    J = len(rows)
    types = cluster.gpu_type_names
    perf = _performance_columns(rows, types)
    curve_nodes, curve_tput = _padded_curves(perf.curves, J)
    jobs = _jobs_table(rows, perf, curve_nodes, curve_tput, _rungs(rows))
    # Tabulate parametric curves and size work, with the model of this very cluster.
    work = _tabulate_and_size(rows, cluster, jobs, perf, curve_nodes, curve_tput)
    d_curve, d_up, d_down = _declared(jobs, curve_nodes, curve_tput, declaration, rng)
    jobs = replace(
        jobs,
        work=work,
        ckpt_every=_checkpoint_samples(jobs.ckpt_every, curve_nodes, curve_tput),
        curve_tput=curve_tput,
        declared_curve_tput=np.array(d_curve, copy=True),
        declared_r_up_s=np.array(d_up, copy=True),
        declared_r_down_s=np.array(d_down, copy=True),
    )
    for f in jobs.__dataclass_fields__:
        v = getattr(jobs, f)
        if isinstance(v, np.ndarray):
            frozen(v)
    jobs.validate(len(types))
    return jobs


@dataclass(frozen=True)
class _Performance:
    """Per-job performance columns of ``build_jobs``, before the curves are padded.

    ``curves`` holds each job's (nodes, throughput) breakpoints; a parametric job's
    throughputs are empty until the model tabulates them.

    Attributes:
        kind: (J,) int8 ``PerfKind``.
        type_rate: (J, T) per-GPU samples/s per type (parametric) or speed relative to
            the measured type (table).
        local_batch: (J,) per-GPU batch (parametric; 0 for table jobs).
        grad: (J,) bytes all-reduced per iteration (parametric; 0 for table jobs).
        overlap: (J,) share of the all-reduce hidden behind compute (parametric).
        curves: per job, (node counts, samples/s) as 1-D float64 arrays.
    """

    kind: np.ndarray
    type_rate: np.ndarray
    local_batch: np.ndarray
    grad: np.ndarray
    overlap: np.ndarray
    curves: list[tuple[np.ndarray, np.ndarray]]


def _performance_columns(rows: Sequence[JobRow], types: Sequence[str]) -> _Performance:
    """Check each row's node range and curve or profile, and read its performance.

    Args:
        rows: the rows, sorted by submission.
        types: the cluster's GPU type names, in type-index order.

    Raises:
        ConfigError: ``min_nodes < 1``, ``max_nodes < min_nodes`` or a bad curve.
    """
    J, T = len(rows), len(types)
    perf = _Performance(
        kind=np.zeros(J, dtype=np.int8),
        type_rate=np.ones((J, T)),
        local_batch=np.zeros(J),
        grad=np.zeros(J),
        overlap=np.zeros(J),
        curves=[],
    )
    for j, r in enumerate(rows):
        if r.min_nodes < 1 or r.max_nodes < r.min_nodes:
            raise ConfigError(
                f"jobs[{j}] ({r.name}).min/max_nodes", (r.min_nodes, r.max_nodes), "1 <= min <= max"
            )
        if r.profile is None:
            _read_table_row(j, r, types, perf)
        else:
            perf.kind[j] = _PARAMETRIC
            p = r.profile
            for t, name in enumerate(types):
                perf.type_rate[j, t] = p.rate_on(name) * r.rate_scale
            perf.local_batch[j] = p.local_batch if r.local_batch is None else r.local_batch
            perf.grad[j] = p.grad_bytes * r.params_scale
            perf.overlap[j] = p.overlap
            perf.curves.append((_breakpoints(r.max_nodes), np.zeros(0)))
    return perf


def _read_table_row(j: int, r: JobRow, types: Sequence[str], perf: _Performance) -> None:
    """Row ``j``, a table job: its measured curve (from 0 nodes) and per-type speeds.

    Args:
        j: the row's index (for errors and ``perf``'s rows).
        r: the row.
        types: the cluster's GPU type names.
        perf: the columns being filled; its ``curves`` list gets this job's curve.

    Raises:
        ConfigError: no curve, or node and throughput lists of different shapes or empty.
    """
    if r.curve_nodes is None or r.curve_tput is None:
        raise ConfigError(f"jobs[{j}] ({r.name})", "no curve and no profile", "one of them")
    perf.kind[j] = _TABLE
    cn = np.asarray(r.curve_nodes, dtype=np.float64)
    ct = np.asarray(r.curve_tput, dtype=np.float64)
    if cn.shape != ct.shape or cn.ndim != 1 or cn.size == 0:
        raise ConfigError(f"jobs[{j}] ({r.name}).curve", (cn.shape, ct.shape), "equal 1-D shapes")
    if cn[0] != 0:
        cn, ct = np.r_[0.0, cn], np.r_[0.0, ct]
    perf.curves.append((cn, ct))
    if r.type_speed is not None:
        for t, name in enumerate(types):
            perf.type_rate[j, t] = float(r.type_speed.get(name, 1.0))


def _padded_curves(
    curves: Sequence[tuple[np.ndarray, np.ndarray]], J: int
) -> tuple[np.ndarray, np.ndarray]:
    """The curves as (J, K) arrays, each padded by repeating its last breakpoint.

    K is the longest curve's length; a curve with no throughputs yet (parametric) leaves
    its ``curve_tput`` row 0.
    """
    K = max((c[0].size for c in curves), default=1)
    curve_nodes = np.zeros((J, K))
    curve_tput = np.zeros((J, K))
    for j, (cn, ct) in enumerate(curves):
        curve_nodes[j, : cn.size] = cn
        curve_nodes[j, cn.size :] = cn[-1]
        if ct.size:
            curve_tput[j, : ct.size] = ct
            curve_tput[j, ct.size :] = ct[-1]
    return curve_nodes, curve_tput


def _rungs(rows: Sequence[JobRow]) -> np.ndarray:
    """Campaign rungs as a (J, R) array of increasing fractions, NaN-padded.

    R is the most rungs of any row, at least 1 (a column of NaN when no job has rungs).

    Raises:
        ConfigError: rungs not strictly increasing inside (0, 1).
    """
    R = max((len(r.rungs) for r in rows), default=0)
    rungs = np.full((len(rows), max(R, 1)), np.nan)
    for j, r in enumerate(rows):
        if len(r.rungs):
            rs = [float(x) for x in r.rungs]  # (a few values: cheaper than numpy's checks)
            if any(x <= 0 or x >= 1 for x in rs) or any(b - a <= 0 for a, b in pairwise(rs)):
                raise ConfigError(
                    f"jobs[{j}] ({r.name}).rungs", rs, "increasing fractions in (0, 1)"
                )
            rungs[j, : len(rs)] = rs
    return rungs


def _jobs_table(
    rows: Sequence[JobRow],
    perf: _Performance,
    curve_nodes: np.ndarray,
    curve_tput: np.ndarray,
    rungs: np.ndarray,
) -> Jobs:
    """The ``Jobs`` table of the rows, with unit work and exact declarations (for now)."""
    col = lambda attr, dt=np.float64: np.array([getattr(r, attr) for r in rows], dtype=dt)  # noqa: E731
    return Jobs(
        name=tuple(r.name for r in rows),
        model=tuple(r.model for r in rows),
        app_class=col("app_class", np.int8),
        submit_s=col("submit_s"),
        min_nodes=col("min_nodes", np.int32),
        max_nodes=col("max_nodes", np.int32),
        work=np.ones(len(rows)),
        r_up_s=col("r_up_s"),
        r_down_s=col("r_down_s"),
        startup_s=col("startup_s"),
        ckpt_every=col("ckpt_every"),
        perf_kind=perf.kind,
        curve_nodes=curve_nodes,
        curve_tput=curve_tput,
        type_rate=perf.type_rate,
        local_batch=perf.local_batch,
        grad_bytes=perf.grad,
        overlap=perf.overlap,
        declared_curve_tput=curve_tput,
        declared_r_up_s=col("r_up_s"),
        declared_r_down_s=col("r_down_s"),
        campaign=col("campaign", np.int32),
        rungs=rungs,
        quality=col("quality"),
    )


def _tabulate_and_size(
    rows: Sequence[JobRow],
    cluster: Cluster,
    jobs: Jobs,
    perf: _Performance,
    curve_nodes: np.ndarray,
    curve_tput: np.ndarray,
) -> np.ndarray:
    """Fill the parametric jobs' curves in ``curve_tput`` (in place) and return each job's
    work in samples (``work``, or ``work_hours`` at its rate on ``work_ref_nodes``).

    A parametric job's curve is its rate on the fastest type at slowdown 1, packed (the
    best placement); every curve and reference rate is computed in one formula call.

    Args:
        rows: the rows, sorted by submission.
        cluster: the machine.
        jobs: the table so far (its parametric columns feed the model).
        perf: the rows' performance columns.
        curve_nodes: (J, K) breakpoints.
        curve_tput: (J, K) throughputs, filled in place for parametric jobs.

    Raises:
        ConfigError: a row with neither ``work`` nor ``work_hours``.
    """
    J = len(rows)
    kind, type_rate = perf.kind, perf.type_rate
    model = ThroughputModel(cluster, jobs)
    param = np.flatnonzero(kind == PerfKind.PARAMETRIC)
    slow = np.zeros(J)  # (parametric jobs: their best device's slowness)
    if param.size:  # every breakpoint of every parametric job in one formula call
        slow[param] = 1.0 / type_rate[param].max(axis=1)
        n = curve_nodes[param]
        curve_tput[param] = model.formula(
            np.broadcast_to(param[:, None], n.shape),
            n,
            np.broadcast_to(slow[param, None], n.shape),
            model.packed_spread(n),
        )
    ref_rate = np.zeros(J)  # exact rates at the reference counts, in one call as well
    ref_jobs = np.array(
        [j for j in param if rows[j].work is None and rows[j].work_hours is not None], dtype=int
    )
    if ref_jobs.size:
        n_ref = np.array([float(rows[j].work_ref_nodes) for j in ref_jobs])
        ref_rate[ref_jobs] = model.formula(
            ref_jobs, n_ref, slow[ref_jobs], model.packed_spread(n_ref)
        )
    work = np.empty(J)
    parametric = (kind == _PARAMETRIC).tolist()
    for j, r in enumerate(rows):
        if r.work is not None:
            work[j] = r.work
        elif r.work_hours is not None:
            if parametric[j]:  # exact rate at the reference count
                ref = float(ref_rate[j])
            else:  # the table is the truth, interpolated as the simulator does
                ref = float(np.interp(r.work_ref_nodes, curve_nodes[j], curve_tput[j]))
            work[j] = r.work_hours * 3600.0 * ref
        else:
            raise ConfigError(f"jobs[{j}] ({r.name}).work", None, "work (samples) or work_hours")
    return work


def _declared(
    jobs: Jobs,
    curve_nodes: np.ndarray,
    curve_tput: np.ndarray,
    declaration: Declaration | None,
    rng: np.random.Generator | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What users declare: the curves and rescale costs with ``declaration``'s noise.

    With exact declarations nothing is drawn and the true arrays are returned. Otherwise
    the draws are, in order, one normal per (job, breakpoint) and then one per (up, down)
    and job; a padded breakpoint repeats its last real breakpoint's declared value.

    Returns:
        (declared curves (J, K), declared ``r_up_s`` (J,), declared ``r_down_s`` (J,)).

    Raises:
        ConfigError: noisy declarations without ``rng``.
    """
    J = curve_tput.shape[0]
    decl = declaration or Declaration()
    d_curve, d_up, d_down = curve_tput, jobs.r_up_s, jobs.r_down_s
    if decl != Declaration():
        if rng is None:
            raise ConfigError("rng", None, "a generator when declarations are noisy")
        d_curve = (
            curve_tput
            * decl.curve_bias
            * np.exp(decl.curve_sigma * rng.standard_normal(curve_tput.shape))
        )
        # padding repeats the last real breakpoint: repeat its declared value too
        last = np.argmax(curve_nodes == curve_nodes[:, -1:], axis=1)
        cols = np.arange(curve_nodes.shape[1])
        d_curve = np.where(
            cols[None, :] > last[:, None], d_curve[np.arange(J), last][:, None], d_curve
        )
        cost_noise = decl.cost_bias * np.exp(decl.cost_sigma * rng.standard_normal((2, J)))
        d_up, d_down = jobs.r_up_s * cost_noise[0], jobs.r_down_s * cost_noise[1]
    return d_curve, d_up, d_down


def _checkpoint_samples(
    ckpt_every: np.ndarray, curve_nodes: np.ndarray, curve_tput: np.ndarray
) -> np.ndarray:
    """Checkpoint periods given in seconds (stored negative by the generators) become
    samples at the job's one-node rate.
    """
    ckpt = np.array(ckpt_every, copy=True)
    neg = ckpt < 0
    if neg.any():
        J = ckpt.shape[0]
        one_node = np.array([np.interp(1.0, curve_nodes[j], curve_tput[j]) for j in range(J)])
        ckpt[neg] = -ckpt[neg] * np.maximum(one_node[neg], 1e-12)
    return ckpt


# ---------------------------------------------------------------------------------------
# Synthetic workloads
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobMix:
    """Independent jobs arriving as a Poisson process.

    Attributes:
        num_jobs: number of jobs.
        arrival_rate_per_h: Poisson rate; arrivals start at ``start_s``.
        models: model name -> weight (names from ``mtgym.generate.catalog.CATALOG``).
        min_nodes: choices of minimum nodes (uniform).
        max_nodes: choices of maximum nodes (uniform; raised to min if below).
        work_hours: (low, high) uniform hours of work on ``work_ref_nodes`` nodes.
        work_ref_nodes: node count of ``work_hours`` (capped at each job's maximum).
        start_s: time of the first arrival, seconds.
        r_up_s, r_down_s: (low, high) uniform rescale costs (BFTrainer measured ~18 / ~12 s).
        startup_s: launch cost from 0 nodes, seconds.
        ckpt_every_s: checkpoint period in seconds of work at the job's one-node rate
            (inf = none).

    Raises:
        ConfigError: ``num_jobs < 0``, a rate <= 0, or a model weight unknown or <= 0.
    """

    num_jobs: int = mix.NUM_JOBS
    arrival_rate_per_h: float = mix.ARRIVAL_RATE_PER_H
    start_s: float = mix.START_S
    models: Mapping[str, float] = field(default_factory=lambda: dict(mix.MODELS))
    min_nodes: Sequence[int] = mix.MIN_NODES
    max_nodes: Sequence[int] = mix.MAX_NODES
    work_hours: tuple[float, float] = mix.WORK_HOURS
    work_ref_nodes: int = mix.WORK_REF_NODES
    r_up_s: tuple[float, float] = mix.R_UP_S
    r_down_s: tuple[float, float] = mix.R_DOWN_S
    startup_s: float = mix.STARTUP_S
    ckpt_every_s: float = mix.CKPT_EVERY_S

    def __post_init__(self) -> None:
        if self.num_jobs < 0 or self.arrival_rate_per_h <= 0:
            raise ConfigError(
                "num_jobs/arrival_rate_per_h",
                (self.num_jobs, self.arrival_rate_per_h),
                ">= 0 and > 0",
            )
        unknown = [m for m in self.models if m not in CATALOG]
        if unknown or not self.models or any(w <= 0 for w in self.models.values()):
            raise ConfigError(
                "models", unknown or dict(self.models), f"positive weights over {sorted(CATALOG)}"
            )

    def rows(self, rng: np.random.Generator, prefix: str = "job") -> list[JobRow]:
        """Draw the jobs (none for ``num_jobs == 0``, drawing nothing from ``rng``).

        Args:
            rng: the "arrivals" stream.
            prefix: start of each job's name (``<prefix>0007-resnet50``).

        Returns:
            Parametric rows, in arrival order.
        """
        if self.num_jobs == 0:
            return []
        names = list(self.models)
        w = np.array([self.models[m] for m in names], dtype=np.float64)
        gaps = rng.exponential(3600.0 / self.arrival_rate_per_h, self.num_jobs)
        submit = self.start_s + np.cumsum(gaps) - gaps[0]
        pick = rng.choice(len(names), size=self.num_jobs, p=w / w.sum())
        lo = rng.choice(np.asarray(self.min_nodes), size=self.num_jobs)
        hi = np.maximum(rng.choice(np.asarray(self.max_nodes), size=self.num_jobs), lo)
        hours = rng.uniform(*self.work_hours, size=self.num_jobs)
        up = rng.uniform(*self.r_up_s, size=self.num_jobs)
        down = rng.uniform(*self.r_down_s, size=self.num_jobs)
        rows = []
        for i in range(self.num_jobs):
            p = CATALOG[names[pick[i]]]
            rows.append(
                JobRow(
                    name=f"{prefix}{i:04d}-{p.name}",
                    model=p.name,
                    app_class=p.app_class,
                    submit_s=float(submit[i]),
                    min_nodes=int(lo[i]),
                    max_nodes=int(hi[i]),
                    work_hours=float(hours[i]),
                    work_ref_nodes=int(min(self.work_ref_nodes, hi[i])),
                    r_up_s=float(up[i]),
                    r_down_s=float(down[i]),
                    startup_s=self.startup_s,
                    profile=p,
                )
            )
        _set_ckpt(rows, self.ckpt_every_s)
        return rows


def _set_ckpt(rows: list[JobRow], every_s: float) -> None:
    """A checkpoint every ``every_s`` seconds of one-node work, on every row: stored negative
    (seconds) and turned into samples by ``build_jobs`` once the curve is known.
    """
    for r in rows:
        r.ckpt_every = np.inf if not np.isfinite(every_s) else -float(every_s)


@dataclass(frozen=True)
class Campaign:
    """A NAS or HPO campaign: ``num_trials`` trials of one model family.

    HPO trials share the architecture and differ in hyper-parameters (batch size scales the
    per-GPU batch); NAS trials differ in architecture (per-GPU rate and gradient size vary
    lognormally with ``arch_sigma``). Every trial has a hidden quality; at each rung (a
    fraction of its work) a trial continues only if it is among the best ``1/eta`` of the
    trials that reached that rung (asynchronous successive halving). No rungs = no stopping.

    Attributes:
        kind: ``"hpo"`` or ``"nas"``.
        model: the catalog model every trial trains.
        num_trials: trials (jobs) in the campaign, >= 1.
        start_s: the first trial's submission time, seconds.
        interarrival_s: seconds between two trials' submissions (fixed, >= 0).
        eta: successive-halving factor, >= 1.
        rungs: fractions of a trial's work at which it is judged.
        work_hours: (low, high) uniform hours of work on ``work_ref_nodes`` nodes.
        work_ref_nodes: node count of ``work_hours`` (capped at ``max_nodes``).
        min_nodes: fewest nodes of every trial.
        max_nodes: most nodes of every trial.
        arch_sigma: NAS: lognormal sigma of the per-GPU rate and of the gradient size.
        batch_choices: HPO: per-GPU batches drawn uniformly.
        r_up_s: grow cost, seconds.
        r_down_s: shrink and pre-emption cost, seconds.
        startup_s: start-up pause, seconds.

    Raises:
        ConfigError: an unknown kind or model, ``num_trials`` or ``eta`` < 1, or a
            negative interarrival.
    """

    kind: str = "hpo"
    model: str = "resnet18"
    num_trials: int = 16
    start_s: float = 0.0
    interarrival_s: float = 60.0
    eta: float = 3.0
    rungs: Sequence[float] = (1 / 9, 1 / 3)
    work_hours: tuple[float, float] = (0.25, 0.5)
    work_ref_nodes: int = 1
    min_nodes: int = 1
    max_nodes: int = 8
    arch_sigma: float = 0.3
    batch_choices: Sequence[int] = (32, 64, 128, 256)
    r_up_s: float = BFTRAINER_R_UP_S
    r_down_s: float = BFTRAINER_R_DOWN_S
    startup_s: float = 30.0

    def __post_init__(self) -> None:
        if self.kind not in ("hpo", "nas"):
            raise ConfigError("kind", self.kind, "'hpo' or 'nas'")
        if self.model not in CATALOG:
            raise ConfigError("model", self.model, f"one of {sorted(CATALOG)}")
        if self.num_trials < 1 or self.eta < 1 or self.interarrival_s < 0:
            raise ConfigError(
                "num_trials/eta/interarrival_s",
                (self.num_trials, self.eta, self.interarrival_s),
                ">= 1, >= 1, >= 0",
            )

    def rows(self, rng: np.random.Generator, campaign_id: int, prefix: str) -> list[JobRow]:
        """Draw the trials.

        Args:
            rng: the campaign's own stream (``"campaign<id>"``).
            campaign_id: the campaign's index in the instance.
            prefix: the trials' name prefix (``<prefix>-t007``).

        Returns:
            One parametric row per trial, with a standard-normal hidden quality.
        """
        p = CATALOG[self.model]
        n = self.num_trials
        quality = rng.standard_normal(n)
        hours = rng.uniform(*self.work_hours, size=n)
        rows = []
        for i in range(n):
            rate_scale, params_scale, batch = 1.0, 1.0, None
            if self.kind == "nas":
                rate_scale = float(np.exp(self.arch_sigma * rng.standard_normal()))
                params_scale = float(np.exp(self.arch_sigma * rng.standard_normal()))
            else:
                batch = int(rng.choice(np.asarray(self.batch_choices)))
            rows.append(
                JobRow(
                    name=f"{prefix}-t{i:03d}",
                    model=p.name,
                    app_class=p.app_class,
                    submit_s=self.start_s + i * self.interarrival_s,
                    min_nodes=self.min_nodes,
                    max_nodes=self.max_nodes,
                    work_hours=float(hours[i]),
                    work_ref_nodes=min(self.work_ref_nodes, self.max_nodes),
                    r_up_s=self.r_up_s,
                    r_down_s=self.r_down_s,
                    startup_s=self.startup_s,
                    profile=p,
                    rate_scale=rate_scale,
                    params_scale=params_scale,
                    local_batch=batch,
                    campaign=campaign_id,
                    rungs=tuple(self.rungs),
                    quality=float(quality[i]),
                )
            )
        return rows


def campaigns_table(campaigns: Sequence[Campaign], names: Sequence[str]) -> Campaigns:
    """The instance's campaign table.

    Args:
        campaigns: the campaigns, in campaign-index order.
        names: their names (``hpo0``, ``nas1``, ...).
    """
    return Campaigns(
        name=tuple(names),
        kind=tuple(c.kind for c in campaigns),
        eta=frozen(np.array([c.eta for c in campaigns], dtype=np.float64)),
    )


#: blox-pal's model-to-class mapping, extended to BFTrainer's ImageNet models.
BFTRAINER_MODEL_CLASS = {
    "alexnet": AppClass.A,
    "resnet18": AppClass.C,
    "vgg16": AppClass.C,
    "densenet": AppClass.A,
    "mnasnet1": AppClass.D,
    "shufflenet": AppClass.D,
    "mobilenet": AppClass.D,
}


def rows_from_bftrainer(table: BFTrainerJobs, *, startup_s: float = 0.0) -> list[JobRow]:
    """Job rows from a BFTrainer workload table (table throughput form).

    Args:
        table: the jobs read by ``mtgym.readers.read_bftrainer_jobs``.
        startup_s: start-up pause of every job, seconds (BFTrainer's: 0).

    Returns:
        One row per job, in table order; classes from ``BFTRAINER_MODEL_CLASS`` (A for a
        model not listed).
    """
    rows = []
    for j in range(len(table)):
        model = str(table.model[j])
        rows.append(
            JobRow(
                name=str(table.job_id[j]),
                model=model,
                app_class=BFTRAINER_MODEL_CLASS.get(model.lower(), AppClass.A),
                submit_s=float(table.submit_s[j]),
                min_nodes=int(table.jmin[j]),
                max_nodes=int(table.jmax[j]),
                work=float(table.pmax_samples[j]),
                r_up_s=float(table.rescale_up_s[j]),
                r_down_s=float(table.rescale_down_s[j]),
                startup_s=startup_s,
                curve_nodes=table.curve_nodes.astype(np.float64),
                curve_tput=table.curve_tput[j],
            )
        )
    return rows


@dataclass(frozen=True)
class TableWorkload:
    """Jobs from a BFTrainer-format workload CSV (measured curves; table throughput form).

    Submission time ``time_offset_s`` becomes episode time 0 (the Summit trace's row 1000 is
    72,743 s, the first submission of BFTrainer's workloads). ``max_jobs`` keeps the first
    jobs only.

    Attributes:
        path: the workload CSV (``mtgym.readers.read_bftrainer_jobs``).
        time_offset_s: subtracted from every submission time.
        max_jobs: keep the first ``max_jobs`` jobs of the file (None = all).
        startup_s: start-up pause of every job, seconds.
    """

    path: str | Path
    time_offset_s: float = 0.0
    max_jobs: int | None = None
    startup_s: float = 0.0

    def rows(self, rng: np.random.Generator, prefix: str = "job") -> list[JobRow]:
        """The table's jobs (``rng`` is unused: the table is the truth)."""
        from mtgym.readers import read_bftrainer_jobs

        rows = rows_from_bftrainer(read_bftrainer_jobs(self.path), startup_s=self.startup_s)
        if self.max_jobs is not None:
            rows = rows[: self.max_jobs]
        for r in rows:
            r.submit_s -= self.time_offset_s
        return rows
