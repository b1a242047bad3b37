"""Solving the LPs with HiGHS (``Session``; warm-started re-solves) or PuLP with CBC, and
the certified value of each (``Solved``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass
from mtgym.hindsight.base import IPM_NNZ
from mtgym.hindsight.layout import LP, Layout


@dataclass(frozen=True)
class Solved:
    """One LP's certified value and how the solver ended.

    Attributes:
        value: A certified upper bound of the LP's optimum (``LP.certificate``).
        optimal: The solver proved its solution optimal.
        status: The solver's status in lower case (``"optimal"``, ``"time limit
            reached"``, ...) or ``"failed: <exception>"``.
    """

    value: float
    optimal: bool
    status: str


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence C-level stdout (HiGHS prints a banner on its first ``Highs()``)."""
    try:
        fd = os.dup(1)
    except OSError:  # no real stdout (some test runners)
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            try:
                yield
            finally:
                os.dup2(fd, 1)
    finally:
        os.close(fd)


class Session:
    """A solver holding one ``Layout``'s model: ``solve(lp)`` passes the model the first
    time, then only new bounds (HiGHS keeps its basis: a warm start). Solutions are
    certified (``LP.certificate``). ``solver``: "highs" (highspy), or "cbc" (PuLP, each
    solve from scratch; also the fallback when highspy is missing).

    Args:
        layout: The LP structure every ``solve`` shares.
        solver: ``"highs"`` or ``"cbc"``; ``self.solver`` says which is used.
        method: HiGHS's algorithm: ``"auto"`` (interior point above ``IPM_NNZ``
            nonzeros, else simplex), or a HiGHS ``solver`` option value.

    Raises:
        ValueError: an unknown ``solver``.
    """

    def __init__(self, layout: Layout, solver: str = "highs", method: str = "auto") -> None:
        if solver not in ("highs", "cbc"):
            raise ValueError(f"solver {solver!r} is not 'highs' or 'cbc'")
        self.layout = layout
        self.solver = solver
        self.method = method
        self._h = None
        if solver == "highs":
            try:
                import highspy  # noqa: F401
            except ImportError:
                self.solver = "cbc"

    def solve(self, lp: LP, time_limit_s: float) -> Solved:
        """Solve and certify; never raises on solver trouble: without duals, the
        certificate at y = 0 (the variables' bounds) is the value.

        Args:
            lp: ``layout.vectors(...)`` of this session's layout.
            time_limit_s: Wall budget of this solve, seconds (HiGHS takes at least
                0.01 s, CBC at least 1 s).
        """
        if lp.A.shape[1] == 0:  # no job can run: nothing to solve
            return Solved(0.0, True, "optimal")
        try:
            if self.solver == "highs":
                return self._solve_highs(lp, time_limit_s)
            return _solve_pulp(lp, time_limit_s)
        except Exception as exc:  # a broken solver: the trivial certificate
            return Solved(lp.certificate(np.zeros(lp.b.size)), False, f"failed: {exc!r}")

    def _solve_highs(self, lp: LP, time_limit_s: float) -> Solved:
        """Solve with highspy: pass the model on the first call, only new bounds after.

        The value is the smaller certificate of the row duals and of their negation
        (HiGHS's sign convention for duals of a maximisation is not relied on).
        """
        import highspy

        nrow, ncol = lp.A.shape
        inf = highspy.kHighsInf
        if self._h is None:
            with _quiet_stdout():
                h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            method = self.method
            if method == "auto":  # interior point for large LPs: no basis, but fast
                method = "ipm" if lp.A.nnz > IPM_NNZ else "simplex"
            h.setOptionValue("solver", method)
            if method == "ipm":
                h.setOptionValue("run_crossover", "off")  # the certificate needs no vertex
            model = highspy.HighsLp()
            model.num_col_ = ncol
            model.num_row_ = nrow
            model.sense_ = highspy.ObjSense.kMaximize
            model.col_cost_ = lp.c
            model.col_lower_ = np.zeros(ncol)
            model.col_upper_ = lp.ub
            model.row_lower_ = np.full(nrow, -inf)
            model.row_upper_ = lp.b
            model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
            model.a_matrix_.start_ = lp.A.indptr.astype(np.int32)
            model.a_matrix_.index_ = lp.A.indices.astype(np.int32)
            model.a_matrix_.value_ = lp.A.data
            h.passModel(model)
            self._h = h
        else:
            h = self._h
            h.changeColsBounds(ncol, np.arange(ncol, dtype=np.int32), np.zeros(ncol), lp.ub)
            h.changeRowsBounds(nrow, np.arange(nrow, dtype=np.int32), np.full(nrow, -inf), lp.b)
        h.setOptionValue("time_limit", max(float(time_limit_s), 0.01))
        h.run()
        model_status = h.getModelStatus()
        sol = h.getSolution()
        y = np.asarray(sol.row_dual, dtype=np.float64) if sol.dual_valid else np.zeros(0)
        if y.size != nrow:
            y = np.zeros(nrow)
        # either sign convention: every y >= 0 gives a bound; keep the smaller
        value = min(lp.certificate(y), lp.certificate(-y))
        optimal = model_status == highspy.HighsModelStatus.kOptimal
        return Solved(value, optimal, h.modelStatusToString(model_status).lower())


def _solve_pulp(lp: LP, time_limit_s: float) -> Solved:
    """The same LP through PuLP and CBC (the fallback when highspy is missing).

    Each call builds the model from scratch (no warm start); the rows' ``pi`` give the
    duals (missing ones count as 0), certified like HiGHS's.

    Args:
        lp: The LP.
        time_limit_s: CBC's time limit, seconds (at least 1).
    """
    import pulp

    prob = pulp.LpProblem("hindsight", pulp.LpMaximize)
    v = [prob.add_variable(f"v{i}", 0, float(u)) for i, u in enumerate(lp.ub)]
    A = lp.A
    by_row = np.argsort(A.indices, kind="stable")
    cuts = np.searchsorted(A.indices[by_row], np.arange(A.shape[0] + 1))
    names = []
    for r in range(A.shape[0]):
        sel = by_row[cuts[r] : cuts[r + 1]]
        expr = pulp.LpAffineExpression(
            [(v[int(i)], float(x)) for i, x in zip(A.cols[sel], A.data[sel], strict=True)]
        )
        prob += expr <= float(lp.b[r]), f"r{r}"
        names.append(f"r{r}")
    prob += pulp.lpSum(float(lp.c[i]) * v[i] for i in np.flatnonzero(lp.c))
    prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=max(float(time_limit_s), 1.0)))
    optimal = prob.status == pulp.LpStatusOptimal
    y = np.array([prob.get_constraint_by_name(n).pi or 0.0 for n in names], dtype=np.float64)
    value = min(lp.certificate(y), lp.certificate(-y))
    return Solved(value, optimal, pulp.LpStatus[prob.status].lower())
