"""Experiment 3: PAL and PM-First (arXiv 2408.11919; artifact ``hal-uw/blox-pal``) on the
eight Sia-Philly traces.

Setup (papers.md §3.6, ``mtgym.generate.pal_philly.PALPhilly``): 16 hosts x 4 GPUs, rigid
jobs (the trace's GPU demand), FIFO order, a placement round every 360 s, iteration time =
base x the slowest GPU's Longhorn factor for the job's class x lambda when the job spans hosts
(1.7), no restart cost. Placements: PAL, PM-First, and Blox's packed and random placements,
sticky and non-sticky (``baselines.placement``, created through the policy registry).

Metric: each trace's average JCT normalised to a packed baseline, geomean over the 8
traces, reported as a gain ``1 - geomean(JCT_policy / JCT_packed)``. The paper's reference
is "Packed-Sticky"; PAL's plot script gives that label to the code's *non-sticky* packer
(papers.md §3.6, the label swap), so the gains are reported against both of the code's
packers. Utilisation and makespan are compared the same way.

Per-GPU factors are drawn from the Longhorn files with the seed's "variability" stream (the
artifact draws once, with Python's ``random`` seeded 42, which is not reproduced); seed 0 is
the headline cluster, more seeds show how much the result depends on the draw.

Locality sweep (Fig. 12): workload-6, lambda in {1.0, 1.5, 2.0, 2.5, 3.0}.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import EventKind
from mtgym.metrics import EpisodeMetrics, compute_metrics
from mtgym.policy.base import Policy
from mtgym.reproduce.common import (
    PAL_TRACE,
    PAL_VARIABILITY,
    ExperimentResult,
    Row,
    Workers,
    check_data,
    fmt_pct,
    gain_from_ratios,
    geomean,
    make,
    make_progress,
    workers_ctx,
)
from mtgym.sim.dynamics import advance, apply_allocation, initial_state
from mtgym.sim.view import ViewBuilder

NAME = "pal"
ROUND_S = 360.0
LOCALITY = 1.7
LOCALITY_SWEEP = (1.0, 1.5, 2.0, 2.5, 3.0)
LOCALITY_TRACE = 6
#: Placement policies: key -> (registered name, kwargs).
POLICIES: dict[str, tuple[str, dict[str, Any]]] = {
    "pal": ("pal", {}),
    "pm-first": ("pm-first", {}),
    "packed-sticky": ("packed", {"sticky": True}),
    "packed-nonsticky": ("packed", {"sticky": False}),
    "random-sticky": ("random", {"sticky": True, "seed": 0}),
    "random-nonsticky": ("random", {"sticky": False, "seed": 0}),
}
REFS = ("packed-sticky", "packed-nonsticky")
LOCALITY_POLICIES = ("pal", "pm-first", "packed-sticky", "packed-nonsticky")

#: The artifact README's numbers (gains over "Packed-Sticky", geomean over the 8 traces).
PAPER = {
    "pal": {"geomean": 0.43, "min": 0.21, "max": 0.59, "lam1": 0.30, "lam3": 0.20},
    "pm-first": {"geomean": 0.40, "min": 0.05, "max": 0.59, "lam1": 0.30, "lam3": 0.09},
}
PAPER_ABSTRACT = {"jct": 0.42, "utilisation": 0.28, "makespan": 0.47}


@dataclass(frozen=True)
class Sizes:
    """Experiment size."""

    traces: tuple[int, ...]
    seed: int  # the headline cluster
    extra_seeds: tuple[int, ...]  # robustness: the whole set on other variability draws
    lambdas: tuple[float, ...]
    locality_seeds: tuple[int, ...]
    max_jobs: int | None = None


FULL = Sizes(
    traces=tuple(range(1, 9)),
    seed=0,
    extra_seeds=(1, 2, 3, 4),
    lambdas=LOCALITY_SWEEP,
    locality_seeds=(0, 1, 2, 3, 4),
)
#: Quick: the two shortest traces, one cluster, the sweep's ends.
QUICK = Sizes(traces=(1, 4), seed=0, extra_seeds=(), lambdas=(1.0, 3.0), locality_seeds=(0,))


@dataclass(frozen=True)
class Task:
    """Every policy in ``policies`` on one (trace, lambda, seed) instance."""

    trace: int
    locality: float
    seed: int
    policies: tuple[str, ...]
    data_dir: str
    max_jobs: int | None = None


@functools.lru_cache(maxsize=8)
def _instance(data_dir: str, trace: int, locality: float, seed: int, max_jobs: int | None):
    from mtgym.generate.pal_philly import PALPhilly

    d = Path(data_dir)
    return PALPhilly(
        d / PAL_TRACE.format(k=trace),
        d / PAL_VARIABILITY,
        num_hosts=16,
        gpus_per_host=4,
        locality=locality,
        max_jobs=max_jobs,
    )(seed)


#: Policies whose round is a deterministic function of (active jobs, node map, idle nodes):
#: ``run_rounds`` may skip the rounds in which none of these changes (random ones draw anew).
DETERMINISTIC = ("pal", "pm-first", "packed-sticky", "packed-nonsticky")
#: Events after which a round's inputs may differ.
_CHANGES = (
    EventKind.JOB_COMPLETED
    | EventKind.JOB_ARRIVED
    | EventKind.TRIAL_STOPPED
    | EventKind.NODE_IDLE
    | EventKind.NODE_RECLAIMED
)


@dataclass
class RoundsResult:
    """Metrics and timing of ``run_rounds``."""

    metrics: EpisodeMetrics
    wall_s: float
    decisions: int


def run_rounds(
    instance: Instance, policy: Policy, round_s: float, *, skip_unchanged: bool
) -> RoundsResult:
    """``play(instance, policy, decision_interval_s=round_s)``, faster.

    With ``skip_unchanged`` (only for a FIFO policy whose decision depends on nothing but the
    active jobs, the node map and the idle nodes): when a round leaves the node map as it
    was, every following round gives the same map until an arrival, a completion or a
    supply change, so the episode jumps to that event and then to the next round boundary
    (rounds stay on the grid ``t_start + k x round_s``). The trajectory, hence every metric
    except the decision count, is the same as ``play``'s.
    """
    t_wall = time.perf_counter()
    state = initial_state(instance)
    views = ViewBuilder(instance, policy.info_mode)
    policy.reset(views(state))
    limit, t0 = instance.t_end, instance.t_start
    decisions = 0
    while state.time < limit:
        before = state.node_job.copy()
        alloc = policy.decide(views(state))
        decisions += 1
        t_prev = state.time
        apply_allocation(state, instance, alloc)
        step = min(limit, state.time + round_s)
        if skip_unchanged and np.array_equal(state.node_job, before):
            state, info = advance(state, instance, None, until=limit, stop_on=_CHANGES, copy=False)
            if not info.all_done and state.time < limit:
                k = np.ceil((state.time - t0) / round_s - 1e-12)
                step = min(limit, max(t0 + k * round_s, state.time))
                if step > state.time:
                    state, info = advance(
                        state, instance, None, until=step, stop_on=EventKind.HORIZON, copy=False
                    )
        else:
            state, info = advance(
                state, instance, None, until=step, stop_on=EventKind.HORIZON, copy=False
            )
        if info.all_done or (state.time == t_prev and info.kinds == EventKind.NONE):
            break
    return RoundsResult(compute_metrics(state, instance), time.perf_counter() - t_wall, decisions)


def run_task(task: Task) -> list[dict[str, Any]]:
    """Run the task's policies (module-level: runs in worker processes)."""
    inst = _instance(task.data_dir, task.trace, task.locality, task.seed, task.max_jobs)
    out = []
    for key in task.policies:
        name, kw = POLICIES[key]
        res = run_rounds(inst, make(name, **kw), ROUND_S, skip_unchanged=key in DETERMINISTIC)
        m = res.metrics
        out.append(
            {
                "trace": task.trace,
                "locality": task.locality,
                "seed": task.seed,
                "policy": key,
                "jct_mean": m.jct_mean,
                "jct_geomean": m.jct_geomean,
                "jct_p99": m.jct_p99,
                "makespan": m.makespan,
                "utilisation": m.utilisation,
                "jobs_completed": m.jobs_completed,
                "jobs_total": m.jobs_total,
                "wall_s": res.wall_s,
            }
        )
    return out


def run(
    data_dir: Path,
    out_dir: Path,
    *,
    quick: bool = False,
    workers: int | Workers = 1,
    progress: bool = True,
    sizes: Sizes | None = None,
) -> ExperimentResult:
    """Run the experiment, write its figures, return rows and details."""
    z = sizes or (QUICK if quick else FULL)
    check_data(
        data_dir,
        [PAL_TRACE.format(k=k) for k in z.traces]
        + [f"{PAL_VARIABILITY}/{f}" for f in ("resnet-longhorn-agg.csv", "bert-longhorn-agg.csv")]
        + [f"{PAL_VARIABILITY}/pagerank-longhorn-agg.csv"],
    )
    d = str(data_dir)
    pols = tuple(POLICIES)
    t0 = time.perf_counter()
    with workers_ctx(workers) as pool, make_progress(progress) as bar:
        main = pool.map(
            run_task,
            [Task(k, LOCALITY, z.seed, pols, d, z.max_jobs) for k in z.traces],
            progress=bar,
            description=f"PAL set: {len(z.traces)} traces x {len(pols)} placements",
        )
        set_wall = time.perf_counter() - t0
        extra = pool.map(
            run_task,
            [Task(k, LOCALITY, s, pols, d, z.max_jobs) for s in z.extra_seeds for k in z.traces],
            progress=bar,
            description="PAL set on other variability draws",
        )
        sweep = pool.map(
            run_task,
            [
                Task(LOCALITY_TRACE, lam, s, LOCALITY_POLICIES, d, z.max_jobs)
                for s in z.locality_seeds
                for lam in z.lambdas
            ],
            progress=bar,
            description=f"locality sweep (workload-{LOCALITY_TRACE})",
        )
    wall = time.perf_counter() - t0
    flat = [r for rs in main + extra for r in rs]
    loc = [r for rs in sweep for r in rs]
    summary = summarise_set(flat, z)
    summary["class_a"] = {s: class_a_stats(d, z.traces[0], s, z.max_jobs) for s in summary["seeds"]}
    lsum = summarise_locality(loc, z)
    lnote = _locality_note(lsum, z, demand_mix(data_dir, LOCALITY_TRACE))
    rows = rows_for(summary, lsum, z, set_wall, lnote)
    figs = plot(summary, lsum, flat, out_dir, z)
    res = ExperimentResult(
        NAME, rows, wall, quick, figs, [section(summary, lsum, flat, z, set_wall, lnote)]
    )
    res.raw = {
        "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in z.__dict__.items()},
        "set_wall_s": set_wall,
        "episodes": flat,
        "locality_episodes": loc,
        "summary": summary,
        "locality": {str(k): v for k, v in lsum.items()},
    }
    return res


# ---------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------
def _table(rows: list[dict[str, Any]]) -> dict[tuple[int, float, int, str], dict[str, Any]]:
    return {(r["trace"], r["locality"], r["seed"], r["policy"]): r for r in rows}


def set_gains(
    rows: list[dict[str, Any]], traces: tuple[int, ...], seed: int, locality: float = LOCALITY
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per reference packer and policy: geomean gains in mean JCT, makespan, utilisation, and
    the per-trace JCT gains.
    """
    t = _table(rows)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for ref in REFS:
        out[ref] = {}
        for pol in POLICIES:
            jr = [
                t[(k, locality, seed, pol)]["jct_mean"] / t[(k, locality, seed, ref)]["jct_mean"]
                for k in traces
            ]
            mr = [
                t[(k, locality, seed, pol)]["makespan"] / t[(k, locality, seed, ref)]["makespan"]
                for k in traces
            ]
            ur = [
                t[(k, locality, seed, pol)]["utilisation"]
                / t[(k, locality, seed, ref)]["utilisation"]
                for k in traces
            ]
            out[ref][pol] = {
                "jct_gain": gain_from_ratios(jr),
                "jct_gain_per_trace": [1.0 - x for x in jr],
                "makespan_gain": gain_from_ratios(mr),
                "utilisation_gain": geomean(ur) - 1.0,
            }
    return out


def summarise_set(rows: list[dict[str, Any]], z: Sizes) -> dict[str, Any]:
    """Headline (seed ``z.seed``) and the spread over every seed run."""
    seeds = sorted({r["seed"] for r in rows})
    per_seed = {s: set_gains(rows, z.traces, s) for s in seeds}
    spread = {
        ref: {
            pol: [per_seed[s][ref][pol]["jct_gain"] for s in seeds] for pol in ("pal", "pm-first")
        }
        for ref in REFS
    }
    head = per_seed[z.seed]

    def closest(gains: dict[str, dict[str, float]]) -> str:
        # which reading of the paper's "Packed-Sticky" fits the artifact's numbers best
        dist = {
            ref: abs(gains[ref]["pal"] - PAPER["pal"]["geomean"])
            + abs(gains[ref]["pm-first"] - PAPER["pm-first"]["geomean"])
            for ref in REFS
        }
        return min(dist, key=dist.__getitem__)

    head_gains = {ref: {p: head[ref][p]["jct_gain"] for p in ("pal", "pm-first")} for ref in REFS}
    mean_gains = {
        ref: {p: float(np.mean(spread[ref][p])) for p in ("pal", "pm-first")} for ref in REFS
    }
    return {
        "seeds": seeds,
        "headline": head,
        "seed_spread": spread,
        "matching_ref": closest(head_gains),
        "matching_ref_over_draws": closest(mean_gains),
    }


def class_a_stats(data_dir: str, trace: int, seed: int, max_jobs: int | None) -> dict[str, float]:
    """The draw's class-A (ResNet-50) factors: range and GPUs above 1.1 (artifact's 64-GPU
    cluster per papers.md §3.5: 0.93-2.83, 6 above 1.1, one outlier).
    """
    a = _instance(data_dir, trace, LOCALITY, seed, max_jobs).cluster.profiled_slowdown[:, 0]
    return {"min": float(a.min()), "max": float(a.max()), "above_1_1": int((a > 1.1).sum())}


def _draw_text(st: dict[str, float]) -> str:
    return f"class-A factors {st['min']:.2f}-{st['max']:.2f}, {st['above_1_1']} GPUs above 1.1"


def summarise_locality(
    rows: list[dict[str, Any]], z: Sizes
) -> dict[tuple[str, str, float], dict[str, float]]:
    """Per (reference, policy, lambda): JCT gain on workload-6, mean/min/max over seeds."""
    t = _table(rows)
    seeds = sorted({r["seed"] for r in rows})
    out = {}
    for ref in REFS:
        for pol in ("pal", "pm-first"):
            for lam in z.lambdas:
                g = [
                    1.0
                    - t[(LOCALITY_TRACE, lam, s, pol)]["jct_mean"]
                    / t[(LOCALITY_TRACE, lam, s, ref)]["jct_mean"]
                    for s in seeds
                ]
                out[(ref, pol, lam)] = {
                    "mean": float(np.mean(g)),
                    "min": float(np.min(g)),
                    "max": float(np.max(g)),
                    "per_seed": g,
                }
    return out


def _pname(pol: str) -> str:
    return {"pal": "PAL", "pm-first": "PM-First"}.get(pol, pol)


def _ref_text(ref: str) -> str:
    return "the code's sticky packer" if ref == "packed-sticky" else "the code's non-sticky packer"


def rows_for(
    summary: dict[str, Any],
    lsum: dict[tuple[str, str, float], dict[str, float]],
    z: Sizes,
    set_wall: float,
    lnote: str = "",
) -> list[Row]:
    """The report rows."""
    head = summary["headline"]
    match = summary["matching_ref"]
    n = len(z.traces)
    rows: list[Row] = []
    over = summary["matching_ref_over_draws"]
    draws = len(summary["seeds"])
    for ref in REFS:
        label = (
            "the code's Default-Packed-S, plotted as 'Packed-Non-Sticky'"
            if ref == "packed-sticky"
            else "the code's Default-Packed-NS, plotted as 'Packed-Sticky' (the label swap)"
        )
        for pol in ("pal", "pm-first"):
            g = head[ref][pol]
            if ref == match:
                fits = "the reading that fits the artifact best" + (
                    f" (also on the mean over {draws} draws)" if over == ref and draws > 1 else ""
                )
                why = (
                    "gap to the artifact: the per-GPU variability draw. mtgym's seed "
                    f"{z.seed} ({_draw_text(summary['class_a'][z.seed])}) resembles the "
                    "artifact's cluster (0.93-2.83, 6 above 1.1), but blox-pal's "
                    "random.seed(42) draw itself is not reproducible here, and the draw moves "
                    "this gain by tens of points (see the 'mean over draws' rows); blox-pal "
                    "also ends jobs at round boundaries, mtgym at their exact time"
                )
            else:
                fits = "far from the artifact"
                why = (
                    "re-packing every round (free, as in PAL's simulator) already removes the "
                    "host fragmentation and queueing that PAL also removes, leaving only the "
                    "variability-aware part of PAL's gain; if this were the paper's baseline, "
                    "the published gain would not be reproduced"
                    if ref == "packed-nonsticky"
                    else "the sticky packer fragments hosts and pre-empts to fit big jobs"
                )
            rows.append(
                Row(
                    NAME,
                    f"{_pname(pol)} avg-JCT gain vs {_ref_text(ref)}, geomean of {n} traces",
                    PAPER[pol]["geomean"],
                    g["jct_gain"],
                    f"{label}; {fits}. {why}",
                )
            )
            per = g["jct_gain_per_trace"]
            rows.append(
                Row(
                    NAME,
                    f"{_pname(pol)} per-trace JCT gain min vs {_ref_text(ref)}",
                    PAPER[pol]["min"],
                    float(np.min(per)),
                    f"trace {z.traces[int(np.argmin(per))]}; per-trace gains depend on how "
                    "many class-A (ResNet-50) jobs meet the draw's slow GPUs",
                )
            )
            rows.append(
                Row(
                    NAME,
                    f"{_pname(pol)} per-trace JCT gain max vs {_ref_text(ref)}",
                    PAPER[pol]["max"],
                    float(np.max(per)),
                    f"trace {z.traces[int(np.argmax(per))]}",
                )
            )
    for ref in REFS:
        g = head[ref]["pal"]
        rows += [
            Row(
                NAME,
                f"PAL utilisation gain vs {_ref_text(ref)} (geomean ratio - 1)",
                PAPER_ABSTRACT["utilisation"],
                g["utilisation_gain"],
                "mtgym: allocated / offered GPU-seconds up to the last completion; the paper's "
                "definition and baseline for its 28 % are not recoverable (abstract only); a "
                "faster placement needs fewer GPU-seconds, which can lower this ratio",
            ),
            Row(
                NAME,
                f"PAL makespan reduction vs {_ref_text(ref)} (1 - geomean ratio)",
                PAPER_ABSTRACT["makespan"],
                g["makespan_gain"],
                "the paper's 47 % is over 'state-of-the-art schedulers' on its own trace set",
            ),
        ]
    rows.append(
        Row(
            NAME,
            "PAL geomean JCT gain (abstract: 42 %) against the best-matching packer",
            PAPER_ABSTRACT["jct"],
            head[match]["pal"]["jct_gain"],
            f"{_ref_text(match)}",
        )
    )
    for ref in REFS:
        for pol in ("packed-sticky", "packed-nonsticky", "random-sticky", "random-nonsticky"):
            if pol == ref:
                continue
            rows.append(
                Row(
                    NAME,
                    f"{pol} avg-JCT gain vs {_ref_text(ref)}, geomean",
                    None,
                    head[ref][pol]["jct_gain"],
                    "Blox baseline; negative = worse than the reference",
                )
            )
    if len(summary["seeds"]) > 1:
        for ref in REFS:
            for pol in ("pal", "pm-first"):
                v = summary["seed_spread"][ref][pol]
                rows.append(
                    Row(
                        NAME,
                        f"{_pname(pol)} JCT gain vs {_ref_text(ref)}, "
                        f"mean over {len(v)} variability draws",
                        PAPER[pol]["geomean"],
                        float(np.mean(v)),
                        f"range {fmt_pct(min(v))} to {fmt_pct(max(v))} over draws "
                        + "; ".join(
                            f"{sd}: {fmt_pct(x)} (max class-A factor "
                            f"{summary['class_a'][sd]['max']:.2f})"
                            for sd, x in zip(summary["seeds"], v, strict=True)
                        )
                        + ". Large gains need very slow class-A GPUs in the draw",
                    )
                )
    lo, hi = min(z.lambdas), max(z.lambdas)
    nl = len(z.locality_seeds)
    for ref in REFS:
        for pol in ("pal", "pm-first"):
            for lam, key in ((lo, "lam1"), (hi, "lam3")):
                g = lsum[(ref, pol, lam)]
                note = f"mean of {nl} draw(s) ({fmt_pct(g['min'])} to {fmt_pct(g['max'])})"
                if lam == lo:
                    note += (
                        "; at lambda = 1 locality is free, so PAL and PM-First coincide (as in "
                        "the artifact); the level depends on the draw and the packer"
                    )
                else:
                    note += ". " + lnote
                rows.append(
                    Row(
                        NAME,
                        f"locality sweep: {_pname(pol)} JCT gain vs {_ref_text(ref)} at "
                        f"lambda = {lam:g} (workload-{LOCALITY_TRACE})",
                        PAPER[pol][key],
                        g["mean"],
                        note,
                    )
                )
    rows.append(
        Row(
            NAME,
            f"wall time of the PAL set ({n} traces x {len(POLICIES)} placements), s",
            None,
            set_wall,
            "goal: under 60 s (blox-pal's whole artifact takes about 180 min)",
            unit="s",
        )
    )
    return rows


def demand_mix(data_dir: str | Path, trace: int) -> tuple[int, int, int]:
    """Jobs of a trace by GPU demand: (1 GPU, 2-4 GPUs: can fit in one host, > 4 GPUs)."""
    from mtgym.readers import read_philly_trace

    g = np.asarray(read_philly_trace(Path(data_dir) / PAL_TRACE.format(k=trace)).num_gpus)
    return int((g == 1).sum()), int(((g > 1) & (g <= 4)).sum()), int((g > 4).sum())


def _locality_note(lsum: dict[tuple[str, str, float], dict[str, float]], z: Sizes, mix) -> str:
    lo, hi = min(z.lambdas), max(z.lambdas)
    d = {
        pol: lsum[("packed-sticky", pol, hi)]["mean"] - lsum[("packed-sticky", pol, lo)]["mean"]
        for pol in ("pal", "pm-first")
    }
    n1, nin, nout = mix
    return (
        f"From lambda {lo:g} to {hi:g} mtgym's gain vs the sticky packer changes by "
        f"{100 * d['pal']:+.1f} points for PAL and {100 * d['pm-first']:+.1f} for PM-First "
        "(artifact: -10 and -21). mtgym (as papers.md §3.5 reads blox-pal) charges lambda only "
        f"to a job that spans hosts; in workload-{LOCALITY_TRACE} only the {nin} jobs of 2-4 "
        f"GPUs can stay inside a host, while the {nout} jobs of more than 4 GPUs span hosts "
        f"under every placement and the {n1} one-GPU jobs never do, so lambda barely "
        "separates the placements"
    )


def section(
    summary: dict[str, Any],
    lsum: dict[tuple[str, str, float], dict[str, float]],
    rows: list[dict[str, Any]],
    z: Sizes,
    set_wall: float,
    lnote: str = "",
) -> str:
    """The experiment's detail section of report.md."""
    head = summary["headline"]
    t = _table(rows)
    lines = [
        "## PAL and PM-First on the Sia-Philly traces",
        "",
        f"16 hosts x 4 GPUs, FIFO, {ROUND_S:g} s rounds, lambda = {LOCALITY}, Longhorn "
        f"variability per class (per-run pools, PALPhilly's default), traces {list(z.traces)}, "
        f"headline seed {z.seed}. The set ({len(z.traces)} traces x {len(POLICIES)} placements) "
        f"ran in {set_wall:.1f} s.",
        "",
        "**Which packer is the paper's 'Packed-Sticky'?** PAL's plot script labels the code's "
        "non-sticky packer 'Packed-Sticky' (papers.md §3.6). Against the code's sticky packer "
        f"mtgym finds PAL {fmt_pct(head['packed-sticky']['pal']['jct_gain'])} / PM-First "
        f"{fmt_pct(head['packed-sticky']['pm-first']['jct_gain'])}; against the non-sticky one "
        f"{fmt_pct(head['packed-nonsticky']['pal']['jct_gain'])} / "
        f"{fmt_pct(head['packed-nonsticky']['pm-first']['jct_gain'])} (artifact: 43 % / 40 %). "
        f"The numbers match **{_ref_text(summary['matching_ref'])}** (seed {z.seed}; over "
        f"all draws: {_ref_text(summary['matching_ref_over_draws'])})"
        + (
            ", i.e. the label as the code names it, not the swapped one: either the swap "
            "suspected in papers.md did not affect the published figure, or blox-pal's "
            "non-sticky packer behaves worse than mtgym's (e.g. if re-placement is not free "
            "there)."
            if summary["matching_ref"] == "packed-sticky"
            else ", i.e. the swapped label."
        ),
        "",
        "Average JCT per trace (hours) and its ratio to each packer:",
        "",
        "| trace | "
        + " | ".join(POLICIES)
        + " | PAL / sticky | PAL / non-sticky | PM-First / sticky | PM-First / non-sticky |",
        "| ---: | " + " | ".join("---:" for _ in POLICIES) + " | ---: | ---: | ---: | ---: |",
    ]
    for k in z.traces:
        jct = {p: t[(k, LOCALITY, z.seed, p)]["jct_mean"] for p in POLICIES}
        lines.append(
            f"| {k} | "
            + " | ".join(f"{jct[p] / 3600:.1f}" for p in POLICIES)
            + "".join(f" | {jct[p] / jct[ref]:.3f}" for p in ("pal", "pm-first") for ref in REFS)
            + " |"
        )
    lines += [
        "",
        "Geomean over the traces (gains: 1 - geomean ratio for JCT and makespan, geomean "
        "ratio - 1 for utilisation):",
        "",
        "| policy | JCT vs sticky | JCT vs non-sticky | makespan vs sticky | makespan vs "
        "non-sticky | utilisation vs sticky | utilisation vs non-sticky |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for p in POLICIES:
        s, ns = head["packed-sticky"][p], head["packed-nonsticky"][p]
        lines.append(
            f"| {p} | {fmt_pct(s['jct_gain'])} | {fmt_pct(ns['jct_gain'])} | "
            f"{fmt_pct(s['makespan_gain'])} | {fmt_pct(ns['makespan_gain'])} | "
            f"{fmt_pct(s['utilisation_gain'])} | {fmt_pct(ns['utilisation_gain'])} |"
        )
    if len(summary["seeds"]) > 1:
        lines += [
            "",
            f"The same set on variability draws {summary['seeds']} (JCT gains):",
            "",
            "| reference | PAL per draw | PM-First per draw |",
            "| --- | --- | --- |",
        ]
        for ref in REFS:
            sp = summary["seed_spread"][ref]
            lines.append(
                f"| {ref} | {', '.join(fmt_pct(x) for x in sp['pal'])} | "
                f"{', '.join(fmt_pct(x) for x in sp['pm-first'])} |"
            )
    lines += [
        "",
        f"Locality sweep (workload-{LOCALITY_TRACE}, mean over draws {list(z.locality_seeds)}); "
        "artifact: PAL 30 % -> 20 %, PM-First 30 % -> 9 % against 'Packed-Sticky':",
        "",
        "| lambda | PAL vs sticky | PM-First vs sticky | PAL vs non-sticky "
        "| PM-First vs non-sticky |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for lam in z.lambdas:
        lines.append(
            f"| {lam:g} | {fmt_pct(lsum[('packed-sticky', 'pal', lam)]['mean'])} | "
            f"{fmt_pct(lsum[('packed-sticky', 'pm-first', lam)]['mean'])} | "
            f"{fmt_pct(lsum[('packed-nonsticky', 'pal', lam)]['mean'])} | "
            f"{fmt_pct(lsum[('packed-nonsticky', 'pm-first', lam)]['mean'])} |"
        )
    lines += [
        "",
        lnote + ".",
        "",
        "![JCT per trace](pal_jct.png)",
        "",
        "![Locality sweep](pal_locality.png)",
    ]
    return "\n".join(lines)


def plot(
    summary: dict[str, Any],
    lsum: dict[tuple[str, str, float], dict[str, float]],
    rows: list[dict[str, Any]],
    out_dir: Path,
    z: Sizes,
) -> list[Path]:
    """``pal_jct.png`` (per-trace JCT normalised to each packer) and ``pal_locality.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    t = _table(rows)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    pols = list(POLICIES)
    width = 0.8 / len(pols)
    x = np.arange(len(z.traces) + 1)
    for ax, ref in zip(axes, REFS, strict=True):
        for i, p in enumerate(pols):
            vals = [
                t[(k, LOCALITY, z.seed, p)]["jct_mean"] / t[(k, LOCALITY, z.seed, ref)]["jct_mean"]
                for k in z.traces
            ]
            vals.append(1.0 - summary["headline"][ref][p]["jct_gain"])
            ax.bar(x + (i - len(pols) / 2 + 0.5) * width, vals, width, label=p)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks(x, [str(k) for k in z.traces] + ["geomean"])
        ax.set_xlabel("trace")
        ax.set_title(f"avg JCT / {ref}")
    axes[0].set_ylabel("normalised average JCT")
    axes[0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    p1 = out_dir / "pal_jct.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    lams = list(z.lambdas)
    for ref, ls in (("packed-sticky", "-"), ("packed-nonsticky", "--")):
        for pol, color in (("pal", "C0"), ("pm-first", "C1")):
            ax.plot(
                lams,
                [lsum[(ref, pol, lam)]["mean"] for lam in lams],
                ls,
                marker="o",
                color=color,
                label=f"mtgym {pol} vs {ref}",
            )
    ax.plot([1.0, 3.0], [0.30, 0.20], ":", marker="s", color="C0", label="artifact PAL")
    ax.plot([1.0, 3.0], [0.30, 0.09], ":", marker="s", color="C1", label="artifact PM-First")
    ax.set_xlabel("locality penalty lambda")
    ax.set_ylabel("avg-JCT gain over packed")
    ax.set_title(f"Locality sweep, workload-{LOCALITY_TRACE}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    p2 = out_dir / "pal_locality.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]
