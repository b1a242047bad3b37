"""Reader of a node list: each node's group at every topology level, as machines publish it.

A real machine's topology comes as a list of hosts with their rack (cabinet, chassis) and
group (row, dragonfly group), not as equal group sizes: racks may be partial, rows may hold
different numbers of cabinets (Summit's row h has 30 cabinets, the others 32-37). The file
is a CSV with one row per node, in node-index order, and one column per topology level
between the node and the system, named as the level, holding the node's group label at
that level (any text: ``c05``, ``row-a``, ``7``). Other columns are ignored, so
``summit-nodes.csv`` (columns ``cabinet`` and ``row``) is a node list as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym.core.errors import DataError
from mtgym.readers._csv import FIRST_DATA_ROW, read_table, readonly, strs


@dataclass(frozen=True)
class NodeList:
    """Each node's group at every intermediate level.

    Attributes:
        levels: the level names (columns read), innermost first.
        labels: (num_nodes, num_levels) str, the group labels as written.
        group_ids: (num_nodes, num_levels) int32, dense group ids per level in order of
            first appearance (what ``Topology.build`` takes).
    """

    levels: tuple[str, ...]
    labels: np.ndarray
    group_ids: np.ndarray

    @property
    def num_nodes(self) -> int:
        """Number of nodes (rows)."""
        return int(self.group_ids.shape[0])


def read_node_list(path: str | Path, levels: Sequence[str]) -> NodeList:
    """Read a node list with one column per level of ``levels`` (innermost first).

    Args:
        path: the CSV, plain or gzip-compressed; one row per node in node-index order.
        levels: the intermediate levels to read (the node and system levels excluded),
            innermost first, e.g. ``("cabinet", "row")``.

    Returns:
        The labels and dense group ids, one column per level.

    Raises:
        DataError: missing file or column, an empty label, or groups that do not nest (a
            group of one level split across two groups of the next level).
    """
    names = tuple(levels)
    t = read_table(path, names)
    n = t.n_rows
    cols = [strs(t, name) for name in names]
    labels = np.stack(cols, axis=1) if cols else np.empty((n, 0), dtype=str)
    ids = np.empty((n, len(names)), dtype=np.int32)
    for k in range(len(names)):
        _, first, inv = np.unique(labels[:, k], return_index=True, return_inverse=True)
        # dense ids in order of first appearance (so the file's order names the groups)
        ids[:, k] = np.argsort(np.argsort(first))[inv]
    for k in range(len(names) - 1):
        inner, outer = ids[:, k], ids[:, k + 1]
        parent = np.full(int(inner.max(initial=-1)) + 1, -1, dtype=np.int64)
        parent[inner] = outer  # the last write wins; a mismatch below shows the split
        bad = np.flatnonzero(parent[inner] != outer)
        if bad.size:
            i = int(bad[0])
            grp = labels[i, k]
            others = sorted(set(labels[inner == inner[i], k + 1].tolist()))
            raise DataError(
                Path(path),
                names[k],
                grp,
                f"each {names[k]} inside one {names[k + 1]} (groups nest); "
                f"{names[k]} {grp!r} is in {names[k + 1]}s {', '.join(map(repr, others))}",
                row=i + FIRST_DATA_ROW,
            )
    return NodeList(names, readonly(labels), readonly(ids))
