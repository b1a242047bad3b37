"""The supply-source protocol, and replay of a window table (shared by the replayed sources)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from mtgym.core.instance import Supply


class SupplySource(Protocol):
    """Anything that yields the idle windows of ``num_nodes`` nodes on [t0, t1)."""

    def generate(self, rng: np.random.Generator, num_nodes: int, t0: float, t1: float) -> Supply:
        """The windows (``rng`` is the "supply" stream; replayed sources ignore it).

        Args:
            rng: the "supply" stream of the instance's seed.
            num_nodes: nodes of the machine; windows use node indices 0..num_nodes-1.
            t0: span start, seconds on the instance's clock.
            t1: span end; windows are clipped to [t0, t1).

        Returns:
            The validated, sorted windows.
        """
        ...


def supply_from_windows(
    node: np.ndarray,
    start_s: np.ndarray,
    end_s: np.ndarray,
    end_known: np.ndarray | None = None,
    *,
    nodes: np.ndarray | None = None,
    t0: float = -np.inf,
    t1: float = np.inf,
) -> tuple[Supply, np.ndarray]:
    """Replay recorded windows, optionally for a node subset and a time span.

    Args:
        node, start_s, end_s, end_known: the windows (any order).
        nodes: original node indices to keep, in the order they get new indices 0..n-1
            (default: all nodes 0..max).
        t0, t1: clip windows to [t0, t1).

    Returns:
        The supply (node indices renumbered) and the original index of each new node.
        Windows of nodes not kept, or empty after clipping, are dropped; a kept node
        without a window is never idle.

    Raises:
        ConfigError: windows that overlap on one node (``Supply.from_windows``).
    """
    node = np.asarray(node, dtype=np.int64)
    if nodes is None:
        nodes = np.arange(int(node.max()) + 1 if node.size else 0)
    nodes = np.asarray(nodes, dtype=np.int64)
    remap = np.full(
        int(max(node.max() if node.size else 0, nodes.max() if nodes.size else 0)) + 1, -1
    )
    remap[nodes] = np.arange(nodes.size)
    new = remap[node]
    s = np.maximum(np.asarray(start_s, dtype=np.float64), t0)
    e = np.minimum(np.asarray(end_s, dtype=np.float64), t1)
    keep = (new >= 0) & (e > s)
    known = None if end_known is None else np.asarray(end_known, dtype=bool)[keep]
    return Supply.from_windows(new[keep], s[keep], e[keep], known, num_nodes=nodes.size), nodes
