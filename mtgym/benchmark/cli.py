"""``mtgym benchmark``: run a split's scenarios for the given policies; print and write the
report (``mtgym.benchmark.report``).

``mtgym benchmark --policy agent:runs/a/model.zip --all-baselines`` plays every named policy
and every fast baseline (``splits.FAST_BASELINES``) on every scenario of the test split, on
its ten seeds (two with ``--quick``); each scenario's recorded reference
(``mtgym.benchmark.references``) is added when not named, so that ratios do not depend on
the policies chosen. Output goes to ``--out`` (default ``runs/benchmark-<split>`` with
``-quick`` appended for a quick run), with the run's result file (``OUT/result.json[.gz]``,
``mtgym.results``; ``--record NAME`` copies it into ``results/``). The command is
registered by ``mtgym.cli``.

``--scenario NAME`` (repeatable) plays only those scenarios of the split, each as the full
split would (same seeds, references and report); the suite score and the aggregates are
then not defined ("not defined: ran N of M scenarios"): they are never computed over part
of a split, and the leaderboard refuses such a result file. Its default output folder ends
in the scenarios' names, so that it does not overwrite a whole run's.

Results, tables and TensorBoard runs are labelled by ``mtgym.naming.policy_labels``: a
``module:factory`` policy by its own ``name``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from mtgym.benchmark.splits import FAST_BASELINES, QUICK_SEEDS, SPLITS
from mtgym.command import add_backend_options, check_backend, decision_interval
from mtgym.results.cli import add_record_options
from mtgym.tables import clock_text

DEFAULT_OUT = "runs/benchmark"


def add(sub: argparse._SubParsersAction) -> None:
    """Register ``benchmark`` on the ``mtgym`` sub-command parser.

    Options: ``--policy NAME`` (repeatable), ``--all-baselines``, ``--split``,
    ``--scenario NAME`` (repeatable), ``--quick``, ``--out DIR``, ``--decision-interval S``,
    ``--no-clairvoyant``,
    ``--backend local|ray``, ``--address``, ``--no-progress``, ``--no-cache`` and the
    registry's ``--record NAME``, ``--results-dir DIR`` and ``--force``
    (``mtgym.results.cli.add_record_options``); the handler is stored as ``func``.

    Args:
        sub: the ``mtgym`` parser's sub-parsers object.
    """
    b = sub.add_parser(
        "benchmark",
        help="the generalisation suite: policies on the test split's scenarios and seeds; "
        "per-scenario ratios to the best baseline and a suite score",
        description="Run every policy on every scenario of a split on its fixed seeds (paired), "
        "print per scenario the headline (normalized_throughput) with its 95% interval, the "
        "paired ratio to that scenario's best baseline, the JCT of common jobs and the jobs "
        "completed, and per policy the suite score (geometric mean of the ratios). Writes "
        "OUT/results.md, OUT/results.json, OUT/result.json[.gz] (the result file) and OUT/tb/.",
    )
    b.add_argument(
        "--policy",
        action="append",
        default=[],
        help="registered policy name (agent, agent:PATH, freetrain, greedy, ...) or "
        "module:factory (docs/policies.md; reported under its name); repeat for several",
    )
    b.add_argument(
        "--all-baselines",
        action="store_true",
        help=f"add every fast baseline ({', '.join(FAST_BASELINES)})",
    )
    b.add_argument(
        "--split",
        choices=sorted(SPLITS),
        default="test",
        help="which split to run (default: %(default)s)",
    )
    b.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="play only this scenario of the split (repeat for several); the suite score and "
        "aggregates are then not defined (default: every scenario)",
    )
    b.add_argument(
        "--quick",
        action="store_true",
        help=f"the full run's first {QUICK_SEEDS} seeds, each episode whole "
        "(mtgym.benchmark.splits; its agreement with the full run: docs/benchmark.md)",
    )
    b.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help=f"output folder (default: {DEFAULT_OUT}-<split>[-quick], with the --scenario "
        "names appended)",
    )
    b.add_argument(
        "--decision-interval",
        type=decision_interval,
        default=None,
        metavar="S",
        help="decide every S seconds (default: each policy's own schedule, as evaluate)",
    )
    b.add_argument(
        "--no-clairvoyant",
        action="store_true",
        help="leave out the clairvoyant planner (played by default, beside the references: "
        "the lower end of the bracket around the optimum; docs/metrics.md)",
    )
    add_backend_options(b, "run episodes here, or one Ray task per (scenario, policy, seed)")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_reuse_options(b)
    add_record_options(b)
    b.set_defaults(func=_cmd_benchmark)


def _add_reuse_options(b: argparse.ArgumentParser) -> None:
    """``--no-cache`` (the registry's episodes) and ``--resume`` (a killed run's)."""
    b.add_argument(
        "--no-cache",
        action="store_true",
        help="play every reference episode and compute every hindsight bound, even those "
        "a result file in the registry holds for this code, scenario and tuning "
        "(mtgym.benchmark.cache)",
    )
    b.add_argument(
        "--resume",
        action="store_true",
        help="continue the partial run in --out (its episodes.jsonl, written as episodes "
        "finish): play only what it lacks; refused if the code, scenarios, tuning, policies, "
        "weights or seeds changed (mtgym.benchmark.journal)",
    )


def _cmd_benchmark(args: argparse.Namespace) -> int:
    """Handler of ``mtgym benchmark``: run, score, write and print the report.

    The output folder and ``--record`` are checked before any episode; the policy list is
    de-duplicated (first mention kept) and extended by the recorded references, whose
    episodes and the bounds are reused from the registry where it holds them
    (``_episode_cache``). The progress bar advances once per episode and disappears when
    the run ends. The result file (``mtgym.results``) has one row per episode and
    ``results.json`` as aggregates, plus their ``cache`` key: what was reused, from where,
    and that reused rows keep their source run's timing (``mtgym.benchmark.cache.reused``;
    empty with ``--no-cache``). ``--scenario`` cuts the split (module docstring); the
    policies are reported under their labels (``mtgym.naming.policy_labels``).

    Args:
        args: the parsed options of ``add``'s parser.

    Returns:
        0; expected errors are raised, and ``mtgym.command.dispatch`` prints them as one
        line with exit status 2.

    Raises:
        ValueError: no policy, ``--address`` without ``--backend ray``, or a bad
            ``--record`` name.
        FileExistsError: the ``--record`` name is taken (without ``--force``).
        KeyError: an unknown policy or scenario, or a ``--scenario`` not in the split.
    """
    from mtgym.benchmark import report
    from mtgym.benchmark.cache import reused
    from mtgym.benchmark.references import recorded_references
    from mtgym.benchmark.runner import relabel
    from mtgym.benchmark.scoring import score_split
    from mtgym.core.io import prepare_out_dir
    from mtgym.results import cli as results_cli
    from mtgym.results import hashes, rows, store

    check_backend(args)
    split, skipped = _split(args)
    out = Path(args.out or _default_out(split, args.quick, skipped))
    prepare_out_dir(out)  # before any work
    seeds = split.seeds(quick=args.quick)
    policies = _policies(args, split)
    labels = _labels(policies)  # (builds each policy: an unknown name fails here)
    provenance = results_cli.start(args)  # refuses a taken --record name before any work
    scenarios = hashes.scenario_entries(sc.name for sc in split.scenarios)
    t0 = time.perf_counter()  # (reading the cache counts in the wall time)
    cache = _episode_cache(args, split, policies, provenance, scenarios)
    journal = _journal(args, out, split, policies, provenance, scenarios)
    print(_expected_cost(args, split, policies, cache, journal))
    results = relabel(_play(args, split, policies, cache, journal), labels)
    res = score_split(
        split,
        results,
        list(labels.values()),
        quick=args.quick,
        references=recorded_references(split),
        skipped=skipped,
    )
    report.write(out, res)
    wall_s = time.perf_counter() - t0
    result = store.build(
        "benchmark",
        provenance,
        seeds=seeds,
        scenarios=scenarios,
        wall_s=wall_s,
        rows=rows.benchmark_rows(results, args.decision_interval),
        aggregates={
            **report.to_json(res),
            "cache": reused(cache, labels),
            "resumed": journal.summary(),
        },
    )
    print(report.markdown(res))
    print(f"wall time {wall_s:.0f} s; wrote {out}/results.md, results.json, tb/")
    results_cli.save(args, result, out)
    return 0


def _policies(args: argparse.Namespace, split: Any) -> list[str]:
    """The policies to run: those named (and the fast baselines with ``--all-baselines``),
    each once, then the recorded references they lack, then the clairvoyant (unless
    ``--no-clairvoyant``: the bracket's lower end, ``mtgym.benchmark.runner``).

    Raises:
        ValueError: no policy named.
    """
    from mtgym.benchmark.references import with_references
    from mtgym.benchmark.runner import CLAIRVOYANT

    names = [*args.policy, *[p for p in FAST_BASELINES if args.all_baselines]]
    if not names:
        raise ValueError("benchmark needs a policy: --policy NAME or --all-baselines")
    policies = with_references(list(dict.fromkeys(names)), split)
    if not args.no_clairvoyant and CLAIRVOYANT not in policies:
        policies.append(CLAIRVOYANT)
    return policies


def _split(args: argparse.Namespace) -> tuple[Any, list[str]]:
    """The split to play (``--split``, cut to the ``--scenario`` names) and the names of its
    scenarios left out, with one line on stdout when some are.

    Args:
        args: the options: ``split``, ``scenario`` (a list, empty: every scenario).

    Raises:
        KeyError: an unknown split, or a ``--scenario`` that is not in it.
    """
    from mtgym.benchmark.aggregates import partial_reason
    from mtgym.benchmark.splits import get_split

    full = get_split(args.split)
    if not args.scenario:
        return full, []
    split = full.only(args.scenario)
    skipped = [n for n in full.names if n not in split.names]
    if skipped:
        why = partial_reason(len(split.scenarios), len(skipped))
        print(f"--scenario: {', '.join(split.names)}; suite score and aggregates {why}")
    return split, skipped


def _default_out(split: Any, quick: bool, skipped: list[str]) -> str:
    """``runs/benchmark-<split>[-quick]``, with ``-<scenario>_<scenario>...`` appended for
    part of a split (its own folder: a whole run's results stay).
    """
    from mtgym.naming import safe_name

    out = f"{DEFAULT_OUT}-{split.name}{'-quick' if quick else ''}"
    return out + (f"-{safe_name('_'.join(split.names))}" if skipped else "")


def _labels(policies: list[str]) -> dict[str, str]:
    """Each policy's label (``mtgym.naming.policy_labels``; each is built once for its
    ``name``, so an unknown one fails here, before any episode).

    Args:
        policies: the ``--policy`` strings, references included.
    """
    from mtgym.naming import policy_labels
    from mtgym.policy.registry import make_policy

    return policy_labels(policies, {p: make_policy(p).name for p in policies})


def _play(
    args: argparse.Namespace, split: Any, policies: list[str], cache: Any, journal: Any
) -> list[Any]:
    """``run_split`` under a transient progress bar that advances once per episode; when
    stdout is not a terminal (a log file), one line per finished (scenario, policy) batch
    instead, with the count of episodes done and the elapsed time.

    Args:
        args: the options: ``quick``, ``backend``, ``address``, ``decision_interval``,
            ``no_progress`` (no bar and no lines).
        split: the split.
        policies: every policy, references included.
        cache: ``_episode_cache``'s (None: none).
        journal: ``_journal``'s.

    Returns:
        ``run_split``'s ``ScenarioRuns``, one per scenario.
    """
    from rich.console import Console
    from rich.progress import Progress

    from mtgym.benchmark.runner import Reuse, run_split

    n_seeds = len(split.seeds(quick=args.quick))
    total = len(split.scenarios) * len(policies) * n_seeds
    console = Console(width=max(Console().width, 120))
    lines = not console.is_terminal and not args.no_progress
    done: dict[str, int] = {}
    t0 = time.perf_counter()
    with Progress(console=console, disable=args.no_progress or lines, transient=True) as bar:
        task = bar.add_task("benchmark", total=total)

        def progress(text: str) -> None:  # once per episode: "<scenario>: <policy> seed <s>"
            bar.update(task, description=text, advance=1)
            batch = text.rsplit(" seed ", 1)[0]
            done[batch] = done.get(batch, 0) + 1
            if lines and done[batch] == n_seeds:
                n = sum(done.values())
                print(
                    f"[{n}/{total} episodes, {clock_text(time.perf_counter() - t0)}] {batch}: "
                    f"{n_seeds} seeds done",
                    flush=True,
                )

        return run_split(
            split,
            policies,
            quick=args.quick,
            backend=args.backend,
            address=args.address,
            decision_interval_s=args.decision_interval,
            progress=progress,
            reuse=Reuse(cache, journal),
        )


def _journal(
    args: argparse.Namespace,
    out: Path,
    split: Any,
    policies: list[str],
    provenance: dict[str, Any],
    scenarios: list[dict[str, Any]],
) -> Any:
    """This run's journal in ``out`` (``mtgym.benchmark.journal``): read back with
    ``--resume`` (one line on what it holds), else a new one (one line when it replaces a
    partial run's).

    Raises:
        JournalError: ``--resume`` without a journal, or with another run's.
    """
    from mtgym.benchmark import journal
    from mtgym.core.paths import CHECKOUT

    ident = journal.identity(
        provenance=provenance,
        scenarios=scenarios,
        policies=policies,
        seeds=split.seeds(quick=args.quick),
        quick=args.quick,
        decision_interval_s=args.decision_interval,
        root=Path(CHECKOUT),
    )
    path = out / journal.FILE
    if not args.resume and path.is_file():
        n = max(len(path.read_text(encoding="utf-8").splitlines()) - 1, 0)
        if n:
            print(f"{path}: a partial run's {n} item(s) replaced (--resume continues one)")
    found = journal.Journal.start(out, ident, resume=args.resume)
    if args.resume:
        s = found.summary()
        print(f"resume: {s['rows']} episode(s) and {s['bounds']} bound(s) from {path}")
    return found


def _expected_cost(
    args: argparse.Namespace, split: Any, policies: list[str], cache: Any, journal: Any
) -> str:
    """One line before the run: the episodes and bounds it will play (the references
    included; less what the cache and the journal hold) and how long the registry's last
    run of the same kind (full or quick, whole split) took.
    """
    from mtgym.benchmark.runner import Reuse, _bound_hit, _row_hit

    reuse = Reuse(cache, journal)
    seeds = split.seeds(quick=args.quick)
    play = bounds = held = 0
    for sc in split.scenarios:
        h = split.horizon_s(sc, quick=args.quick)
        for seed in seeds:
            bounds += _bound_hit(reuse, sc.name, seed, h) is None
            for p in policies:
                hit = _row_hit(reuse, (sc.name, p, seed, h, args.decision_interval))
                play += hit is None
                held += hit is not None
    line = (
        f"to play: {play} episode(s) ({len(policies)} policies incl. the references x "
        f"{len(split.scenarios)} scenario(s) x {len(seeds)} seeds, {held} held by the "
        f"cache or the journal) and {bounds} hindsight bound(s)"
    )
    last = _last_run(args, split)
    return line + (f"; {last}" if last else "")


def _last_run(args: argparse.Namespace, split: Any) -> str | None:
    """``"the last full run took 52 min 10 s (results/benchmark-full.json.gz, 1,100
    episodes)"``: the newest registry result of a benchmark of the same kind over this
    split's scenarios, or None.
    """
    from mtgym.benchmark.cache import result_files, shown
    from mtgym.results import store
    from mtgym.results.schema import ResultFileError

    kind = "quick" if args.quick else "full"
    best = None
    for path in result_files(store.results_dir(args.results_dir)):
        try:
            res = store.read_result(path)
        except (ResultFileError, OSError, ValueError):
            continue
        names = {s.name for s in res.scenarios}
        if res.kind != "benchmark" or names != set(split.names):
            continue
        if bool(res.aggregates.get("quick")) != args.quick:
            continue
        date = res.date_utc
        if best is None or date > best[0]:
            best = (date, path, res)
    if best is None:
        return None
    _, path, res = best
    return (
        f"the last {kind} run took {clock_text(res.wall_s)} ({shown(path)}, {len(res.rows)} "
        "episodes, load and reuse as it recorded)"
    )


def _episode_cache(
    args: argparse.Namespace,
    split: Any,
    policies: list[str],
    provenance: dict[str, Any],
    scenarios: list[dict[str, Any]],
) -> Any:
    """The references' episodes and the bounds the registry holds for this run
    (``mtgym.benchmark.cache``), with one line per scenario printed on what is reused and
    what is played (and why); None with ``--no-cache``.

    Args:
        args: the options: ``no_cache``, ``results_dir``, ``quick``, ``decision_interval``.
        split: the split run.
        policies: every policy run, references included.
        provenance: the run's provenance (its version and code hash).
        scenarios: the split's scenario entries (their hashes now).
    """
    from mtgym.benchmark import cache as episode_cache
    from mtgym.benchmark.references import recorded_references
    from mtgym.results import store

    if args.no_cache:
        print("cache: off (--no-cache): every reference episode and bound is played")
        return None
    from mtgym.benchmark.runner import CLAIRVOYANT

    current = episode_cache.Current.of(provenance, scenarios)
    # the references' episodes, and the clairvoyant's: its plan depends on nothing but
    # the code, the scenario and its tuning, as theirs do
    refs = set(recorded_references(split).values()) | {CLAIRVOYANT}
    found = episode_cache.load(store.results_dir(args.results_dir), current, refs)
    for sc in split.scenarios:
        ep = episode_cache.Episodes(
            sc.name,
            policies,
            split.seeds(quick=args.quick),
            split.horizon_s(sc, quick=args.quick),
            args.decision_interval,
        )
        print(episode_cache.describe(found, ep))
    return found
