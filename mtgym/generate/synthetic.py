"""``SyntheticGenerator``: a whole scenario from parameters (the default scenario is one).

Cluster: ``num_nodes`` nodes of ``gpus_per_node`` GPUs in consecutive topology groups
(``group_size``: node -> group -> system; or ``level_sizes`` for more levels, e.g. Polaris'
node -> rack -> dragonfly group -> system; the last group of a level is partial when its
size does not divide ``num_nodes``; or ``level_groups``: each node's group at each level,
from a node list), each first-level group of one GPU type,
per-device slowdowns from a ``VariabilitySpec``. Supply: any source with
``generate(rng, num_nodes, t0, t1)`` (synthetic, a replayed trace, an SWF log through EASY
backfilling, always idle). Workload: any source with ``rows(rng, prefix)`` (a ``JobMix``, a
job table) plus NAS/HPO ``Campaign``s. Everything is drawn from named streams of one seed.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import CostModel, Instance
from mtgym.core.rng import stream
from mtgym.core.topology import Topology
from mtgym.generate.cluster import build_cluster
from mtgym.generate.supply import SupplySource, SyntheticSupply
from mtgym.generate.workload import (
    Campaign,
    Declaration,
    JobMix,
    WorkloadSource,
    build_jobs,
    campaigns_table,
)
from mtgym.model.variability import VariabilitySpec


@dataclass(frozen=True)
class SyntheticGenerator:
    """See module docstring. Sizes are read from here by everything downstream.

    Attributes:
        name: the generator's and its instances' name.
        num_nodes: nodes of the machine.
        gpus_per_node: GPUs per node.
        group_size: nodes per group of a three-level topology (node -> group -> system).
        gpu_types: GPU type names (a parametric job's profile needs a rate for each).
        group_types: GPU type index of each first-level group, cycled: group g gets
            ``group_types[g % len(group_types)]``.
        level_names: every level's name, node first and system last (2 + the number of
            intermediate levels).
        bandwidth_gbps: ring bandwidth per level, GB/s (default: NVLink, HDR IB, tapered).
        latency_s: per-hop latency per level, seconds.
        locality_factor: PAL's lambda per level (None: 1 everywhere).
        level_sizes: nodes per group of each intermediate level, innermost first, each a
            multiple of the previous (None: ``(group_size,)``).
        level_groups: or each node's group id at each intermediate level (a node list;
            overrides the sizes): one tuple of ``num_nodes`` ids per level.
        variability: per-device slowdowns (None: identical devices).
        profile_noise: relative noise of the profiled per-node factors.
        supply: the idle-window source.
        horizon_s: the episode's ``t_end`` (it starts at 0), seconds.
        jobs: the workload source (independent jobs).
        campaigns: NAS/HPO campaigns added to the workload.
        declaration: how users misdeclare curves and costs.
        costs: how rescales and pre-emptions are charged.

    Raises:
        ConfigError: a size < 1, no GPU type, a group type out of range, a horizon <= 0,
            level sizes that do not nest, or a level name count that does not match.
    """

    name: str = "synthetic"
    num_nodes: int = 64
    gpus_per_node: int = 4
    group_size: int = 16
    gpu_types: Sequence[str] = ("A100", "V100")
    group_types: Sequence[int] = (0, 0, 1, 1)
    level_names: tuple[str, ...] = ("node", "group", "system")
    bandwidth_gbps: tuple[float, ...] = (150.0, 25.0, 12.5)
    latency_s: tuple[float, ...] = (1e-6, 2e-6, 5e-6)
    locality_factor: tuple[float, ...] | None = None
    level_sizes: tuple[int, ...] | None = None
    level_groups: tuple[tuple[int, ...], ...] | None = None
    variability: VariabilitySpec | None = field(default_factory=VariabilitySpec)
    profile_noise: float = 0.01
    supply: SupplySource = field(default_factory=SyntheticSupply)
    horizon_s: float = 6 * 3600.0
    jobs: WorkloadSource = field(default_factory=JobMix)
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
        if self.level_groups is not None:
            levels = len(self.level_groups)
            if any(len(g) != self.num_nodes for g in self.level_groups):
                raise ConfigError(
                    "level_groups",
                    sorted({len(g) for g in self.level_groups}),
                    f"one group id per node (num_nodes {self.num_nodes}) at every level",
                )
        else:
            sizes = self.sizes
            if min(sizes) < 1 or any(b % a for a, b in itertools.pairwise(sizes)):
                raise ConfigError(
                    "level_sizes", list(sizes), "positive sizes, each a multiple of the previous"
                )
            levels = len(sizes)
        if len(self.level_names) != levels + 2:
            raise ConfigError(
                "level_names", list(self.level_names), f"{levels + 2} names (node, ..., system)"
            )

    @property
    def sizes(self) -> tuple[int, ...]:
        """Nodes per group at each intermediate level."""
        return tuple(self.level_sizes) if self.level_sizes is not None else (self.group_size,)

    @functools.cached_property
    def _layout(self) -> tuple[Topology, np.ndarray]:
        """The topology and each node's GPU type: the same for every seed, so built once
        per generator (the topology's arrays are read-only).
        """
        if self.level_groups is not None:
            ids = np.asarray(self.level_groups, dtype=np.int64).T.reshape(self.num_nodes, -1)
        else:
            ids = np.stack([np.arange(self.num_nodes) // k for k in self.sizes], axis=1)
        topo = Topology.build(
            self.level_names, ids, self.bandwidth_gbps, self.latency_s, self.locality_factor
        )
        gtypes = np.asarray(self.group_types)[ids[:, 0] % len(self.group_types)]
        gtypes.flags.writeable = False
        return topo, gtypes

    def __call__(self, seed: int) -> Instance:
        """Build the instance for ``seed``.

        Each part draws from its own stream of ``seed``: ``"variability"`` (the devices),
        ``"supply"``, ``"arrivals"`` (the job mix), ``"campaign<i>"`` (campaign i) and
        ``"declarations"``; campaign i's trials are named after ``<kind><i>``.

        Args:
            seed: the instance seed.

        Returns:
            The validated instance on [0, ``horizon_s``).
        """
        topo, gtypes = self._layout
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
