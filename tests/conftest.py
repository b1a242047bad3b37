"""Shared test fixtures: where the real data lives, and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """The real data sets: ``$MTGYM_SHARED_DATA`` or ``../shared/data`` beside the clone."""
    env = os.environ.get("MTGYM_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "README.md").exists():
        pytest.skip(f"real data not found at {path} (set MTGYM_SHARED_DATA)")
    return path
