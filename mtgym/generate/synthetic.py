"""``SyntheticGenerator``: a whole scenario from parameters (the default scenario is one).

Cluster: ``num_nodes`` nodes of ``gpus_per_node`` GPUs in consecutive topology groups of
``group_size`` (node -> group -> system), each group of one GPU type, per-device slowdowns
from a ``VariabilitySpec``. Supply: ``SyntheticSupply``. Workload: a ``JobMix`` plus NAS/HPO
``Campaign``s. Everything is drawn from named streams of one seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mtgym.errors import ConfigError
from mtgym.generate.cluster import build_cluster
from mtgym.generate.instance import CostModel, Instance
from mtgym.generate.supply import SyntheticSupply
from mtgym.generate.workload import Campaign, Declaration, JobMix, build_jobs, campaigns_table
from mtgym.model.topology import Topology
from mtgym.model.variability import VariabilitySpec
from mtgym.rng import stream


@dataclass(frozen=True)
class SyntheticGenerator:
    """See module docstring. Sizes are read from here by everything downstream."""

    name: str = "synthetic"
    num_nodes: int = 64
    gpus_per_node: int = 4
    group_size: int = 16
    gpu_types: Sequence[str] = ("A100", "V100")
    group_types: Sequence[int] = (0, 0, 1, 1)  # type of each group, cycled over the groups
    level_names: tuple[str, str, str] = ("node", "group", "system")
    bandwidth_gbps: tuple[float, float, float] = (150.0, 25.0, 12.5)  # NVLink, HDR IB, tapered
    latency_s: tuple[float, float, float] = (1e-6, 2e-6, 5e-6)
    locality_factor: tuple[float, float, float] | None = None
    variability: VariabilitySpec | None = field(default_factory=VariabilitySpec)
    profile_noise: float = 0.01
    supply: SyntheticSupply = field(default_factory=SyntheticSupply)
    horizon_s: float = 6 * 3600.0
    jobs: JobMix = field(default_factory=JobMix)
    campaigns: Sequence[Campaign] = ()
    declaration: Declaration = field(default_factory=Declaration)
    costs: CostModel = field(default_factory=CostModel)

    def __post_init__(self) -> None:
        if self.num_nodes < 1 or self.group_size < 1:
            raise ConfigError("num_nodes/group_size", (self.num_nodes, self.group_size), ">= 1")
        if not self.gpu_types or not self.group_types:
            raise ConfigError(
                "gpu_types/group_types", (self.gpu_types, self.group_types), "non-empty"
            )
        if min(self.group_types) < 0 or max(self.group_types) >= len(self.gpu_types):
            raise ConfigError(
                "group_types", list(self.group_types), f"indices 0..{len(self.gpu_types) - 1}"
            )
        if not (self.horizon_s > 0):
            raise ConfigError("horizon_s", self.horizon_s, "> 0")

    def __call__(self, seed: int) -> Instance:
        """Build the instance for ``seed``."""
        topo = Topology.uniform(
            self.num_nodes,
            self.group_size,
            bandwidth_gbps=self.bandwidth_gbps,
            latency_s=self.latency_s,
            locality_factor=self.locality_factor,
            names=self.level_names,
        )
        groups = np.arange(self.num_nodes) // self.group_size
        gtypes = np.asarray(self.group_types)[groups % len(self.group_types)]
        cluster = build_cluster(
            stream(seed, "variability"),
            gpus_per_node=self.gpus_per_node,
            gpu_type_names=self.gpu_types,
            gpu_type=gtypes,
            topology=topo,
            variability=self.variability,
            profile_noise=self.profile_noise,
        )
        supply = self.supply.generate(stream(seed, "supply"), self.num_nodes, 0.0, self.horizon_s)
        rows = self.jobs.rows(stream(seed, "arrivals"), prefix="job")
        names = []
        for c_id, camp in enumerate(self.campaigns):
            name = f"{camp.kind}{c_id}"
            names.append(name)
            rows += camp.rows(stream(seed, f"campaign{c_id}"), c_id, name)
        jobs = build_jobs(rows, cluster, stream(seed, "declarations"), self.declaration)
        return Instance(
            name=self.name,
            cluster=cluster,
            supply=supply,
            jobs=jobs,
            campaigns=campaigns_table(self.campaigns, names),
            costs=self.costs,
            t_start=0.0,
            t_end=self.horizon_s,
            seed=seed,
        ).validate()
