"""``mtgym tune``: sweep baselines' knobs on a scenario and record the choice.

``mtgym tune --policy P --scenario S`` prints the grid and the rule, then plays the sweep on
the tuning seeds, prints every point, and merges the policy's entry into the scenario's
record (``scenarios/tuning/S.json``; ``--out FILE`` writes elsewhere). ``--report`` prints
every record as the markdown tables of ``docs/tuning.md``.

A record belongs to one set of tuning seeds, one horizon and one rule: a record made with
others is refused rather than mixed (move it away to re-tune). The record is saved after
each policy, re-read just before, so a long run keeps what it finished and another
``mtgym tune`` on the same scenario meanwhile does not lose its entries. The record's
``reference`` (the tuned baseline with the highest chosen mean) is what
``mtgym benchmark`` divides by. ``--record NAME`` also writes the sweep's result file
(``mtgym.results``) into the registry.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from mtgym.results import cli as results_cli
from mtgym.scenario.tuning import (
    PolicyTuning,
    TuningRecord,
    load_record,
    record_path,
    save_record,
    tuning_dir,
)
from mtgym.tuning.sweep import RULE, TUNE_SEEDS, policy_knobs, tune_policy


def add(sub: argparse._SubParsersAction) -> None:
    """Register ``tune`` on the ``mtgym`` sub-command parser.

    Options: ``--policy`` and ``--scenario`` (each repeatable), ``--workers N``,
    ``--horizon S``, ``--out FILE``, ``--dry-run``, ``--report`` and the registry's
    ``--record NAME``, ``--results-dir DIR`` and ``--force``
    (``mtgym.results.cli.add_record_options``); the handler is stored as ``func``.

    Args:
        sub: the ``mtgym`` parser's sub-parsers object.
    """
    t = sub.add_parser(
        "tune",
        help="tune baselines' knobs on a scenario (tuning seeds, a rule fixed in advance) "
        "and record the choice that make_policy then uses there",
        description=f"Rule: {RULE}. Seeds: {', '.join(map(str, TUNE_SEEDS))}.",
    )
    t.add_argument("--policy", action="append", default=[], help="registered name; repeat")
    t.add_argument("--scenario", action="append", default=[], help="preset name; repeat")
    t.add_argument("--workers", type=int, default=1, help="processes (default: %(default)s)")
    t.add_argument(
        "--horizon", type=float, default=None, metavar="S", help="play S s (default: whole)"
    )
    t.add_argument("--out", type=Path, default=None, help="record file (one scenario only)")
    t.add_argument("--dry-run", action="store_true", help="print the grids, play nothing")
    t.add_argument("--report", action="store_true", help="print every record as markdown")
    results_cli.add_record_options(t)  # --record NAME: the sweep's result file into the registry
    t.set_defaults(func=_cmd_tune)


def _fmt(params: dict) -> str:
    """Knobs as ``max_jobs=10, t_fwd=10.0`` (insertion order)."""
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _cmd_tune(args: argparse.Namespace) -> int:
    """Handler of ``mtgym tune``: print the grids, play the sweeps, save the records.

    Every (scenario, policy) grid is printed, and so checked, before any episode; with
    ``--dry-run`` nothing is played. Progress lines go to stderr, each policy's table to
    stdout.

    Args:
        args: ``mtgym tune``'s options (``add``).

    Returns:
        0 (exit status). Errors are raised, not returned: ``mtgym.command.dispatch``
        prints an expected one on one line and exits with status 2.

    Raises:
        ValueError: ``--policy`` or ``--scenario`` missing, ``--out`` with several
            scenarios, ``--workers`` < 1, a policy without knobs, or a record made with
            other seeds, horizon or rule.
        KeyError: an unknown policy or scenario.
    """
    if args.report:
        print(report_markdown())
        return 0
    if not args.policy or not args.scenario:
        raise ValueError("mtgym tune needs --policy and --scenario (or --report)")
    if args.out is not None and len(args.scenario) > 1:
        raise ValueError("--out takes one --scenario")
    if args.workers < 1:
        raise ValueError("--workers must be >= 1")
    print(f"rule: {RULE}\nseeds: {list(TUNE_SEEDS)}")
    for sc in args.scenario:
        for p in args.policy:
            default, grid = policy_knobs(sc, p)
            print(f"{sc} / {p}: default {_fmt(default)}; grid {json.dumps(grid)}")
    if args.dry_run:
        return 0
    provenance, t0, records = results_cli.start(args), time.perf_counter(), []
    for sc in args.scenario:
        path = args.out or record_path(sc)
        rec = _load(path, sc, args.horizon)  # refuse a mismatched record before any run
        for p in args.policy:
            res = tune_policy(
                sc,
                p,
                horizon_s=args.horizon,
                workers=args.workers,
                progress=lambda m: print(m, file=sys.stderr, flush=True),
            )
            rec = _load(path, sc, args.horizon)  # what another tune wrote meanwhile stays
            rec.policies[p] = res
            rec.reference = rec.best()
            save_record(rec, path)  # after each policy: a long run keeps what it finished
            print(_policy_table(sc, p, res))
        print(f"{sc}: reference {rec.reference}; wrote {path}")
        records.append(rec)
    if args.record is not None:
        _record(args, provenance, records, time.perf_counter() - t0)
    return 0


def _record(
    args: argparse.Namespace,
    provenance: dict[str, Any],
    records: list[TuningRecord],
    wall_s: float,
) -> None:
    """``--record NAME``: the sweep's result file (``mtgym.results``) into the registry.

    Rows: every (scenario, policy, point, tuning seed) (``mtgym.results.rows.tuning_rows``);
    aggregates: ``rule`` and ``records`` (scenario -> its tuning record as saved). The
    scenario hashes are taken now, so ``tuning_sha256`` is the record just written (the
    ``--out`` file when given).

    Args:
        args: ``mtgym tune``'s options.
        provenance: ``mtgym.results.cli.start``'s dict, taken before the first episode.
        records: the records saved, one per scenario.
        wall_s: the sweep's wall seconds.
    """
    from mtgym.results import hashes, rows, store

    scenarios = hashes.scenario_entries(args.scenario)
    if args.out is not None:  # (one scenario only)
        scenarios[0]["tuning_sha256"] = hashes.file_hash(args.out)
    result = store.build(
        "tune",
        provenance,
        seeds=TUNE_SEEDS,
        scenarios=scenarios,
        wall_s=wall_s,
        rows=rows.tuning_rows(records),
        aggregates={
            "rule": RULE,
            "records": {r.scenario: r.model_dump(mode="json") for r in records},
        },
    )
    results_cli.save(args, result, None)


def _load(path: Path, scenario: str, horizon_s: float | None) -> TuningRecord:
    """The record at ``path``, or a new one; refuses to mix seeds or horizons.

    Args:
        path: the record file (it may not exist).
        scenario: the scenario's name, for a new record.
        horizon_s: the sweep's horizon (None: whole episodes); must equal the record's.

    Raises:
        ValueError: the file is not a valid record, or was made with other seeds
            (``TUNE_SEEDS``), another horizon or another ``RULE``.
    """
    rec = None
    if path.is_file():
        rec = TuningRecord.model_validate_json(path.read_text())
    if rec is None:
        return TuningRecord(
            scenario=scenario, seeds=list(TUNE_SEEDS), horizon_s=horizon_s, rule=RULE
        )
    if rec.seeds != list(TUNE_SEEDS) or rec.horizon_s != horizon_s or rec.rule != RULE:
        raise ValueError(
            f"{path} was recorded with other seeds, horizon or rule; move it away to re-tune"
        )
    return rec


def _policy_table(scenario: str, policy: str, res: PolicyTuning) -> str:
    """One policy's sweep as markdown: a ``### scenario: policy`` heading and a table.

    One line per point tried (the default first): the knob it varies, its setting (the
    chosen one marked), the mean headline, the headline per seed, the jobs completed (mean
    over seeds) and its wall seconds (summed over seeds); then the chosen setting and its
    mean as a multiple of the default's.

    Args:
        scenario: the scenario's name.
        policy: the policy's name.
        res: the policy's sweep.
    """
    lines = [
        f"### {scenario}: {policy}",
        "",
        "| knob | setting | mean | per seed | jobs done | wall s |",
        "|---|---|---:|---|---:|---:|",
    ]
    for pt in res.sweep:
        mark = " **(chosen)**" if pt.params == res.chosen else ""
        seeds = ", ".join(f"{x:.2f}" for x in pt.headline)
        jobs = sum(pt.jobs_completed) / max(len(pt.jobs_completed), 1)
        lines.append(
            f"| {pt.knob or 'default'} | {_fmt(pt.params)}{mark} | {pt.mean:.3f} | {seeds} "
            f"| {jobs:.1f} | {pt.wall_s:.0f} |"
        )
    gain = res.chosen_mean / res.default_mean if res.default_mean > 0 else float("nan")
    lines += ["", f"Chosen: {_fmt(res.chosen)} ({gain:.3f}x the default)", ""]
    return "\n".join(lines)


def report_markdown() -> str:
    """Every record under ``tuning_dir()`` as markdown: the reference per scenario, then each
    policy's sweep table.

    The first table has one line per scenario: its reference and each tuned policy's
    chosen mean (x its default's), best first.

    Raises:
        ValueError: a record file is not a valid record.
    """
    recs = [load_record(p.stem) for p in sorted(tuning_dir().glob("*.json"))]
    recs = [r for r in recs if r is not None]
    out = [
        "| scenario | reference | " + "tuned mean (x default) per policy |",
        "|---|---|---|",
    ]
    for r in recs:
        cells = "; ".join(
            f"{p} {t.chosen_mean:.2f} ({t.chosen_mean / t.default_mean:.2f}x)"
            for p, t in sorted(r.policies.items(), key=lambda kv: -kv[1].chosen_mean)
        )
        out.append(f"| {r.scenario} | {r.reference} | {cells} |")
    out.append("")
    for r in recs:
        for p, t in r.policies.items():
            out.append(_policy_table(r.scenario, p, t))
    return "\n".join(out)
