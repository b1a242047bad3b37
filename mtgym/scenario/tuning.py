"""The record of a scenario's baseline tuning: ``scenarios/tuning/<scenario>.json``.

One file per scenario, beside the presets (packaged with them), written by ``mtgym tune``:
per policy its sweep (every point tried, with its per-seed headline), the untuned default
and the chosen knobs; and the scenario's **reference**, the tuned baseline with the highest
mean headline on the tuning seeds, fixed before any test seed is played. The benchmark
divides by that reference; ``mtgym.evaluate.scenario_defaults`` hands the chosen knobs to
the policies (``EpisodeSpec.baselines``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from mtgym.core.io import atomic_write_text

#: a knob's value, as ``EpisodeSpec.baselines`` holds it
Knob = StrictBool | StrictInt | float | str | None


class _Model(BaseModel):
    """Base of the record's models: unknown fields and non-finite floats are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Point(_Model):
    """One setting tried: its knobs, per-seed headline and jobs completed, and its cost.

    Attributes:
        params: Every knob's value at this point.
        jobs_completed: Jobs completed per tuning seed.
        mean: The mean of ``headline``.
        wall_s: Wall seconds the point's episodes took.
    """

    knob: str = Field(description="the knob this point varies ('' for the default point)")
    params: dict[str, Knob]
    headline: list[float] = Field(description="normalized_throughput per tuning seed")
    jobs_completed: list[float]
    mean: float
    wall_s: float


class PolicyTuning(_Model):
    """One policy's sweep on the scenario and what it chose.

    Attributes:
        chosen: The knobs picked by the record's ``rule``.
        default_mean: The mean headline of ``default`` on the tuning seeds.
        chosen_mean: The mean headline of ``chosen``.
        sweep: Every point tried, in order.
        wall_s: Wall seconds of the whole sweep.
    """

    default: dict[str, Knob] = Field(description="the untuned knobs (the policy's defaults)")
    chosen: dict[str, Knob]
    default_mean: float
    chosen_mean: float
    sweep: list[Point]
    wall_s: float


class TuningRecord(_Model):
    """Everything ``mtgym tune`` recorded for one scenario.

    Attributes:
        scenario: The scenario's name (the file is ``<scenario>.json``).
        seeds: The tuning seeds (kept apart from the test seeds).
        policies: Policy name -> its sweep and choice.
    """

    scenario: str
    seeds: list[int]
    horizon_s: float | None = Field(description="simulated seconds played (None: whole)")
    rule: str = Field(description="how a value was chosen, written before the runs")
    policies: dict[str, PolicyTuning] = Field(default_factory=dict)
    reference: str | None = Field(
        None, description="the tuned baseline with the highest mean headline on these seeds"
    )

    def choices(self) -> dict[str, dict[str, Any]]:
        """Policy name -> chosen knobs (what ``EpisodeSpec.baselines`` takes)."""
        return {name: dict(t.chosen) for name, t in self.policies.items()}

    def best(self) -> str | None:
        """The policy with the highest chosen mean (first by name on ties)."""
        if not self.policies:
            return None
        return max(sorted(self.policies), key=lambda p: self.policies[p].chosen_mean)


def tuning_dir() -> Path:
    """Where the records live: ``tuning/`` beside the preset files."""
    from mtgym.scenario.registry import PRESETS_DIR

    return PRESETS_DIR / "tuning"


def record_path(scenario: str) -> Path:
    """The record file of ``scenario`` (a preset or built-in name; it may not exist)."""
    return tuning_dir() / f"{scenario}.json"


def load_record(scenario: str) -> TuningRecord | None:
    """The record of ``scenario``, or None when it was never tuned.

    Raises:
        ValueError: the file exists but is not a valid record (pydantic says where).
    """
    path = record_path(scenario)
    if not path.is_file():
        return None
    try:
        return TuningRecord.model_validate_json(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: not a valid tuning record: {exc}") from None


def save_record(record: TuningRecord, path: Path | None = None) -> Path:
    """Write ``record`` (atomically: a temporary file renamed over the old one).

    Args:
        record: The record.
        path: The file; None: ``record_path(record.scenario)`` (the folder is created).

    Returns:
        The path written.
    """
    path = record_path(record.scenario) if path is None else path
    # a unique temporary file, fsynced, renamed over the old one: two concurrent
    # ``mtgym tune`` runs on one scenario cannot write into each other's temporary file
    return atomic_write_text(path, json.dumps(record.model_dump(mode="json"), indent=1) + "\n")
