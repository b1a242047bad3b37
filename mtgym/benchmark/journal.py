"""A benchmark's episodes written as they finish, so that a killed run keeps them and
``mtgym benchmark --resume`` plays only what is missing.

``OUT/episodes.jsonl`` holds one JSON object per line: first a header naming what the
episodes depend on (``identity``: the code hash, each scenario's and tuning record's hash,
the policies with the hash of every file a policy string names and of the learned agents'
code and shipped weights, the seeds, quick or full, the decision interval), then one line
per finished episode row, per hindsight bound and per policy found unsupported on a
scenario. Each line is flushed and synced when written: a run killed at any moment leaves
every finished item, and at worst a torn last line, which reading skips (the format:
``mtgym.results.jsonl``).

``--resume`` reads the journal of ``--out`` and refuses (one line, the first difference)
when its header is not this run's identity: episodes of other code, scenarios, tuning or
weights are never mixed into a result. A resumed run appends to the same journal; a run
without ``--resume`` starts a new one (saying so when it replaces a partial run). Resumed
rows are this run's own episodes (not the registry's: ``mtgym.benchmark.cache``); the
result file notes how many were resumed. The runner asks the journal before the cache
(``row``, ``bound``, ``unsupported``) and tells it each item it plays (``add_row``,
``add_bound``, ``add_unsupported``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtgym.results import jsonl

#: the journal's file name in the output folder
FILE = "episodes.jsonl"
#: the header's ``kind``
KIND = "mtgym-benchmark-journal"
#: the learned agents' folder (code and shipped weights enter the identity)
AGENTS = "agents"

RowKey = tuple[str, str, int, float | None, float | None]
BoundKey = tuple[str, int, float | None]


class JournalError(ValueError):
    """A journal that cannot be resumed (missing, unreadable, or of another run)."""


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def agents_sha256(root: Path) -> str | None:
    """The SHA-256 of the learned agents' code and shipped weights under ``root/agents``
    (each ``*.py``, ``*.zip`` and ``*.json``, path and bytes in path order); None when
    there is no such folder (an installed wheel without agents).
    """
    folder = root / AGENTS
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    files = sorted(p for ext in ("py", "zip", "json") for p in folder.rglob(f"*.{ext}"))
    for p in files:
        h.update(p.relative_to(root).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def policy_files(policies: Iterable[str]) -> dict[str, str]:
    """The SHA-256 of each file a policy string names (``agent:runs/a/model.zip``, or a
    run folder's ``model.zip``), by policy string; names without a path are left out.
    """
    out: dict[str, str] = {}
    for p in policies:
        _, sep, arg = p.partition(":")
        if not sep:
            continue
        path = Path(arg).expanduser()
        if path.is_dir() and (path / "model.zip").is_file():
            path = path / "model.zip"
        if path.is_file():
            out[p] = _file_sha(path)
    return out


def identity(
    *,
    provenance: dict[str, Any],
    scenarios: Sequence[dict[str, Any]],
    policies: Sequence[str],
    seeds: Sequence[int],
    quick: bool,
    decision_interval_s: float | None,
    root: Path,
) -> dict[str, Any]:
    """What the journal's episodes depend on (module docstring), as JSON-ready values."""
    return {
        "mtgym_version": provenance.get("mtgym_version"),
        "code_sha256": provenance.get("code_sha256"),
        "agents_sha256": agents_sha256(root),
        "scenarios": {s["name"]: [s.get("sha256"), s.get("tuning_sha256")] for s in scenarios},
        "policies": list(policies),
        "policy_files": policy_files(policies),
        "seeds": [int(s) for s in seeds],
        "quick": bool(quick),
        "decision_interval_s": decision_interval_s,
    }


def for_evaluation(
    out: Path,
    *,
    provenance: dict[str, Any],
    scenario: str,
    policies: Sequence[str],
    seeds: Sequence[int],
    decision_interval_s: float | None,
    resume: bool,
) -> Journal:
    """The journal of one scenario's evaluation in ``out`` (``mtgym evaluate``, ``mtgym
    compare``): ``Journal.start`` with the identity of that scenario, those policy strings
    (a path in one enters by its file's hash) and seeds.

    Raises:
        JournalError: as ``Journal.start``.
    """
    from mtgym.core.paths import CHECKOUT
    from mtgym.results import hashes

    ident = identity(
        provenance=provenance,
        scenarios=hashes.scenario_entries([scenario]),
        policies=policies,
        seeds=seeds,
        quick=False,
        decision_interval_s=decision_interval_s,
        root=Path(CHECKOUT),
    )
    return Journal.start(Path(out), ident, resume=resume)


def _default(obj: Any) -> Any:
    """JSON for numpy scalars (a row may hold them)."""
    if hasattr(obj, "item"):
        return obj.item()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


@dataclass
class Journal:
    """The open journal of one run: what it holds (from a resumed run) and its file.

    Attributes:
        path: the ``episodes.jsonl`` file.
        rows: (scenario, policy, seed, horizon_s, decision_interval_s) -> row.
        bounds: (scenario, seed, horizon_s) -> bound.
        unsupported_: (scenario, policy) -> why.
        resumed_rows: how many rows were read back.
        resumed_bounds: how many bounds were read back.
    """

    path: Path
    rows: dict[RowKey, dict[str, Any]] = field(default_factory=dict)
    bounds: dict[BoundKey, float] = field(default_factory=dict)
    unsupported_: dict[tuple[str, str], str] = field(default_factory=dict)
    resumed_rows: int = 0
    resumed_bounds: int = 0

    @classmethod
    def start(cls, out: Path, ident: dict[str, Any], *, resume: bool) -> Journal:
        """Open ``out/episodes.jsonl``: with ``resume``, read it back (refusing another
        run's); else start a new one with ``ident`` as its header.

        Raises:
            JournalError: ``resume`` and no journal, an unreadable header, or a header
                that is not ``ident`` (the message names the first difference).
        """
        path = Path(out) / FILE
        journal = cls(path)
        if resume:
            for item in jsonl.read(
                path, KIND, ident, what="run", error=JournalError, default=_default
            ):
                journal._take(item)
            return journal
        jsonl.start(path, KIND, ident, default=_default)
        return journal

    def _take(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "row":
            key = (
                item["scenario"],
                item["policy"],
                int(item["seed"]),
                item["horizon_s"],
                item["decision_interval_s"],
            )
            self.rows[key] = item["row"]
            self.resumed_rows += 1
        elif kind == "bound":
            self.bounds[(item["scenario"], int(item["seed"]), item["horizon_s"])] = float(
                item["bound"]
            )
            self.resumed_bounds += 1
        elif kind == "unsupported":
            self.unsupported_[(item["scenario"], item["policy"])] = item["reason"]

    def _append(self, item: dict[str, Any]) -> None:
        jsonl.append(self.path, item, default=_default)

    def row(
        self,
        scenario: str,
        policy: str,
        seed: int,
        horizon_s: float | None,
        decision_interval_s: float | None,
    ) -> dict[str, Any] | None:
        """A copy of the journal's row of this episode, or None."""
        hit = self.rows.get((scenario, policy, int(seed), horizon_s, decision_interval_s))
        return None if hit is None else dict(hit)

    def bound(self, scenario: str, seed: int, horizon_s: float | None) -> float | None:
        """The journal's bound of (scenario, seed) over ``horizon_s``, or None."""
        return self.bounds.get((scenario, int(seed), horizon_s))

    def unsupported(self, scenario: str, policy: str) -> str | None:
        """Why ``policy`` could not run on ``scenario`` (as the journal says), or None."""
        return self.unsupported_.get((scenario, policy))

    def add_row(
        self,
        scenario: str,
        policy: str,
        seed: int,
        horizon_s: float | None,
        decision_interval_s: float | None,
        row: dict[str, Any],
    ) -> None:
        """Record a played episode's row (before its bound and common-jobs metrics)."""
        key = (scenario, policy, int(seed), horizon_s, decision_interval_s)
        if key in self.rows:
            return
        self.rows[key] = dict(row)
        self._append(
            {
                "type": "row",
                "scenario": scenario,
                "policy": policy,
                "seed": int(seed),
                "horizon_s": horizon_s,
                "decision_interval_s": decision_interval_s,
                "row": row,
            }
        )

    def add_bound(self, scenario: str, seed: int, horizon_s: float | None, bound: float) -> None:
        """Record a computed hindsight bound."""
        key = (scenario, int(seed), horizon_s)
        if key in self.bounds:
            return
        self.bounds[key] = float(bound)
        self._append(
            {
                "type": "bound",
                "scenario": scenario,
                "seed": int(seed),
                "horizon_s": horizon_s,
                "bound": float(bound),
            }
        )

    def add_unsupported(self, scenario: str, policy: str, reason: str) -> None:
        """Record that ``policy`` cannot run on ``scenario``."""
        if (scenario, policy) in self.unsupported_:
            return
        self.unsupported_[(scenario, policy)] = reason
        self._append(
            {"type": "unsupported", "scenario": scenario, "policy": policy, "reason": reason}
        )

    def summary(self) -> dict[str, int]:
        """What was read back: ``{"rows": n, "bounds": m}`` (the result file's note)."""
        return {"rows": self.resumed_rows, "bounds": self.resumed_bounds}
