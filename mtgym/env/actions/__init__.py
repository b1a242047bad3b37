"""Action modes: one codec class per mode (a module here), registered by name.

Each mode (``mtgym.env.actions.base.ActionCodec``) declares its space, its compiled decode
(action -> node map, with its repair counts) and mask, its no-op and its repair keys; the
env, its compiled step and the masks ask the codec (``make_codec(name, ...)``) and never
branch on the mode. Built in: ``counts`` (a node count per slot), ``assign`` (a slot per
node) and ``delta`` (shrink / keep / grow per slot); see their modules.

An action outside the space raises ``ValueError`` naming the entry and its bound. An action
inside the space but infeasible is repaired deterministically and reported in
``info["repair"]``: first the decoder's counts (``repair_keys``), then the engine's
(``base.ENGINE_REPAIRS``).

To add a mode: one module in this folder with an ``ActionCodec`` subclass, and its class in
``BUILT_IN`` below (or ``register(cls)`` from anywhere, e.g. a test); its name in
``mtgym.core.names.ACTION_MODES`` lets scenario files and the CLI pick it
(``docs/architecture.md`` has the recipe).
"""

from __future__ import annotations

from mtgym.env.actions.assign import Assign
from mtgym.env.actions.base import (
    CODECS,
    ENGINE_REPAIRS,
    ActionCodec,
    ActionFrame,
    make_codec,
    pack_failed,
    register,
    repair_record,
    unregister,
)
from mtgym.env.actions.counts import Counts
from mtgym.env.actions.delta import Delta

#: The built-in modes, in ``mtgym.core.names.ACTION_MODES``' order.
BUILT_IN = (Counts, Assign, Delta)
for _cls in BUILT_IN:
    register(_cls)

__all__ = [
    "BUILT_IN",
    "CODECS",
    "ENGINE_REPAIRS",
    "ActionCodec",
    "ActionFrame",
    "make_codec",
    "pack_failed",
    "register",
    "repair_record",
    "unregister",
]
