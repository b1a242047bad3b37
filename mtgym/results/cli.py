"""The command-line side of the registry: the ``--record`` options every measuring command
shares (``add_record_options``, ``start``, ``save``; ``save_runs`` for commands built on
``mtgym.evaluate``), and ``mtgym results render``
(``add``).

A measuring command calls ``start`` before its first episode (it refuses a taken record
name then, not after hours of work, and captures the provenance with the load average the
run starts under), and ``save`` at the end: the result file goes into its ``--out`` folder
(``OUT/result.json[.gz]``) and, with ``--record NAME``, into the registry folder as
``NAME.json[.gz]`` (``mtgym.results.store``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtgym.results import store
from mtgym.results.schema import ResultFile


def add_record_options(parser: argparse.ArgumentParser) -> None:
    """``--record NAME``, ``--results-dir DIR`` and ``--force`` on a measuring command.

    Args:
        parser: the command's parser (``benchmark``, ``evaluate``, ``tune``, ...).
    """
    parser.add_argument(
        "--record",
        default=None,
        metavar="NAME",
        help="also copy the result file into the registry as NAME.json[.gz] "
        "(docs/results-registry.md); refused if NAME is taken, unless --force",
    )
    parser.add_argument(
        "--results-dir",
        default=None,
        metavar="DIR",
        help=f"the registry folder for --record (default: ${store.ENV_VAR}, else "
        f"./{store.DEFAULT_DIR})",
    )
    parser.add_argument(
        "--force", action="store_true", help="--record may replace an existing record"
    )


def argv_of(args: argparse.Namespace) -> list[str]:
    """The command's arguments after ``mtgym``: ``args.argv`` (set by ``mtgym.cli.main``),
    else ``sys.argv[1:]``.
    """
    argv = getattr(args, "argv", None)
    return list(argv) if argv is not None else sys.argv[1:]


def start(args: argparse.Namespace) -> dict[str, Any]:
    """Check ``--record`` and capture the provenance; call before any work.

    Args:
        args: the command's options, with ``record``, ``results_dir`` and ``force``
            (``add_record_options``).

    Returns:
        ``mtgym.results.provenance.capture``'s dict, for ``store.build``.

    Raises:
        ValueError, FileExistsError: as ``store.check_record``.
    """
    from mtgym.results.provenance import capture

    if args.record is not None:
        store.check_record(store.results_dir(args.results_dir), args.record, force=args.force)
    return capture(argv_of(args))


def save(args: argparse.Namespace, result: ResultFile, out: str | Path | None) -> list[Path]:
    """Write ``result`` to ``out/result.json[.gz]`` (when ``out`` is given) and, with
    ``--record NAME``, to the registry; prints one line per file written.

    Args:
        args: the command's options (``add_record_options``).
        result: the result file (``store.build``).
        out: the command's output folder; None: none.

    Returns:
        The paths written.
    """
    written = []
    if out is not None:
        written.append(store.write_result(result, Path(out) / store.RESULT_STEM))
    if args.record is not None:
        folder = store.results_dir(args.results_dir)
        written.append(store.record(result, folder, args.record, force=args.force))
    for p in written:
        print(f"result file: {p}", file=sys.stderr)  # a status line: tables stay on stdout
    return written


def save_runs(
    args: argparse.Namespace,
    kind: str,
    provenance: dict[str, Any],
    *,
    scenario: str,
    seeds: Sequence[int],
    runs: Sequence[Any],
    wall_s: float,
) -> list[Path]:
    """The result file of policies compared on one scenario (``mtgym evaluate``, and any
    command built on ``mtgym.evaluate``), written by ``save`` to ``args.out`` and the
    registry.

    Rows: one per episode (``mtgym.results.rows.policy_rows``); aggregates:
    ``results.json``'s content (``mtgym.evaluate.results_dict``, with ``args.reference``)
    without its ``per_seed`` rows, which are the file's rows.

    Args:
        args: the command's options: ``out``, ``reference`` and ``add_record_options``'.
        kind: the command's name (``evaluate``, ``compare``).
        provenance: ``start``'s dict, taken before the first episode.
        scenario: the scenario's name or file, as given.
        seeds: the seeds played.
        runs: the ``mtgym.evaluate.PolicyRun``s played (rows complete).
        wall_s: the wall seconds from the first episode's start.

    Returns:
        The paths written.
    """
    from mtgym.evaluate import results_dict
    from mtgym.results import hashes, rows

    summary = results_dict(runs, seeds, scenario, reference=getattr(args, "reference", None))
    for entry in summary["policies"].values():
        entry.pop("per_seed", None)
    result = store.build(
        kind,
        provenance,
        seeds=seeds,
        scenarios=hashes.scenario_entries([scenario]),
        wall_s=wall_s,
        rows=rows.policy_rows(scenario, runs),
        aggregates=summary,
    )
    return save(args, result, getattr(args, "out", None))


def add(sub: argparse._SubParsersAction) -> None:
    """Register ``results`` (with its action ``render``) on the ``mtgym`` sub-parsers.

    Args:
        sub: the ``mtgym`` parser's sub-parsers object.
    """
    r = sub.add_parser("results", help="the results registry: render the generated tables")
    r_sub = r.add_subparsers(dest="action", required=True, metavar="ACTION")
    rd = r_sub.add_parser(
        "render",
        help="rewrite every results block of README.md and docs/ from its result file",
        description="Every block between '<!-- results:begin NAME source=FILE kind=KIND -->' "
        "and '<!-- results:end NAME -->' in README.md and docs/**/*.md is rendered from FILE "
        "(relative to --root) by the renderer KIND (docs/results-registry.md).",
    )
    rd.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 listing every block that differs from its rendering",
    )
    rd.add_argument(
        "--root",
        default=".",
        metavar="DIR",
        help="the repository root: README.md, docs/ and the result files' paths are read "
        "from it (default: the current folder)",
    )
    for p_ in (r, *r_sub.choices.values()):
        p_.set_defaults(func=_cmd_results)


def _cmd_results(args: argparse.Namespace) -> int:
    """Handler of ``mtgym results render [--check]``.

    Args:
        args: the parsed options: ``action``, ``check``, ``root``.

    Returns:
        0; 1 with ``--check`` when a block differs or cannot be rendered (each listed on
        stdout).
    """
    from mtgym.results.render import check_tree, render_tree

    root = Path(args.root)
    if args.check:
        problems, n = check_tree(root)
        for line in problems:
            print(line)
        print(f"{n} results block(s) checked; {len(problems)} differ")
        return 1 if problems else 0
    changed, n = render_tree(root)
    for p in changed:
        print(f"rendered {p}")
    print(f"{n} results block(s) rendered; {len(changed)} file(s) changed")
    return 0
