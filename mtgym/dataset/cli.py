"""``mtgym dataset collect`` and ``mtgym dataset list``: Minari datasets of policies' episodes.

``collect`` plays ``--episodes N`` episodes of ``--policy`` on ``--scenario`` (seeds
``--seed-start`` onwards, the train split's by default; a test seed is refused), plus
uniformly random actions and the scenario's reference on the same seeds (the normalisation's
0 and 1), and writes the dataset ``mtgym/<scenario>/<policy>-v0`` where Minari looks (``--root`` or
``$MINARI_DATASETS_PATH``). ``list`` prints mtgym's datasets there. Needs the ``offline``
extra (``minari``), which ``make`` installs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mtgym.backends import BACKENDS
from mtgym.command import decision_interval
from mtgym.dataset.episode import DECISION_INTERVAL_S, EnvSettings


def add(sub: argparse._SubParsersAction) -> None:
    """Register ``dataset`` (``collect``, ``standard``, ``from-trace``, ``list``) on the
    ``mtgym`` sub-command parser.
    """
    from mtgym.benchmark.splits import TRAIN_SEED_MIN

    d = sub.add_parser(
        "dataset",
        help="offline-RL datasets (Minari) of any policy's episodes: collect, list",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    d_sub = d.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = d_sub.add_parser(
        "collect",
        help="play a policy's episodes and write them as a Minari dataset",
        description=__doc__,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    c.add_argument("--policy", required=True, help="registered policy string")
    c.add_argument("--scenario", default="default", help="scenario name or file")
    c.add_argument("--episodes", type=int, default=4, help="episodes (one seed each)")
    c.add_argument(
        "--seed-start", type=int, default=TRAIN_SEED_MIN, help="first seed (train split's)"
    )
    _add_env_options(c, DECISION_INTERVAL_S, "seconds between decisions (the shipped recipe's)")
    c.add_argument("--reward", default=None, help="env reward (default: the env's)")
    c.add_argument("--reference", default=None, help="policy scoring 1 (default: recorded)")
    _add_workers_options(c)
    _add_where_options(c)
    c.add_argument("--force", action="store_true", help="replace a dataset of the same id")
    c.set_defaults(func=_cmd_collect)
    _add_standard(d_sub)
    _add_from_trace(d_sub)
    ls = d_sub.add_parser("list", help="mtgym's datasets where Minari looks")
    ls.add_argument("--root", type=Path, default=None, help="datasets folder (else Minari's)")
    ls.set_defaults(func=_cmd_list)


def _add_standard(d_sub: argparse._SubParsersAction) -> None:
    """``dataset standard``: the expert, medium, random and mixed sets of train scenarios."""
    from mtgym.benchmark.splits import TRAIN_SEED_MIN
    from mtgym.dataset.standard import MEDIUM
    from mtgym.results import cli as results_cli

    s = d_sub.add_parser(
        "standard",
        help="the standard set: expert, medium, random and mixed datasets of train scenarios",
        description=(
            "Play the scenario's reference (expert), the shipped agent (medium) and uniformly "
            "random actions (random) on the same train seeds, assemble a mixed set from "
            "them, and write the four as mtgym/<scenario>/<quality>-v<version> "
            "(mtgym.dataset.standard); --record writes the table's result file."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    s.add_argument(
        "--scenario", nargs="+", default=["default-family"], help="scenario names or files"
    )
    s.add_argument(
        "--episodes",
        type=int,
        nargs="+",
        default=[100],
        help="episodes per set: one number for every scenario, or one per scenario",
    )
    s.add_argument(
        "--seed-start", type=int, default=TRAIN_SEED_MIN, help="first seed (train split's)"
    )
    s.add_argument("--medium", default=MEDIUM, help="the medium policy (the shipped agent)")
    s.add_argument(
        "--clairvoyant",
        action="store_true",
        help="also the clairvoyant set (the planner told the whole episode)",
    )
    _add_workers_options(s)
    _add_where_options(s)
    results_cli.add_record_options(s)  # its --force also replaces existing datasets
    s.set_defaults(func=_cmd_standard)


def _add_from_trace(d_sub: argparse._SubParsersAction) -> None:
    """``dataset from-trace``: bridge traces (and their replays) as a dataset."""
    t = d_sub.add_parser(
        "from-trace",
        help="mtgym bridge record traces (and what their replays measured) as a dataset",
        description=(
            "One episode per trace, in the env of its scenario and seed, the trace's node "
            "sets encoded into the action mode; with --replay, each replay's measured "
            "samples in the infos (mtgym.dataset.trace). The id is "
            "mtgym/<scenario>/trace-<policy>-v<version>."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    t.add_argument("traces", nargs="+", metavar="TRACE", help="mtgym bridge record traces")
    t.add_argument(
        "--replay",
        nargs="+",
        default=None,
        metavar="DIR",
        help="each trace's mtgym bridge replay folder, in the same order ('-': none)",
    )
    own = f"seconds between decisions (default: the trace's own, else {DECISION_INTERVAL_S:g})"
    _add_env_options(t, None, own)
    t.add_argument("--reference", default=None, help="policy scoring 1 (default: recorded)")
    t.add_argument("--workers", type=int, default=1, help="processes for the references")
    _add_where_options(t)
    t.add_argument("--force", action="store_true", help="replace a dataset of the same id")
    t.set_defaults(func=_cmd_from_trace)


def _add_env_options(p: argparse.ArgumentParser, interval: float | None, help_: str) -> None:
    """The env a dataset is made in: ``--action-mode``, ``--obs-layout``,
    ``--decision-interval`` (default ``interval``, described by ``help_``).
    """
    from mtgym.core.names import ACTION_MODES
    from mtgym.env.layout import OBS_LAYOUTS

    p.add_argument("--action-mode", default="shares", choices=ACTION_MODES)
    p.add_argument("--obs-layout", default="dict", choices=OBS_LAYOUTS)
    p.add_argument(
        "--decision-interval", type=decision_interval, default=interval, metavar="S", help=help_
    )


def _add_workers_options(p: argparse.ArgumentParser) -> None:
    """Where the episodes are played: ``--workers`` and ``--backend``."""
    p.add_argument("--workers", type=int, default=1, help="processes or Ray CPUs")
    p.add_argument("--backend", choices=BACKENDS, default="local")


def _add_where_options(p: argparse.ArgumentParser) -> None:
    """Where the dataset goes and its id's version: ``--root`` and ``--version``."""
    p.add_argument("--root", type=Path, default=None, help="datasets folder (else Minari's)")
    p.add_argument("--version", type=int, default=0, help="the id's version")


def _minari() -> None:
    try:
        import minari  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "mtgym dataset needs minari: pip install -e '.[offline]' (make installs it)"
        ) from exc


def _cmd_collect(args: argparse.Namespace) -> int:
    from mtgym.dataset.collect import collect
    from mtgym.dataset.store import dataset_id, local_datasets, use_root, write_dataset

    _minari()
    if args.episodes < 1:
        raise ValueError(f"--episodes must be at least 1, not {args.episodes}")
    use_root(args.root)
    settings = EnvSettings(
        action_mode=args.action_mode,
        obs_layout=args.obs_layout,
        decision_interval_s=args.decision_interval,
        reward=args.reward,
    )
    ds_id = dataset_id(args.scenario, args.policy, args.version)
    if ds_id in local_datasets() and not args.force:
        raise ValueError(f"dataset {ds_id} exists; --force replaces it")
    seeds = range(args.seed_start, args.seed_start + args.episodes)
    got = collect(
        args.scenario,
        args.policy,
        seeds,
        settings,
        workers=args.workers,
        backend=args.backend,
        reference=args.reference,
        progress=lambda line: print(line, file=sys.stderr),
    )
    ds = write_dataset(
        ds_id,
        args.scenario,
        args.policy,
        got,
        settings,
        force=args.force,
    )
    import minari

    returns = [e.episode_return for e in got.episodes]
    score = float(minari.get_normalized_score(ds, sum(returns) / len(returns)))
    repaired = sum(e.repaired_share for e in got.episodes) / len(got.episodes)
    print(
        f"{ds_id}: {ds.total_episodes} episodes, {ds.total_steps} steps; mean return "
        f"{sum(returns) / len(returns):.4f} (random actions {got.ref_min_score:.4f}, "
        f"{got.reference} {got.ref_max_score:.4f}): normalised score {score:.3f}; "
        f"repaired steps {repaired:.1%}; {got.wall_s:.1f} s"
    )
    return 0


def _cmd_standard(args: argparse.Namespace) -> int:
    import time

    from mtgym.dataset.standard import StandardOptions, build_standard
    from mtgym.dataset.store import use_root
    from mtgym.results import cli as results_cli
    from mtgym.results import hashes, store

    _minari()
    scenarios = list(args.scenario)
    counts = list(args.episodes)
    if len(counts) == 1:
        counts = counts * len(scenarios)
    if len(counts) != len(scenarios) or min(counts) < 1:
        raise ValueError(
            f"--episodes takes one positive count or one per scenario ({len(scenarios)}), "
            f"not {' '.join(map(str, args.episodes))}"
        )
    provenance = results_cli.start(args)  # (a taken --record name: refused before any episode)
    use_root(args.root)
    t0 = time.perf_counter()
    rows, refs, seeds_all = [], {}, []
    options = StandardOptions(
        medium=args.medium,
        workers=args.workers,
        backend=args.backend,
        version=args.version,
        force=args.force,
        clairvoyant=args.clairvoyant,
    )
    for scenario, n in zip(scenarios, counts, strict=True):
        seeds = list(range(args.seed_start, args.seed_start + n))
        seeds_all += seeds
        entries = build_standard(
            scenario, seeds, EnvSettings(), options, lambda line: print(line, file=sys.stderr)
        )
        rows += [e.row() for e in entries]
        refs[scenario] = {e.quality: e.policy for e in entries}
    for r in rows:
        print(
            f"{r['dataset_id']}: {r['episodes']} episodes, {r['steps']} steps, "
            f"{r['size_bytes'] / 2**20:.0f} MiB; collected in {r['collect_s']:.1f} s, written "
            f"in {r['write_s']:.1f} s; mean return {r['mean_return']:.4f}, normalised score "
            f"{r['normalized_score']:.3f}, repaired steps {r['repaired_share']:.1%}"
        )
    result = store.build(
        "dataset_standard",
        provenance,
        seeds=sorted(set(seeds_all)),
        scenarios=hashes.scenario_entries(scenarios),
        wall_s=time.perf_counter() - t0,
        rows=rows,
        aggregates={"settings": EnvSettings().kwargs(""), "policies": refs},
    )
    results_cli.save(args, result, None)
    return 0


def _cmd_from_trace(args: argparse.Namespace) -> int:
    from mtgym.dataset.store import dataset_id, use_root, write_dataset
    from mtgym.dataset.trace import convert

    _minari()
    use_root(args.root)
    replays = args.replay or ["-"] * len(args.traces)
    given = args.decision_interval is not None
    settings = EnvSettings(
        action_mode=args.action_mode,
        obs_layout=args.obs_layout,
        decision_interval_s=args.decision_interval if given else DECISION_INTERVAL_S,
    )
    got, collected = convert(
        args.traces,
        [None if r == "-" else r for r in replays],
        settings,
        interval_given=given,
        reference=args.reference,
        workers=args.workers,
    )
    first = got[0]
    policy = f"trace-{first.policy}"
    ds_id = dataset_id(first.scenario, policy, args.version)
    ds = write_dataset(ds_id, first.scenario, policy, collected, first.settings, force=args.force)
    import minari
    import numpy as np

    returns = [g.episode.episode_return for g in got]
    measured = sum(int(np.isfinite(g.episode.infos["measured_samples"][-1]).any()) for g in got)
    print(
        f"{ds_id}: {ds.total_episodes} episodes ({measured} with measured samples), "
        f"{ds.total_steps} steps; normalised score "
        f"{float(minari.get_normalized_score(ds, sum(returns) / len(returns))):.3f}; "
        f"repaired steps {sum(g.episode.repaired_share for g in got) / len(got):.1%}"
    )
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from mtgym.dataset.store import local_datasets, use_root

    _minari()
    use_root(args.root)
    found = local_datasets()
    if not found:
        print("no mtgym dataset found (mtgym dataset collect writes one)")
        return 0
    for ds_id, meta in found.items():
        print(
            f"{ds_id}: {meta.get('total_episodes')} episodes, {meta.get('total_steps')} "
            f"steps, {meta.get('algorithm_name')}; ref scores "
            f"{meta.get('ref_min_score')}..{meta.get('ref_max_score')}"
        )
    return 0
