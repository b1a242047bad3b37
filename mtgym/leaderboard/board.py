"""The leaderboard: every policy of the registry's full-test-split benchmark results,
ranked by suite score (``mtgym leaderboard``; ``docs/leaderboard.md`` is rendered from the
committed full run by the ``leaderboard`` renderer).

An **entry** is one policy of one result file: each policy the file played, learned or
baseline (a reference included). Its numbers are the file's own aggregates, as
``mtgym benchmark`` computed them (``mtgym.benchmark.report.to_json``), never recomputed
here:

- **suite score**: the geometric mean over the scenarios of the policy's paired ratio to
  each scenario's reference, with its 95 % interval (``suite``);
- **IQM** of the episodes normalised by the reference, by the hindsight bound (the share
  of the bound) and by the clairvoyant planner (the share of a schedule known to be
  reachable), each with its stratified-bootstrap interval (``aggregates``);
- **JCT of common jobs (x ref)**: the geometric mean over the scenarios of the mean JCT of
  the jobs every policy of the file completed, divided by the reference's (lower is
  better; the common jobs are the file's, so this column compares within a file best);
- **jobs done**: jobs completed per pass over the split (the sum over scenarios of the
  mean over seeds);
- **decision ms**: the mean over the policy's episodes played in the file's run of the
  rows' ``decision_ms`` (mean wall milliseconds per decision, on the file's machine): the
  episodes the run reused from an earlier file (its aggregates' ``cache`` record,
  ``mtgym.benchmark.cache.reused``) are left out, their timing being the earlier run's;
  ``n/a`` when no played row carries one;
- for a learned policy, its training steps, wall time, and the seeds it trained and was
  selected on (``mtgym.leaderboard.training``).

``collect`` lists a registry folder: files that pass ``mtgym.leaderboard.submission``'s
cheap checks (``listing_problems``: the full test split with the current scenario and
tuning hashes, no learned policy that touched a test seed, the recorded references, every
episode once) give entries; the others are left out with their first reason. A policy in
several files is shown once, from the newest file. The ranking is by suite score, highest
first; a policy without one (it did not run on every scenario) comes last. The clairvoyant
planner (``mtgym.benchmark.runner.is_reference_point``: it knows the whole episode) is not
ranked: it is listed after the ranked entries, its ``#`` a dash, as the bracket's lower end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtgym.benchmark.splits import TEST, Split
from mtgym.leaderboard.training import Training, read_training
from mtgym.results.schema import ResultFile
from mtgym.tables import fmt, wall_text

#: an interval: (point, low, high), NaN where undefined
Interval = tuple[float, float, float]
_NAN3: Interval = (math.nan, math.nan, math.nan)
#: the table's columns, in order (``file`` only when entries come from several files)
COLUMNS = (
    "#",
    "policy",
    "suite score",
    "IQM (x reference)",
    "IQM (x hindsight bound)",
    "IQM (x clairvoyant)",
    "JCT common (x ref)",
    "jobs done",
    "decision ms",
    "training",
    "seeds: trained; selected on",
)


@dataclass(frozen=True)
class Entry:
    """One policy of one result file (module docstring).

    Attributes:
        policy: the policy's name in the file.
        source: the result file, as listed (a path).
        date_utc: when the file's run started.
        suite: suite score (point, low, high).
        iqm: IQM normalised by the reference.
        iqm_bound: IQM normalised by the hindsight bound.
        iqm_clairvoyant: IQM normalised by the clairvoyant planner's headline.
        jct_common_ratio: geometric mean over scenarios of the common-jobs JCT ratio.
        jobs_done: jobs completed per pass over the split.
        decision_ms: mean decision wall time (ms) over the episodes the run played (not
            reused); NaN: none carries one.
        reused: how many of the policy's episodes the run reused from an earlier file.
        training: how a learned policy was trained; None for a baseline.
    """

    policy: str
    source: str
    date_utc: str
    suite: Interval
    iqm: Interval
    iqm_bound: Interval
    jct_common_ratio: float
    jobs_done: float
    decision_ms: float
    training: Training | None
    reused: int = 0
    iqm_clairvoyant: Interval = _NAN3

    @property
    def ranked(self) -> bool:
        """Whether it competes for a rank (not a reference point such as the clairvoyant)."""
        from mtgym.benchmark.runner import is_reference_point

        return not is_reference_point(self.policy)


def _x(v: Any) -> float:
    """A JSON number as a float (null or missing: NaN)."""
    return math.nan if v is None else float(v)


def _interval(d: dict[str, Any] | None, point: str) -> Interval:
    """``(d[point], d['ci_low'], d['ci_high'])`` of a JSON interval (NaN where absent)."""
    if not d:
        return _NAN3
    return (_x(d.get(point)), _x(d.get("ci_low")), _x(d.get("ci_high")))


def _geomean(values: Sequence[float]) -> float:
    """The geometric mean; NaN when empty or any value is not positive and finite."""
    if not values or not all(v > 0 and math.isfinite(v) for v in values):
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _per_scenario(agg: dict[str, Any], policy: str) -> tuple[float, float]:
    """(JCT common ratio's geometric mean, jobs done summed) over the scenarios; NaN when
    the policy lacks either on some scenario.
    """
    ratios, jobs = [], 0.0
    for sc in agg.get("scenarios", []):
        e = sc.get("policies", {}).get(policy)
        if e is None or "unsupported" in e:
            return math.nan, math.nan
        ratios.append(_x(e.get("jct_common_ratio")))
        jobs += _x((e.get("jobs_completed") or {}).get("mean"))
    return _geomean(ratios), jobs


def reused_episodes(agg: dict[str, Any], policy: str) -> set[tuple[str, int]]:
    """The (scenario, seed) episodes of ``policy`` its run reused from an earlier file (the
    aggregates' ``cache`` record, ``mtgym.benchmark.cache.reused``; none without it).
    """
    out = set()
    for sc, entry in (agg.get("cache") or {}).items():
        seeds = ((entry or {}).get("seeds") or {}).get(policy) or []
        out |= {(str(sc), int(s)) for s in seeds}
    return out


def _decision_ms(rows: list[dict[str, Any]], policy: str, reused: set[tuple[str, int]]) -> float:
    """The mean of the policy's played rows' finite ``decision_ms`` (rows of ``reused``
    episodes left out: their timing is another run's); NaN when none has one.
    """
    vals = [
        r.get("decision_ms")
        for r in rows
        if r.get("policy") == policy and (str(r.get("scenario")), r.get("seed")) not in reused
    ]
    ok = [float(v) for v in vals if isinstance(v, int | float) and math.isfinite(v)]
    return sum(ok) / len(ok) if ok else math.nan


def entries_of(result: ResultFile, source: str) -> list[Entry]:
    """Every policy of a benchmark result file as an entry, in the file's order.

    Args:
        result: a ``benchmark`` result file.
        source: its path, as the table shows it.
    """
    from mtgym.benchmark.runner import is_baseline, is_reference_point

    agg = result.aggregates
    iqms = agg.get("aggregates", {}).get("policies", {})
    out = []
    for p in agg.get("policies", []):
        jct, jobs = _per_scenario(agg, p)
        reused = reused_episodes(agg, p)
        out.append(
            Entry(
                policy=p,
                source=source,
                date_utc=result.date_utc,
                suite=_interval(agg.get("suite", {}).get(p), "score"),
                iqm=_interval(iqms.get(p, {}).get("iqm"), "point"),
                iqm_bound=_interval(iqms.get(p, {}).get("iqm_bound"), "point"),
                iqm_clairvoyant=_interval(iqms.get(p, {}).get("iqm_clairvoyant"), "point"),
                jct_common_ratio=jct,
                jobs_done=jobs,
                decision_ms=_decision_ms(result.rows, p, reused),
                training=None if is_baseline(p) or is_reference_point(p) else read_training(p),
                reused=len(reused),
            )
        )
    return out


def rank(entries: Sequence[Entry]) -> list[Entry]:
    """The entries by suite score, highest first; those without one last, by name; the
    reference points (not ``ranked``) after all of them.
    """

    def key(e: Entry) -> tuple[bool, bool, float, str]:
        s = e.suite[0]
        return (not e.ranked, not math.isfinite(s), -s if math.isfinite(s) else 0.0, e.policy)

    return sorted(entries, key=key)


def newest_per_policy(entries: Sequence[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(kept, dropped): each policy once, from its newest file (``date_utc``; the source's
    name breaks ties).
    """
    best: dict[str, Entry] = {}
    for e in entries:
        cur = best.get(e.policy)
        if cur is None or (e.date_utc, e.source) > (cur.date_utc, cur.source):
            best[e.policy] = e
    kept = list(best.values())
    return kept, [e for e in entries if best[e.policy] is not e]


def result_files(folder: Path) -> list[Path]:
    """The result files of a registry folder (``*.json`` and ``*.json.gz``), sorted."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith((".json", ".json.gz")))


def collect(folder: Path, split: Split = TEST) -> tuple[list[Entry], list[str]]:
    """The ranked entries of a registry folder and a line per file or entry left out.

    A file is left out when it cannot be read, is not a benchmark of the full split, was
    played on other scenarios or tuning records than the current ones, holds a learned
    policy whose ``args.json`` lists a test seed, lacks a recorded reference, or lacks an
    episode or holds one too many (``mtgym.leaderboard.submission.listing_problems``); a
    policy already shown from a newer file is left out too.

    Args:
        folder: the registry folder.
        split: the split a file must have played (the test split).
    """
    from mtgym.leaderboard.submission import listing_problems
    from mtgym.results.schema import ResultFileError
    from mtgym.results.store import read_result

    entries: list[Entry] = []
    left: list[str] = []
    for path in result_files(folder):
        try:
            result = read_result(path)
        except ResultFileError as exc:
            left.append(f"{path}: {exc}")
            continue
        if result.kind != "benchmark":
            continue  # evaluate and tune records are not leaderboard material
        why = listing_problems(result, split)
        if why:
            left.append(
                f"{path}: {why[0]}" + (f" (and {len(why) - 1} more)" if len(why) > 1 else "")
            )
            continue
        entries += entries_of(result, str(path))
    kept, dropped = newest_per_policy(entries)
    left += [f"{e.source}: {e.policy} is shown from a newer file" for e in dropped]
    return rank(kept), left


# -- the table ------------------------------------------------------------------------------
def _iv(iv: Interval) -> str:
    """``point [low, high]``; the point alone without an interval; ``n/a`` without it."""
    v, lo, hi = iv
    if not math.isfinite(v):
        return "n/a"
    return (
        fmt(v)
        if not (math.isfinite(lo) and math.isfinite(hi))
        else f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]"
    )


def _training(t: Training | None) -> tuple[str, str]:
    """The training and seeds cells: ``baseline`` for a baseline, ``n/a (why)`` when the
    agent's folder has no record.
    """
    if t is None:
        return "baseline", ""
    if not t.found:
        return f"n/a (no train.json in {t.folder})", ""
    steps = "n/a" if t.timesteps is None else f"{t.timesteps:,}"
    kept = f", kept {t.kept}" if t.kept else ""
    cell = f"{steps} steps, {wall_text(t.wall_s)}{kept} ({t.folder})"
    return cell, f"{t.trained_on or 'n/a'}; {t.selected_on or 'n/a'}"


def table(entries: Sequence[Entry], *, files: bool = False) -> tuple[list[str], list[list[str]]]:
    """The leaderboard as text cells: (header, one row per entry, in the given order).

    Args:
        entries: ranked entries (``rank``).
        files: add a ``file`` column (entries from several result files).
    """
    header = [*COLUMNS, *(["file"] if files else [])]
    # (the clairvoyant's column only where a file played it: results since issue [teacher])
    clv = any(math.isfinite(e.iqm_clairvoyant[0]) for e in entries)
    if not clv:
        header.remove("IQM (x clairvoyant)")
    rows = []
    k = 0
    for e in entries:
        k += e.ranked
        train, seeds = _training(e.training)
        if not e.ranked:
            train = "knows the whole episode: not ranked"
        jct = "n/a" if not math.isfinite(e.jct_common_ratio) else f"{e.jct_common_ratio:.2f}x"
        cells = [
            str(k) if e.ranked else "-",
            e.policy,
            _iv(e.suite),
            _iv(e.iqm),
            _iv(e.iqm_bound),
            *([_iv(e.iqm_clairvoyant)] if clv else []),
            jct,
            fmt(e.jobs_done),
            fmt(e.decision_ms),
            train,
            seeds,
        ]
        rows.append(cells + ([e.source] if files else []))
    return header, rows


def notes(entries: Sequence[Entry]) -> list[str]:
    """The lines under the table: how it is ranked, and why a column says ``n/a``."""
    out = [
        "Ranked by suite score (geometric mean over the test split's scenarios of the paired "
        "ratio to each scenario's reference, 95 % interval); IQMs with their stratified "
        "bootstrap intervals; JCT common: geometric mean over scenarios of the common jobs' "
        "mean JCT / the reference's (lower is better); jobs done: per pass over the split; "
        "decision ms: mean wall time per decision on the run's machine, over the episodes "
        "the run played."
    ]
    if any(e.reused for e in entries):
        out.append(
            "decision ms leaves out the episodes a run reused from an earlier result file "
            "(its aggregates' `cache` record): their timing is the earlier run's."
        )
    if any(not math.isfinite(e.decision_ms) for e in entries):
        out.append(
            "decision ms n/a: no episode the run played carries a `decision_ms` (rows "
            "without one, or every episode reused)."
        )
    if any(e.training is not None for e in entries):
        out.append(
            "Training: read from each agent's folder as it is now (`train.json`, `args.json`); "
            "seeds: the run's own seed (its episodes draw train-split seeds >= 2^30), the "
            "behaviour-cloning episodes, and the `eval_seeds` the kept weights were selected on."
        )
    return out


def _md_cell(text: str) -> str:
    """``text`` safe in a markdown table cell (``|`` escaped)."""
    return text.replace("|", "\\|")


def markdown(entries: Sequence[Entry], *, files: bool = False) -> list[str]:
    """The leaderboard as markdown lines: the table, then each note as a paragraph.

    Args:
        entries: ranked entries.
        files: add a ``file`` column.
    """
    header, rows = table(entries, files=files)
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    for note in notes(entries):
        lines += ["", note]
    return lines
