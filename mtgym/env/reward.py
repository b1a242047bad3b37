"""Rewards: one table, name -> the step kernel's id and what the reward means.

The step (``mtgym.env.step``) computes the reward in its compiled ``_post`` with
``reward_kernel``, which dispatches on the id. To add a reward: one row here and one branch
in ``reward_kernel``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from mtgym.core.instance import Instance
from mtgym.sim.dynamics import throughput_model
from mtgym.sim.numeric import dot, pairwise_sum


@dataclass(frozen=True)
class Reward:
    """A reward's kernel id and its meaning (scale and episode return)."""

    kernel: int
    doc: str


PROGRESS, THROUGHPUT, JCT = 0, 1, 2  # kernel ids (compile-time constants)
REWARDS: dict[str, Reward] = {
    "progress": Reward(
        PROGRESS,
        "sum over jobs of (samples done this step / the job's work): completing a job's work "
        "is worth 1 however large it is. Episode return = jobs' worth of work done.",
    ),
    "throughput": Reward(
        THROUGHPUT,
        "samples done this step / (the cluster's best single-node rate x its node count x "
        "3,600 s): one means a whole machine-hour at the best rate. Episode return is total "
        "samples in those units (maximising it maximises aggregate throughput).",
    ),
    "jct": Reward(
        JCT,
        "minus the integral of the number of submitted, unfinished jobs over the step, in "
        "job-hours (Park's JCT reward): the return is minus the sum of job completion times.",
    ),
}


def throughput_scale(instance: Instance) -> float:
    """``throughput``'s divisor, inverted: 1 / (best node rate x nodes x 3,600 s)."""
    best = throughput_model(instance).best_node_rate()
    if not best.size:
        return 0.0
    return 1.0 / max(float(best.max()) * instance.num_nodes * 3600.0, 1e-12)


@njit(cache=True)
def reward_kernel(
    kind: int,
    progress: np.ndarray,
    p0: np.ndarray,
    inv_work: np.ndarray,
    tput_scale: float,
    active: float,
    active0: float,
) -> float:  # pragma: no cover - jit
    """The reward ``kind`` of a step: ``p0``/``active0`` the progress and active job-seconds
    before, ``progress``/``active`` after (sums in a fixed order: ``mtgym.sim.numeric``).
    """
    if kind == PROGRESS:
        dp = np.empty(progress.shape[0])
        for j in range(dp.shape[0]):
            dp[j] = progress[j] - p0[j]
        return dot(dp, inv_work)
    if kind == THROUGHPUT:
        return (pairwise_sum(progress) - pairwise_sum(p0)) * tput_scale
    return -(active - active0) / 3600.0
