"""Load, validate and build scenario files; find presets by name.

``load_scenario(path)`` returns a ``ScenarioSpec`` or raises ``ScenarioError`` whose message
names the file, the field path, the bad value and what is allowed (no traceback needed).
``resolve_generator(name_or_path)`` accepts a built-in name (code or a preset under
``scenarios/``) or a path, and returns a seeded generator carrying the episode defaults.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mtgym.errors import MtgymError
from mtgym.generate.base import Generator
from mtgym.generate.instance import Instance
from mtgym.scenario.schema import EpisodeSpec, ScenarioSpec

REPO = Path(__file__).resolve().parents[2]
PRESETS_DIR = REPO / "scenarios"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ScenarioError(MtgymError, ValueError):
    """A scenario file is malformed; the message says where and how to fix it."""


def data_dir() -> Path:
    """The real-data folder: ``$MTGYM_DATA``, else ``../shared/data`` beside the repository."""
    env = os.environ.get("MTGYM_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


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
    try:
        data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ScenarioError(
            f"{path}: not valid {'JSON' if path.endswith('.json') else 'YAML'}: {exc}"
        ) from None
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
    data = parse_text(p.read_text(encoding="utf-8"), str(p))
    try:
        return ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_format_errors(str(p), exc)) from None


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


@dataclass(frozen=True)
class SpecGenerator:
    """A generator built from a ``ScenarioSpec``; ``episode`` holds the env defaults."""

    spec: ScenarioSpec
    base_dir: Path

    @property
    def name(self) -> str:
        """The scenario's name."""
        return self.spec.name

    @property
    def episode(self) -> EpisodeSpec:
        """Environment defaults."""
        return self.spec.episode

    def __call__(self, seed: int) -> Instance:
        """Build the instance for ``seed``."""
        from mtgym.scenario.build import build_generator

        return build_generator(self.spec, self.base_dir)(seed)


def preset_names() -> list[str]:
    """Names of the shipped presets (``scenarios/*.yaml``) and of the code scenarios."""
    from mtgym.scenarios import BUILTIN

    files = sorted(p.stem for p in PRESETS_DIR.glob("*.yaml")) if PRESETS_DIR.is_dir() else []
    return sorted(set(files) | set(BUILTIN))


def resolve_generator(name_or_path: str | Path) -> Generator:
    """A built-in name, a preset name, or a scenario file path -> its generator."""
    from mtgym.scenarios import BUILTIN

    s = str(name_or_path)
    p = Path(s)
    if p.suffix in (".yaml", ".yml", ".json") and p.exists():
        return SpecGenerator(load_scenario(p), p.resolve().parent)
    preset = PRESETS_DIR / f"{s}.yaml"
    if s in BUILTIN:
        return BUILTIN[s]()
    if preset.is_file():
        return SpecGenerator(load_scenario(preset), PRESETS_DIR)
    raise KeyError(
        f"unknown scenario {s!r}; give a scenario file path or one of: {', '.join(preset_names())}"
    )
