"""``DefaultFamily``: the default scenario randomised per seed (the benchmark's train split).

An agent judged on other machines must not learn one machine. Each seed draws its own
variant of the default scenario (``mtgym.generate.default``) from the stream ``"family"``:

- **node count**: ``num_nodes`` nodes of 4 GPUs, fixed per generator because an env's
  spaces are fixed (a Gymnasium env keeps its observation shape): training mixes sizes over
  its vector env's ranks (``mtgym train --scenario default-family --num-nodes 32 64 ...``
  gives rank i the i-th size);
- **topology depth**: node -> group -> system (group of 8, 16 or 32 nodes), or node -> rack ->
  group -> system (racks of 4 or 8 nodes, 2 or 4 racks a group), the bandwidth stepping down
  at each level; only group sizes that divide the node count are drawn (one group if none);
- **GPU mix**: 1 to 3 of H100, A100 and V100, laid over the first-level groups in a random
  repeating pattern;
- **job mix**: 2 to 6 of the catalogue's models with random weights, maximum node counts
  from one of three ranges, work and arrival rate scaled to the node count and jittered;
  an HPO or NAS campaign with probability 1/2;
- **supply**: idle fraction 0.15-0.5, correlated drains at 0.5-2 per hour sized with the
  machine.

The variant is then built by ``SyntheticGenerator`` with the same seed, so a seed gives the
same instance bit for bit. Agents train on it with seeds >= 2**30 (``mtgym train`` offsets
its seeds); ``mtgym.benchmark`` keeps the test split (other presets, other seeds) apart.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Instance
from mtgym.core.rng import stream
from mtgym.generate.default import DEFAULT_CAMPAIGN
from mtgym.generate.supply import SyntheticSupply
from mtgym.generate.synthetic import SyntheticGenerator
from mtgym.generate.workload import Campaign, JobMix

GPU_TYPES = ("H100", "A100", "V100")
MODELS = ("resnet50", "resnet18", "transformer", "lm", "recommendation", "cyclegan")
MAX_NODE_RANGES = ((2, 4, 8), (4, 8, 16), (8, 16, 32))
HORIZON_S = 6 * 3600.0


@dataclass(frozen=True)
class DefaultFamily:
    """The default scenario randomised per seed (module docstring).

    Attributes:
        name: the generator's name, given to every variant and instance.
        num_nodes: nodes of every variant (fixed, so every instance has the env's shapes).

    Raises:
        ConfigError: ``num_nodes`` < 1.
    """

    name: str = "default-family"
    num_nodes: int = 64

    def __post_init__(self) -> None:
        if self.num_nodes < 1:
            raise ConfigError("num_nodes", self.num_nodes, ">= 1")

    def variant(self, seed: int) -> SyntheticGenerator:
        """The scenario that ``seed`` plays (drawn from the stream ``"family"``).

        Args:
            seed: the instance seed; the variant's own draws use only its ``"family"``
                stream, so they never shift the instance's.
        """
        rng = stream(seed, "family")
        n = self.num_nodes
        shapes = [(r, r * k) for r in (4, 8) for k in (2, 4) if n % (r * k) == 0]
        groups = [g for g in (8, 16, 32) if n % g == 0] or [n]
        four_levels = bool(rng.random() < 0.5) and bool(shapes)
        if four_levels:
            rack, group = shapes[int(rng.integers(len(shapes)))]
            sizes: tuple[int, ...] = (rack, group)
            names: tuple[str, ...] = ("node", "rack", "group", "system")
            bandwidth: tuple[float, ...] = (150.0, 50.0, 25.0, 12.5)
            latency: tuple[float, ...] = (1e-6, 1.5e-6, 2e-6, 5e-6)
        else:
            group = int(groups[int(rng.integers(len(groups)))])
            sizes, names = (group,), ("node", "group", "system")
            bandwidth, latency = (150.0, 25.0, 12.5), (1e-6, 2e-6, 5e-6)
        k = int(rng.integers(1, len(GPU_TYPES) + 1))
        types = tuple(str(t) for t in rng.choice(GPU_TYPES, size=k, replace=False))
        pattern = np.concatenate([np.arange(k), rng.integers(0, k, size=int(rng.integers(0, 3)))])
        rng.shuffle(pattern)
        scale = n / 64.0
        m = int(rng.integers(2, len(MODELS) + 1))
        models = rng.choice(MODELS, size=m, replace=False)
        weights = {
            str(x): float(w) for x, w in zip(models, rng.integers(1, 4, size=m), strict=True)
        }
        num_jobs = max(4, round(22 * scale * rng.uniform(0.6, 1.5)))
        work_lo = float(rng.uniform(0.3, 0.8))
        jobs = JobMix(
            num_jobs=num_jobs,
            arrival_rate_per_h=num_jobs / float(rng.uniform(2.0, 4.0)),
            models=weights,
            max_nodes=MAX_NODE_RANGES[int(rng.integers(len(MAX_NODE_RANGES)))],
            work_hours=(work_lo, work_lo * float(rng.uniform(2.0, 4.0))),
            work_ref_nodes=4,
        )
        campaigns: tuple[Campaign, ...] = ()
        if rng.random() < 0.5:
            campaigns = (
                replace(
                    DEFAULT_CAMPAIGN,
                    kind=str(rng.choice(("hpo", "nas"))),
                    model=str(rng.choice(("resnet18", "resnet50", "transformer"))),
                    num_trials=int(rng.choice((8, 16))),
                    start_s=float(rng.uniform(0.0, 2 * 3600.0)),
                ),
            )
        supply = SyntheticSupply(
            idle_fraction=float(rng.uniform(0.15, 0.5)),
            drains_per_hour=float(rng.uniform(0.5, 2.0)),
            drain_nodes_median=6.0 * max(scale, 0.5),
        )
        return SyntheticGenerator(
            name=self.name,
            num_nodes=n,
            gpus_per_node=4,
            group_size=group,
            gpu_types=types,
            group_types=tuple(int(x) for x in pattern),
            level_names=names,
            bandwidth_gbps=bandwidth,
            latency_s=latency,
            level_sizes=sizes if four_levels else None,
            supply=supply,
            horizon_s=HORIZON_S,
            jobs=jobs,
            campaigns=campaigns,
        )

    def __call__(self, seed: int) -> Instance:
        """Build the instance for ``seed``: its variant, built with the same seed."""
        return self.variant(seed)(seed)
