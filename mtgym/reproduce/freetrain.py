"""Experiment 1: FreeTrain (BFTrainer, arXiv 2106.12091) on the Summit idle-node replay.

Setup, as in BFTrainer's replayer (docs/papers.md §1.5-1.6): the Summit idle-window trace from
row 1000 (t = 72,743 s, the first submission), the 1,001 ImageNet jobs (and the 1,000-job
ShuffleNet hyper-parameter search), BFTrainer's cost accounting (R x rate samples per
rescale and per pre-emption, free starts), ``maxJ`` = 10. FreeTrain's allocator (the exact
count-level solver of its MILP) re-solves at every event; it is compared with BFTrainer's
equal-share heuristic and swept over ``T_fwd``.

**Efficiency relative to dedicated nodes** (the abstract's "up to 93 %"; the paper's own
definition is not recoverable, docs/papers.md §1.5). mtgym's definition::

    E = useful samples / sum_j integral of P_j(n_j(t)) dt   over the time job j held nodes

where ``P_j(n)`` is job j's throughput on ``n`` dedicated nodes (the measured curve, linearly
interpolated as the replayer does). The denominator is what the same jobs would have
processed on dedicated nodes at exactly the node counts (and for exactly the node-seconds)
they used, with no rescale, pre-emption or restart loss; so ``1 - E`` is the price of
scavenging. It is computed by integrating the simulator's rates between decision epochs
(``common.run_traced``). A looser reading, ``E_1`` = useful samples / (node-seconds used x
the job's 1-node rate), also charges the jobs' sub-linear scaling, and is reported beside it.

Full run: the whole replay from row 1000 until every job completes. ``quick``: the first
1,000 nodes of the trace (its column order, the replayer's ``-nN``) for 6 hours.

Seven episodes (``tasks``): ImageNet under equal share and under FreeTrain at each T_fwd of
``T_FWD_SWEEP``; HPS ShuffleNet under equal share and FreeTrain at 10 s. Samples are also
compared over a fixed window after row 1000 (``Sizes.compare_s``: the first 24 h, or the
whole 6 h quick span). No row here has a paper value except the three efficiency rows (the
abstract's 93 %); the rest are context.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.reproduce.common import (
    HPS_JOBS,
    IMAGENET_JOBS,
    SUMMIT_FRAGMENTS,
    SUMMIT_NODES,
    SUMMIT_ROW_1000_S,
    ExperimentResult,
    Row,
    Workers,
    check_data,
    fmt_pct,
    make,
    make_progress,
    run_traced,
    workers_ctx,
)

NAME = "freetrain"
#: T_fwd values swept (s).
T_FWD_SWEEP = (1.0, 10.0, 60.0, 300.0)
#: BFTrainer's default T_fwd and maxJ.
T_FWD_DEFAULT = 10.0
MAX_JOBS = 10
#: Paper value: efficiency "up to 93 %" of dedicated nodes (abstract).
PAPER_EFFICIENCY = 0.93

WORKLOADS = {"imagenet": IMAGENET_JOBS, "hps": HPS_JOBS}


@dataclass(frozen=True)
class Sizes:
    """How much of the replay to run.

    Attributes:
        num_nodes: keep the first this many nodes of the trace, in its column order
            (the replayer's ``-nN``); None: all 4,734.
        span_s: seconds replayed from row 1000; None: to the trace end (the workload
            finishes long before).
        compare_s: samples and E are also compared over the first ``compare_s`` seconds
            after row 1000 (``samples_compare``, ``efficiency_compare``).
    """

    num_nodes: int | None
    span_s: float | None
    compare_s: float


FULL = Sizes(num_nodes=None, span_s=None, compare_s=24 * 3600.0)
QUICK = Sizes(num_nodes=1000, span_s=6 * 3600.0, compare_s=6 * 3600.0)


@dataclass(frozen=True)
class Task:
    """One episode: a workload under one policy (picklable: it travels to a worker).

    Attributes:
        workload: ``"imagenet"`` (1,001 jobs) or ``"hps"`` (1,000-job ShuffleNet search):
            a key of ``WORKLOADS``.
        policy: ``"freetrain"`` or ``"equal-share"``, both with maxJ = ``MAX_JOBS``.
        t_fwd: FreeTrain's look-ahead T_fwd (s); equal share ignores it (the tasks set
            ``T_FWD_DEFAULT``).
        data_dir: the data folder, as a string (the instance cache's key).
        num_nodes: ``Sizes.num_nodes``.
        span_s: ``Sizes.span_s``.
        compare_s: ``Sizes.compare_s``.
    """

    workload: str
    policy: str
    t_fwd: float
    data_dir: str
    num_nodes: int | None
    span_s: float | None
    compare_s: float

    @property
    def label(self) -> str:
        """Short name for tables and plots: ``FreeTrain T_fwd=10s`` or ``equal share``."""
        if self.policy == "freetrain":
            return f"FreeTrain T_fwd={self.t_fwd:g}s"
        return "equal share"


@functools.lru_cache(maxsize=4)
def _instance(data_dir: str, workload: str, num_nodes: int | None, span_s: float | None):
    """The Summit replay of ``workload`` from row 1000 (cached: a worker reuses it per task).

    No per-GPU variability (identical devices, as BFTrainer assumes), so the seed does not
    matter and the instance is the same for every policy.

    Args:
        data_dir: the data folder.
        workload: a key of ``WORKLOADS``.
        num_nodes: the first this many nodes of the trace; None: all.
        span_s: seconds after row 1000 to replay; None: to the trace end.
    """
    from mtgym.generate.replay import SummitReplay

    d = Path(data_dir)
    t_end = None if span_s is None else SUMMIT_ROW_1000_S + span_s
    return SummitReplay(
        d / SUMMIT_FRAGMENTS,
        d / SUMMIT_NODES,
        d / WORKLOADS[workload],
        name=f"summit-{workload}",
        t_start=SUMMIT_ROW_1000_S,
        t_end=t_end,
        num_nodes=num_nodes,
    )()


def _downsample(*arrays: np.ndarray, points: int = 1500) -> list[list[float]]:
    """The same evenly spaced entries of each array, at most ``points``, as float lists.

    Keeps the first and the last entry, so the series still span the whole episode, and
    keeps the raw JSON and the figures small whatever the number of decision epochs.

    Args:
        *arrays: 1-D arrays of one length (a ``TracedEpisode``'s series).
        points: the most entries kept.
    """
    n = arrays[0].size
    idx = np.unique(np.linspace(0, n - 1, min(points, n)).round().astype(np.int64))
    return [a[idx].astype(float).tolist() for a in arrays]


def run_task(task: Task) -> dict[str, Any]:
    """Run one episode and return its figures (module-level: runs in worker processes).

    Args:
        task: the episode.

    Returns:
        A JSON-ready dict: ``workload``, ``policy``, ``t_fwd`` and ``label`` (the task's);
        ``metrics`` (``mtgym.metrics`` of the episode); ``ideal_samples`` (the dedicated-node
        denominator of E); ``efficiency`` (E); ``efficiency_1node`` (E_1: samples over the
        node-seconds each job held x its curve's rate at 1 node); ``samples_compare`` and
        ``efficiency_compare`` (useful samples and E by ``compare_s`` after row 1000);
        ``decision_ms`` (mean wall ms in ``decide``); ``wall_s``; and ``series``, the
        per-epoch series downsampled to at most 1,500 points (``t_s``: seconds since row
        1000, ``samples``, ``ideal``, ``nodes_used``, ``nodes_idle``).
    """
    inst = _instance(task.data_dir, task.workload, task.num_nodes, task.span_s)
    if task.policy == "freetrain":
        policy = make("freetrain", t_fwd=task.t_fwd, max_jobs=MAX_JOBS)
    else:
        policy = make("equal-share", max_jobs=MAX_JOBS)
    ep = run_traced(inst, policy)
    jobs = inst.jobs
    one_node = np.array(
        [np.interp(1.0, jobs.curve_nodes[j], jobs.curve_tput[j]) for j in range(inst.num_jobs)]
    )
    ref_1 = float(np.dot(ep.node_s, one_node))
    samples = ep.metrics["samples"]
    t_cmp = inst.t_start + task.compare_s
    t, s, ideal, used, idle = _downsample(
        ep.series_t - inst.t_start,
        ep.series_samples,
        ep.series_ideal,
        ep.series_nodes.astype(float),
        ep.series_idle.astype(float),
    )
    return {
        "workload": task.workload,
        "policy": task.policy,
        "t_fwd": task.t_fwd,
        "label": task.label,
        "metrics": ep.metrics,
        "ideal_samples": ep.ideal_samples,
        "efficiency": samples / ep.ideal_samples if ep.ideal_samples > 0 else float("nan"),
        "efficiency_1node": samples / ref_1 if ref_1 > 0 else float("nan"),
        "samples_compare": ep.samples_at(t_cmp),
        "efficiency_compare": ep.samples_at(t_cmp) / max(ep.ideal_at(t_cmp), 1e-12),
        "decision_ms": 1e3 * ep.policy_s / max(ep.decisions, 1),
        "wall_s": ep.wall_s,
        "series": {"t_s": t, "samples": s, "ideal": ideal, "nodes_used": used, "nodes_idle": idle},
    }


def tasks(data_dir: Path, quick: bool) -> list[Task]:
    """The episodes of the experiment (module docstring): seven tasks, in report order.

    Args:
        data_dir: the data folder.
        quick: use ``QUICK`` sizes instead of ``FULL``.
    """
    z = QUICK if quick else FULL
    common = {
        "data_dir": str(data_dir),
        "num_nodes": z.num_nodes,
        "span_s": z.span_s,
        "compare_s": z.compare_s,
    }
    out = [Task("imagenet", "equal-share", T_FWD_DEFAULT, **common)]
    out += [Task("imagenet", "freetrain", t, **common) for t in T_FWD_SWEEP]
    out += [
        Task("hps", "equal-share", T_FWD_DEFAULT, **common),
        Task("hps", "freetrain", T_FWD_DEFAULT, **common),
    ]
    return out


def run(
    data_dir: Path,
    out_dir: Path,
    *,
    quick: bool = False,
    workers: int | Workers = 1,
    progress: bool = True,
) -> ExperimentResult:
    """Run the experiment, write its figures under ``out_dir``, return rows and details.

    Args:
        data_dir: the data folder (needs the Summit trace, its node list and both BFTrainer
            workloads).
        out_dir: where ``freetrain_tfwd.png`` and ``freetrain_timeline.png`` go.
        quick: ``QUICK`` sizes (1,000 nodes, 6 h) instead of the whole replay.
        workers: a worker count or an open ``Workers`` pool.
        progress: draw a progress bar.

    Returns:
        The result: rows of ``summarise``, both figures, the detail section, and ``raw``
        with the sizes and every episode's dict (``run_task``).

    Raises:
        FileNotFoundError: a data file is missing (checked before any episode).
    """
    check_data(data_dir, [SUMMIT_FRAGMENTS, SUMMIT_NODES, IMAGENET_JOBS, HPS_JOBS])
    t0 = time.perf_counter()
    todo = tasks(data_dir, quick)
    with workers_ctx(workers) as pool, make_progress(progress) as bar:
        results = pool.map(run_task, todo, progress=bar, description="FreeTrain on Summit")
    wall = time.perf_counter() - t0
    z = QUICK if quick else FULL
    rows = summarise(results, z)
    figs = plot(results, out_dir, z)
    res = ExperimentResult(NAME, rows, wall, quick, figs, [section(results, z, quick)])
    res.raw = {"sizes": z.__dict__, "episodes": results}
    return res


# ---------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------
def _pick(results: list[dict[str, Any]], workload: str, policy: str, t_fwd: float | None = None):
    """The first episode dict of ``workload`` under ``policy`` (at ``t_fwd`` when given).

    Args:
        results: the episodes' dicts (``run_task``).
        workload: ``"imagenet"`` or ``"hps"``.
        policy: ``"freetrain"`` or ``"equal-share"``.
        t_fwd: T_fwd (s) to match exactly; None: any.

    Raises:
        KeyError: no episode matches; the key is ``(workload, policy, t_fwd)``.
    """
    for r in results:
        same = r["workload"] == workload and r["policy"] == policy
        if same and (t_fwd is None or r["t_fwd"] == t_fwd):
            return r
    raise KeyError((workload, policy, t_fwd))


def _span_text(z: Sizes) -> str:
    """Where the numbers come from, in words (e.g. "..., the first 1,000 nodes, for 6 h")."""
    nodes = "all 4,734 nodes" if z.num_nodes is None else f"the first {z.num_nodes:,} nodes"
    span = "until every job completes" if z.span_s is None else f"for {z.span_s / 3600:g} h"
    return f"Summit replay from row 1000, {nodes}, {span}"


def _facts(r: dict[str, Any], cmp_h: float) -> str:
    """E, samples and utilisation of one episode: every row shows all three.

    Shown together because E alone rewards fewer rescales even when samples fall.

    Args:
        r: an episode's dict (``run_task``).
        cmp_h: the comparison window in hours, for the label.
    """
    return (
        f"E {fmt_pct(r['efficiency'])}, samples in the first {cmp_h:g} h "
        f"{r['samples_compare']:.4g}, utilisation {fmt_pct(r['metrics']['utilisation'])}"
    )


def samples_best_t_fwd(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The swept T_fwd that maximises ImageNet samples in the comparison window.

    Args:
        results: the episodes' dicts; must hold FreeTrain on ImageNet at every T_fwd of
            ``T_FWD_SWEEP`` (``KeyError`` otherwise).

    Returns:
        That episode's dict (the first of equal samples, in sweep order).
    """
    sweep = [_pick(results, "imagenet", "freetrain", t) for t in T_FWD_SWEEP]
    return max(sweep, key=lambda r: r["samples_compare"])


def summarise(results: list[dict[str, Any]], z: Sizes) -> list[Row]:
    """The report rows; each carries E, samples and utilisation.

    Efficiency rows first (against the paper's 93 %), then FreeTrain against equal share,
    then the T_fwd sweep (context rows without a paper value).

    Args:
        results: the episodes' dicts (``run_task``), every task of ``tasks``.
        z: the sizes they ran with (for the labels and whether every job could finish).
    """
    return [
        *_efficiency_rows(results, z),
        *_equal_share_rows(results, z),
        *_sweep_rows(results, z),
    ]


_DEFINITION = (
    "E = samples / integral of P_j(n_j(t)) dt: it charges only rescale and pre-emption "
    "losses, so fewer rescales raise it even when samples fall; BFTrainer's own definition "
    "is not recoverable (abstract only)"
)


def _efficiency_rows(results: list[dict[str, Any]], z: Sizes) -> list[Row]:
    """FreeTrain's efficiency against dedicated nodes at the default T_fwd.

    Three rows against the paper's 93 %: E on ImageNet, E on HPS, and E_1 on ImageNet.

    Args:
        results: the episodes' dicts.
        z: the sizes, for the notes.
    """
    ft = _pick(results, "imagenet", "freetrain", T_FWD_DEFAULT)
    hft = _pick(results, "hps", "freetrain", T_FWD_DEFAULT)
    where = _span_text(z)
    cmp_h = z.compare_s / 3600
    return [
        Row(
            NAME,
            "efficiency vs dedicated nodes, ImageNet 1,001 jobs, T_fwd = 10 s",
            PAPER_EFFICIENCY,
            ft["efficiency"],
            f"{where}; {_facts(ft, cmp_h)}; {_DEFINITION}",
        ),
        Row(
            NAME,
            "efficiency vs dedicated nodes, HPS ShuffleNet 1,000 jobs, T_fwd = 10 s",
            PAPER_EFFICIENCY,
            hft["efficiency"],
            f"{where}; {_facts(hft, cmp_h)}",
        ),
        Row(
            NAME,
            "efficiency with a 1-node dedicated reference (E_1), ImageNet, T_fwd = 10 s",
            PAPER_EFFICIENCY,
            ft["efficiency_1node"],
            "samples / (node-seconds used x the job's 1-node rate): also charges sub-linear "
            f"scaling; {_facts(ft, cmp_h)}",
        ),
    ]


def _equal_share_rows(results: list[dict[str, Any]], z: Sizes) -> list[Row]:
    """Equal share's efficiency, and FreeTrain's samples, JCT and makespan against it.

    Gains are FreeTrain / equal share - 1 for samples and 1 - FreeTrain / equal share for
    JCT and makespan (positive = FreeTrain better). The makespan row exists only in a run
    to the trace end (``z.span_s`` None), where every job completes under both.

    Args:
        results: the episodes' dicts.
        z: the sizes, for the comparison window and whether the run is cut short.
    """
    ft = _pick(results, "imagenet", "freetrain", T_FWD_DEFAULT)
    eq = _pick(results, "imagenet", "equal-share")
    hft = _pick(results, "hps", "freetrain", T_FWD_DEFAULT)
    heq = _pick(results, "hps", "equal-share")
    cmp_h = z.compare_s / 3600
    rows = [
        Row(
            NAME,
            "equal-share efficiency (same definition), ImageNet",
            None,
            eq["efficiency"],
            f"BFTrainer's non-MILP heuristic; {_facts(eq, cmp_h)}",
        ),
        Row(
            NAME,
            f"FreeTrain samples gain over equal share, first {cmp_h:g} h, ImageNet",
            None,
            ft["samples_compare"] / eq["samples_compare"] - 1.0,
            f"FreeTrain: {_facts(ft, cmp_h)}; equal share: {_facts(eq, cmp_h)}",
        ),
        Row(
            NAME,
            f"FreeTrain samples gain over equal share, first {cmp_h:g} h, HPS ShuffleNet",
            None,
            hft["samples_compare"] / heq["samples_compare"] - 1.0,
            f"FreeTrain: {_facts(hft, cmp_h)}; equal share: {_facts(heq, cmp_h)}",
        ),
        Row(
            NAME,
            "FreeTrain mean JCT reduction vs equal share, ImageNet",
            None,
            1.0 - ft["metrics"]["jct_mean"] / eq["metrics"]["jct_mean"],
            "completed jobs only"
            + (" (the quick run ends before most finish)" if z.span_s else "")
            + f"; {_facts(ft, cmp_h)}",
        ),
    ]
    if z.span_s is None:
        rows.append(
            Row(
                NAME,
                "FreeTrain makespan reduction vs equal share, ImageNet",
                None,
                1.0 - ft["metrics"]["makespan"] / eq["metrics"]["makespan"],
                f"every job completes in both runs; {_facts(ft, cmp_h)}",
            )
        )
    return rows


def _sweep_rows(results: list[dict[str, Any]], z: Sizes) -> list[Row]:
    """Efficiency at each swept T_fwd, and the T_fwd that maximises samples.

    One row per T_fwd of ``T_FWD_SWEEP`` (with its rescale and pre-emption counts), then
    the best T_fwd in seconds (``unit="s"``).

    Args:
        results: the episodes' dicts.
        z: the sizes, for the comparison window.
    """
    sweep = [_pick(results, "imagenet", "freetrain", t) for t in T_FWD_SWEEP]
    best = samples_best_t_fwd(results)
    cmp_h = z.compare_s / 3600
    rows: list[Row] = []
    for r in sweep:
        rows.append(
            Row(
                NAME,
                f"efficiency at T_fwd = {r['t_fwd']:g} s, ImageNet",
                None,
                r["efficiency"],
                f"{_facts(r, cmp_h)}; {int(r['metrics']['rescales']):,} rescales, "
                f"{int(r['metrics']['preemptions']):,} pre-emptions",
            )
        )
    rows.append(
        Row(
            NAME,
            f"T_fwd (of {', '.join(f'{t:g}' for t in T_FWD_SWEEP)} s) that maximises ImageNet "
            f"samples in the first {cmp_h:g} h, s",
            None,
            best["t_fwd"],
            f"at it: {_facts(best, cmp_h)}",
            unit="s",
        )
    )
    return rows


def section(results: list[dict[str, Any]], z: Sizes, quick: bool) -> str:
    """The experiment's detail section of report.md.

    The setup, the definitions of E and E_1, one table line per episode (E, E_1, samples,
    jobs done, JCT, makespan, utilisation, rescales, pre-emptions, ms per decision, wall
    time), the best T_fwd and links to both figures.

    Args:
        results: the episodes' dicts, in table order.
        z: the sizes they ran with.
        quick: add a line saying the numbers are indicative.
    """
    lines = [
        "## FreeTrain on the Summit replay",
        "",
        f"{_span_text(z)}; BFTrainer's cost accounting; maxJ = {MAX_JOBS}; decisions at every "
        "event.",
        "",
        "**Efficiency relative to dedicated nodes.** E = useful samples / the samples the same "
        "jobs would have processed on dedicated nodes at exactly the node counts they held, for "
        "as long as they held them (sum over jobs of the integral of P_j(n_j(t)) dt, P_j the "
        "measured throughput curve, linearly interpolated as BFTrainer's replayer does). Only "
        "scavenging losses lower it: rescale costs (R_up or R_dw x rate), pre-emptions "
        "(R_dw x rate per job per reclaim event) and the work those losses leave unpaid at the "
        "end. E_1 instead prices each node-second at the job's 1-node rate (it also charges "
        "sub-linear scaling).",
        "",
        "| workload | policy | E | E_1 | samples (first "
        f"{z.compare_s / 3600:g} h) | samples (all) | jobs done | JCT mean (h) | makespan (h) "
        "| utilisation | rescales | pre-emptions | ms/decision | wall (s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: |",
    ]
    for r in results:
        m = r["metrics"]
        lines.append(
            f"| {r['workload']} | {r['label']} | {fmt_pct(r['efficiency'], 2)} | "
            f"{fmt_pct(r['efficiency_1node'], 1)} | {r['samples_compare']:.4g} | "
            f"{m['samples']:.4g} | {int(m['jobs_completed'])} | {m['jct_mean'] / 3600:.2f} | "
            f"{m['makespan'] / 3600:.2f} | {m['utilisation']:.3f} | {int(m['rescales']):,} | "
            f"{int(m['preemptions']):,} | {r['decision_ms']:.2f} | {r['wall_s']:.1f} |"
        )
    best = samples_best_t_fwd(results)
    lines += [
        "",
        f"**The T_fwd that maximises ImageNet samples (first {z.compare_s / 3600:g} h) is "
        f"{best['t_fwd']:g} s** ({best['samples_compare']:.4g} samples, E "
        f"{fmt_pct(best['efficiency'])}, utilisation {fmt_pct(best['metrics']['utilisation'])}).",
        "",
        "![T_fwd sweep](freetrain_tfwd.png)",
        "",
        "![FreeTrain vs equal share over time](freetrain_timeline.png)",
    ]
    if quick:
        lines += ["", "_Quick run: a node subset and a short span; numbers are indicative._"]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------
def plot(results: list[dict[str, Any]], out_dir: Path, z: Sizes) -> list[Path]:
    """``freetrain_tfwd.png`` and ``freetrain_timeline.png``.

    ``freetrain_tfwd.png``: E and E_1 against T_fwd (log axis) beside equal share's E and
    the paper's 93 %, and the samples of the comparison window against T_fwd.
    ``freetrain_timeline.png``: over hours since row 1000, the cumulative useful samples of
    FreeTrain (10 s) and equal share, and their nodes in use beside the idle nodes offered.

    Args:
        results: the episodes' dicts.
        out_dir: the output folder (created if missing).
        z: the sizes, for the comparison window's label.

    Returns:
        The two PNG paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    sweep = [_pick(results, "imagenet", "freetrain", t) for t in T_FWD_SWEEP]
    eq = _pick(results, "imagenet", "equal-share")
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    x = [r["t_fwd"] for r in sweep]
    ax[0].plot(x, [r["efficiency"] for r in sweep], "o-", label="FreeTrain E")
    ax[0].plot(x, [r["efficiency_1node"] for r in sweep], "s--", label="FreeTrain E_1")
    ax[0].axhline(eq["efficiency"], color="grey", ls=":", label="equal share E")
    ax[0].axhline(PAPER_EFFICIENCY, color="red", ls="-.", label="paper: up to 93 %")
    ax[0].set_xscale("log")
    ax[0].set_xlabel("T_fwd (s)")
    ax[0].set_ylabel("efficiency vs dedicated nodes")
    ax[0].legend(fontsize=8)
    ax[0].set_title("Efficiency (ImageNet 1,001 jobs)")
    ax[1].plot(x, [r["samples_compare"] for r in sweep], "o-", label="FreeTrain")
    ax[1].axhline(eq["samples_compare"], color="grey", ls=":", label="equal share")
    ax[1].set_xscale("log")
    ax[1].set_xlabel("T_fwd (s)")
    ax[1].set_ylabel(f"samples in the first {z.compare_s / 3600:g} h")
    ax[1].legend(fontsize=8)
    ax[1].set_title("Work done")
    fig.tight_layout()
    p1 = out_dir / "freetrain_tfwd.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)

    ft = _pick(results, "imagenet", "freetrain", T_FWD_DEFAULT)
    fig, ax = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for r, style in ((ft, "-"), (eq, "--")):
        s = r["series"]
        ax[0].plot(np.array(s["t_s"]) / 3600, s["samples"], style, label=r["label"])
        ax[1].step(np.array(s["t_s"]) / 3600, s["nodes_used"], style, where="pre", label=r["label"])
    s = ft["series"]
    ax[1].step(
        np.array(s["t_s"]) / 3600,
        s["nodes_idle"],
        ":",
        color="grey",
        where="pre",
        label="idle nodes offered",
    )
    ax[0].set_ylabel("useful samples")
    ax[0].legend(fontsize=8)
    ax[1].set_ylabel("nodes")
    ax[1].set_xlabel("hours since row 1000")
    ax[1].legend(fontsize=8)
    ax[0].set_title("ImageNet 1,001 jobs on the Summit replay")
    fig.tight_layout()
    p2 = out_dir / "freetrain_timeline.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]
