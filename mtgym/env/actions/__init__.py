"""Action modes: one codec class per mode (a module here), registered by name.

Each mode (``mtgym.env.actions.base.ActionCodec``) declares its space, its compiled decode
(action -> node map, with its repair counts) and mask, its no-op and its repair keys; the
env, its compiled step and the masks ask the codec (``make_codec(name, ...)``) and never
branch on the mode. Built in: ``counts`` (a node count per slot), ``assign`` (a slot per
node), ``delta`` (shrink / keep / grow per slot) and ``shares`` (keep, stop or a level of
each job's own range: scale-free); see their modules.

An action outside the space raises ``ValueError`` naming the entry and its bound. An action
inside the space but infeasible is repaired deterministically and reported in
``info["repair"]``: first the decoder's counts (``repair_keys``), then the engine's
(``base.ENGINE_REPAIRS``).

To add a mode: one module in this folder, named as the mode, with an ``ActionCodec``
subclass as its ``CODEC``, and the mode's name in ``mtgym.core.names.ACTION_MODES`` (the
one list the env, scenario files and the CLI read; each name's module is imported here).
``register(cls)`` adds a mode from anywhere else (a test, a plugin) for the env alone.
``docs/architecture.md`` has the recipe.
"""

from __future__ import annotations

from importlib import import_module

from mtgym.core.names import ACTION_MODES
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

#: The built-in modes, in ``ACTION_MODES``' order: each name's module's ``CODEC``.
BUILT_IN: tuple[type[ActionCodec], ...] = tuple(
    import_module(f"{__name__}.{name.replace('-', '_')}").CODEC for name in ACTION_MODES
)
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
