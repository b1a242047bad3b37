"""Episode metrics, computed from a final state (pure; the same for every policy).

**The headline, ``normalized_throughput``** (``docs/metrics.md``): each job's samples divided
by that job's own reference rate (``reference_rate``: its best single-node rate on the
cluster), summed over jobs, per second of the run. The unit is *best-node equivalents of
training*: a job that scales perfectly on best nodes scores its node count, whatever its
model. Raw ``throughput`` (samples/s) adds samples of different models (one default-scenario
node trains 79,271 samples/s of ``recommendation`` and 30 of ``cyclegan``), so it rewards
feeding the models whose samples are cheap; it is sound only when every job is one model
(BFTrainer's ImageNet replay), where the two rank policies alike.

**Fairness, ``fairness_jain``**: Jain's index over the jobs' normalised rates (normalised
samples / seconds in the system, from submission to completion or the run's end), over the
jobs submitted before the end: 1 when every job trained at the same best-node-equivalent
rate, 1/n when one job got everything.

The **upper bound** is every offered node-second at the best per-node rate of any job, with
perfect linear scaling and no overhead, capped at the work of the jobs submitted by the end.
Once every job has completed, every policy that completed them reaches ``samples`` = the
cap (fraction 1.0): compare ``makespan`` and the JCTs then, not the fraction.

**Makespan** is defined for every run: the last finish minus the first submission when every
job finished (completed or stopped by its campaign); otherwise the end of the run (the
horizon) minus the first submission, with ``makespan_censored = 1``. A censored makespan is a
lower bound, equal for every policy that leaves work unfinished: compare it with
``jobs_completed`` beside it.

**Common-job metrics.** ``jct_mean`` averages the jobs a policy completed, which flatters a
policy that completes fewer (the long jobs it never finishes do not count).
``common_metrics`` restricts JCT and makespan to the jobs that *every* compared policy
completed on that instance (``jct_common_mean``, ``makespan_common``, ``jobs_common``), so
all policies are judged on the same jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import JobStatus
from mtgym.sim.dynamics import throughput_model
from mtgym.sim.state import ClusterState

#: the headline metric (model-neutral: best-node equivalents of training, docs/metrics.md)
HEADLINE = "normalized_throughput"


@dataclass(frozen=True)
class EpisodeMetrics:
    """One episode's results. Times in seconds, samples in the jobs' own units.

    Attributes:
        duration_s: The run's length: the final state's time - ``t_start``.
        samples: Useful samples processed, summed over jobs (models mixed).
        throughput: ``samples / duration_s``, samples/s (0 for an empty run).
        offered_node_s: Idle node-seconds the host lent during the run.
        allocated_node_s: Node-seconds held by jobs.
        productive_node_s: Node-seconds held by jobs that were progressing (not pausing
            for a rescale or start-up, not redoing lost work).
        utilisation: allocated / offered node-seconds (0 when nothing was offered).
        productive_utilisation: productive / offered node-seconds.
        jobs_total: Jobs in the instance, submitted or not.
        jobs_completed: Jobs that did all their work.
        jobs_stopped: Trials stopped early by their campaign.
        jct_mean: Mean of completion - submission over completed jobs (NaN if none).
        jct_p50: Its median.
        jct_p99: Its 99th percentile.
        jct_geomean: Its geometric mean (each JCT floored at 1e-9 s).
        makespan: Last finish - first submission; the run's end - first submission if
            censored (module docstring).
        makespan_censored: 1 when not every job finished (the makespan counts to the
            run's end), else 0.
        rescales: Changes of running jobs' node sets, starts excluded.
        starts: Starts of jobs from 0 nodes.
        preemptions: Events at which the host reclaimed some of a job's nodes, summed.
        lost_rescale_s: Nominal seconds charged to rescales and starts.
        lost_preempt_s: Nominal seconds charged to pre-emptions.
        preempt_lost_samples: Progress since the last checkpoint lost to reclaims.
        unpaid_debt_samples: Samples still owed (lost work not yet redone) at the end.
            BFTrainer's replayer deducts lost samples at once: compare its figures with
            ``samples`` - this.
        stalled_job_s: Job-seconds holding nodes without useful progress.
        upper_bound_samples: Every offered node-second at the best reference rate of
            any job, capped at the work of the jobs submitted by the end (module docstring).
        upper_bound_fraction: ``samples / upper_bound_samples`` (NaN when the bound is 0).
        normalized_samples: sum_j samples_j / reference_rate_j, best-node-seconds.
        normalized_throughput: The headline: ``normalized_samples / duration_s``,
            best-node equivalents.
        normalized_efficiency: ``normalized_samples`` over its upper bound: the offered
            node-seconds, capped at the submitted jobs' normalised work (NaN when 0).
        fairness_jain: Jain's index over per-job normalised rates (module docstring).
        decisions: Allocations applied by the simulator.
        events: Individual events processed (a node reclaim, an arrival, ...).
    """

    duration_s: float
    samples: float
    throughput: float
    offered_node_s: float
    allocated_node_s: float
    productive_node_s: float
    utilisation: float
    productive_utilisation: float
    jobs_total: int
    jobs_completed: int
    jobs_stopped: int
    jct_mean: float
    jct_p50: float
    jct_p99: float
    jct_geomean: float
    makespan: float
    makespan_censored: int
    rescales: int
    starts: int
    preemptions: int
    lost_rescale_s: float
    lost_preempt_s: float
    preempt_lost_samples: float
    unpaid_debt_samples: float
    stalled_job_s: float
    upper_bound_samples: float
    upper_bound_fraction: float
    normalized_samples: float
    normalized_throughput: float
    normalized_efficiency: float
    fairness_jain: float
    decisions: int
    events: int

    def as_dict(self) -> dict[str, float | int]:
        """Plain dict (JSON-friendly)."""
        return asdict(self)


def compute_metrics(state: ClusterState, instance: Instance) -> EpisodeMetrics:
    """Metrics of the episode that ended in ``state``.

    Pure: the same final state gives the same metrics, whichever policy produced it.

    Args:
        state: The final state (``play``'s result).
        instance: The episode's instance.

    Raises:
        ValueError: a job has no positive, finite reference rate (``reference_rate``).
    """
    jobs = instance.jobs
    duration = state.time - instance.t_start
    samples = float(state.progress.sum())
    done = state.status == JobStatus.COMPLETED
    jct = state.finish_time[done] - jobs.submit_s[done]
    finished = state.status >= JobStatus.COMPLETED

    def q(p: float) -> float:
        """The ``p``-th percentile of the completed jobs' JCTs (NaN if none completed)."""
        return float(np.percentile(jct, p)) if jct.size else float("nan")

    best = reference_rate(instance)
    ub_rate = float(best.max()) if best.size else 0.0
    norm = state.progress / best
    norm_samples = float(norm.sum())
    # every offered node-second at a reference rate, capped at the submitted jobs' work
    norm_ub = min(
        state.offered_node_s, float((jobs.work / best)[jobs.submit_s <= state.time].sum())
    )
    submitted = jobs.submit_s <= state.time
    ub = min(state.offered_node_s * ub_rate, float(jobs.work[submitted].sum()))
    first = float(jobs.submit_s.min()) if jobs.submit_s.size else float(instance.t_start)
    censored = not finished.all()
    if censored:
        makespan = float(state.time) - first
    else:  # every job finished (no jobs: 0)
        makespan = float(np.nanmax(state.finish_time)) - first if finished.size else 0.0
    off = state.offered_node_s
    return EpisodeMetrics(
        duration_s=float(duration),
        samples=samples,
        throughput=samples / duration if duration > 0 else 0.0,
        offered_node_s=off,
        allocated_node_s=state.allocated_node_s,
        productive_node_s=state.productive_node_s,
        utilisation=state.allocated_node_s / off if off > 0 else 0.0,
        productive_utilisation=state.productive_node_s / off if off > 0 else 0.0,
        jobs_total=instance.num_jobs,
        jobs_completed=int(done.sum()),
        jobs_stopped=int((state.status == JobStatus.STOPPED).sum()),
        jct_mean=float(jct.mean()) if jct.size else float("nan"),
        jct_p50=q(50),
        jct_p99=q(99),
        jct_geomean=float(np.exp(np.log(np.maximum(jct, 1e-9)).mean()))
        if jct.size
        else float("nan"),
        makespan=makespan,
        makespan_censored=int(censored),
        rescales=int(state.rescales.sum()),
        starts=int(state.starts.sum()),
        preemptions=int(state.preemptions.sum()),
        lost_rescale_s=float(state.rescale_cost_s.sum()),
        lost_preempt_s=float(state.preempt_cost_s.sum()),
        preempt_lost_samples=float(state.preempt_lost_samples.sum()),
        unpaid_debt_samples=float(state.debt.sum()),
        stalled_job_s=float(state.stalled_s.sum()),
        upper_bound_samples=ub,
        upper_bound_fraction=samples / ub if ub > 0 else float("nan"),
        normalized_samples=norm_samples,
        normalized_throughput=norm_samples / duration if duration > 0 else 0.0,
        normalized_efficiency=norm_samples / norm_ub if norm_ub > 0 else float("nan"),
        fairness_jain=jain_index(normalized_rates(state, instance, best)),
        decisions=state.decisions,
        events=state.events,
    )


def reference_rate(instance: Instance) -> np.ndarray:
    """(J,) each job's reference rate (samples/s): its best single-node rate on this
    cluster (``ThroughputModel.best_node_rate``: one node of the fastest device for that job,
    or the best per-node rate of a measured table), the unit of the normalised metrics.

    Args:
        instance: The episode; its true throughput model gives the rates.

    Raises:
        ValueError: a job's reference rate is not positive and finite.
    """
    best = throughput_model(instance).best_node_rate()
    bad = np.flatnonzero(~(np.isfinite(best) & (best > 0)))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"job {j} has reference rate {best[j]!r}: it cannot run on any node")
    return best


def normalized_rates(
    state: ClusterState, instance: Instance, reference: np.ndarray | None = None
) -> np.ndarray:
    """Per job submitted before ``state.time`` (in job order): its normalised samples /
    seconds in the system (submission to completion or stop, else to ``state.time``).
    ``reference``: the instance's ``reference_rate``, when the caller has it already.

    Jobs with no time in the system yet (submitted exactly at ``state.time``) are left out.

    Args:
        state: The state (usually the final one).
        instance: The episode.
        reference: (J,) reference rates, samples/s; None computes them.

    Returns:
        The rates, best-node equivalents, in job order (one per job kept).
    """
    if reference is None:
        reference = reference_rate(instance)
    submit = instance.jobs.submit_s
    end = np.where(state.status >= JobStatus.COMPLETED, state.finish_time, state.time)
    span = end - submit
    seen = (submit <= state.time) & (span > 0)
    return (state.progress[seen] / reference[seen]) / span[seen]


def jain_index(x: np.ndarray) -> float:
    """Jain's fairness index of non-negative ``x``: (sum x)^2 / (n sum x^2); NaN when empty,
    1 when all are zero (all treated alike).

    The index lies in [1/n, 1]: 1 when all are equal, 1/n when one value holds everything.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return float("nan")
    sq = float((x * x).sum())
    return 1.0 if sq == 0 else float(x.sum()) ** 2 / (x.size * sq)


def completion_times(state: ClusterState) -> np.ndarray:
    """(J,) finish time of every *completed* job, NaN for the others (stopped ones too)."""
    return np.where(state.status == JobStatus.COMPLETED, state.finish_time, np.nan)


@dataclass(frozen=True)
class CommonMetrics:
    """JCT and makespan over the jobs every compared policy completed (module docstring).

    Attributes:
        jct_common_mean: Mean completion - submission over the common jobs, seconds
            (NaN when no job is common).
        makespan_common: Last completion among the common jobs - the first submission of
            any job, seconds (NaN when no job is common).
        jobs_common: The number of common jobs.
    """

    jct_common_mean: float
    makespan_common: float
    jobs_common: int


def common_metrics(finish_s: Sequence[np.ndarray], submit_s: np.ndarray) -> list[CommonMetrics]:
    """Per policy, the metrics over the jobs that every policy in ``finish_s`` completed.

    Args:
        finish_s: one (J,) array per policy, all on the same instance: completion times,
            NaN for jobs the policy did not complete (``completion_times``).
        submit_s: (J,) submission times of the instance's jobs.

    Returns:
        One ``CommonMetrics`` per array of ``finish_s``, in order (empty for none).

    Raises:
        ValueError: the arrays do not all have one entry per job.
    """
    submit = np.asarray(submit_s, dtype=np.float64)
    fins = [np.asarray(f, dtype=np.float64) for f in finish_s]
    for i, f in enumerate(fins):
        if f.shape != submit.shape:
            raise ValueError(
                f"common_metrics: policy #{i} has {f.shape} finish times for {submit.shape} jobs"
            )
    if not fins:
        return []
    common = np.logical_and.reduce([~np.isnan(f) for f in fins])
    n = int(common.sum())
    first = float(submit.min()) if submit.size else float("nan")
    out = []
    for f in fins:
        if n == 0:
            out.append(CommonMetrics(float("nan"), float("nan"), 0))
            continue
        out.append(
            CommonMetrics(
                jct_common_mean=float((f[common] - submit[common]).mean()),
                makespan_common=float(f[common].max()) - first,
                jobs_common=n,
            )
        )
    return out
