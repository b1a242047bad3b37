"""Read and validate scenario files (text -> ``ScenarioSpec``); expand data paths.

``load_scenario(path)`` returns a ``ScenarioSpec`` or raises ``ScenarioError`` whose message
names the file, the field path, the bad value and what is allowed (no traceback needed).
Building a generator from a spec is ``mtgym.scenario.build``; finding a scenario by name is
``mtgym.scenario.registry``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mtgym.scenario.paths import problems_message
from mtgym.scenario.safe_yaml import ScenarioError, parse_bounded, read_bounded
from mtgym.scenario.schema import ScenarioSpec

__all__ = ["ScenarioError", "load_scenario", "parse_text"]


_FIELD_MSG = re.compile(r"^Value error, ([A-Za-z_][A-Za-z0-9_]*): ")


def _field_path(loc: tuple[Any, ...], data: Any) -> list[str]:
    """The pydantic error location as the file's field path: the tags pydantic inserts for
    tagged unions (``generator.synthetic.cluster``) are dropped by walking the data.
    """
    out: list[str] = []
    cur = data
    for part in loc:
        if isinstance(cur, dict) and part not in cur and cur.get("kind") == part:
            continue  # a union tag, not a key of the file
        if part == "[key]":
            continue  # (the key itself is the last part already)
        out.append(str(part))
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            cur = cur[part]
        else:
            cur = None
    return out


def _format_errors(path: str, err: ValidationError, data: Any = None) -> str:
    """Pydantic's errors as ``problems_message`` lines: ``field.path: message; got VALUE``.

    A model validator's message that starts with a field name is pinned to that field
    and its value; an unknown field gets a spelling hint; values are cut at 80 characters.

    Args:
        path: The file, for the header.
        err: The validation error.
        data: The parsed file, to drop union tags from the field paths.
    """
    lines = []
    for e in err.errors():
        parts = _field_path(e["loc"], data)
        value = e.get("input")
        msg = e["msg"]
        m = _FIELD_MSG.match(msg)
        if m and isinstance(value, dict) and m.group(1) in value:
            # a model validator's message names the field: point at it and show its value
            parts.append(m.group(1))
            value = value[m.group(1)]
            msg = msg[m.end() :]
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e["type"] == "extra_forbidden":
            msg = "unknown field (remove it or check its spelling)"
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        lines.append(f"{'.'.join(parts) or '(top level)'}: {msg}; got {shown}")
    return problems_message(path, lines)


def parse_text(text: str, path: str) -> dict[str, Any]:
    """YAML or JSON text -> a mapping (ScenarioError on syntax errors).

    Args:
        text: The file's text.
        path: The file's name: a ``.json`` name is parsed as JSON, anything else as YAML;
            also named in errors.

    Raises:
        ScenarioError: a syntax error, an alias or anchor, too deep or too large a text
            (``mtgym.scenario.safe_yaml``), or a top level that is not a mapping.
    """
    data = parse_bounded(text, path)  # size, alias and depth limits (safe_yaml)
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{path}: the top level must be a mapping (name, generator, ...); "
            f"got {type(data).__name__}"
        )
    return data


def load_scenario(
    path: str | Path, *, check: bool = True, allow_large: bool = False
) -> ScenarioSpec:
    """Read and validate a scenario file.

    With ``check`` (the default), also the checks of ``mtgym.scenario.check``: data paths
    exist and are readable, and the estimated build memory is within its ceiling (unless
    ``allow_large``).

    Args:
        path: The scenario file (YAML, or JSON when its name ends in ``.json``).
        check: Also run the file-system and memory checks; False validates the text
            only (``mtgym scenario list``/``show`` on presets whose data is absent).
        allow_large: Accept an estimated build above ``check.MAX_BUILD_BYTES``.

    Raises:
        ScenarioError: the file is missing, unreadable, not UTF-8, too large, malformed,
            or fails validation or a check; the message lists every problem found.
    """
    p = Path(path)
    if not p.is_file():
        raise ScenarioError(f"{p}: no such scenario file")
    try:
        text = read_bounded(p)
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read: {exc.strerror or exc}") from None
    data = parse_text(text, str(p))
    try:
        spec = ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_format_errors(str(p), exc, data)) from None
    except RecursionError:  # (parse_bounded caps the depth; a last guard)
        raise ScenarioError(f"{p}: nesting too deep") from None
    if check:
        from mtgym.scenario.check import check_spec

        check_spec(spec, p, allow_large=allow_large)
    return spec
