"""Errors raised by mtgym: each names what was wrong, the value, and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class MtgymError(Exception):
    """Base class of every error mtgym raises on purpose."""


class DataError(MtgymError, ValueError):
    """A data file (trace, workload, profile) is malformed.

    The message names the file, the row (when known), the field, the bad value and what is
    allowed, so the user can fix the file without reading the reader's code.
    """

    def __init__(
        self,
        path: str | Path,
        field: str,
        value: Any,
        allowed: str,
        *,
        row: int | None = None,
    ) -> None:
        self.path = str(path)
        self.field = field
        self.value = value
        self.allowed = allowed
        self.row = row
        where = f"{self.path}" + (f", row {row}" if row is not None else "")
        super().__init__(f"{where}: field {field!r} has value {value!r}; allowed: {allowed}")


class ConfigError(MtgymError, ValueError):
    """A parameter of a generator, model or simulation is out of range."""

    def __init__(self, field: str, value: Any, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"parameter {field!r} = {value!r} is invalid; allowed: {allowed}")


class InvariantError(MtgymError, AssertionError):
    """The simulation state broke one of the model's invariants (a bug, never user error)."""


class PolicyUnsupportedError(MtgymError):
    """A policy cannot run on a scenario (say, a learned agent's action head is wider than the
    cluster): one line naming the policy, the scenario and the reason.

    Policies raise it from ``reset(view)``, where they first see the cluster; they do not know
    the scenario's name, so ``mtgym.policy.play`` adds it (``with_scenario``). The CLIs print
    it as one line (``mtgym.command.dispatch``); ``mtgym benchmark`` shows it in the table
    instead of numbers.
    """

    def __init__(self, policy: str, reason: str, scenario: str | None = None) -> None:
        self.policy = policy
        self.reason = reason
        self.scenario = scenario
        where = f" on scenario {scenario!r}" if scenario is not None else ""
        super().__init__(f"policy {policy!r} cannot run{where}: {reason}")

    def with_scenario(self, scenario: str) -> PolicyUnsupportedError:
        """The same error naming ``scenario`` (unchanged if it names one already)."""
        if self.scenario is not None:
            return self
        return PolicyUnsupportedError(self.policy, self.reason, scenario)

    def __reduce__(self) -> tuple[type, tuple[str, str, str | None]]:
        # rebuilt from its fields (Ray ships a task's exception back by pickling it)
        return (type(self), (self.policy, self.reason, self.scenario))
