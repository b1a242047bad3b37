"""``progress``: each job's completed share of its work, summed over jobs."""

from __future__ import annotations

import numpy as np
from numba import njit

from mtgym.core.instance import Instance
from mtgym.env.reward.base import Reward
from mtgym.sim.numeric import dot


@njit(cache=True)
def weighted_progress(
    progress: np.ndarray, progress0: np.ndarray, weight: np.ndarray
) -> float:  # pragma: no cover - jit
    """The samples each job made over the step, weighted per job and summed (numpy's
    pairwise order: ``mtgym.sim.numeric.dot``).
    """
    dp = np.empty(progress.shape[0])
    for j in range(dp.shape[0]):
        dp[j] = progress[j] - progress0[j]
    return dot(dp, weight)


class Progress(Reward):
    """Each sample weighted by 1 / its job's work (module docstring)."""

    name = "progress"
    doc = (
        "sum over jobs of (samples done this step / the job's work): completing a job's work "
        "is worth 1 however large it is. Episode return = jobs' worth of work done."
    )
    inputs = ("progress", "progress0", "weight")
    kernel = weighted_progress

    def weights(self, instance: Instance) -> np.ndarray:
        """1 / each job's work (samples)."""
        return 1.0 / instance.jobs.work


REWARD = Progress
