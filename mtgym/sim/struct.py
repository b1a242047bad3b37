"""The recipe of mtgym's numba structs (``sim.kernel.SimKernel``, ``env.observation.ObsFrame``,
``env.step.StepKernel``): a ``StructRef`` type whose fields take the types of the values a
struct is built with, and its constructor and boxing. Each struct also compiles its Python
constructor once, cached (numba's own is compiled anew in every process, ~1 s a struct).
"""

from __future__ import annotations

from collections.abc import Sequence

from numba import types
from numba.experimental import structref


class ValueTyped(types.StructRef):
    """A ``StructRef`` type whose fields have the (non-literal) types of the values given."""

    def preprocess_fields(self, fields):  # noqa: D102
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


def define(proxy: type, struct_type: type, fields: Sequence[str]) -> None:
    """``proxy(*values)`` builds a ``struct_type`` with ``fields`` in compiled code, and a
    struct returned to Python is a ``proxy``.
    """
    structref.define_constructor(proxy, struct_type, list(fields))
    structref.define_boxing(struct_type, proxy)
