"""FreeTrain (= BFTrainer, arXiv 2106.12091): re-solve the allocation MILP at every event.

Faithful to the authors' replayer (docs/papers.md §1.2-1.5): admit active jobs FCFS up to
``max_jobs`` (maxJ; the replayer's 10 with ``max_jobs=10``, by default a cap that scales
with the machine with no ceiling: ``mtgym.policy.tunable.admission_cap``,
``docs/baselines.md``; the node-level MILP keeps a ceiling of ``MAX_JOBS_MILP``); maximise
``T_fwd x objective gain - rescale loss`` over the user-declared curves and costs
(``InfoMode.USER``: declarations may be biased or noisy if the scenario says so); never
migrate a job. ``solver="count"`` (default) is the exact count-level DP; ``solver="milp"``
is the node-level MILP in PuLP (HiGHS, CBC fallback) with a time limit, keeping the previous
map when optimality is not proven (BFTrainer's behaviour).
``objective="speedup"`` maximises the sum of speed-ups (the curve over its 1-node value),
BFTrainer's administrator metric. ``objective="normalized"`` is the model-neutral objective
of the headline (``mtgym.metrics``): each job's declared rate in units of its best declared
per-node rate (the user-visible stand-in for its reference rate), so every model weighs
alike and a super-linear curve is not undervalued as a 1-node ratio would.

**Knobs on a scenario** (``mtgym.policy.tunable``): ``max_jobs``, ``t_fwd`` and ``objective``
take, unless given, the scenario's ``episode.baselines[<name>]`` (its ``mtgym tune`` record);
``tuned=False`` ignores it. ``freetrain-paper`` is the replayer's setting: maxJ 10, T_fwd 10 s,
raw samples, untuned.

**T_fwd** is a scenario parameter (``episode.t_fwd_s``, ``problem.ScenarioTfwd``): without an
explicit ``t_fwd`` the policy takes the scenario's value when the driver passes it
(``mtgym.evaluate`` does), else the paper's 10 s. ``freetrain-tfwd10`` is FreeTrain fixed
at the paper's 10 s, whatever the scenario says.

``information="none"`` is a reference point of ours: FreeTrain told nothing about the jobs
(``InfoMode.PROFILED``: it cannot see declarations). It declares one flat guess for every
job: linear scaling at a common per-node rate ``guess_rate`` up to the job's maximum, and
rescale costs of ``guess_cost_s`` (default 15 s, MalleTrain's default cost prior). The rate
cancels out of the objective (gains and losses both scale with it), so it never matters.

``FreeTrainAware`` (name ``freetrain-aware``) is an extension of ours, not the paper's: the
same DP, but each job's curve is discounted by the profiled slowdown of the nodes it would
get (its class, the n fastest idle nodes) and placement is speed-aware.
"""

from __future__ import annotations

import numpy as np

from baselines.milp.problem import (
    T_FWD_PAPER,
    AllocProblem,
    CurveMemo,
    ScenarioTfwd,
    build_problem,
    dedupe_curve,
)
from baselines.milp.solvers import SolveResult, solve_counts_dp, solve_node_milp
from mtgym.core.types import Allocation
from mtgym.policy.tunable import (
    MAX_JOBS_MILP,
    MAX_JOBS_PAPER,
    Tunable,
    admit,
    cap_grid,
    records_knobs,
)
from mtgym.sim.view import InfoMode, SchedulerView

OBJECTIVES = ("throughput", "speedup", "normalized")


def realise(view: SchedulerView, jobs: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Node map for the counts: no migration, shrinking jobs keep their fastest nodes.

    Args:
        view: what the policy sees now (``mtgym.sim.view.SchedulerView``).
        jobs: the jobs' indices.
        counts: the node count of each of ``jobs``.
    """
    return view.pack(jobs, counts)


class FreeTrainPolicy(Tunable, ScenarioTfwd):
    """FreeTrain's allocator (see module docstring).

    Args:
        solver: ``"count"`` (exact DP) or ``"milp"`` (node-level MILP in PuLP).
        t_fwd: T_fwd in seconds; None: the scenario's (``episode.t_fwd_s``), else 10 s.
        max_jobs: the admission cap maxJ; None: scaled with the machine (``admission_cap``).
        time_limit_s: the MILP's time limit.
        objective: ``"throughput"`` (raw samples, BFTrainer's), ``"speedup"`` or
            ``"normalized"`` (module docstring).
        milp_solver: PuLP solver of the MILP (``"highs"``, CBC as the fallback).
        information: ``"declared"`` or ``"none"`` (module docstring).
        guess_rate, guess_cost_s: the flat guess of ``information="none"``.
        tuned: take the scenario's recorded knobs (``mtgym.policy.tunable``).
    """

    name = "freetrain"
    info_mode = InfoMode.USER
    KNOBS = ("max_jobs", "t_fwd", "objective")

    @records_knobs
    def __init__(
        self,
        *,
        solver: str = "count",
        t_fwd: float | None = None,
        max_jobs: int | None = None,
        time_limit_s: float = 10.0,
        objective: str = "throughput",
        milp_solver: str = "highs",
        information: str = "declared",
        guess_rate: float = 1.0,
        guess_cost_s: float = 15.0,
        tuned: bool = True,
    ) -> None:
        if solver not in ("count", "milp"):
            raise ValueError(f"solver {solver!r} is not 'count' or 'milp'")
        if objective not in OBJECTIVES:
            raise ValueError(f"objective {objective!r} is not one of {', '.join(OBJECTIVES)}")
        if (max_jobs is not None and max_jobs < 1) or time_limit_s <= 0:
            raise ValueError("time_limit_s must be > 0, max_jobs >= 1 (or None: scaled)")
        if information not in ("declared", "none"):
            raise ValueError(f"information {information!r} is not 'declared' or 'none'")
        if not (guess_rate > 0 and np.isfinite(guess_rate)) or not (
            guess_cost_s >= 0 and np.isfinite(guess_cost_s)
        ):
            raise ValueError("guess_rate must be finite and > 0, guess_cost_s finite and >= 0")
        self.information = information
        self.guess_rate, self.guess_cost_s = float(guess_rate), float(guess_cost_s)
        if information == "none":
            self.info_mode = InfoMode.PROFILED  # told nothing: declarations are not visible
        self._init_t_fwd(t_fwd)
        self.tuned = bool(tuned)
        self.solver = solver
        self.max_jobs = None if max_jobs is None else int(max_jobs)
        #: the scaled cap's ceiling: the node-level MILP's budget; the count DP needs none
        self.cap_ceiling = MAX_JOBS_MILP if solver == "milp" else None
        self.time_limit_s, self.objective, self.milp_solver = (
            float(time_limit_s),
            objective,
            milp_solver,
        )
        self.last: SolveResult | None = None
        self.fallbacks = 0  # decisions that kept the previous map (no proven optimum)

    def reset(self, view: SchedulerView) -> None:
        """Forget the last solve.

        Args:
            view: the episode's first view (unused).
        """
        self.last = None
        self.fallbacks = 0

    @property
    def knobs(self) -> dict[str, object]:
        """Knob values; ``t_fwd`` as given or tuned (None: the scenario's)."""
        return {**super().knobs, "t_fwd": self.t_fwd_knob}

    def tuning_grid(self, episode: object) -> dict[str, list[object]]:
        """MaxJ (default, 10, the scenario's slots x 1, 2, 4, 8), then T_fwd (the scenario's,
        x 1/4, 1/2, 2, 4 of it), then the objective (the policy's, then the others).

        Args:
            episode: the scenario's ``EpisodeSpec``.

        Returns:
            knob -> the values ``mtgym tune`` sweeps, in that order.
        """
        return {
            "max_jobs": list(cap_grid(None, episode)),
            "t_fwd": list(self.t_fwd_grid(episode)),
            "objective": [self.objective, *[o for o in OBJECTIVES if o != self.objective]],
        }

    def curves(self, view: SchedulerView, jobs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Declared objective curves (throughput, or speed-up over 1 node); with
        ``information="none"`` the flat guess ``guess_rate x n`` on [0, max nodes].

        A declared curve is made once per job and kept while the job's rows of the view's
        curves stay the same (``problem.CurveMemo``); the arrays are shared, read-only.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).
            jobs: the admitted jobs' indices.

        Returns:
            One (nodes, values) curve per job.
        """
        if self.information == "none":
            out = []
            for j in jobs:
                x = np.array([0.0, float(view.max_nodes[j])])
                y = x * (1.0 if self.objective == "speedup" else self.guess_rate)
                out.append((x, y))
            return out

        def make(j: int) -> tuple[np.ndarray, np.ndarray]:
            x, y = dedupe_curve(view.curve_nodes[j], view.curve_tput[j])
            if self.objective == "speedup" and x.size:
                one = float(np.interp(1.0, x, y))
                y = y / one if one > 0 else y
            elif self.objective == "normalized" and x.size:
                pos = x > 0
                best = float(np.max(y[pos] / x[pos])) if pos.any() else 0.0
                y = y / best if best > 0 else y
            return x, y

        memo = self.__dict__.get("_curve_memo")
        if memo is None:
            memo = self._curve_memo = CurveMemo()
        return memo.get(view, np.asarray(jobs, dtype=np.int64), self.objective, make)

    def problem(self, view: SchedulerView) -> AllocProblem:
        """The MILP's data for this view: the admitted jobs, their curves and costs.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).
        """
        jobs = admit(view, self.max_jobs, self.cap_ceiling)
        up, down = self.costs(view, jobs)
        return build_problem(view, jobs, self.curves(view, jobs), up, down, self.t_fwd)

    def costs(self, view: SchedulerView, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Declared (up, down) rescale costs, or the common guess with ``information="none"``.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).
            jobs: the admitted jobs' indices.

        Returns:
            (up, down), seconds per job.
        """
        if self.information == "none":
            guess = np.full(jobs.size, self.guess_cost_s)
            return guess, guess.copy()
        return view.r_up_s[jobs], view.r_down_s[jobs]

    def solve(self, p: AllocProblem) -> SolveResult:
        """Run the configured solver (the node MILP falls back from HiGHS to CBC).

        Args:
            p: the decision's problem.
        """
        if self.solver == "count":
            return solve_counts_dp(p)
        res = solve_node_milp(p, solver=self.milp_solver, time_limit_s=self.time_limit_s)
        if res.status.startswith(("failed", "unavailable")) and self.milp_solver == "highs":
            res = solve_node_milp(p, solver="cbc", time_limit_s=self.time_limit_s)
        return res

    def decide(self, view: SchedulerView) -> Allocation:
        """Solve and realise; with the MILP and no proven optimum, keep the previous map.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).

        Returns:
            The node map of the solution.
        """
        p = self.problem(view)
        res = self.solve(p)
        self.last = res
        if not res.optimal and self.solver == "milp":
            # BFTrainer: keep the previous map (departed nodes are already gone).
            self.fallbacks += 1
            return Allocation(np.where(view.available, view.node_job, -1).astype(np.int32))
        if res.node_map is not None:
            a = np.where(view.available, view.node_job, -1).astype(np.int32)
            a[np.isin(a, p.jobs)] = -1
            for i, j in enumerate(p.jobs):
                a[p.nodes[res.node_map[i]]] = j
            return Allocation(a)
        return Allocation(realise(view, p.jobs, res.counts))


class FreeTrainAware(FreeTrainPolicy):
    """Extension (ours): FreeTrain's DP with variability-discounted curves (module doc)."""

    name = "freetrain-aware"

    def curves(self, view: SchedulerView, jobs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Declared curves divided by the slowest of the n fastest idle nodes for the class.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).
            jobs: the admitted jobs' indices.
        """
        base = super().curves(view, jobs)
        idle = np.flatnonzero(view.available)
        out = []
        by_class: dict[int, np.ndarray] = {}  # one sort per application class, not per job
        for j, (x, y) in zip(jobs, base, strict=True):
            if x.size == 0 or idle.size == 0:
                out.append((x, y))
                continue
            cls = int(view.app_class[j])
            sf = by_class.get(cls)
            if sf is None:
                sf = by_class[cls] = np.sort(view.slowdown[idle, cls])
            n = np.clip(x.astype(np.int64), 1, sf.size)
            out.append((x, np.where(x > 0, y / sf[n - 1], 0.0)))
        return out


def FreeTrainMILP(**kwargs: object) -> FreeTrainPolicy:  # noqa: N802 - a policy factory
    """FreeTrain with the node-level MILP (HiGHS, 10 s limit), registered as ``freetrain-milp``.

    Its scaled admission cap stops at ``MAX_JOBS_MILP`` (128) jobs: the model has admitted
    jobs x idle nodes binaries, and beyond that HiGHS does not prove optimality within the
    10 s limit on large machines (the policy then keeps its previous map).
    """
    policy = FreeTrainPolicy(solver="milp", **kwargs)
    policy.name = "freetrain-milp"
    return policy


def FreeTrainPaper(**kwargs: object) -> FreeTrainPolicy:  # noqa: N802 - a policy factory
    """FreeTrain as BFTrainer's replayer runs it (``freetrain-paper``): maxJ 10, T_fwd 10 s,
    raw samples, whatever the scenario says or a tuning recorded: the untuned reference.
    """
    kwargs.setdefault("max_jobs", MAX_JOBS_PAPER)
    kwargs.setdefault("t_fwd", T_FWD_PAPER)
    kwargs.setdefault("tuned", False)
    policy = FreeTrainPolicy(**kwargs)
    policy.name = "freetrain-paper"
    return policy


def FreeTrainTfwd10(**kwargs: object) -> FreeTrainPolicy:  # noqa: N802 - a policy factory
    """FreeTrain at the paper's T_fwd = 10 s whatever the scenario says (``freetrain-tfwd10``)."""
    kwargs.setdefault("t_fwd", T_FWD_PAPER)
    policy = FreeTrainPolicy(**kwargs)
    policy.name = "freetrain-tfwd10"
    return policy


def FreeTrainSpeedup(**kwargs: object) -> FreeTrainPolicy:  # noqa: N802 - a policy factory
    """FreeTrain maximising the sum of speed-ups (``freetrain-speedup``): each job's declared
    curve over its own 1-node rate, BFTrainer's administrator objective, which weighs every
    model alike, as the model-neutral headline (``mtgym.metrics``) does.
    """
    kwargs.setdefault("objective", "speedup")
    policy = FreeTrainPolicy(**kwargs)
    policy.name = "freetrain-speedup"
    return policy
