"""A tuning sweep's points written as they finish, so that ``mtgym tune --resume`` replays
none of a killed run's finished points.

``mtgym tune`` saves the record after each policy; a policy's sweep can take an hour on a
Summit scenario, and a run killed inside it used to lose every point it had played. The
journal (``runs/tune/<scenario>.jsonl`` by default; the format: ``mtgym.results.jsonl``)
holds a header (``identity``: the code hash, the scenario's hash, the seeds and the horizon)
and one line per finished point (policy and ``Point``), each synced when written. With
``--resume``, ``PointJournal.done`` gives a policy's finished points to
``mtgym.tuning.sweep.play_points``, which then plays only the others; the points come back
in the order they were played, so the resumed sweep's record equals an uninterrupted one's
(its ``wall_s`` aside). A journal of other code, another scenario file, other seeds or
another horizon is refused (one line naming the difference); without ``--resume`` a new
journal replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtgym.results import jsonl
from mtgym.scenario.tuning import Point

#: the journals' folder (under the working directory)
FOLDER = Path("runs") / "tune"
#: the header's ``kind``
KIND = "mtgym-tune-journal"


class TuneJournalError(ValueError):
    """A journal that cannot be resumed (missing, or of another sweep)."""


def identity(scenario: str, seeds: list[int], horizon_s: float | None) -> dict[str, Any]:
    """What a sweep's points depend on: code, scenario file, seeds and horizon."""
    from mtgym.results import hashes

    entry = hashes.scenario_entries([scenario])[0]
    return {
        "code_sha256": hashes.code_sha256(),
        "scenario": scenario,
        "scenario_sha256": entry["sha256"],
        "seeds": [int(s) for s in seeds],
        "horizon_s": horizon_s,
    }


@dataclass
class PointJournal:
    """The open journal of one scenario's sweep.

    Attributes:
        path: the ``.jsonl`` file.
        points: policy -> its finished points, in the order played.
    """

    path: Path
    points: dict[str, list[Point]] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path, ident: dict[str, Any], *, resume: bool) -> PointJournal:
        """Read ``path`` back (``resume``; refused when its header is not ``ident``) or start
        a new journal there.

        Raises:
            TuneJournalError: ``resume`` and no journal, or one of another sweep.
        """
        journal = cls(Path(path))
        if resume:
            for item in jsonl.read(journal.path, KIND, ident, what="sweep", error=TuneJournalError):
                try:
                    point = Point.model_validate(item["point"])
                except (KeyError, ValueError):
                    continue  # not a point: played again
                journal.points.setdefault(item["policy"], []).append(point)
            return journal
        jsonl.start(journal.path, KIND, ident)
        return journal

    def done(self, policy: str) -> dict[tuple, Point]:
        """``policy``'s finished points by ``point_key``, in the order they were played, as
        the ``done`` dict of ``mtgym.tuning.sweep.play_points``: every point it adds is
        journalled.
        """
        return _Journalled(self, policy)

    def add(self, policy: str, point: Point) -> None:
        """Append a finished point (synced)."""
        self.points.setdefault(policy, []).append(point)
        jsonl.append(self.path, {"policy": policy, "point": point.model_dump(mode="json")})


class _Journalled(dict):
    """A policy's ``done`` points: filled from the journal, and journalling each new one."""

    def __init__(self, journal: PointJournal, policy: str) -> None:
        super().__init__()
        from mtgym.tuning.sweep import point_key

        self.journal, self.policy = journal, policy
        for pt in journal.points.get(policy, []):
            super().__setitem__(point_key(pt.params), pt)

    def __setitem__(self, key: tuple, point: Point) -> None:
        if key not in self:
            self.journal.add(self.policy, point)
        super().__setitem__(key, point)
