"""Toy instances whose optimal schedule is known (for tests of the env, MILPs and agents).

Each docstring states the optimum. Table jobs with linear curves, identical devices, lambda 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtgym.core.instance import CostModel, Instance
from mtgym.core.types import AppClass
from mtgym.generate.supply.always_idle import always_idle
from mtgym.generate.uniform import uniform_cluster
from mtgym.generate.workload import JobRow, build_jobs


@dataclass(frozen=True)
class LinearToy:
    """``num_nodes`` identical nodes idle on [0, horizon); one job, linear curve.

    The job scales linearly (``rate`` samples/s per node) up to ``num_nodes`` nodes, needs
    ``work`` samples, costs nothing to start or rescale. **Optimum:** run it on every node
    from t = 0; it completes at ``work / (num_nodes * rate)``, and no schedule does better.

    Attributes:
        name: the generator's name.
        num_nodes: identical single-GPU nodes, idle throughout.
        rate: samples/s per node.
        work: samples to do.
        horizon_s: the episode's end, seconds.
    """

    name: str = "toy-linear"
    num_nodes: int = 4
    rate: float = 100.0
    work: float = 1.2e6
    horizon_s: float = 10_000.0

    def __call__(self, seed: int = 0) -> Instance:
        """The instance (the seed is unused: the toy is deterministic)."""
        cl = uniform_cluster(self.num_nodes)
        n = np.arange(self.num_nodes + 1, dtype=float)
        row = JobRow(
            name="linear",
            model="toy",
            app_class=AppClass.D,
            submit_s=0.0,
            min_nodes=1,
            max_nodes=self.num_nodes,
            work=self.work,
            r_up_s=0.0,
            r_down_s=0.0,
            curve_nodes=n,
            curve_tput=n * self.rate,
        )
        jobs = build_jobs([row], cl)
        N = self.num_nodes
        supply = always_idle(N, 0.0, self.horizon_s)
        return Instance(self.name, cl, supply, jobs, t_end=self.horizon_s, seed=seed).validate()


@dataclass(frozen=True)
class TwoJobToy:
    """Two jobs on ``num_nodes`` always-idle nodes for ``horizon_s`` seconds, no costs.

    Job 0 scales linearly (100 samples/s per node, up to all nodes). Job 1 gains nothing
    beyond one node (100 samples/s at 1..N nodes). Both have more work than the horizon
    allows. **Optimum** (max samples in the horizon): job 1 on one node, job 0 on the
    other ``N - 1``: ``100 * N * horizon_s`` samples. Equal share gets
    ``100 * (N / 2 + 1) * horizon_s``.

    Attributes:
        name: the generator's name.
        num_nodes: N, identical single-GPU nodes, idle throughout.
        horizon_s: the episode's end, seconds.
    """

    name: str = "toy-two-jobs"
    num_nodes: int = 4
    horizon_s: float = 3600.0

    def __call__(self, seed: int = 0) -> Instance:
        """The instance (deterministic)."""
        N = self.num_nodes
        cl = uniform_cluster(N)
        n = np.arange(N + 1, dtype=float)

        def row(name: str, tput: np.ndarray) -> JobRow:
            """A job on 1..N nodes with the curve ``tput`` at 0..N nodes, free rescales."""
            return JobRow(
                name, "toy", AppClass.D, 0.0, 1, N, work=1e12, r_up_s=0, r_down_s=0,
                curve_nodes=n, curve_tput=tput,
            )  # fmt: skip

        rows = [row("linear", 100.0 * n), row("flat", np.where(n > 0, 100.0, 0.0))]
        jobs = build_jobs(rows, cl)
        supply = always_idle(N, 0.0, self.horizon_s)
        return Instance(
            self.name, cl, supply, jobs, costs=CostModel(), t_end=self.horizon_s, seed=seed
        ).validate()
