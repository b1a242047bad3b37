"""Reader of the per-GPU performance-variability measurements of blox-pal (PAL).

Three layouts are detected by their columns:

* ``PerfVar_class<X>`` columns (``32gpu-variability.csv``): ready-made slowdown factors,
  one class per column, kept as given; the node is ``Node_ID``.
* ``norm_perf`` (``ls6/``): per-GPU median of ``norm_perf``, divided by its median over GPUs.
* ``perf`` and ``uuid`` (``sim/``, ``frontera/``): per-GPU median of ``perf`` (a time, so
  higher = slower), divided by the median over GPUs; rows with ``warmup`` True are dropped.

Only the columns used are parsed (``train_time`` of bert-longhorn holds text).
The result is normalised so the median GPU is 1.0. blox-pal (and the data README) divide
by the median over *rows* instead, so their per-GPU quantiles equal these times the README's
per-GPU p50 (e.g. 1.0024 for resnet-longhorn).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtgym.core.errors import ConfigError, DataError
from mtgym.readers._csv import (
    FIRST_DATA_ROW,
    Table,
    bools,
    check,
    floats,
    read_table,
    readonly,
    require,
    strs,
    unique_check,
)

CLASS_PATTERN = re.compile(r"PerfVar_class(\w+)")
UNKNOWN = "-1"
SITE_TOKENS = frozenset({"agg", "longhorn", "frontera", "ls6"})
_OPTIONAL = (
    "GPU_UUID", "Node_ID", "norm_perf", "perf", "uuid", "warmup", "cabinet", "node", "exp",
    "model",
)  # fmt: skip


@dataclass(frozen=True)
class GpuVariability:
    """Per-GPU slowdown factors of one measurement file.

    Attributes:
        source: File name the values come from.
        classes: Workload classes, one column of ``slowdown`` each.
        gpu_id: str (G,), the GPU's NVIDIA UUID or its ``cabinet-node-device`` string.
        node_id: str (G,), the host of the GPU: ``cabinet-node`` (node number without
            leading zeros, so ``c005-004`` reads ``c005-4``), or ``Node_ID`` for the 32-GPU
            table; ``unknown:<gpu_id>`` when the file never names its location (``-1``).
        slowdown: float64 (G, len(classes)), > 1 = slower than the median GPU (1.0).
        n_runs: int32 (G,), measurements (rows) behind each GPU's value; 1 for the
            ready-made table.
    """

    source: str
    classes: tuple[str, ...]
    gpu_id: np.ndarray
    node_id: np.ndarray
    slowdown: np.ndarray
    n_runs: np.ndarray

    def __len__(self) -> int:
        return len(self.gpu_id)


def slowdown_samples(var: GpuVariability, cls: str) -> np.ndarray:
    """Per-GPU slowdown factors of class ``cls`` (read-only, shape (G,)).

    Args:
        var: a file read by ``read_variability``.
        cls: one of ``var.classes``: ``"A"``..``"D"`` for the 32-GPU table, else the
            workload name (e.g. ``"resnet"``).

    Raises:
        DataError: ``cls`` is not one of ``var.classes``.
    """
    if cls not in var.classes:
        raise DataError(var.source, "class", cls, f"one of {list(var.classes)}")
    return var.slowdown[:, var.classes.index(cls)]


def read_variability(path: str | Path) -> GpuVariability:
    """Read one blox-pal variability file (layout detected from its columns).

    Args:
        path: the CSV, plain or gzip-compressed.

    Returns:
        One row per GPU: by file order for the ready-made table, by sorted UUID for the
        per-run layouts.

    Raises:
        DataError: missing file, no known layout, a missing column, a bad or non-positive
            number, or a GPU listed on two different nodes.
    """
    t = read_table(path, (), _OPTIONAL, keep=lambda h: CLASS_PATTERN.fullmatch(h) is not None)
    classes = {c: m.group(1) for c in t.columns if (m := CLASS_PATTERN.fullmatch(c))}
    if classes:
        return _ready_made(t, classes)
    if t.has("norm_perf"):
        return _per_gpu(t, "norm_perf")
    if t.has("perf") and t.has("uuid"):
        return _per_gpu(t, "perf")
    raise DataError(
        t.path,
        "columns",
        ", ".join(t.header),
        "PerfVar_class<X> columns, a norm_perf column, or perf and uuid columns",
        row=1,
    )


def _ready_made(t: Table, classes: dict[str, str]) -> GpuVariability:
    """Layout (a): slowdown factors given per GPU and class (column -> class name).

    Args:
        t: the table, with ``GPU_UUID``, ``Node_ID`` and the ``PerfVar_class<X>`` columns.
        classes: column name -> class name ``X``, in header order.
    """
    require(t, ("GPU_UUID", "Node_ID", *classes))
    slow = np.empty((t.n_rows, len(classes)), dtype=np.float64)
    for j, name in enumerate(classes):
        slow[:, j] = floats(t, name)
        check(t, name, slow[:, j] > 0, "a finite number > 0")
    gpu = strs(t, "GPU_UUID")
    unique_check(t, "GPU_UUID", gpu)
    return GpuVariability(
        source=t.path.name,
        classes=tuple(classes.values()),
        gpu_id=readonly(gpu),
        node_id=readonly(strs(t, "Node_ID")),
        slowdown=readonly(slow),
        n_runs=readonly(np.ones(t.n_rows, dtype=np.int32)),
    )


def _per_gpu(t: Table, column: str) -> GpuVariability:
    """Layouts (b) and (c): per-GPU median of ``column`` over the median GPU.

    The median of an even count is the mean of the two middle runs (as ``np.median``).

    Args:
        t: the table, with ``uuid`` and ``column`` (and optionally ``warmup``).
        column: ``"norm_perf"`` (``ls6/``) or ``"perf"`` (a time: ``sim/``, ``frontera/``).

    Raises:
        DataError: a non-positive value, or every row a warm-up.
    """
    require(t, ("uuid", column))
    value = floats(t, column)
    check(t, column, value > 0, "a finite number > 0")
    gpu = strs(t, "uuid")
    keep = ~bools(t, "warmup") if t.has("warmup") else np.ones(t.n_rows, dtype=bool)
    if not keep.any():
        raise DataError(t.path, "warmup", "True in every row", "at least one non-warm-up row")
    rows = np.flatnonzero(keep)
    names, inverse, counts = np.unique(gpu[rows], return_inverse=True, return_counts=True)
    order = np.lexsort((value[rows], inverse))
    sorted_vals = value[rows][order]
    ends = np.cumsum(counts)
    starts = ends - counts
    medians = 0.5 * (sorted_vals[starts + (counts - 1) // 2] + sorted_vals[starts + counts // 2])
    slow = medians / np.median(medians)
    return GpuVariability(
        source=t.path.name,
        classes=(_workload(t),),
        gpu_id=readonly(names),
        node_id=readonly(_nodes(t, gpu, names)),
        slowdown=readonly(slow[:, None].copy()),
        n_runs=readonly(counts.astype(np.int32)),
    )


def _nodes(t: Table, gpu: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Node id ``cabinet-node`` of each GPU in ``names``, from all rows (warm-up included).

    Rows whose cabinet or node is ``-1`` say nothing; a GPU never located is
    ``unknown:<uuid>``.

    Args:
        t: the table read.
        gpu: (R,) the GPU UUID of every row.
        names: (G,) the distinct GPUs, in the result's order.

    Raises:
        DataError: one GPU on two hosts.
    """
    if not (t.has("cabinet") and t.has("node")):
        return np.array([f"unknown:{g}" for g in names.tolist()], dtype=str)
    where: dict[str, tuple[str, int]] = {}
    cabinet, node = strs(t, "cabinet"), strs(t, "node")
    for i, (g, c, n) in enumerate(zip(gpu.tolist(), cabinet.tolist(), node.tolist(), strict=True)):
        if UNKNOWN in (c, n):
            continue
        host = f"{c}-{int(n)}" if n.isdigit() else f"{c}-{n}"
        seen = where.setdefault(g, (host, i))
        if seen[0] != host:
            raise t.fail(
                "node",
                i,
                f"{seen[0]!r}, where GPU {g} is on row {seen[1] + FIRST_DATA_ROW}",
                value=host,
            )
    return np.array([where.get(g, (f"unknown:{g}", 0))[0] for g in names.tolist()], dtype=str)


def _workload(t: Table) -> str:
    """Workload name: the single value of ``exp`` or ``model``, else from the file name.

    From the file name: its stem split on ``-`` without the site tokens (``agg``,
    ``longhorn``, ``frontera``, ``ls6``), so ``resnet-longhorn-agg.csv`` gives ``resnet``.
    """
    for name in ("exp", "model"):
        if t.has(name):
            values = set(strs(t, name).tolist())
            if len(values) == 1:
                return values.pop()
    stem = t.path.name.split(".")[0]
    tokens = [s for s in stem.split("-") if s.lower() not in SITE_TOKENS]
    return "-".join(tokens) or stem


#: How ``pal_slowdown_pool`` builds the pool a simulated GPU's factor is drawn from.
POOL_MODES = ("runs", "gpu-max")


def pal_slowdown_pool(path: str | Path, samples: str = "runs") -> np.ndarray:
    """The normalised slowdown values blox-pal draws a simulated GPU's factor from.

    Args:
        path: a blox-pal ``*-agg.csv`` file with ``perf`` (a time) and ``uuid`` columns.
        samples: ``"runs"``: every row's ``perf`` / the median ``perf`` of all rows, in file
            row order (what blox-pal's artifact branch draws from); ``"gpu-max"``: each GPU's
            largest ``perf`` / the median of those maxima (blox-pal commit ``efb093f``).

    Returns:
        1-D float64 pool, median 1.0 (``"runs"``: one value per row; ``"gpu-max"``: one
        per GPU, by sorted UUID).

    Raises:
        ConfigError: unknown ``samples``.
        DataError: a missing column or a bad number.
    """
    if samples not in POOL_MODES:
        raise ConfigError("samples", samples, f"one of {list(POOL_MODES)}")
    t = read_table(path, ("perf", "uuid"))
    perf = floats(t, "perf")
    check(t, "perf", perf > 0, "a finite number > 0")
    if samples == "runs":
        return perf / np.median(perf)
    _, inv = np.unique(strs(t, "uuid"), return_inverse=True)
    worst = np.full(int(inv.max()) + 1, -np.inf)
    np.maximum.at(worst, inv, perf)
    return worst / np.median(worst)


#: The seed blox-pal's cluster state gives Python's ``random`` before drawing the factors.
PAL_ARTIFACT_SEED = 42


def pal_artifact_draw(
    pools: Sequence[np.ndarray], num_gpus: int, seed: int = PAL_ARTIFACT_SEED
) -> np.ndarray:
    """Per-GPU, per-class slowdown factors exactly as blox-pal's artifact draws them.

    blox-pal (branch ``artifact``) looks a simulated GPU up by an integer id that never
    matches a profile's UUID, so it falls back to a random run: Python's ``random`` seeded
    with 42, then for GPU 0, 1, ..., ``num_gpus - 1`` and, within each GPU, for each class in
    ``profiles.json`` order (A, B, C, D), one ``random.choice`` over that class's pool
    (``pal_slowdown_pool(..., "runs")``). Rebuilt this way it matched all 6,176 penalties
    the artifact logged on Sia-Philly workload-1 (docs/papers.md, addendum 1). A private
    ``random.Random`` is used, so the global generator is left alone.

    Args:
        pools: one pool per class, in the artifact's class order (B and C are the same file,
            drawn separately).
        num_gpus: simulated GPUs (64 for Sia-Philly, 256 for Synergy).
        seed: the seed of Python's ``random`` (the artifact's 42).

    Returns:
        float64 (num_gpus, len(pools)).

    Raises:
        ConfigError: an empty pool or ``num_gpus < 1``.
    """
    import random

    if num_gpus < 1:
        raise ConfigError("num_gpus", num_gpus, ">= 1")
    lists = []
    for c, pool in enumerate(pools):
        values = np.asarray(pool, dtype=np.float64)
        if values.ndim != 1 or values.size == 0:
            raise ConfigError(f"pools[{c}]", values.shape, "a non-empty 1-D pool")
        lists.append(values.tolist())
    rng = random.Random(seed)
    out = np.empty((num_gpus, len(lists)), dtype=np.float64)
    for g in range(num_gpus):
        for c, values in enumerate(lists):
            out[g, c] = rng.choice(values)
    return out
