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
  of those values (blox-pal commit ``efb093f``). The profile PAL places on is the measured
  value itself (``profile_noise=0``).
- **Which draw** (``draw``): ``"artifact"`` is blox-pal's own draw, rebuilt exactly
  (``mtgym.readers.pal_artifact_draw``: Python's ``random`` seeded 42, GPU by GPU, class by
  class); it ignores the instance seed, so every seed gives the artifact's cluster.
  ``"stream"`` draws from the seed's ``"variability"`` stream: another cluster per seed, for
  the spread over draws.
- **Host-count-dependent locality (an extension, for sensitivity runs):** with
  ``locality_growth`` g > 0 the hosts are grouped in aligned blocks of 2, 4, 8, ... hosts and
  a job whose GPUs lie within a block of H hosts (but not within a smaller one) runs
  ``1 + (lambda - 1) (1 + g log2(H / 2))`` times slower; g = 0 is PAL's constant lambda.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Cluster, CostModel, Instance, frozen
from mtgym.core.rng import stream
from mtgym.core.topology import Topology
from mtgym.core.types import AppClass
from mtgym.generate.cluster import build_cluster
from mtgym.generate.supply.always_idle import always_idle
from mtgym.generate.workload import JobRow, build_jobs
from mtgym.readers import PAL_ITER_TIME_S, pal_app_class, read_philly_trace
from mtgym.readers.variability import (
    PAL_ARTIFACT_SEED,
    POOL_MODES,
    pal_artifact_draw,
    pal_slowdown_pool,
)

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

SAMPLE_MODES = POOL_MODES
#: How the per-GPU factors are drawn (module docstring).
DRAWS = ("artifact", "stream")

__all__ = [
    "DRAWS",
    "PAL_CLASS_FILES",
    "SAMPLE_MODES",
    "PALPhilly",
    "PALSynergy",
    "host_topology",
    "pal_cluster",
    "pal_slowdown_pool",
]


def host_topology(num_hosts: int, gpus_per_host: int, locality: float, growth: float = 0.0):
    """GPUs grouped by host; cross-host factor lambda, or host-count-dependent (``growth``).

    ``growth == 0``: levels ``("gpu", "node", "system")`` with factors ``(1, 1, lambda)``,
    PAL's model. ``growth > 0``: levels ``gpu, node, hosts2, hosts4, ..., system`` (aligned
    blocks of 2, 4, ... hosts) with factor ``1 + (lambda - 1) (1 + growth log2(H / 2))`` for
    a block of H hosts (the system counts as one block of all hosts). With two hosts or
    fewer there is no block between the host and the system: PAL's model whatever
    ``growth``.

    Args:
        num_hosts: hosts of the machine.
        gpus_per_host: GPUs per host (the allocation unit is one GPU).
        locality: PAL's lambda, >= 1.
        growth: how fast the penalty grows with the hosts spanned (0 = PAL's constant).

    Returns:
        The topology of ``num_hosts x gpus_per_host`` one-GPU units.

    Raises:
        ConfigError: ``growth`` negative or not finite.
    """
    if not (np.isfinite(growth) and growth >= 0):
        raise ConfigError("locality_growth", growth, "a finite value >= 0")
    n = num_hosts * gpus_per_host
    host = np.arange(n) // gpus_per_host
    if growth == 0 or num_hosts <= 2:
        return Topology.build(
            ("gpu", "node", "system"), host[:, None], _BANDWIDTH_GBPS, _LATENCY_S,
            (1.0, 1.0, float(locality)),
        )  # fmt: skip
    sizes = [2**k for k in range(1, 64) if 2**k < num_hosts]
    groups = np.stack([host] + [host // h for h in sizes], axis=1)
    names = ("gpu", "node", *(f"hosts{h}" for h in sizes), "system")
    factor = [1.0, 1.0] + [
        1.0 + (locality - 1.0) * (1.0 + growth * np.log2(h / 2.0)) for h in (*sizes, num_hosts)
    ]
    bw = (_BANDWIDTH_GBPS[0], _BANDWIDTH_GBPS[1], *[_BANDWIDTH_GBPS[2]] * (len(names) - 2))
    lat = (_LATENCY_S[0], _LATENCY_S[1], *[_LATENCY_S[2]] * (len(names) - 2))
    return Topology.build(names, groups, bw, lat, factor)


def pal_cluster(
    topo: Topology,
    variability_dir: str | Path,
    *,
    draw: str,
    seed: int,
    samples: str = "runs",
    classes: dict[AppClass, str] | None = None,
) -> Cluster:
    """One-GPU units with PAL's per-class factors (``draw``: module docstring).

    ``classes`` maps each class to its file under ``variability_dir`` (default:
    ``PAL_CLASS_FILES``, in the artifact's class order A, B, C, D).

    Args:
        topo: the units' topology (``host_topology``); one unit per node.
        variability_dir: the folder of the class files.
        draw: ``"artifact"`` or ``"stream"``.
        seed: the instance seed (its ``"variability"`` stream; unused by ``"artifact"``).
        samples: the pool each file gives (``pal_slowdown_pool``: ``"runs"`` or
            ``"gpu-max"``).
        classes: class -> file name; a class not listed keeps factor 1 (``"artifact"``
            draws the listed classes in class order).

    Returns:
        A cluster of single-V100 nodes whose true and profiled factors are the draw.

    Raises:
        ConfigError: an unknown ``draw`` or ``samples``, or an empty pool.
        DataError: a class file missing or malformed.
    """
    if draw not in DRAWS:
        raise ConfigError("draw", draw, f"one of {DRAWS}")
    files = PAL_CLASS_FILES if classes is None else classes
    vdir = Path(variability_dir)
    cache: dict[str, np.ndarray] = {}
    pools = {}
    for cls, fname in files.items():
        if fname not in cache:
            cache[fname] = pal_slowdown_pool(vdir / fname, samples)
        pools[cls] = cache[fname]
    n = topo.num_nodes
    cl = build_cluster(
        stream(seed, "variability"),
        gpus_per_node=1,
        gpu_type_names=("V100",),
        gpu_type=np.zeros(n, dtype=int),
        topology=topo,
        variability=pools if draw == "stream" else None,
        profile_noise=0.0,
    )
    if draw == "stream":
        return cl
    sf = np.ones((n, len(AppClass)))
    order = sorted(pools)  # A, B, C, D: the artifact's profiles.json order
    sf[:, [int(c) for c in order]] = pal_artifact_draw(
        [pools[c] for c in order], n, PAL_ARTIFACT_SEED
    )
    out = dataclasses.replace(
        cl,
        device_slowdown=frozen(sf[:, None, :].copy()),
        slowdown=frozen(sf.copy()),
        profiled_slowdown=frozen(sf.copy()),
    )
    out.validate()
    return out


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
        draw: ``"stream"`` (the seed's stream) or ``"artifact"`` (blox-pal's own draw).
        locality_growth: 0 = PAL's constant lambda; > 0 = host-count-dependent penalty.
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
    draw: str = "stream"
    locality_growth: float = 0.0
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
        if self.draw not in DRAWS:
            raise ConfigError("draw", self.draw, f"one of {DRAWS}")
        self.topology()  # validates locality_growth

    def topology(self) -> Topology:
        """GPUs grouped by host (``host_topology``)."""
        return host_topology(
            self.num_hosts, self.gpus_per_host, self.locality, self.locality_growth
        )

    def rows(self) -> list[JobRow]:
        """The trace's jobs as rigid table rows (work = iterations).

        Returns:
            The first ``max_jobs`` jobs in file order, named ``job<id>-<model>``, each with
            a flat curve of ``1 / PAL_ITER_TIME_S[model]`` iterations/s at its demand.

        Raises:
            ConfigError: a model PAL has no iteration time for, or a demand above the
                cluster's GPUs.
        """
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
        """Build the instance; the per-GPU factors come from ``draw``.

        Args:
            seed: the instance seed (only the ``"stream"`` draw uses it).

        Returns:
            The validated instance on [0, ``horizon_s``), every GPU idle throughout.
        """
        topo = self.topology()
        cl = pal_cluster(
            topo, self.variability_dir, draw=self.draw, seed=seed, samples=self.samples
        )
        jobs = build_jobs(self.rows(), cl)
        supply = always_idle(topo.num_nodes, 0.0, self.horizon_s)
        return Instance(
            self.name, cl, supply, jobs, costs=CostModel(), t_end=self.horizon_s, seed=seed
        ).validate()


#: Gavel's job-duration distribution, as PAL's Synergy simulator uses it (docs/papers.md §3.6):
#: with probability 0.8, 10^U(1.5, 3) minutes, else 10^U(3, 4) minutes.
SYNERGY_SHORT_P = 0.8
SYNERGY_SHORT_LOG10_MIN = (1.5, 3.0)
SYNERGY_LONG_LOG10_MIN = (3.0, 4.0)
#: Largest GPU demand of a Synergy job.
SYNERGY_MAX_GPUS = 16


def philly_demands(traces: list[str | Path], max_gpus: int = SYNERGY_MAX_GPUS) -> np.ndarray:
    """GPU demands (<= ``max_gpus``) of the given Philly-derived traces, pooled in file order.

    The Synergy experiment draws jobs from Microsoft's Philly log (``cluster_job_log``),
    which is not public here; these Sia-Philly traces are the Philly demands we have.

    Args:
        traces: paths of ``workload-<k>.csv`` files.
        max_gpus: the largest demand kept.

    Returns:
        1-D int array of the kept demands (1..``max_gpus``), trace by trace.

    Raises:
        ConfigError: no job of 1..``max_gpus`` GPUs in the traces.
    """
    g = np.concatenate([np.asarray(read_philly_trace(t).num_gpus, dtype=int) for t in traces])
    g = g[(g >= 1) & (g <= max_gpus)]
    if g.size == 0:
        raise ConfigError("traces", [str(t) for t in traces], f"jobs of 1-{max_gpus} GPUs")
    return g


@dataclass(frozen=True)
class PALSynergy:
    """PAL's Synergy experiment (paper §V.C): 64 hosts x 4 GPUs, Poisson arrivals.

    What is known (docs/papers.md §3.6): 256 GPUs; FIFO, LAS, SRTF; 8-14 jobs/h; Philly demands up
    to 16 GPUs; Gavel durations (``SYNERGY_*``); iteration time 1 s, so ``work`` = duration
    in seconds, as iterations; every job class A (the artifact assigns no class on this
    path). **Assumed** (not recoverable): the demands are resampled from ``demands`` (the
    Sia-Philly traces' demands of <= 16 GPUs), ``num_jobs`` jobs are generated, and the
    first arrival is at t = 0. Factors are drawn as in ``PALPhilly`` (``draw``); no restart
    cost.

    Attributes:
        demands: the pool of GPU demands to resample (``philly_demands``).
        variability_dir: path of ``gpu-variability/sim``.
        jobs_per_hour: the Poisson arrival rate.
        num_jobs: jobs generated.
        num_hosts: hosts (64).
        gpus_per_host: GPUs per host (4).
        locality: lambda (1.7).
        draw: ``"artifact"`` or ``"stream"``.
        horizon_s: ``t_end``.
        name: the generator's name.
    """

    demands: tuple[int, ...]
    variability_dir: str | Path
    jobs_per_hour: float = 10.0
    num_jobs: int = 200
    num_hosts: int = 64
    gpus_per_host: int = 4
    locality: float = 1.7
    draw: str = "artifact"
    horizon_s: float = 120 * 86_400.0
    name: str = "pal-synergy"

    def __post_init__(self) -> None:
        if not (np.isfinite(self.jobs_per_hour) and self.jobs_per_hour > 0):
            raise ConfigError("jobs_per_hour", self.jobs_per_hour, "finite and > 0")
        if self.num_jobs < 1:
            raise ConfigError("num_jobs", self.num_jobs, ">= 1")
        d = np.asarray(self.demands)
        cap = self.num_hosts * self.gpus_per_host
        if d.size == 0 or np.any(d < 1) or np.any(d > cap):
            raise ConfigError("demands", self.demands[:8], f"non-empty, each in 1..{cap}")
        if self.draw not in DRAWS:
            raise ConfigError("draw", self.draw, f"one of {DRAWS}")

    def rows(self, seed: int) -> list[JobRow]:
        """The jobs of ``seed`` (the ``"workload"`` stream): arrivals, demands, durations.

        Args:
            seed: the instance seed.

        Returns:
            ``num_jobs`` rigid rows (one iteration/s, so work = duration in seconds), the
            first submitted at t = 0.
        """
        rng = stream(seed, "workload")
        n = self.num_jobs
        submit = np.cumsum(rng.exponential(3600.0 / self.jobs_per_hour, size=n))
        submit -= submit[0]
        g = np.asarray(self.demands)[rng.integers(0, len(self.demands), size=n)]
        short = rng.random(n) < SYNERGY_SHORT_P
        lo = np.where(short, SYNERGY_SHORT_LOG10_MIN[0], SYNERGY_LONG_LOG10_MIN[0])
        hi = np.where(short, SYNERGY_SHORT_LOG10_MIN[1], SYNERGY_LONG_LOG10_MIN[1])
        minutes = 10.0 ** rng.uniform(lo, hi)
        return [
            JobRow(
                name=f"job{i:04d}",
                model="synergy",
                app_class=AppClass.A,
                submit_s=float(submit[i]),
                min_nodes=int(g[i]),
                max_nodes=int(g[i]),
                work=float(60.0 * minutes[i]),
                r_up_s=0.0,
                r_down_s=0.0,
                startup_s=0.0,
                curve_nodes=(0.0, float(g[i])),
                curve_tput=(0.0, 1.0),
            )
            for i in range(n)
        ]

    def __call__(self, seed: int = 0) -> Instance:
        """Build the instance of ``seed`` (jobs from its ``"workload"`` stream).

        Args:
            seed: the instance seed; the devices come from ``draw`` (``"artifact"``
                ignores it).

        Returns:
            The validated instance on [0, ``horizon_s``), every GPU idle throughout.
        """
        topo = host_topology(self.num_hosts, self.gpus_per_host, self.locality)
        cl = pal_cluster(topo, self.variability_dir, draw=self.draw, seed=seed)
        jobs = build_jobs(self.rows(seed), cl)
        supply = always_idle(topo.num_nodes, 0.0, self.horizon_s)
        return Instance(
            self.name, cl, supply, jobs, costs=CostModel(), t_end=self.horizon_s, seed=seed
        ).validate()
