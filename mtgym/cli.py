"""The ``mtgym`` command line (also ``python -m mtgym``)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from mtgym.command import add_backend_options, check_backend, decision_interval, dispatch
from mtgym.core.limits import MIN_DECISION_INTERVAL_S


def _fmt(v: object) -> str:
    """A metric value as ``mtgym run`` prints it.

    Floats: ``n/a`` for NaN; 4 significant digits (exponent form where needed) when the
    magnitude is at least 1e5 or below 1e-3 (zero excluded); else 3 decimals below 10 and
    1 decimal with thousands separators from 10 on. Anything else: ``str(v)``.
    """
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        if abs(v) >= 1e5 or (0 < abs(v) < 1e-3):
            return f"{v:.4g}"
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
    return str(v)


_ALLOW_LARGE_HELP = (
    "build a scenario whose estimated memory is above the ceiling "
    "(mtgym.scenario.check.MAX_BUILD_BYTES, 1 GiB)"
)


def _int(text: str) -> int:
    """``text`` as an int; ``ArgumentTypeError`` (a usage line, no traceback) otherwise."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def positive_int(text: str) -> int:
    """Argparse type: an integer >= 1 (``--seeds``).

    Args:
        text: the option's value as typed.

    Raises:
        argparse.ArgumentTypeError: not an integer, or below 1 (argparse prints it as a
            usage error and exits with status 2).
    """
    v = _int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not >= 1")
    return v


def seed_int(text: str) -> int:
    """Argparse type: a seed, 0 <= seed < 2**63 (a non-negative signed 64-bit integer).

    Args:
        text: the option's value as typed.

    Raises:
        argparse.ArgumentTypeError: not an integer, or out of that range.
    """
    v = _int(text)
    if not 0 <= v < 2**63:
        raise argparse.ArgumentTypeError(f"{v} is not in 0..2**63-1")
    return v


def _scenario_args(p: argparse.ArgumentParser) -> None:
    """Add ``--scenario`` (built-in name, preset name or file path; default ``default``) and
    ``--allow-large`` to the parser ``p`` of a sub-command.
    """
    p.add_argument(
        "--scenario",
        default="default",
        help="built-in name, preset name or scenario file path (default: %(default)s; "
        "see `mtgym scenario list`)",
    )
    p.add_argument("--allow-large", action="store_true", help=_ALLOW_LARGE_HELP)


def _cmd_run(args: argparse.Namespace) -> int:
    """``mtgym run``: one episode of one policy on one seed; prints its metrics.

    The policy gets the scenario's defaults (``mtgym.evaluate.configure_policy``), as under
    ``mtgym evaluate``. The table (with ``--json``, a JSON object) has every field of
    ``EpisodeMetrics`` plus ``decision_ms`` (mean wall milliseconds per decision) and
    ``wall_s`` (the episode's wall time).

    Args:
        args: the parsed options: ``scenario``, ``allow_large``, ``seed``, ``policy``,
            ``decision_interval`` (seconds, or None: at every event), ``debug``, ``json``.

    Returns:
        0; expected errors raise and ``mtgym.command.dispatch`` turns them into status 2.
    """
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    console = Console()
    from mtgym.evaluate import configure_policy, scenario_defaults

    gen = get_generator(args.scenario, allow_large=args.allow_large)
    instance = gen(args.seed)
    policy = configure_policy(make_policy(args.policy), scenario_defaults(gen))
    result = play(instance, policy, decision_interval_s=args.decision_interval, debug=args.debug)
    m = result.metrics.as_dict()
    m["decision_ms"] = result.decision_ms
    m["wall_s"] = result.wall_s
    if args.json:
        print(json.dumps(m, indent=2, allow_nan=True))
        return 0
    table = Table(
        title=f"mtgym: scenario {instance.name!r}, seed {args.seed}, policy {policy.name!r}"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in m.items():
        table.add_row(k, _fmt(v))
    console.print(table)
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    """``mtgym info``: a table describing the instance a scenario builds for one seed.

    Rows: nodes x GPUs, GPU types, topology levels, idle windows, the horizon in hours,
    the mean number of idle nodes (offered node-seconds / horizon), jobs, campaigns and the
    cost model.

    Args:
        args: the parsed options: ``scenario``, ``allow_large``, ``seed``.

    Returns:
        0.
    """
    from mtgym.scenario.registry import get_generator

    inst = get_generator(args.scenario, allow_large=args.allow_large)(args.seed)
    cl, jobs = inst.cluster, inst.jobs
    span = inst.t_end - inst.t_start
    offered = inst.supply.offered_node_seconds(inst.t_start, inst.t_end)
    table = Table(title=f"scenario {inst.name!r} (seed {args.seed})")
    table.add_column("item")
    table.add_column("value", justify="right")
    rows = [
        ("nodes x GPUs", f"{cl.num_nodes} x {cl.gpus_per_node}"),
        ("GPU types", ", ".join(cl.gpu_type_names)),
        ("topology levels", " -> ".join(cl.topology.level_names)),
        ("idle windows", f"{inst.supply.num_windows:,}"),
        ("horizon (h)", f"{span / 3600:.2f}"),
        ("mean idle nodes", f"{offered / span:.1f}"),
        ("jobs", f"{jobs.num_jobs}"),
        ("campaigns", f"{inst.campaigns.num_campaigns}"),
        (
            "cost model",
            f"rescale={inst.costs.rescale.value}, preemption={inst.costs.preemption.value}",
        ),
    ]
    for k, v in rows:
        table.add_row(k, v)
    Console().print(table)
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    """``mtgym evaluate``: several policies on the same seeds, here or on Ray.

    Everything that can fail on bad input fails before the first episode: the ``--out``
    folder is created and probed, every policy name is built once, the reference is
    checked against the names, ``--address`` against the backend and ``--record`` against
    the registry. No ``--policy`` (or ``--policy all``) means every registered policy
    except the slow ``*-milp`` ones. The result file (``mtgym.results``) goes to
    ``OUT/result.json[.gz]`` and, with ``--record NAME``, into the registry. Each policy is
    reported under its label (``mtgym.naming.policy_labels``: a ``module:factory`` policy
    under its own ``name``); ``--reference`` may give the label or the ``--policy`` string.

    Args:
        args: the parsed options: ``scenario``, ``allow_large``, ``policy`` (a list, or
            None), ``seed`` and ``seeds`` (seeds ``seed .. seed + seeds - 1``),
            ``reference``, ``out``, ``decision_interval``, ``no_progress``, ``no_bound``,
            ``backend`` (``local`` or ``ray``), ``address``, ``record``, ``results_dir``
            and ``force``.

    Returns:
        0.

    Raises:
        KeyError: an unknown scenario or policy name.
        ValueError: ``--reference`` is not a compared policy, ``--address`` is given
            without ``--backend ray``, or a bad ``--record`` name.
        OSError: ``--out`` cannot be created or written (``OutDirError``), or the
            ``--record`` name is taken (``FileExistsError``).
    """
    import time

    from mtgym.core.io import prepare_out_dir
    from mtgym.results import cli as results_cli
    from mtgym.scenario.registry import get_generator

    if args.out:
        prepare_out_dir(args.out)  # before any work: a sweep never ends unsaved
    gen = get_generator(args.scenario, allow_large=args.allow_large)
    labels, args.reference = _evaluate_policies(args)  # (the result file reads the label)
    seeds = list(range(args.seed, args.seed + args.seeds))
    check_backend(args)
    provenance, t0 = results_cli.start(args), time.perf_counter()
    journal = _evaluate_journal(args, labels, seeds, provenance)
    # (stderr: evaluate's stdout is its tables, fitted to the terminal's width)
    print(_evaluate_cost(args, labels, seeds, journal), file=sys.stderr)
    runs = _evaluate_runs(args, gen, labels, seeds, journal)
    results_cli.save_runs(
        args,
        "evaluate",
        provenance,
        scenario=args.scenario,
        seeds=seeds,
        runs=runs,
        wall_s=time.perf_counter() - t0,
    )
    return 0


def _evaluate_cost(
    args: argparse.Namespace, labels: dict[str, str], seeds: list[int], journal: Any
) -> str:
    """The line before ``mtgym evaluate`` plays: its episodes per policy (less what a
    resumed journal holds), its bounds, and about how long they take by the registry's
    measured episodes (``mtgym.results.estimate``).
    """
    import os

    from mtgym.results import store
    from mtgym.results.estimate import cost_line

    held: dict[str, int] = {}
    for key in getattr(journal, "rows", {}) or {}:
        if key[0] == args.scenario and key[2] in seeds:
            held[key[1]] = held.get(key[1], 0) + 1
    episodes = {lab: len(seeds) - held.get(lab, 0) for lab in labels.values()}
    bounds = len(seeds) - sum(
        k[0] == args.scenario and k[1] in seeds for k in getattr(journal, "bounds", {}) or {}
    )
    workers = (os.cpu_count() or 1) if args.backend == "ray" else 1
    extra = "" if args.no_bound else f"and {bounds} hindsight bound(s)"
    folder = store.results_dir(getattr(args, "results_dir", None))
    return cost_line(folder, args.scenario, episodes, workers=workers, extra=extra)


def _evaluate_journal(
    args: argparse.Namespace,
    labels: dict[str, str],
    seeds: list[int],
    provenance: dict,
) -> object:
    """``mtgym evaluate``'s episode journal in ``--out`` (``mtgym.benchmark.journal``): its
    episodes and bounds written as they finish; read back with ``--resume``. None without
    ``--out`` or on Ray.

    Raises:
        ValueError: ``--resume`` without ``--out``, or with ``--backend ray``.
        JournalError: ``--resume`` and no journal, or another run's.
    """
    from mtgym.benchmark import journal

    if args.resume and (not args.out or args.backend == "ray"):
        raise ValueError("--resume needs --out DIR and the local backend")
    if not args.out or args.backend == "ray":
        return None
    found = journal.for_evaluation(
        args.out,
        provenance=provenance,
        scenario=args.scenario,
        policies=[*labels, f"hindsight={not args.no_bound}"],
        seeds=seeds,
        decision_interval_s=args.decision_interval,
        resume=args.resume,
    )
    if args.resume:
        s = found.summary()
        print(f"resume: {s['rows']} episode(s) and {s['bounds']} bound(s) from {found.path}")
    return found


def _evaluate_runs(
    args: argparse.Namespace,
    gen: object,
    labels: dict[str, str],
    seeds: list[int],
    journal: object = None,
) -> list:
    """``mtgym evaluate``'s episodes, here (``mtgym.evaluate.evaluate``) or on Ray
    (``evaluate_ray``): each policy built from its ``--policy`` string, reported under its
    label; the tables printed and ``--out`` written.

    Args:
        args: the parsed options (``_cmd_evaluate``'s), ``reference`` by its label.
        gen: the scenario's generator.
        labels: ``--policy`` string -> label (``_evaluate_policies``).
        seeds: the seeds.

    Returns:
        One ``PolicyRun`` per policy, named by its label.
    """
    from pathlib import Path

    from mtgym.evaluate import evaluate
    from mtgym.policy.registry import make_policy

    out = Path(args.out) if args.out else None
    if args.backend == "ray":
        from mtgym.backends.ray_backend import RayOutput, evaluate_ray

        show = not args.no_progress
        output = RayOutput(out, show, True, args.reference, labels=[*labels.values()])
        return evaluate_ray(
            args.scenario,
            list(labels),
            seeds,
            address=args.address,
            decision_interval_s=args.decision_interval,
            output=output,
            hindsight=not args.no_bound,
        )
    return evaluate(
        gen,  # type: ignore[arg-type]
        [(label, lambda spec=spec: make_policy(spec)) for spec, label in labels.items()],
        seeds,
        out=out,
        decision_interval_s=args.decision_interval,
        progress=not args.no_progress,
        scenario_name=args.scenario,
        reference=args.reference,
        hindsight=not args.no_bound,
        journal=journal,
    )


def _evaluate_policies(args: argparse.Namespace) -> tuple[dict[str, str], str | None]:
    """``mtgym evaluate``'s policies, each built once (an unknown name fails before any
    episode), with their labels, and ``--reference`` checked to be among them.

    None named or ``all``: every registered policy but the node-level MILP variants and
    those that need an argument (``mtgym.policy.registry.default_policies``): name them to
    include them. A policy named twice runs once. The label is what results, tables and
    TensorBoard runs are named by (``mtgym.naming.policy_labels``: a ``module:factory``
    policy's own ``name``).

    Args:
        args: the parsed options: ``policy`` (a list, or None) and ``reference`` (a
            ``--policy`` string or its label).

    Returns:
        (``--policy`` string -> label, in order; the reference's label or None).

    Raises:
        KeyError: an unknown policy name.
        ValueError: ``--reference`` is not a compared policy.
    """
    from mtgym.naming import policy_labels
    from mtgym.policy.registry import default_policies, make_policy

    specs = default_policies() if args.policy in (None, ["all"]) else args.policy
    specs = list(dict.fromkeys(specs))
    # fail fast on an unknown name, before any simulation
    labels = policy_labels(specs, {s: make_policy(s).name for s in specs})
    ref = labels.get(args.reference, args.reference)
    if ref is not None and ref not in labels.values():
        raise ValueError(
            f"--reference {args.reference!r} is not among the compared policies: "
            f"{', '.join(labels.values())}"
        )
    return labels, ref


def _cmd_scenario(args: argparse.Namespace) -> int:
    """``mtgym scenario ACTION``: ``list``, ``schema``, ``validate`` or ``show``.

    ``list`` prints every preset (its file's description; a preset whose data files are
    absent is listed too) and every code scenario (its docstring's first line). ``schema``
    prints ``ScenarioSpec``'s JSON Schema. ``validate`` loads a file with every check of
    ``load_scenario`` and, with ``--build``, builds its instance for ``--seed``. ``show``
    prints a preset or a file as YAML with every default filled in.

    Args:
        args: the parsed options: ``action``; ``target`` (``validate``: a file path;
            ``show``: a preset name or a ``.yaml``/``.yml``/``.json`` file), ``build``,
            ``seed`` and ``allow_large`` (``validate``).

    Returns:
        0.

    Raises:
        ScenarioError: the file does not validate (every problem listed).
        KeyError: ``show`` of a name that is neither a preset nor an existing file.
    """
    from pathlib import Path

    import yaml

    from mtgym.scenario.load import load_scenario
    from mtgym.scenario.registry import BUILTIN, PRESETS_DIR, preset_names
    from mtgym.scenario.schema import ScenarioSpec

    console = Console()
    if args.action == "list":
        table = Table(title="scenarios")
        table.add_column("name")
        table.add_column("source")
        table.add_column("description")
        for name in preset_names():
            f = PRESETS_DIR / f"{name}.yaml"
            if f.is_file():
                spec = load_scenario(f, check=False)  # (lists presets whose data is absent)
                table.add_row(name, f"preset ({f.name})", spec.description)
            else:
                table.add_row(
                    name, "built in (code)", (BUILTIN[name].__doc__ or "").strip().splitlines()[0]
                )
        console.print(table)
        return 0
    if args.action == "schema":
        print(json.dumps(ScenarioSpec.model_json_schema(), indent=2))
        return 0
    if args.action == "validate":
        spec = load_scenario(args.target, allow_large=args.allow_large)
        if args.build:
            from mtgym.scenario.build import SpecGenerator

            target = Path(args.target)
            inst = SpecGenerator(spec, target.resolve().parent, target)(args.seed)
            size = f"{inst.num_nodes} nodes, {inst.num_jobs} jobs"
            console.print(f"[green]ok[/] {args.target}: {spec.name} ({size})")
        else:
            console.print(f"[green]ok[/] {args.target}: {spec.name}")
        return 0
    # show
    f = PRESETS_DIR / f"{args.target}.yaml"
    target = Path(args.target)
    if target.suffix in (".yaml", ".yml", ".json") and target.is_file():
        f = target
    if not f.is_file():
        raise KeyError(
            f"unknown scenario {args.target!r}; known presets: {', '.join(preset_names())}"
        )
    spec = load_scenario(f, check=False)
    print(f"# {f}")
    print(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
    return 0


def _cmd_data(args: argparse.Namespace) -> int:
    """``mtgym data list`` (the sources table, at least 120 columns wide) or ``mtgym data
    fetch NAME --to DIR`` (prints the verified file's path).

    Args:
        args: the parsed options: ``action``; for ``fetch``, ``name``, ``to``,
            ``no_verify`` and ``force`` (``mtgym.datasets.fetch``).

    Returns:
        0; a failed fetch raises (``KeyError``, ``NoChecksumError``, ``DataError``,
        ``DownloadError``), each reported as one line with status 2.
    """
    from mtgym import datasets

    if args.action == "list":
        datasets.render_sources(Console(width=max(Console().width, 120)))
        return 0
    path = datasets.fetch(args.name, args.to, verify=not args.no_verify, force=args.force)
    print(path)
    return 0


def _cmd_policies(args: argparse.Namespace) -> int:
    """``mtgym policies``: one ``name<TAB>module:attr`` line per registered policy, by name."""
    from mtgym.policy.registry import available_policies

    for name, target in available_policies().items():
        print(f"{name}\t{target}")
    return 0


def _plugin_commands(sub: argparse._SubParsersAction) -> None:
    """Sub-commands registered as ``mtgym.commands`` entry points (``pyproject.toml``): the
    bridge, the scavenger and the reproductions of this package, ``train``/``compare`` of
    ``agents``, and any other package's. This module imports none of them.

    Each entry point is a function that takes ``sub`` and adds its parsers. One whose
    package is not installed (``ImportError`` on load) is skipped with a warning on stderr;
    the other commands stay available.

    Args:
        sub: the top-level sub-parsers of ``build_parser``.
    """
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group="mtgym.commands"), key=lambda e: e.name):
        try:
            ep.load()(sub)
        except ImportError as exc:  # an optional package that is not installed
            print(f"warning: commands from {ep.value} unavailable: {exc}", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (every subcommand has --help).

    Sub-commands: ``run``, ``info``, ``evaluate``, ``scenario``, ``data`` (this module),
    ``benchmark`` (``mtgym.benchmark.cli``), ``tune`` (``mtgym.tuning.cli``), ``results``
    (``mtgym.results.cli``), ``dataset`` (``mtgym.dataset.cli``), those of the
    ``mtgym.commands`` entry points, and ``policies``. Each sets ``func``, the handler
    ``dispatch`` calls with the parsed namespace.
    """
    p = argparse.ArgumentParser(
        prog="mtgym",
        description="Simulate malleable DL training on scavenged idle supercomputer nodes.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_run(sub)
    _add_info(sub)
    _add_evaluate(sub)
    _add_scenario(sub)
    _add_data(sub)

    from mtgym.benchmark.cli import add as add_benchmark

    add_benchmark(sub)  # the generalisation suite (mtgym.benchmark)
    from mtgym.tuning.cli import add as add_tune

    add_tune(sub)  # baselines tuned per scenario (mtgym.tuning)
    from mtgym.tuning.probe import add as add_probe

    add_probe(sub)  # the recorded references checked on a wider grid (mtgym.tuning.probe)
    from mtgym.results.cli import add as add_results

    add_results(sub)  # the results registry: generated tables (mtgym.results)
    from mtgym.dataset.cli import add as add_dataset

    add_dataset(sub)  # offline-RL datasets of policies' episodes (mtgym.dataset)
    from mtgym.leaderboard.cli import add as add_leaderboard

    # the leaderboard and its submission check; importing mtgym.leaderboard also registers
    # its `leaderboard` renderer for `mtgym results render` (docs/leaderboard.md's block)
    add_leaderboard(sub)

    _plugin_commands(sub)  # bridge, scavenge, reproduce, train, compare, ...

    pol = sub.add_parser("policies", help="list the registered policies")
    pol.set_defaults(func=_cmd_policies)
    return p


def _add_run(sub: argparse._SubParsersAction) -> None:
    """``mtgym run``: one episode of a policy, its metrics.

    Options: ``--scenario``, ``--allow-large``, ``--seed`` (default 0), ``--policy``
    (default ``equal-share``), ``--decision-interval S``, ``--debug``, ``--json``.
    """
    r = sub.add_parser("run", help="simulate a scenario with a policy and print the metrics")
    _scenario_args(r)
    r.add_argument("--seed", type=seed_int, default=0, help="random seed (default: %(default)s)")
    r.add_argument(
        "--policy", default="equal-share", help="registered policy name (default: %(default)s)"
    )
    r.add_argument(
        "--decision-interval",
        type=decision_interval,
        default=None,
        metavar="S",
        help=f"decide every S seconds (>= {MIN_DECISION_INTERVAL_S:g}) instead of at every event",
    )
    r.add_argument("--debug", action="store_true", help="check every invariant after each step")
    r.add_argument("--json", action="store_true", help="print the metrics as JSON")
    r.set_defaults(func=_cmd_run)


def _add_info(sub: argparse._SubParsersAction) -> None:
    """``mtgym info``: describe a scenario's instance."""
    i = sub.add_parser("info", help="describe a scenario's instance")
    _scenario_args(i)
    i.add_argument("--seed", type=seed_int, default=0, help="random seed (default: %(default)s)")
    i.set_defaults(func=_cmd_info)


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    """``mtgym evaluate``: policies on the same seeds, tables and results.

    Options: ``--scenario``, ``--allow-large``, ``--policy`` (repeatable; none: all but
    ``*-milp``), ``--seeds`` (default 10), ``--seed`` (the first, default 0),
    ``--reference``, ``--out DIR``, ``--decision-interval S``, ``--no-progress``,
    ``--no-bound`` (skip the hindsight bound), ``--backend``, ``--address``, and the
    registry's ``--record NAME``, ``--results-dir DIR`` and ``--force``.
    """
    e = sub.add_parser(
        "evaluate",
        help="run policies on the same seeds; tables (normalised throughput first), "
        "results.json/.md, TensorBoard",
    )
    _scenario_args(e)
    e.add_argument(
        "--policy",
        action="append",
        help="registered policy name, or module:factory for your own (docs/policies.md; "
        "reported under its name); repeat for several; 'all' (default) = every registered one "
        "except the slow node-level '*-milp' variants and those that need an argument "
        "(rllib-agent:RUN)",
    )
    e.add_argument(
        "--seeds",
        type=positive_int,
        default=10,
        help="number of seeds, >= 1; every policy runs the same instances (default: %(default)s)",
    )
    e.add_argument(
        "--reference",
        default=None,
        metavar="POLICY",
        help="policy the others are compared with, seed by seed (default: freetrain when compared, else the first)",
    )
    e.add_argument("--seed", type=seed_int, default=0, help="first seed (default: %(default)s)")
    e.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="write DIR/results.json, DIR/results.md, DIR/tradeoff.png, DIR/tb/<policy>/ and "
        "the result file DIR/result.json[.gz]",
    )
    e.add_argument(
        "--decision-interval",
        type=decision_interval,
        default=None,
        metavar="S",
        help=f"decide every S seconds (>= {MIN_DECISION_INTERVAL_S:g})",
    )
    e.add_argument("--no-progress", action="store_true", help="no progress bar (nor lines)")
    e.add_argument(
        "--resume",
        action="store_true",
        help="with --out: play only the episodes a killed run of the same command did not "
        "finish (OUT/episodes.jsonl; mtgym.benchmark.journal); local backend",
    )
    e.add_argument(
        "--no-bound",
        action="store_true",
        help="skip each seed's hindsight bound (columns HB and 'of HB': docs/metrics.md)",
    )
    add_backend_options(
        e, "run episodes here, or one Ray task per (policy, seed) (pip install -e .[ray])"
    )
    from mtgym.results.cli import add_record_options

    add_record_options(e)  # --record NAME, --results-dir, --force (docs/results-registry.md)
    e.set_defaults(func=_cmd_evaluate)


def _add_scenario(sub: argparse._SubParsersAction) -> None:
    """``mtgym scenario``: validate, list, show scenario files; their JSON Schema.

    Every action parser, and the ``scenario`` parser itself, dispatches to
    ``_cmd_scenario``, which branches on ``action``.
    """
    sc = sub.add_parser(
        "scenario", help="validate, list, show scenario files; export the JSON Schema"
    )
    sc_sub = sc.add_subparsers(dest="action", required=True, metavar="ACTION")
    v = sc_sub.add_parser("validate", help="check a scenario file (exit 2 with the problems)")
    v.add_argument("target", metavar="PATH", help="scenario file (YAML or JSON)")
    v.add_argument(
        "--build",
        action="store_true",
        help="also build its instance (reads the data files; plain validate checks the schema, "
        "names, limits, that data paths exist and the memory estimate)",
    )
    v.add_argument(
        "--seed", type=seed_int, default=0, help="seed for --build (default: %(default)s)"
    )
    v.add_argument("--allow-large", action="store_true", help=_ALLOW_LARGE_HELP)
    sc_sub.add_parser("list", help="the shipped presets and built-in scenarios")
    sh = sc_sub.add_parser("show", help="print a preset or file, with every default filled in")
    sh.add_argument("target", metavar="NAME", help="preset name or scenario file")
    sc_sub.add_parser("schema", help="print the JSON Schema of scenario files (for editors)")
    for p_ in (sc, *sc_sub.choices.values()):
        p_.set_defaults(func=_cmd_scenario)


def _add_data(sub: argparse._SubParsersAction) -> None:
    """``mtgym data``: list the public data sets, fetch one (``mtgym.datasets``).

    ``fetch NAME --to DIR`` takes ``--no-verify`` (accept a source with no recorded
    sha256) and ``--force`` (download even over a verified copy).
    """
    d = sub.add_parser("data", help="the public data sets mtgym reads: list them, fetch one")
    d_sub = d.add_subparsers(dest="action", required=True, metavar="ACTION")
    d_sub.add_parser("list", help="known sources with URL, licence and size")
    f = d_sub.add_parser("fetch", help="download one source, verify its checksum, save it")
    f.add_argument("name", help="source name (see `mtgym data list`)")
    f.add_argument("--to", required=True, metavar="DIR", help="folder to save into (created)")
    f.add_argument(
        "--no-verify",
        action="store_true",
        help="accept a source that has no recorded sha256 (a recorded one is still checked)",
    )
    f.add_argument("--force", action="store_true", help="download even if a verified copy exists")
    for p_ in (d, *d_sub.choices.values()):
        p_.set_defaults(func=_cmd_data)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mtgym`` and ``python -m mtgym``; returns the exit status.

    The arguments are kept as ``args.argv``: a result file records the command line
    (``mtgym.results.cli.argv_of``).

    Args:
        argv: the arguments without the program name; None reads ``sys.argv[1:]``.

    Returns:
        The handler's status (0; 1 for ``mtgym results render --check`` with a differing
        block), or 2 for an expected error, printed as one line
        (``mtgym.command.dispatch``). A usage error exits through argparse (SystemExit 2).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
