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
(``mtgym.results``) into the registry. Every finished point is journalled
(``runs/tune/<scenario>.jsonl``, ``mtgym.tuning.journal``): ``--resume`` replays none of a
killed run's finished points.
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
    TuningRecord,
    record_path,
    save_record,
)
from mtgym.tuning.report import fmt_params, policy_table, report_markdown, write_pages
from mtgym.tuning.sweep import RULE, TUNE_SEEDS, policy_knobs, tune_policy


def _sweep_cost(scenario: str, policy: str, grid: dict[str, list[Any]], args: Any) -> str:
    """The line before a sweep: at most how many points and episodes it plays (the default,
    then each knob's values in turn: ``tune_policy``), and how long the recorded sweep of
    this (scenario, policy) took, else about how long by the registry's measured episodes
    (``mtgym.results.estimate``).
    """
    from mtgym.results import store
    from mtgym.results.estimate import cost_line
    from mtgym.scenario.tuning import load_record
    from mtgym.tables import wall_text

    points = 1 + sum(len(v) for v in grid.values())
    episodes = points * len(TUNE_SEEDS)
    head = f"{scenario} / {policy}: at most {points} points x {len(TUNE_SEEDS)} seeds"
    try:
        rec = load_record(scenario)
    except ValueError:
        rec = None
    last = rec.policies.get(policy) if rec is not None else None
    if last is not None and last.wall_s > 0:
        return (
            f"{head} = {episodes} episodes; its recorded sweep took {wall_text(last.wall_s)} "
            f"({len(last.sweep)} points; that run's machine, load and workers)"
        )
    folder = store.results_dir(getattr(args, "results_dir", None))
    line = cost_line(folder, scenario, {policy: episodes}, workers=args.workers)
    return f"{head}; {line}"


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
    t.add_argument("--report", action="store_true", help="print the records' short page")
    t.add_argument(
        "--write",
        type=Path,
        default=None,
        metavar="DOCS",
        help="with --report: write DOCS/tuning.md and DOCS/tuning-sweeps/<scenario>.md",
    )
    t.add_argument(
        "--resume",
        action="store_true",
        help="replay none of the points a killed run of the same sweep finished (its "
        "journal, runs/tune/<scenario>.jsonl; refused if code, scenario, seeds or horizon "
        "changed)",
    )
    results_cli.add_record_options(t)  # --record NAME: the sweep's result file into the registry
    t.set_defaults(func=_cmd_tune)


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
        if args.write is not None:
            for path in write_pages(args.write):
                print(f"wrote {path}")
        else:
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
            print(f"{sc} / {p}: default {fmt_params(default)}; grid {json.dumps(grid)}")
            print(_sweep_cost(sc, p, grid, args))
    if args.dry_run:
        return 0
    provenance, t0, records = results_cli.start(args), time.perf_counter(), []
    for sc in args.scenario:
        path = args.out or record_path(sc)
        rec = _load(path, sc, args.horizon)  # refuse a mismatched record before any run
        journal = _journal(args, sc)
        for p in args.policy:
            res = tune_policy(
                sc,
                p,
                horizon_s=args.horizon,
                workers=args.workers,
                progress=lambda m: print(m, file=sys.stderr, flush=True),
                journal=journal,
            )
            rec = _load(path, sc, args.horizon)  # what another tune wrote meanwhile stays
            rec.policies[p] = res
            rec.reference = rec.best()
            save_record(rec, path)  # after each policy: a long run keeps what it finished
            print(policy_table(sc, p, res))
        print(f"{sc}: reference {rec.reference}; wrote {path}")
        records.append(rec)
    if args.record is not None:
        _record(args, provenance, records, time.perf_counter() - t0)
    return 0


def _journal(args: argparse.Namespace, scenario: str) -> Any:
    """The sweep's point journal (``mtgym.tuning.journal``): read back with ``--resume``
    (one line on stderr on what it holds), else a new one.
    """
    from mtgym.tuning.journal import FOLDER, PointJournal, identity

    path = FOLDER / f"{scenario}.jsonl"
    ident = identity(scenario, list(TUNE_SEEDS), args.horizon)
    journal = PointJournal.open(path, ident, resume=args.resume)
    if args.resume:
        n = sum(len(v) for v in journal.points.values())
        print(f"resume: {n} finished point(s) from {path}", file=sys.stderr, flush=True)
    return journal


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
