"""Run a parsed CLI command: expected failures become one line on stderr and exit status 2;
and the arguments the CLIs share (``decision_interval``, ``add_backend_options``).

Shared by ``mtgym`` (``mtgym.cli``), ``mtgym benchmark`` and the sub-command packages that
have their own entry (``python -m mtgym.bridge``), so none of them imports another's CLI.

Expected failures are the errors bad input can cause: mtgym's own (``ScenarioError``,
``ConfigError``, ``DataError``, ...), ``KeyError`` (an unknown name), ``ValueError``
(pydantic's ``ValidationError`` among them), ``OSError`` (a file), ``MemoryError`` (a
build too large for this machine), ``OverflowError`` and ``RecursionError``. Anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import math
import sys

from mtgym.core.errors import MtgymError
from mtgym.core.limits import MIN_DECISION_INTERVAL_S

#: The exception types ``dispatch`` reports as one line (exit status 2).
EXPECTED = (MtgymError, KeyError, ValueError, OSError, MemoryError, OverflowError, RecursionError)


def error_line(exc: BaseException) -> str:
    """The message of an expected failure, without a traceback.

    A ``KeyError`` gives its message without the quotes ``str`` would add; a
    ``MemoryError`` suggests a smaller scenario; a ``RecursionError`` blames the input's
    nesting; an ``OSError`` with a file name reads ``FILE: reason``. Otherwise ``str(exc)``,
    or the type's name when that is empty.

    Args:
        exc: one of ``EXPECTED``'s types (any exception works).
    """
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, MemoryError):
        return f"out of memory ({exc or 'no detail'}); try a smaller scenario"
    if isinstance(exc, RecursionError):
        return f"input nested too deeply ({exc})"
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc) or type(exc).__name__


def dispatch(args: argparse.Namespace) -> int:
    """Run ``args.func(args)``; expected errors become a message on stderr and status 2.

    The line is ``error: <error_line(exc)>``, printed plainly (not through rich, whose
    markup would swallow ``[brackets]`` in the message). Exceptions outside ``EXPECTED``
    propagate with their traceback: they are bugs.

    Args:
        args: a namespace from a parser whose sub-commands set ``func``.

    Returns:
        The handler's status as an int, or 2 after an expected error.
    """
    try:
        return int(args.func(args))
    except EXPECTED as exc:
        print(f"error: {error_line(exc)}", file=sys.stderr)  # plain: may contain [brackets]
        return 2


def decision_interval(text: str) -> float:
    """Argparse type: a finite interval in seconds, >= ``MIN_DECISION_INTERVAL_S`` (1 ms).

    Args:
        text: the option's value as typed.

    Raises:
        argparse.ArgumentTypeError: not a number, not finite, or below the minimum.
    """
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(v) and v >= MIN_DECISION_INTERVAL_S):
        raise argparse.ArgumentTypeError(
            f"{text} s: the decision interval must be finite and >= {MIN_DECISION_INTERVAL_S:g} s"
        )
    return v


def add_backend_options(parser: argparse.ArgumentParser, backend_help: str) -> None:
    """``--backend local|ray`` (``backend_help`` says what one Ray task runs) and
    ``--address``; ``check_backend`` refuses an address without Ray.

    Args:
        parser: the sub-command's parser (``evaluate``, ``benchmark``, ...).
        backend_help: the help text of ``--backend``; ``local`` is the default.
    """
    parser.add_argument("--backend", choices=["local", "ray"], default="local", help=backend_help)
    parser.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="with --backend ray (or train --algo rllib-ppo): join this Ray cluster ('auto', "
        "HOST:PORT, ray://HOST:10001); default: a private local one",
    )


def check_backend(args: argparse.Namespace) -> None:
    """``ValueError`` when ``--address`` is given without ``--backend ray``.

    Args:
        args: a namespace with ``address`` and ``backend`` (``add_backend_options``).
    """
    if args.address and args.backend != "ray":
        raise ValueError("--address needs --backend ray")
