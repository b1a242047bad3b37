"""Shared helpers of the readers: open text (gzip too), read CSV columns, parse them typed.

Every failure raises :class:`mtgym.core.errors.DataError`. Row numbers in errors are 1-based lines
of the file: the header is row 1 and the first data row is row 2 (exact for files without
quoted line breaks). Parsing is vectorised or a single ``map`` per column; the slow,
row-by-row scan only runs to locate a bad value.
"""

from __future__ import annotations

import contextlib
import csv
import gc
import gzip
import io
import math
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.core.errors import DataError

_GZIP_MAGIC = b"\x1f\x8b"
FIRST_DATA_ROW = 2
_TRUE = ("1", "True", "true", "TRUE")
_FALSE = ("0", "False", "false", "FALSE")
_BOOLS: dict[str, bool] = {**dict.fromkeys(_TRUE, True), **dict.fromkeys(_FALSE, False)}
BOOL_ALLOWED = "one of " + ", ".join(_TRUE + _FALSE)


def read_text(path: str | Path) -> str:
    """Read a whole text file as UTF-8; gzip is detected by its magic bytes.

    A UTF-8 byte-order mark is dropped (``utf-8-sig``), so files saved by spreadsheet
    programs read like the others.

    Args:
        path: the file, plain or gzip-compressed (whatever its name).

    Returns:
        The decoded text, line endings as in the file.

    Raises:
        DataError: the file is missing or unreadable (field ``path``), not valid gzip
            (field ``gzip``) or not UTF-8 (field ``encoding``).
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DataError(p, "path", str(p), f"an existing, readable file ({exc.strerror})") from exc
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise DataError(p, "gzip", str(exc), "a complete gzip stream") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.end]
        raise DataError(p, "encoding", bad, f"UTF-8 text (bad byte at offset {exc.start})") from exc


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many small lists are built."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(frozen=True)
class Table:
    """Raw text columns of one CSV file.

    Attributes:
        path: The file read.
        header: Column names, stripped of surrounding blanks.
        columns: Column name -> the column's raw strings (only the columns asked for).
        n_rows: Number of data rows.
    """

    path: Path
    header: tuple[str, ...]
    columns: dict[str, Sequence[str]]
    n_rows: int

    def has(self, name: str) -> bool:
        """Whether the file has column ``name``."""
        return name in self.columns

    def raw(self, name: str) -> Sequence[str]:
        """The raw strings of column ``name``."""
        return self.columns[name]

    def fail(self, name: str, i: int, allowed: str, value: Any = None) -> DataError:
        """Build the error for data row ``i`` (0-based) of column ``name``.

        Args:
            name: the column.
            i: the data row, 0-based; the error names file row ``i + FIRST_DATA_ROW``.
            allowed: what the value should have been, for the message.
            value: the value to show (default: the raw text of that cell).

        Returns:
            The error, for the caller to raise.
        """
        shown = self.columns[name][i] if value is None else value
        return DataError(self.path, name, shown, allowed, row=i + FIRST_DATA_ROW)


def read_table(
    path: str | Path,
    required: Sequence[str],
    optional: Sequence[str] = (),
    *,
    keep: Callable[[str], bool] | None = None,
    min_rows: int = 1,
) -> Table:
    """Read a CSV file and keep the columns needed.

    Args:
        path: CSV file, plain or gzip-compressed.
        required: Columns that must be present.
        optional: Columns kept when present.
        keep: Also keep every column whose name this returns True for.
        min_rows: Fewest data rows allowed.

    Returns:
        The kept columns as raw strings.

    Raises:
        DataError: missing or duplicated column, a row with the wrong number of fields, or
            fewer than ``min_rows`` rows.
    """
    p = Path(path)
    text = read_text(p)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        with _gc_paused():
            rows = list(reader)
    except csv.Error as exc:
        raise DataError(p, "csv", str(exc), "well-formed CSV", row=reader.line_num) from exc
    while rows and not rows[-1]:
        rows.pop()
    if not rows:
        raise DataError(p, "header", "", f"a header row with the columns {list(required)}", row=1)
    header = tuple(h.strip() for h in rows[0])
    _require(p, header, required)
    wanted = [*required, *(n for n in optional if n in header)]
    if keep is not None:
        wanted += [h for h in header if keep(h) and h not in wanted]
    for name in wanted:
        if header.count(name) > 1:
            raise DataError(p, name, "appears more than once", "each column once", row=1)
    body = rows[1:]
    width = len(header)
    if set(map(len, body)) - {width}:
        i = next(i for i, r in enumerate(body) if len(r) != width)
        raise DataError(
            p,
            "fields",
            f"{len(body[i])} fields",
            f"{width} fields, as in the header",
            row=i + FIRST_DATA_ROW,
        )
    if len(body) < min_rows:
        raise DataError(p, "rows", len(body), f"at least {min_rows} data row(s)")
    with _gc_paused():
        transposed = list(zip(*body, strict=True)) if body else [() for _ in header]
    columns = {name: transposed[header.index(name)] for name in wanted}
    return Table(p, header, columns, len(body))


def _require(path: Path, header: Sequence[str], required: Sequence[str]) -> None:
    """Raise for the first column of ``required`` missing from ``header``."""
    for name in required:
        if name not in header:
            raise DataError(
                path,
                name,
                f"missing (header: {', '.join(header)})",
                f"the required columns {list(required)}",
                row=1,
            )


def require(t: Table, required: Sequence[str]) -> None:
    """Raise a DataError naming the first column of ``required`` that ``t`` lacks."""
    _require(t.path, t.header, required)


def _first_bad(values: Sequence[str], convert: Callable[[str], Any]) -> int:
    """Index of the first value ``convert`` rejects (-1 when none)."""
    for i, s in enumerate(values):
        try:
            convert(s)
        except (ValueError, KeyError, OverflowError):
            return i
    return -1


def floats(t: Table, name: str, *, finite: bool = True) -> np.ndarray:
    """Column ``name`` as float64; with ``finite`` NaN and infinities are rejected.

    Args:
        t: the table read.
        name: a kept column.
        finite: reject ``nan`` and ``inf`` (which ``float`` parses).

    Returns:
        (n_rows,) float64.

    Raises:
        DataError: naming the first cell that is not a number (or not finite).
    """
    values = t.raw(name)
    allowed = "a finite number" if finite else "a number"
    try:
        out = np.fromiter(map(float, values), dtype=np.float64, count=len(values))
    except ValueError:
        raise t.fail(name, _first_bad(values, float), allowed) from None
    if finite:
        check(t, name, np.isfinite(out), allowed)
    return out


def ints(t: Table, name: str, dtype: type[np.integer] = np.int32) -> np.ndarray:
    """Column ``name`` as integers of ``dtype`` (text such as ``1.0`` is rejected).

    Args:
        t: the table read.
        name: a kept column.
        dtype: the numpy integer type of the result; values outside its range are rejected.

    Returns:
        (n_rows,) array of ``dtype``.

    Raises:
        DataError: naming the first cell that is not an integer in range.
    """
    values = t.raw(name)
    info = np.iinfo(dtype)
    allowed = f"an integer in [{info.min}, {info.max}]"
    try:
        wide = np.fromiter(map(int, values), dtype=np.int64, count=len(values))
    except (ValueError, OverflowError):
        raise t.fail(name, _first_bad(values, lambda s: np.int64(int(s))), allowed) from None
    check(t, name, (wide >= info.min) & (wide <= info.max), allowed)
    return wide.astype(dtype)


def bools(t: Table, name: str) -> np.ndarray:
    """Column ``name`` as bool, from 0/1/True/False (any of the usual spellings).

    Args:
        t: the table read.
        name: a kept column.

    Raises:
        DataError: naming the first cell not in ``BOOL_ALLOWED`` (blanks are not stripped).
    """
    values = t.raw(name)
    try:
        return np.fromiter(map(_BOOLS.__getitem__, values), dtype=bool, count=len(values))
    except KeyError:
        raise t.fail(name, _first_bad(values, _BOOLS.__getitem__), BOOL_ALLOWED) from None


def strs(t: Table, name: str, *, nonempty: bool = True) -> np.ndarray:
    """Column ``name`` as a numpy str array, blanks stripped; empty text rejected if asked.

    Args:
        t: the table read.
        name: a kept column.
        nonempty: reject a cell that is empty after stripping.

    Raises:
        DataError: naming the first empty cell (with ``nonempty``).
    """
    stripped = [s.strip() for s in t.raw(name)]
    if nonempty and not all(stripped):
        raise t.fail(name, stripped.index(""), "non-empty text")
    return np.array(stripped, dtype=str) if stripped else np.array([], dtype=str)


def check(t: Table, name: str, ok: np.ndarray, allowed: str) -> None:
    """Raise the error for the first row of column ``name`` where ``ok`` is False.

    Args:
        t: the table read.
        name: the column the check is about (its raw text is shown).
        ok: (n_rows,) bool, the rows that pass.
        allowed: what a value should be, for the message.
    """
    if not bool(np.all(ok)):
        raise t.fail(name, int(np.argmin(ok)), allowed)


def unique_check(t: Table, name: str, values: np.ndarray) -> None:
    """Raise when column ``name`` holds a value twice (names the second occurrence).

    Args:
        t: the table read.
        name: the column.
        values: the column's parsed values (so ``01`` and ``1`` count as one integer).
    """
    _, first = np.unique(values, return_index=True)
    if len(first) != len(values):
        dup = np.ones(len(values), dtype=bool)
        dup[first] = False
        raise t.fail(name, int(np.argmax(dup)), "each value once (it appears on an earlier row)")


def readonly(arr: np.ndarray) -> np.ndarray:
    """Mark ``arr`` read-only and return it."""
    arr.flags.writeable = False
    return arr


def is_number(x: object) -> bool:
    """Whether ``x`` is a finite real number from JSON (bool excluded)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
