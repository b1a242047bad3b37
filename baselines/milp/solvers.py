"""Solvers for ``AllocProblem``: the exact count-level DP and FreeTrain's node-level MILP.

**Count-level DP.** Nodes are identical in FreeTrain's model and the only node-identity
constraint is "no migration", so any count vector with ``n_j in {0} U [jmin, jmax]`` and
``sum n_j <= |N|`` is realisable (shrinking jobs keep a subset, growing ones take free
nodes). The MILP therefore equals a knapsack over counts, solved exactly by dynamic
programming over (job, nodes used) in O(J x N x max count) (docs/papers.md §1.3).

**Node-level MILP** (BFTrainer's ``progGRB.py``/``progMIP.py`` formulation, in PuLP):
binaries ``x[j,n]`` (job j on node n), ``z = x XOR c``, min-or-zero and max-or-zero
disjunctions (``a_j``, ``b_j``), no migration (``m_j``), scale-up/down indicators (``u_j``,
``d_j``), and the piecewise-linear curve. BFTrainer declares the interpolation weights SOS2;
HiGHS has no SOS constraints, so the same set is written with segment binaries
(``w_i <= s_{i-1} + s_i``, ``sum s = 1``), which is exactly equivalent. Objective:
``sum_j T_fwd S_j - sum_j (u_j R_up_j + d_j R_dw_j) r_j``.
Solved with HiGHS (``pulp.HiGHS``) by default, CBC as fallback; a time limit applies and,
as in BFTrainer's replayer, a solve that does not prove optimality is reported so the caller
keeps the previous map.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.milp import dp_kernel
from baselines.milp.problem import AllocProblem

#: Relative bonus for keeping a job's current count: breaks exact ties deterministically
#: towards no change; far below any real difference in objective.
KEEP_TIE_BONUS = 1e-9


@dataclass
class SolveResult:
    """A solver's answer: counts per admitted job, the objective, and how it went.

    Attributes:
        counts: (J,) node count per admitted job.
        objective: the solution's value (``AllocProblem.objective``).
        status: "optimal", "feasible" (time limit), "infeasible", "unavailable" or
            "failed: ...".
        solve_s: wall seconds the solve took.
        node_map: (J, N) bool, the node-level MILP's map (None from the DP).
        gap: the MILP's relative gap when only feasible, else 0.
        solver: which solver answered.
    """

    counts: np.ndarray  # (J,) node count per job
    objective: float
    status: str  # "optimal", "feasible" (time limit), "infeasible", "failed"
    solve_s: float
    node_map: np.ndarray | None = None  # (J, N) bool from the node-level MILP
    gap: float = 0.0
    solver: str = "count-dp"

    @property
    def optimal(self) -> bool:
        """Optimality was proven."""
        return self.status == "optimal"


def solve_counts_dp(p: AllocProblem) -> SolveResult:
    """Exact count-level solution of ``p`` (see module docstring).

    One compiled kernel (``dp_kernel.count_dp``) fills the table and backtracks; it makes the
    same floating-point operations and tie-breaks (the first maximum, as ``np.argmax``) as
    the NumPy recurrence ``_solve_counts_dp_numpy``, which answers the inputs the kernel
    does not take (breakpoints not finite and increasing, non-integer bounds).

    Args:
        p: the decision's problem.

    Returns:
        An optimal count vector (ties go to no change).
    """
    t0 = time.perf_counter()
    pk = p.packed()
    if not pk.ok or (p.jobs.size > 0 and pk.ys.size == 0):  # (the latter raises there)
        return _solve_counts_dp_numpy(p)
    scale = _tie_scale(p)
    counts, objective, status = dp_kernel.count_dp(
        pk.off, pk.xs, pk.ys, pk.jmin, pk.jmax, pk.C, pk.r_up, pk.r_down, pk.rate,
        pk.t_fwd, KEEP_TIE_BONUS * scale, int(p.cap),
    )  # fmt: skip
    if status != dp_kernel.DP_OK:
        return _solve_counts_dp_numpy(p)
    # objective: p.objective(counts), computed in the kernel
    return SolveResult(counts, float(objective), "optimal", time.perf_counter() - t0)


def _tie_scale(p: AllocProblem) -> float:
    """1 + the largest |T_fwd x curve value|: ``KEEP_TIE_BONUS`` is relative to it."""
    return 1.0 + float(
        np.max(np.abs(p.t_fwd * np.concatenate([b for b in p.bp_obj] or [np.zeros(1)])))
    )


def _solve_counts_dp_numpy(p: AllocProblem) -> SolveResult:
    """The count-level DP in NumPy, job by job (``solve_counts_dp``'s reference)."""
    t0 = time.perf_counter()
    J, N = p.jobs.size, p.cap
    NEG = -np.inf
    best = np.full(N + 1, NEG)
    best[0] = 0.0  # best[c]: value with exactly c nodes used by the jobs so far
    choice = np.zeros((J, N + 1), dtype=np.int64)
    C = p.counts
    scale = _tie_scale(p)
    for j in range(J):
        opts = p.feasible_counts(j)
        if opts.size == 0:
            opts = np.zeros(1, dtype=np.int64)  # no breakpoints: the job can only get 0
            vals = np.zeros(1)
        else:
            vals = p.job_values(j, opts) + KEEP_TIE_BONUS * scale * (opts == C[j])
        # cand[c, k] = best[c - opts[k]] + vals[k]
        used = np.arange(N + 1)[:, None] - opts[None, :]
        ok = used >= 0
        cand = np.where(ok, best[np.maximum(used, 0)], NEG) + vals[None, :]
        k = np.argmax(cand, axis=1)
        choice[j] = opts[k]
        best = cand[np.arange(N + 1), k]
    c = int(np.argmax(best))
    counts = np.zeros(J, dtype=np.int64)
    for j in range(J - 1, -1, -1):
        counts[j] = choice[j, c]
        c -= counts[j]
    return SolveResult(counts, p.objective(counts), "optimal", time.perf_counter() - t0)


def solve_node_milp(
    p: AllocProblem,
    *,
    solver: str = "highs",
    time_limit_s: float = 10.0,
    gap_rel: float | None = None,
    bigm_quirk: bool = False,
) -> SolveResult:
    """FreeTrain's node-level MILP (see module docstring).

    Never raises on solver trouble: the status says what happened. Big-M: the artifact uses
    ``M = |N| + 1`` everywhere. That is too small for the no-migration rows
    (``n_j - C_j <= -sum z + M (1 - m_j)`` needs ``M >= 2 (n_j - C_j)``): it forbids growing a
    job by more than about half the idle nodes in one decision; and for the min-or-zero rows
    when ``jmin > |N| + 1``. We use ``M = max(|N|, jmin, jmax) + 1`` and ``2M`` in the
    no-migration rows; ``bigm_quirk=True`` reproduces the artifact.

    Args:
        p: the decision's problem.
        solver: ``"highs"`` or ``"cbc"`` (through PuLP).
        time_limit_s: the solver's time limit.
        gap_rel: the relative MIP gap to stop at (None: the solver's default).
        bigm_quirk: the artifact's Big-M (see above).

    Returns:
        The counts and node map when a solution was found, else the current counts with
        the status.
    """
    t0 = time.perf_counter()
    J, N = p.jobs.size, p.nodes.size
    if J == 0:
        return SolveResult(
            np.zeros(0, dtype=np.int64), 0.0, "optimal", 0.0, np.zeros((0, N), bool), solver=solver
        )
    C = p.counts
    milp = _NodeMilp(p, bigm_quirk)
    status, gap = _solve_pulp(milp.prob, solver, time_limit_s, gap_rel)
    elapsed = time.perf_counter() - t0
    if status not in ("optimal", "feasible"):
        return SolveResult(C.copy(), p.objective(C), status, elapsed, solver=solver)
    x = milp.x
    xm = np.array([[round(x[j, n].value() or 0) for n in range(N)] for j in range(J)], dtype=bool)
    counts = xm.sum(axis=1).astype(np.int64)
    return SolveResult(
        counts,
        p.objective(counts),
        status,
        elapsed,
        xm,
        gap if status == "feasible" else 0.0,
        solver,
    )


class _NodeMilp:
    """FreeTrain's node-level MILP of ``p`` as a PuLP problem (``prob``); ``x[j, n]`` is 1
    when node n runs job j.
    """

    def __init__(self, p: AllocProblem, bigm_quirk: bool) -> None:
        import pulp

        self.p = p
        J, N = p.jobs.size, p.nodes.size
        self.N = N
        self.M = N + 1 if bigm_quirk else int(max(N, p.jmin.max(), p.jmax.max())) + 1
        self.M2 = self.M if bigm_quirk else 2 * self.M  # no-migration rows
        self.prob = prob = pulp.LpProblem("freetrain", pulp.LpMaximize)
        binary = lambda name: prob.add_variable(name, cat="Binary")  # noqa: E731
        self.x = {(j, n): binary(f"x_{j}_{n}") for j in range(J) for n in range(N)}
        self.z = {(j, n): binary(f"z_{j}_{n}") for j in range(J) for n in range(N)}
        self.a = [binary(f"a_{j}") for j in range(J)]
        self.b = [binary(f"b_{j}") for j in range(J)]
        self.m = [binary(f"m_{j}") for j in range(J)]
        self.u = [binary(f"u_{j}") for j in range(J)]
        self.d = [binary(f"d_{j}") for j in range(J)]
        S = [self._add_job(j) for j in range(J)]
        # 3: one job per node
        for n in range(N):
            prob += pulp.lpSum(self.x[j, n] for j in range(J)) <= 1
        prob += pulp.lpSum(p.t_fwd * S[j] for j in range(J)) - pulp.lpSum(
            (float(p.r_up[j]) * self.u[j] + float(p.r_down[j]) * self.d[j]) * float(p.rate[j])
            for j in range(J)
        )

    def _add_job(self, j: int) -> Any:
        """Job j's rows; returns its objective term (the curve at its node count)."""
        import pulp

        p, prob, x, z, M, N = self.p, self.prob, self.x, self.z, self.M, self.N
        a, b, m, u, d = self.a, self.b, self.m, self.u, self.d
        nj = pulp.lpSum(x[j, n] for n in range(N))
        cj = int(p.counts[j])
        # 1-2: min-or-zero, max-or-zero
        prob += nj >= int(p.jmin[j]) - M * a[j]
        prob += nj <= M * (1 - a[j])
        prob += nj <= int(p.jmax[j]) + M * b[j]
        prob += nj <= M * (1 - b[j])
        # 4: z = x XOR c (c is data)
        for n in range(N):
            c = int(p.current[j, n])
            prob += z[j, n] <= x[j, n] + c
            prob += z[j, n] >= x[j, n] - c
            prob += z[j, n] >= c - x[j, n]
            prob += z[j, n] <= 2 - x[j, n] - c
        zs = pulp.lpSum(z[j, n] for n in range(N))
        # 5: no migration: every changed cell is an addition, or every one a removal
        prob += nj - cj >= zs - self.M2 * m[j]
        prob += nj - cj <= -zs + self.M2 * (1 - m[j])
        s_j = self._add_curve(j, nj)
        # 7-8: up/down indicators
        prob += nj <= cj + (M - cj) * u[j]
        prob += nj >= (cj + 1) * u[j]
        prob += nj <= (cj - 1) + (M - cj + 1) * (1 - d[j])
        prob += nj >= cj * (1 - d[j])
        return s_j

    def _add_curve(self, j: int, nj: Any) -> Any:
        """6: job j's piecewise-linear curve (SOS2 as segment binaries) at ``nj`` nodes."""
        import pulp

        prob = self.prob
        xs, ys = self.p.bp_nodes[j], self.p.bp_obj[j]
        if xs.size == 0:
            prob += nj == 0
            return 0
        if xs.size == 1:
            prob += nj == int(xs[0])
            return float(ys[0])
        K = xs.size
        w = [prob.add_variable(f"w_{j}_{i}", lowBound=0, upBound=1) for i in range(K)]
        s = [prob.add_variable(f"s_{j}_{i}", cat="Binary") for i in range(K - 1)]
        prob += pulp.lpSum(w) == 1
        prob += pulp.lpSum(s) == 1
        for i in range(K):
            adj = ([s[i - 1]] if i > 0 else []) + ([s[i]] if i < K - 1 else [])
            prob += w[i] <= pulp.lpSum(adj)
        prob += nj == pulp.lpSum(float(xs[i]) * w[i] for i in range(K))
        return pulp.lpSum(float(ys[i]) * w[i] for i in range(K))


def _solve_pulp(
    prob: Any, solver: str, time_limit_s: float, gap_rel: float | None
) -> tuple[str, float]:
    """Solve ``prob`` with HiGHS or CBC: the status ("optimal", "feasible", "infeasible",
    "unavailable" or "failed...") and HiGHS's relative MIP gap (NaN otherwise).
    """
    import pulp

    status, gap = "failed", float("nan")
    try:
        if solver == "highs":
            sv = pulp.HiGHS(msg=False, timeLimit=time_limit_s, gapRel=gap_rel)
        elif solver == "cbc":
            sv = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit_s, gapRel=gap_rel)
        else:
            raise ValueError(f"solver {solver!r} is not 'highs' or 'cbc'")
        if not sv.available():
            return "unavailable", gap
        prob.solve(sv)
        # PuLP reports "Optimal" for any feasible solution under a time limit: read sol_status.
        if prob.sol_status == pulp.LpSolutionOptimal:
            status = "optimal"
        elif prob.sol_status == pulp.LpSolutionIntegerFeasible:
            status = "feasible"
        elif prob.status == pulp.LpStatusInfeasible:
            status = "infeasible"
        if solver == "highs" and getattr(prob, "solverModel", None) is not None:
            try:
                gap = float(prob.solverModel.getInfo().mip_gap)
            except Exception:  # the gap is informative only
                gap = float("nan")
    except Exception as exc:  # a broken solver must not break the episode
        status = f"failed: {type(exc).__name__}"
    return status, gap
