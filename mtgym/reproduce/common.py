"""Shared pieces of the reproduction experiments: report rows, data paths, a traced episode
runner, a parallel task runner with rich progress, and small statistics helpers.

Every experiment module (``freetrain``, ``malletrain``, ``pal``) exposes ``run(data_dir,
out_dir, *, quick, workers, progress, ...)`` returning an ``ExperimentResult``; its rows are
``Row`` objects whose verdict ``verdict`` decides by ``VERDICT_RULE`` (MalleTrain's rows
override it with its pre-registered rule), and ``mtgym.reproduce.report`` writes them.
Episodes are independent, so each experiment lists them as picklable tasks and runs a
module-level function over them with ``Workers.map``.

Baseline policies are created through the policy registry (``make_policy``), never imported:
``mtgym`` does not depend on the ``baselines`` package.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.paths import data_dir
from mtgym.core.types import DECISION_EVENTS, EventKind
from mtgym.metrics import compute_metrics
from mtgym.policy.base import Policy
from mtgym.sim.dynamics import advance, apply_allocation, initial_state
from mtgym.sim.view import ViewBuilder

#: Files every experiment reads, relative to the data folder.
SUMMIT_FRAGMENTS = "summit-idle-fragments.csv.gz"
SUMMIT_NODES = "summit-nodes.csv"
IMAGENET_JOBS = "bftrainer-imagenet-1001j.csv"
HPS_JOBS = "bftrainer-hps-shufflenet-1000j.csv"
PAL_TRACE = "pal-philly/workload-{k}.csv"
PAL_VARIABILITY = "gpu-variability/sim"

#: Row 1000 of the Summit trace, the first submission of BFTrainer's workloads (s).
SUMMIT_ROW_1000_S = 72_743.0

#: Keys of a report row, in order (``report.json`` objects have exactly these).
ROW_KEYS = ("experiment", "metric", "paper", "mtgym", "note", "verdict")

#: Verdicts, from best to worst, and the one for rows without a paper value.
REPRODUCED, PARTLY, NOT_REPRODUCED, NO_CLAIM = "reproduced", "partly", "not reproduced", "n/a"
#: Largest relative distance to the paper's value that still counts as reproduced.
REL_TOL = 0.25
#: The rule ``verdict`` implements, printed in the report.
VERDICT_RULE = (
    "**Verdict rule** (fixed before any number is seen, one function for every row, "
    "`mtgym.reproduce.common.verdict`): a row whose paper/artifact value is `p` and mtgym's "
    "`m` is **reproduced** when `m` has the sign of `p`, the row's ordering claim (if it "
    "has one, e.g. 'PAL's gain falls less than PM-First's') holds, and "
    f"`|m - p| <= {REL_TOL:g} |p|`; **partly** when the sign and the ordering hold but `m` is "
    f"further than {100 * REL_TOL:g} % of `p` from it; **not reproduced** otherwise (wrong sign, "
    "broken ordering, or no mtgym value). A value of 0 has no sign: it matches only `p = 0`. "
    "Rows without a paper value (context, distributions, wall times) get **n/a**: they "
    "claim nothing."
)


def verdict(paper: float | None, value: float | None, *, ordering: bool | None = None) -> str:
    """The verdict of one row by ``VERDICT_RULE``.

    ``np.sign`` decides the sign test, so a value of 0 matches only a paper value of 0; the
    ``1e-12`` slack keeps a value exactly ``REL_TOL`` away on the reproduced side.

    Args:
        paper: the paper's (or its artifact's) value; None or NaN/inf: the row claims
            nothing, and the verdict is ``NO_CLAIM`` whatever ``value`` is.
        value: mtgym's value; None or NaN/inf counts as missing (``NOT_REPRODUCED``).
        ordering: the truth of the row's ordering claim; None: the row has none. False
            gives ``NOT_REPRODUCED`` even when the values agree.

    Returns:
        ``REPRODUCED``, ``PARTLY``, ``NOT_REPRODUCED`` or ``NO_CLAIM``.
    """
    p, m = _clean(paper), _clean(value)
    if p is None:
        return NO_CLAIM
    if m is None or ordering is False or np.sign(m) != np.sign(p):
        return NOT_REPRODUCED
    return REPRODUCED if abs(m - p) <= REL_TOL * abs(p) + 1e-12 else PARTLY


@dataclass
class Row:
    """One line of the report: a metric, the paper's value, mtgym's value, and why they differ.

    Gains and efficiencies are fractions (0.42 = 42 %); ``None`` = not applicable / not given.
    The ``verdict`` follows from ``paper``, ``mtgym`` and ``ordering`` (``verdict``).

    Attributes:
        experiment: the experiment's name (``"freetrain"``, ``"malletrain"`` or ``"pal"``).
        metric: what the row measures, in words (the report's ``metric`` column).
        paper: the paper's or its artifact's value; None: it gives none (verdict ``n/a``).
        mtgym: mtgym's value; None or NaN: not measured (``not reproduced`` if ``paper``
            has a value).
        note: how the value was measured and why it may differ (``full_note`` prefixes a
            plain "NOT REPRODUCED" when the verdict says so).
        unit: how report.md prints both values: ``"fraction"`` as a percentage, ``"s"`` as
            seconds. Not in ``report.json``.
        ordering: the truth of the row's ordering claim (e.g. "PAL >= PM-First"); None: the
            row makes none. Not in ``report.json``: it is folded into the verdict.
    """

    experiment: str
    metric: str
    paper: float | None
    mtgym: float | None
    note: str = ""
    unit: str = "fraction"
    ordering: bool | None = None

    @property
    def verdict(self) -> str:
        """``reproduced`` / ``partly`` / ``not reproduced`` / ``n/a`` (``VERDICT_RULE``)."""
        return verdict(self.paper, self.mtgym, ordering=self.ordering)

    @property
    def full_note(self) -> str:
        """The note, opened by a plain 'NOT REPRODUCED.' when the verdict says so."""
        if self.verdict == NOT_REPRODUCED:
            why = "ordering broken" if self.ordering is False else "sign or value"
            return f"NOT REPRODUCED ({why}). {self.note}".strip()
        return self.note

    def as_dict(self) -> dict[str, Any]:
        """The row as a JSON-ready dict with exactly ``ROW_KEYS`` (NaN becomes None)."""
        return {
            "experiment": self.experiment,
            "metric": self.metric,
            "paper": _clean(self.paper),
            "mtgym": _clean(self.mtgym),
            "note": self.full_note,
            "verdict": self.verdict,
        }


def _clean(x: float | None) -> float | None:
    """``x`` as a Python float, or None when it is None, NaN or infinite (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return None if (math.isnan(x) or math.isinf(x)) else x


@dataclass
class ExperimentResult:
    """What one experiment hands to the report: rows, figures, details and its wall time.

    Attributes:
        name: the experiment's name; also the stem of ``<name>_results.json``.
        rows: the experiment's report rows, in the order report.md lists them.
        wall_s: wall-clock seconds the experiment's episodes took (figures excluded).
        quick: whether it ran the reduced ``--quick`` sizes (report.md says so).
        figures: the PNG files it wrote under the output folder.
        sections: markdown blocks appended to report.md after the results table.
        raw: everything else worth keeping (sizes, per-episode records, summaries), written
            to ``<name>_results.json`` after ``report.json_safe``.
    """

    name: str
    rows: list[Row]
    wall_s: float
    quick: bool
    figures: list[Path] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------
def default_data_dir() -> Path:
    """``$MTGYM_DATA``, else ``../shared/data`` beside the clone (``mtgym.core.paths``)."""
    return data_dir()


def check_data(data_dir: Path, files: Iterable[str]) -> Path:
    """Check that the data files an experiment reads exist, before any episode runs.

    Args:
        data_dir: the shared data folder (``default_data_dir`` or ``--data``).
        files: paths relative to ``data_dir`` (e.g. ``SUMMIT_FRAGMENTS``).

    Returns:
        ``data_dir`` as a ``Path``.

    Raises:
        FileNotFoundError: one or more files are missing; the message names all of them
            and how to point at the data folder.
    """
    data_dir = Path(data_dir)
    missing = [f for f in files if not (data_dir / f).exists()]
    if missing:
        raise FileNotFoundError(
            f"data folder {data_dir} lacks {', '.join(missing)} "
            "(pass --data DIR or set MTGYM_DATA to the shared data folder)"
        )
    return data_dir


# ---------------------------------------------------------------------------------------
# Policies (through the registry)
# ---------------------------------------------------------------------------------------
def make(name: str, **kwargs: Any) -> Policy:
    """A policy by registered name (``equal-share`` is mtgym's own).

    Args:
        name: a name of ``mtgym.policy.registry`` (e.g. ``"freetrain"``, ``"malletrain"``,
            ``"pal"``); ``"equal-share"`` (BFTrainer's non-MILP heuristic) is built
            directly from ``mtgym.policy.equal_share.EqualShare``.
        **kwargs: the policy's constructor arguments (e.g. ``t_fwd``, ``max_jobs``).

    Raises:
        KeyError: ``name`` is not registered.
    """
    if name == "equal-share":
        from mtgym.policy.equal_share import EqualShare

        return EqualShare(**kwargs)
    from mtgym.policy.registry import make_policy

    return make_policy(name, **kwargs)


# ---------------------------------------------------------------------------------------
# Traced episodes
# ---------------------------------------------------------------------------------------
@dataclass
class TracedEpisode:
    """An episode's metrics plus the integral of the jobs' rates at the node sets they held.

    ``ideal_samples`` = sum over jobs of the integral of ``rate_j(t)`` over the time job j
    held nodes, ``rate_j`` being the simulator's rate of its node set (for BFTrainer's table
    jobs on Summit: the measured curve at the node count). It is what the same allocation
    would have processed with no rescale, pre-emption or start-up loss.

    The ``series_*`` arrays have one entry per decision epoch plus the start (index 0, at
    the episode's ``t_start`` with 0 samples and 0 nodes used), all of the same length.

    Attributes:
        metrics: ``mtgym.metrics.compute_metrics`` of the final state, as floats.
        ideal_samples: the integral above, in samples.
        node_s: (J,) node-seconds each job held.
        series_t: simulated time (s) at the end of each decision epoch.
        series_samples: cumulative useful samples at ``series_t``.
        series_ideal: cumulative ideal samples at ``series_t``.
        series_nodes: nodes allocated during the interval that ends at ``series_t``.
        series_idle: idle (offered) nodes during that interval, at its start.
        wall_s: wall-clock seconds of the whole episode.
        policy_s: wall-clock seconds spent in ``policy.decide``.
        decisions: number of ``decide`` calls.
    """

    metrics: dict[str, float]
    ideal_samples: float
    node_s: np.ndarray
    series_t: np.ndarray
    series_samples: np.ndarray
    series_ideal: np.ndarray
    series_nodes: np.ndarray
    series_idle: np.ndarray
    wall_s: float
    policy_s: float
    decisions: int

    def samples_at(self, t: float) -> float:
        """Useful samples processed by time ``t`` (linear between epochs).

        Args:
            t: simulated time (s, the trace's clock, not relative to ``t_start``); before
                the first or after the last epoch the end value is held (``np.interp``).
        """
        return float(np.interp(t, self.series_t, self.series_samples))

    def ideal_at(self, t: float) -> float:
        """Ideal samples by time ``t`` (linear between epochs).

        Args:
            t: simulated time (s, the trace's clock), clamped to the series as in
                ``samples_at``.
        """
        return float(np.interp(t, self.series_t, self.series_ideal))


def run_traced(instance: Instance, policy: Policy) -> TracedEpisode:
    """``play`` (a decision at every decision event), also integrating ideal samples.

    The allocation is applied with ``apply_allocation`` and the state then advanced without
    one, which is exactly ``advance(state, instance, allocation)``; in between, the rates of
    the new node sets are read. With decisions at every decision event, rates are constant
    until the call returns (the only non-decision event, a campaign rung that a trial passes,
    changes no node set), so ``sum(rate) x (t1 - t0)`` integrates them exactly.

    The episode ends at ``instance.t_end``, when every job is done, or when a step makes no
    progress (same time, no event).

    Args:
        instance: the episode's instance (not modified).
        policy: the policy; it is ``reset`` on the first view and sees views of its own
            ``info_mode``.

    Returns:
        The metrics, the ideal samples and the per-epoch series (``TracedEpisode``).
    """
    t_wall = time.perf_counter()
    state = initial_state(instance)
    views = ViewBuilder(instance, policy.info_mode)
    policy.reset(views(state))
    limit = instance.t_end
    policy_s, decisions = 0.0, 0
    ideal = 0.0
    ts, ss, ids, ns, idle = [state.time], [0.0], [0.0], [0], [int(state.available.sum())]
    samples = 0.0
    while state.time < limit:
        t0 = time.perf_counter()
        alloc = policy.decide(views(state))
        policy_s += time.perf_counter() - t0
        decisions += 1
        t_prev = state.time
        apply_allocation(state, instance, alloc)
        rate_sum = float(state.rate.sum())
        n_used = int(state.n_nodes.sum())
        n_idle = int(state.available.sum())
        state, info = advance(
            state, instance, None, until=limit, stop_on=DECISION_EVENTS, copy=False
        )
        ideal += rate_sum * (info.t1 - t_prev)
        samples += info.samples
        ts.append(info.t1)
        ss.append(samples)
        ids.append(ideal)
        ns.append(n_used)
        idle.append(n_idle)
        if info.all_done or (info.t1 == t_prev and info.kinds == EventKind.NONE):
            break
    m = compute_metrics(state, instance).as_dict()
    return TracedEpisode(
        metrics={k: float(v) for k, v in m.items()},
        ideal_samples=ideal,
        node_s=state.node_s.copy(),
        series_t=np.asarray(ts),
        series_samples=np.asarray(ss),
        series_ideal=np.asarray(ids),
        series_nodes=np.asarray(ns),
        series_idle=np.asarray(idle),
        wall_s=time.perf_counter() - t_wall,
        policy_s=policy_s,
        decisions=decisions,
    )


# ---------------------------------------------------------------------------------------
# Running many independent tasks
# ---------------------------------------------------------------------------------------
def default_workers() -> int:
    """Worker processes for the full runs: the CPUs this process may use (at most 8).

    Uses the process's CPU affinity (so a ``taskset`` or a batch scheduler's limit is
    respected) where the platform has it, else ``os.cpu_count()``; at least 1.
    """
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def _noop() -> None:
    """A task that does nothing: submitted once so that the pool forks its workers now."""
    return None


class Workers:
    """A pool of worker processes for independent episodes (sequential when ``n <= 1``).

    The workers are forked when the pool opens, before any progress display starts its
    refresh thread, so no thread is copied mid-lock; forking also spares re-importing
    ``__main__`` (scripts need no main guard). Platforms without ``fork`` run sequentially.

    Use it as a context manager: the pool exists between ``__enter__`` and ``__exit__``
    only; ``map`` outside it runs in this process.

    Args:
        n: worker processes (values below 1 count as 1: sequential).
    """

    def __init__(self, n: int = 1) -> None:
        self.n = max(1, int(n))
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers:
        if self.n > 1 and "fork" in get_all_start_methods():
            self.pool = ProcessPoolExecutor(max_workers=self.n, mp_context=get_context("fork"))
            self.pool.submit(_noop).result()  # fork every worker now
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def map(
        self,
        fn: Callable[[Any], Any],
        tasks: Sequence[Any],
        *,
        progress: Any = None,
        description: str = "",
    ) -> list[Any]:
        """``[fn(t) for t in tasks]`` (in the workers if open); results in task order.

        A single task, or a closed pool, runs in this process. An exception in a task is
        raised here (from the pool: when its result is collected).

        Args:
            fn: the function of one task; module-level, so that it pickles.
            tasks: the tasks (picklable).
            progress: a rich ``Progress`` (``make_progress``) or None; one bar, labelled
                ``description``, advances per finished task.
            description: the bar's label.

        Returns:
            ``fn``'s results, in the order of ``tasks``.
        """
        bar = progress.add_task(description, total=len(tasks)) if progress is not None else None
        out: list[Any] = [None] * len(tasks)
        if self.pool is None or len(tasks) <= 1:
            for i, t in enumerate(tasks):
                out[i] = fn(t)
                if bar is not None:
                    progress.advance(bar)
            return out
        futures = {self.pool.submit(fn, t): i for i, t in enumerate(tasks)}
        for fut in as_completed(futures):
            out[futures[fut]] = fut.result()
            if bar is not None:
                progress.advance(bar)
        return out


def workers_ctx(workers: int | Workers) -> Any:
    """A context giving a ``Workers``: the one passed (left open), or a new pool of that size.

    Lets an experiment's ``run`` take either a worker count (stand-alone) or the pool
    ``run_experiments`` opened once for all experiments.

    Args:
        workers: a worker count (a pool is opened and closed with the context) or an open
            ``Workers`` (used as is and not closed).
    """
    if isinstance(workers, Workers):
        return nullcontext(workers)
    return Workers(workers)


def make_progress(enabled: bool) -> Any:
    """A rich progress display: description, bar, done/total and elapsed time per task.

    Args:
        enabled: False gives a disabled display (nothing is drawn, ``add_task`` and
            ``advance`` still work), for ``--no-progress`` and tests.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        disable=not enabled,
    )


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------
def geomean(x: Iterable[float]) -> float:
    """Geometric mean of positive values (NaN if empty or any is not positive/finite).

    Args:
        x: the values, e.g. per-trace JCT ratios.
    """
    a = np.asarray(list(x), dtype=np.float64)
    if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a <= 0):
        return float("nan")
    return float(np.exp(np.log(a).mean()))


def gain_from_ratios(ratios: Iterable[float]) -> float:
    """``1 - geomean(ratios)``: the geomean improvement of a lower-is-better metric.

    Args:
        ratios: the policy's value / the reference's value, one per trace (e.g. mean JCT);
            0.8 on every trace gives a gain of 0.2. NaN if any ratio is not positive.
    """
    return 1.0 - geomean(ratios)


def quantiles(x: Iterable[float]) -> dict[str, float]:
    """min, quartiles, median, max and n of a sample (a distribution for the report).

    Args:
        x: the sample (e.g. one gain per variability draw); empty gives NaNs and n = 0.

    Returns:
        ``{"n", "min", "q1", "median", "q3", "max"}`` (``np.quantile``'s linear rule).
    """
    a = np.asarray(list(x), dtype=np.float64)
    q = np.quantile(a, [0.0, 0.25, 0.5, 0.75, 1.0]) if a.size else np.full(5, np.nan)
    return {
        "n": int(a.size),
        "min": float(q[0]),
        "q1": float(q[1]),
        "median": float(q[2]),
        "q3": float(q[3]),
        "max": float(q[4]),
    }


def fmt_dist(d: dict[str, float]) -> str:
    """``median (q1-q3, min-max, n)`` of a ``quantiles`` dict, as percentages.

    Args:
        d: a dict of ``quantiles`` over fractions.
    """
    return (
        f"median {fmt_pct(d['median'])} (quartiles {fmt_pct(d['q1'])} to {fmt_pct(d['q3'])}, "
        f"range {fmt_pct(d['min'])} to {fmt_pct(d['max'])}, n = {d['n']})"
    )


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """A fraction as a percentage string (``n/a`` for None/NaN): 0.423 -> ``"42.3 %"``.

    Args:
        x: the fraction.
        digits: decimals of the percentage.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{100.0 * x:.{digits}f} %"
