"""Readers of the Summit idle-node trace (BFTrainer/Replayer): idle windows and node names.

All times are seconds since the trace start (2021-02-10 00:08:52, naive clock), the same clock
as ``submit_s`` of the BFTrainer workloads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym.readers._csv import (
    FIRST_DATA_ROW,
    Table,
    bools,
    check,
    floats,
    ints,
    read_table,
    readonly,
    strs,
    unique_check,
)

WINDOW_COLUMNS = ("node_name", "node_index", "start_s", "end_s", "censored")
NODE_COLUMNS = ("node_index", "node_name", "row", "cabinet", "node_in_cabinet")
SUMMIT_NAME_PATTERN = re.compile(r"([a-z])(\d{2})n(\d{2})")
SUMMIT_NAME_ALLOWED = "a Summit host name <row letter a-z><2 digits>n<2 digits>, e.g. 'a01n01'"


@dataclass(frozen=True)
class IdleWindowTable:
    """Idle windows [start_s, end_s) of Summit nodes, sorted by (start_s, node_index).

    Attributes:
        node_index: int32, the node's column in the source matrix (joins to NodeTable).
        node_name: str, the host name, e.g. ``c05n06``.
        start_s: float64, first second the node is idle.
        end_s: float64, first second it is busy again (trace end when censored).
        censored: bool, the node was still idle at the trace end.
    """

    node_index: np.ndarray
    node_name: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    censored: np.ndarray

    def __len__(self) -> int:
        return len(self.start_s)


@dataclass(frozen=True)
class NodeTable:
    """Summit nodes sorted by node_index (which is then 0..N-1).

    Attributes:
        node_index: int32, 0..N-1.
        node_name: str host name.
        row: str row letter (``a``..``h``).
        cabinet: str cabinet name, e.g. ``a01``.
        node_in_cabinet: int32, 1-based slot in the cabinet.
        row_id: int32 code of ``row`` in the sorted unique row names.
        cabinet_id: int32 code of ``cabinet`` in the sorted unique cabinet names.
    """

    node_index: np.ndarray
    node_name: np.ndarray
    row: np.ndarray
    cabinet: np.ndarray
    node_in_cabinet: np.ndarray
    row_id: np.ndarray
    cabinet_id: np.ndarray

    def __len__(self) -> int:
        return len(self.node_index)

    @property
    def row_names(self) -> np.ndarray:
        """Sorted unique row names (index with ``row_id``)."""
        return np.unique(self.row)

    @property
    def cabinet_names(self) -> np.ndarray:
        """Sorted unique cabinet names (index with ``cabinet_id``)."""
        return np.unique(self.cabinet)


def parse_summit_name(name: str) -> tuple[str, str, int]:
    """Split a Summit host name such as ``a01n01`` into (row, cabinet, node_in_cabinet).

    Args:
        name: the host name, lower case, e.g. ``"h37n18"``.

    Returns:
        (row letter, cabinet name, 1-based slot), e.g. ``("h", "h37", 18)``.

    Raises:
        ValueError: ``name`` does not match ``<row letter><2 digits>n<2 digits>``.
    """
    m = SUMMIT_NAME_PATTERN.fullmatch(name)
    if m is None:
        raise ValueError(f"node name {name!r} is invalid; allowed: {SUMMIT_NAME_ALLOWED}")
    return m.group(1), m.group(1) + m.group(2), int(m.group(3))


def read_idle_windows(path: str | Path) -> IdleWindowTable:
    """Read ``summit-idle-fragments.csv(.gz)``: one row per idle window of one node.

    Args:
        path: the CSV (columns ``WINDOW_COLUMNS``), plain or gzip; it may hold no window.

    Returns:
        The windows sorted by (start, node index).

    Raises:
        DataError: missing file or column, bad number, ``end_s <= start_s``, negative
            ``node_index``, ``censored`` not 0/1, one index with two names, or two
            overlapping windows of one node.
    """
    t = read_table(path, WINDOW_COLUMNS, min_rows=0)
    node_index = ints(t, "node_index")
    check(t, "node_index", node_index >= 0, "an integer >= 0")
    start = floats(t, "start_s")
    end = floats(t, "end_s")
    check(t, "end_s", end > start, "a number > start_s of the same row")
    censored = bools(t, "censored")
    name = strs(t, "node_name")
    _check_nodes(t, node_index, name, start, end)
    order = np.lexsort((node_index, start))
    return IdleWindowTable(
        node_index=readonly(node_index[order]),
        node_name=readonly(name[order]),
        start_s=readonly(start[order]),
        end_s=readonly(end[order]),
        censored=readonly(censored[order]),
    )


def _check_nodes(
    t: Table, node_index: np.ndarray, name: np.ndarray, start: np.ndarray, end: np.ndarray
) -> None:
    """One name per node index, and no two windows of one node overlap.

    Windows are half-open, so one may start where the previous one of its node ends.

    Args:
        t: the table read (for the errors' rows).
        node_index: (W,) node index of each window, in file order.
        name: (W,) host name of each window.
        start: (W,) window starts, seconds.
        end: (W,) window ends, seconds.

    Raises:
        DataError: naming the row of the later window (by start) of the first pair of
            one node's windows that disagree on its name or overlap.
    """
    o = np.lexsort((start, node_index))
    same = node_index[o][1:] == node_index[o][:-1]
    renamed = same & (name[o][1:] != name[o][:-1])
    if renamed.any():
        k = int(np.argmax(renamed))
        raise t.fail(
            "node_name",
            int(o[k + 1]),
            f"{name[o[k]]!r}, the name of node_index {node_index[o[k]]} on row "
            f"{o[k] + FIRST_DATA_ROW}",
        )
    overlap = same & (start[o][1:] < end[o][:-1])
    if overlap.any():
        k = int(np.argmax(overlap))
        a, b = int(o[k]), int(o[k + 1])
        raise t.fail(
            "start_s",
            b,
            f">= {end[a]:g}: node {name[a]} (index {node_index[a]}) has window "
            f"[{start[b]:g}, {end[b]:g}) overlapping its window [{start[a]:g}, {end[a]:g}) on "
            f"row {a + FIRST_DATA_ROW}; windows of one node must not overlap "
            "(half-open, touching is fine)",
        )


def read_summit_nodes(path: str | Path) -> NodeTable:
    """Read ``summit-nodes.csv``: one row per node, returned sorted by node_index.

    Args:
        path: the CSV (columns ``NODE_COLUMNS``), plain or gzip.

    Returns:
        The nodes by index, with dense row and cabinet codes (sorted names).

    Raises:
        DataError: missing file or column, bad number, node_index not a permutation of
            0..N-1, a duplicated or malformed name, or row/cabinet/slot disagreeing with it.
    """
    t = read_table(path, NODE_COLUMNS)
    node_index = ints(t, "node_index")
    n = t.n_rows
    check(t, "node_index", (node_index >= 0) & (node_index < n), f"an integer in [0, {n - 1}]")
    unique_check(t, "node_index", node_index)
    name = strs(t, "node_name")
    unique_check(t, "node_name", name)
    row = strs(t, "row")
    cabinet = strs(t, "cabinet")
    slot = ints(t, "node_in_cabinet")
    for i, s in enumerate(name.tolist()):
        try:
            parsed = parse_summit_name(s)
        except ValueError:
            raise t.fail("node_name", i, SUMMIT_NAME_ALLOWED) from None
        for field, got, want in zip(
            NODE_COLUMNS[2:], (row[i], cabinet[i], slot[i]), parsed, strict=True
        ):
            if got != want:
                raise t.fail(field, i, f"{want!r}, as in node_name {s!r}")
    o = np.argsort(node_index, kind="stable")
    row, cabinet = row[o], cabinet[o]
    row_id = np.unique(row, return_inverse=True)[1].astype(np.int32)
    cabinet_id = np.unique(cabinet, return_inverse=True)[1].astype(np.int32)
    return NodeTable(
        node_index=readonly(node_index[o]),
        node_name=readonly(name[o]),
        row=readonly(row),
        cabinet=readonly(cabinet),
        node_in_cabinet=readonly(slot[o]),
        row_id=readonly(row_id),
        cabinet_id=readonly(cabinet_id),
    )
