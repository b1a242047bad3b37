"""Shared test fixtures: where the real data lives, and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mtgym.core.paths import data_dir

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The real data sets: ``$MTGYM_DATA`` or ``../shared/data`` beside the clone."""
    return data_dir()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "README.md").exists():
        pytest.skip(f"real data not found at {path} (set MTGYM_DATA)")
    return path


@pytest.fixture(autouse=True, scope="session")
def _sb3_log_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """SB3 models learning without a log folder make ``/tmp/SB3-<date>`` ones: keep them
    in pytest's temporary directory instead.
    """
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3"))
