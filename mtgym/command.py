"""Run a parsed CLI command: expected failures become one line on stderr and exit status 2.

Shared by ``mtgym`` (``mtgym.cli``) and the sub-command packages that have their own entry
(``python -m mtgym.bridge``), so none of them imports another's CLI.
"""

from __future__ import annotations

import argparse
import sys

from mtgym.core.errors import MtgymError


def dispatch(args: argparse.Namespace) -> int:
    """Run ``args.func(args)``; known errors become one line on stderr and exit status 2."""
    try:
        return int(args.func(args))
    except (MtgymError, KeyError, ValueError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"error: {msg}", file=sys.stderr)  # plain: messages may contain [brackets]
        return 2
