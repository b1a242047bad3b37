"""Predictions to hold the real jobs against: per world size and over a whole replay.

Two sources of prediction for a job:

- the **trace** (``source="trace"``): the simulator's own model of the job (the rates it used
  when it took the decisions, in the scenario's units) on the replay's clock: a replay at
  ``time_scale`` X plays X simulated seconds per wall second, so a rate of r samples per
  simulated second is r * X per wall second, and a cost of c simulated seconds is c / X
  wall seconds;
- a **calibration** file (``source="calibration"``, ``mtgym.bridge.calibrate``): the
  throughput table and costs measured on an earlier replay, in real units.

``simulate_replay`` runs the mtgym simulator itself (``play``, pause rescale costs)
on the replay's schedule, compressed to wall-clock time, with jobs built from a prediction
(``JobRow`` tables): its per-job samples are the prediction of what the real jobs do over
the whole replay, rescale pauses included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mtgym.bridge import calibrate as cal_mod
from mtgym.bridge.trace import Trace
from mtgym.core.types import Allocation, AppClass
from mtgym.generate.workload import JobRow
from mtgym.sim.view import InfoMode, SchedulerView


@dataclass
class JobPrediction:
    """What a source predicts for one job (rates per simulator node count).

    Everything is in real units: samples per wall second and wall seconds.

    Attributes:
        job: the trace job id.
        source: ``"trace"`` or ``"calibration"``.
        rate_fn: simulator nodes -> samples per wall second, or None when the source has no
            figure.
        r_up_s: scale-up pause.
        r_down_s: scale-down pause.
        startup_s: start-from-0 pause.
    """

    job: str
    source: str  # "trace" or "calibration"
    rate_fn: Callable[[int], float | None]
    r_up_s: float  # wall seconds
    r_down_s: float
    startup_s: float

    def rate(self, nodes: int) -> float | None:
        """Predicted samples/s on ``nodes`` nodes (None when the source has no figure).

        Args:
            nodes: simulator nodes.
        """
        return self.rate_fn(nodes)


def _trace_rate(trace: Trace, job: str, nodes: int) -> float | None:
    """The trace's rate of ``job`` on ``nodes`` nodes, in samples per simulated second.

    ``Trace.predicted_rate`` when it has a figure, else the header's curve interpolated
    linearly from (0, 0) and held flat past its last point; None without a curve.
    """
    r = trace.predicted_rate(job, nodes)
    if r is not None:
        return r
    curve = trace.jobs[job].curve
    if not curve:
        return None
    ks = sorted(curve)
    return float(np.interp(nodes, [0, *ks], [0.0, *(curve[k] for k in ks)]))


def _scaled(v: float | None, k: float) -> float | None:
    """``v * k``, None kept."""
    return None if v is None else v * k


def from_trace(trace: Trace, time_scale: float) -> dict[str, JobPrediction]:
    """The simulator's predictions recorded in the trace (the rates it used on such node
    sets, else its curve, interpolated as the simulator does).

    Rates are multiplied by ``time_scale`` and costs divided by it, so both are per wall
    second of a replay at that scale.

    Args:
        trace: the trace.
        time_scale: simulated seconds per wall second of the replay.

    Returns:
        Job id -> prediction, for every job of the trace.
    """
    out = {}
    for j, tj in trace.jobs.items():
        out[j] = JobPrediction(
            job=j,
            source="trace",
            rate_fn=lambda n, j=j: _scaled(_trace_rate(trace, j, n), time_scale),
            r_up_s=tj.r_up_s / time_scale,
            r_down_s=tj.r_down_s / time_scale,
            startup_s=tj.startup_s / time_scale,
        )
    return out


def from_calibration(cal: dict[str, Any]) -> dict[str, JobPrediction]:
    """Predictions from a calibration file's tables and costs.

    A job whose curve has only the (0, 0) point (nothing measured) predicts None at every
    size.

    Args:
        cal: a calibration file's object (``read_calibration``); real units already.

    Returns:
        Job id -> prediction, for every job of the calibration.
    """
    out = {}
    for j, e in cal["jobs"].items():
        out[j] = JobPrediction(
            job=j,
            source="calibration",
            rate_fn=lambda n, e=e: cal_mod.rate(e, n) if len(e["curve_nodes"]) > 1 else None,
            r_up_s=float(e["r_up_s"]),
            r_down_s=float(e["r_down_s"]),
            startup_s=float(e["startup_s"]),
        )
    return out


class TracePolicy:
    """A policy that plays a trace's node sets back (times mapped by ``to_sim``).

    ``ORACLE`` information: it reads nothing of the view but the time. The simulator
    repairs its allocation as any other (a job above its ``max_nodes`` is cut).

    Args:
        trace: the trace whose events are played.
        job_index: trace job id -> job index in the simulated instance; events of other
            jobs are ignored.
        num_nodes: nodes of the instance (the trace's node indices are used as they are).
        to_sim: the view's time -> the trace's simulated time.
        max_world_size: keep only the first this many nodes of each set (None: all).
    """

    name = "trace-replay"
    info_mode = InfoMode.ORACLE

    def __init__(
        self,
        trace: Trace,
        job_index: dict[str, int],
        num_nodes: int,
        to_sim: Callable[[float], float],
        max_world_size: int | None = None,
    ) -> None:
        self.events = [e for e in trace.events if e.job in job_index]
        self.job_index = job_index
        self.num_nodes = num_nodes
        self.to_sim = to_sim
        self.cap = max_world_size
        self.reset(None)

    def reset(self, view: SchedulerView | None) -> None:
        """Back to the start of the trace.

        Args:
            view: ignored (None is accepted: ``__init__`` calls it so).
        """
        self._i = 0
        self._held: dict[str, tuple[int, ...]] = {}

    def decide(self, view: SchedulerView) -> Allocation:
        """The trace's node map at the view's time.

        Every event up to ``to_sim(view.time)`` (plus 1 microsecond, against rounding) is
        applied in order.

        Args:
            view: the simulator's view; only ``time`` is read.

        Returns:
            (N,) job index per node, -1 for none.
        """
        t = self.to_sim(view.time) + 1e-6
        while self._i < len(self.events) and self.events[self._i].t <= t:
            ev = self.events[self._i]
            self._held[ev.job] = ev.nodes[: self.cap] if self.cap else ev.nodes
            self._i += 1
        a = np.full(self.num_nodes, -1, dtype=np.int32)
        for j, nodes in self._held.items():
            a[list(nodes)] = self.job_index[j]
        return Allocation(a)


def simulate_replay(
    trace: Trace,
    preds: dict[str, JobPrediction],
    *,
    time_scale: float,
    sim0: float | None = None,
    max_world_size: int | None = None,
    dt: float = 0.05,
) -> dict[str, float]:
    """Samples each job is predicted to process over the replay (wall-clock time).

    Builds an instance whose nodes are all idle for the replay's wall duration and whose
    jobs are ``preds`` as table jobs, then runs the simulator with ``TracePolicy`` deciding
    every ``dt`` wall seconds. Jobs without a usable curve are predicted ``nan``.

    Each job's curve covers 1 to the largest node count the trace gives it (capped by
    ``max_world_size``), with unbounded work, submitted at 0 and ``min_nodes`` 1, so the
    simulator charges only the rescale pauses of the trace's changes.

    Args:
        trace: the replayed trace.
        preds: job id -> prediction (``from_trace`` or ``from_calibration``); jobs not in
            it are left out.
        time_scale: simulated seconds per wall second of the replay.
        sim0: the simulated time the replay started at (None: the trace's ``t_start``).
        max_world_size: the replay's cap on nodes per job.
        dt: the decision interval, wall seconds.

    Returns:
        Job id -> predicted samples over the replay; NaN for all when nothing is usable or
        the replay has no length.
    """
    from mtgym.generate.uniform import uniform_instance
    from mtgym.policy.play import play

    sim0 = trace.header.t_start if sim0 is None else sim0
    horizon = (trace.t_end - sim0) / time_scale
    n_nodes = trace.header.num_nodes
    ids = [j for j in trace.jobs if j in preds]
    rows, usable = [], []
    for j in ids:
        p = preds[j]
        used = [len(e.nodes) for e in trace.events if e.job == j]
        top = max([1, *used])
        if max_world_size:
            top = min(top, max_world_size)
        ks = list(range(1, top + 1))
        vals = [p.rate(k) for k in ks]
        if any(v is None for v in vals):
            continue
        usable.append(j)
        rows.append(
            JobRow(
                name=f"job{j}",
                model="bridge",
                app_class=AppClass.parse(trace.jobs[j].app_class),
                submit_s=0.0,
                min_nodes=1,
                max_nodes=top,
                work=1e18,
                r_up_s=p.r_up_s,
                r_down_s=p.r_down_s,
                startup_s=p.startup_s,
                curve_nodes=[0.0, *map(float, ks)],
                curve_tput=[0.0, *map(float, vals)],  # type: ignore[arg-type]
            )
        )
    out = {j: float("nan") for j in ids}
    if not rows or horizon <= 0:
        return out
    inst = uniform_instance(n_nodes, rows, t_end=horizon)
    index = {j: i for i, j in enumerate(usable)}
    policy = TracePolicy(trace, index, n_nodes, lambda t: sim0 + t * time_scale, max_world_size)
    res = play(inst, policy, decision_interval_s=dt, to_horizon=True)
    for j, i in index.items():
        out[j] = float(res.state.progress[i])
    return out
