"""Equality of env outputs for the lockstep tests: bit for bit, through containers."""

from __future__ import annotations

import numpy as np


def identical(a, b) -> bool:
    """Same values, same types, NaN equal to NaN, through dicts and arrays."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(identical(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and np.isnan(a):
        return np.isnan(b)
    return a == b
