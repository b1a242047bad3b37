"""``mtgym bridge ...``: record a policy's decisions, replay them on real torch jobs,
measure, calibrate and report.

The lead wires ``add_bridge_commands`` into ``mtgym/cli.py`` under a ``bridge`` group;
``python -m mtgym.bridge`` runs the same commands on their own.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _cmd_record(args: argparse.Namespace) -> int:
    """``bridge record``: simulate ``--policy`` on ``--scenario`` and write the trace.

    The policy gets the scenario's defaults (``configure_policy``), as in ``mtgym run``.
    The trace is read back (validated) before the summary line is printed.

    Returns:
        0.
    """
    from rich.console import Console

    from mtgym.bridge.record import record_episode
    from mtgym.evaluate import configure_policy, scenario_defaults
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    gen = get_generator(args.scenario)
    instance = gen(args.seed)
    policy = configure_policy(make_policy(args.policy), scenario_defaults(gen))
    result, path = record_episode(
        instance,
        policy,
        args.out,
        scenario=args.scenario,
        seed=args.seed,
        until=args.until,
        decision_interval_s=args.decision_interval,
    )
    from mtgym.bridge.trace import read_trace

    tr = read_trace(path)
    Console().print(
        f"[green]wrote[/] {path}: {len(tr.events)} node-set changes of {len(tr.jobs)} jobs, "
        f"simulated {tr.header.t_start:g}..{tr.t_end:g} s ({result.decisions} decisions)"
    )
    return 0


def _csv_list(text: str | None) -> list[str] | None:
    """The items of a comma-separated option, stripped; None for None or no items."""
    if text is None:
        return None
    items = [x.strip() for x in text.split(",") if x.strip()]
    return items or None


def _print_event(console: Any, t0: list[float]) -> Any:
    """An ``on_event`` callback that prints a replay's launches, stops, crashes and end.

    Args:
        console: a rich console.
        t0: a one-element list the callback fills with the ``replay_start`` time, so lines
            show seconds since the replay started.

    Returns:
        The callback (other events are not printed).
    """

    def cb(e: dict[str, Any]) -> None:
        """Print one line for a start, stop, restart, crash, stall, give-up or trace end."""
        if e["event"] == "replay_start":
            t0[0] = e["t"]
            return
        ev = e["event"]
        if ev not in ("start", "stopped", "restart", "crash", "stall", "gave_up", "trace_end"):
            return
        t = e["t"] - t0[0] if t0[0] else 0.0
        job = e.get("job", "-")
        extra = ""
        if ev in ("start", "restart"):
            extra = f"world size {e.get('world_size')} (gen {e.get('gen')})"
        elif ev == "stopped":
            extra = f"gen {e.get('gen')} in {e.get('latency_s', 0):.2f} s"
            if e.get("reclaim"):
                extra += f", reclaim deadline met: {e.get('deadline_met')}"
            if e.get("signalled"):
                extra += f" ({e['signalled']})"
        console.print(f"[dim]{t:7.2f}s[/] job {job:>4} {ev:<8} {extra}")

    return cb


def _summary(console: Any, rep: dict[str, Any]) -> None:
    """Print a report as a table: per job and node count the rates and error, the mean
    up/down costs, then the sample totals, reclaims, crashes, and the cap and GPU notes.

    Args:
        console: a rich console.
        rep: ``report.build_report``'s answer.
    """
    from rich.markup import escape
    from rich.table import Table

    if rep.get("failures"):
        console.print(f"[red]FAILED:[/] {escape('; '.join(rep['failures']))}")
    table = Table(title=f"bridge report ({rep['prediction_source']})")
    for col in ("job", "nodes", "workers", "predicted", "measured", "error", "r_up s", "r_down s"):
        table.add_column(col, justify="right")

    def f(v: Any, fmt: str = ",.1f") -> str:
        return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)

    for j, jb in rep["jobs"].items():
        up, down = jb["rescale"]["up"]["mean_s"], jb["rescale"]["down"]["mean_s"]
        rows = list(jb["world_sizes"].values()) or [None]
        for i, w in enumerate(rows):
            table.add_row(
                j if i == 0 else "",
                f(w["nodes"], "d") if w else "-",
                f(w["workers"], "d") if w else "-",
                f(w["predicted"]) if w else "-",
                f(w["measured"]) if w else "no data",
                f(w["error"], "+.1%") if w else "-",
                f(up, ".2f") if i == 0 else "",
                f(down, ".2f") if i == 0 else "",
            )
    console.print(table)
    tot = rep["totals"]
    console.print(
        f"samples: measured {tot['measured_samples']:,}, predicted "
        f"{f(tot['predicted_samples'], ',.0f')} ({f(tot['samples_error'], '+.1%')}); "
        f"reclaims {tot['reclaims']} (deadlines met: {tot['reclaim_deadlines_met']}); "
        f"crashes {tot['crashes']}"
    )
    from mtgym.bridge.report import cap_lines, gpu_lines

    for line in [*cap_lines(rep), *gpu_lines(rep)]:
        console.print(escape(line[2:]))


def _analyse(out: Path, calibration: str | None, *, write_cal: bool, console: Any) -> dict:
    """Measure a replay folder and write its files; print and return the last report.

    Writes ``measurements.json`` and ``report.{json,md}``; with ``write_cal`` (and
    something measured) ``calibration.json``, ``calibration.csv`` and
    ``calibrated-scenario.json`` (horizon: the replay's wall length); with
    ``calibration``, ``report-calibrated.{json,md}`` predicted from that file.

    Args:
        out: the replay folder.
        calibration: a calibration file to predict with too (None: none).
        write_cal: write this replay's calibration.
        console: where the summary goes.

    Returns:
        The calibrated report when ``calibration`` is given, else the trace's.
    """
    from mtgym.bridge.calibrate import (
        calibrate,
        read_calibration,
        write_bftrainer_csv,
        write_calibration,
        write_scenario,
    )
    from mtgym.bridge.measure import measure_replay
    from mtgym.bridge.report import build_report, write_report
    from mtgym.bridge.trace import read_trace
    from mtgym.core.io import atomic_write_json

    meas = measure_replay(out)
    atomic_write_json(out / "measurements.json", _strict(meas.to_json()))
    trace = read_trace(out / "trace.jsonl")
    if write_cal and meas.empty:
        console.print("no steady-state measurements: no calibration written")
    elif write_cal:
        cal = calibrate(meas, trace)
        write_calibration(out / "calibration.json", cal)
        write_bftrainer_csv(cal, out / "calibration.csv")
        write_scenario(
            cal,
            out / "calibrated-scenario.json",
            csv_name="calibration.csv",
            num_nodes=trace.header.num_nodes,
            horizon_s=max(1.0, meas.t_end_wall - meas.t0_wall),
        )
    rep = build_report(out, meas, trace=trace)
    write_report(out, rep)
    if calibration is not None:
        rep = build_report(
            out,
            meas,
            calibration=read_calibration(calibration),
            calibration_path=str(calibration),
            trace=trace,
        )
        write_report(out, rep, stem="report-calibrated")
    _summary(console, rep)
    return rep


def _strict(o: Any) -> Any:
    """``o`` with NaN and infinities replaced by None (strict JSON), recursively."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {str(k): _strict(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_strict(v) for v in o]
    return o


def _cmd_replay(args: argparse.Namespace) -> int:
    """``bridge replay``: replay the trace, then measure, calibrate and report (``_analyse``).

    SIGTERM and SIGHUP stop every job as Ctrl-C does (``raise_on_signals``). ``--out`` is
    created and proven writable before anything starts.

    Returns:
        0; 1 when a driver failed, a job failed or a reclaim deadline was missed; 128 +
        the signal when stopped by SIGTERM or SIGHUP.
    """
    from rich.console import Console

    from mtgym.bridge.controller import ReplayConfig, replay
    from mtgym.bridge.launcher import LocalLauncher
    from mtgym.bridge.procs import Terminated, raise_on_signals
    from mtgym.core.io import prepare_out_dir

    console = Console(stderr=args.quiet)
    cfg = ReplayConfig(
        time_scale=args.time_scale,
        workers_per_node=args.workers_per_node,
        reclaim_deadline_s=args.reclaim_deadline,
        stop_timeout_s=args.stop_timeout,
        model=args.model,
        batch=args.batch,
        ckpt_every=args.ckpt_every,
        threads=args.threads,
        dp=args.dp,
        device=args.device,
        seed=args.seed,
        until=args.until,
        jobs=_csv_list(args.jobs),
        max_world_size=args.max_world_size,
        max_restarts=args.max_restarts,
    )
    launcher = LocalLauncher(
        workers_per_node=args.workers_per_node,
        launch=args.launch,
        share_gpus=args.share_gpus,
        start_method=None if args.start_method == "auto" else args.start_method,
    )
    out = prepare_out_dir(args.out)
    t0 = [0.0]
    try:
        with raise_on_signals():  # SIGTERM/SIGHUP stop every job, as Ctrl-C does
            res = replay(
                args.trace,
                out,
                cfg,
                launcher=launcher,
                on_event=None if args.quiet else _print_event(console, t0),
            )
    except RuntimeError as exc:  # a job driver failed; every process was stopped
        print(f"error: replay failed: {exc} (see {out / 'events.jsonl'})", file=sys.stderr)
        return 1
    except Terminated as exc:
        print(f"stopped by signal {exc.signum}: every job was stopped", file=sys.stderr)
        return int(exc.code)
    console.print(f"replayed in {res.wall_s:.1f} s wall; files in {out}")
    rep = _analyse(out, args.calibration, write_cal=True, console=console)
    wrote = [out / "report.md", out / "report.json"]
    if (out / "calibration.json").exists():
        wrote += [out / x for x in ("calibration.json", "calibration.csv")]
        wrote.append(out / "calibrated-scenario.json")
    if args.calibration:
        wrote.append(out / "report-calibrated.md")
    console.print("wrote " + ", ".join(map(str, wrote)))
    return _status(rep)


def _status(rep: dict[str, Any]) -> int:
    """1 when a job failed (the reason on stderr) or a reclaim deadline was missed."""
    if rep.get("failures"):
        print(f"FAILED: {'; '.join(rep['failures'])}", file=sys.stderr)
        return 1
    return 1 if rep["totals"]["reclaim_deadlines_met"] is False else 0


def _cmd_report(args: argparse.Namespace) -> int:
    """``bridge report``: measure a replay folder again and rewrite its files.

    Returns:
        ``_status`` of the report.

    Raises:
        FileNotFoundError: the folder has no ``replay.json``.
    """
    from rich.console import Console

    out = Path(args.dir)
    if not (out / "replay.json").is_file():
        raise FileNotFoundError(f"{out} is not a replay folder (no replay.json)")
    rep = _analyse(out, args.calibration, write_cal=not args.no_calibration, console=Console())
    return _status(rep)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    """``bridge calibrate``: write a replay folder's calibration to ``--out`` (and ``--csv``).

    Prints the paths written.

    Returns:
        0.

    Raises:
        ValueError: no job of the replay has a steady-state measurement.
    """
    from mtgym.bridge.calibrate import calibrate, write_bftrainer_csv, write_calibration
    from mtgym.bridge.measure import measure_replay
    from mtgym.bridge.trace import read_trace

    out = Path(args.dir)
    meas = measure_replay(out)
    if meas.empty:
        raise ValueError(f"{out}: no job has steady-state measurements; nothing to calibrate")
    cal = calibrate(meas, read_trace(out / "trace.jsonl"))
    p = write_calibration(args.out, cal)
    print(p)
    if args.csv:
        print(write_bftrainer_csv(cal, args.csv))
    return 0


def _cmd_slurm(args: argparse.Namespace) -> int:
    """``bridge slurm-commands``: print the Slurm commands of every generation of one job.

    One generation per segment of the job in the trace (a constant, non-empty node set),
    numbered from 0, with the job folder ``<--job-dir>/jobs/<job>``. Host names come from
    ``--node-names``, else the trace's ``node_names``, else ``node<4 digits>``. Nothing is
    run.

    Returns:
        0.

    Raises:
        KeyError: ``--job`` is not a job of the trace.
    """
    from mtgym.bridge.controller import ReplayConfig, _spec
    from mtgym.bridge.launcher import SlurmLauncher
    from mtgym.bridge.trace import read_trace

    tr = read_trace(args.trace)
    if args.job not in tr.jobs:
        raise KeyError(f"unknown trace job {args.job!r}; known: {', '.join(sorted(tr.jobs))}")
    cfg = ReplayConfig(model=args.model, dp=args.dp)
    spec = _spec(tr, args.job, Path(args.job_dir), cfg)
    spec.job_dir = Path(args.job_dir) / "jobs" / args.job
    names = _csv_list(args.node_names) or tr.header.node_names
    sl = SlurmLauncher(
        workers_per_node=args.workers_per_node,
        python=args.python,
        rdzv_port=args.rdzv_port,
        partition=args.partition,
        node_names=names,
        worker_script=args.worker_script or SlurmLauncher.worker_script,
        **({"token": args.token} if args.token else {}),
    )
    for gen, seg in enumerate(tr.segments(args.job)):
        print(f"### t = {seg.t0:g}..{seg.t1:g} s (simulated): {seg.world_size} node(s), gen {gen}")
        print(sl.dry_run_script(spec, list(seg.nodes), gen), end="")
    return 0


def model_choices() -> list[str]:
    """``--model`` values (the worker's models and model sets).

    Imports ``worker.py`` (no torch at import), so parsers can list the choices.
    """
    from mtgym.bridge.models import model_choices as choices

    return choices()


def add_bridge_commands(subparsers: Any) -> None:
    """Register ``record``, ``replay``, ``report``, ``calibrate`` and ``slurm-commands``.

    ``subparsers`` is the ``bridge`` group's sub-parser action (what
    ``bridge_parser.add_subparsers()`` returns). Given the top-level action instead, a
    ``bridge`` group is created (or reused) in it first.

    Args:
        subparsers: the ``bridge`` group's sub-parser action, or ``mtgym``'s top-level one
            (recognised by its ``bridge`` or ``run`` command).
    """
    if "bridge" in getattr(subparsers, "choices", {}) or "run" in getattr(
        subparsers, "choices", {}
    ):
        group = subparsers.choices.get("bridge") or subparsers.add_parser(
            "bridge", help="replay simulated decisions on real elastic torch jobs"
        )
        existing = [a for a in group._actions if isinstance(a, argparse._SubParsersAction)]
        subparsers = (
            existing[0]
            if existing
            else group.add_subparsers(dest="bridge_command", required=True, metavar="ACTION")
        )

    _add_record(subparsers)
    _add_replay(subparsers)
    _add_report(subparsers)
    _add_calibrate(subparsers)
    _add_slurm_commands(subparsers)


def _add_record(subparsers: Any) -> None:
    """``bridge record``: run a policy and write its decisions as a trace."""
    r = subparsers.add_parser(
        "record",
        help="run a policy on a scenario and write its decisions as a trace (JSON lines)",
        description="Run POLICY on SCENARIO in the simulator and write every change of a "
        "job's node set (time, job, nodes, world size, predicted rate) to TRACE.",
    )
    r.add_argument("--scenario", required=True, help="scenario name or file")
    r.add_argument("--policy", required=True, help="registered policy name")
    r.add_argument("--out", required=True, metavar="TRACE", help="trace file to write")
    r.add_argument("--seed", type=int, default=0, help="scenario seed (default: %(default)s)")
    r.add_argument("--until", type=float, default=None, metavar="T", help="stop at simulated T s")
    r.add_argument(
        "--decision-interval", type=float, default=None, metavar="S", help="decide every S s"
    )
    r.set_defaults(func=_cmd_record)


def _add_replay(subparsers: Any) -> None:
    """``bridge replay``: replay a trace on real torch jobs, report and calibrate."""
    p = subparsers.add_parser(
        "replay",
        help="replay a trace on real torch training jobs; report and calibrate",
        description="Run one real torch job per trace job (gloo on CPU, NCCL on GPUs), "
        "rescale it (checkpoint, stop, restart) when the trace does, collect per-iteration "
        "progress reports, then write DIR/report.md, DIR/report.json, DIR/calibration.json "
        "and DIR/calibration.csv. Exit 1 if a job made no progress, exhausted "
        "--max-restarts, or a reclaimed node was not released in time (the report's first "
        "line says why); no calibration is written when nothing was measured.",
    )
    p.add_argument("trace", metavar="TRACE", help="trace file (mtgym bridge record)")
    p.add_argument("--out", required=True, metavar="DIR", help="new folder for the replay")
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="simulated seconds per wall second (default: %(default)s)",
    )
    p.add_argument(
        "--workers-per-node",
        type=int,
        default=1,
        metavar="K",
        help="worker processes per simulator node (default: %(default)s)",
    )
    p.add_argument("--jobs", default=None, help="comma-separated trace job ids (default: all)")
    p.add_argument("--until", type=float, default=None, metavar="T", help="stop at simulated T s")
    p.add_argument("--max-world-size", type=int, default=None, help="cap on nodes per job")
    _add_worker_options(p)
    p.add_argument(
        "--reclaim-deadline",
        type=float,
        default=10.0,
        metavar="S",
        help="wall seconds a job has to release a reclaimed node (default: %(default)s)",
    )
    p.add_argument(
        "--stop-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="graceful window of a voluntary stop before SIGTERM (default: %(default)s)",
    )
    p.add_argument("--max-restarts", type=int, default=3, help="restarts after crashes, per job")
    p.add_argument(
        "--calibration",
        default=None,
        metavar="CAL",
        help="also predict with this calibration file (report-calibrated.md/json)",
    )
    p.add_argument("--quiet", action="store_true", help="no live event lines")
    p.set_defaults(func=_cmd_replay)


def _add_worker_options(p: argparse.ArgumentParser) -> None:
    """``bridge replay``'s options of the torch workers and how they are launched."""
    p.add_argument(
        "--model",
        default=None,
        choices=model_choices(),
        help="torch model for every job, or a set chosen per app class: small (default; "
        "cnn/mlp), gpu (resnet50 at batch 256 / transformer, bf16 on CUDA), gpu-tiny",
    )
    p.add_argument("--dp", default="ddp", choices=("ddp", "allreduce"), help="data parallelism")
    p.add_argument(
        "--batch", type=int, default=None, help="samples per worker per step (default: model's)"
    )
    p.add_argument("--ckpt-every", type=int, default=50, help="steps between checkpoints")
    p.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    p.add_argument(
        "--launch",
        default="agent",
        choices=("agent", "torchrun"),
        help="elastic agent API (default; forked workers on CPU, spawned on CUDA) or the "
        "torchrun CLI",
    )
    p.add_argument(
        "--start-method",
        default="auto",
        choices=("auto", "fork", "spawn"),
        help="how --launch agent starts workers: auto = fork on CPU, spawn on CUDA",
    )
    p.add_argument(
        "--share-gpus",
        action="store_true",
        help="let a job use more workers than visible GPUs: GPUs are assigned round-robin "
        "and the workers use gloo (NCCL refuses two ranks on one GPU)",
    )
    p.add_argument("--seed", type=int, default=0, help="data/model seed")


def _add_report(subparsers: Any) -> None:
    """``bridge report``: measure a replay folder again and rewrite its report."""
    rp = subparsers.add_parser(
        "report",
        help="measure a replay folder again and rewrite its report (and calibration)",
    )
    rp.add_argument("dir", metavar="DIR", help="replay folder")
    rp.add_argument("--calibration", default=None, metavar="CAL", help="predict with CAL too")
    rp.add_argument("--no-calibration", action="store_true", help="do not rewrite calibration")
    rp.set_defaults(func=_cmd_report)


def _add_calibrate(subparsers: Any) -> None:
    """``bridge calibrate``: write a calibration file from a replay folder."""
    c = subparsers.add_parser(
        "calibrate", help="write a calibration file (throughput table + rescale costs)"
    )
    c.add_argument("dir", metavar="DIR", help="replay folder")
    c.add_argument("--out", required=True, metavar="CAL", help="calibration JSON to write")
    c.add_argument("--csv", default=None, help="also a BFTrainer-format job table (scenarios)")
    c.set_defaults(func=_cmd_calibrate)


def _add_slurm_commands(subparsers: Any) -> None:
    """``bridge slurm-commands``: print a Slurm replay's commands for one trace job."""
    s = subparsers.add_parser(
        "slurm-commands",
        help="print the srun/torchrun commands a Slurm replay of one trace job issues",
    )
    s.add_argument("trace", metavar="TRACE")
    s.add_argument("--job", required=True, help="trace job id")
    s.add_argument("--job-dir", default="/shared/mtgym-bridge", help="shared folder")
    s.add_argument("--workers-per-node", type=int, default=1)
    s.add_argument("--partition", default=None)
    s.add_argument("--node-names", default=None, help="comma-separated host per node index")
    s.add_argument("--python", default="python3")
    s.add_argument("--rdzv-port", type=int, default=29400)
    s.add_argument("--worker-script", default=None, help="worker.py path on the cluster")
    s.add_argument(
        "--token", default=None, help="run token in the step names (default: random per run)"
    )
    s.add_argument("--model", default=None, choices=model_choices())
    s.add_argument("--dp", default="ddp", choices=("ddp", "allreduce"))
    s.set_defaults(func=_cmd_slurm)


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser (``python -m mtgym.bridge``).

    Each sub-command sets ``func``, the handler ``mtgym.command.dispatch`` calls.
    """
    p = argparse.ArgumentParser(
        prog="mtgym bridge", description="Replay simulated decisions on real torch jobs."
    )
    sub = p.add_subparsers(dest="bridge_command", required=True, metavar="ACTION")
    add_bridge_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m mtgym.bridge``.

    Args:
        argv: the arguments without the program name (None: ``sys.argv[1:]``).

    Returns:
        The command's exit status; ``mtgym.command.dispatch`` turns expected errors (bad
        data, unknown names) into a one-line message and status 2.
    """
    from mtgym.command import dispatch

    return dispatch(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
