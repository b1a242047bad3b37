"""Heuristic allocators: greedy by marginal throughput (equal share lives in mtgym.policy).

``GreedyPolicy`` (name ``greedy``): admit active jobs FCFS up to ``max_jobs`` (None, the
default: the cap scaled with the machine, ``mtgym.policy.tunable.admission_cap``), then hand out
idle nodes one step at a time to the job whose declared curve gains the most throughput per
node from the step (a job at 0 nodes must take ``min_nodes`` at once; a running job one
node), until nodes run out or no step gains anything. Rescale costs are ignored (that is
what the MILP adds). Realised sticky and speed-aware by ``SchedulerView.pack``.
"""

from __future__ import annotations

import heapq

import numpy as np

from baselines.milp.problem import dedupe_curve
from mtgym.core.types import Allocation
from mtgym.policy.equal_share import EqualShare
from mtgym.policy.tunable import Tunable, admit, cap_grid, records_knobs
from mtgym.sim.view import InfoMode, SchedulerView

__all__ = ["EqualShare", "GreedyPolicy"]


class GreedyPolicy(Tunable):
    """Greedy by marginal throughput per node (see module docstring).

    Args:
        max_jobs: the admission cap; None: scaled with the machine.
        tuned: take the scenario's recorded ``max_jobs`` (``mtgym.policy.tunable``).
    """

    name = "greedy"
    info_mode = InfoMode.USER
    KNOBS = ("max_jobs",)

    @records_knobs
    def __init__(self, max_jobs: int | None = None, *, tuned: bool = True) -> None:
        if max_jobs is not None and max_jobs < 1:
            raise ValueError(f"max_jobs must be >= 1 (or None: scaled), got {max_jobs}")
        self.max_jobs = max_jobs
        self.tuned = bool(tuned)

    def reset(self, view: SchedulerView) -> None:
        """Stateless: nothing to forget.

        Args:
            view: the episode's first view (unused).
        """

    def tuning_grid(self, episode: object) -> dict[str, list[object]]:
        """The admission caps ``mtgym tune`` tries (``cap_grid``).

        Args:
            episode: the scenario's ``EpisodeSpec``, whose slots scale the caps.

        Returns:
            ``{"max_jobs": [...]}``.
        """
        return {"max_jobs": list(cap_grid(None, episode))}

    def decide(self, view: SchedulerView) -> Allocation:
        """Marginal-gain greedy over the declared curves.

        Args:
            view: what the policy sees now (``mtgym.sim.view.SchedulerView``).

        Returns:
            The node map giving each admitted job its greedy count, without migration.
        """
        jobs = admit(view, self.max_jobs)
        free = int(np.count_nonzero(view.available))
        curves = [dedupe_curve(view.curve_nodes[j], view.curve_tput[j]) for j in jobs]
        count = np.zeros(jobs.size, dtype=np.int64)
        cap = np.array(
            [
                min(int(view.max_nodes[j]), int(c[0][-1]) if c[0].size else 0)
                for j, c in zip(jobs, curves, strict=True)
            ]
        )

        def step(i: int) -> tuple[float, int]:
            n = int(count[i])
            k = int(view.min_nodes[jobs[i]]) if n == 0 else 1
            if n + k > cap[i]:
                return -np.inf, k
            x, y = curves[i]
            gain = float(np.interp(n + k, x, y) - np.interp(n, x, y)) / k
            return gain, k

        heap: list[tuple[float, int, int]] = []
        for i in range(jobs.size):
            g, k = step(i)
            if g > 0:
                heapq.heappush(heap, (-g, i, k))
        while heap and free > 0:
            _, i, k = heapq.heappop(heap)
            if k > free:
                continue  # cannot afford this step; other jobs may still grow
            count[i] += k
            free -= k
            g, k2 = step(i)
            if g > 0:
                heapq.heappush(heap, (-g, i, k2))
        return Allocation(view.pack(jobs, count))
