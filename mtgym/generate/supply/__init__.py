"""Idle-node supply sources: one module each, behind the ``SupplySource`` protocol.

- ``synthetic``: windows calibrated to Summit (alternating renewal + drains);
- ``trace``: replay of a recorded idle-window trace;
- ``swf``: an SWF job log replayed through FCFS + EASY backfilling;
- ``always_idle``: a dedicated cluster.

To add a source (say a PBS log): one module with a frozen dataclass that has
``generate(rng, num_nodes, t0, t1) -> Supply``, one line here, and its scenario spec
(``mtgym/scenario/schema.py``, ``mtgym/scenario/build.py``); see docs/architecture.md.
"""

from mtgym.generate.supply.always_idle import AlwaysIdle
from mtgym.generate.supply.base import SupplySource, supply_from_windows
from mtgym.generate.supply.swf import SWFSupply
from mtgym.generate.supply.synthetic import (
    SUMMIT_IDLE_FRACTION,
    SUMMIT_MIN_WINDOW_S,
    SUMMIT_WINDOW_MEAN_S,
    SUMMIT_WINDOW_MEDIAN_S,
    SyntheticSupply,
)
from mtgym.generate.supply.trace import TraceSupply

__all__ = [
    "SUMMIT_IDLE_FRACTION",
    "SUMMIT_MIN_WINDOW_S",
    "SUMMIT_WINDOW_MEAN_S",
    "SUMMIT_WINDOW_MEDIAN_S",
    "AlwaysIdle",
    "SWFSupply",
    "SupplySource",
    "SyntheticSupply",
    "TraceSupply",
    "supply_from_windows",
]
