"""Scenario names -> generators: code scenarios here, presets under ``scenarios/``, or files."""

from __future__ import annotations

from collections.abc import Callable

from mtgym.generate.base import Generator
from mtgym.generate.default import default_generator
from mtgym.generate.toy import LinearToy, TwoJobToy

#: Scenarios built in code (no file needed).
BUILTIN: dict[str, Callable[[], Generator]] = {
    "default": default_generator,
    "toy-linear": LinearToy,
    "toy-two-jobs": TwoJobToy,
}


def get_generator(name: str) -> Generator:
    """A built-in scenario, a preset under ``scenarios/`` or a scenario file path.

    ``KeyError`` lists the known names; a malformed file raises ``ScenarioError``.
    """
    from mtgym.scenario.load import resolve_generator

    return resolve_generator(name)
