"""What a run will cost, from the episodes the registry measured: the line ``mtgym
evaluate`` and ``mtgym tune`` print before they play.

The registry's result files (``results/``) keep every episode's ``wall_s``. For a scenario
and the policies about to play it, ``measured`` takes each policy's mean episode time from
the newest file that played it there; ``cost_line`` turns that into one line: the episodes
to play and, where every policy was measured, about how long they take in one process
(the measured runs' machines and loads, which the line names by file, may differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mtgym.tables import wall_text


@dataclass(frozen=True)
class Measured:
    """A policy's measured episode time on a scenario.

    Attributes:
        mean_s: the mean ``wall_s`` of its episodes there.
        episodes: how many episodes the mean is over.
        source: the result file they come from.
    """

    mean_s: float
    episodes: int
    source: Path


def measured(folder: Path, scenario: str, policies: Sequence[str]) -> dict[str, Measured]:
    """Each of ``policies``' mean episode time on ``scenario`` in the registry ``folder``:
    from the newest result file (by its date) with a row of that policy there that has a
    ``wall_s``. Unreadable files are skipped; a policy never measured there is left out.
    """
    from mtgym.results import store
    from mtgym.results.schema import ResultFileError

    files = []
    if folder.is_dir():
        for path in sorted(p for p in folder.iterdir() if p.name.endswith(store.SUFFIXES)):
            try:
                files.append((store.read_result(path), path))
            except (ResultFileError, OSError, ValueError):
                continue
    out: dict[str, Measured] = {}
    for res, path in sorted(files, key=lambda f: f[0].date_utc, reverse=True):
        for p in policies:
            if p in out:
                continue
            walls = [
                float(r["wall_s"])
                for r in res.rows
                if r.get("scenario") == scenario
                and r.get("policy") == p
                and isinstance(r.get("wall_s"), int | float)
            ]
            if walls:
                out[p] = Measured(sum(walls) / len(walls), len(walls), path)
    return out


def cost_line(
    folder: Path, scenario: str, episodes: dict[str, int], *, workers: int = 1, extra: str = ""
) -> str:
    """``"to play: 20 episode(s) (freetrain 10, agent 10); about 4 min in 1 process by
    the registry's measured episodes (results/benchmark-full.json.gz)"``.

    Args:
        folder: the registry (``mtgym.results.store.results_dir``).
        scenario: the scenario to play.
        episodes: policy (its label, as rows name it) -> episodes to play.
        workers: processes sharing the episodes (the estimate divides by it).
        extra: said after the counts (``"and 10 hindsight bound(s)"``).
    """
    total = sum(episodes.values())
    counts = ", ".join(f"{p} {n}" for p, n in episodes.items())
    line = f"to play: {total} episode(s) ({counts}){' ' + extra if extra else ''}"
    if total == 0:
        return line
    got = measured(folder, scenario, [p for p, n in episodes.items() if n])
    missing = [p for p, n in episodes.items() if n and p not in got]
    if missing:
        return line + f"; no measured episode of {', '.join(missing)} on {scenario} to estimate"
    secs = sum(got[p].mean_s * n for p, n in episodes.items() if n) / max(workers, 1)
    sources = sorted({str(m.source) for m in got.values()})
    return (
        line + f"; about {wall_text(secs)} in {max(workers, 1)} process(es) by the registry's "
        f"measured episodes ({', '.join(sources)}; their machines and loads)"
    )
