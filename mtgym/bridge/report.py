"""The replay report: predicted vs measured, per job and world size, rescale costs, totals.

``build_report`` returns a JSON-ready dict; ``write_report`` writes ``report.json`` and
``report.md``. Per job and node count: ``predicted`` and ``measured`` samples/s and
``error = (predicted - measured) / measured``, plus the speedups relative to the job's
smallest measured size (unit-free: the shape of the curve, comparable even when the
prediction is in a scenario's units). Rescale costs: every measured transition and the
means next to the predicted ``r_up_s``/``r_down_s``/``startup_s``. Totals: samples over the
replay, measured vs simulated with the prediction (``mtgym.bridge.predict``), reclaim
deadlines met, crashes and restarts.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mtgym.bridge import predict
from mtgym.bridge.controller import capped_jobs, load_replay_meta
from mtgym.bridge.measure import JobMeasurement, Measurements, measure_replay
from mtgym.bridge.trace import Trace, read_trace
from mtgym.core.io import atomic_write_json, atomic_write_text

FORMAT = "mtgym-bridge-report"
VERSION = 1


def _err(pred: float | None, meas: float | None) -> float | None:
    """``(pred - meas) / meas``, or None when either is missing or NaN or ``meas`` is 0."""
    if pred is None or meas is None or not meas or math.isnan(pred) or math.isnan(meas):
        return None
    return (pred - meas) / meas


def check_monotone(
    measured: dict[int, float], predicted: dict[int, float | None], *, tol: float = 0.05
) -> list[str]:
    """Where the prediction grows with the node count, the measurement must not shrink
    by more than ``tol``; returns the violations (empty = monotone where the model says so).

    Only consecutive measured node counts with a prediction are compared.

    Args:
        measured: node count -> measured samples/s.
        predicted: node count -> predicted samples/s (None: no figure, skipped).
        tol: the relative drop tolerated (machine noise), 0.05 = 5 %.

    Returns:
        One line per violation: the node counts and both pairs of rates.
    """
    out = []
    ns = sorted(n for n in measured if predicted.get(n) is not None)
    for a, b in itertools.pairwise(ns):
        pa, pb = predicted[a], predicted[b]
        assert pa is not None and pb is not None
        if pb > pa * (1 + 1e-9) and measured[b] < measured[a] * (1 - tol):
            out.append(
                f"{a}->{b} nodes: predicted {pa:.4g}->{pb:.4g} (up), measured "
                f"{measured[a]:.4g}->{measured[b]:.4g} (down {1 - measured[b] / measured[a]:.1%})"
            )
    return out


def failures(meas: Measurements, max_restarts: int | None = None) -> list[str]:
    """Why a replay failed, one phrase per job: no progress at all although it was
    launched, or more crashes than ``--max-restarts`` allowed. Empty = no failure.

    A job that was never launched (the trace never gave it nodes) is not a failure.

    Args:
        meas: the replay's measurements.
        max_restarts: the replay's limit, quoted in the message (None: not quoted).
    """
    out = []
    for j, jm in meas.jobs.items():
        why = []
        if jm.launches and not jm.made_progress:
            why.append("made no progress")
        if jm.gave_up:
            limit = f" ({max_restarts})" if max_restarts is not None else ""
            why.append(f"exhausted --max-restarts{limit}")
        if why:
            out.append(
                f"job {j} {' and '.join(why)}: {jm.launches} launch(es), {jm.crashes} "
                f"crash(es), {jm.total_steps} steps (see jobs/{j}/logs)"
            )
    return out


def build_report(
    out_dir: str | Path,
    meas: Measurements | None = None,
    *,
    calibration: dict[str, Any] | None = None,
    calibration_path: str | None = None,
    trace: Trace | None = None,
) -> dict[str, Any]:
    """The report of a replay folder (measured now unless ``meas`` is given).

    Args:
        out_dir: the replay folder (``replay.json``, ``trace.jsonl``, ``events.jsonl``).
        meas: its measurements (None: ``measure_replay(out_dir)`` with the defaults).
        calibration: a calibration file's object to predict with (None: the trace's own
            rates, scaled to wall time).
        calibration_path: its path, for ``prediction_source``.
        trace: the replayed trace (None: ``out_dir/trace.jsonl``).

    Returns:
        The report: ``ok`` and ``failures``, where the prediction came from, the trace and
        clock, per job (``_job_report``) and ``totals``. A failed simulation of the
        prediction leaves NaN samples and its error in ``simulation_error``.
    """
    out = Path(out_dir)
    meta = load_replay_meta(out)
    meas = meas or measure_replay(out)
    trace = trace or read_trace(out / "trace.jsonl")
    scale = float(meta["config"]["time_scale"])
    max_ws = meta["config"].get("max_world_size")
    caps = meta.get("capped")
    if caps is None:  # a replay folder written before the cap was recorded
        caps = capped_jobs(trace, max_ws)
    if calibration is not None:
        preds = predict.from_calibration(calibration)
        source = f"calibration:{calibration_path or 'given'}"
    else:
        preds = predict.from_trace(trace, scale)
        source = "trace"
    sim_samples, sim_error = _simulated_samples(trace, preds, scale, meta)
    jobs: dict[str, Any] = {}
    all_err: list[float] = []
    for j, jm in meas.jobs.items():
        jobs[j] = _job_report(jm, preds.get(j), sim_samples.get(j), caps.get(j), all_err)
    fails = failures(meas, meta["config"].get("max_restarts"))
    return {
        "format": FORMAT,
        "version": VERSION,
        "ok": not fails,
        "failures": fails,
        "out_dir": str(out),
        "prediction_source": source,
        "max_world_size": max_ws,
        "capped": caps,
        "simulation_error": sim_error,
        "trace": {
            "scenario": trace.header.scenario,
            "policy": trace.header.policy,
            "seed": trace.header.seed,
            "t_start": trace.header.t_start,
            "t_end": trace.t_end,
        },
        "time_scale": scale,
        "workers_per_node": meas.workers_per_node,
        "wall_s": meas.t_end_wall - meas.t0_wall,
        "jobs": jobs,
        "totals": _totals(meas, jobs, all_err, fails),
    }


def _simulated_samples(
    trace: Trace, preds: dict[str, predict.JobPrediction], scale: float, meta: dict[str, Any]
) -> tuple[dict[str, float], str | None]:
    """Samples per job that the prediction simulates over the replay, and the error
    (``repr``) that stopped the simulation, if any (then every job's samples are NaN).
    """
    try:
        sim_samples = predict.simulate_replay(
            trace,
            preds,
            time_scale=scale,
            sim0=float(meta["sim0"]),
            max_world_size=meta["config"].get("max_world_size"),
        )
    except Exception as exc:  # a prediction problem must not hide the measurements
        return {j: float("nan") for j in trace.jobs}, repr(exc)
    return sim_samples, None


def _job_report(
    jm: JobMeasurement,
    p: predict.JobPrediction | None,
    ps: float | None,
    capped_from: Any,
    all_err: list[float],
) -> dict[str, Any]:
    """One job's entry: ``jm`` its measurements, ``p`` its prediction (or None), ``ps`` its
    simulated samples, ``capped_from`` its uncapped world size; appends the job's
    throughput errors to ``all_err``.

    Predictions are looked up only at the node counts that were measured.
    """
    measured = {n: t.samples_per_s for n, t in jm.throughput.items()}
    predicted = {n: (p.rate(n) if p else None) for n in measured}
    ws = _world_sizes(jm, measured, predicted, all_err)
    return {
        "name": jm.name,
        "torch_model": jm.model,
        "world_sizes": ws,
        "monotone_violations": check_monotone(measured, predicted),
        "rescale": _rescale_costs(jm, p),
        "transitions": [asdict(t) for t in jm.transitions],
        "reclaims": [
            {
                "to_gen": t.to_gen,
                "release_s": t.release_s,
                "stop_latency_s": t.stop_latency_s,
                "deadline_met": t.deadline_met,
                "signalled": t.signalled,
            }
            for t in jm.transitions
            if t.reclaim
        ],
        "samples": {
            "measured": jm.total_samples,
            "predicted": ps,
            "error": _err(ps, float(jm.total_samples)),
        },
        "steps": jm.total_steps,
        "redone_steps": jm.redone_steps,
        "committed_steps": jm.committed_steps,
        "crashes": jm.crashes,
        "launches": jm.launches,
        "gave_up": jm.gave_up,
        "invalid_checkpoints": jm.invalid_checkpoints,
        "capped_from": capped_from,
        "device": jm.device,
        "gpu": jm.gpu,
    }


def _world_sizes(
    jm: JobMeasurement,
    measured: dict[int, float],
    predicted: dict[int, float | None],
    all_err: list[float],
) -> dict[str, Any]:
    """Per node count: predicted and measured throughput and speed-up, and their errors.

    Speed-ups are relative to the smallest measured node count, on both sides, so they
    compare even when the prediction is in a scenario's units. Appends each throughput
    error to ``all_err``.

    Returns:
        Node count (as text) -> its row: rates, errors, speed-ups, and the measurement's
        seconds, intervals, generations and median step time.
    """
    ws: dict[str, Any] = {}
    ref = min(measured) if measured else None
    for n, t in jm.throughput.items():
        pr = predicted[n]
        e = _err(pr, t.samples_per_s)
        if e is not None:
            all_err.append(e)
        sp_m = t.samples_per_s / measured[ref] if ref else None
        pref = predicted.get(ref) if ref else None
        sp_p = pr / pref if (pr is not None and pref) else None
        ws[str(n)] = {
            "nodes": n,
            "workers": t.world_size,
            "predicted": pr,
            "measured": t.samples_per_s,
            "error": e,
            "predicted_speedup": sp_p,
            "measured_speedup": sp_m,
            "speedup_error": _err(sp_p, sp_m),
            "seconds": t.seconds,
            "intervals": t.intervals,
            "generations": t.generations,
            "per_generation": {str(g): v for g, v in t.per_gen.items()},
            "step_s_median": t.step_s_median,
        }
    return ws


def _rescale_costs(jm: JobMeasurement, p: predict.JobPrediction | None) -> dict[str, Any]:
    """Measured rescale costs per kind of transition, their mean and the predicted cost.

    Kinds ``up``, ``down``, ``start``, ``restart`` and ``same``; only the first three have
    a predicted cost (``r_up_s``, ``r_down_s``, ``startup_s``), the others None.
    """
    return {
        kind: {
            "measured_s": jm.costs(kind),
            "mean_s": jm.mean_cost(kind),
            "predicted_s": (
                None
                if p is None
                else {"up": p.r_up_s, "down": p.r_down_s, "start": p.startup_s}.get(kind)
            ),
        }
        for kind in ("up", "down", "start", "restart", "same")
    }


def _totals(
    meas: Measurements, jobs: dict[str, Any], all_err: list[float], fails: list[str]
) -> dict[str, Any]:
    """The replay's totals over the job entries ``jobs``.

    ``predicted_samples`` is None unless every job has a finite prediction;
    ``reclaim_deadlines_met`` is None without reclaims and False if any reclaim's outcome
    is unknown. Throughput errors are pooled over every job and node count (``all_err``).
    """
    ms = sum(jb["samples"]["measured"] for jb in jobs.values())
    pss = [jb["samples"]["predicted"] for jb in jobs.values()]
    ps_total = sum(pss) if pss and all(v is not None and not math.isnan(v) for v in pss) else None
    costs = {k: [c for jm in meas.jobs.values() for c in jm.costs(k)] for k in ("up", "down")}
    deadlines = [r["deadline_met"] for jb in jobs.values() for r in jb["reclaims"]]
    gpus = [jb["gpu"] for jb in jobs.values() if jb["gpu"]]
    utils = [g["util_mean"] for g in gpus if g["util_mean"] is not None]
    return {
        "measured_samples": ms,
        "predicted_samples": ps_total,
        "samples_error": _err(ps_total, float(ms)) if ms else None,
        "mean_abs_throughput_error": statistics.fmean(map(abs, all_err)) if all_err else None,
        "max_abs_throughput_error": max(map(abs, all_err)) if all_err else None,
        "rescales_up": len(costs["up"]),
        "rescales_down": len(costs["down"]),
        "mean_r_up_s": statistics.fmean(costs["up"]) if costs["up"] else None,
        "mean_r_down_s": statistics.fmean(costs["down"]) if costs["down"] else None,
        "reclaims": len(deadlines),
        "reclaim_deadlines_met": all(d is True for d in deadlines) if deadlines else None,
        "crashes": sum(jb["crashes"] for jb in jobs.values()),
        "monotone_violations": sum(len(jb["monotone_violations"]) for jb in jobs.values()),
        "failed_jobs": len(fails),
        "gpu_util_mean": statistics.fmean(utils) if utils else None,
        "gpu_mem_peak_gib": max(g["mem_peak_gib"] for g in gpus) if gpus else None,
    }


def _f(v: Any, fmt: str = ",.1f") -> str:
    """``format(v, fmt)``, or ``n/a`` for None and NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return format(v, fmt)


def _pct(v: float | None) -> str:
    """A signed percentage (``+3.1%``), or ``n/a`` for None."""
    return "n/a" if v is None else f"{v:+.1%}"


def render_markdown(rep: dict[str, Any]) -> str:
    """``report.md`` of ``build_report``'s ``rep``: settings, totals, then each job's tables."""
    tr, tot = rep["trace"], rep["totals"]
    lines = []
    if rep.get("failures"):
        lines += [f"FAILED: {'; '.join(rep['failures'])}", ""]
    lines += [
        f"# mtgym bridge report: {tr['scenario']} / {tr['policy']}",
        "",
        f"- replay folder: `{rep['out_dir']}`",
        f"- trace: simulated {tr['t_start']:g} to {tr['t_end']:g} s, time scale "
        f"{rep['time_scale']:g} (wall {rep['wall_s']:.1f} s), "
        f"{rep['workers_per_node']} worker(s) per node",
        f"- predictions from: **{rep['prediction_source']}**"
        + (
            " (the scenario's own model: its units, per simulated second; compare the speedups)"
            if rep["prediction_source"] == "trace"
            else ""
        ),
        "- `error` = (predicted - measured) / measured",
        *cap_lines(rep),
        *gpu_lines(rep),
        "",
        "## Totals",
        "",
        "| measured samples | predicted samples | error | mean abs tput error | "
        "max abs tput error | r_up (s) | r_down (s) | reclaims (deadline met) | crashes |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {_f(tot['measured_samples'], ',.0f')} | {_f(tot['predicted_samples'], ',.0f')} | "
        f"{_pct(tot['samples_error'])} | {_f(tot['mean_abs_throughput_error'], '.1%')} | "
        f"{_f(tot['max_abs_throughput_error'], '.1%')} | {_f(tot['mean_r_up_s'], '.2f')} "
        f"({tot['rescales_up']}) | {_f(tot['mean_r_down_s'], '.2f')} ({tot['rescales_down']}) | "
        f"{tot['reclaims']} ({tot['reclaim_deadlines_met']}) | {tot['crashes']} |",
        "",
    ]
    for j, jb in rep["jobs"].items():
        lines += [
            f"## Job {j}: {jb['name']} (torch model `{jb['torch_model']}`)",
            "",
            "| nodes | workers | predicted (samples/s) | measured (samples/s) | error | "
            "predicted speedup | measured speedup | measured over (s) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for w in jb["world_sizes"].values():
            lines.append(
                f"| {w['nodes']} | {w['workers']} | {_f(w['predicted'])} | "
                f"{_f(w['measured'])} | {_pct(w['error'])} | "
                f"{_f(w['predicted_speedup'], '.2f')} | {_f(w['measured_speedup'], '.2f')} | "
                f"{w['seconds']:.1f} |"
            )
        if not jb["world_sizes"]:
            lines.append("| - | - | - | no steady-state iterations measured | - | - | - | - |")
        lines += [
            "",
            "| rescale | measured (s) | mean (s) | predicted (s) |",
            "|---|---|---:|---:|",
        ]
        for kind, r in jb["rescale"].items():
            if r["measured_s"] or r["predicted_s"]:
                ms_ = ", ".join(f"{c:.2f}" for c in r["measured_s"]) or "-"
                lines.append(
                    f"| {kind} | {ms_} | {_f(r['mean_s'], '.2f')} | {_f(r['predicted_s'], '.2f')} |"
                )
        s = jb["samples"]
        lines += [
            "",
            f"Samples: measured {s['measured']:,}, predicted {_f(s['predicted'], ',.0f')} "
            f"({_pct(s['error'])}); steps {jb['steps']}, redone {jb['redone_steps']}, "
            f"crashes {jb['crashes']}, invalid checkpoints skipped {jb['invalid_checkpoints']}.",
        ]
        for r in jb["reclaims"]:
            lines.append(
                f"- reclaim -> gen {r['to_gen']}: released in {_f(r['release_s'], '.2f')} s, "
                f"deadline met: {r['deadline_met']}"
                + (f" (after {r['signalled']})" if r["signalled"] else "")
            )
        for v in jb["monotone_violations"]:
            lines.append(f"- not monotone where the model says so: {v}")
        lines.append("")
    return "\n".join(lines)


def cap_lines(rep: dict[str, Any]) -> list[str]:
    """The report's note on ``--max-world-size`` (none when it cut no job).

    Args:
        rep: ``build_report``'s answer (``capped``, ``max_world_size``).

    Returns:
        Zero or one Markdown list item.
    """
    caps = rep.get("capped") or {}
    if not caps:
        return []
    jobs = ", ".join(f"job {j} (trace up to {n})" for j, n in sorted(caps.items()))
    return [
        f"- world size capped at {rep['max_world_size']} node(s) (--max-world-size) for "
        f"{jobs}: each job ran, and is predicted, at the capped node count (the scenario's "
        "rate at that count)"
    ]


def gpu_lines(rep: dict[str, Any]) -> list[str]:
    """The report's GPU line: rank 0's utilisation and peak memory per job (CUDA only).

    The bridge commands also print it after a replay or report (``cli._summary``).

    Args:
        rep: ``build_report``'s answer.

    Returns:
        Zero or one Markdown list item (none when no job reported a GPU).
    """
    out = []
    for j, jb in rep["jobs"].items():
        g = jb.get("gpu")
        if g:
            out.append(
                f"job {j} on {jb.get('device') or 'cuda'} (GPU {','.join(g['gpus'])}): "
                f"utilisation {_f(g['util_mean'], '.0f')} % ({g['util_samples']} samples, "
                f"{g['util_source']}), peak memory {g['mem_peak_gib']:.1f} GiB"
            )
    return [f"- GPU (rank 0): {'; '.join(out)}"] if out else []


def write_report(out_dir: str | Path, rep: dict[str, Any], *, stem: str = "report") -> tuple:
    """Write ``<stem>.json`` and ``<stem>.md`` into ``out_dir``; returns both paths.

    Both atomically; in the JSON, NaN and infinities become null (``_clean``).

    Args:
        out_dir: the replay folder.
        rep: ``build_report``'s answer.
        stem: the file names' stem (``report``; ``report-calibrated`` for a second one).
    """
    out = Path(out_dir)
    pj, pm = out / f"{stem}.json", out / f"{stem}.md"
    atomic_write_json(pj, _clean(rep), default=str, allow_nan=False)
    atomic_write_text(pm, render_markdown(rep))
    return pj, pm


def _clean(o: Any) -> Any:
    """NaN and infinities become null (strict JSON)."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_clean(v) for v in o]
    return o
