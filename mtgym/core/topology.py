"""Topology levels and the *spread* of a node set.

Nodes are grouped in nested levels, innermost first. Level 0 is the node itself: a set whose
spread is 0 fits in one node and communicates over the intra-node links (NVLink). The last
level is the whole system (one group). Examples: Summit ``node -> cabinet -> row -> system``
(263 cabinets of 18 nodes in 8 rows); Polaris ``node -> chassis -> group -> system``
(dragonfly); PAL's model ``gpu -> node -> system`` where the allocation unit is one GPU.

The spread of a set S is the lowest level at which all of S lies in one group; its
bandwidth and latency price the ring all-reduce, and its locality factor (PAL's lambda,
1.7 by default across nodes in PAL's simulator) multiplies a table job's iteration time.

Groups need not be equal: a machine whose node count is not a multiple of its rack size has
a partial last rack, and any node list (node -> rack -> group) nests as long as each group
lies inside one group of the level above. Spread, bandwidth and locality depend only on
which groups a set shares, never on a group's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mtgym.core.errors import ConfigError


def _frozen(arr: np.ndarray) -> np.ndarray:
    """Mark ``arr`` read-only and return it (as ``mtgym.core.instance.frozen``)."""
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class Topology:
    """Nested groups of nodes with per-level link costs.

    Attributes:
        level_names: names, innermost first; ``level_names[0]`` is the node.
        coords: (num_nodes, num_levels) int32, the group id of each node at each level;
            ``coords[:, 0]`` is the node index and ``coords[:, -1]`` is all zeros.
        bandwidth_gbps: (num_levels,) ring bandwidth, GB/s, of a set whose spread is that level.
        latency_s: (num_levels,) per-hop latency, seconds.
        locality_factor: (num_levels,) multiplier (>= 1) on a table job's iteration time.
    """

    level_names: tuple[str, ...]
    coords: np.ndarray
    bandwidth_gbps: np.ndarray
    latency_s: np.ndarray
    locality_factor: np.ndarray

    @property
    def num_nodes(self) -> int:
        """Number of nodes."""
        return int(self.coords.shape[0])

    @property
    def num_levels(self) -> int:
        """Number of levels including the node and the system."""
        return len(self.level_names)

    @classmethod
    def build(
        cls,
        level_names: Sequence[str],
        group_ids: Sequence[Sequence[int]] | np.ndarray,
        bandwidth_gbps: Sequence[float],
        latency_s: Sequence[float],
        locality_factor: Sequence[float] | None = None,
    ) -> Topology:
        """Build a topology from the group ids of the intermediate levels.

        Args:
            level_names: all level names, innermost (node) first, outermost (system) last.
            group_ids: (num_nodes, num_levels - 2) group id of each node at each intermediate
                level; the node and system levels are added here. Groups must nest: two nodes
                in one group at level k are in one group at every level above k.
            bandwidth_gbps: one bandwidth per level (GB/s, > 0).
            latency_s: one latency per level (s, >= 0).
            locality_factor: one factor per level (>= 1); default all 1.

        Group ids need not be dense: each intermediate level is renumbered 0..G-1 in
        increasing order of the given ids.

        Raises:
            ConfigError: fewer than two levels, ``group_ids`` of the wrong width, a
                bandwidth that is not finite and > 0, a latency that is not finite and
                >= 0, a locality factor below 1, or groups that do not nest.
        """
        names = tuple(level_names)
        n_levels = len(names)
        if n_levels < 2:
            raise ConfigError("level_names", names, "at least the node and the system level")
        g = np.asarray(group_ids, dtype=np.int64)
        if g.ndim == 1:
            g = g[:, None]
        if g.shape[1] != n_levels - 2:
            raise ConfigError(
                "group_ids", g.shape, f"(num_nodes, {n_levels - 2}) for levels {names}"
            )
        n = g.shape[0]
        coords = np.empty((n, n_levels), dtype=np.int32)
        coords[:, 0] = np.arange(n)
        for k in range(g.shape[1]):
            # Renumber so group ids are dense 0..G-1, in increasing order of the given ids.
            _, inv = np.unique(g[:, k], return_inverse=True)
            coords[:, k + 1] = inv
        coords[:, -1] = 0
        for name, values, lo in (
            ("bandwidth_gbps", bandwidth_gbps, 0.0),
            ("latency_s", latency_s, 0.0),
        ):
            if len(values) != n_levels:
                raise ConfigError(name, list(values), f"one value per level {names}")
            if any(
                not np.isfinite(v) or v < lo or (name == "bandwidth_gbps" and v == 0)
                for v in values
            ):
                raise ConfigError(name, list(values), "finite, bandwidth > 0, latency >= 0")
        lf = [1.0] * n_levels if locality_factor is None else list(locality_factor)
        if len(lf) != n_levels or any(not np.isfinite(v) or v < 1.0 for v in lf):
            raise ConfigError("locality_factor", lf, f"one value >= 1 per level {names}")
        topo = cls(
            names,
            _frozen(coords),
            _frozen(np.asarray(bandwidth_gbps, dtype=np.float64)),
            _frozen(np.asarray(latency_s, dtype=np.float64)),
            _frozen(np.asarray(lf, dtype=np.float64)),
        )
        topo._check_nesting()
        return topo

    @classmethod
    def uniform(
        cls,
        num_nodes: int,
        group_size: int,
        *,
        bandwidth_gbps: tuple[float, float, float] = (150.0, 25.0, 12.5),
        latency_s: tuple[float, float, float] = (1e-6, 2e-6, 5e-6),
        locality_factor: tuple[float, float, float] | None = None,
        names: tuple[str, str, str] = ("node", "group", "system"),
    ) -> Topology:
        """Nodes in consecutive groups of ``group_size`` (node -> group -> system); the last
        group is partial when ``group_size`` does not divide ``num_nodes``.

        Args:
            num_nodes: Nodes, >= 1.
            group_size: Nodes per group, >= 1.
            bandwidth_gbps: Ring bandwidth (GB/s) within a node, a group, the system.
            latency_s: Per-hop latency (s) at the same three levels.
            locality_factor: Factors (>= 1) at the three levels; None: all 1.
            names: The three level names.

        Raises:
            ConfigError: ``num_nodes`` or ``group_size`` below 1, or a bad link value.
        """
        if num_nodes < 1 or group_size < 1:
            raise ConfigError("num_nodes/group_size", (num_nodes, group_size), ">= 1")
        groups = np.arange(num_nodes) // group_size
        return cls.build(names, groups[:, None], bandwidth_gbps, latency_s, locality_factor)

    def _check_nesting(self) -> None:
        """``ConfigError`` unless every group of each intermediate level lies inside one
        group of the level above (the first level that breaks it is named).
        """
        c = self.coords
        for k in range(1, self.num_levels - 1):
            # every group at level k must map to exactly one group at level k+1
            pairs = np.unique(c[:, k : k + 2], axis=0)
            if len(np.unique(pairs[:, 0])) != len(pairs):
                raise ConfigError(
                    "group_ids",
                    f"level {self.level_names[k]!r}",
                    f"groups that nest inside level {self.level_names[k + 1]!r}",
                )

    def spread(self, nodes: np.ndarray) -> int:
        """The lowest level at which all ``nodes`` share one group (0 for one node).

        Args:
            nodes: Node indices (any order; an empty set has spread 0).
        """
        nodes = np.asarray(nodes)
        if nodes.size <= 1:
            return 0
        sub = self.coords[nodes]
        same = sub.min(axis=0) == sub.max(axis=0)
        return int(np.argmax(same))

    def spreads_by_job(self, sorted_nodes: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Spread of many disjoint node sets at once.

        Args:
            sorted_nodes: node indices grouped so each set is contiguous.
            starts: the index in ``sorted_nodes`` where each set begins (as for ``reduceat``).

        Returns:
            (sets,) int8 spreads; empty when ``sorted_nodes`` is. Each set must be
            non-empty (``reduceat`` would read a neighbour's first node otherwise).
        """
        if sorted_nodes.size == 0:
            return np.zeros(0, dtype=np.int8)
        sub = self.coords[sorted_nodes]
        same = np.minimum.reduceat(sub, starts, axis=0) == np.maximum.reduceat(sub, starts, axis=0)
        return np.argmax(same, axis=1).astype(np.int8)
