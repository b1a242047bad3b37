"""Where a scenario's data paths point, and how its problems are reported."""

from __future__ import annotations

import os
import re
from pathlib import Path

from mtgym.core.paths import data_dir
from mtgym.scenario.safe_yaml import ScenarioError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def problems_message(path: str | Path, problems: list[str]) -> str:
    """``FILE: field: why; got VALUE`` for one problem; a header and one line each for more."""
    if len(problems) == 1:
        return f"{path}: {problems[0]}"
    return "\n".join([f"{path}: {len(problems)} problems", *(f"  {x}" for x in problems)])


def resolve_path(value: str, base: Path) -> Path:
    """Expand ``${VAR}`` (``MTGYM_DATA`` defaults to the data folder) and make it absolute.

    ``~`` is expanded too. The path is not checked to exist (``mtgym.scenario.check``).

    Args:
        value: The path as written in the scenario file.
        base: The folder a relative path starts from (the file's folder).

    Raises:
        ScenarioError: ``${VAR}`` names a variable that is not set.
    """

    def sub(m: re.Match[str]) -> str:
        """The value of the ``${VAR}`` matched (``data_dir()`` for an unset MTGYM_DATA)."""
        name = m.group(1)
        if name == "MTGYM_DATA":
            return str(data_dir())
        if name not in os.environ:
            raise ScenarioError(f"path {value!r} uses ${{{name}}}, which is not set")
        return os.environ[name]

    p = Path(_VAR.sub(sub, value)).expanduser()
    return p if p.is_absolute() else (base / p)
