"""Compiled kernels of the count-level DP (``solvers.solve_counts_dp``) and of
``AllocProblem.objective``: the same floating-point operations, in the same order, as the
NumPy code they replace, so their answers are bit for bit the same.

The jobs' breakpoints come flat: job j's are ``xs[off[j]:off[j + 1]]`` and
``ys[off[j]:off[j + 1]]``. ``_interp`` is ``np.interp`` (NumPy's C loop: the same slope and
the same retry when one direction gives NaN) for breakpoints that are finite and strictly
increasing; ``breakpoints_ok`` says whether every job's are, and the callers keep the NumPy
path where they are not (``dedupe_curve`` gives such breakpoints; nothing else is assumed).

Cache: this file is self-contained (it calls no kernel of another file and reads no other
module's constants), so numba's own check of this file's time stamp recompiles it after an
edit; ``mtgym`` is imported first so that the kernels are cached in ``mtgym``'s folder
(``mtgym._kernel_cache``). Keep it self-contained.
"""

from __future__ import annotations

import numpy as np
from numba import njit

import mtgym  # noqa: F401 - configures numba's cache folder before the kernels below

#: ``solve_counts_dp``'s kernel answered: the counts / not for these inputs (the caller runs
#: the NumPy code, which gives the same answer or raises the same error).
DP_OK, DP_UNSUPPORTED = 0, 1


@njit(cache=True, error_model="numpy")
def breakpoints_ok(off: np.ndarray, xs: np.ndarray) -> bool:  # pragma: no cover - jit
    """Every job's breakpoint nodes are finite and strictly increasing.

    Args:
        off: (J + 1,) offsets: job j's breakpoints are ``xs[off[j]:off[j + 1]]``.
        xs: every job's breakpoint node counts, concatenated.
    """
    for j in range(off.shape[0] - 1):
        a, b = off[j], off[j + 1]
        for i in range(a, b):
            if not np.isfinite(xs[i]):
                return False
            if i > a and not xs[i] > xs[i - 1]:
                return False
    return True


@njit(cache=True, error_model="numpy", inline="always")
def _interp_seg(
    q: float, xs: np.ndarray, ys: np.ndarray, j: int, b: int
) -> float:  # pragma: no cover - jit
    """``np.interp``'s value at ``q`` in the segment from ``xs[j] <= q`` (the last such j)."""
    if j == b - 1:
        return ys[j]
    if xs[j] == q:
        return ys[j]
    slope = (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j])
    r = slope * (q - xs[j]) + ys[j]
    if np.isnan(r):  # NumPy: "if we get nan in one direction, try the other"
        r = slope * (q - xs[j + 1]) + ys[j + 1]
        if np.isnan(r) and ys[j] == ys[j + 1]:
            r = ys[j]
    return r


@njit(cache=True, error_model="numpy", inline="always")
def _interp(
    q: float, xs: np.ndarray, ys: np.ndarray, a: int, b: int
) -> float:  # pragma: no cover - jit
    """``np.interp(q, xs[a:b], ys[a:b])`` for finite, strictly increasing ``xs[a:b]``."""
    if b - a == 1:  # NumPy's one-point branch: fp[0] left, right and at the point
        return ys[a]
    if np.isnan(q):
        return q
    if q < xs[a]:
        return ys[a]
    if q > xs[b - 1]:
        return ys[b - 1]
    lo, hi = a, b - 1  # the last i with xs[i] <= q (binary_search_with_guess's, xs sorted)
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if xs[mid] <= q:
            lo = mid
        else:
            hi = mid - 1
    return _interp_seg(q, xs, ys, lo, b)


@njit(cache=True, error_model="numpy")
def interp_each(
    off: np.ndarray, xs: np.ndarray, ys: np.ndarray, q: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    """``np.interp(q[j], xs_j, ys_j)`` per job (NaN for a job without breakpoints).

    Args:
        off: (J + 1,) offsets of each job's breakpoints in ``xs`` and ``ys``.
        xs, ys: the breakpoints' node counts and values, concatenated.
        q: (J,) the node count to read each job's curve at.
    """
    J = off.shape[0] - 1
    out = np.full(J, np.nan)
    for j in range(J):
        if off[j + 1] > off[j]:
            out[j] = _interp(q[j], xs, ys, off[j], off[j + 1])
    return out


@njit(cache=True, error_model="numpy", inline="always")
def _job_value(
    n: float,
    j: int,
    off: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    C: np.ndarray,
    r_up: np.ndarray,
    r_down: np.ndarray,
    rate: np.ndarray,
    t_fwd: float,
) -> float:  # pragma: no cover - jit
    """``AllocProblem.job_values(j, [n])[0]``: T_fwd O_j(n) minus the rescale loss."""
    a, b = off[j], off[j + 1]
    if b == a:
        o = 0.0 if n == 0 else -np.inf
    elif n < xs[a] or n > xs[b - 1]:
        o = -np.inf
    else:
        o = _interp(n, xs, ys, a, b)
    if n > C[j]:
        cost = r_up[j]
    elif n < C[j]:
        cost = r_down[j]
    else:
        cost = 0.0
    return t_fwd * o - cost * rate[j]


@njit(cache=True, error_model="numpy")
def objective_sum(
    n: np.ndarray,
    off: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    jmin: np.ndarray,
    jmax: np.ndarray,
    C: np.ndarray,
    r_up: np.ndarray,
    r_down: np.ndarray,
    rate: np.ndarray,
    t_fwd: float,
) -> float:  # pragma: no cover - jit
    """``AllocProblem.objective``'s loop over the jobs (its capacity check is the caller's).

    Args:
        n: (J,) the count vector to value.
        off, xs, ys: the jobs' curves (``problem.Packed``).
        jmin, jmax: (J,) node-count bounds.
        C: (J,) current counts.
        r_up, r_down: (J,) rescale costs in seconds.
        rate: (J,) what a rescale of each job loses per second.
        t_fwd: seconds a new allocation is expected to last.

    Returns:
        The objective, ``-inf`` when a count is outside {0} U [jmin, jmax].
    """
    total = 0.0
    for j in range(off.shape[0] - 1):
        nj = n[j]
        if nj != 0 and (nj < jmin[j] or nj > jmax[j]):
            return -np.inf
        total += _job_value(nj, j, off, xs, ys, C, r_up, r_down, rate, t_fwd)
    return total


@njit(cache=True, error_model="numpy", inline="always")
def _first_argmax(v: np.ndarray, size: int) -> int:  # pragma: no cover - jit
    """``np.argmax(v[:size])``: the first maximum, or the first NaN if there is one."""
    k = 0
    best = v[0]
    if np.isnan(best):
        return 0
    for i in range(1, size):
        x = v[i]
        if np.isnan(x):
            return i
        if x > best:
            best, k = x, i
    return k


@njit(cache=True, error_model="numpy", inline="always")
def _options(
    j: int,
    off: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    jmin: np.ndarray,
    jmax: np.ndarray,
    C: np.ndarray,
    r_up: np.ndarray,
    r_down: np.ndarray,
    rate: np.ndarray,
    t_fwd: float,
    bonus: float,
    cap: int,
    opts: np.ndarray,
    vals: np.ndarray,
) -> int:  # pragma: no cover - jit
    """Job j's counts (``AllocProblem.feasible_counts``, or just 0 when it has none) and
    their values with the tie bonus into ``opts[:K]``, ``vals[:K]``; returns K.
    """
    a, b = off[j], off[j + 1]
    K = 0
    if b > a:
        x0, xl = xs[a], xs[b - 1]
        hi = jmax[j]  # int(min(jmax, cap, x[-1])): Python's min, then truncation
        if cap < hi:
            hi = cap
        if xl < hi:
            hi = int(xl)
        lo_f = float(jmin[j])  # int(max(jmin, x[0], 1))
        if x0 > jmin[j]:
            lo_f = x0
        lo = int(lo_f) if lo_f >= 1 else 1
        if x0 <= 0:
            opts[K] = 0
            K += 1
        for n in range(lo, hi + 1):
            opts[K] = n
            K += 1
    if K == 0:  # no breakpoints or no count: the job can only get 0 (no bonus)
        opts[0] = 0
        vals[0] = 0.0
        return 1
    # _job_value(n, j, ...) for the increasing opts, walking the segment instead of searching
    cj, up, down, r = C[j], r_up[j], r_down[j], rate[j]
    seg = a
    for k in range(K):
        n = opts[k]
        q = float(n)
        if q < xs[a] or q > xs[b - 1]:
            o = -np.inf
        elif b - a == 1:
            o = ys[a]
        else:
            while seg + 1 < b and xs[seg + 1] <= q:
                seg += 1
            o = _interp_seg(q, xs, ys, seg, b)
        if n > cj:
            cost = up
        elif n < cj:
            cost = down
        else:
            cost = 0.0
        tie = 1.0 if n == cj else 0.0  # KEEP_TIE_BONUS * scale * (opts == C[j])
        vals[k] = (t_fwd * o - cost * r) + bonus * tie
    return K


@njit(cache=True, error_model="numpy", inline="always")
def _relax(
    src: np.ndarray, dst: np.ndarray, arg: np.ndarray, o: int, v: float
) -> None:  # pragma: no cover - jit
    """``dst[i] = src[i] + v`` and ``arg[i] = o`` where that is above ``dst[i]`` (slices:
    no negative-index handling in the loop, which then runs several times faster).
    """
    for i in range(src.shape[0]):
        cand = src[i] + v
        if cand > dst[i]:
            dst[i] = cand
            arg[i] = o


@njit(cache=True, error_model="numpy")
def count_dp(
    off: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    jmin: np.ndarray,
    jmax: np.ndarray,
    C: np.ndarray,
    r_up: np.ndarray,
    r_down: np.ndarray,
    rate: np.ndarray,
    t_fwd: float,
    bonus: float,
    cap: int,
) -> tuple[np.ndarray, float, int]:  # pragma: no cover - jit
    """``solve_counts_dp``'s table, backtrack and objective; returns (counts, objective,
    ``DP_OK``), or ``DP_UNSUPPORTED`` where the NumPy code must answer (breakpoints not
    finite and increasing, a negative capacity, a backtrack outside the table).

    The NumPy code fills, per job, ``cand[c, k] = best[c - opts[k]] + vals[k]`` (``-inf``
    where ``c < opts[k]``), keeps ``np.argmax`` over k (the first maximum, the first NaN if
    any) and its candidate. While neither ``best`` nor ``vals`` holds a NaN or ``+inf`` no
    candidate is NaN, so the first maximum is found k by k with a strict ``>`` over a row
    that starts at ``-inf`` with ``k = 0`` (a row left at ``-inf`` is ``np.argmax``'s
    ``k = 0`` and ``-inf`` too), and only the ``c`` whose ``best[c - opts[k]]`` can be above
    ``-inf`` (the live range of ``best``) are visited. Otherwise the job is scanned c by c
    with ``np.argmax``'s rules.

    Args:
        off, xs, ys, jmin, jmax, C, r_up, r_down, rate, t_fwd: as for ``objective_sum``.
        bonus: the tie bonus for keeping a job's current count.
        cap: the nodes to share.
    """
    J = off.shape[0] - 1
    counts = np.zeros(J, dtype=np.int64)
    if cap < 0 or not breakpoints_ok(off, xs):
        return counts, 0.0, DP_UNSUPPORTED
    N = cap
    NEG = -np.inf
    best = np.full(N + 1, NEG)
    best[0] = 0.0
    new = np.empty(N + 1)
    choice = np.empty((J, N + 1), dtype=np.int64)
    opts = np.empty(N + 2, dtype=np.int64)
    vals = np.empty(N + 2)
    live_lo, live_hi = 0, 0  # best[c] > -inf only for live_lo <= c <= live_hi (none: lo > hi)
    clean = True  # best holds no NaN and no +inf
    for j in range(J):
        K = _options(
            j, off, xs, ys, jmin, jmax, C, r_up, r_down, rate, t_fwd, bonus, cap, opts, vals
        )
        row = choice[j]
        fast = clean
        for k in range(K):
            if np.isnan(vals[k]) or vals[k] == np.inf:
                fast = False
        if fast:
            new[:] = NEG
            row[:] = opts[0]
            if live_lo <= live_hi:
                for k in range(K):
                    o = opts[k]
                    c0, c1 = o + live_lo, min(N, o + live_hi) + 1
                    if c1 > c0:
                        _relax(best[live_lo : c1 - o], new[c0:c1], row[c0:c1], o, vals[k])
        else:
            for c in range(N + 1):
                kb, vb = 0, NEG
                for k in range(K):
                    u = c - opts[k]
                    cand = (best[u] if u >= 0 else NEG) + vals[k]
                    if k == 0 or np.isnan(cand) or cand > vb:
                        kb, vb = k, cand
                        if np.isnan(cand):
                            break
                row[c] = opts[kb]
                new[c] = vb
        live_lo, live_hi = N + 1, -1
        clean = True
        for c in range(N + 1):
            x = new[c]
            if x != NEG:
                if live_hi < 0:
                    live_lo = c
                live_hi = c
                if np.isnan(x) or x == np.inf:
                    clean = False
        best, new = new, best
    c = _first_argmax(best, N + 1)
    for j in range(J - 1, -1, -1):
        idx = c if c >= 0 else c + N + 1  # NumPy's negative index
        if idx < 0:
            return np.zeros(J, dtype=np.int64), 0.0, DP_UNSUPPORTED
        counts[j] = choice[j, idx]
        c -= counts[j]
    used = 0
    for j in range(J):
        used += counts[j]
    if used > cap:  # AllocProblem.objective's capacity check
        return counts, NEG, DP_OK
    obj = objective_sum(
        counts.astype(np.float64), off, xs, ys, jmin, jmax, C, r_up, r_down, rate, t_fwd
    )
    return counts, obj, DP_OK
