"""PAL's per-class slowdown levels and its locality x variability (L x V) traversal order.

From ``placement/pal.py`` of ``hal-uw/blox-pal`` (function ``get_slowdown_factors``), run once
when the GPUs register. For each application class c, over the profiled factors of all units:

1. Outliers are the units whose factor is above ``mean + 3 sd`` (sample sd, as pandas).
2. ``K1`` clusters for the rest: PAL scans the silhouette score over k = 2..10 but returns
   inside the loop after k = 2, so ``K1 = 2`` always (``pal_k_quirk=True``, the default).
   ``pal_k_quirk=False`` scans k = 2..10 properly and keeps the best score.
3. 1-D K-means (k-means++ seeding, then Lloyd) on *all* units with ``K = K1 + #outliers``, so
   outliers tend to get clusters of their own. Implemented here (no scikit-learn):
   deterministic for a given ``seed`` (PAL uses ``random_state=1``); ``n_init`` seedings, the
   lowest inertia wins. ``K`` is capped at the number of distinct values.
4. A unit's slowdown factor ``sf = centroid of its cluster / median of the centroids``.
5. V = the distinct sf values; L = the locality levels; the traversal order is every pair
   ``(v, l)`` sorted by ``sf_v x lambda_l`` ascending, ties: the inner locality level first
   ("within before across"), then the smaller sf.

**Locality levels (a documented extension).** PAL has two: within a node (1.0) and across
nodes (lambda). Here L is every spread level >= 1 of the view's topology with its
``locality_factor``: for PAL's GPU topology ``("gpu", "node", "system")`` with factors
``(1, 1, lambda)`` that is exactly PAL's pair (level 1 = one host, level 2 = across hosts);
a deeper topology (node -> chassis -> group -> system) gets one row per level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtgym.core.types import NUM_CLASSES

#: PAL's outlier threshold: mean + 3 standard deviations.
OUTLIER_SD = 3.0
#: PAL's silhouette scan range for K1.
K_RANGE = (2, 10)


# ---------------------------------------------------------------------------------------
# 1-D K-means and silhouette
# ---------------------------------------------------------------------------------------
def _assign(x: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Nearest center of each point (ties: the lower center index)."""
    return np.argmin(np.abs(x[:, None] - centers[None, :]), axis=1)


def _kmeans_pp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: the first center uniform, each next one with probability ~ D^2."""
    centers = np.empty(k)
    centers[0] = x[rng.integers(x.size)]
    d2 = (x - centers[0]) ** 2
    for i in range(1, k):
        total = d2.sum()
        if total <= 0:  # every point sits on a center already (fewer distinct values)
            idx = int(rng.integers(x.size))
        else:
            idx = int(np.searchsorted(np.cumsum(d2), rng.random() * total, side="right"))
            idx = min(idx, x.size - 1)
        centers[i] = x[idx]
        d2 = np.minimum(d2, (x - centers[i]) ** 2)
    return centers


def kmeans_1d(
    x: np.ndarray, k: int, *, seed: int = 1, n_init: int = 10, max_iter: int = 300
) -> tuple[np.ndarray, np.ndarray]:
    """1-D K-means: k-means++ seeding then Lloyd iterations, best of ``n_init`` seedings.

    Args:
        x: (n,) values.
        k: clusters; capped at the number of distinct values (so no cluster is empty).
        seed: seeds the k-means++ draws (the result is a function of ``x``, ``k``, ``seed``).
        n_init: seedings tried; the lowest within-cluster sum of squares wins (first on ties).
        max_iter: Lloyd iterations per seeding.

    Returns:
        ``(centers, labels)``: centers sorted ascending (k',), and each point's cluster (n,).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"x must be a non-empty 1-D array, got shape {x.shape}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    distinct = np.unique(x)
    k = min(k, distinct.size)
    if k == distinct.size:  # every distinct value its own cluster: the exact optimum
        labels = np.searchsorted(distinct, x)
        return distinct.copy(), labels
    rng = np.random.default_rng(seed)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for _ in range(max(1, n_init)):
        centers = np.sort(_kmeans_pp(x, k, rng))
        labels = _assign(x, centers)
        for _ in range(max_iter):
            sums = np.bincount(labels, weights=x, minlength=k)
            counts = np.bincount(labels, minlength=k)
            new = np.where(counts > 0, sums / np.maximum(counts, 1), centers)
            new_labels = _assign(x, new)
            centers = new
            if np.array_equal(new_labels, labels):
                break
            labels = new_labels
        inertia = float(((x - centers[labels]) ** 2).sum())
        if best is None or inertia < best[0]:
            best = (inertia, centers, labels)
    assert best is not None
    _, centers, labels = best
    # drop empty clusters (possible after Lloyd), sort ascending, relabel densely
    used = np.unique(labels)
    centers = centers[used]
    order = np.argsort(centers, kind="stable")
    remap = np.empty(used.size, dtype=np.int64)
    remap[order] = np.arange(used.size)
    labels = remap[np.searchsorted(used, labels)]
    return centers[order], labels


def silhouette_1d(x: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette score of a 1-D clustering (scikit-learn's definition).

    ``s(i) = (b - a) / max(a, b)`` with ``a`` the mean distance to the other members of its
    cluster and ``b`` the smallest mean distance to another cluster; 0 for singletons.
    O(n log n) per cluster with prefix sums (no n x n matrix).
    """
    x = np.asarray(x, dtype=np.float64)
    labels = np.asarray(labels)
    ids = np.unique(labels)
    if ids.size < 2 or ids.size >= x.size:
        raise ValueError("silhouette needs 2 <= clusters <= n - 1")
    mean_dist = np.empty((ids.size, x.size))
    sizes = np.empty(ids.size, dtype=np.int64)
    for c, cid in enumerate(ids):
        v = np.sort(x[labels == cid])
        sizes[c] = v.size
        csum = np.concatenate(([0.0], np.cumsum(v)))
        left = np.searchsorted(v, x, side="right")  # members <= x
        s_left = left * x - csum[left]
        s_right = (csum[-1] - csum[left]) - (v.size - left) * x
        mean_dist[c] = s_left + s_right  # total distance to members
    own = np.searchsorted(ids, labels)
    n_own = sizes[own]
    a = np.where(n_own > 1, mean_dist[own, np.arange(x.size)] / np.maximum(n_own - 1, 1), 0.0)
    other = mean_dist / sizes[:, None]
    other[own, np.arange(x.size)] = np.inf
    b = other.min(axis=0)
    denom = np.maximum(a, b)
    s = np.where((n_own > 1) & (denom > 0), (b - a) / np.where(denom > 0, denom, 1.0), 0.0)
    return float(s.mean())


def outlier_mask(x: np.ndarray, threshold: float = OUTLIER_SD) -> np.ndarray:
    """PAL's outliers: ``x > mean + threshold x sd`` (sample sd, ddof = 1, as pandas).

    Args:
        x: the values (slowdown factors).
        threshold: how many standard deviations above the mean make an outlier.

    Returns:
        A bool mask of ``x``'s shape (none with fewer than two values).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        return np.zeros(x.shape, dtype=bool)
    return x > x.mean() + threshold * x.std(ddof=1)


def choose_k1(x: np.ndarray, *, pal_k_quirk: bool = True, seed: int = 1) -> int:
    """K1, the clusters of the non-outliers: 2 with PAL's quirk, else the best silhouette.

    Fewer distinct values than 2 give 1. The scan stops at the number of distinct values
    (K-means cannot make more clusters) and at ``n - 1`` (the silhouette's limit).
    """
    x = np.asarray(x, dtype=np.float64)
    distinct = np.unique(x).size
    if distinct < 2:
        return max(distinct, 1)
    if pal_k_quirk:
        return K_RANGE[0]
    best_k, best_s = K_RANGE[0], -np.inf
    for k in range(K_RANGE[0], min(K_RANGE[1], distinct, x.size - 1) + 1):
        _, labels = kmeans_1d(x, k, seed=seed)
        if np.unique(labels).size < 2:
            continue
        s = silhouette_1d(x, labels)
        if s > best_s:
            best_k, best_s = k, s
    return best_k


def class_slowdown_levels(
    values: np.ndarray, *, pal_k_quirk: bool = True, seed: int = 1, n_init: int = 10
) -> np.ndarray:
    """The clustered slowdown factor of every unit for one class (steps 1-4 of the module doc).

    Args:
        values: (N,) profiled factors of all units for the class.

    Returns:
        (N,) sf = centroid of the unit's cluster / median of the centroids.
    """
    x = np.asarray(values, dtype=np.float64)
    out = outlier_mask(x)
    k1 = choose_k1(x[~out], pal_k_quirk=pal_k_quirk, seed=seed) if (~out).any() else 0
    k = k1 + int(out.sum())
    centers, labels = kmeans_1d(x, max(k, 1), seed=seed, n_init=n_init)
    return centers[labels] / np.median(centers)


# ---------------------------------------------------------------------------------------
# The L x V matrix
# ---------------------------------------------------------------------------------------
def locality_levels(locality_factor: np.ndarray) -> list[tuple[int, float]]:
    """(spread level, lambda) for every level >= 1 of a topology (the rows of L).

    Args:
        locality_factor: (L,) the slowdown of a job spread at each topology level.
    """
    lf = np.asarray(locality_factor, dtype=np.float64)
    return [(lvl, float(lf[lvl])) for lvl in range(1, lf.size)]


def traversal_order(
    sf_levels: np.ndarray, loc_levels: list[tuple[int, float]]
) -> list[tuple[float, int, float]]:
    """Every (sf_v, locality level l, sf_v x lambda_l), ascending by the product.

    Ties: the inner locality level first (PAL: within before across), then the smaller sf.
    """
    entries = [(float(v), lvl, float(v) * lam) for v in sf_levels for (lvl, lam) in loc_levels]
    entries.sort(key=lambda e: (e[2], e[1], e[0]))
    return entries


@dataclass(frozen=True, eq=False)
class LxV:
    """PAL's per-class tables for one cluster.

    Attributes:
        sf: (N, 4) clustered slowdown factor of every unit for every class.
        levels: per class, the distinct sf values ascending (V).
        loc_levels: (spread level, lambda) rows of L (levels >= 1 of the topology).
        order: per class, the traversal order ``[(sf_v, level, product), ...]``.
    """

    sf: np.ndarray
    levels: tuple[np.ndarray, ...]
    loc_levels: tuple[tuple[int, float], ...]
    order: tuple[tuple[tuple[float, int, float], ...], ...]

    @classmethod
    def build(
        cls,
        slowdown: np.ndarray,
        locality_factor: np.ndarray,
        *,
        pal_k_quirk: bool = True,
        seed: int = 1,
        n_init: int = 10,
    ) -> LxV:
        """Cluster every class's profiled factors and derive the traversal orders.

        Args:
            slowdown: (N, 4) profiled per-class factors of all units (``view.slowdown``).
            locality_factor: (levels,) the topology's factors (``view.locality_factor``).
        """
        sd = np.asarray(slowdown, dtype=np.float64)
        if sd.ndim != 2 or sd.shape[1] != NUM_CLASSES or sd.shape[0] == 0:
            raise ValueError(f"slowdown must be (N, {NUM_CLASSES}) with N >= 1, got {sd.shape}")
        sf = np.empty_like(sd)
        for c in range(NUM_CLASSES):
            sf[:, c] = class_slowdown_levels(
                sd[:, c], pal_k_quirk=pal_k_quirk, seed=seed, n_init=n_init
            )
        sf.flags.writeable = False
        loc = locality_levels(locality_factor)
        levels = tuple(np.unique(sf[:, c]) for c in range(NUM_CLASSES))
        order = tuple(tuple(traversal_order(levels[c], loc)) for c in range(NUM_CLASSES))
        return cls(sf, levels, tuple(loc), order)
