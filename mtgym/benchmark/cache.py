"""Episodes a benchmark need not play again: the references' rows and the hindsight bounds
recorded in the registry (``results/``, ``mtgym.results``).

A reference's episode and a (scenario, seed)'s hindsight bound depend only on the scenario,
its tuning record and the code, so ``mtgym benchmark --policy NEW`` takes them from an
earlier benchmark's result file instead of playing them, and plays only NEW's episodes. A
result file is used for a scenario when all of these hold:

- it is a ``benchmark`` result;
- its ``mtgym_version`` is this one, and its ``code_sha256`` this checkout's
  (``mtgym.results.hashes.code_sha256``: the simulator, models, generators, policies,
  baselines, metrics and bound);
- its entry for the scenario has this scenario's ``sha256`` and ``tuning_sha256``.

From such a file, a row is reused for the same (scenario, policy, seed), played over the
same ``horizon_s`` with the same ``decision_interval_s`` (recorded in each row by
``mtgym.results.rows.benchmark_rows``; a quick episode is a full-run episode, so a quick
run's rows serve a full run's first seeds); a bound for the same (scenario, seed,
``horizon_s``), from any policy's row. Only the split's recorded references
(``mtgym.benchmark.references``) are reused, each on every scenario: a judged policy that is
some scenario's reference has its deterministic episodes reused too, its timing then being
the source run's (below). Files are read in name order; the first that holds an item gives
it.

A reused row is the recorded one (its ``wall_s`` and ``decision_ms`` are those of the run
that played it, not measured now); the common-jobs metrics are recomputed with this run's
policies (``mtgym.evaluate.add_common_metrics``), so the report equals the one of a run that
played everything (``tests/benchmark/test_cache.py``). ``describe`` says, one line per
scenario, what is reused from where and, for what is played, why no file served it.

The cache notes each row and bound it hands out (``EpisodeCache.row``, ``bound``), and
``reused`` turns that into the result file's record of it (the aggregates' ``cache`` key,
written by ``mtgym benchmark``): per scenario, the source files, how many episodes and
bounds were reused, each reused policy's seeds, and that those rows' timing fields are the
source run's (``TIMING_NOTE``). The leaderboard reads it to leave reused rows out of a
policy's decision time (``mtgym.leaderboard.board``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtgym.results import store
from mtgym.results.rows import BENCHMARK_KEYS
from mtgym.results.schema import ResultFile, ResultFileError

#: the only kind of result file whose rows are reused
KIND = "benchmark"
#: the fields of a row measured while it was played (its run's machine and load)
TIMING_FIELDS = ("wall_s", "decision_ms")
#: what the ``cache`` record says of a reused row's ``TIMING_FIELDS``
TIMING_NOTE = (
    "reused episodes keep the wall_s and decision_ms measured by the run that played them "
    "(the source file's), not by this run"
)

RowKey = tuple[str, str, int, float | None, float | None]
BoundKey = tuple[str, int, float | None]


@dataclass(frozen=True)
class Current:
    """What a reusable result must have been measured with.

    Attributes:
        mtgym_version: this package's version.
        code_sha256: this checkout's code hash (``mtgym.results.hashes.code_sha256``).
        scenarios: scenario name -> (``sha256``, ``tuning_sha256``) as they are now
            (``mtgym.results.hashes.scenario_entries``).
    """

    mtgym_version: str
    code_sha256: str | None
    scenarios: dict[str, tuple[str, str | None]]

    @classmethod
    def of(cls, provenance: dict[str, Any], scenarios: Iterable[dict[str, Any]]) -> Current:
        """From ``mtgym.results.provenance.capture``'s dict and the scenario entries."""
        return cls(
            mtgym_version=str(provenance["mtgym_version"]),
            code_sha256=provenance.get("code_sha256"),
            scenarios={s["name"]: (s["sha256"], s["tuning_sha256"]) for s in scenarios},
        )


@dataclass
class EpisodeCache:
    """The reusable rows and bounds found in a registry folder (``load``).

    Attributes:
        folder: the registry folder read.
        policies: the policies whose rows may be reused (the references).
        rows: (scenario, policy, seed, horizon_s, decision_interval_s) -> (the recorded
            row, the file it came from).
        bounds: (scenario, seed, horizon_s) -> (the bound, the file).
        refused: scenario -> one reason per file that could not serve it.
        files: how many result files the folder holds.
        used_rows: the rows handed out by ``row`` (key -> its file).
        used_bounds: the bounds handed out by ``bound`` (key -> its file).
    """

    folder: Path
    policies: frozenset[str]
    rows: dict[RowKey, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    bounds: dict[BoundKey, tuple[float, Path]] = field(default_factory=dict)
    refused: dict[str, list[str]] = field(default_factory=dict)
    files: int = 0
    used_rows: dict[RowKey, Path] = field(default_factory=dict)
    used_bounds: dict[BoundKey, Path] = field(default_factory=dict)

    def row(
        self,
        scenario: str,
        policy: str,
        seed: int,
        horizon_s: float | None,
        decision_interval_s: float | None,
    ) -> dict[str, Any] | None:
        """A copy of the recorded episode row (as ``mtgym.evaluate.episode_row`` made it,
        with its bound and last common-jobs metrics, both set again by the runner), or None.
        A row handed out is noted in ``used_rows`` (``reused``).
        """
        key = (scenario, policy, int(seed), horizon_s, decision_interval_s)
        hit = self.rows.get(key)
        if hit is None:
            return None
        self.used_rows[key] = hit[1]
        return dict(hit[0])

    def bound(self, scenario: str, seed: int, horizon_s: float | None) -> float | None:
        """The recorded hindsight bound of (scenario, seed) over ``horizon_s``, or None
        (one handed out is noted in ``used_bounds``).
        """
        key = (scenario, int(seed), horizon_s)
        hit = self.bounds.get(key)
        if hit is None:
            return None
        self.used_bounds[key] = hit[1]
        return hit[0]

    def add(self, result: ResultFile, path: Path, scenario: str) -> None:
        """Index the rows of ``scenario`` in ``result`` (a file that may serve it); an
        item already indexed (from a file earlier in name order) is kept.
        """
        for rec in result.rows:
            if rec.get("scenario") != scenario or "horizon_s" not in rec:
                continue  # (a row written before rows recorded their horizon)
            seed, h = int(rec["seed"]), rec["horizon_s"]
            bound = rec.get("hindsight_bound")
            if isinstance(bound, int | float) and math.isfinite(bound):
                self.bounds.setdefault((scenario, seed, h), (float(bound), path))
            if rec.get("policy") in self.policies:
                key = (scenario, rec["policy"], seed, h, rec.get("decision_interval_s"))
                self.rows.setdefault(key, (episode_row(rec), path))


def episode_row(rec: dict[str, Any]) -> dict[str, Any]:
    """A result file's row as the runner holds it: without the benchmark's keys but
    ``seed``, and null numbers back to NaN (the rows' and the report's values are those of
    a row never written).
    """
    skip = set(BENCHMARK_KEYS) - {"seed"}
    return {k: (math.nan if v is None else v) for k, v in rec.items() if k not in skip}


def result_files(folder: Path) -> list[Path]:
    """The result files of ``folder`` (``*.json``, ``*.json.gz``), in name order; none
    when it does not exist.
    """
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith(store.SUFFIXES))


def file_refusal(result: ResultFile, current: Current) -> str | None:
    """Why ``result`` can serve no scenario (its version or code differ), or None."""
    if result.mtgym_version != current.mtgym_version:
        return f"made by mtgym {result.mtgym_version} (this is {current.mtgym_version})"
    if result.code_sha256 is None:
        return "records no code_sha256 (written before the cache)"
    if result.code_sha256 != current.code_sha256:
        return "made by other code (its code_sha256 is not this checkout's)"
    return None


def scenario_refusal(result: ResultFile, scenario: str, current: Current) -> str | None:
    """Why ``result`` cannot serve ``scenario`` (not played there, or the scenario file or
    its tuning record changed since), or None.
    """
    entry = next((s for s in result.scenarios if s.name == scenario), None)
    if entry is None:
        return "did not play this scenario"
    sha, tuning = current.scenarios[scenario]
    if entry.sha256 != sha:
        return "the scenario has changed since (its sha256 differs)"
    if entry.tuning_sha256 != tuning:
        return "the scenario's tuning record has changed since (its tuning_sha256 differs)"
    return None


def load(
    folder: Path, current: Current, policies: Iterable[str], exclude: Iterable[Path] = ()
) -> EpisodeCache:
    """Read every result file of ``folder`` and index what may be reused (module docstring).

    Args:
        folder: the registry folder (``mtgym.results.store.results_dir``).
        current: what a file must have been measured with.
        policies: the policies whose rows may be reused (the recorded references).
        exclude: files not to read (``mtgym leaderboard --check`` leaves out the file it
            checks, which may sit in the registry).

    Returns:
        The cache; a file that cannot be read, or cannot serve a scenario, is noted in
        ``refused`` with its reason.
    """
    cache = EpisodeCache(Path(folder), frozenset(policies))
    cache.refused = {name: [] for name in current.scenarios}
    skip = {Path(p).resolve() for p in exclude}
    for path in result_files(cache.folder):
        if path.resolve() in skip:
            continue
        cache.files += 1
        try:
            result = store.read_result(path)
        except ResultFileError as exc:
            for reasons in cache.refused.values():
                reasons.append(f"{shown(path)}: unreadable ({str(exc)[:80]})")
            continue
        if result.kind != KIND:
            continue
        why_file = file_refusal(result, current)
        for name in current.scenarios:
            why = why_file or scenario_refusal(result, name, current)
            if why is None:
                cache.add(result, path, name)
            elif why != "did not play this scenario":
                cache.refused[name].append(f"{shown(path)}: {why}")
    return cache


def shown(path: Path) -> str:
    """``path`` relative to the current folder when inside it (``results/x.json``)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class Episodes:
    """The episodes of one scenario a run needs (for ``describe``).

    Attributes:
        scenario: the scenario's name.
        policies: the policies run there, in report order.
        seeds: the seeds.
        horizon_s: simulated seconds played (None: whole).
        decision_interval_s: the run's decision interval (None: each policy's own).
    """

    scenario: str
    policies: Sequence[str]
    seeds: Sequence[int]
    horizon_s: float | None
    decision_interval_s: float | None


def describe(cache: EpisodeCache, ep: Episodes) -> str:
    """One line: what of ``ep``'s references and bounds is reused, from which files, and
    what is played with the reason (``"summit-replay-2d: reusing freetrain (10 episodes)
    and 10 bounds from results/benchmark-full.json.gz"``).
    """
    sources: set[Path] = set()
    reused, missing = [], 0
    for p in (p for p in ep.policies if p in cache.policies):
        keys = [(ep.scenario, p, int(s), ep.horizon_s, ep.decision_interval_s) for s in ep.seeds]
        hits = [cache.rows[k][1] for k in keys if k in cache.rows]
        sources.update(hits)
        missing += len(keys) - len(hits)
        if hits:
            reused.append(f"{p} ({len(hits)} episode{'s' * (len(hits) != 1)})")
    bounds = [cache.bounds.get((ep.scenario, int(s), ep.horizon_s)) for s in ep.seeds]
    sources.update(b[1] for b in bounds if b is not None)
    n_bounds = sum(b is not None for b in bounds)
    parts = []
    if reused or n_bounds:
        what = ", ".join(reused) + (" and " if reused else "") + f"{n_bounds} bounds"
        parts.append(f"reusing {what} from {', '.join(sorted(map(shown, sources)))}")
    if missing or n_bounds < len(ep.seeds):
        play = f"playing {missing} reference episodes and {len(ep.seeds) - n_bounds} bounds"
        parts.append(f"{play}: {_why_not(cache, ep.scenario)}")
    return f"{ep.scenario}: {'; '.join(parts) or 'no reference to reuse, no bound to compute'}"


def _why_not(cache: EpisodeCache, scenario: str) -> str:
    """Why some item of ``scenario`` was found in no file."""
    if cache.refused.get(scenario):
        return "; ".join(cache.refused[scenario])
    if cache.files == 0:
        return f"no result file in {shown(cache.folder)}/"
    return (
        f"no result file in {shown(cache.folder)}/ holds them (seeds, horizon or decision "
        "interval differ)"
    )


def reused(cache: EpisodeCache | None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The result file's record of what this run took from the cache (the aggregates'
    ``cache`` key): per scenario where something was reused, ``sources`` (the files, as
    ``describe`` shows them), ``episodes`` and ``bounds`` (how many were reused),
    ``seeds`` (policy -> the seeds of its reused episodes) and ``timing``
    (``TIMING_NOTE``). Empty without a cache (``--no-cache``) or when nothing was reused.

    Args:
        cache: the run's cache (None: none).
        labels: ``--policy`` string -> label the run reports (``relabel``); a policy
            without one keeps its name.
    """
    if cache is None:
        return {}
    names = labels or {}
    out: dict[str, Any] = {}
    for (sc, pol, seed, _h, _dt), path in cache.used_rows.items():
        e = out.setdefault(sc, {"sources": set(), "episodes": 0, "bounds": 0, "seeds": {}})
        e["sources"].add(shown(path))
        e["episodes"] += 1
        e["seeds"].setdefault(names.get(pol, pol), []).append(seed)
    for (sc, _seed, _h), path in cache.used_bounds.items():
        e = out.setdefault(sc, {"sources": set(), "episodes": 0, "bounds": 0, "seeds": {}})
        e["sources"].add(shown(path))
        e["bounds"] += 1
    for e in out.values():
        e["sources"] = sorted(e["sources"])
        e["seeds"] = {p: sorted(s) for p, s in e["seeds"].items()}
        e["timing"] = TIMING_NOTE
    return out
