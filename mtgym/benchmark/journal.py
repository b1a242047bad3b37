"""A benchmark's episodes written as they finish, so that a killed run keeps them and
``mtgym benchmark --resume`` plays only what is missing.

``OUT/episodes.jsonl`` holds one JSON object per line: first a header naming what the
episodes depend on (``identity``: the code hash, each scenario's and tuning record's hash,
the policies with the hash of every file a policy string names and of the learned agents'
code and shipped weights, the seeds, quick or full, the decision interval), then one line
per finished episode row, per hindsight bound and per policy found unsupported on a
scenario. Each line is flushed and synced when written: a run killed at any moment leaves
every finished item, and at worst a torn last line, which reading skips.

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
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def _difference(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The first key whose value differs, said in words; None when equal."""
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            if key == "scenarios":
                a, b = old.get(key) or {}, new.get(key) or {}
                for name in sorted(set(a) | set(b)):
                    if a.get(name) != b.get(name):
                        return f"scenario {name}: its file or tuning record changed"
            return f"{key} differs ({old.get(key)!r} then, {new.get(key)!r} now)"
    return None


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
            journal._read(ident)
            return journal
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps({"kind": KIND, "identity": ident}, default=_default) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return journal

    def _read(self, ident: dict[str, Any]) -> None:
        if not self.path.is_file():
            raise JournalError(
                f"--resume: {self.path} does not exist; run without --resume to start"
            )
        lines = self.path.read_text(encoding="utf-8").splitlines()
        try:
            head = json.loads(lines[0]) if lines else {}
        except json.JSONDecodeError:
            head = {}
        if head.get("kind") != KIND:
            raise JournalError(f"--resume: {self.path} is not a benchmark journal")
        why = _difference(json.loads(json.dumps(head["identity"])), json.loads(json.dumps(ident)))
        if why is not None:
            raise JournalError(
                f"--resume: {self.path} was written by another run ({why}); "
                "run without --resume to start over"
            )
        for line in lines[1:]:
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line: the episode is played again
            self._take(item)

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
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(item, default=_default) + "\n")
            f.flush()
            os.fsync(f.fileno())

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
