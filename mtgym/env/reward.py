"""Reward functions. Each maps one step's change of state to a float, with a stated scale.

- ``progress``: sum over jobs of (samples done this step / the job's work): completing a
  job's work is worth 1 however large it is. Episode return = jobs' worth of work done.
- ``throughput``: samples done this step / (the cluster's best single-node rate x its node
  count x 3,600 s): one means a whole machine-hour at the best rate. Episode return is
  total samples in those units (maximising it maximises aggregate throughput).
- ``jct``: minus the integral of the number of submitted, unfinished jobs over the step, in
  job-hours (Park's JCT reward): the return is minus the sum of job completion times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtgym.core.instance import Instance
from mtgym.sim.dynamics import throughput_model
from mtgym.sim.numeric import dot, pairwise_sum
from mtgym.sim.state import ClusterState

REWARDS = ("progress", "throughput", "jct")


@dataclass
class StepDelta:
    """What a reward needs from the state before the step."""

    progress: np.ndarray  # (J,) progress before
    active_job_s: float


class RewardFn:
    """One of ``REWARDS`` bound to an instance."""

    def __init__(self, name: str, instance: Instance) -> None:
        if name not in REWARDS:
            raise ValueError(f"reward {name!r} is not one of {REWARDS}")
        self.name = name
        self._inv_work = 1.0 / instance.jobs.work
        best = throughput_model(instance).best_node_rate()
        self._tput_scale = (
            1.0 / max(float(best.max()) * instance.num_nodes * 3600.0, 1e-12) if best.size else 0.0
        )

    def __call__(self, before: StepDelta, state: ClusterState) -> float:
        """The reward of the step that led from ``before`` to ``state``."""
        if self.name == "progress":
            return dot(state.progress - before.progress, self._inv_work)  # (fixed order)
        if self.name == "throughput":
            return (pairwise_sum(state.progress) - pairwise_sum(before.progress)) * self._tput_scale
        return -(state.active_job_s - before.active_job_s) / 3600.0
