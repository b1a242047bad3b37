"""Rewards: one table, name -> the step kernel's id and what the reward means.

The step (``mtgym.env.step``) computes the reward in its compiled ``_post`` with
``reward_kernel``, which dispatches on the id. To add a reward: one row here and one branch
in ``reward_kernel`` (or per-job weights in ``reward_weights``).

The default, ``normalized``, counts each job's samples in units of its own reference rate
(``mtgym.metrics.reference_rate``), so its return is the headline metric and is neutral
across models; ``throughput`` adds raw samples of different models, which rewards feeding the
models whose samples are cheapest (``docs/metrics.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from mtgym.core.instance import Instance
from mtgym.metrics import reference_rate
from mtgym.sim.dynamics import throughput_model
from mtgym.sim.numeric import dot, pairwise_sum


@dataclass(frozen=True)
class Reward:
    """A reward's kernel id and its meaning (scale and episode return).

    Attributes:
        kernel: the id ``reward_kernel`` dispatches on (``PROGRESS``, ``THROUGHPUT``,
            ``JCT`` or ``NORMALIZED``), also the name's index in ``REWARD_NAMES``.
        doc: what one unit of the reward is, and what the episode's return sums to.
    """

    kernel: int
    doc: str


PROGRESS, THROUGHPUT, JCT, NORMALIZED = 0, 1, 2, 3  # kernel ids (compile-time constants)
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
    "normalized": Reward(
        NORMALIZED,
        "sum over jobs of (samples done this step / the job's reference rate), / (N x 3,600 s): "
        "training done in best-node-seconds (``mtgym.metrics.reference_rate``), one meaning the "
        "whole machine training at its best single-node rates for an hour. Episode return is "
        "the headline ``normalized_samples`` in those units, the same for every model: feeding "
        "a job whose samples are cheap earns nothing extra.",
    ),
}


def reward_weights(reward: str, instance: Instance) -> np.ndarray:
    """(J,) the per-job weight of each sample in ``reward``: 1 / work for ``progress``,
    1 / (reference rate x N x 3,600 s) for ``normalized``, 1 / work (unused) otherwise.

    Args:
        reward: the reward's name (a key of ``REWARDS``).
        instance: the episode's instance (work, reference rates, node count).

    Returns:
        (J,) float64.
    """
    if reward == "normalized":
        return 1.0 / (reference_rate(instance) * max(instance.num_nodes, 1) * 3600.0)
    return 1.0 / instance.jobs.work


def throughput_scale(instance: Instance) -> float:
    """``throughput``'s divisor, inverted: 1 / (best node rate x nodes x 3,600 s).

    Args:
        instance: the episode's instance: the best single-node rate of any job on any
            node (the true model), and the node count.

    Returns:
        The factor the step's sample count is multiplied by; 0 without jobs (the
        divisor is floored at 1e-12).
    """
    best = throughput_model(instance).best_node_rate()
    if not best.size:
        return 0.0
    return 1.0 / max(float(best.max()) * instance.num_nodes * 3600.0, 1e-12)


@njit(cache=True)
def reward_kernel(
    kind: int,
    progress: np.ndarray,
    p0: np.ndarray,
    weight: np.ndarray,
    tput_scale: float,
    active: float,
    active0: float,
) -> float:  # pragma: no cover - jit
    """The reward ``kind`` of a step: ``p0``/``active0`` the progress and active job-seconds
    before, ``progress``/``active`` after (sums in a fixed order: ``mtgym.sim.numeric``);
    ``weight`` the per-job weights of ``reward_weights``.

    Args:
        kind: the reward's kernel id (``Reward.kernel``).
        progress: (J,) the jobs' progress (samples) after the step.
        p0: (J,) before it.
        weight: (J,) the per-sample weights (``progress``, ``normalized``).
        tput_scale: ``throughput_scale`` (``throughput``).
        active: the state's active job-seconds after the step (``jct``).
        active0: before it.

    Returns:
        ``progress`` and ``normalized``: the weighted sum of the progress made;
        ``throughput``: the samples made x ``tput_scale``; ``jct`` (any other id): minus
        the active job-hours the step added.
    """
    if kind == PROGRESS or kind == NORMALIZED:  # noqa: SIM109 (plain compares for numba)
        dp = np.empty(progress.shape[0])
        for j in range(dp.shape[0]):
            dp[j] = progress[j] - p0[j]
        return dot(dp, weight)
    if kind == THROUGHPUT:
        return (pairwise_sum(progress) - pairwise_sum(p0)) * tput_scale
    return -(active - active0) / 3600.0
