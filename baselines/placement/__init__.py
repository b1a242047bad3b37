"""Placement baselines of the PAL paper: PAL, PM-First and Blox's Packed and Random.

All are round-based policies for rigid jobs (demand = ``min_nodes``) over allocation units
(one GPU per unit in PAL scenarios, see ``mtgym.generate.pal_philly``). ``PALPlacer`` and
``PMFirstPlacer`` place counts decided by another allocator.
"""

from baselines.placement.blox import PackedPolicy, RandomPolicy, packed_select
from baselines.placement.lxv import LxV, kmeans_1d, silhouette_1d
from baselines.placement.pal import (
    PALPlacer,
    PALPolicy,
    PMFirstPlacer,
    PMFirstPolicy,
    pal_place,
    pm_first_place,
    pm_first_select,
)

__all__ = [
    "LxV",
    "PALPlacer",
    "PALPolicy",
    "PMFirstPlacer",
    "PMFirstPolicy",
    "PackedPolicy",
    "RandomPolicy",
    "kmeans_1d",
    "packed_select",
    "pal_place",
    "pm_first_place",
    "pm_first_select",
    "silhouette_1d",
]
