"""A dedicated cluster: every node idle for the whole episode."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtgym.core.instance import Supply


@dataclass(frozen=True)
class AlwaysIdle:
    """Every node idle for the whole episode (a dedicated cluster, as in PAL's experiments)."""

    def generate(self, rng: np.random.Generator, num_nodes: int, t0: float, t1: float) -> Supply:
        """One window per node, [t0, t1)."""
        n = np.arange(num_nodes)
        return Supply.from_windows(
            n, np.full(num_nodes, t0), np.full(num_nodes, t1), num_nodes=num_nodes
        )
