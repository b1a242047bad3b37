"""Read and validate scenario files (text -> ``ScenarioSpec``); expand data paths.

``load_scenario(path)`` returns a ``ScenarioSpec`` or raises ``ScenarioError`` whose message
names the file, the field path, the bad value and what is allowed (no traceback needed).
Building a generator from a spec is ``mtgym.scenario.build``; finding a scenario by name is
``mtgym.scenario.registry``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mtgym.core.paths import data_dir
from mtgym.scenario.safe_yaml import ScenarioError, parse_bounded, read_bounded
from mtgym.scenario.schema import ScenarioSpec

__all__ = ["ScenarioError", "load_scenario", "parse_text", "resolve_path"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _format_errors(path: str, err: ValidationError) -> str:
    lines = [f"{path}: {err.error_count()} problem(s)"]
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        value = e.get("input")
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field (remove it or check its spelling)"
        lines.append(f"  {loc}: {msg}; got {shown}")
    return "\n".join(lines)


def parse_text(text: str, path: str) -> dict[str, Any]:
    """YAML or JSON text -> a mapping (ScenarioError on syntax errors)."""
    data = parse_bounded(text, path)  # size, alias and depth limits (safe_yaml)
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{path}: the top level must be a mapping (name, generator, ...); "
            f"got {type(data).__name__}"
        )
    return data


def load_scenario(path: str | Path) -> ScenarioSpec:
    """Read and validate a scenario file."""
    p = Path(path)
    if not p.is_file():
        raise ScenarioError(f"{p}: no such scenario file")
    try:
        text = read_bounded(p)
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read: {exc.strerror or exc}") from None
    data = parse_text(text, str(p))
    try:
        return ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_format_errors(str(p), exc)) from None
    except RecursionError:  # (parse_bounded caps the depth; a last guard)
        raise ScenarioError(f"{p}: nesting too deep") from None


def resolve_path(value: str, base: Path) -> Path:
    """Expand ``${VAR}`` (``MTGYM_DATA`` defaults to the data folder) and make it absolute."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name == "MTGYM_DATA":
            return str(data_dir())
        if name not in os.environ:
            raise ScenarioError(f"path {value!r} uses ${{{name}}}, which is not set")
        return os.environ[name]

    p = Path(_VAR.sub(sub, value)).expanduser()
    return p if p.is_absolute() else (base / p)
