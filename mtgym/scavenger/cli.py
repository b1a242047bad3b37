"""``mtgym scavenge``: lend a live Slurm cluster's idle nodes to a policy's jobs.

``add_scavenge_command(subparsers)`` is wired into ``mtgym/cli.py``. Heavy modules are
imported inside the command, so ``mtgym --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any


def _echo(rec: dict[str, Any], show_commands: bool = False) -> None:
    """One console line per interesting event (all of them go to events.jsonl).

    Printed: node changes (with the known end relative to now), launches, stops and
    releases, Slurm errors and retries (on stderr), and the start line.

    Args:
        rec: an event record as ``EventLog`` wrote it.
        show_commands: also print a launch's commands after its ``mkdir`` (``--dry-run``).
    """
    ev, rel = rec["event"], rec["rel"]
    if ev.startswith("node_"):
        end = f", needed at +{rec['known_end'] - rec['t']:.0f} s" if rec.get("known_end") else ""
        print(f"{rel:8.2f}s node {rec['name']:<8} {ev[5:]:<9} {rec.get('reason', '')}{end}")
    elif ev == "launch":
        print(
            f"{rel:8.2f}s job {rec['job']:>3} ({rec['name']}) gen {rec['gen']} on "
            f"{','.join(rec['nodes'])}  [predicted {rec['rate']:g} samples/s]"
        )
        for cmd in rec.get("commands", {}).get("launch", [])[1:] if show_commands else []:
            print(f"           $ {shlex.join(cmd)}")
    elif ev in ("release", "stop"):
        extra = f" in {rec['release_s']:.3f} s" if "release_s" in rec else ""
        print(
            f"{rel:8.2f}s job {rec['job']:>3} {ev} gen {rec['gen']} "
            f"({rec['why']}) {','.join(rec['nodes'])}{extra}"
        )
    elif ev in ("slurm_error", "retry"):
        print(f"{rel:8.2f}s {ev}: {rec.get('error', '')}", file=sys.stderr)
    elif ev == "start":
        print(
            f"scavenging {len(rec['nodes'])} nodes ({', '.join(rec['lendable']) or 'none'} idle) "
            f"for {len(rec['jobs'])} jobs with {rec['policy']}, every {rec['poll_s']:g} s"
        )


def _cmd_scavenge(args: argparse.Namespace) -> int:
    """``mtgym scavenge``: build the Slurm client, supply, launcher and loop, then run it.

    ``--out`` is created and proven writable before the first poll. The Slurm commands
    get this process's environment (``SLURM_CONF``); ``--retries`` counts retries, so a
    command is tried ``retries + 1`` times. The jobs are the scenario's at ``--seed``; the
    policy is made from its registered name as is.

    Returns:
        2 without ``--slurm``; otherwise ``_run``'s status. A Slurm that cannot be read at
        the start raises ``SlurmError`` (``mtgym.command.dispatch``: status 2).
    """
    import secrets

    from mtgym.core.io import prepare_out_dir
    from mtgym.policy.registry import make_policy
    from mtgym.scavenger.launch import (
        TokenSlurmLauncher,
        default_python,
    )
    from mtgym.scavenger.loop import Scavenger
    from mtgym.scavenger.slurm import Backoff, SlurmClient
    from mtgym.scavenger.source import SlurmSupply
    from mtgym.scenario.registry import get_generator

    if not args.slurm:
        print("error: only --slurm is supported as the live source", file=sys.stderr)
        return 2
    out = prepare_out_dir(args.out)
    client = SlurmClient(
        env=os.environ,
        timeout_s=args.timeout,
        backoff=Backoff(attempts=args.retries + 1, base_s=args.backoff, seed=args.seed),
        sinfo_json=args.sinfo_json,
    )
    token = args.token or secrets.token_hex(3)
    slurm = TokenSlurmLauncher(
        token=token,
        partition=args.job_partition or args.partition,
        python=default_python(),
        workers_per_node=args.workers_per_node,
        command=tuple(shlex.split(args.command)) if args.command else None,
    )
    launcher = _launcher(args, slurm, client)
    supply = SlurmSupply(
        client,
        partition=args.partition,
        margin_s=args.margin,
        own_prefix=slurm.own_prefix,
        detail=not args.sinfo_only,
        poll_s=args.poll,
    )
    workload = get_generator(args.scenario)(args.seed)
    policy = make_policy(args.policy)
    scav = Scavenger(
        supply,
        policy,
        workload,
        launcher,
        out,
        poll_s=args.poll,
        max_jobs=args.max_jobs,
        model=args.model,
        echo=None if args.quiet else lambda rec: _echo(rec, args.dry_run),
    )
    if args.dry_run or not args.bridge:
        print("(report only: nothing is launched; add --bridge to run the jobs)")
    return _run(scav, args, out)


def _launcher(args: argparse.Namespace, slurm: Any, client: Any) -> Any:
    """What starts the jobs: srun steps or local workers with ``--bridge``, else a report.

    ``--dry-run`` always reports, even with ``--bridge``.

    Args:
        args: the parsed command line (``bridge``, ``dry_run``, ``launcher``, ``graceful``,
            ``workers_per_node``).
        slurm: the ``TokenSlurmLauncher`` that builds the commands.
        client: the ``SlurmClient`` that runs ``scancel``.

    Returns:
        A ``ReportLauncher``, ``SlurmStepLauncher`` or ``LocalStepLauncher``.
    """
    from mtgym.scavenger.launch import LocalStepLauncher, ReportLauncher, SlurmStepLauncher

    if not args.bridge or args.dry_run:
        return ReportLauncher(slurm)
    if args.launcher == "slurm":
        return SlurmStepLauncher(slurm, client, graceful_s=args.graceful)
    from mtgym.bridge.launcher import LocalLauncher

    local = LocalLauncher(workers_per_node=args.workers_per_node)
    return LocalStepLauncher(local, graceful_s=args.graceful)


def _run(scav: Any, args: argparse.Namespace, out: Path) -> int:
    """Run the scavenger until its duration or poll count, or a signal; the exit status.

    SIGTERM and SIGHUP stop every generation as Ctrl-C does (``raise_on_signals``).

    Args:
        scav: the ``Scavenger``.
        args: the parsed command line (``duration``, ``max_polls``).
        out: the output folder, named in the last line.

    Returns:
        0 after a normal end, 130 after Ctrl-C, 128 + the signal after SIGTERM or SIGHUP.
    """
    from mtgym.bridge.procs import Terminated, raise_on_signals

    try:
        with raise_on_signals():  # SIGTERM/SIGHUP stop every generation, as Ctrl-C does
            summary = scav.run(duration_s=args.duration, max_polls=args.max_polls)
    except KeyboardInterrupt:
        print("interrupted: every generation was stopped", file=sys.stderr)
        return 130
    except Terminated as exc:
        print(f"stopped by signal {exc.signum}: every generation was stopped", file=sys.stderr)
        return int(exc.code)
    print(
        f"done: {summary['polls']} polls in {summary['duration_s']:.1f} s; "
        f"{summary['reclaims_released']} reclaims released"
        + (f" (max {summary['release_s_max']:.3f} s)" if summary["release_s_max"] else "")
        + f"; log {out / 'events.jsonl'}"
    )
    return 0


def add_scavenge_command(sub: argparse._SubParsersAction) -> None:
    """Add ``mtgym scavenge`` to the ``mtgym`` sub-commands.

    Options are listed by ``mtgym scavenge --help`` and in ``mtgym/scavenger/README.md``.

    Args:
        sub: the ``mtgym`` parser's sub-parser action; the command sets ``func``.
    """
    p = sub.add_parser(
        "scavenge",
        help="lend a live Slurm cluster's idle nodes to a policy's jobs (optionally run them)",
        description=(
            "Poll Slurm for idle nodes, ask a registered policy which job gets which node, "
            "and (with --bridge) run and rescale the jobs as srun job steps through the "
            "bridge. A node Slurm takes back (allocated, drained, down, not responding, "
            "reserved) is released at once. Without --bridge it only reports the lending."
        ),
    )
    p.add_argument("--slurm", action="store_true", help="read the supply from Slurm (required)")
    p.add_argument("--partition", default=None, help="scavenge only this partition's nodes")
    p.add_argument(
        "--job-partition",
        default=None,
        help="partition the scavenger's own srun jobs go to (default: --partition)",
    )
    p.add_argument("--policy", default="equal-share", help="registered policy (mtgym policies)")
    p.add_argument(
        "--scenario", default="default", help="scenario whose jobs get the nodes (default: default)"
    )
    p.add_argument("--seed", type=int, default=0, help="scenario seed and back-off jitter seed")
    p.add_argument("--max-jobs", type=int, default=None, help="only the first K scenario jobs")
    p.add_argument("--bridge", action="store_true", help="really launch and rescale the jobs")
    p.add_argument(
        "--launcher",
        choices=("slurm", "local"),
        default="slurm",
        help="with --bridge: srun job steps on the lent nodes, or local torch jobs (test)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the srun/scancel commands only")
    p.add_argument("--poll", type=float, default=5.0, help="polling period, s (default 5)")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    p.add_argument("--max-polls", type=int, default=None, help="stop after this many polls")
    p.add_argument(
        "--margin",
        type=float,
        default=30.0,
        help="do not lend a node a reservation/pending job needs within this many s",
    )
    p.add_argument("--out", default="runs/scavenge", help="folder for events.jsonl, summary.json")
    p.add_argument("--timeout", type=float, default=10.0, help="per Slurm command, s")
    p.add_argument("--retries", type=int, default=3, help="retries of a failed Slurm command")
    p.add_argument("--backoff", type=float, default=0.5, help="first retry wait, s (doubles)")
    p.add_argument("--sinfo-json", action="store_true", help="read sinfo --json (Slurm >= 21.08)")
    p.add_argument(
        "--sinfo-only",
        action="store_true",
        help="read only sinfo (no squeue/reservations: no known ends, no own-job detection)",
    )
    p.add_argument("--workers-per-node", type=int, default=1, help="torch workers per node")
    p.add_argument("--model", default=None, help="bridge model for every job (default by class)")
    p.add_argument("--graceful", type=float, default=30.0, help="rescale stop grace, s")
    p.add_argument(
        "--command",
        default=None,
        help="run this command per task instead of torchrun + the worker (smoke tests)",
    )
    p.add_argument("--token", default=None, help="run token in the Slurm job names (random)")
    p.add_argument("--quiet", action="store_true", help="log to the file only")
    p.set_defaults(func=_cmd_scavenge)
