"""``mtgym reproduce {freetrain,malletrain,pal,all} --out DIR [--quick]``.

``add_reproduce_command(subparsers)`` registers the subcommand on the ``mtgym`` parser (it
is the ``reproduce`` entry point of the ``mtgym.commands`` group in ``pyproject.toml``, which
``mtgym.cli`` loads); its handler (``args.func``) returns the exit status: 0 on success, 2
when the data is missing or an option is invalid.

The experiments run in one pool of worker processes (``common.Workers``), forked before any
progress bar starts; ``report.write_report`` then writes ``report.md``, ``report.json`` and
one ``<experiment>_results.json`` per experiment into ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXPERIMENTS = ("freetrain", "malletrain", "pal")
CHOICES = (*EXPERIMENTS, "all")


@dataclass(frozen=True)
class ExperimentOptions:
    """Options of single experiments (``--draw``, ``--seeds``, ``--completion-at-round``).

    Each reaches only the experiment it names; the others ignore it.

    Attributes:
        draw: PAL's headline per-GPU draw: ``"artifact"`` or ``"seed:N"``.
        seeds: MalleTrain's number of paired seeds, 0..seeds-1 (None: its sizes' own, 20
            or 3 with ``--quick``); at least 2 (``malletrain.sizes_for``).
        completion_at_round: PAL records completions at the next round boundary, as its
            artifact does.
    """

    draw: str = "artifact"
    seeds: int | None = None
    completion_at_round: bool = False


def run_experiments(
    names: Sequence[str],
    out_dir: Path,
    *,
    quick: bool = False,
    data_dir: Path | None = None,
    workers: int | None = None,
    progress: bool = True,
    options: ExperimentOptions | None = None,
) -> list[Any]:
    """Run the named experiments, write the report into ``out_dir``, return their results.

    Each experiment checks its data files before running anything, so a missing file stops
    the run at that experiment (the report is then not written).

    Args:
        names: experiments of ``EXPERIMENTS``, run in this order.
        out_dir: folder for ``report.md``, ``report.json``, the raw JSON and the figures
            (created if missing; existing files of the same names are replaced).
        quick: the reduced sizes of each experiment (``QUICK``): indicative numbers in
            minutes rather than hours.
        data_dir: the shared data folder; None: ``$MTGYM_DATA``, else ``../shared/data``
            beside the clone.
        workers: worker processes; None: the usable CPUs, at most 8
            (``common.default_workers``).
        progress: draw rich progress bars and print each experiment's wall time to stderr.
        options: the experiments' own options (the defaults when None).

    Returns:
        One ``common.ExperimentResult`` per name, in the order of ``names``.

    Raises:
        FileNotFoundError: a data file an experiment needs is missing.
        ValueError: an invalid option (a bad PAL draw, fewer than 2 MalleTrain seeds).
        KeyError: a name that is not in ``EXPERIMENTS``.
    """
    opt = options or ExperimentOptions()
    from mtgym.reproduce import freetrain, malletrain, pal
    from mtgym.reproduce.common import Workers, default_data_dir, default_workers
    from mtgym.reproduce.report import write_report

    modules = {"freetrain": freetrain, "malletrain": malletrain, "pal": pal}
    data = Path(data_dir) if data_dir is not None else default_data_dir()
    out = Path(out_dir)
    n = default_workers() if workers is None else max(1, int(workers))
    results = []
    with Workers(n) as pool:  # forked once, before any progress display
        for name in names:
            extra: dict[str, Any] = {}
            if name == "pal":
                extra = {"draw": opt.draw, "completion_at_round": opt.completion_at_round}
            if name == "malletrain" and opt.seeds is not None:
                extra["seeds"] = opt.seeds
            res = modules[name].run(
                data, out, quick=quick, workers=pool, progress=progress, **extra
            )
            results.append(res)
            if progress:
                print(f"{name}: {res.wall_s:.1f} s", file=sys.stderr)
    write_report(results, out, data_dir=data)
    return results


def _cmd_reproduce(args: argparse.Namespace) -> int:
    """Handler of ``mtgym reproduce``: run the experiments, print where the report is.

    ``prepare_out_dir`` creates ``--out`` and proves it writable before any episode
    (``OutDirError`` otherwise). Missing data and invalid options are printed as one
    ``error:`` line and give exit status 2.

    Args:
        args: the parsed options of ``add_reproduce_command``'s parser.

    Returns:
        The exit status: 0 on success, 2 on missing data or an invalid option.
    """
    from mtgym.core.io import prepare_out_dir

    names = EXPERIMENTS if args.experiment == "all" else (args.experiment,)
    prepare_out_dir(args.out)
    try:
        run_experiments(
            names,
            Path(args.out),
            quick=args.quick,
            data_dir=Path(args.data) if args.data else None,
            workers=args.workers,
            progress=not args.no_progress,
            options=ExperimentOptions(
                draw=args.draw, seeds=args.seeds, completion_at_round=args.completion_at_round
            ),
        )
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    print(f"wrote {out / 'report.md'} and {out / 'report.json'}")
    return 0


def add_reproduce_command(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``reproduce`` on an ``argparse`` subparsers object; returns its parser.

    Options: the positional experiment (``freetrain``, ``malletrain``, ``pal`` or ``all``),
    ``--out DIR`` (default ``runs/reproduce``), ``--quick``, ``--data DIR``,
    ``--workers N``, ``--draw``, ``--seeds N``, ``--completion-at-round`` and
    ``--no-progress``; the handler is stored as ``func``.

    Args:
        subparsers: the object ``ArgumentParser.add_subparsers`` returned.
    """
    p = subparsers.add_parser(
        "reproduce",
        help="re-run the papers' headline experiments (FreeTrain, MalleTrain, PAL) and report",
        description=(
            "Re-run the headline experiments of FreeTrain/BFTrainer, MalleTrain and PAL in "
            "mtgym and write DIR/report.md, DIR/report.json (experiment, metric, paper, mtgym, "
            "note) and PNG figures."
        ),
    )
    p.add_argument("experiment", choices=CHOICES, help="which experiment ('all' = every one)")
    p.add_argument(
        "--out",
        default="runs/reproduce",
        metavar="DIR",
        help="output folder (default: %(default)s)",
    )
    p.add_argument(
        "--quick", action="store_true", help="reduced sizes (node subset, short spans, fewer seeds)"
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help="the shared data folder (default: $MTGYM_DATA, else ../shared/data beside the clone)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes (default: the usable CPUs, at most 8)",
    )
    p.add_argument(
        "--draw",
        default="artifact",
        metavar="artifact|seed:N",
        help="PAL's headline per-GPU variability draw: the artifact's own (default) or the "
        "seed's stream; the report also shows the spread over other draws",
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=None,
        metavar="N",
        help="MalleTrain: paired seeds 0..N-1 (default 20, --quick 3)",
    )
    p.add_argument(
        "--completion-at-round",
        action="store_true",
        help="PAL: record each completion at the next round boundary, as the artifact does "
        "(default: at its exact time)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_reproduce)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry (``python -m mtgym.reproduce.cli``), the same as ``mtgym reproduce``.

    Args:
        argv: the command line after the program name; None: ``sys.argv[1:]``.

    Returns:
        The handler's exit status (0 on success, 2 on missing data or a bad option).
    """
    parser = argparse.ArgumentParser(prog="mtgym")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_reproduce_command(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
