"""Measure the live scavenger on a throw-away local Slurm (needs Slurm installed, root).

Prints:
- poll latency: one ``sinfo`` round trip, and a full poll (sinfo + squeue + reservations);
- drain -> release: from ``scontrol update state=drain`` on a lent node to the scavenger
  having released it (polling every ``--poll`` s: about half a period on average, plus
  the poll itself);
- srun: from ``srun`` to the step RUNNING, and the release of a pre-empted step.

    .venv/bin/python scripts/bench_scavenger.py [--nodes 8] [--repeats 10] [--poll 0.5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from mtgym.policy.equal_share import EqualShare
from mtgym.scavenger.launch import ReportLauncher, SlurmStepLauncher, TokenSlurmLauncher
from mtgym.scavenger.loop import Scavenger
from mtgym.scavenger.slurm import SlurmClient
from mtgym.scavenger.source import SlurmSupply
from mtgym.scavenger.testing import LocalSlurm
from mtgym.testing.kit import linear_job, tiny_instance


def fmt(xs: list[float]) -> str:
    xs = sorted(xs)
    return (
        f"median {1e3 * statistics.median(xs):7.1f} ms, "
        f"p90 {1e3 * xs[int(0.9 * (len(xs) - 1))]:7.1f} ms, max {1e3 * xs[-1]:7.1f} ms (n={len(xs)})"
    )


def drain_to_release(cluster, scav, poll_s, repeats) -> list[float]:
    out = []
    for _ in range(repeats):
        held = scav.holdings()
        node = sorted(n for v in held.values() for n in v)[0]
        t_drain = time.monotonic()
        cluster.drain(node, "bench")
        while any(node in v for v in scav.holdings().values()):
            time.sleep(poll_s)
            scav.step()
        out.append(time.monotonic() - t_drain)
        cluster.resume(node)
        while node not in {n for v in scav.holdings().values() for n in v}:
            time.sleep(poll_s)
            scav.step()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--poll", type=float, default=0.5)
    args = ap.parse_args()
    jobs = [linear_job(f"j{i}", 10.0, args.nodes, 1e12) for i in range(2)]
    t = time.monotonic()
    with LocalSlurm(num_nodes=args.nodes) as cluster, tempfile.TemporaryDirectory() as tmp:
        print(f"local Slurm with {args.nodes} nodes up in {time.monotonic() - t:.2f} s")
        client = SlurmClient(env=cluster.env, timeout_s=5.0)
        sinfo, full = [], []
        for _ in range(args.repeats * 3):
            t = time.monotonic()
            client.nodes("scav")
            sinfo.append(time.monotonic() - t)
            t = time.monotonic()
            client.snapshot("scav")
            full.append(time.monotonic() - t)
        print(f"sinfo round trip:        {fmt(sinfo)}")
        print(f"full poll (3 commands):  {fmt(full)}")

        inst = tiny_instance(args.nodes, jobs)
        sup = SlurmSupply(client, partition="scav", own_prefix="mtgym-bench-")
        scav = Scavenger(
            sup,
            EqualShare(),
            inst,
            ReportLauncher(TokenSlurmLauncher(token="bench")),
            Path(tmp) / "report",
            poll_s=args.poll,
        )
        scav.open()
        scav.step()
        d = drain_to_release(cluster, scav, args.poll, args.repeats)
        scav.close()
        print(f"drain -> released (poll {args.poll:g} s, report launcher): {fmt(d)}")

        # real srun steps (a sleep per task) that Slurm pre-empts for a host job
        sl = TokenSlurmLauncher(token="bench2", partition="scav", command=("sleep", "600"))
        launcher = SlurmStepLauncher(sl, client, graceful_s=2.0)
        sup = SlurmSupply(client, partition="scav", own_prefix=sl.own_prefix)
        scav = Scavenger(sup, EqualShare(), inst, launcher, Path(tmp) / "srun", poll_s=args.poll)
        running, drained = [], []
        try:
            scav.open()
            for _ in range(max(3, args.repeats // 2)):
                t = time.monotonic()
                scav.step()
                while True:
                    out = cluster.run(["squeue", "-h", "-t", "R", "-o", "%j"]).stdout.split()
                    if sum(x.startswith(sl.own_prefix) for x in out) >= len(launcher.steps) > 0:
                        break
                    time.sleep(0.02)
                running.append(time.monotonic() - t)
                drained += drain_to_release(cluster, scav, args.poll, 1)
        finally:
            scav.close()
        print(f"srun -> steps RUNNING:   {fmt(running)}")
        print(f"drain -> srun step released (scancel + srun exit): {fmt(drained)}")
        rel = scav.release_s
        print(f"reclaim seen -> released (the loop's own latency): {fmt(rel)}")
    print(f"every daemon stopped: {cluster.pids() == []}")


if __name__ == "__main__":
    main()
