"""Float reductions with a fixed summation order, callable from compiled kernels.

``pairwise_sum`` is numpy's own pairwise summation of a float64 array (blocks of 128 with
eight accumulators, halves above), so a kernel that sums where numpy summed before gets the
same bits. ``dot`` is the pairwise sum of the products: unlike ``np.dot`` (BLAS, whose order
depends on the CPU's kernel), its rounding is the same on every machine. ``log1p`` is the C
library's (numpy's own ``np.log1p`` takes an AVX-512 code path where the CPU has one, whose
last bits differ).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _block(a: np.ndarray, lo: int, n: int) -> float:  # pragma: no cover - jit
    """The numpy sum of one block ``a[lo:lo + n]``, ``n <= 128``.

    Below 8 elements a plain left-to-right sum; else eight running accumulators (element i
    goes to accumulator ``i % 8``), combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) +
    (r6 + r7))``, then the remainder added one by one: numpy's unrolled loop.

    Args:
        a: 1-D float64 array.
        lo: first index of the block.
        n: block length, 0..128.
    """
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        k = lo + i
        r0 += a[k]
        r1 += a[k + 1]
        r2 += a[k + 2]
        r3 += a[k + 3]
        r4 += a[k + 4]
        r5 += a[k + 5]
        r6 += a[k + 6]
        r7 += a[k + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise(a: np.ndarray, lo: int, n: int) -> float:  # pragma: no cover - jit
    """Sum of ``a[lo:lo + n]`` in numpy's pairwise order: above 128 elements, the halves
    (the first one a multiple of 8 long) are summed apart and added. Iterative (a recursive
    kernel cannot be cached): a stack of ranges to sum, with markers to add two results.

    Args:
        a: 1-D float64 array.
        lo: first index of the range.
        n: range length; the fixed stacks (256 ranges, 128 partial sums) hold any length
            that fits in memory, the depth growing as log2(n / 128).
    """
    if n <= 128:
        return _block(a, lo, n)
    los = np.empty(256, dtype=np.int64)
    ns = np.empty(256, dtype=np.int64)  # -1: add the last two results
    vals = np.empty(128)
    top = nv = 0
    los[0], ns[0] = lo, n
    top = 1
    while top:
        top -= 1
        lo_i, n_i = los[top], ns[top]
        if n_i < 0:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
        elif n_i <= 128:
            vals[nv] = _block(a, lo_i, n_i)
            nv += 1
        else:
            n2 = n_i // 2
            n2 -= n2 % 8
            los[top], ns[top] = 0, -1
            los[top + 1], ns[top + 1] = lo_i + n2, n_i - n2
            los[top + 2], ns[top + 2] = lo_i, n2
            top += 3
    return vals[0]


@njit(cache=True)
def pairwise_sum(a: np.ndarray) -> float:  # pragma: no cover - jit
    """``a.sum()`` for a 1-D float64 array, bit for bit (numpy starts from 0.0).

    Args:
        a: 1-D float64 array, contiguous or not; empty sums to 0.0.
    """
    return 0.0 + _pairwise(a, 0, a.shape[0])


@njit(cache=True)
def dot(x: np.ndarray, y: np.ndarray) -> float:  # pragma: no cover - jit
    """``sum(x * y)`` with the products summed pairwise (machine-independent rounding).

    Args:
        x: (M,) numbers of any numeric dtype (node counts, say), converted to float.
        y: (M,) float64.
    """
    p = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        p[i] = float(x[i]) * y[i]
    return pairwise_sum(p)


@njit(cache=True)
def log1p(a: np.ndarray) -> np.ndarray:  # pragma: no cover - jit
    """``np.log1p`` element-wise with the C library's ``log1p`` (the kernels' own).

    Args:
        a: float64 array of any shape.

    Returns:
        A new array of ``a``'s shape.
    """
    out = np.empty_like(a)
    flat, res = a.ravel(), out.ravel()
    for i in range(flat.shape[0]):
        res[i] = np.log1p(flat[i])
    return out
