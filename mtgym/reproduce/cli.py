"""``mtgym reproduce {freetrain,malletrain,pal,all} --out DIR [--quick]``.

``add_reproduce_command(subparsers)`` registers the subcommand on the ``mtgym`` parser; its
handler (``args.func``) returns the exit status: 0 on success, 2 when the data is missing.
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
    """Options of single experiments.

    Attributes:
        draw: PAL's headline per-GPU draw: ``"artifact"`` or ``"seed:N"``.
        seeds: MalleTrain's number of paired seeds (None: its sizes' own).
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

    ``options``: the experiments' own options (the defaults when None).
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
    """Register ``reproduce`` on an ``argparse`` subparsers object; returns its parser."""
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
    """Stand-alone entry (``python -m mtgym.reproduce.cli``), until the lead wires it in."""
    parser = argparse.ArgumentParser(prog="mtgym")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_reproduce_command(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
