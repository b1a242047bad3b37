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

Each workload runs two campaigns at once (``FAMILIES``): NAS = a Transformer and an LSTM
language model; HPO = ResNet-18 and the fitted ShuffleNet. Both use successive halving with
eta 3 and rungs at 1/9 and 1/3 of a trial's work, BFTrainer's rescale costs and no start-up
cost.
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
    """The parametric model's rate on ``n`` Summit nodes (ring all-reduce over 6n GPUs).

    One iteration computes ``b`` samples per GPU in ``b / v`` s and all-reduces ``grad``
    bytes in ``2 (g-1)/g grad / bw + 2 (g-1) lat`` s, of which ``o`` is hidden behind the
    backward pass. Within one node (n = 1) the bandwidth is ``_BW_NODE`` (50e9 bytes/s) and
    the latency ``_LAT_NODE`` (1 us); across nodes ``_BW`` (23e9 bytes/s) and ``_LAT_NET``
    (3.5 us).

    Args:
        n: node counts (any shape).
        v: samples/s of one GPU.
        grad: bytes all-reduced per iteration.
        b: samples per GPU per iteration.
        o: the overlapped share of communication, in [0, 1].

    Returns:
        samples/s of the whole job at each ``n``, shaped like ``n``.
    """
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

    The grid: per-GPU rate from 0.74 to 1.82 x the measured rate at the smallest count / 6
    (91 points, log spaced) and model size from 0.1 to 200 million parameters (200 points,
    log spaced; 4 bytes each). Only breakpoints with n > 0 enter the fit. Cached per data
    folder.

    Args:
        data_dir: the data folder holding ``HPS_JOBS``.

    Returns:
        A ``ModelProfile`` named ``"shufflenet"``, class D (blox-pal's class of ShuffleNet),
        with the fitted rate on ``"V100"`` (Summit's GPU).
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
    """A ``Campaign`` whose family is ``profile`` (a profile outside the catalogue).

    ``Campaign`` checks that its ``model`` is in the catalogue, so the campaign keeps a
    catalogue model (the draws use it) and each drawn trial is then switched to ``profile``.

    Attributes:
        profile: the family's profile; None: the catalogue's ``model``, as ``Campaign``.
    """

    profile: ModelProfile | None = field(default=None, repr=False)

    def rows(self, rng: np.random.Generator, campaign_id: int, prefix: str) -> list[JobRow]:
        """The campaign's trials, on ``profile`` when given (same draws).

        Args:
            rng: the campaign's generator (``stream(seed, "malletrain-campaign<k>")``).
            campaign_id: the campaign's index in the instance's campaign table.
            prefix: the trials' name prefix (``"nas0"``, ``"hpo1"``, ...).

        Returns:
            One row per trial, with ``profile``, ``model`` and ``app_class`` replaced.
        """
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
    """Campaign sizes (pre-registered in ``docs/malletrain-preregistration.md``).

    Attributes:
        trials: trials per campaign (two campaigns per workload).
        interarrival_s: seconds between a campaign's trial submissions.
        work_hours: (low, high) of the uniform draw of each trial's work, in hours on
            ``work_ref_nodes`` nodes.
        work_ref_nodes: the node count ``work_hours`` is measured on.
        max_nodes: a trial's largest node count (its smallest is 1).
        arch_sigma: NAS only: the lognormal sigma of a trial's width (per-GPU rate) and
            model size (gradient bytes).
    """

    trials: int = 100
    interarrival_s: float = 120.0
    work_hours: tuple[float, float] = (1.0, 2.0)
    work_ref_nodes: int = 4
    max_nodes: int = 32
    arch_sigma: float = 0.4


def campaigns(kind: str, data_dir: str, z: CampaignSizes, start_s: float) -> tuple[Campaign, ...]:
    """The workload's two campaigns, starting at ``start_s``.

    Args:
        kind: ``"nas"`` or ``"hpo"`` (a key of ``FAMILIES``).
        data_dir: the data folder (for the fitted ShuffleNet).
        z: the campaign sizes.
        start_s: the first trial's submission time (trace seconds).

    Raises:
        ValueError: an unknown ``kind``.
    """
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

    Campaign k draws from ``stream(seed, "malletrain-campaign<k>")`` and is named
    ``<kind><k>``; the jobs are tabulated on ``base``'s cluster (the offline curves).

    Args:
        base: the seed's supply (``malletrain_run._base`` with variability).
        kind: ``"nas"`` or ``"hpo"``.
        data_dir: the data folder.
        z: the campaign sizes.
        seed: the seed.

    Returns:
        The validated instance and the trials' rows, row j being job j.
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
    """(J, K) each trial's family (base configuration) offline curve at its breakpoints.

    The rows are reset to the base configuration (rate and gradient scale 1, the profile's
    own per-GPU batch) and tabulated again on the same cluster; work does not enter a curve.

    Args:
        inst: the campaign instance (its cluster).
        rows: the trials' rows, in job order (``campaign_instance``).
    """
    base_rows = [
        replace(r, rate_scale=1.0, params_scale=1.0, local_batch=None, work=1.0, work_hours=None)
        for r in rows
    ]
    return np.array(build_jobs(base_rows, inst.cluster).curve_tput, copy=True)


def exact_curves(inst: Instance, seed: int, draws: int = EXACT_DRAWS) -> np.ndarray:
    """(J, K) each job's expected runtime rate at its breakpoints: the mean over ``draws``
    random node sets of the cluster (actual spread, each set's slowest device). Table jobs on
    a cluster without variability keep their table (it is the truth there).

    For each breakpoint count n >= 1, ``draws`` sets of n distinct nodes are drawn uniformly
    from the whole cluster (stream ``"malletrain-exact"``); a set's rate for a job uses its
    topology spread and its slowest node for the job (class slowdown / the job's rate on
    that GPU type). Breakpoints at 0 nodes keep the table's value.

    Args:
        inst: the instance (its cluster and jobs).
        seed: the seed of the node-set draws.
        draws: node sets per count.
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
