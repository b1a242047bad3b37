"""Where the real data sets are: one environment variable, one default."""

from __future__ import annotations

import os
from pathlib import Path

#: The source checkout (``mtgym/core/paths.py`` -> the folder holding ``mtgym/``).
CHECKOUT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The real-data folder: ``$MTGYM_DATA``, else ``../shared/data`` beside the checkout.

    Only real-data presets, readers' tests and the reproductions need it; the default
    scenario needs no data. The folder is not checked to exist; ``${MTGYM_DATA}`` in a
    scenario file expands to it (``mtgym.scenario.paths.resolve_path``).
    """
    env = os.environ.get("MTGYM_DATA")
    return Path(env) if env else CHECKOUT.parent / "shared" / "data"
