"""Fixtures of the reader tests: write small CSV/JSON files into tmp_path."""

from __future__ import annotations

import gzip
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Writer = Callable[[str, str], Path]


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """``write(name, text)``: dedent ``text`` into ``tmp_path/name`` (gzip when ``.gz``)."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        data = textwrap.dedent(text).lstrip("\n").encode()
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        return path

    return _write
