"""``throughput``: raw samples in machine-hours at the best single-node rate."""

from __future__ import annotations

import numpy as np
from numba import njit

from mtgym.core.instance import Instance
from mtgym.env.reward.base import Reward
from mtgym.sim.dynamics import throughput_model
from mtgym.sim.numeric import pairwise_sum


@njit(cache=True)
def _samples(
    progress: np.ndarray, progress0: np.ndarray, scale: float
) -> float:  # pragma: no cover - jit
    return (pairwise_sum(progress) - pairwise_sum(progress0)) * scale


class Throughput(Reward):
    """Samples of every model added together: it rewards feeding the models whose samples
    are cheapest (``docs/metrics.md``).
    """

    name = "throughput"
    doc = (
        "samples done this step / (the cluster's best single-node rate x its node count x "
        "3,600 s): one means a whole machine-hour at the best rate. Episode return is total "
        "samples in those units (maximising it maximises aggregate throughput)."
    )
    inputs = ("progress", "progress0", "scale")
    kernel = _samples

    def scale(self, instance: Instance) -> float:
        """1 / (the best single-node rate of any job on any node x N x 3,600 s); 0 without
        jobs (the divisor is floored at 1e-12).
        """
        best = throughput_model(instance).best_node_rate()
        if not best.size:
            return 0.0
        return 1.0 / max(float(best.max()) * instance.num_nodes * 3600.0, 1e-12)


REWARD = Throughput
