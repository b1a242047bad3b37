"""Is a result file a valid leaderboard submission? ``problems`` says why not, one line per
refusal (an empty list: accepted); ``mtgym leaderboard --check FILE`` prints them.

A submission is a ``benchmark`` result file (``mtgym benchmark --record NAME``) that played
the **full test split** (``mtgym.benchmark.splits.TEST``) and still describes it:

1. **the split**: kind ``benchmark``, split ``test``, a full run (not ``--quick``);
2. **the seeds**: exactly the split's (9000-9009), none missing, none added;
3. **the scenarios**: exactly the split's, each played with the scenario and tuning-record
   content hashes it has now (``mtgym.results.hashes``): a scenario, or a recorded
   reference, changed since the run makes its numbers incomparable with the others';
   and no learned policy whose agent folder records a test seed among the seeds it
   trained or was selected on (``args.json``'s ``eval_seeds`` and ``bc_seeds``,
   ``mtgym.leaderboard.training.recorded_seeds``; a folder without one is not refused);
4. **the references**: on each scenario, its recorded reference
   (``mtgym.benchmark.references.recorded_references``) has rows in the file and is the
   reference of the file's aggregates (``reference_problems``): without it the benchmark
   falls back to the best baseline that ran, and the ratios are to another policy;
5. **the episodes**: one row for every (scenario, policy, seed), the policies being the
   aggregates' (less those ``unsupported`` on a scenario), and no other row; each played
   whole on its policy's own decision schedule (every row has ``horizon_s`` and
   ``decision_interval_s``, both null);
6. **the code**: the file's ``code_sha256`` is this checkout's (``code_problems``; a file
   without one is refused): other code plays other episodes. When it is, the references'
   rows and the hindsight bounds are compared with those a result file of the registry
   (``results/``, read as ``mtgym.benchmark.cache`` reads it: same version, code,
   scenario and tuning hashes; the checked file itself left out) holds for the same
   episodes (``registry_problems``): deterministic episodes agree bit for bit, timing
   fields (``mtgym.benchmark.cache.TIMING_FIELDS``) and the common-jobs metrics (which
   depend on the run's policies) aside. Without such a file, ``check_file``'s ``notes``
   say that the rows were not cross-checked;
7. **the aggregates**: recomputed from the rows by the benchmark's own code
   (``mtgym.benchmark.scoring.score_split`` with the recorded references and the default
   bootstrap, then ``mtgym.benchmark.report.to_json``) they equal the file's, numbers to
   ``REL_TOL`` relative, the ``cache`` record (what the run reused) aside. Only checked
   when 1-6 hold (incomplete rows cannot be scored).

``full_split_problems`` (1-3 without the hashes) and ``hash_problems`` are cheap, as are
``seed_problems``, ``reference_problems`` and ``episode_problems``: the leaderboard runs
them all on every file it lists (``listing_problems``). The recomputation costs a
benchmark's scoring (tens of seconds for a full run with every baseline), so only
``--check`` runs it, with the code and registry checks.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mtgym.benchmark.cache import TIMING_FIELDS
from mtgym.benchmark.splits import TEST, Split
from mtgym.results.rows import BENCHMARK_KEYS
from mtgym.results.schema import ResultFile, ResultFileError

#: relative tolerance of an aggregate recomputed from the rows
REL_TOL = 1e-9
#: how many items a one-line refusal lists before "..."
SHOWN = 5
#: how many rows differing from the registry are refused one line each (then one line
#: counts the others)
ROW_LINES = 10
#: the keys a benchmark row must have besides the episode's metrics: how it was played
PLAYED_KEYS = ("horizon_s", "decision_interval_s")
#: the row fields the registry cross-check leaves out: the benchmark's own keys, the timing
#: fields (measured), and the common-jobs metrics (computed over each run's policies)
UNCOMPARED = frozenset(
    {*BENCHMARK_KEYS, *TIMING_FIELDS, "jct_common_mean", "makespan_common", "jobs_common"}
)
#: a key absent from a row (differs from every value, null included)
_ABSENT = object()


def _listed(items: list[str]) -> str:
    """The first ``SHOWN`` items, comma-separated, with ``(N in all)`` past that."""
    head = ", ".join(items[:SHOWN])
    return head if len(items) <= SHOWN else f"{head}, ... ({len(items)} in all)"


def _span(split: Split) -> str:
    """The split's full-run seeds as ``9000-9009``."""
    seeds = split.seeds()
    return f"{seeds[0]}-{seeds[-1]}"


def full_split_problems(result: ResultFile, split: Split = TEST) -> list[str]:
    """Checks 1-3 of the module docstring, hashes left out: did it play the full split?

    Args:
        result: the result file.
        split: the split a submission must play (the test split).
    """
    if result.kind != "benchmark":
        return [f"kind {result.kind!r}: a submission is a benchmark result file"]
    agg = result.aggregates
    out = []
    if agg.get("split") != split.name:
        out.append(f"split {agg.get('split')!r}: the leaderboard ranks the {split.name!r} split")
    if agg.get("quick") is not False:
        out.append("a quick run (--quick): the leaderboard takes full runs only")
    want, have = split.seeds(), [int(s) for s in result.seeds]
    span = _span(split)
    for s in sorted(set(want) - set(have)):
        out.append(f"seed {s} missing: the {split.name} split is seeds {span}, every one")
    for s in sorted(set(have) - set(want)):
        out.append(f"seed {s} is not a {split.name} seed (the split is seeds {span} exactly)")
    names = [e.name for e in result.scenarios]
    for n in split.names:
        if n not in names:
            out.append(
                f"scenario {n} missing: the {split.name} split plays every one of "
                f"{', '.join(split.names)}"
            )
    for n in names:
        if n not in split.names:
            out.append(f"scenario {n} is not in the {split.name} split")
    return out


def hash_problems(result: ResultFile, split: Split = TEST) -> list[str]:
    """Check 3's hashes: each scenario of the split played with its current scenario and
    tuning-record hashes (one line per differing hash).

    Args:
        result: the result file.
        split: the split (its scenarios are hashed now).
    """
    from mtgym.results.hashes import scenario_entries

    now = {e["name"]: e for e in scenario_entries(split.names)}
    out = []
    for e in result.scenarios:
        cur = now.get(e.name)
        if cur is None:
            continue
        where = cur["path"] or "its generator"
        if e.sha256 != cur["sha256"]:
            out.append(
                f"scenario {e.name}: played with scenario hash {e.sha256[:12]}, but "
                f"{where} hashes to {cur['sha256'][:12]} now: re-run on the current scenarios"
            )
        if e.tuning_sha256 != cur["tuning_sha256"]:
            out.append(
                f"scenario {e.name}: played with tuning-record hash {str(e.tuning_sha256)[:12]}, "
                f"the current record's is {str(cur['tuning_sha256'])[:12]} (references or "
                "tuned knobs changed): re-run on the current records"
            )
    return out


def seed_problems(result: ResultFile, split: Split = TEST) -> list[str]:
    """Check 3's seeds of learned policies: one line per policy whose agent folder's
    ``args.json`` lists a seed of the split.

    Args:
        result: the result file.
        split: the split no training or selection may touch.
    """
    from mtgym.benchmark.runner import is_baseline, is_reference_point
    from mtgym.benchmark.splits import is_test_seed
    from mtgym.leaderboard.training import recorded_seeds

    out = []
    for p in result.aggregates.get("policies", []):
        if is_baseline(p) or is_reference_point(p):
            continue
        for key, seeds in recorded_seeds(p).items():
            bad = sorted({s for s in seeds if is_test_seed(s, split)})
            if bad:
                out.append(
                    f"policy {p}: its args.json {key} holds {split.name} seeds "
                    f"{_listed([str(s) for s in bad])}: no training or selection may touch "
                    f"the {split.name} split ({_span(split)})"
                )
    return out


def _expected(result: ResultFile, split: Split) -> set[tuple[str, str, int]]:
    """The (scenario, policy, seed) episodes the file must hold: every policy of its
    aggregates on every scenario where it is not ``unsupported``, on the seeds of the
    split the file lists (a missing seed is refused once, by ``full_split_problems``).
    """
    agg = result.aggregates
    seeds = set(split.seeds()) & {int(s) for s in result.seeds}
    by_scenario = {sc.get("scenario"): sc.get("policies", {}) for sc in agg.get("scenarios", [])}
    out = set()
    for name in split.names:
        entries = by_scenario.get(name, {})
        for p in agg.get("policies", []):
            if "unsupported" not in entries.get(p, {}):
                out |= {(name, p, s) for s in seeds}
    return out


def episode_problems(result: ResultFile, split: Split = TEST) -> list[str]:
    """Check 5: every expected episode once, every row saying how it was played
    (``PLAYED_KEYS``), and no other row (one line per kind of problem, naming the first
    episodes as ``scenario/policy/seed``).

    Args:
        result: the result file.
        split: the split.
    """
    want = _expected(result, split)
    seen: dict[tuple[str, str, int], int] = {}
    for r in result.rows:
        seed = r.get("seed")
        seed = int(seed) if isinstance(seed, int | float) and math.isfinite(seed) else -1
        key = (str(r.get("scenario")), str(r.get("policy")), seed)
        seen[key] = seen.get(key, 0) + 1

    def show(keys: set[tuple[str, str, int]]) -> str:
        return _listed([f"{sc}/{p}/{s}" for sc, p, s in sorted(keys)])

    out = []
    if lacking := sum(1 for r in result.rows if any(k not in r for k in PLAYED_KEYS)):
        out.append(
            f"{lacking} row(s) without horizon_s or decision_interval_s (written before "
            "benchmark rows recorded how each episode was played): re-run the benchmark"
        )
    if missing := want - set(seen):
        out.append(f"{len(missing)} episode(s) missing (scenario/policy/seed): {show(missing)}")
    if twice := {k for k, n in seen.items() if n > 1 and k in want}:
        out.append(f"{len(twice)} episode(s) recorded more than once: {show(twice)}")
    if odd := {
        ", ".join(f"{k}={r.get(k)}" for k in PLAYED_KEYS)
        for r in result.rows
        if any(r.get(k) is not None for k in PLAYED_KEYS)
    }:
        out.append(
            f"episodes played with {_listed(sorted(odd))}: the leaderboard takes whole "
            "episodes on each policy's own decision schedule (no --decision-interval)"
        )
    if extra := set(seen) - want:
        out.append(
            f"{len(extra)} row(s) of no expected episode (a policy not in the aggregates, "
            f"an unsupported one, or a seed or scenario outside the split): {show(extra)}"
        )
    return out


def reference_problems(result: ResultFile, split: Split = TEST) -> list[str]:
    """Check 4: one line per scenario of the file whose recorded reference
    (``mtgym.benchmark.references.recorded_references``) has no row there, or is not the
    ``reference`` of the file's aggregates for it. A scenario without a recorded reference
    is not checked (the benchmark picks the best baseline, and says so).

    Args:
        result: the result file.
        split: the split (its scenarios' tuning records name the references).
    """
    from mtgym.benchmark.references import recorded_references

    refs = recorded_references(split)
    played = {(r.get("scenario"), r.get("policy")) for r in result.rows}
    agg = {sc.get("scenario"): sc for sc in result.aggregates.get("scenarios", [])}
    out = []
    for name in [e.name for e in result.scenarios if e.name in refs]:
        ref, have = refs[name], agg.get(name, {}).get("reference")
        why = []
        if (name, ref) not in played:
            why.append(f"no episode of its recorded reference {ref}")
        if have != ref:
            why.append(f"its aggregates' reference is {have!r}, not the recorded {ref}")
        if why:
            out.append(
                f"scenario {name}: {' and '.join(why)} (scenarios/tuning/{name}.json): every "
                f"ratio is to {ref}; run the benchmark with it (mtgym benchmark adds it)"
            )
    return out


def listing_problems(result: ResultFile, split: Split = TEST) -> list[str]:
    """The cheap checks (1-5 of the module docstring): those the leaderboard runs on every
    file it lists, one line each; empty: the file gives entries.

    Args:
        result: the result file.
        split: the split it must play.
    """
    out = full_split_problems(result, split)
    if result.kind != "benchmark":
        return out
    out += hash_problems(result, split)
    out += seed_problems(result, split)
    out += reference_problems(result, split)
    return out + episode_problems(result, split)


def code_problems(result: ResultFile) -> list[str]:
    """Check 6's hash: one line when the file records no ``code_sha256`` or another one
    than this checkout's (``mtgym.results.hashes.code_sha256``).

    Args:
        result: the result file.
    """
    from mtgym.results.hashes import code_sha256

    now = code_sha256()
    if result.code_sha256 is None:
        return [
            "records no code_sha256 (written before result files recorded it): re-run the "
            "benchmark on this checkout"
        ]
    if result.code_sha256 != now:
        return [
            "made by other code: re-run the benchmark on this checkout (its code_sha256 is "
            f"{result.code_sha256[:12]}, this checkout's {now[:12]})"
        ]
    return []


def _same(a: Any, b: Any) -> bool:
    """Whether two row values are the same, bit for bit (null and NaN alike; lists and
    dicts item by item).
    """
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    a_nan = a is None or (isinstance(a, float) and math.isnan(a))
    b_nan = b is None or (isinstance(b, float) and math.isnan(b))
    return a_nan and b_nan if a_nan or b_nan else bool(a == b)


def _brief(v: Any) -> str:
    """A value as a refusal shows it (a list or dict by its length, an absent key so)."""
    if v is _ABSENT:
        return "absent"
    return f"[{len(v)} items]" if isinstance(v, list | dict) else repr(v)


def _row_differences(row: dict[str, Any], cached: dict[str, Any], where: str) -> list[str]:
    """``field: X here, Y in FILE`` for each compared field of ``row`` that differs from
    ``cached`` (``UNCOMPARED`` left out).
    """
    out = []
    for k in sorted((set(row) | set(cached)) - UNCOMPARED):
        a, b = row.get(k, _ABSENT), cached.get(k, _ABSENT)
        if not _same(a, b):
            out.append(f"{k} {_brief(a)} here, {_brief(b)} in {where}")
    return out


def registry_problems(
    result: ResultFile, split: Split, registry: Path, source: Path | None = None
) -> tuple[list[str], str]:
    """Check 6's cross-check: the file's recorded references' rows and every row's
    hindsight bound against those a registry file holds for the same episode
    (``mtgym.benchmark.cache.load``). Call it when the code hash matches.

    Args:
        result: the result file.
        split: the split (its recorded references and scenario hashes).
        registry: the registry folder.
        source: the checked file, left out of the registry when it sits there.

    Returns:
        (one line per differing row, naming scenario, policy and seed, ``ROW_LINES`` at
        most and a count of the others; the note saying what was cross-checked, or that
        nothing was).
    """
    from mtgym import __version__
    from mtgym.benchmark import cache as episode_cache
    from mtgym.benchmark.references import recorded_references
    from mtgym.results.hashes import code_sha256, scenario_entries

    refs = recorded_references(split)
    entries = scenario_entries(split.names)
    current = episode_cache.Current.of(
        {"mtgym_version": __version__, "code_sha256": code_sha256()}, entries
    )
    cache = episode_cache.load(registry, current, set(refs.values()), [source] if source else [])
    lines, rows_seen, bounds_seen, files = [], set(), set(), set()
    for r in result.rows:
        if any(k not in r for k in PLAYED_KEYS) or not isinstance(r.get("seed"), int):
            continue  # (refused by episode_problems)
        sc, pol, seed, h = str(r.get("scenario")), str(r.get("policy")), r["seed"], r["horizon_s"]
        diffs = []
        key = (sc, pol, seed, h, r["decision_interval_s"])
        hit = cache.rows.get(key) if refs.get(sc) == pol else None  # (its bound compared too)
        if hit is not None:
            rows_seen.add((sc, pol, seed))
            files.add(hit[1])
            diffs += _row_differences(r, hit[0], episode_cache.shown(hit[1]))
        bound = cache.bounds.get((sc, seed, h))
        if bound is not None:
            bounds_seen.add((sc, seed))
            files.add(bound[1])
            if hit is None and not _same(r.get("hindsight_bound", _ABSENT), bound[0]):
                where = episode_cache.shown(bound[1])
                diffs.append(
                    f"hindsight_bound {_brief(r.get('hindsight_bound', _ABSENT))} here, "
                    f"{bound[0]!r} in {where}"
                )
        if diffs:
            lines.append(
                f"scenario {sc}, policy {pol}, seed {seed}: {'; '.join(diffs[:3])}"
                + (f" (and {len(diffs) - 3} more fields)" if len(diffs) > 3 else "")
                + ": deterministic episodes agree bit for bit; re-run on this checkout"
            )
    return _capped(lines), _cross_note(registry, rows_seen, bounds_seen, files, split)


def _capped(lines: list[str]) -> list[str]:
    """The first ``ROW_LINES`` lines, and one counting the others."""
    if len(lines) <= ROW_LINES:
        return lines
    return [*lines[:ROW_LINES], f"... and {len(lines) - ROW_LINES} more rows differ likewise"]


def _cross_note(
    registry: Path, rows: set[Any], bounds: set[Any], files: set[Path], split: Split
) -> str:
    """The note of the cross-check: what was compared with which files, and the scenarios
    left out; or that the reference rows were not cross-checked.
    """
    from mtgym.benchmark.cache import shown

    if not rows and not bounds:
        return (
            "reference rows were not cross-checked: no result file in "
            f"{shown(Path(registry))}/ holds these episodes for this code, version, scenario "
            "and tuning hashes (a committed full run does)"
        )
    covered = {sc for sc, *_ in rows} | {sc for sc, _ in bounds}
    rest = [n for n in split.names if n not in covered]
    note = (
        f"cross-checked {len(rows)} reference episodes and {len(bounds)} hindsight bounds "
        f"with {', '.join(sorted(shown(f) for f in files))}"
    )
    return note + (f" (not {', '.join(rest)}: no file holds them)" if rest else "")


def scenario_runs(result: ResultFile, split: Split = TEST) -> list[Any]:
    """The file's episodes as the benchmark's ``ScenarioRuns`` (what ``score_split``
    scores): per scenario of the split, the aggregates' policies that have rows, in the
    aggregates' order, rows in seed order; the ``unsupported`` reasons and each scenario's
    wall time from the aggregates.

    Args:
        result: a file whose episodes are complete (``episode_problems`` empty).
        split: the split.
    """
    from mtgym.benchmark.runner import ScenarioRuns
    from mtgym.evaluate import PolicyRun

    agg = result.aggregates
    rows: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for r in result.rows:
        rows.setdefault((r["scenario"], r["policy"]), {})[int(r["seed"])] = r
    by_scenario = {sc["scenario"]: sc for sc in agg["scenarios"]}
    seeds = split.seeds()
    out = []
    for sc in split.scenarios:
        entry = by_scenario.get(sc.name, {})
        pols = entry.get("policies", {})
        runs = [
            PolicyRun(p, [rows[(sc.name, p)][s] for s in seeds])
            for p in agg["policies"]
            if (sc.name, p) in rows
        ]
        unsupported = {p: e["unsupported"] for p, e in pols.items() if "unsupported" in e}
        wall = float(entry.get("wall_s") or 0.0)
        out.append(ScenarioRuns(sc.name, seeds, split.horizon_s(sc), runs, unsupported, wall))
    return out


def recompute(result: ResultFile, split: Split = TEST, bootstrap: Any = None) -> dict[str, Any]:
    """The aggregates the benchmark computes from the file's rows (module docstring, 7).

    Args:
        result: a file whose episodes are complete.
        split: the split.
        bootstrap: ``mtgym.benchmark.scoring.Bootstrap`` settings; None: the benchmark's
            defaults (those of ``mtgym benchmark``).
    """
    from mtgym.benchmark import report
    from mtgym.benchmark.references import recorded_references
    from mtgym.benchmark.scoring import score_split
    from mtgym.results.store import json_safe

    res = score_split(
        split,
        scenario_runs(result, split),
        list(result.aggregates["policies"]),
        quick=False,
        bootstrap=bootstrap,
        references=recorded_references(split),
    )
    out: dict[str, Any] = json_safe(report.to_json(res))
    return out


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON values differ: numbers beyond ``REL_TOL`` relative (null only equal
    to null), other values by ``==``, keys present on one side only.

    Args:
        a: the file's value.
        b: the recomputed value.
        path: the dotted path of ``a`` (messages).

    Returns:
        One ``path: file X, rows give Y`` per difference, in key order.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                out.append(f"{sub}: {'missing in the file' if k not in a else 'not expected'}")
            else:
                out += differences(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return [d for k, (x, y) in pairs for d in differences(x, y, f"{path}[{k}]")]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        if math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=0.0):
            return []
    elif a == b:
        return []
    return [f"{path}: file {a!r}, rows give {b!r}"]


#: the aggregates' keys that record how the run went, not what its rows give
RUN_RECORDS = frozenset({"cache", "resumed"})


def aggregate_problems(result: ResultFile, split: Split = TEST, bootstrap: Any = None) -> list[str]:
    """Check 7: one line when the file's aggregates differ from the recomputation, naming
    the first differences (the run's records of what it reused, ``cache``, and resumed,
    ``resumed``, are not compared).

    Args:
        result: a file whose episodes are complete.
        split: the split.
        bootstrap: the bootstrap settings (None: the benchmark's defaults).
    """
    mine = {k: v for k, v in result.aggregates.items() if k not in RUN_RECORDS}
    diffs = differences(mine, recompute(result, split, bootstrap))
    if not diffs:
        return []
    return [
        f"the aggregates differ from those the rows give in {len(diffs)} place(s) "
        f"(tolerance {REL_TOL:g} relative): {'; '.join(diffs[:3])}"
        + (" ..." if len(diffs) > 3 else "")
    ]


def problems(
    result: ResultFile,
    split: Split = TEST,
    bootstrap: Any = None,
    *,
    registry: str | Path | None = None,
    source: Path | None = None,
    notes: list[str] | None = None,
) -> list[str]:
    """Every refusal of a submission, one line each (module docstring); empty: accepted.

    Args:
        result: the result file.
        split: the split it must play (the test split).
        bootstrap: the bootstrap settings the aggregates must have been computed with
            (None: the benchmark's defaults).
        registry: the registry folder the rows are cross-checked with (None:
            ``mtgym.results.store.results_dir``'s default: ``$MTGYM_RESULTS``, else
            ``./results``).
        source: the file ``result`` was read from (left out of the registry).
        notes: when given, the cross-check's note is appended (what was compared, or that
            the reference rows were not cross-checked).
    """
    from mtgym.results.store import results_dir

    out = listing_problems(result, split)
    if result.kind != "benchmark":
        return out
    code = code_problems(result)
    out += code
    note = "reference rows were not cross-checked: the file was made by other code"
    if not code:
        found, note = registry_problems(result, split, results_dir(registry), source)
        out += found
    if notes is not None:
        notes.append(note)
    if not out:
        out += aggregate_problems(result, split, bootstrap)
    return out


def check_file(
    path: str | Path,
    split: Split = TEST,
    bootstrap: Any = None,
    *,
    registry: str | Path | None = None,
    notes: list[str] | None = None,
) -> list[str]:
    """``problems`` of the file at ``path``, or the one line saying it cannot be read.

    Args:
        path: a ``.json`` or ``.json.gz`` result file.
        split: the split.
        bootstrap: the bootstrap settings (None: the benchmark's defaults).
        registry: the registry folder to cross-check with (None: the default one).
        notes: when given, ``problems``' note is appended.
    """
    from mtgym.results.store import read_result

    try:
        result = read_result(path)
    except FileNotFoundError:
        return [f"{path}: no such file"]
    except ResultFileError as exc:
        return [str(exc)]
    return problems(result, split, bootstrap, registry=registry, source=Path(path), notes=notes)
