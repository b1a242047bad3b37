"""The allocation problem FreeTrain's MILP solves, built from a ``SchedulerView``.

``AllocProblem`` holds, for the admitted jobs and the idle nodes, what the MILP needs
(docs/papers.md §1.3): the current map ``c[j, n]``, bounds, the breakpoints ``(N_ji, O_ji)`` of
each job's objective curve, rescale costs and the current rate ``r_j``. ``objective(n)`` is
the value of a count vector, shared by the node-level MILP and the count-level solver so
their objectives compare exactly. ``packed()`` gives the jobs' data as flat arrays for the
compiled kernels (``dp_kernel``), which compute what the per-job NumPy methods do, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from baselines.milp import dp_kernel
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
        """Take ``episode.t_fwd_s`` unless t_fwd was given.

        Args:
            episode: the scenario's ``EpisodeSpec`` (any object with ``t_fwd_s``).
        """
        if not self.t_fwd_explicit:
            t = getattr(episode, "t_fwd_s", None)
            if t is not None:
                self.t_fwd = float(t)

    def scenario_hook(self, episode: object) -> None:
        """The scenario's T_fwd unless one was given or tuned (``Tunable``'s hook).

        Args:
            episode: the scenario's ``EpisodeSpec``.
        """
        ScenarioTfwd.use_scenario_defaults(self, episode)

    @property
    def t_fwd_knob(self) -> float | None:
        """T_fwd as a knob: given or tuned, else None (the scenario's)."""
        return self.t_fwd if self.t_fwd_explicit else None

    @staticmethod
    def t_fwd_grid(episode: object) -> list[float | None]:
        """T_fwd values ``mtgym tune`` tries: the scenario's, then x 1/4, 1/2, 2 and 4 of it.

        Args:
            episode: the scenario's ``EpisodeSpec`` (its ``t_fwd_s``; the paper's 10 s
                without one).

        Returns:
            None (the scenario's own), then the scaled values in seconds.
        """
        from mtgym.policy.tunable import scaled

        t = float(getattr(episode, "t_fwd_s", T_FWD_PAPER))
        return [None, *scaled([0.25, 0.5, 2.0, 4.0], t)]


def dedupe_curve(nodes: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop padding repeats and NaNs; keep breakpoints sorted by node count.

    Args:
        nodes: a curve row's node counts (``view.curve_nodes[j]``), padded by repeats.
        values: its values (``view.curve_tput[j]``).

    Returns:
        (nodes, values) of the distinct breakpoints, increasing in nodes.
    """
    ok = ~np.isnan(values) & ~np.isnan(nodes)
    nodes, values = nodes[ok], values[ok]
    keep = np.concatenate(([True], np.diff(nodes) > 0)) if nodes.size else np.zeros(0, bool)
    return nodes[keep], values[keep]


Curve = tuple[np.ndarray, np.ndarray]


class CurveMemo:
    """Per-job results of a function of the job's curve rows only (``view.curve_nodes[j]``,
    ``view.curve_tput[j]``) and of ``key``, such as a policy's deduped, rescaled objective
    curve, kept while those rows are bit for bit the same.

    Each call compares the listed jobs' rows with the copies the results were made from
    (whatever the view, the instance or the ``InfoMode``: a job whose rows changed, or
    another instance's job of the same index, is made anew), so a result is only reused
    for the same input. The results are made read-only: they are shared between decisions.
    """

    def __init__(self) -> None:
        self.key: Hashable = None
        self.nodes = np.zeros((0, 0))  # copies of the rows the results were made from
        self.tput = np.zeros((0, 0))
        self.out: dict[int, Curve] = {}

    @staticmethod
    def _bits(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)

    def get(
        self, view: SchedulerView, jobs: np.ndarray, key: Hashable, make: Callable[[int], Curve]
    ) -> list[Curve]:
        """``[make(j) for j in jobs]``, made only for jobs not met with these rows and key.

        Args:
            view: the view whose curve rows the results depend on.
            jobs: the job indices, in the order of the results.
            key: what else the results depend on (an objective's name); a new key drops
                every result.
            make: job index -> its (nodes, values) curve.

        Returns:
            One read-only curve per job of ``jobs``.
        """
        nodes, tput = self._bits(view.curve_nodes), self._bits(view.curve_tput)
        if key != self.key or nodes.shape != self.nodes.shape or tput.shape != self.tput.shape:
            self.key, self.nodes, self.tput, self.out = key, nodes.copy(), tput.copy(), {}
        else:
            same = (nodes[jobs] == self.nodes[jobs]).all(axis=1)
            same &= (tput[jobs] == self.tput[jobs]).all(axis=1)
            for j in jobs[~same]:
                self.out.pop(int(j), None)
                self.nodes[j], self.tput[j] = nodes[j], tput[j]
        listed = jobs.tolist()
        try:
            return [self.out[j] for j in listed]
        except KeyError:
            pass
        for j in listed:
            if j not in self.out:
                got = make(j)
                for a in got:
                    a.flags.writeable = False
                self.out[j] = got
        return [self.out[j] for j in listed]


class Packed(NamedTuple):
    """An ``AllocProblem``'s jobs as flat arrays (job j's breakpoints are
    ``xs[off[j]:off[j + 1]]``), as the compiled kernels take them.
    """

    off: np.ndarray  # (J + 1,) int64
    xs: np.ndarray  # breakpoint nodes, float64
    ys: np.ndarray  # breakpoint values, float64
    jmin: np.ndarray  # (J,) int64
    jmax: np.ndarray  # (J,) int64
    C: np.ndarray  # (J,) int64, the current counts
    r_up: np.ndarray  # (J,) float64
    r_down: np.ndarray  # (J,) float64
    rate: np.ndarray  # (J,) float64
    t_fwd: float
    ok: bool  # the kernels apply: breakpoints finite and increasing, integer bounds, float64


def _flat(arrays: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Offsets, the concatenation (float64) and the sizes of ``arrays``."""
    sizes = [a.size for a in arrays]
    off = np.zeros(len(sizes) + 1, dtype=np.int64)
    if not sizes:
        return off, np.zeros(0), sizes
    off[1:] = np.array(sizes).cumsum()
    return off, np.concatenate(arrays).astype(np.float64, copy=False), sizes


@dataclass
class AllocProblem:
    """One FreeTrain decision: admitted jobs x idle nodes (``build_problem`` makes it).

    Attributes:
        jobs: (J,) the admitted jobs' indices in the view.
        nodes: (N,) the idle nodes' indices.
        current: (J, N) bool, which idle node each job holds now (c[j, n]).
        jmin, jmax: (J,) node-count bounds.
        bp_nodes, bp_obj: per job, the breakpoints N_ji and objective values O_ji.
        r_up, r_down: (J,) rescale costs in seconds.
        rate: (J,) r_j = O_j(C_j) when C_j >= jmin, else 0 (what a rescale loses per second).
        t_fwd: seconds a new allocation is expected to last.
        capacity: nodes the jobs may use (None: every idle node).
    """

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
        """O_j(n) by linear interpolation of the breakpoints (-inf outside them).

        Args:
            j: the job's position in ``jobs``.
            n: node counts.
        """
        x, y = self.bp_nodes[j], self.bp_obj[j]
        n = np.asarray(n, dtype=np.float64)
        if x.size == 0:
            return np.where(n == 0, 0.0, -np.inf)
        v = np.interp(n, x, y)
        return np.where((n < x[0]) | (n > x[-1]), -np.inf, v)

    def feasible_counts(self, j: int) -> np.ndarray:
        """Counts job j may get: {0} U [jmin, jmax], within its breakpoints and the nodes.

        Args:
            j: the job's position in ``jobs``.

        Returns:
            The counts, increasing (int64).
        """
        x = self.bp_nodes[j]
        hi = int(min(self.jmax[j], self.cap, x[-1] if x.size else 0))
        lo = int(max(self.jmin[j], x[0] if x.size else 1, 1))
        out = [0] if (x.size and x[0] <= 0) else []
        out += list(range(lo, hi + 1))
        return np.array(out, dtype=np.int64)

    def job_values(self, j: int, n: np.ndarray) -> np.ndarray:
        """The objective term of job j at counts n: T_fwd O_j(n) - rescale loss.

        Args:
            j: the job's position in ``jobs``.
            n: node counts (an array).
        """
        C = self.counts[j]
        loss = np.where(n > C, self.r_up[j], np.where(n < C, self.r_down[j], 0.0)) * self.rate[j]
        return self.t_fwd * self.obj_at(j, n) - loss

    def packed(self) -> Packed:
        """The jobs' data as flat arrays (made on each call: nothing is cached)."""
        J = self.jobs.size
        off, xs, nx = _flat(self.bp_nodes)
        _, ys, ny = _flat(self.bp_obj)
        jmin, jmax, C = np.asarray(self.jmin), np.asarray(self.jmax), np.asarray(self.counts)
        up, down, rate = np.asarray(self.r_up), np.asarray(self.r_down), np.asarray(self.rate)
        ok = (
            len(nx) == J
            and nx == ny
            and jmin.dtype.kind in "iu"
            and jmax.dtype.kind in "iu"
            and C.dtype.kind in "iu"
            and jmin.shape == jmax.shape == C.shape == (J,)
            and up.dtype == down.dtype == rate.dtype == np.float64
            and up.shape == down.shape == rate.shape == (J,)
            and np.result_type(self.t_fwd, np.float64) == np.float64
            and bool(dp_kernel.breakpoints_ok(off, xs))
        )
        i64 = [a.astype(np.int64, copy=False) for a in (jmin, jmax, C)]
        return Packed(off, xs, ys, *i64, up, down, rate, float(self.t_fwd), ok)  # type: ignore[call-arg, arg-type]  # *i64: 3 arrays

    def objective(self, n: np.ndarray, packed: Packed | None = None) -> float:
        """Value of the count vector ``n`` (-inf if infeasible); ``packed``: ``packed()``,
        when the caller has it already.
        """
        if int(np.sum(n)) > self.cap:
            return -np.inf
        pk = self.packed() if packed is None else packed
        v = np.asarray(n)
        if not (pk.ok and v.shape == (self.jobs.size,) and v.dtype.kind in "iu"):
            return self._objective_numpy(n)
        args = (pk.off, pk.xs, pk.ys, pk.jmin, pk.jmax, pk.C, pk.r_up, pk.r_down, pk.rate)
        return float(dp_kernel.objective_sum(v.astype(np.float64), *args, pk.t_fwd))

    def _objective_numpy(self, n: np.ndarray) -> float:
        """``objective``'s per-job NumPy loop (the kernel's reference; any input)."""
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
    """Assemble the problem for ``jobs`` with the given objective curves and costs.

    Args:
        view: the decision's view (idle nodes, the current map, node-count bounds).
        jobs: the admitted jobs' indices, in priority order.
        curves: per job, its objective curve (nodes, values).
        r_up, r_down: per job, the rescale costs in seconds (NaN and infinities are
            replaced as ``np.nan_to_num`` does).
        t_fwd: seconds a new allocation is expected to last.

    Returns:
        The ``AllocProblem`` over every idle node.
    """
    nodes = np.flatnonzero(view.available)
    current = view.node_job[nodes][None, :] == jobs[:, None]
    bp_nodes = [c[0] for c in curves]
    bp_obj = [c[1] for c in curves]
    C = current.sum(axis=1)
    jmin = view.min_nodes[jobs].astype(np.int64)
    jmax = view.max_nodes[jobs].astype(np.int64)
    rate = np.zeros(jobs.size)
    off, xs, nx = _flat(bp_nodes)
    _, ys, ny = _flat(bp_obj)
    if nx == ny and bool(dp_kernel.breakpoints_ok(off, xs)):  # np.interp per job, compiled
        at = dp_kernel.interp_each(off, xs, ys, C.astype(np.float64))
        rate = np.where((jmin <= C) & (np.diff(off) > 0), at, 0.0)
    else:
        for i in range(jobs.size):
            if C[i] >= jmin[i] and bp_nodes[i].size:
                rate[i] = float(np.interp(C[i], bp_nodes[i], bp_obj[i]))
    # np.nan_to_num (NaN: 0, +-inf: the largest finite), a copy; skipped where all are finite
    up, down = np.array(r_up, dtype=np.float64), np.array(r_down, dtype=np.float64)
    up = up if np.isfinite(up).all() else np.nan_to_num(up)
    down = down if np.isfinite(down).all() else np.nan_to_num(down)
    return AllocProblem(
        jobs=jobs,
        nodes=nodes,
        current=current,
        jmin=jmin,
        jmax=jmax,
        bp_nodes=bp_nodes,
        bp_obj=bp_obj,
        r_up=up,
        r_down=down,
        rate=rate,
        t_fwd=float(t_fwd),
    )
