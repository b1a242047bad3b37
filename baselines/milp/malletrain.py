"""MalleTrain (arXiv 2404.15668): FreeTrain's allocator fed by a Job Profiling Advisor.

MalleTrain is told nothing about a job up front (``InfoMode.PROFILED``). Its JPA
(docs/papers.md §2.2, ``BFTrainer/BFTrainer`` ``msgOperations.py`` and the ``online-profiling``
branch) learns:

- **passively**: the throughput at every node count a job has run at, from its progress
  reports (the view's rate is 0 while a job pauses, so only steady rates are recorded;
  later measurements at a count overwrite earlier ones, as the code does);
- **rescale costs** from gaps in progress: after a resize at t_r, ``pause = (t - t_r) -
  (progress - progress_r) / rate``, stored as the job's up or down cost (the latest
  replaces the previous; unknown costs default to the median measured so far, else
  ``default_cost_s``);
- **actively**: a new job is probed at a few sizes, largest first (fractions of its
  maximum, default 1, 1/2, 1/4, 1/8), each held ``probe_s`` seconds after its pause ends,
  paying the rescale cost. A probe waits until its size fits in the idle nodes; if the
  largest does not fit, the largest size that fits is probed first.

The allocator is FreeTrain's exact count-level DP (``T_fwd`` x measured throughput - rescale
loss), restricted to counts within each job's measured range (the SOS2 bound of the
artifact: no extrapolation beyond the largest measured size). Probing jobs get their probe
size first; the DP shares the remaining nodes among profiled jobs.

**Options** (defaults give the behaviour above, bit for bit):

- ``prior="declared"``: MalleTrain as on its ``main`` branch (docs/papers.md §2.2): it reads the
  users' declarations (``InfoMode.USER``), starts each job from the declared breakpoints and
  costs, and merges every measured point into them (a measured count overwrites the declared
  value there, other counts keep theirs); measured costs replace the declared ones. With
  ``probe=False`` too, no probe is ever issued: the JPA is purely passive.
- ``probe=False``: no active probes (needs ``prior="declared"``: a job with neither a
  declaration nor a measurement could never be started).
- ``cap_at_measured=False``: a job may grow past its largest known size up to its maximum;
  the curve is extended along its last segment (slope clamped at 0, so never decreasing),
  and the passive JPA corrects it once the job runs there. The SOS2 bound is the default.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from baselines.milp.freetrain import realise
from baselines.milp.problem import ScenarioTfwd, build_problem, dedupe_curve
from baselines.milp.solvers import SolveResult, solve_counts_dp
from mtgym.core.types import Allocation, JobStatus, RescaleMode
from mtgym.policy.tunable import Tunable, admit, cap_grid, records_knobs
from mtgym.sim.view import InfoMode, SchedulerView


@dataclass
class JobProfile:
    """What the JPA knows about one job.

    Attributes:
        measured: node count -> measured samples/s.
        probes: sizes still to probe, largest first (None: not planned yet).
        probing: (size, time its steady rate was first seen) of the probe under way.
        cost_up, cost_down: measured rescale pauses in seconds (None: not measured).
        change: (t, progress, count, "up"/"down", rate before) of a resize whose cost is
            being measured.
    """

    measured: dict[int, float] = field(default_factory=dict)  # node count -> samples/s
    probes: list[int] | None = None  # sizes still to probe, largest first (None = not planned)
    probing: tuple[int, float] | None = None  # (size, time the probe's steady rate was first seen)
    cost_up: float | None = None
    cost_down: float | None = None
    # (t, progress, count, "up"/"down", rate before): a resize whose cost is being measured
    change: tuple[float, float, int, str, float] | None = None


class MalleTrainPolicy(Tunable, ScenarioTfwd):
    """MalleTrain: JPA + FreeTrain's allocator (see the module docstring).

    Args:
        t_fwd: seconds a new allocation is expected to last; None: the scenario's.
        max_jobs: the admission cap; None: scaled with the machine (``admission_cap``).
        probe_fractions: probe sizes as fractions of a job's maximum, each in (0, 1].
        probe_s: seconds each probe is held after its pause ends.
        default_cost_s: rescale cost assumed before any is measured or declared.
        prior: ``"none"`` (measure everything) or ``"declared"`` (start from the users'
            declarations, as MalleTrain's ``main`` branch).
        probe: issue active probes (False needs ``prior="declared"``).
        cap_at_measured: no count beyond a job's largest measured size (the SOS2 bound).
        tuned: take the scenario's recorded ``max_jobs`` and ``t_fwd`` unless given.
    """

    name = "malletrain"
    info_mode = InfoMode.PROFILED
    KNOBS = ("max_jobs", "t_fwd")

    @records_knobs
    def __init__(
        self,
        *,
        t_fwd: float | None = None,
        max_jobs: int | None = None,
        probe_fractions: tuple[float, ...] = (1.0, 0.5, 0.25, 0.125),
        probe_s: float = 20.0,
        default_cost_s: float = 15.0,
        prior: str = "none",
        probe: bool = True,
        cap_at_measured: bool = True,
        tuned: bool = True,
    ) -> None:
        if (max_jobs is not None and max_jobs < 1) or probe_s < 0 or default_cost_s < 0:
            raise ValueError("max_jobs >= 1 (or None), probe_s >= 0, default_cost_s >= 0")
        if prior not in ("none", "declared"):
            raise ValueError(f"prior {prior!r} is not 'none' or 'declared'")
        if not probe and prior == "none":
            raise ValueError(
                "probe=False needs prior='declared': with neither a declaration nor a probe "
                "a new job has no curve and is never started"
            )
        self.prior, self.probe, self.cap_at_measured = prior, bool(probe), bool(cap_at_measured)
        if prior == "declared":
            self.info_mode = InfoMode.USER  # it reads the users' declarations
        self._init_t_fwd(t_fwd)
        if not probe_fractions or any(not (0 < f <= 1) for f in probe_fractions):
            raise ValueError(f"probe_fractions {probe_fractions!r} must be in (0, 1]")
        self.max_jobs = None if max_jobs is None else int(max_jobs)
        self.tuned = bool(tuned)
        self.probe_fractions = tuple(sorted(set(probe_fractions), reverse=True))
        self.probe_s, self.default_cost_s = float(probe_s), float(default_cost_s)
        self.jobs: dict[int, JobProfile] = {}
        self.last: SolveResult | None = None
        self.probes_issued = 0  # probes started (a probe retried after losing its nodes counts)

    def reset(self, view: SchedulerView) -> None:
        """Forget every profile.

        Args:
            view: the episode's first view (unused).
        """
        self.jobs = {}
        self.last = None
        self.probes_issued = 0

    @property
    def knobs(self) -> dict[str, object]:
        """Knob values; ``t_fwd`` as given or tuned (None: the scenario's)."""
        return {"max_jobs": self.max_jobs, "t_fwd": self.t_fwd_knob}

    def tuning_grid(self, episode: object) -> dict[str, list[object]]:
        """maxJ, then T_fwd, as for FreeTrain (``FreeTrainPolicy.tuning_grid``).

        Args:
            episode: the scenario's ``EpisodeSpec``.

        Returns:
            knob -> the values ``mtgym tune`` sweeps.
        """
        return {"max_jobs": list(cap_grid(None, episode)), "t_fwd": list(self.t_fwd_grid(episode))}

    # -- the Job Profiling Advisor ---------------------------------------------------
    def observe(self, view: SchedulerView) -> None:
        """Passive measurement of rates and of rescale pauses from progress reports.

        Args:
            view: the current view (its measured rates, counts and progress).
        """
        t = view.time
        for j in np.flatnonzero(view.status == JobStatus.ACTIVE):
            prof = self.jobs.setdefault(int(j), JobProfile())
            n, r = int(view.n_nodes[j]), float(view.rate[j])
            if n > 0 and r > 0:
                prof.measured[n] = r
                if prof.probing is not None and prof.probing[0] == n and np.isnan(prof.probing[1]):
                    prof.probing = (n, t)
                # Measured once progress moves again: under BFTrainer's cost semantics the
                # job reports its rate while it still redoes the lost samples.
                if (
                    prof.change is not None
                    and prof.change[2] == n
                    and float(view.progress[j]) > prof.change[1]
                ):
                    t_r, p_r, _, kind, r_before = prof.change
                    pause = (t - t_r) - (float(view.progress[j]) - p_r) / r
                    if view.rescale_mode is RescaleMode.BFTRAINER and r_before > 0:
                        pause *= r / r_before  # R x (rate before) samples were lost
                    if pause >= -1e-6:
                        if kind == "up":
                            prof.cost_up = max(pause, 0.0)
                        else:
                            prof.cost_down = max(pause, 0.0)
                    prof.change = None

    def _cost_prior(self, kind: str) -> float:
        """The median measured ``kind`` ("up"/"down") cost over every job profiled, else
        ``default_cost_s``; computed once per decision (``_priors``, emptied by ``decide``
        after ``observe``: nothing else changes a measured cost), not once per job sized.
        """
        priors = self.__dict__.setdefault("_priors", {})
        if kind not in priors:
            vals = [getattr(p, f"cost_{kind}") for p in self.jobs.values()]
            vals = [v for v in vals if v is not None]
            priors[kind] = float(np.median(vals)) if vals else self.default_cost_s
        return priors[kind]

    def _curve(self, j: int, view: SchedulerView) -> tuple[np.ndarray, np.ndarray]:
        """Job j's breakpoints: measured points (over the declared ones with a prior),
        extended to its maximum along the last segment unless capped at the largest known.
        """
        m = self.jobs[j].measured
        if self.prior == "declared":
            x, y = dedupe_curve(view.curve_nodes[j], view.curve_tput[j])
            pts = {float(a): float(b) for a, b in zip(x, y, strict=True)}
            pts.setdefault(0.0, 0.0)
            pts.update({float(k): v for k, v in m.items()})
            keys = sorted(pts)
            xs, ys = np.array(keys), np.array([pts[k] for k in keys])
        else:
            xs = np.array([0.0, *sorted(m)])
            ys = np.array([0.0, *[m[k] for k in sorted(m)]])
        jmax = float(view.max_nodes[j])
        if not self.cap_at_measured and xs.size >= 2 and xs[-1] < jmax:
            slope = max((ys[-1] - ys[-2]) / (xs[-1] - xs[-2]), 0.0)
            ys = np.append(ys, ys[-1] + slope * (jmax - xs[-1]))
            xs = np.append(xs, jmax)
        return xs, ys

    def _cost(self, j: int, kind: str, view: SchedulerView) -> float:
        """Measured cost, else the declared one (with a prior), else the prior of all jobs."""
        v = getattr(self.jobs[j], f"cost_{kind}")
        if v is not None:
            return float(v)
        if self.prior == "declared":
            d = float((view.r_up_s if kind == "up" else view.r_down_s)[j])
            if np.isfinite(d):
                return d
        return self._cost_prior(kind)

    def _plan_probes(self, j: int, view: SchedulerView) -> list[int]:
        if not self.probe:
            return []
        jmin, jmax = int(view.min_nodes[j]), int(view.max_nodes[j])
        sizes = sorted(
            {max(jmin, min(jmax, round(f * jmax))) for f in self.probe_fractions}, reverse=True
        )
        return [s for s in sizes if s >= 1]

    # -- decision -----------------------------------------------------------------------
    def decide(self, view: SchedulerView) -> Allocation:
        """Probe new jobs, then share the rest by FreeTrain's DP on measured curves.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).

        Returns:
            The node map: probing jobs at their probe size, the others at the DP's counts.
        """
        self.observe(view)
        self._priors: dict[str, float] = {}  # the measured costs may have changed (``_cost_prior``)
        t = view.time
        admitted = admit(view, self.max_jobs)
        free = int(np.count_nonzero(view.available))
        targets: dict[int, int] = {}
        probing_jobs = []
        for j in admitted:
            prof = self.jobs.setdefault(int(j), JobProfile())
            if prof.probes is None:
                prof.probes = self._plan_probes(int(j), view)
            if prof.probing is not None:
                size, since = prof.probing
                if not np.isnan(since) and t - since >= self.probe_s and size in prof.measured:
                    prof.probing = None  # probe done: its rate is measured
                    if size in prof.probes:
                        prof.probes.remove(size)
            if prof.probing is None and prof.probes:
                fits = [s for s in prof.probes if s <= free]
                if fits:
                    prof.probing = (fits[0], float("nan"))
                    self.probes_issued += 1
            if prof.probing is not None:
                size = prof.probing[0]
                if size <= free:
                    targets[int(j)] = size
                    free -= size
                    probing_jobs.append(int(j))
                else:
                    prof.probing = None  # cannot hold the probe now; retry later
        declared = self.prior == "declared"
        profiled = [
            int(j)
            for j in admitted
            if int(j) not in targets and (declared or self.jobs[int(j)].measured)
        ]
        curves = [self._curve(j, view) for j in profiled]
        ups = np.array([self._cost(j, "up", view) for j in profiled])
        downs = np.array([self._cost(j, "down", view) for j in profiled])
        pj = np.array(profiled, dtype=np.int64)
        if pj.size:
            p = build_problem(view, pj, curves, ups, downs, self.t_fwd)
            p.capacity = max(free, 0)  # only the nodes left after probes
            res = solve_counts_dp(p)
            self.last = res
            for j, c in zip(profiled, res.counts, strict=True):
                targets[j] = int(c)
        order = probing_jobs + [j for j in profiled]
        jobs = np.array(order, dtype=np.int64)
        counts = np.array([targets[j] for j in order], dtype=np.int64)
        node_map = realise(view, jobs, counts)
        # remember resizes, to measure their pauses from the next progress reports
        for j, c in zip(order, counts, strict=True):
            cur = int(view.n_nodes[j])
            if c != cur and c > 0 and cur > 0:  # a resize (a start's pause is not one)
                prof = self.jobs[j]
                kind = "up" if c > cur else "down"
                prof.change = (t, float(view.progress[j]), int(c), kind, float(view.rate[j]))
        return Allocation(node_map)
