"""Write the reproduction report: ``report.md``, ``report.json`` and per-experiment raw JSON.

``report.json`` is a list of objects with exactly the keys ``experiment``, ``metric``,
``paper``, ``mtgym``, ``note`` and ``verdict`` (gains and efficiencies as fractions, e.g.
0.42; ``null`` where the paper gives no value; the verdict by ``common.VERDICT_RULE``).
``report.md`` has the same rows as a table, the wall time of every experiment, and each
experiment's detail section with its figures.

The layout of report.md: a header (date, host, Python version, quick or full mode, data
folder), ``common.VERDICT_RULE``, a wall-time table (one line per experiment, titled by
``TITLES``), the results table (``rows_table``: every row of every experiment, with its
verdict; ``not reproduced`` in bold) and the experiments' sections in run order. The files
written here are written atomically (``mtgym.core.io``): an interrupted run leaves no half
file.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mtgym.reproduce.common import ROW_KEYS, VERDICT_RULE, ExperimentResult, Row

TITLES = {
    "freetrain": "FreeTrain / BFTrainer (arXiv 2106.12091) on the Summit replay",
    "malletrain": "MalleTrain (arXiv 2404.15668) vs FreeTrain, unknown scaling curves",
    "pal": "PAL / PM-First (arXiv 2408.11919, hal-uw/blox-pal) on Sia-Philly",
}


def json_safe(x: Any) -> Any:
    """Recursively make ``x`` JSON-serialisable (NaN/inf -> None, numpy -> Python).

    Dict keys become strings, tuples become lists, numpy arrays nested lists, ``Path`` a
    string; anything else is returned as is (``json`` then decides).

    Args:
        x: an experiment's raw details (``ExperimentResult.raw``), any nesting.
    """
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, np.ndarray):
        return json_safe(x.tolist())
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return None if (math.isnan(v) or math.isinf(v)) else v
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, Path):
        return str(x)
    return x


def _fmt(v: float | None, unit: str) -> str:
    """A table value: ``"12.3 %"`` for a fraction, ``"1,234.5 s"`` for ``unit="s"``, else n/a.

    Args:
        v: the value; None or NaN prints ``n/a``.
        unit: ``Row.unit``: ``"s"`` or (anything else) a fraction.
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if unit == "s":
        return f"{v:,.1f} s"
    return f"{100.0 * v:.1f} %"


def _cell(text: str) -> str:
    """``text`` safe in a markdown table cell: ``|`` escaped, newlines made spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


def rows_table(rows: Sequence[Row]) -> str:
    """The markdown table of report rows.

    Columns: experiment, metric, paper, mtgym, verdict, note (``Row.full_note``); values
    printed by each row's ``unit``, a ``not reproduced`` verdict in bold.

    Args:
        rows: the rows, printed in this order.
    """
    lines = [
        "| experiment | metric | paper | mtgym | verdict | note |",
        "| --- | --- | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        v = r.verdict
        shown = f"**{v}**" if v == "not reproduced" else v
        lines.append(
            f"| {r.experiment} | {_cell(r.metric)} | {_fmt(r.paper, r.unit)} | "
            f"{_fmt(r.mtgym, r.unit)} | {shown} | {_cell(r.full_note)} |"
        )
    return "\n".join(lines)


def write_report(
    results: Sequence[ExperimentResult], out_dir: Path, *, data_dir: Path | None = None
) -> tuple[Path, Path]:
    """Write ``report.md``, ``report.json`` and ``<experiment>_results.json`` into ``out_dir``.

    ``<experiment>_results.json`` holds ``{"experiment", "quick", "wall_s"}`` plus the
    experiment's ``raw`` dict, made JSON-safe (``json_safe``). The mode is "quick" when any
    experiment ran quick.

    Args:
        results: the experiments' results, in run order.
        out_dir: the output folder (created if missing).
        data_dir: the data folder, named in report.md's header when given.

    Returns:
        The paths of ``report.md`` and ``report.json``.

    Raises:
        AssertionError: a row's JSON object does not have exactly ``ROW_KEYS``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [r for res in results for r in res.rows]
    objs = [r.as_dict() for r in rows]
    assert all(tuple(o) == ROW_KEYS for o in objs)
    pj = out_dir / "report.json"
    from mtgym.core.io import atomic_write_json, atomic_write_text

    atomic_write_json(pj, objs, allow_nan=False)
    for res in results:
        raw = {"experiment": res.name, "quick": res.quick, "wall_s": res.wall_s, **res.raw}
        atomic_write_json(
            out_dir / f"{res.name}_results.json", json_safe(raw), indent=1, allow_nan=False
        )
    mode = "quick (reduced sizes)" if any(r.quick for r in results) else "full"
    lines = [
        "# mtgym reproduction report",
        "",
        f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')} on {platform.node() or 'this machine'} "
        f"(Python {platform.python_version()}); mode: **{mode}**"
        + (f"; data: `{data_dir}`" if data_dir is not None else "")
        + ".",
        "",
        "Gains and efficiencies are fractions shown as percentages; `paper` is the value the "
        "paper or its artifact reports (n/a: none). `report.json` holds the same rows.",
        "",
        VERDICT_RULE,
        "",
        "## Wall time",
        "",
        "| experiment | mode | wall time |",
        "| --- | --- | ---: |",
    ]
    for res in results:
        lines.append(
            f"| {TITLES.get(res.name, res.name)} | {'quick' if res.quick else 'full'} | "
            f"{res.wall_s:,.1f} s |"
        )
    lines += ["", "## Results", "", rows_table(rows), ""]
    for res in results:
        lines += [*res.sections, ""]
    pm = out_dir / "report.md"
    atomic_write_text(pm, "\n".join(lines))
    return pm, pj
