"""``mtgym leaderboard``: rank the registry's full-test-split results, or check a
submission (``--check FILE``). The ranking is ``mtgym.leaderboard.board``'s, the checks
``mtgym.leaderboard.submission``'s; ``CONTRIBUTING.md`` says how to submit a policy.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mtgym.results import store


def add(sub: argparse._SubParsersAction) -> None:
    """Register ``leaderboard`` on the ``mtgym`` sub-parsers.

    Options: ``--results-dir DIR`` (the registry folder: ranked, or with ``--check`` the
    one the submission's reference rows are cross-checked with), ``--markdown`` (print
    markdown instead of a rich table) and ``--check FILE`` (validate one submission
    instead).

    Args:
        sub: the ``mtgym`` parser's sub-parsers object.
    """
    p = sub.add_parser(
        "leaderboard",
        help="rank every result file in results/ that played the full test split; "
        "--check FILE validates a submission",
        description="Ranks every policy of the registry's benchmark result files that played "
        "the full test split (every scenario, seeds 9000-9009) on the current scenarios and "
        "tuning records, by suite score, with IQMs, share of the hindsight bound, JCT of "
        "common jobs, jobs done, decision time and, for learned policies, their training. "
        "With --check FILE, validates FILE as a submission instead and explains each "
        "refusal in one line (CONTRIBUTING.md).",
    )
    p.add_argument(
        "--results-dir",
        default=None,
        metavar="DIR",
        help=f"the registry folder (default: ${store.ENV_VAR}, else ./{store.DEFAULT_DIR})",
    )
    p.add_argument("--markdown", action="store_true", help="print the table as markdown")
    p.add_argument(
        "--check",
        default=None,
        metavar="FILE",
        help="validate FILE as a submission: exit 0 when accepted, 1 listing the reasons "
        "(its reference rows are cross-checked with the --results-dir registry)",
    )
    p.set_defaults(func=_cmd_leaderboard)


def _check(path: str, registry: str | None = None) -> int:
    """``--check FILE``: print the refusals (or the acceptance) and what the reference rows
    were cross-checked with (``note:``); 0 accepted, 1 refused.

    Args:
        path: the submitted result file.
        registry: ``--results-dir`` (the registry to cross-check with; None: the default).
    """
    from mtgym.leaderboard.submission import check_file

    print(
        f"checking {path}: split, seeds, scenario, tuning and code hashes, references, "
        "episodes, reference rows against the registry, aggregates"
    )
    notes: list[str] = []
    reasons = check_file(path, registry=registry, notes=notes)
    for line in notes:
        print(f"note: {line}")
    for line in reasons:
        print(f"refused: {line}")
    if reasons:
        print(f"{path}: refused ({len(reasons)} reason(s))")
        return 1
    print(
        f"{path}: accepted (the full test split, current hashes and code, the recorded "
        "references, every episode, aggregates agree)"
    )
    return 0


def _print_rich(header: list[str], rows: list[list[str]], notes: list[str]) -> None:
    """The table through rich (wrapping to the terminal), then the notes."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title="mtgym leaderboard: the full test split", show_lines=False)
    for k, h in enumerate(header):
        t.add_column(h, justify="right" if k in (0, 5, 6, 7) else "left", overflow="fold")
    for r in rows:
        t.add_row(*r)
    console = Console()
    console.print(t)
    for n in notes:
        console.print(n, markup=False, highlight=False)


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    """Handler of ``mtgym leaderboard``.

    Args:
        args: ``results_dir``, ``markdown``, ``check``.

    Returns:
        0; with ``--check``, 1 when the file is refused.
    """
    from mtgym.leaderboard.board import collect, markdown, notes, table

    if args.check is not None:
        return _check(args.check, args.results_dir)
    folder = store.results_dir(args.results_dir)
    entries, left = collect(Path(folder))
    files = len({e.source for e in entries}) > 1
    if not entries:
        what = "no result file in" if Path(folder).is_dir() else "no registry folder"
        print(f"{what} {folder}: nothing played the full test split on the current scenarios")
    elif args.markdown:
        print("\n".join(markdown(entries, files=files)))
    else:
        _print_rich(*table(entries, files=files), notes(entries))
    if entries and not files:
        print(f"from {entries[0].source}")
    for line in left:
        print(f"left out: {line}")
    return 0
