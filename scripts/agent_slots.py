"""Does the shipped agent need more than 1,024 job slots? The agent (scale-free ``shares``
head) on ``summit-manyjobs``, where over 1,000 jobs are active at once for hours, with
1,024 slots (``slot_rule``'s ceiling until issue [refs]), 2,048 and one per node (4,734,
``slot_rule`` since), on the tuning seeds (6000-6002: no test seed, no seed the agent was
selected on). Paired ratios to the first slot count with 95 % intervals; decision latency
per call. Prints a table, asserts nothing.

    .venv/bin/python scripts/agent_slots.py [--slots 1024 2048 4734] [--seeds 6000 6001 6002]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mtgym.evaluate import configure_policy, scenario_defaults
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.scenario.registry import get_generator
from mtgym.stats import paired


def main() -> None:
    """Play the agent at each slot count on each seed; print headline, JCT and latency."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", default="summit-manyjobs")
    p.add_argument("--slots", type=int, nargs="+", default=[1024, 2048, 4734])
    p.add_argument("--seeds", type=int, nargs="+", default=[6000, 6001, 6002])
    ns = p.parse_args()
    gen = get_generator(ns.scenario)
    defaults = scenario_defaults(gen)
    rows: dict[int, list[tuple[float, float, float, float]]] = {s: [] for s in ns.slots}
    for seed in ns.seeds:
        inst = gen(seed)
        for s in ns.slots:
            pol = configure_policy(make_policy("agent", max_jobs=s), defaults)
            t0 = time.perf_counter()
            res = play(inst, pol)
            wall = time.perf_counter() - t0
            m = res.metrics
            rows[s].append(
                (m.normalized_throughput, m.jobs_completed, wall / max(res.decisions, 1), wall)
            )
            print(
                f"seed {seed} slots {s}: headline {m.normalized_throughput:.3f}, "
                f"done {m.jobs_completed}, {1e3 * wall / max(res.decisions, 1):.1f} ms/decision",
                flush=True,
            )
    base = np.array([r[0] for r in rows[ns.slots[0]]])
    print(f"\n{ns.scenario}, seeds {ns.seeds}, the shipped agent:")
    print("| slots | headline | x first | jobs done | ms/decision |")
    print("|---:|---:|---:|---:|---:|")
    for s in ns.slots:
        h = np.array([r[0] for r in rows[s]])
        pr = paired(h, base, reference=f"{ns.slots[0]} slots")
        print(
            f"| {s} | {h.mean():.3f} | {pr.ratio:.3f} [{pr.ratio_ci_low:.3f}, {pr.ratio_ci_high:.3f}] | "
            f"{np.mean([r[1] for r in rows[s]]):.1f} | "
            f"{1e3 * np.mean([r[2] for r in rows[s]]):.1f} |"
        )


if __name__ == "__main__":
    main()
