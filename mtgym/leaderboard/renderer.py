"""The ``leaderboard`` kind of the results registry's marker blocks: the ranked table of a
full-test-split benchmark result (``docs/leaderboard.md`` is rendered with it).

It lives here, not in ``mtgym.results.renderers``, because ranking needs the benchmark's
split and scoring while ``mtgym.benchmark`` imports the registry; ``mtgym.leaderboard``
registers it there on import (``mtgym.results.renderers.register_renderer``).
"""

from __future__ import annotations

from mtgym.results.schema import ResultFile


def leaderboard(result: ResultFile, options: dict[str, str]) -> list[str]:
    """The ``leaderboard`` table of a ``benchmark`` result: its entries ranked, with the
    leaderboard's notes (``mtgym.leaderboard.board.markdown``), as ``mtgym leaderboard
    --markdown`` prints a registry folder holding only that file.

    Args:
        result: the block's result file.
        options: the marker's other options (none is read).

    Raises:
        ValueError: not a benchmark result, or not one of the full test split (the first
            reason of ``mtgym.leaderboard.submission.full_split_problems``).
    """
    from mtgym.leaderboard.board import entries_of, markdown, rank
    from mtgym.leaderboard.submission import full_split_problems

    if result.kind != "benchmark":
        raise ValueError(f"needs a benchmark result, got a {result.kind!r} one")
    if why := full_split_problems(result):
        raise ValueError(f"not a full test-split benchmark: {why[0]}")
    return markdown(rank(entries_of(result, "")))
