"""Scenario names -> generators: scenarios built in code, shipped presets, or files.

Presets are the YAML files in the repository's top-level ``scenarios/`` folder, their one
home. A wheel carries them as ``mtgym/scenarios/`` (``pyproject.toml`` maps the package
``mtgym.scenarios`` to that folder); a checkout or an editable install reads the folder
itself. Code scenarios need no file. ``get_generator(name_or_path)`` is the one entry point
of the env, the CLI and the scripts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mtgym.core.paths import CHECKOUT
from mtgym.generate.base import Generator
from mtgym.generate.default import default_generator
from mtgym.generate.family import DefaultFamily
from mtgym.generate.toy import LinearToy, TwoJobToy
from mtgym.scenario.build import SpecGenerator
from mtgym.scenario.load import load_scenario


def _presets_dir() -> Path:
    """Where the preset files are: installed from a wheel, or the checkout's folder."""
    installed = Path(__file__).resolve().parents[1] / "scenarios"
    if installed.is_dir():
        return installed
    return CHECKOUT / "scenarios"


#: The shipped preset files (``<name>.yaml``).
PRESETS_DIR = _presets_dir()

#: Scenarios built in code (no file needed).
BUILTIN: dict[str, Callable[[], Generator]] = {
    "default": default_generator,
    # the default randomised per seed: the benchmark's train split (mtgym.generate.family)
    "default-family": DefaultFamily,
    "toy-linear": LinearToy,
    "toy-two-jobs": TwoJobToy,
}


def preset_path(name: str) -> Path:
    """The file of the shipped preset ``name`` (it may not exist)."""
    return PRESETS_DIR / f"{name}.yaml"


def preset_names() -> list[str]:
    """Names of the shipped presets and of the code scenarios, sorted."""
    files = {p.stem for p in PRESETS_DIR.glob("*.yaml")} if PRESETS_DIR.is_dir() else set()
    return sorted(files | set(BUILTIN))


def get_generator(name_or_path: str | Path, *, allow_large: bool = False) -> Generator:
    """A built-in name, a preset name, or a scenario file path -> its seeded generator.

    ``KeyError`` lists the known names; a malformed file raises ``ScenarioError`` (also for
    missing data paths, and for an estimated build above ``check.MAX_BUILD_BYTES`` unless
    ``allow_large``).

    A path wins over a name when it ends in ``.yaml``, ``.yml`` or ``.json`` and exists;
    then built-in names, then presets. Preset files are loaded on every call.

    Args:
        name_or_path: A scenario name or a file path.
        allow_large: Accept an estimated build above ``check.MAX_BUILD_BYTES``.
    """
    s = str(name_or_path)
    p = Path(s)
    if p.suffix in (".yaml", ".yml", ".json") and p.exists():
        return SpecGenerator(load_scenario(p, allow_large=allow_large), p.resolve().parent, p)
    if s in BUILTIN:
        return BUILTIN[s]()
    preset = preset_path(s)
    if preset.is_file():
        return SpecGenerator(load_scenario(preset, allow_large=allow_large), PRESETS_DIR, preset)
    raise KeyError(
        f"unknown scenario {s!r}; give a scenario file path or one of: {', '.join(preset_names())}"
    )
