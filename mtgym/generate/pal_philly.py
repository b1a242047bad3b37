"""PAL's Sia-Philly experiment (arXiv 2408.11919, §V.B): rigid GPU jobs on 16 hosts x 4 GPUs.

Modelling choices (pinned down from the authors' artifact, ``hal-uw/blox-pal``):

- **The allocation unit is one GPU.** mtgym's "node" is a GPU here (``gpus_per_node=1``);
  the topology is ``("gpu", "node", "system")`` with the host as the level-1 group, so a
  job's spread is 1 inside one host and 2 across hosts. ``locality_factor`` is
  ``(1.0, 1.0, locality)``: PAL's constant cross-node penalty lambda (1.7 by default).
- **Rigid jobs:** ``min_nodes = max_nodes = num_gpus`` of the trace.
- **Progress counts iterations.** Each job's table curve is flat at ``1 / base_iter_s``
  iterations/s at its demand (``PAL_ITER_TIME_S`` of its model), so mtgym's table throughput
  ``curve / max sf / lambda[spread]`` is PAL's iteration time
  ``base x max sf x (lambda if across hosts)`` exactly. ``work`` is the trace's ``duration``,
  which PAL's simulator consumes as an iteration count (its quirk, kept).
- **No restart cost** (PAL's simulator charges none): ``r_up_s = r_down_s = startup_s = 0``.
- **Supply:** every GPU idle for the whole horizon (a dedicated cluster, as in the paper).
- **Variability (PAL's quirk):** the simulated GPUs' ids never match a profile's GPU id, so
  blox-pal draws every simulated GPU's factor for every class independently from that class's
  file: class A from ``resnet-longhorn``, B and C from ``bert-longhorn`` (drawn separately,
  so B and C are uncorrelated), D from ``pagerank-longhorn``. With
  ``samples="runs"`` (default) the pool is every measured run's ``perf`` divided by the
  file's median ``perf`` (the heavy tail of single runs, up to 3.57x for ResNet-50, is
  kept; these are *not* the per-GPU medians of ``mtgym.readers.read_variability``). With
  ``samples="gpu-max"`` the pool is one value per GPU, its slowest run, divided by the median
  of those values, which is what ``blox/cluster_state.py`` at blox-pal commit ``efb093f``
  does (``groupby('uuid').perf.idxmax()``). The profile PAL places on is the measured value
  itself (``profile_noise=0``). Draws come from the ``"variability"`` stream of the seed
  (PAL uses Python's ``random`` with seed 42, which is not reproduced).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import CostModel, Instance, Supply
from mtgym.core.rng import stream
from mtgym.core.topology import Topology
from mtgym.core.types import AppClass
from mtgym.generate.cluster import build_cluster
from mtgym.generate.workload import JobRow, build_jobs
from mtgym.readers import PAL_ITER_TIME_S, pal_app_class, read_philly_trace
from mtgym.readers._csv import floats, read_table, strs

#: Variability file (under ``gpu-variability/sim``) of each PAL class (blox-pal profiles.json).
PAL_CLASS_FILES = {
    AppClass.A: "resnet-longhorn-agg.csv",
    AppClass.B: "bert-longhorn-agg.csv",
    AppClass.C: "bert-longhorn-agg.csv",
    AppClass.D: "pagerank-longhorn-agg.csv",
}

#: Link costs of the three levels (GPU, host, system); unused by table jobs, kept plausible:
#: NVLink inside a Longhorn V100 host, 100 Gb/s InfiniBand across hosts.
_BANDWIDTH_GBPS = (150.0, 150.0, 12.5)
_LATENCY_S = (1e-6, 2e-6, 5e-6)

SAMPLE_MODES = ("runs", "gpu-max")


def pal_slowdown_pool(path: str | Path, samples: str = "runs") -> np.ndarray:
    """The normalised slowdown values a PAL simulated GPU's factor is drawn from.

    Args:
        path: a blox-pal ``*-agg.csv`` file with ``perf`` (a time) and ``uuid`` columns.
        samples: ``"runs"``: every row's ``perf`` / the median ``perf`` of all rows;
            ``"gpu-max"``: each GPU's largest ``perf`` / the median of those maxima.

    Raises:
        ConfigError: unknown ``samples``.
        DataError: a missing column or a bad number.
    """
    if samples not in SAMPLE_MODES:
        raise ConfigError("samples", samples, f"one of {SAMPLE_MODES}")
    t = read_table(path, ("perf", "uuid"))
    perf = floats(t, "perf")
    if samples == "runs":
        return perf / np.median(perf)
    _, inv = np.unique(strs(t, "uuid"), return_inverse=True)
    worst = np.full(int(inv.max()) + 1, -np.inf)
    np.maximum.at(worst, inv, perf)
    return worst / np.median(worst)


@dataclass(frozen=True)
class PALPhilly:
    """PAL's Sia-Philly scenario: one trace on ``num_hosts`` x ``gpus_per_host`` GPUs.

    Attributes:
        trace: path of ``pal-philly/workload-<k>.csv``.
        variability_dir: path of ``gpu-variability/sim`` (the Longhorn files).
        num_hosts: hosts (16 in the paper).
        gpus_per_host: GPUs per host (4).
        locality: lambda, the factor on a job's iteration time when it spans hosts (1.7;
            swept 1.0-3.0 in the paper's Fig. 12).
        max_jobs: keep only the first ``max_jobs`` jobs of the trace (None = all 160).
        horizon_s: the instance's ``t_end``; 60 days outlasts every trace under any placement.
        samples: which pool the per-GPU factors are drawn from (module docstring).
        name: the generator's name.
    """

    trace: str | Path
    variability_dir: str | Path
    num_hosts: int = 16
    gpus_per_host: int = 4
    locality: float = 1.7
    max_jobs: int | None = None
    horizon_s: float = 60 * 86_400.0
    samples: str = "runs"
    name: str = "pal-philly"

    def __post_init__(self) -> None:
        if self.num_hosts < 1 or self.gpus_per_host < 1:
            raise ConfigError(
                "num_hosts/gpus_per_host", (self.num_hosts, self.gpus_per_host), ">= 1 each"
            )
        if not (np.isfinite(self.locality) and self.locality >= 1.0):
            raise ConfigError("locality", self.locality, "a finite factor >= 1")
        if self.max_jobs is not None and self.max_jobs < 1:
            raise ConfigError("max_jobs", self.max_jobs, ">= 1 or None")
        if not (np.isfinite(self.horizon_s) and self.horizon_s > 0):
            raise ConfigError("horizon_s", self.horizon_s, "finite and > 0")
        if self.samples not in SAMPLE_MODES:
            raise ConfigError("samples", self.samples, f"one of {SAMPLE_MODES}")

    def topology(self) -> Topology:
        """GPUs grouped by host: levels ``("gpu", "node", "system")``."""
        n = self.num_hosts * self.gpus_per_host
        host = np.arange(n) // self.gpus_per_host
        return Topology.build(
            ("gpu", "node", "system"),
            host[:, None],
            _BANDWIDTH_GBPS,
            _LATENCY_S,
            (1.0, 1.0, float(self.locality)),
        )

    def rows(self) -> list[JobRow]:
        """The trace's jobs as rigid table rows (work = iterations)."""
        tr = read_philly_trace(self.trace)
        n = len(tr) if self.max_jobs is None else min(self.max_jobs, len(tr))
        capacity = self.num_hosts * self.gpus_per_host
        rows = []
        for i in range(n):
            model = str(tr.model[i])
            if model not in PAL_ITER_TIME_S:
                raise ConfigError(
                    f"trace job {int(tr.job_id[i])}.model",
                    model,
                    f"one of {sorted(PAL_ITER_TIME_S)}",
                )
            g = int(tr.num_gpus[i])
            if g > capacity:
                raise ConfigError(
                    f"trace job {int(tr.job_id[i])}.num_gpus",
                    g,
                    f"<= the cluster's {capacity} GPUs",
                )
            rows.append(
                JobRow(
                    name=f"job{int(tr.job_id[i]):03d}-{model}",
                    model=model,
                    app_class=AppClass.parse(pal_app_class(model)),
                    submit_s=float(tr.submit_s[i]),
                    min_nodes=g,
                    max_nodes=g,
                    work=float(tr.duration[i]),
                    r_up_s=0.0,
                    r_down_s=0.0,
                    startup_s=0.0,
                    curve_nodes=(0.0, float(g)),
                    curve_tput=(0.0, 1.0 / PAL_ITER_TIME_S[model]),
                )
            )
        return rows

    def __call__(self, seed: int = 0) -> Instance:
        """Build the instance; the per-GPU factors come from the ``"variability"`` stream."""
        vdir = Path(self.variability_dir)
        pools: dict[str, np.ndarray] = {}
        variability = {}
        for cls, fname in PAL_CLASS_FILES.items():
            if fname not in pools:
                pools[fname] = pal_slowdown_pool(vdir / fname, self.samples)
            variability[cls] = pools[fname]
        topo = self.topology()
        n = topo.num_nodes
        cl = build_cluster(
            stream(seed, "variability"),
            gpus_per_node=1,
            gpu_type_names=("V100",),
            gpu_type=np.zeros(n, dtype=int),
            topology=topo,
            variability=variability,
            profile_noise=0.0,
        )
        jobs = build_jobs(self.rows(), cl)
        supply = Supply.from_windows(
            np.arange(n), np.zeros(n), np.full(n, self.horizon_s), num_nodes=n
        )
        return Instance(
            self.name, cl, supply, jobs, costs=CostModel(), t_end=self.horizon_s, seed=seed
        ).validate()
