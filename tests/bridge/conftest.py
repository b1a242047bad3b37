"""Bridge test fixtures: every process a test starts must be gone when it ends."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from bridge_helpers import pids_mentioning


@pytest.fixture
def bridge_dir(tmp_path: Path):
    """A folder for a replay; fails the test if any process mentioning it survives."""
    d = tmp_path / "bridge"
    d.mkdir()
    yield d
    left = pids_mentioning(str(d))
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    time.sleep(0.1)
    assert not left, f"processes left running: {left}"
