"""A Python class as a numba compile-time constant: how the env's compiled step is
specialised per action mode (``mtgym.env.actions.base``) and per reward
(``mtgym.env.reward.base``) with no branch and no id at run time.

An instance of a registered base class (``typed_by_class``), stored in a numba struct,
types as ``ClassType(key)``: an opaque value whose type names the instance's class. A
generic function's ``@overload`` reads the struct field's type, finds the class
(``class_of``) and returns that class's kernel, so each (mode, reward) pair compiles its
own step. The key is the class's module and name plus a digest of its source file, so a
kernel numba cached for a class is not reused after that class's file is edited.
"""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

from numba import types
from numba.extending import NativeValue, box, models, register_model, typeof_impl, unbox


class ClassType(types.Type):
    """The numba type of an instance of one class: a compile-time constant naming it.

    Args:
        key: ``class_key`` of the class.
    """

    def __init__(self, key: str) -> None:
        self.class_key = key
        super().__init__(f"Class({key})")


register_model(ClassType)(models.OpaqueModel)


@unbox(ClassType)
def _unbox(typ, obj, c):  # pragma: no cover - compile time
    return NativeValue(c.context.get_dummy_value())


@box(ClassType)
def _box(typ, val, c):  # pragma: no cover - compile time
    return c.pyapi.make_none()


#: ``ClassType`` key -> the class (filled by ``class_key``)
_BY_KEY: dict[str, type] = {}


def class_key(cls: type) -> str:
    """The ``ClassType`` key of ``cls``, made once and kept on the class.

    Returns:
        ``module.qualname@digest``, the digest the first 12 hex digits of the SHA-256 of
        the class's source file (``-`` when it has none). The class is recorded for
        ``class_of``.
    """
    key = cls.__dict__.get("_class_key")
    if key is None:
        try:
            src = inspect.getsourcefile(cls)
            digest = hashlib.sha256(open(src, "rb").read()).hexdigest()[:12] if src else "-"  # noqa: SIM115
        except (OSError, TypeError):
            digest = "-"
        key = f"{cls.__module__}.{cls.__qualname__}@{digest}"
        cls._class_key = key  # type: ignore[attr-defined]
        _BY_KEY[key] = cls
    return key


def class_of(typ: Any) -> type:
    """The class a ``ClassType`` names (compile time).

    Raises:
        KeyError: the class was never keyed in this process (``class_key`` not called).
    """
    return _BY_KEY[typ.class_key]


def typed_by_class(base: type) -> type:
    """Make instances of ``base`` and its subclasses type as ``ClassType`` of their class
    (a class decorator; returns ``base``).
    """

    @typeof_impl.register(base)
    def _typeof(val: Any, c: Any) -> ClassType:
        return ClassType(class_key(type(val)))

    return base
