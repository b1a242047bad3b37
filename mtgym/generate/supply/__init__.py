"""Idle-node supply sources: one module each, behind the ``SupplySource`` protocol.

- ``synthetic``: windows calibrated to Summit (alternating renewal + drains);
- ``trace``: replay of a recorded idle-window trace;
- ``swf``: an SWF job log replayed through FCFS + EASY backfilling;
- ``always_idle``: a dedicated cluster.

To add a source (say a PBS log): one module with a frozen dataclass that has
``generate(rng, num_nodes, t0, t1) -> Supply``, a ``Spec`` (its scenario-file section, a
``mtgym.core.spec.Strict`` model with a ``kind`` literal) and ``from_spec(spec, resolve)``;
and one line in ``SOURCES`` below. The scenario schema, its JSON Schema and the builder
take every source from ``SOURCES``.
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
    "SOURCES",
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

#: kind (the scenario file's ``supply.kind``) -> source class: the registry of sources.
SOURCES: dict[str, type] = {
    "synthetic": SyntheticSupply,
    "trace": TraceSupply,
    "swf": SWFSupply,
    "always-idle": AlwaysIdle,
}
