"""Calibration: turn a replay's measurements into a job profile the simulator can use.

The calibration file (JSON, ``format: mtgym-calibration``, version 1) holds, per trace job,
the measured throughput table and rescale costs in the fields of
``mtgym.generate.workload.JobRow`` (``curve_nodes``/``curve_tput`` with the (0, 0) point,
``r_up_s``, ``r_down_s``, ``startup_s``), in *real* units: samples per wall-clock second and
wall-clock seconds. Node counts are simulator nodes (``workers_per_node`` real workers each).

Use it:

- ``job_rows(cal)`` -> ``list[JobRow]`` for ``build_jobs`` /
  ``mtgym.generate.uniform.uniform_instance``;
- ``write_bftrainer_csv(cal, path)`` writes the same jobs as a BFTrainer-format job table,
  which a scenario file reads with ``workload: {kind: table, path: calibration.csv}``;
- ``mtgym.bridge.report`` predicts a second replay with it (``--calibration``).

A job whose rescale costs were not measured (it never grew, say) gets the mean over the
other jobs of the replay (``"cost_source": "pooled"``); nothing measured at all leaves 0 and
says so (``"missing"``).
"""

from __future__ import annotations

import csv
import itertools
import json
import statistics
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mtgym.bridge.measure import Measurements
from mtgym.bridge.trace import Trace
from mtgym.core.errors import DataError
from mtgym.core.io import atomic_open, atomic_write_json
from mtgym.core.types import AppClass
from mtgym.generate.workload import JobRow
from mtgym.readers.bftrainer import JOB_COLUMNS

FORMAT = "mtgym-calibration"
VERSION = 1
COSTS = (("r_up_s", "up"), ("r_down_s", "down"), ("startup_s", "start"))


def calibrate(meas: Measurements, trace: Trace | None = None) -> dict[str, Any]:
    """The calibration of one replay (see module doc).

    Each job's entry has the ``JobRow`` fields (the trace's metadata where it has the job;
    ``max_nodes`` at least the largest node count measured), ``torch_model``, ``measured``
    (the figures behind each curve point), ``cost_samples`` (every cost measured, by kind),
    ``cost_source`` (``measured``, ``pooled`` or ``missing`` per cost field) and
    ``missing`` (cost fields, and ``curve`` when no throughput was measured).

    Args:
        meas: the replay's measurements.
        trace: the replayed trace (None: names, classes and bounds are guessed from the
            measurements).

    Returns:
        The calibration file's object (``write_calibration`` writes it).
    """
    pooled: dict[str, list[float]] = {k: [] for _, k in COSTS}
    for jm in meas.jobs.values():
        for _, kind in COSTS:
            pooled[kind] += jm.costs(kind)
    jobs: dict[str, Any] = {}
    for j, jm in meas.jobs.items():
        tj = trace.jobs.get(j) if trace is not None else None
        nodes = sorted(jm.throughput)
        entry: dict[str, Any] = {
            "name": jm.name or (tj.name if tj else j),
            "torch_model": jm.model,
            "model": tj.model if tj else jm.model,
            "app_class": tj.app_class if tj else "D",
            "min_nodes": tj.min_nodes if tj else (nodes[0] if nodes else 1),
            "max_nodes": max([tj.max_nodes if tj else 1, *nodes]),
            "submit_s": tj.submit_s if tj else 0.0,
            "curve_nodes": [0.0, *map(float, nodes)],
            "curve_tput": [0.0, *(jm.throughput[n].samples_per_s for n in nodes)],
            "measured": {
                str(n): {
                    "samples_per_s": jm.throughput[n].samples_per_s,
                    "seconds": jm.throughput[n].seconds,
                    "intervals": jm.throughput[n].intervals,
                    "world_size": jm.throughput[n].world_size,
                }
                for n in nodes
            },
            "cost_samples": {},
            "cost_source": {},
            "missing": [],
        }
        for field, kind in COSTS:
            own = jm.costs(kind)
            entry["cost_samples"][kind] = own
            if own:
                entry[field], entry["cost_source"][field] = statistics.fmean(own), "measured"
            elif pooled[kind]:
                entry[field], entry["cost_source"][field] = statistics.fmean(pooled[kind]), "pooled"
            else:
                entry[field], entry["cost_source"][field] = 0.0, "missing"
                entry["missing"].append(field)
        if not nodes:
            entry["missing"].append("curve")
        jobs[j] = entry
    return {
        "format": FORMAT,
        "version": VERSION,
        "units": {"throughput": "samples per wall-clock second", "costs": "wall-clock seconds"},
        "source": meas.out_dir,
        "time_scale": meas.time_scale,
        "workers_per_node": meas.workers_per_node,
        "trace": (
            {"scenario": trace.header.scenario, "policy": trace.header.policy}
            if trace is not None
            else None
        ),
        "jobs": jobs,
    }


def write_calibration(path: str | Path, cal: dict[str, Any]) -> Path:
    """Write a calibration file (JSON), atomically.

    Args:
        path: the file to write.
        cal: ``calibrate``'s answer.

    Returns:
        The path written.
    """
    return atomic_write_json(path, cal)


_Cost = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
_Count = Annotated[int, Field(strict=True, ge=1)]
_Point = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]


class CalibratedJob(BaseModel):
    """One job of a calibration file (real units: samples per wall second, wall seconds).

    Unknown keys are kept (``measured``, ``cost_samples``, ... are informational).
    Numbers are strict: ``1.0`` is not a node count and ``"1"`` not a number.

    Attributes:
        name: the job's name (non-empty).
        model: the simulator's model name.
        torch_model: the torch model the replay trained.
        app_class: PAL's class, ``"A"`` to ``"D"``.
        min_nodes: the fewest simulator nodes (>= 1).
        max_nodes: the most simulator nodes (>= 1; >= ``min_nodes`` is checked by
            ``read_calibration``).
        submit_s: submit time, seconds.
        curve_nodes: node counts of the throughput points, from 0, non-decreasing (checked
            by ``read_calibration``).
        curve_tput: samples per wall second at each point, >= 0.
        r_up_s: scale-up pause, wall seconds, >= 0.
        r_down_s: scale-down pause, wall seconds, >= 0.
        startup_s: start-from-0 pause, wall seconds, >= 0.
    """

    model_config = ConfigDict(extra="allow")

    name: Annotated[str, Field(strict=True, min_length=1)]
    model: str | None = None
    torch_model: str | None = None
    app_class: Literal["A", "B", "C", "D"] = "D"
    min_nodes: _Count = 1
    max_nodes: _Count = 1
    submit_s: Annotated[float, Field(strict=True, allow_inf_nan=False)] = 0.0
    curve_nodes: Annotated[list[_Point], Field(min_length=1)]
    curve_tput: Annotated[list[_Point], Field(min_length=1)]
    r_up_s: _Cost
    r_down_s: _Cost
    startup_s: _Cost


class CalibrationFile(BaseModel):
    """The calibration file's schema (``format: mtgym-calibration``, version 1).

    Attributes:
        format: ``"mtgym-calibration"``.
        version: 1.
        jobs: trace job id -> job.
        time_scale: the calibrated replay's time scale (> 0), informational.
        workers_per_node: real workers per simulator node of that replay.
    """

    model_config = ConfigDict(extra="allow")

    format: Literal["mtgym-calibration"]
    version: Literal[1]
    jobs: dict[str, CalibratedJob]
    time_scale: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)] | None = None
    workers_per_node: _Count | None = None


def read_calibration(path: str | Path) -> dict[str, Any]:
    """Read a calibration file and validate it against ``CalibrationFile``.

    Returns the file's object (a dict). A NaN or infinite cost or throughput, a negative
    one, a fractional node count, a missing field or curves of different lengths are
    errors, never "n/a" further on.

    Args:
        path: the calibration file.

    Raises:
        DataError: naming the file, the field path (``jobs.<id>.r_up_s``) and the value;
            only the first schema error is shown, with the count of the others.
    """
    p = Path(path)
    try:
        cal = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(p, "file", str(exc), "a JSON calibration file") from None
    if not isinstance(cal, dict):
        raise DataError(p, "file", type(cal).__name__, "a JSON object (a calibration file)")
    if cal.get("format") != FORMAT:
        raise DataError(p, "format", cal.get("format"), f"{FORMAT!r} (not a calibration file)")
    if cal.get("version") != VERSION:
        raise DataError(p, "version", cal.get("version"), f"{VERSION} (this mtgym's version)")
    try:
        CalibrationFile.model_validate(cal)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        more = f" ({len(exc.errors()) - 1} more errors)" if len(exc.errors()) > 1 else ""
        raise DataError(p, field, err.get("input"), f"{err['msg']}{more}") from None
    for j, e in cal["jobs"].items():
        cn, ct = e["curve_nodes"], e["curve_tput"]
        if len(cn) != len(ct):
            raise DataError(p, f"jobs.{j}.curve_tput", ct, f"{len(cn)} values, one per curve node")
        if any(b < a for a, b in itertools.pairwise(cn)):
            raise DataError(p, f"jobs.{j}.curve_nodes", cn, "sorted node counts")
        if e.get("max_nodes", 1) < e.get("min_nodes", 1):
            raise DataError(p, f"jobs.{j}.max_nodes", e["max_nodes"], ">= min_nodes")
    return cal


def rate(entry: dict[str, Any], nodes: float) -> float:
    """A calibrated job's samples/s on ``nodes`` nodes, interpolated as the simulator does
    (linear between measured points, from (0, 0), held flat past the last).

    Args:
        entry: one job of a calibration file.
        nodes: simulator nodes (fractions interpolate).

    Returns:
        Samples per wall second.
    """
    return float(np.interp(nodes, entry["curve_nodes"], entry["curve_tput"]))


def job_rows(
    cal: dict[str, Any],
    *,
    work: float = 1e15,
    jobs: list[str] | None = None,
    max_nodes: int | None = None,
) -> list[JobRow]:
    """``JobRow``s of the calibrated jobs (table throughput form), in job-id order.

    Numeric ids sort as numbers, before the others. ``model`` is the simulator's name when
    known, else the torch model's.

    Args:
        cal: a calibration file's object.
        work: each job's work in samples (the default: practically unbounded).
        jobs: the job ids to keep (None: all).
        max_nodes: every job's ``max_nodes`` (None: the larger of the job's own and its
            largest measured node count); never below ``min_nodes``.
    """
    rows = []
    for j, e in sorted(cal["jobs"].items(), key=lambda kv: _key(kv[0])):
        if jobs is not None and j not in jobs:
            continue
        mx = int(max_nodes or max(e["max_nodes"], int(max(e["curve_nodes"]))))
        rows.append(
            JobRow(
                name=str(e["name"]),
                model=str(e.get("model") or e.get("torch_model") or "bridge"),
                app_class=AppClass.parse(e.get("app_class", "D")),
                submit_s=float(e.get("submit_s", 0.0)),
                min_nodes=max(1, int(e.get("min_nodes", 1))),
                max_nodes=max(mx, int(e.get("min_nodes", 1))),
                work=work,
                r_up_s=float(e["r_up_s"]),
                r_down_s=float(e["r_down_s"]),
                startup_s=float(e["startup_s"]),
                curve_nodes=list(map(float, e["curve_nodes"])),
                curve_tput=list(map(float, e["curve_tput"])),
            )
        )
    return rows


def _key(j: str) -> tuple[int, str]:
    """Sort key of a job id: numeric ids by value, then the others by name."""
    return (int(j), "") if j.isdigit() else (1 << 30, j)


def write_bftrainer_csv(cal: dict[str, Any], path: str | Path, *, work: float = 1e15) -> Path:
    """The calibrated jobs as a BFTrainer job table (``tput_n<k>`` on the union of node
    counts; a count a job was not measured at is interpolated as the simulator would).

    Numeric ids become ``J<5 digits>``; the ``model`` column is the torch model's name when
    known (``job_rows`` prefers the simulator's). The table has no start-up cost column.

    Args:
        cal: a calibration file's object.
        path: the CSV to write, atomically.
        work: each job's work in samples.

    Returns:
        The path written.
    """
    entries = sorted(cal["jobs"].items(), key=lambda kv: _key(kv[0]))
    ks = sorted({int(n) for _, e in entries for n in e["curve_nodes"] if n > 0}) or [1]
    p = Path(path)
    with atomic_open(p, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*JOB_COLUMNS, *(f"tput_n{k}" for k in ks)])
        for j, e in entries:
            w.writerow(
                [
                    f"J{_key(j)[0]:05d}" if j.isdigit() else j,
                    e.get("torch_model") or e.get("model") or "bridge",
                    f"{float(e.get('submit_s', 0.0)):.3f}",
                    max(1, int(e.get("min_nodes", 1))),
                    max(int(e.get("max_nodes", 1)), int(e.get("min_nodes", 1)), 1),
                    f"{work:.6g}",
                    f"{e['r_up_s']:.4f}",
                    f"{e['r_down_s']:.4f}",
                    *(f"{rate(e, k):.3f}" for k in ks),
                ]
            )
    return p


def write_scenario(
    cal: dict[str, Any],
    path: str | Path,
    *,
    csv_name: str = "calibration.csv",
    num_nodes: int,
    horizon_s: float,
    name: str = "bridge-calibrated",
) -> Path:
    """A scenario file whose jobs are the calibrated ones (``csv_name`` beside it):
    ``num_nodes`` identical 1-GPU nodes, always idle, pause rescale costs. ``mtgym run
    --scenario <path>`` then simulates the measured jobs.

    The cluster is one 3-level topology (node, one group of every node, system) of V100
    nodes without variability: only the counts and the table matter.

    Args:
        cal: a calibration file's object (its ``source`` goes into the description).
        path: the scenario file to write (JSON), atomically.
        csv_name: the job table's path relative to the scenario
            (``write_bftrainer_csv``).
        num_nodes: nodes of the cluster.
        horizon_s: the episode's length, seconds.
        name: the scenario's name.

    Returns:
        The path written.
    """
    p = Path(path)
    spec = {
        "name": name,
        "description": f"jobs calibrated on the real replay {cal.get('source')}",
        "generator": {
            "kind": "synthetic",
            "cluster": {
                "num_nodes": int(num_nodes),
                "gpus_per_node": 1,
                "gpu_types": ["V100"],
                "group_types": [0],
                "levels": [
                    {"name": "node", "bandwidth_gbps": 150.0, "latency_s": 1e-6},
                    {
                        "name": "group",
                        "group_size": int(num_nodes),
                        "bandwidth_gbps": 25.0,
                        "latency_s": 2e-6,
                    },
                    {"name": "system", "bandwidth_gbps": 12.5, "latency_s": 5e-6},
                ],
                "variability": {"kind": "none"},
            },
            "supply": {"kind": "always-idle"},
            "workload": {"kind": "table", "path": csv_name},
            "costs": {"rescale": "pause", "preemption": "rdown"},
            "horizon_s": float(horizon_s),
        },
    }
    return atomic_write_json(p, spec)
