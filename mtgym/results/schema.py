"""The result file, typed: what ``store.read_result`` returns (``ResultFile``), and the
error a broken file raises (``ResultFileError``).

Keys (``"schema": 1``; ``docs/results-registry.md``):

- ``schema``: the format's version (``SCHEMA``); a reader refuses another;
- ``kind``: the command that wrote it (``benchmark``, ``evaluate``, ``tune``, ...);
- ``command``: its command line, as a shell takes it back;
- ``mtgym_version``, ``git`` (``commit``, ``dirty``; null without git), ``date_utc`` and
  ``machine`` (``cpu_model``, ``cores``, ``cores_usable``, ``load_avg`` at the start,
  ``python``, ``platform``): ``mtgym.results.provenance``;
- ``code_sha256``: the hash of the source that plays and scores an episode
  (``mtgym.results.hashes.code_sha256``; null in a file written before it was recorded);
- ``packages``: distribution -> installed version (null: not installed) of the packages
  the numbers rest on (``mtgym.results.provenance.PACKAGES``: numpy, numba, highspy, pulp,
  torch, gymnasium, stable-baselines3); absent (null) in a file written before it was
  recorded;
- ``seeds`` and ``scenarios`` (each with its content hash and its tuning record's:
  ``mtgym.results.hashes``);
- ``wall_s``: the command's wall seconds;
- ``rows``: one per episode (``scenario``, ``policy``, ``seed`` and the episode's metrics,
  as ``mtgym.evaluate.episode_row`` records them; NaN written as null);
- ``aggregates``: what the command reports (the benchmark's ``results.json``, ...).

Unknown top-level keys are refused, so a typo in a hand-made file does not pass as data;
inside ``rows`` and ``aggregates`` any JSON is accepted (each command's own shape).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mtgym.core.errors import MtgymError

#: the version of the format this code writes and reads
SCHEMA = 1


class ResultFileError(MtgymError, ValueError):
    """A result file that cannot be read: not JSON, not gzip, or not the schema (the
    message names the file and the first problems).
    """


class _Model(BaseModel):
    """Base of the file's records: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


class Git(_Model):
    """The checkout the run came from (nulls: no git, or not a checkout)."""

    commit: str | None
    dirty: bool | None


class Machine(_Model):
    """The machine, with its load average when the run started."""

    cpu_model: str | None
    cores: int | None
    cores_usable: int | None = None
    load_avg: list[float] | None
    python: str | None = None
    platform: str | None = None


class ScenarioEntry(_Model):
    """A scenario played and the content hashes it was played with."""

    name: str
    source: Literal["file", "code"]
    path: str | None
    sha256: str
    tuning_sha256: str | None


class ResultFile(_Model):
    """A whole result file (module docstring). ``schema_version`` is the key ``schema``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_version: Literal[1] = Field(alias="schema")
    kind: str
    command: str
    mtgym_version: str
    git: Git
    code_sha256: str | None = None
    packages: dict[str, str | None] | None = None
    date_utc: str
    machine: Machine
    seeds: list[int]
    scenarios: list[ScenarioEntry]
    wall_s: float
    rows: list[dict[str, Any]]
    aggregates: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The file's JSON object (``schema`` first, as written)."""
        return self.model_dump(mode="json", by_alias=True)
