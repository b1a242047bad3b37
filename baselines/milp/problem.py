"""The allocation problem FreeTrain's MILP solves, built from a ``SchedulerView``.

``AllocProblem`` holds, for the admitted jobs and the idle nodes, what the MILP needs
(docs/papers.md §1.3): the current map ``c[j, n]``, bounds, the breakpoints ``(N_ji, O_ji)`` of
each job's objective curve, rescale costs and the current rate ``r_j``. ``objective(n)`` is
the value of a count vector, shared by the node-level MILP and the count-level solver so
their objectives compare exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtgym.sim.view import SchedulerView

#: BFTrainer's T_fwd (its replayer's default and the paper's value), seconds.
T_FWD_PAPER = 10.0


class ScenarioTfwd:
    """T_fwd given explicitly, else the scenario's (``EpisodeSpec.t_fwd_s``).

    T_fwd stands for how long a new allocation lasts, a property of the machine's idle
    windows, so it is a scenario parameter. Until a driver passes the scenario's defaults
    (``use_scenario_defaults``; ``mtgym.evaluate`` does), it is the paper's 10 s.
    """

    t_fwd: float
    t_fwd_explicit: bool

    def _init_t_fwd(self, t_fwd: float | None) -> None:
        if t_fwd is not None and not (np.isfinite(t_fwd) and t_fwd > 0):
            raise ValueError(f"t_fwd must be a finite number > 0 (seconds), got {t_fwd!r}")
        self.t_fwd_explicit = t_fwd is not None
        self.t_fwd = T_FWD_PAPER if t_fwd is None else float(t_fwd)

    def use_scenario_defaults(self, episode: object) -> None:
        """Take ``episode.t_fwd_s`` (a scenario's ``EpisodeSpec``) unless t_fwd was given."""
        if not self.t_fwd_explicit:
            t = getattr(episode, "t_fwd_s", None)
            if t is not None:
                self.t_fwd = float(t)


def dedupe_curve(nodes: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop padding repeats and NaNs; keep breakpoints sorted by node count."""
    ok = ~np.isnan(values) & ~np.isnan(nodes)
    nodes, values = nodes[ok], values[ok]
    keep = np.concatenate(([True], np.diff(nodes) > 0)) if nodes.size else np.zeros(0, bool)
    return nodes[keep], values[keep]


@dataclass
class AllocProblem:
    """One FreeTrain decision: admitted jobs x idle nodes."""

    jobs: np.ndarray  # (J,) job indices in the view
    nodes: np.ndarray  # (N,) idle node indices
    current: np.ndarray  # (J, N) bool, c[j, n]
    jmin: np.ndarray  # (J,)
    jmax: np.ndarray  # (J,)
    bp_nodes: list[np.ndarray]  # breakpoints N_ji per job (0 included when declared)
    bp_obj: list[np.ndarray]  # O_ji
    r_up: np.ndarray  # (J,) s
    r_down: np.ndarray  # (J,) s
    rate: np.ndarray  # (J,) r_j = O_j(C_j) if C_j >= jmin else 0
    t_fwd: float
    capacity: int | None = None  # nodes the jobs may use (default: every idle node)

    @property
    def cap(self) -> int:
        """Nodes available to these jobs."""
        return self.nodes.size if self.capacity is None else int(self.capacity)

    @property
    def counts(self) -> np.ndarray:
        """C_j, the current node counts."""
        return self.current.sum(axis=1)

    def obj_at(self, j: int, n: np.ndarray | float) -> np.ndarray:
        """O_j(n) by linear interpolation of the breakpoints (-inf outside them)."""
        x, y = self.bp_nodes[j], self.bp_obj[j]
        n = np.asarray(n, dtype=np.float64)
        if x.size == 0:
            return np.where(n == 0, 0.0, -np.inf)
        v = np.interp(n, x, y)
        return np.where((n < x[0]) | (n > x[-1]), -np.inf, v)

    def feasible_counts(self, j: int) -> np.ndarray:
        """Counts job j may get: {0} U [jmin, jmax], within its breakpoints and the nodes."""
        x = self.bp_nodes[j]
        hi = int(min(self.jmax[j], self.cap, x[-1] if x.size else 0))
        lo = int(max(self.jmin[j], x[0] if x.size else 1, 1))
        out = [0] if (x.size and x[0] <= 0) else []
        out += list(range(lo, hi + 1))
        return np.array(out, dtype=np.int64)

    def job_values(self, j: int, n: np.ndarray) -> np.ndarray:
        """The objective term of job j at counts n: T_fwd O_j(n) - rescale loss."""
        C = self.counts[j]
        loss = np.where(n > C, self.r_up[j], np.where(n < C, self.r_down[j], 0.0)) * self.rate[j]
        return self.t_fwd * self.obj_at(j, n) - loss

    def objective(self, n: np.ndarray) -> float:
        """Value of the count vector ``n`` (-inf if infeasible)."""
        if int(np.sum(n)) > self.cap:
            return -np.inf
        total = 0.0
        for j in range(self.jobs.size):
            if n[j] != 0 and (n[j] < self.jmin[j] or n[j] > self.jmax[j]):
                return -np.inf
            total += float(self.job_values(j, np.array([n[j]]))[0])
        return total


def build_problem(
    view: SchedulerView,
    jobs: np.ndarray,
    curves: list[tuple[np.ndarray, np.ndarray]],
    r_up: np.ndarray,
    r_down: np.ndarray,
    t_fwd: float,
) -> AllocProblem:
    """Assemble the problem for ``jobs`` with the given objective curves and costs."""
    nodes = np.flatnonzero(view.available)
    current = view.node_job[nodes][None, :] == jobs[:, None]
    bp_nodes = [c[0] for c in curves]
    bp_obj = [c[1] for c in curves]
    C = current.sum(axis=1)
    jmin = view.min_nodes[jobs].astype(np.int64)
    jmax = view.max_nodes[jobs].astype(np.int64)
    rate = np.zeros(jobs.size)
    for i in range(jobs.size):
        if C[i] >= jmin[i] and bp_nodes[i].size:
            rate[i] = float(np.interp(C[i], bp_nodes[i], bp_obj[i]))
    return AllocProblem(
        jobs=jobs,
        nodes=nodes,
        current=current,
        jmin=jmin,
        jmax=jmax,
        bp_nodes=bp_nodes,
        bp_obj=bp_obj,
        r_up=np.nan_to_num(np.asarray(r_up, dtype=np.float64)),
        r_down=np.nan_to_num(np.asarray(r_down, dtype=np.float64)),
        rate=rate,
        t_fwd=float(t_fwd),
    )
