"""Built-in scenario names -> generators (files and presets arrive with the scenario schema)."""

from __future__ import annotations

from collections.abc import Callable

from mtgym.generate.base import Generator
from mtgym.generate.default import default_generator
from mtgym.generate.toy import LinearToy, TwoJobToy

BUILTIN: dict[str, Callable[[], Generator]] = {
    "default": default_generator,
    "toy-linear": LinearToy,
    "toy-two-jobs": TwoJobToy,
}


def get_generator(name: str) -> Generator:
    """The generator of a built-in scenario (``KeyError`` listing the known names)."""
    try:
        return BUILTIN[name]()
    except KeyError:
        raise KeyError(
            f"unknown scenario {name!r}; built-in scenarios: {', '.join(sorted(BUILTIN))}"
        ) from None
