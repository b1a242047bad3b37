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

    Args:
        path: The file (kept as ``self.path``, a string).
        field: The column or field that is wrong.
        value: The bad value (shown with ``repr``).
        allowed: What would be accepted, in words.
        row: The row (as the reader numbers it), when known.
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
    """A parameter of a generator, model or simulation is out of range.

    Args:
        field: The parameter's name (a path like ``jobs[3] (resnet-3).work`` for a job).
        value: The bad value (shown with ``repr``).
        allowed: What would be accepted, in words.
    """

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

    Args:
        policy: The policy's name.
        reason: Why it cannot run, in words.
        scenario: The scenario's name; None until ``with_scenario`` adds it.
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
        """Pickle as its fields (Ray ships a task's exception back by pickling it; the
        default would call ``__init__`` with the message alone).
        """
        return (type(self), (self.policy, self.reason, self.scenario))
