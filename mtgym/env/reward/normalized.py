"""``normalized`` (the default): training done in best-node-seconds, the headline's integral."""

from __future__ import annotations

import numpy as np

from mtgym.core.instance import Instance
from mtgym.env.reward.base import Reward
from mtgym.env.reward.progress import weighted_progress
from mtgym.metrics import reference_rate


class Normalized(Reward):
    """Each sample weighted by 1 / (its job's reference rate x N x 3,600 s), so the return is
    the headline ``normalized_samples`` and feeding a job whose samples are cheap earns
    nothing extra (``docs/metrics.md``).
    """

    name = "normalized"
    doc = (
        "sum over jobs of (samples done this step / the job's reference rate), / (N x 3,600 s): "
        "training done in best-node-seconds (``mtgym.metrics.reference_rate``), one meaning the "
        "whole machine training at its best single-node rates for an hour. Episode return is "
        "the headline ``normalized_samples`` in those units, the same for every model: feeding "
        "a job whose samples are cheap earns nothing extra."
    )
    inputs = ("progress", "progress0", "weight")
    kernel = weighted_progress

    def weights(self, instance: Instance) -> np.ndarray:
        """1 / (each job's reference rate x the node count x 3,600 s)."""
        return 1.0 / (reference_rate(instance) * max(instance.num_nodes, 1) * 3600.0)


REWARD = Normalized
