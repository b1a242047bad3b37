"""The vocabulary of validated specs (pydantic v2), shared by the scenario schema and the
spec classes that live beside what they build (e.g. each supply source's ``Spec``).

Every field has a description (``desc``: editors and ``mtgym scenario schema`` show it), every
float is finite, every integer a real integer, and unknown fields are errors.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from mtgym.core.limits import MAX_HORIZON_S, MIN_DURATION_S

Int = StrictInt  # (``true``, ``4.0`` and ``"4"`` are refused)
Pos = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]
Prob = Annotated[float, Field(ge=0, le=1)]
Duration = Annotated[float, Field(ge=MIN_DURATION_S, le=MAX_HORIZON_S)]
#: a baseline knob's value (a number, a name, a flag, or None for "the policy's own rule")
Knob = StrictBool | StrictInt | float | str | None


def desc(text: str, default=..., **kw):
    """``Field`` with a description (every field has one: editors show it).

    Args:
        text: The description, shown in the JSON Schema and by editors.
        default: The default; ``...`` (the default) makes the field required.
        **kw: Further ``Field`` arguments: bounds (``ge``, ``le``), ``default_factory``,
            ``min_length``, ``discriminator``, ...
    """
    return Field(default, description=text, **kw)


class Strict(BaseModel):
    """Forbid unknown fields; immutable; finite floats only.

    The base of every scenario and source spec: a misspelt key is an error rather than a
    silently ignored setting, and ``.inf``/``.nan`` in a file are refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
