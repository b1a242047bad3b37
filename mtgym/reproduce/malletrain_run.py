"""Episodes of the MalleTrain experiment: instances, declaration models, policies, tasks.

Workloads (``docs/malletrain-preregistration.md``), all on the Summit idle trace's first
``SCARCE_NODES`` nodes (scarce supply) from a start drawn per seed in the week after row 1000:

- ``nas`` / ``hpo``: two NAS or two HPO campaigns at once (``malletrain_campaigns``) on
  Summit nodes with per-GPU variability; metric ``normalized_throughput`` (models differ);
- ``imagenet``: ``Sizes.jobs`` of BFTrainer's ImageNet jobs (measured curves, the truth),
  one every 36 s; metric raw samples/s (images of one data set).

The declaration model only changes what users *declare* (``declared_*`` arrays); the truth,
the supply and the jobs are the same for every declaration model and policy of a seed: the
comparisons are paired.

Both policies run with T_fwd = ``T_FWD`` (10 s) and maxJ = ``MAX_JOBS`` (10), BFTrainer's
settings, deciding at every event (``mtgym.policy.play.play``). Every random draw (start,
ImageNet job pick, campaign trials, declaration noise, ``exact`` node sets) comes from
``mtgym.core.rng.stream(seed, name)`` with its own name, so a seed's episodes are
reproducible in any worker and in any order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.rng import stream
from mtgym.generate.workload import JobRow
from mtgym.reproduce.common import (
    IMAGENET_JOBS,
    SUMMIT_FRAGMENTS,
    SUMMIT_NODES,
    SUMMIT_ROW_1000_S,
    make,
)
from mtgym.reproduce.malletrain_campaigns import (
    CampaignSizes,
    campaign_instance,
    exact_curves,
    family_curves,
)

T_FWD = 10.0
MAX_JOBS = 10
#: Seconds between submissions (BFTrainer's ImageNet workload: one job every 36 s).
INTERARRIVAL_S = 36.0
#: Starts are drawn uniformly over this span after row 1000 of the trace (s).
START_SPAN_S = 7 * 86_400.0
#: Rescale cost (s) the "no information" declarations and FreeTrain guess for every job:
#: MalleTrain's default cost prior (BFTrainer's ImageNet jobs: about 18 s up, 12 s down).
GUESS_COST_S = 15.0
#: Scarce supply: the trace's first 1,000 nodes (the replayer's ``-nN``): a few dozen idle.
SCARCE_NODES = 1000
#: The workloads and their metric.
WORKLOADS = ("nas", "hpo", "imagenet")
CAMPAIGN_WORKLOADS = ("nas", "hpo")
METRIC = {"nas": "normalized_throughput", "hpo": "normalized_throughput", "imagenet": "throughput"}


@dataclass(frozen=True)
class Decl:
    """A model of user declarations: what FreeTrain is told.

    ``curves``: ``exact`` (the runtime truth in expectation: the control), ``offline``
    (measured on dedicated packed best-type nodes at nominal speed), ``family`` (the
    campaign's base configuration, offline), ``linear`` (the offline 1-node rate x n),
    ``noise`` (offline x lognormal(0, sigma) per breakpoint), ``none`` (told nothing).
    Costs are the true ones, except ``none`` (``GUESS_COST_S``).

    Attributes:
        key: the cell's name in the report and a key of ``DECL_BY_KEY`` (e.g.
            ``"noise0.25"``).
        curves: the kind of curves: ``exact``, ``offline``, ``family``, ``noise``,
            ``linear`` or ``none`` (``declared_curves``).
        sigma: the lognormal sigma of ``noise`` (natural log); 0 for the other kinds.
    """

    key: str
    curves: str
    sigma: float = 0.0

    @property
    def text(self) -> str:
        """How the report names it (one phrase, e.g. "linear curves (offline 1-node rate x n)")."""
        return {
            "exact": "exact runtime curves (control: the cost of profiling)",
            "offline": "curves measured offline on dedicated packed best-type nodes",
            "family": "the campaign's base-configuration curve (offline)",
            "linear": "linear curves (offline 1-node rate x n)",
            "noise": f"offline curves x lognormal sigma = {self.sigma:g}",
            "none": f"no information (flat linear guess, {GUESS_COST_S:g} s costs)",
        }[self.curves]


#: The declaration models (pre-registered), from the best information to none.
DECLARATIONS = (
    Decl("exact", "exact"),
    Decl("offline", "offline"),
    Decl("family", "family"),
    Decl("noise0.25", "noise", sigma=0.25),
    Decl("noise0.5", "noise", sigma=0.5),
    Decl("noise1", "noise", sigma=1.0),
    Decl("linear", "linear"),
    Decl("none", "none"),
)
DECL_BY_KEY = {d.key: d for d in DECLARATIONS}
#: Headline readings: (a) users provide nothing, (b) what they can measure offline.
HEADLINE = {"a": "none", "b": "offline"}
#: Label of MalleTrain's episodes (it reads no declarations).
NO_DECL = "-"


def applies(workload: str, decl: str) -> bool:
    """Whether declaration model ``decl`` has a cell on ``workload``.

    ``family`` needs a campaign (a base configuration); every other model applies to every
    workload.

    Args:
        workload: a name of ``WORKLOADS``.
        decl: a key of ``DECL_BY_KEY``.
    """
    return not (decl == "family" and workload not in CAMPAIGN_WORKLOADS)


@dataclass(frozen=True)
class Sizes:
    """Experiment size (hashable: the instance caches key on it).

    Attributes:
        seeds: the paired seeds; each gives its own start, jobs and per-GPU draw.
        workloads: names of ``WORKLOADS`` to run, in report order.
        campaign: the campaigns' sizes (``malletrain_campaigns.CampaignSizes``).
        campaign_horizon_s: simulated seconds of a campaign episode.
        jobs: ImageNet jobs per seed, drawn without replacement from BFTrainer's 1,001.
        horizon_s: simulated seconds of an ImageNet episode.
    """

    seeds: tuple[int, ...]
    workloads: tuple[str, ...]
    campaign: CampaignSizes = field(default_factory=CampaignSizes)
    campaign_horizon_s: float = 8 * 3600.0
    jobs: int = 120
    horizon_s: float = 4 * 3600.0


FULL = Sizes(seeds=tuple(range(20)), workloads=WORKLOADS)
QUICK = Sizes(
    seeds=(0, 1, 2),
    workloads=WORKLOADS,
    campaign=CampaignSizes(trials=25, interarrival_s=120.0, work_hours=(0.5, 1.0)),
    campaign_horizon_s=2 * 3600.0,
    jobs=40,
    horizon_s=1.5 * 3600.0,
)


def start_s(seed: int) -> float:
    """The seed's replay start (trace seconds), uniform over the week after row 1000.

    The same for every workload of the seed (stream ``"malletrain-start"``).

    Args:
        seed: the experiment seed.
    """
    return SUMMIT_ROW_1000_S + float(stream(seed, "malletrain-start").uniform(0.0, START_SPAN_S))


@functools.lru_cache(maxsize=2)
def _base(data_dir: str, horizon_s: float, seed: int, variability: bool) -> Instance:
    """The seed's scarce Summit supply: the first ``SCARCE_NODES`` nodes from ``start_s``.

    Its jobs are BFTrainer's ImageNet workload as the replay builds it; ``truth`` replaces
    them. Cached per process (the two most recent).

    Args:
        data_dir: the data folder.
        horizon_s: seconds to replay from the start.
        seed: the seed (start and per-GPU draw).
        variability: per-GPU slowdowns (``VariabilitySpec()``, the campaigns) or identical
            devices (the ImageNet replay, whose table is measured on Summit).
    """
    from mtgym.generate.replay import SummitReplay
    from mtgym.model.variability import VariabilitySpec

    d = Path(data_dir)
    t0 = start_s(seed)
    return SummitReplay(
        d / SUMMIT_FRAGMENTS,
        d / SUMMIT_NODES,
        d / IMAGENET_JOBS,
        name="malletrain-summit",
        t_start=t0,
        t_end=t0 + horizon_s,
        num_nodes=SCARCE_NODES,
        variability=VariabilitySpec() if variability else None,
    )(seed)


@functools.lru_cache(maxsize=1)
def _rows(data_dir: str) -> tuple[JobRow, ...]:
    """BFTrainer's 1,001 ImageNet jobs as ``JobRow``s (measured table curves; cached)."""
    from mtgym.generate.workload import rows_from_bftrainer
    from mtgym.readers import read_bftrainer_jobs

    return tuple(rows_from_bftrainer(read_bftrainer_jobs(Path(data_dir) / IMAGENET_JOBS)))


@dataclass(frozen=True)
class Truth:
    """A seed's instance (offline declarations) and the curves other declarations use.

    Attributes:
        instance: the seed's instance; its ``curve_tput`` is the offline tabulation,
            which is also what it declares.
        exact: (J, K) the runtime truth in expectation, at the jobs' breakpoints
            (``curve_nodes``); for the ImageNet replay, the measured table itself.
        family: (J, K) each trial's base-configuration curve (campaigns); None for the
            ImageNet replay.
    """

    instance: Instance
    exact: np.ndarray
    family: np.ndarray | None


@functools.lru_cache(maxsize=2)
def truth(data_dir: str, sizes: Sizes, workload: str, seed: int) -> Truth:
    """The seed's workload (cached: every declaration model of a seed reuses it).

    ImageNet: ``sizes.jobs`` jobs drawn from BFTrainer's table (stream
    ``"malletrain-jobs"``), submitted every ``INTERARRIVAL_S`` from the start, on identical
    devices. Campaigns: ``malletrain_campaigns.campaign_instance`` on the supply with
    per-GPU variability, with the exact and family curves.

    Args:
        data_dir: the data folder, as a string (a cache key).
        sizes: the experiment's sizes.
        workload: a name of ``WORKLOADS``.
        seed: the seed.

    Raises:
        ValueError: an unknown workload, or ``sizes.jobs`` outside [1, 1001].
    """
    from mtgym.generate.workload import build_jobs

    if workload not in WORKLOADS:
        raise ValueError(f"workload {workload!r} is not one of {list(WORKLOADS)}")
    if workload == "imagenet":
        base = _base(data_dir, float(sizes.horizon_s), int(seed), False)
        rows = _rows(data_dir)
        if not 1 <= sizes.jobs <= len(rows):
            raise ValueError(f"Sizes.jobs = {sizes.jobs} must be in [1, {len(rows)}]")
        pick = stream(seed, "malletrain-jobs").choice(len(rows), sizes.jobs, replace=False)
        rows_s = [
            replace(rows[i], submit_s=base.t_start + INTERARRIVAL_S * k) for k, i in enumerate(pick)
        ]
        inst = replace(base, jobs=build_jobs(rows_s, base.cluster)).validate()
        # no variability, one locality factor: the measured table is the runtime truth
        return Truth(inst, np.array(inst.jobs.curve_tput, copy=True), None)
    base = _base(data_dir, float(sizes.campaign_horizon_s), int(seed), True)
    inst, rows = campaign_instance(base, workload, data_dir, sizes.campaign, seed)
    return Truth(inst, exact_curves(inst, seed), family_curves(inst, rows))


def _freeze(a: np.ndarray) -> np.ndarray:
    """A read-only float64 copy of ``a`` (``Jobs`` arrays are never written)."""
    a = np.array(a, dtype=np.float64, copy=True)
    a.flags.writeable = False
    return a


def declared_curves(t: Truth, decl: Decl, seed: int) -> np.ndarray:
    """(J, K) the curves users declare under ``decl``, at the jobs' breakpoints.

    ``exact``, ``offline`` and ``family`` are ``t``'s arrays; ``noise`` multiplies each
    offline breakpoint by its own lognormal draw (stream ``"malletrain-noise<sigma>"``),
    and the padding after a job's last real breakpoint repeats that breakpoint's declared
    value as the table repeats its true one; ``linear`` is each job's offline rate at 1
    node x n; ``none`` is one flat guess for every job: the median over jobs of that 1-node
    rate, x n.

    Args:
        t: the seed's truth.
        decl: the declaration model.
        seed: the seed (the noise draw).

    Raises:
        ValueError: ``family`` on a workload without campaigns.
    """
    jobs = t.instance.jobs
    offline = jobs.curve_tput
    if decl.curves == "exact":
        return t.exact
    if decl.curves == "offline":
        return offline
    if decl.curves == "family":
        if t.family is None:
            raise ValueError("the 'family' declaration needs a campaign workload")
        return t.family
    if decl.curves == "noise":
        rng = stream(seed, f"malletrain-noise{decl.sigma:g}")
        noisy = offline * np.exp(decl.sigma * rng.standard_normal(offline.shape))
        # padding repeats the last real breakpoint: repeat its declared value too
        last = np.argmax(jobs.curve_nodes == jobs.curve_nodes[:, -1:], axis=1)
        cols = np.arange(offline.shape[1])
        pad = noisy[np.arange(jobs.num_jobs), last][:, None]
        return np.where(cols[None, :] > last[:, None], pad, noisy)
    one = np.array([np.interp(1.0, jobs.curve_nodes[j], offline[j]) for j in range(jobs.num_jobs)])
    rate = one[:, None] if decl.curves == "linear" else float(np.median(one))
    return jobs.curve_nodes * rate


def instance(
    data_dir: str | Path, sizes: Sizes, workload: str, seed: int, decl: Decl | str
) -> Instance:
    """The seed's instance with declarations by ``decl`` (the truth does not depend on it).

    Only ``declared_curve_tput`` changes, and for ``none`` also the declared rescale costs
    (``GUESS_COST_S`` up and down); the supply, the jobs and their true curves are the
    cached ``truth``.

    Args:
        data_dir: the data folder.
        sizes: the experiment's sizes.
        workload: a name of ``WORKLOADS``.
        seed: the seed.
        decl: a ``Decl`` or a key of ``DECL_BY_KEY``.

    Raises:
        ValueError: an unknown declaration key, or one that does not apply to the workload.
    """
    if isinstance(decl, str):
        if decl not in DECL_BY_KEY:
            raise ValueError(f"declaration {decl!r} is not one of {sorted(DECL_BY_KEY)}")
        decl = DECL_BY_KEY[decl]
    if not applies(workload, decl.key):
        raise ValueError(f"declaration {decl.key!r} does not apply to workload {workload!r}")
    t = truth(str(data_dir), sizes, workload, int(seed))
    jobs = t.instance.jobs
    jobs = replace(jobs, declared_curve_tput=_freeze(declared_curves(t, decl, seed)))
    if decl.curves == "none":
        guess = _freeze(np.full(jobs.num_jobs, GUESS_COST_S))
        jobs = replace(jobs, declared_r_up_s=guess, declared_r_down_s=guess)
    return replace(t.instance, jobs=jobs).validate()


def declaration_error(inst: Instance, exact: np.ndarray) -> float:
    """Median over jobs and breakpoints (n >= 1) of |log(declared / exact)|: how far the
    declared curves are from the runtime truth (the x-axis of declaration quality).

    0 is exact; 0.25 is a typical factor of about 1.28 either way. Both curves are floored
    at 1e-12 before the log.

    Args:
        inst: an instance with declarations (``instance``).
        exact: (J, K) the runtime truth (``Truth.exact``).
    """
    jobs = inst.jobs
    m = jobs.curve_nodes >= 1
    d = np.asarray(jobs.declared_curve_tput)[m]
    e = np.asarray(exact)[m]
    return float(np.median(np.abs(np.log(np.maximum(d, 1e-12) / np.maximum(e, 1e-12)))))


def efficiency_at(inst: Instance, n: float) -> list[float]:
    """Each job's offline parallel efficiency at ``n`` nodes, rate(n) / (n rate(1)): the
    spread of these is the workload's curve diversity.

    Args:
        inst: the instance (its offline ``curve_tput``, linearly interpolated).
        n: the node count; a job whose ``max_nodes`` is smaller is taken at its maximum.

    Returns:
        One efficiency per job (1.0 = linear scaling), in job order.
    """
    jobs = inst.jobs
    out = []
    for j in range(jobs.num_jobs):
        x, y = jobs.curve_nodes[j], jobs.curve_tput[j]
        m = min(float(n), float(jobs.max_nodes[j]))
        out.append(float(np.interp(m, x, y) / (m * np.interp(1.0, x, y))))
    return out


@dataclass(frozen=True)
class Task:
    """One episode: a policy on a seed's instance under one declaration model.

    Attributes:
        workload: a name of ``WORKLOADS``.
        seed: the seed.
        policy: ``"freetrain"`` or ``"malletrain"``.
        declaration: a key of ``DECL_BY_KEY``, or ``NO_DECL`` (MalleTrain reads none).
        data_dir: the data folder, as a string.
        sizes: the experiment's sizes.
    """

    workload: str
    seed: int
    policy: str
    declaration: str
    data_dir: str
    sizes: Sizes


def policy_for(policy: str, declaration: str) -> Any:
    """The policy of an episode (FreeTrain with ``none`` is told nothing: ``information``).

    Both at T_fwd = ``T_FWD`` and maxJ = ``MAX_JOBS``. FreeTrain under ``none`` runs with
    ``information="none"`` (it cannot see declarations and guesses linear curves with
    ``GUESS_COST_S`` costs); under every other model it reads the declarations.

    Args:
        policy: ``"freetrain"`` or ``"malletrain"``.
        declaration: the episode's declaration key (or ``NO_DECL``).

    Raises:
        ValueError: another policy name.
    """
    if policy == "freetrain":
        extra = {"information": "none", "guess_cost_s": GUESS_COST_S}
        return make(
            "freetrain", t_fwd=T_FWD, max_jobs=MAX_JOBS, **(extra if declaration == "none" else {})
        )
    if policy != "malletrain":
        raise ValueError(f"policy {policy!r} is not 'freetrain' or 'malletrain'")
    return make("malletrain", t_fwd=T_FWD, max_jobs=MAX_JOBS)


def run_task(task: Task) -> dict[str, Any]:
    """Run one episode (module-level: runs in worker processes).

    MalleTrain's episodes play the ``offline`` instance (it reads no declarations, so any
    would do).

    Args:
        task: the episode.

    Returns:
        A JSON-ready dict: the task's ``workload``, ``seed``, ``policy`` and
        ``declaration``; ``value`` (the workload's ``METRIC``); ``metrics`` (every metric);
        ``probes`` (MalleTrain's profiling probes, 0 for FreeTrain); ``decl_error``
        (``declaration_error``, 0 for MalleTrain); ``jobs``; ``efficiency8``
        (``efficiency_at(inst, 8)``, MalleTrain's episodes only, else empty);
        ``decision_ms`` and ``wall_s``.
    """
    from mtgym.policy.play import play

    decl = "offline" if task.declaration == NO_DECL else task.declaration
    inst = instance(task.data_dir, task.sizes, task.workload, task.seed, decl)
    t = truth(task.data_dir, task.sizes, task.workload, task.seed)
    pol = policy_for(task.policy, task.declaration)
    res = play(inst, pol)
    m = res.metrics.as_dict()
    return {
        "workload": task.workload,
        "seed": task.seed,
        "policy": task.policy,
        "declaration": task.declaration,
        "value": float(m[METRIC[task.workload]]),
        "metrics": {k: float(v) for k, v in m.items()},
        "probes": int(getattr(pol, "probes_issued", 0)),
        "decl_error": declaration_error(inst, t.exact) if task.declaration != NO_DECL else 0.0,
        "jobs": int(inst.num_jobs),
        "efficiency8": efficiency_at(inst, 8.0) if task.policy == "malletrain" else [],
        "decision_ms": res.decision_ms,
        "wall_s": res.wall_s,
    }


def tasks(data_dir: Path, sizes: Sizes) -> list[Task]:
    """Every episode, seed by seed: MalleTrain once, FreeTrain once per declaration model.

    Ordered by workload, then seed, then MalleTrain before FreeTrain in ``DECLARATIONS``
    order.

    Args:
        data_dir: the data folder.
        sizes: the experiment's sizes (its ``seeds`` and ``workloads``).
    """
    out = []
    for wl in sizes.workloads:
        for seed in sizes.seeds:
            out.append(Task(wl, seed, "malletrain", NO_DECL, str(data_dir), sizes))
            for d in DECLARATIONS:
                if applies(wl, d.key):
                    out.append(Task(wl, seed, "freetrain", d.key, str(data_dir), sizes))
    return out
