"""The tables a results block can hold, each rendered from one result file.

A renderer takes the ``ResultFile`` and the marker's options and returns markdown lines
(``RENDERERS``, by the marker's ``kind``; ``renderer`` looks one up). This module's own:

- ``suite`` (a ``benchmark`` result): one row per scenario with each policy's paired ratio
  to the scenario's reference [interval], then the suite score, the IQM normalised by the
  best baseline and the IQM normalised by the hindsight bound, each [interval];
- ``scenario-trade-offs`` (a ``benchmark`` or ``evaluate`` result): per scenario and
  policy, the mean JCT of common jobs (x the reference's), the jobs done and, where the
  rows have it, Jain's fairness;
- ``tuning`` (a ``tune`` result): per scenario, each tuned policy's chosen knobs and tuned
  mean (x its default's), and the scenario's reference;
- ``cap-check`` (a ``cap_check`` result, ``scripts/cap_check.py``): per seed, the registered
  ``freetrain`` against ``freetrain`` with a large admission cap, and their paired ratio;
- ``benchmark-cost`` (a ``benchmark`` result): what the run played and what it took from
  the registry's cache (episodes and hindsight bounds), and its wall time;
- ``bench-vec`` (a ``bench_vec`` result, ``scripts/bench_vec.py``): one of its tables
  (option ``table=K``, the K-th it printed, from 0), its cells' numbers as recorded, and
  with ``memory=1`` the memory line it printed;
- ``select-agent`` (a ``select_agent`` result, ``scripts/select_agent.py``): per candidate
  (and temperature, and draws), the validation score, each set's paired ratio to the
  reference [interval] and the share of decisions the codec repaired;
- ``headroom`` (a ``benchmark`` result with the clairvoyant): per scenario, the best online
  policy of the run (highest mean share of the hindsight bound, picked after the fact) and
  its share, the clairvoyant's share [interval], what knowing the future is worth (their
  difference, in shares of the bound) and what stays unexplained (1 - the clairvoyant's
  share: the bound's slack and the optimum's unknown place between them);
- ``offline-standard`` (a ``dataset_standard`` result, ``mtgym dataset standard``): per
  dataset of the standard set, its policy, episodes, steps, size, collection and write
  time, mean return and normalised score [interval], and the share of repaired steps.

A package above the registry adds its own kinds with ``register_renderer`` when it is
imported: ``mtgym.leaderboard`` registers ``leaderboard`` (its ranked table), because the
leaderboard needs the benchmark's split and scoring and ``mtgym.benchmark`` itself imports
this registry (it writes result files and reads them as a cache), so the registry cannot
import the leaderboard. ``mtgym.cli.build_parser`` imports it, so ``mtgym results render``
knows every kind; other callers of ``mtgym.results.render`` import the packages whose
kinds their files use.

Option ``policies=a,b,c`` (``suite`` and ``scenario-trade-offs``) picks and orders the
policies shown; ``scenarios=x,y`` picks the scenarios; ``rows=summary`` (``suite``) shows
only the suite score and the two IQMs, ``rows=score`` only the suite score (the README's
rows). Numbers are formatted as ``mtgym evaluate``'s tables format them
(``mtgym.tables.fmt``: 3 decimals below 10, whole numbers from 10, counts with one
decimal). ``source_line`` is the line under every table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mtgym.results.rows import same_episode
from mtgym.results.schema import ResultFile
from mtgym.tables import fmt, wall_text

#: a renderer: (result file, the marker's options) -> markdown lines
Renderer = Callable[[ResultFile, dict[str, str]], list[str]]


def _x(v: Any) -> float:
    """A JSON number as a float (null -> NaN)."""
    return math.nan if v is None else float(v)


def _ci(d: dict[str, Any] | None, point: str = "mean") -> str:
    """``point [ci_low, ci_high]`` of a JSON interval; the point alone when the interval
    is undefined, ``n/a`` when the point is.
    """
    if not d:
        return "n/a"
    v, lo, hi = _x(d.get(point)), _x(d.get("ci_low")), _x(d.get("ci_high"))
    if math.isnan(v) or math.isnan(lo) or math.isnan(hi):
        return fmt(v)
    return f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]"


def _pick(options: dict[str, str], key: str, default: list[str]) -> list[str]:
    """The comma-separated option ``key`` as a list, else ``default``."""
    return options[key].split(",") if options.get(key) else default


def _need(result: ResultFile, *kinds: str) -> None:
    """``ValueError`` unless ``result.kind`` is one of ``kinds``."""
    if result.kind not in kinds:
        raise ValueError(f"needs a {' or '.join(kinds)} result, got a {result.kind!r} one")


def source_line(source: str, result: ResultFile) -> str:
    """The line under a rendered table: the file, the command that wrote it, when, from
    which commit, and how long it took on which machine.

    Args:
        source: the result file's path as the marker names it.
        result: its content.
    """
    g, m = result.git, result.machine
    commit = "no git" if g.commit is None else f"commit {g.commit[:10]}"
    if g.dirty:
        commit += " with local changes"
    cpu = f"{m.cores} cores of {m.cpu_model}" if m.cpu_model else f"{m.cores} cores"
    return (
        f"_Generated by `mtgym results render` from `{source}`, written by "
        f"`{result.command}` on {result.date_utc[:10]} (mtgym {result.mtgym_version}, "
        f"{commit}; {wall_text(result.wall_s)} on {cpu})._"
    )


def suite(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``suite`` table (module docstring) of a ``benchmark`` result."""
    _need(result, "benchmark")
    agg = result.aggregates
    names = _pick(options, "policies", list(agg["policies"]))
    keep = _pick(options, "scenarios", [s["scenario"] for s in agg["scenarios"]])
    shown = options.get("rows", "all")
    if shown not in ("all", "summary", "score"):
        raise ValueError(f"rows={shown!r}: use all, summary or score")
    lines = [
        "| scenario | reference | " + " | ".join(names) + " |",
        "| --- | --- |" + " --- |" * len(names),
    ]
    if shown != "all":
        keep = []
    for sc in (s for s in agg["scenarios"] if s["scenario"] in keep):
        cells = []
        for p in names:
            pol = sc["policies"].get(p)
            if pol is None or "unsupported" in pol:
                cells.append("did not run" if pol is None else "unsupported")
            else:
                cells.append(_ci(pol["ratio"], "ratio"))
        lines.append(
            f"| {sc['scenario']} | {sc['reference'] or 'none'} | " + " | ".join(cells) + " |"
        )
    suite_, iqm = agg["suite"], agg.get("aggregates", {}).get("policies", {})
    rows = [
        ("suite score", [_ci(suite_.get(p), "score") for p in names]),
        ("IQM (x best baseline)", [_ci(iqm.get(p, {}).get("iqm"), "point") for p in names]),
        ("IQM (x hindsight bound)", [_ci(iqm.get(p, {}).get("iqm_bound"), "point") for p in names]),
    ]
    if any((iqm.get(p, {}).get("iqm_clairvoyant") or {}).get("point") is not None for p in names):
        clv = [_ci(iqm.get(p, {}).get("iqm_clairvoyant"), "point") for p in names]
        rows.append(("IQM (x clairvoyant)", clv))
    for label, cells in rows[:1] if shown == "score" else rows:
        lines.append(f"| **{label}** | | " + " | ".join(cells) + " |")
    return lines


def _jain(result: ResultFile) -> dict[tuple[str, str], float]:
    """(scenario, policy) -> the mean over its episodes of ``fairness_jain`` (rows that
    have it, NaN skipped).
    """
    acc: dict[tuple[str, str], list[float]] = {}
    for r in result.rows:
        v = r.get("fairness_jain")
        if v is not None and math.isfinite(v):
            acc.setdefault((r.get("scenario"), r.get("policy")), []).append(float(v))
    return {k: sum(v) / len(v) for k, v in acc.items()}


def _trade_off_entries(result: ResultFile) -> list[tuple[str, str, float, float, float]]:
    """(scenario, policy, JCT common mean, its ratio to the reference, jobs done) of a
    ``benchmark`` or ``evaluate`` result, in its order (unsupported policies left out).
    """
    _need(result, "benchmark", "evaluate", "compare")
    agg = result.aggregates
    if result.kind != "benchmark":
        return [
            (
                agg["scenario"],
                p,
                _x(e.get("jct_common_mean")),
                _x(e.get("paired", {}).get("jct_common_mean", {}).get("ratio")),
                _x(e.get("jobs_completed")),
            )
            for p, e in agg["policies"].items()
        ]
    return [
        (
            sc["scenario"],
            p,
            _x(e["jct_common_mean"]["mean"]),
            _x(e["jct_common_ratio"]),
            _x(e["jobs_completed"]["mean"]),
        )
        for sc in agg["scenarios"]
        for p, e in sc["policies"].items()
        if "unsupported" not in e
    ]


def trade_offs(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``scenario-trade-offs`` table (module docstring)."""
    entries = _trade_off_entries(result)
    names = _pick(options, "policies", list(dict.fromkeys(e[1] for e in entries)))
    keep = set(_pick(options, "scenarios", [e[0] for e in entries]))
    jain = _jain(result)
    lines = [
        "| scenario | policy | JCT common s (x ref) | jobs done |" + (" Jain |" if jain else ""),
        "| --- | --- | --- | --- |" + (" --- |" if jain else ""),
    ]
    order = {p: k for k, p in enumerate(names)}
    chosen = [e for e in entries if e[0] in keep and e[1] in order]
    scen = {s: k for k, s in enumerate(dict.fromkeys(e[0] for e in entries))}
    chosen.sort(key=lambda e: (scen[e[0]], order[e[1]]))  # the file's scenarios, option's policies
    for sc, p, jct, ratio, done in chosen:
        cell = fmt(jct) + (
            f" ({ratio:.2f}x)" if math.isfinite(jct) and math.isfinite(ratio) else ""
        )
        line = f"| {sc} | {p} | {cell} | {fmt(done, 'jobs_completed')} |"
        if jain:
            line += f" {fmt(jain.get((sc, p), math.nan))} |"
        lines.append(line)
    return lines


def tuning(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``tuning`` table (module docstring) of a ``tune`` result."""
    _need(result, "tune")
    records = result.aggregates["records"]
    keep = _pick(options, "scenarios", list(records))
    lines = [
        "| scenario | reference | policy | chosen knobs | tuned mean (x default) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in keep:
        rec = records[name]
        for p, t in sorted(rec["policies"].items(), key=lambda kv: -kv[1]["chosen_mean"]):
            knobs = ", ".join(f"{k}={v}" for k, v in t["chosen"].items()) or "(none)"
            gain = t["chosen_mean"] / t["default_mean"] if t["default_mean"] > 0 else math.nan
            lines.append(
                f"| {name} | {rec.get('reference') or 'none'} | {p} | {knobs} | "
                f"{fmt(t['chosen_mean'])} ({gain:.2f}x) |"
            )
    return lines


def cap_check(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``cap-check`` table (module docstring) of a ``cap_check`` result
    (``scripts/cap_check.py``): per seed, the headline and jobs done of the registered
    ``freetrain`` and of ``freetrain`` with the large cap, whether the two episodes are the
    same, then the paired ratio [interval] and the verdict.
    """
    _need(result, "cap_check")
    agg = result.aggregates
    cap = agg["cap"]
    base = [r for r in result.rows if r.get("cap") is None]
    big = {r["seed"]: r for r in result.rows if r.get("cap") is not None}
    lines = [
        f"| seed | headline | with max_jobs={cap} | jobs done | with max_jobs={cap} | "
        "same episode |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for a in sorted(base, key=lambda r: r["seed"]):
        b = big[a["seed"]]
        lines.append(
            f"| {a['seed']} | {fmt(a['normalized_throughput'])} | "
            f"{fmt(b['normalized_throughput'])} | {a['jobs_completed']:.0f} | "
            f"{b['jobs_completed']:.0f} | "
            f"{'yes' if same_episode(a, b, ignore=('cap',)) else 'no'} |"
        )
    lo, hi = agg["ratio_ci"]
    verdict = "within" if agg["within_tolerance"] else "**not within**"
    lines += [
        "",
        f"Paired ratio {agg['ratio']:.4f} [{lo:.4f}, {hi:.4f}] of `max_jobs={cap}` over "
        f"{len(base)} seeds; {agg['identical_episodes']} of {len(base)} episodes identical; "
        f"{verdict} {agg['tolerance']:.0%}.",
    ]
    return lines


def benchmark_cost(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``benchmark-cost`` table (module docstring): one row, the run's policies, its
    episodes and hindsight bounds, each split into played and reused from the registry
    (the aggregates' ``cache`` record), and the wall time.
    """
    _need(result, "benchmark")
    agg = result.aggregates
    cache = agg.get("cache") or {}
    rows = result.rows
    bounds = {(r["scenario"], r["seed"]) for r in rows if r.get("hindsight_bound") is not None}
    ep_reused = sum(int(e.get("episodes", 0)) for e in cache.values())
    b_reused = sum(int(e.get("bounds", 0)) for e in cache.values())
    sources = sorted({s for e in cache.values() for s in e.get("sources", [])})
    lines = [
        "| policies | scenarios x seeds | episodes played | reused | bounds played | reused "
        "| wall time |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {len(agg['policies'])} | {len(agg['scenarios'])} x {len(result.seeds)} | "
        f"{len(rows) - ep_reused} | {ep_reused} | {len(bounds) - b_reused} | {b_reused} | "
        f"{wall_text(result.wall_s)} |",
    ]
    if sources:
        lines += ["", "Reused from " + ", ".join(f"`{s}`" for s in sources) + "."]
    return lines


def _bench_cell(header: str, v: Any) -> str:
    """A ``bench_vec`` cell: whole numbers with thousands separators, a ratio (its header
    has `` / `` or ``vs``) as ``1.23x``, other numbers as ``fmt``, text as it is.
    """
    if isinstance(v, bool) or not isinstance(v, int | float):
        return "" if v is None else str(v)
    if " / " in header or " vs " in header or header.startswith("vs "):
        return f"{v:.2f}x"
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return fmt(v)


def bench_vec(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``bench-vec`` table (module docstring): the rows of the table ``table=K`` of a
    ``bench_vec`` result, its columns in the recorded order.
    """
    _need(result, "bench_vec")
    titles = result.aggregates["tables"]
    k = int(options.get("table", "0"))
    if not 0 <= k < len(titles):
        raise ValueError(f"table={k}: the file has {len(titles)} table(s)")
    rows = [r for r in result.rows if r["table"] == titles[k]]
    heads = [h for h in rows[0] if h != "table"] if rows else []
    lines = [
        f"{titles[k]}:",
        "",
        "| " + " | ".join(heads) + " |",
        "| " + " | ".join("---:" for _ in heads) + " |",
    ]
    lines += ["| " + " | ".join(_bench_cell(h, r.get(h)) for h in heads) + " |" for r in rows]
    if options.get("memory") and result.aggregates.get("memory"):
        memory = str(result.aggregates["memory"])
        lines += ["", memory[:1].upper() + memory[1:] + "."]
    return lines


def select_agent(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``select-agent`` table (module docstring) of a ``select_agent`` result, its rows
    in the file's order (the ranking, highest score first); option ``labels=DIR:name,...``
    names candidates by folder.
    """
    _need(result, "select_agent")
    labels = dict(
        item.split(":", 1) for item in options.get("labels", "").split(",") if ":" in item
    )
    sets = list(result.aggregates["seeds"])
    ref = result.aggregates["reference"]
    head = " | ".join(f"{n} (x {ref})" for n in sets)
    lines = [
        f"| candidate | temperature | draws | score | {head} | repaired decisions |",
        "| --- | ---: | --- | ---: | " + " | ".join("---:" for _ in sets) + " | ---: |",
    ]
    for r in result.rows:
        cells = [
            f"{_x(r['sets'][n]['ratio']):.3f} [{_x(r['sets'][n]['ratio_ci_low']):.3f}, "
            f"{_x(r['sets'][n]['ratio_ci_high']):.3f}]"
            for n in sets
        ]
        share = r.get("repaired_share")
        rep = "n/a" if share is None else f"{share:.1%} of {r['decisions']:,}"
        name = labels.get(r["candidate"], f"`{r['candidate']}`")
        lines.append(
            f"| {name} | {r['temperature']:g} | {r.get('draws', 'as trained')} | "
            f"{r['score']:.3f} | {' | '.join(cells)} | {rep} |"
        )
    return lines


def headroom(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``headroom`` table (module docstring) of a ``benchmark`` result; option
    ``scenarios=x,y`` picks the scenarios.
    """
    from mtgym.sim.view import CLAIRVOYANT_POLICIES, may_see_the_future
    from mtgym.stats import mean_ci

    clairvoyant = CLAIRVOYANT_POLICIES[0]

    _need(result, "benchmark")
    order = [s["scenario"] for s in result.aggregates["scenarios"]]
    keep = _pick(options, "scenarios", order)
    by: dict[tuple[str, str], list[float]] = {}
    for r in result.rows:
        by.setdefault((r["scenario"], r["policy"]), []).append(_x(r.get("bound_fraction")))
    if not any(p == clairvoyant for _, p in by):
        raise ValueError("the run has no clairvoyant episodes (mtgym benchmark without it)")
    lines = [
        "| scenario | best online policy | its share of the bound | clairvoyant's share "
        "| the future's worth | unexplained |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for sc in (s for s in order if s in keep):
        online = {
            p: sum(v) / len(v)
            for (name, p), v in by.items()
            if name == sc and not may_see_the_future(p) and v and all(map(math.isfinite, v))
        }
        clv = by.get((sc, clairvoyant))
        if not online or not clv:
            lines.append(f"| {sc} | n/a | | | | |")
            continue
        best = max(online, key=lambda p: online[p])
        ci = mean_ci(clv)
        lines.append(
            f"| {sc} | `{best}` | {online[best]:.3f} | {ci.mean:.3f} [{ci.ci_low:.3f}, "
            f"{ci.ci_high:.3f}] | {ci.mean - online[best]:+.3f} | {1 - ci.mean:.3f} |"
        )
    return lines


def offline_standard(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``offline-standard`` table (module docstring), one row per dataset in the
    file's order, then the reference scores' policies.
    """
    _need(result, "dataset_standard")
    lines = [
        "| dataset | policy | episodes | steps | size | collection | write | mean return "
        "| normalised score | repaired steps |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result.rows:
        lo, hi = (_x(v) for v in r["normalized_ci"])
        ci = "" if math.isnan(lo) else f" [{lo:.3f}, {hi:.3f}]"
        lines.append(
            f"| `{r['dataset_id']}` | `{r['policy']}` | {r['episodes']:,} | {r['steps']:,} | "
            f"{r['size_bytes'] / 2**20:,.0f} MiB | {wall_text(_x(r['collect_s']))} | "
            f"{wall_text(_x(r['write_s']))} | {fmt(_x(r['mean_return']))} | "
            f"{_x(r['normalized_score']):.3f}{ci} | {_x(r['repaired_share']):.1%} |"
        )
    return lines


#: the renderers by the ``kind`` a marker names
RENDERERS: dict[str, Renderer] = {
    "suite": suite,
    "scenario-trade-offs": trade_offs,
    "tuning": tuning,
    "cap-check": cap_check,
    "select-agent": select_agent,
    "benchmark-cost": benchmark_cost,
    "bench-vec": bench_vec,
    "offline-standard": offline_standard,
    "headroom": headroom,
}


def register_renderer(kind: str, fn: Renderer, *, replace: bool = False) -> None:
    """Add a renderer to ``RENDERERS`` under ``kind``, for the marker blocks that name it.

    The hook by which a package above the registry (``mtgym.leaderboard``) contributes a
    table without the registry importing it (module docstring). Registering the same
    function again is a no-op, so a module may register on import however often it is
    imported.

    Args:
        kind: the name a marker's ``kind=`` gives (letters, digits, ``-``, ``_``).
        fn: the renderer: (result file, the marker's options) -> markdown lines.
        replace: allow taking a kind another function holds (tests, a re-loaded module).

    Raises:
        ValueError: ``kind`` is empty or not such a name, or another function holds it
            and ``replace`` is false.
    """
    if not kind or not kind.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"renderer kind {kind!r}: use letters, digits, '-' and '_'")
    held = RENDERERS.get(kind)
    if held is not None and held is not fn and not replace:
        raise ValueError(
            f"renderer kind {kind!r} is taken by {held.__module__}.{held.__qualname__}; "
            "pass replace=True to take it over"
        )
    RENDERERS[kind] = fn


def renderer(kind: str) -> Renderer:
    """The renderer of a marker's ``kind``.

    Raises:
        LookupError: no renderer has that kind; the message lists the known ones, and
            says that kinds of other packages exist once those are imported.
    """
    if kind not in RENDERERS:
        raise LookupError(
            f"unknown kind {kind!r}; known: {', '.join(sorted(RENDERERS))} (a package's own "
            "kinds are registered when it is imported: 'leaderboard' by mtgym.leaderboard)"
        )
    return RENDERERS[kind]
