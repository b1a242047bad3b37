"""Episodes of the MalleTrain experiment: instances, declaration models, policies, tasks.

An instance is one seed's draw: a start in the Summit idle trace (uniform over the
``START_SPAN_S`` after row 1000) on its first ``Sizes.num_nodes`` nodes, and ``Sizes.jobs``
of BFTrainer's 1,001 ImageNet jobs (measured curves: the truth) drawn without replacement
and submitted every 36 s (the replayer's spacing). The declaration model only changes what
users *declare* (``declared_*`` arrays); the truth, the supply and the job draw are the same
for every declaration model and policy of a seed: the comparisons are paired.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.rng import stream
from mtgym.generate.workload import Declaration, JobRow
from mtgym.reproduce.common import (
    IMAGENET_JOBS,
    SUMMIT_FRAGMENTS,
    SUMMIT_NODES,
    SUMMIT_ROW_1000_S,
    make,
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


@dataclass(frozen=True)
class Decl:
    """A model of user declarations: what FreeTrain (and main-branch MalleTrain) is told.

    ``curves``: ``exact`` (the measured curve), ``noise`` (true x lognormal(0, sigma) per
    breakpoint), ``linear`` (the job's true 1-node rate x n), ``none`` (told nothing: one
    flat guess for all jobs, linear at the median 1-node rate of the draw, costs
    ``GUESS_COST_S``). ``cost_factor`` multiplies both true rescale costs.
    """

    key: str
    curves: str
    sigma: float = 0.0
    cost_factor: float = 1.0

    @property
    def text(self) -> str:
        """How the report names it."""
        if self.curves == "none":
            return "no information (flat linear guess, 15 s costs)"
        c = {
            "exact": "exact curves",
            "noise": f"curves x lognormal sigma = {self.sigma:g}",
            "linear": "linear curves (true 1-node rate x n)",
        }[self.curves]
        f = self.cost_factor
        return c + (f", costs x{f:g}" if f != 1.0 else ", exact costs")


#: The declaration models swept (fixed before any run): cost mis-declaration on exact
#: curves, curve mis-declaration with exact costs, and no information at all.
DECLARATIONS = (
    Decl("exact", "exact"),
    Decl("cost0.25", "exact", cost_factor=0.25),
    Decl("cost0.5", "exact", cost_factor=0.5),
    Decl("cost2", "exact", cost_factor=2.0),
    Decl("cost4", "exact", cost_factor=4.0),
    Decl("linear", "linear"),
    Decl("noise1", "noise", sigma=1.0),
    Decl("none", "none"),
)
DECL_BY_KEY = {d.key: d for d in DECLARATIONS}

#: Probe sizes of the ``online-profiling`` branch's JPA (nodes 1-4), as fractions of the
#: ImageNet jobs' maximum of 64 nodes.
SMALL_PROBES = (4 / 64, 3 / 64, 2 / 64, 1 / 64)
#: MalleTrain variants: (name, policy options, reads declarations).
VARIANTS: dict[str, tuple[dict[str, Any], bool]] = {
    # mtgym's JPA: probes at 1, 1/2, 1/4, 1/8 of the maximum, growth capped at the largest
    "malletrain": ({}, False),
    "malletrain-uncapped": ({"cap_at_measured": False}, False),
    # the online-profiling branch's probe sizes 1-4, capped (SOS2) and not
    "malletrain-probe1to4": ({"probe_fractions": SMALL_PROBES}, False),
    "malletrain-probe1to4-uncapped": (
        {"probe_fractions": SMALL_PROBES, "cap_at_measured": False},
        False,
    ),
    # the main branch: declared curves and costs, passive updates, no probes
    "malletrain-main": ({"prior": "declared", "probe": False}, True),
}
#: Label of episodes that read no declarations.
NO_DECL = "-"


@dataclass(frozen=True)
class Sizes:
    """Experiment size."""

    seeds: tuple[int, ...]
    regimes: tuple[str, ...]
    jobs: int
    horizon_s: float


#: Supply regimes: nodes of the trace kept (its column order, the replayer's ``-nN``).
#: Scarce: a few dozen idle at a time; abundant: hundreds, every job can get its maximum.
REGIMES = {"scarce": 1000, "abundant": 4734}
FULL = Sizes(seeds=tuple(range(10)), regimes=("scarce", "abundant"), jobs=120, horizon_s=4 * 3600.0)
QUICK = Sizes(seeds=(0, 1, 2), regimes=("abundant",), jobs=60, horizon_s=1.5 * 3600.0)


def start_s(seed: int) -> float:
    """The seed's replay start (trace seconds)."""
    return SUMMIT_ROW_1000_S + float(stream(seed, "malletrain-start").uniform(0.0, START_SPAN_S))


@functools.lru_cache(maxsize=2)
def _base(data_dir: str, num_nodes: int, horizon_s: float, seed: int) -> Instance:
    from mtgym.generate.replay import SummitReplay

    d = Path(data_dir)
    t0 = start_s(seed)
    return SummitReplay(
        d / SUMMIT_FRAGMENTS,
        d / SUMMIT_NODES,
        d / IMAGENET_JOBS,
        name="malletrain-summit-imagenet",
        t_start=t0,
        t_end=t0 + horizon_s,
        num_nodes=num_nodes,
    )(seed)


@functools.lru_cache(maxsize=1)
def _rows(data_dir: str) -> tuple[JobRow, ...]:
    from mtgym.generate.workload import rows_from_bftrainer
    from mtgym.readers import read_bftrainer_jobs

    return tuple(rows_from_bftrainer(read_bftrainer_jobs(Path(data_dir) / IMAGENET_JOBS)))


def instance(
    data_dir: str | Path, sizes: Sizes, regime: str, seed: int, decl: Decl | str
) -> Instance:
    """The seed's instance with declarations by ``decl`` (the truth does not depend on it)."""
    from mtgym.generate.workload import build_jobs

    if isinstance(decl, str):
        if decl not in DECL_BY_KEY:
            raise ValueError(f"declaration {decl!r} is not one of {sorted(DECL_BY_KEY)}")
        decl = DECL_BY_KEY[decl]
    if regime not in REGIMES:
        raise ValueError(f"regime {regime!r} is not one of {sorted(REGIMES)}")
    base = _base(str(data_dir), REGIMES[regime], float(sizes.horizon_s), int(seed))
    rows = _rows(str(data_dir))
    if not 1 <= sizes.jobs <= len(rows):
        raise ValueError(f"Sizes.jobs = {sizes.jobs} must be in [1, {len(rows)}]")
    pick = stream(seed, "malletrain-jobs").choice(len(rows), sizes.jobs, replace=False)
    rows_s = [
        replace(rows[i], submit_s=base.t_start + INTERARRIVAL_S * k) for k, i in enumerate(pick)
    ]
    how = Declaration(curve_sigma=decl.sigma, cost_bias=decl.cost_factor)
    jobs = build_jobs(rows_s, base.cluster, stream(seed, "malletrain-declarations"), how)
    if decl.curves in ("linear", "none"):
        one = np.array(
            [np.interp(1.0, jobs.curve_nodes[j], jobs.curve_tput[j]) for j in range(jobs.num_jobs)]
        )
        rate = one[:, None] if decl.curves == "linear" else float(np.median(one))
        declared = jobs.curve_nodes * rate
        declared.flags.writeable = False
        jobs = replace(jobs, declared_curve_tput=declared)
        if decl.curves == "none":
            guess = np.full(jobs.num_jobs, GUESS_COST_S)
            jobs = replace(jobs, declared_r_up_s=guess, declared_r_down_s=guess.copy())
    return replace(base, jobs=jobs).validate()


@dataclass(frozen=True)
class Task:
    """One episode: a policy on a seed's instance under one declaration model."""

    regime: str
    seed: int
    policy: str  # "freetrain" or a key of VARIANTS
    declaration: str  # a key of DECL_BY_KEY, or NO_DECL (the policy reads none)
    data_dir: str
    sizes: Sizes


def policy_for(policy: str, declaration: str) -> Any:
    """The policy of an episode (FreeTrain with ``none`` is told nothing: ``information``)."""
    if policy == "freetrain":
        extra = {"information": "none", "guess_cost_s": GUESS_COST_S}
        return make(
            "freetrain",
            t_fwd=T_FWD,
            max_jobs=MAX_JOBS,
            **(extra if declaration == "none" else {}),
        )
    opts, _ = VARIANTS[policy]
    return make("malletrain", t_fwd=T_FWD, max_jobs=MAX_JOBS, **opts)


def run_task(task: Task) -> dict[str, Any]:
    """Run one episode (module-level: runs in worker processes)."""
    from mtgym.policy.play import play

    decl = "exact" if task.declaration == NO_DECL else task.declaration
    inst = instance(task.data_dir, task.sizes, task.regime, task.seed, decl)
    pol = policy_for(task.policy, task.declaration)
    res = play(inst, pol)
    m = res.metrics.as_dict()
    return {
        "regime": task.regime,
        "seed": task.seed,
        "policy": task.policy,
        "declaration": task.declaration,
        "throughput": float(m["throughput"]),
        "metrics": {k: float(v) for k, v in m.items()},
        "probes": int(getattr(pol, "probes_issued", 0)),
        "decision_ms": res.decision_ms,
        "wall_s": res.wall_s,
    }


def tasks(data_dir: Path, sizes: Sizes) -> list[Task]:
    """Every episode, seed by seed: FreeTrain and main-branch MalleTrain once per declaration
    model; the paper's and the uncapped MalleTrain once (they read no declarations).
    """
    out = []
    for reg in sizes.regimes:
        for seed in sizes.seeds:
            for pol, (_, reads) in VARIANTS.items():
                if not reads:
                    out.append(Task(reg, seed, pol, NO_DECL, str(data_dir), sizes))
            for d in DECLARATIONS:
                out.append(Task(reg, seed, "freetrain", d.key, str(data_dir), sizes))
                for pol, (_, reads) in VARIANTS.items():
                    if reads:
                        out.append(Task(reg, seed, pol, d.key, str(data_dir), sizes))
    return out
