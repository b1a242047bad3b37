"""The one-screen summary of ``scripts/gpu_check.sh``: replays of one trace, side by side.

``python -m mtgym.bridge.check agent=DIR torchrun=DIR calibrated=DIR [--smi FILE]`` reads
each replay folder's ``report.json`` (and ``report-calibrated.json`` for the per-job
prediction errors where there is one) and prints, per run: crashes, failed jobs, samples,
start and rescale times, reclaim deadlines, and the workers' GPU utilisation and peak
memory; then the calibrated run's error per job and node count; then what ``nvidia-smi``
sampled over the whole check (``--smi``: its CSV log). The last line is ``gpu_check: OK``
or ``gpu_check: FAILED (<why>)``; the exit status is 0 or 1.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _f(v: Any, fmt: str = ".2f") -> str:
    """``format(v, fmt)``, or ``n/a`` for None and NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return format(v, fmt)


def _costs(rep: dict[str, Any], kind: str) -> list[float]:
    """Every measured cost (s) of one transition kind, over all jobs of a report."""
    return [c for jb in rep["jobs"].values() for c in jb["rescale"][kind]["measured_s"]]


def _span(vals: list[float]) -> str:
    """``mean (min-max)`` to 0.1, the value alone for one, ``n/a`` for none."""
    if not vals:
        return "n/a"
    if len(vals) == 1:
        return f"{vals[0]:.1f}"
    return f"{statistics.fmean(vals):.1f} ({min(vals):.1f}-{max(vals):.1f})"


def run_row(name: str, folder: Path) -> tuple[list[str], list[str]]:
    """One run's cells and its problems (crashes, failed jobs, missed deadlines).

    Args:
        name: the run's label (``NAME`` of ``NAME=DIR``).
        folder: the replay folder (``report.json`` and ``replay.json`` must exist).

    Returns:
        The row of ``summary``'s table (launch mode and start methods, crashes, failed
        jobs, samples, start/up/down costs, reclaims, GPU utilisation and memory), and one
        phrase per problem, prefixed with ``name``.
    """
    rep = json.loads((folder / "report.json").read_text())
    meta = json.loads((folder / "replay.json").read_text())
    tot = rep["totals"]
    methods = sorted({j.get("start_method", "?") for j in meta["jobs"].values()})
    problems = [f"{name}: {f}" for f in rep.get("failures", [])]
    if tot["crashes"]:
        problems.append(f"{name}: {tot['crashes']} crash(es)")
    if tot["reclaim_deadlines_met"] is False:
        problems.append(f"{name}: a reclaim deadline was missed")
    util = tot.get("gpu_util_mean")
    mem = tot.get("gpu_mem_peak_gib")
    cells = [
        name,
        f"{meta.get('launch', '?')}/{','.join(methods)}",
        str(tot["crashes"]),
        str(tot.get("failed_jobs", 0)),
        f"{tot['measured_samples']:,}",
        _span(_costs(rep, "start")),
        _span(_costs(rep, "up")),
        _span(_costs(rep, "down")),
        f"{tot['reclaims']} ({tot['reclaim_deadlines_met']})",
        _f(util, ".0f"),
        _f(mem, ".1f"),
    ]
    return cells, problems


def error_rows(folder: Path) -> list[list[str]]:
    """Per job and node count: predicted, measured, error from ``report-calibrated.json``.

    Each job ends with a ``total`` row (samples over the replay).

    Args:
        folder: the replay folder.

    Returns:
        Rows of text cells (job, torch model, nodes, predicted, measured, error); ``[]``
        when the folder has no calibrated report.
    """
    p = folder / "report-calibrated.json"
    if not p.exists():
        return []
    rep = json.loads(p.read_text())
    rows = []
    for j, jb in rep["jobs"].items():
        for w in jb["world_sizes"].values():
            rows.append(
                [
                    j,
                    jb["torch_model"],
                    str(w["nodes"]),
                    _f(w["predicted"], ",.0f"),
                    _f(w["measured"], ",.0f"),
                    _f(w["error"], "+.1%"),
                ]
            )
        s = jb["samples"]
        rows.append([j, jb["torch_model"], "total", _f(s["predicted"], ",.0f"),
                     f"{s['measured']:,}", _f(s["error"], "+.1%")])  # fmt: skip
    return rows


def smi_summary(path: Path) -> str | None:
    """Mean and max utilisation and the largest memory per GPU from an ``nvidia-smi
    --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits -l 1`` log.

    The last three fields of a line are read (so a timestamp column in front is fine);
    lines that do not parse are skipped. One line per second is assumed for the duration.
    "While busy" averages the samples above 0 %.

    Args:
        path: the log.

    Returns:
        One phrase per GPU joined by ``; ``, or None when the file is missing or has no
        sample.
    """
    if not path.exists():
        return None
    per: dict[str, list[tuple[float, float]]] = {}
    for line in path.read_text().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) < 3:
            continue
        try:
            per.setdefault(parts[-3], []).append((float(parts[-2]), float(parts[-1])))
        except ValueError:
            continue
    if not per:
        return None
    out = []
    for idx, vals in sorted(per.items()):
        busy = [u for u, _ in vals if u > 0]
        out.append(
            f"GPU {idx}: util mean {statistics.fmean(u for u, _ in vals):.0f} % over "
            f"{len(vals)} s ({statistics.fmean(busy) if busy else 0:.0f} % while busy), "
            f"max {max(u for u, _ in vals):.0f} %, memory max {max(m for _, m in vals):,.0f} MiB"
        )
    return "; ".join(out)


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Aligned text lines: the first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                      enumerate(zip(r, widths, strict=True))) for r in rows]  # fmt: skip


def summary(runs: Sequence[tuple[str, Path]], *, smi: Path | None = None) -> tuple[str, bool]:
    """The summary text and whether the check passed.

    A run without ``report.json`` is a problem, not an error. The check passes when no run
    has a problem (a crash, a failed job, a missed reclaim deadline, a missing report).

    Args:
        runs: ``(name, replay folder)`` pairs, in display order.
        smi: an ``nvidia-smi`` CSV log (``smi_summary``), or None.

    Returns:
        The text (the last line ``gpu_check: OK`` or ``gpu_check: FAILED (...)``) and the
        verdict.
    """
    head = ["run", "launch", "crashes", "failed", "samples", "start s", "up s", "down s",
            "reclaims (met)", "GPU util %", "GPU mem GiB"]  # fmt: skip
    rows, problems = [head], []
    for name, folder in runs:
        if not (folder / "report.json").exists():
            problems.append(f"{name}: no report ({folder})")
            continue
        cells, probs = run_row(name, folder)
        rows.append(cells)
        problems += probs
    lines = ["runs (start/up/down: seconds, mean (min-max); GPU: rank 0, mean over the run)"]
    lines += ["  " + x for x in _table(rows)]
    for name, folder in runs:
        err = error_rows(folder)
        if err:
            lines.append(f"calibrated prediction of run '{name}' (error = predicted/measured - 1)")
            lines += ["  " + x for x in _table([["job", "model", "nodes", "predicted",
                                                 "measured", "error"], *err])]  # fmt: skip
    s = smi_summary(smi) if smi is not None else None
    if s:
        lines.append(f"nvidia-smi over the whole check: {s}")
    ok = not problems
    lines.append("gpu_check: OK" if ok else f"gpu_check: FAILED ({'; '.join(problems)})")
    return "\n".join(lines), ok


def main(argv: Sequence[str] | None = None) -> int:
    """Print the summary; exit 1 when a run failed.

    Args:
        argv: ``NAME=DIR ... [--smi FILE]`` (None: ``sys.argv[1:]``); an item without
            ``=`` is a usage error (status 2).

    Returns:
        0 when the check passed, else 1.
    """
    p = argparse.ArgumentParser(prog="python -m mtgym.bridge.check", description=__doc__)
    p.add_argument("runs", nargs="+", metavar="NAME=DIR", help="replay folders, in order")
    p.add_argument("--smi", type=Path, default=None, help="nvidia-smi CSV log")
    args = p.parse_args(argv)
    runs = []
    for item in args.runs:
        name, sep, folder = item.partition("=")
        if not sep:
            p.error(f"expected NAME=DIR, got {item!r}")
        runs.append((name, Path(folder)))
    text, ok = summary(runs, smi=args.smi)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
