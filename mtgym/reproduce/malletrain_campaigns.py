"""NAS and HPO campaigns of the MalleTrain experiment, and the curves users could declare.

Trials of one family whose scaling differs by configuration (``mtgym.generate.workload.
Campaign``): NAS trials differ in width (per-GPU rate) and model size (gradient bytes), HPO
trials in per-GPU batch size. They arrive as the search generates them and stop early by
asynchronous successive halving. The families are the catalogue's profiles plus ShuffleNet
fitted to BFTrainer's measured HPS curve (``hps_shufflenet``).

The curves a scheduler can be told (``curves``):

- ``offline``: what a user measures on dedicated packed nodes of the best type at nominal
  speed: ``build_jobs``' tabulation (packed placement, median devices, no variability);
- ``exact``: the runtime truth in expectation: the mean rate at each count over random node
  sets of this cluster (the spread of scattered idle nodes, each set's slowest device);
- ``family``: the campaign's base configuration's offline curve (NAS: base architecture;
  HPO: the profile's default batch).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from mtgym.core.instance import Instance, Jobs
from mtgym.core.rng import stream
from mtgym.core.types import AppClass
from mtgym.generate.catalog import ModelProfile
from mtgym.generate.workload import Campaign, JobRow, build_jobs, campaigns_table
from mtgym.model.throughput import ThroughputModel
from mtgym.reproduce.common import HPS_JOBS

#: Summit node: 6 GPUs; a node pair's bandwidth (GB/s) and latency (s) for the HPS fit.
_GPN, _BW, _LAT_NODE, _LAT_NET, _BW_NODE = 6, 23e9, 1e-6, 3.5e-6, 50e9
#: Per-GPU batch assumed for BFTrainer's HPS ShuffleNet measurement (not in the data).
HPS_LOCAL_BATCH = 64
HPS_OVERLAP = 0.2
#: Random node sets drawn per count for the ``exact`` (expected runtime) curves.
EXACT_DRAWS = 32


def _formula(n: np.ndarray, v: float, grad: float, b: float, o: float) -> np.ndarray:
    """The parametric model's rate on ``n`` Summit nodes (ring all-reduce over 6n GPUs)."""
    g = _GPN * n
    bw = np.where(n > 1, _BW, _BW_NODE)
    lat = np.where(n > 1, _LAT_NET, _LAT_NODE)
    comm = np.where(g > 1, 2 * (g - 1) / g * grad / bw + 2 * (g - 1) * lat, 0.0)
    return g * b / (b / v + (1 - o) * comm)


@functools.lru_cache(maxsize=2)
def hps_shufflenet(data_dir: str) -> ModelProfile:
    """ShuffleNet's profile fitted to BFTrainer's measured HPS curve (1-64 Summit nodes):
    per-GPU rate and gradient size by least squares on log rates (grid search), at an
    assumed per-GPU batch of ``HPS_LOCAL_BATCH`` and overlap ``HPS_OVERLAP``.
    """
    from mtgym.readers import read_bftrainer_jobs

    t = read_bftrainer_jobs(Path(data_dir) / HPS_JOBS)
    n = t.curve_nodes.astype(np.float64)
    y = np.asarray(t.curve_tput[0], dtype=np.float64)
    keep = n > 0
    n, y = n[keep], y[keep]
    best = (np.inf, 0.0, 0.0)
    v0 = y[0] / _GPN
    for v in v0 * np.exp(np.linspace(-0.3, 0.6, 91)):
        for p in np.exp(np.linspace(np.log(0.1), np.log(200.0), 200)):
            r = _formula(n, v, p * 4e6, HPS_LOCAL_BATCH, HPS_OVERLAP)
            err = float(np.sum(np.log(r / y) ** 2))
            if err < best[0]:
                best = (err, float(v), float(p))
    _, v, p = best
    return ModelProfile(
        "shufflenet",
        AppClass.D,  # blox-pal's class of ShuffleNet
        {"V100": v},
        HPS_LOCAL_BATCH,
        p,
        HPS_OVERLAP,
    )


@dataclass(frozen=True)
class FamilyCampaign(Campaign):
    """A ``Campaign`` whose family is ``profile`` (a profile outside the catalogue)."""

    profile: ModelProfile | None = field(default=None, repr=False)

    def rows(self, rng: np.random.Generator, campaign_id: int, prefix: str) -> list[JobRow]:
        """The campaign's trials, on ``profile`` when given (same draws)."""
        rows = super().rows(rng, campaign_id, prefix)
        if self.profile is not None:
            for r in rows:
                r.profile, r.model, r.app_class = (
                    self.profile,
                    self.profile.name,
                    self.profile.app_class,
                )
        return rows


#: The campaigns of each workload: (family, catalogue model or "hps-shufflenet").
FAMILIES = {"nas": ("transformer", "lm"), "hpo": ("resnet18", "hps-shufflenet")}


@dataclass(frozen=True)
class CampaignSizes:
    """Campaign sizes (pre-registered)."""

    trials: int = 100  # per campaign
    interarrival_s: float = 120.0
    work_hours: tuple[float, float] = (1.0, 2.0)
    work_ref_nodes: int = 4
    max_nodes: int = 32
    arch_sigma: float = 0.4


def campaigns(kind: str, data_dir: str, z: CampaignSizes, start_s: float) -> tuple[Campaign, ...]:
    """The workload's two campaigns, starting at ``start_s``."""
    if kind not in FAMILIES:
        raise ValueError(f"campaign workload {kind!r} is not one of {sorted(FAMILIES)}")
    out = []
    for model in FAMILIES[kind]:
        prof = hps_shufflenet(data_dir) if model == "hps-shufflenet" else None
        out.append(
            FamilyCampaign(
                kind=kind,
                model="resnet18" if prof is not None else model,
                num_trials=z.trials,
                start_s=start_s,
                interarrival_s=z.interarrival_s,
                eta=3.0,
                rungs=(1 / 9, 1 / 3),
                work_hours=z.work_hours,
                work_ref_nodes=z.work_ref_nodes,
                min_nodes=1,
                max_nodes=z.max_nodes,
                arch_sigma=z.arch_sigma,
                batch_choices=(32, 64, 128, 256),
                startup_s=0.0,
                profile=prof,
            )
        )
    return tuple(out)


def campaign_instance(
    base: Instance, kind: str, data_dir: str, z: CampaignSizes, seed: int
) -> tuple[Instance, list[JobRow]]:
    """``base`` (a Summit replay with variability) with the workload's campaigns as its jobs;
    also the trials' rows (sorted by submission, as the jobs are).
    """
    camps = campaigns(kind, data_dir, z, base.t_start)
    rows: list[JobRow] = []
    names = []
    for c_id, camp in enumerate(camps):
        names.append(f"{kind}{c_id}")
        rows += camp.rows(stream(seed, f"malletrain-campaign{c_id}"), c_id, names[-1])
    rows = sorted(rows, key=lambda r: r.submit_s)
    jobs = build_jobs(rows, base.cluster)
    inst = replace(base, jobs=jobs, campaigns=campaigns_table(camps, names)).validate()
    return inst, rows


def family_curves(inst: Instance, rows: list[JobRow]) -> np.ndarray:
    """(J, K) each trial's family (base configuration) offline curve at its breakpoints."""
    base_rows = [
        replace(r, rate_scale=1.0, params_scale=1.0, local_batch=None, work=1.0, work_hours=None)
        for r in rows
    ]
    return np.array(build_jobs(base_rows, inst.cluster).curve_tput, copy=True)


def exact_curves(inst: Instance, seed: int, draws: int = EXACT_DRAWS) -> np.ndarray:
    """(J, K) each job's expected runtime rate at its breakpoints: the mean over ``draws``
    random node sets of the cluster (actual spread, each set's slowest device). Table jobs on
    a cluster without variability keep their table (it is the truth there).
    """
    jobs: Jobs = inst.jobs
    model = ThroughputModel(inst.cluster, jobs)
    N = inst.cluster.num_nodes
    rng = stream(seed, "malletrain-exact")
    out = np.array(jobs.curve_tput, copy=True)
    J = jobs.num_jobs
    counts = np.unique(jobs.curve_nodes)
    for n in counts:
        n_i = int(n)
        if n_i < 1:
            continue
        sets = np.stack([rng.choice(N, n_i, replace=False) for _ in range(draws)])
        spread = np.array([inst.cluster.topology.spread(s) for s in sets])
        rates = np.zeros((J, draws))
        cl = inst.cluster
        for k in range(draws):
            s = sets[k]
            # (J, n): each job's slowness on each node of the set; the set runs at its slowest
            slow = (cl.slowdown[s][:, jobs.app_class].T / jobs.type_rate[:, cl.gpu_type[s]]).max(1)
            rates[:, k] = model.formula(np.arange(J), np.full(J, n), slow, np.full(J, spread[k]))
        mean = rates.mean(axis=1)
        out = np.where(jobs.curve_nodes == n, mean[:, None], out)
    return out
