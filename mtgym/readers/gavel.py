"""Reader of Gavel's measured throughputs (``gavel-throughputs.json``).

The file maps worker type -> ``"('<job type>', <scale factor>)"`` -> {``"null"``: steps/s of
the job alone, ``"('<other job type>', <scale factor>)"``: [this job's, other job's] steps/s
when packed}. Keys are Python tuple text, parsed with :func:`ast.literal_eval`.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtgym.core.errors import DataError
from mtgym.readers._csv import is_number, read_text

KEY_ALLOWED = "Python tuple text ('<job type>', <scale factor >= 1>), e.g. \"('A3C', 1)\""


class UnknownThroughputError(DataError, KeyError):
    """A (worker type, job type, scale factor) that the throughput file does not hold."""

    __str__ = DataError.__str__


@dataclass(frozen=True)
class GavelThroughputs:
    """Isolated (unpacked) throughputs per worker type, job type and scale factor.

    Attributes:
        source: The file read.
        worker_types: Worker (GPU) types in file order, e.g. ``k80``, ``v100``.
        job_types: Job types in order of first appearance.
        isolated: (worker_type, job_type, scale_factor) -> training steps/s of the whole job
            running alone (the ``"null"`` entries). A few are 0 (no usable measurement).
    """

    source: str
    worker_types: tuple[str, ...]
    job_types: tuple[str, ...]
    isolated: dict[tuple[str, str, int], float] = field(repr=False)

    def rate(self, worker_type: str, job_type: str, scale_factor: int = 1) -> float:
        """Steps/s of ``job_type`` alone on ``scale_factor`` GPUs of ``worker_type``.

        Args:
            worker_type: a GPU type of the file, e.g. ``"v100"``.
            job_type: a job type of the file, e.g. ``"A3C"``.
            scale_factor: GPUs the job runs on (1 unless the file has multi-GPU entries).

        Returns:
            Training steps/s of the whole job (0 for the few entries without a usable
            measurement).

        Raises:
            UnknownThroughputError: (a DataError and a KeyError) for an unknown worker type,
                job type, or a scale factor the file has no entry for.
        """
        key = (worker_type, job_type, scale_factor)
        if key in self.isolated:
            return self.isolated[key]
        if worker_type not in self.worker_types:
            raise UnknownThroughputError(
                self.source, "worker_type", worker_type, f"one of {list(self.worker_types)}"
            )
        if job_type not in self.job_types:
            raise UnknownThroughputError(
                self.source, "job_type", job_type, f"one of {list(self.job_types)}"
            )
        scales = sorted(s for w, j, s in self.isolated if (w, j) == (worker_type, job_type))
        raise UnknownThroughputError(
            self.source,
            "scale_factor",
            scale_factor,
            f"one of {scales} for {job_type!r} on {worker_type!r}",
        )


def read_gavel_throughputs(path: str | Path) -> GavelThroughputs:
    """Read Gavel's throughput JSON and keep the isolated (``"null"``) throughputs.

    Packed-pair entries are validated (tuple key, two throughputs >= 0) but not kept.

    Args:
        path: the JSON file, plain or gzip-compressed.

    Returns:
        The isolated throughputs, with the worker types in file order and the job types in
        order of first appearance.

    Raises:
        DataError: missing file, invalid JSON, a level that is not an object, a key that is
            not a (str, int >= 1) tuple, a missing ``"null"`` entry, or a negative or
            non-numeric throughput.
    """
    p = Path(path)
    text = read_text(p)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(p, "json", exc.msg, "valid JSON", row=exc.lineno) from exc
    _expect_object(p, "file", data)
    keys: dict[str, tuple[str, int]] = {}
    isolated: dict[tuple[str, str, int], float] = {}
    job_types: dict[str, None] = {}
    for worker, jobs in data.items():
        _expect_object(p, worker, jobs)
        for job_key, entries in jobs.items():
            job, scale = _parse_key(p, f"{worker} job key", job_key, keys)
            where = f"{worker} {job_key}"
            _expect_object(p, where, entries)
            if "null" not in entries:
                raise DataError(p, where, sorted(entries)[:3], 'an object with a "null" entry')
            for other_key, value in entries.items():
                if other_key == "null":
                    _expect_rate(p, f"{where} null", value)
                    continue
                _parse_key(p, f"{where} pair key", other_key, keys)
                if not (isinstance(value, list) and len(value) == 2):
                    raise DataError(p, f"{where} {other_key}", value, "a list of two numbers")
                for v in value:
                    _expect_rate(p, f"{where} {other_key}", v)
            isolated[(worker, job, scale)] = float(entries["null"])
            job_types.setdefault(job)
    return GavelThroughputs(
        source=str(p),
        worker_types=tuple(data),
        job_types=tuple(job_types),
        isolated=isolated,
    )


def _expect_object(path: Path, where: str, value: Any) -> None:
    """Raise unless ``value`` is a non-empty JSON object."""
    if not isinstance(value, dict) or not value:
        raise DataError(path, where, type(value).__name__, "a non-empty JSON object")


def _expect_rate(path: Path, where: str, value: Any) -> None:
    """Raise unless ``value`` is a finite throughput >= 0."""
    if not is_number(value) or value < 0:
        raise DataError(path, where, value, "a finite number >= 0 (steps/s)")


def _parse_key(
    path: Path, where: str, text: str, cache: dict[str, tuple[str, int]]
) -> tuple[str, int]:
    """Parse ``"('<job type>', <scale factor>)"`` (memoised in ``cache``).

    Args:
        path: the file, for the error.
        where: where the key is (worker and outer key), for the error.
        text: the key as written.
        cache: text -> parsed key, shared by one read (the same keys recur per worker).

    Raises:
        DataError: not a tuple of a string and an integer >= 1 (a bool is refused).
    """
    if text in cache:
        return cache[text]
    try:
        key = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        key = None
    ok = (
        isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], str)
        and isinstance(key[1], int)
        and not isinstance(key[1], bool)
        and key[1] >= 1
    )
    if not ok:
        raise DataError(path, where, text, KEY_ALLOWED)
    cache[text] = key
    return key
