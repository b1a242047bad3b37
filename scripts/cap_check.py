"""Issue [refs]'s check of the admission cap: is the registered ``freetrain`` (no arguments:
the scenario's tuned knobs) within 2 % of ``freetrain`` with ``max_jobs=4096`` (every other
knob as registered), paired over the ten seeds of the test split on ``summit-replay-2d``?

Each seed's instance is played by both; the script prints per seed both headlines, jobs
done and whether the two episodes' rows are equal bit for bit, then the paired ratio with
its 95 % interval and the verdict. ``--untuned`` compares the untuned defaults instead (the
scaled admission cap of ``mtgym.policy.tunable.admission_cap`` against 4,096, each with the
policy's untuned T_fwd and objective). Episodes run in ``--workers`` processes. With
``--record NAME`` it writes a result file into the registry (kind ``cap_check``). Asserts
nothing: the verdict is printed.

    .venv/bin/python scripts/cap_check.py [--scenario summit-replay-2d] [--cap 4096] \\
        [--untuned] [--workers 2] [--record cap-check-summit-2d]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from mtgym.benchmark.splits import TEST
from mtgym.results.rows import same_episode
from mtgym.stats import paired

#: the issue's bound on the registered policy's distance from the large cap
TOLERANCE = 0.02


def episode(scenario: str, seed: int, cap: int | None, tuned: bool) -> dict[str, Any]:
    """One episode of ``freetrain`` (``max_jobs=cap`` when given) on ``scenario``'s
    instance ``seed``: its row (``mtgym.evaluate.episode_row``) and wall seconds."""
    from mtgym.evaluate import configure_policy, episode_row, scenario_defaults
    from mtgym.policy.play import play
    from mtgym.policy.registry import make_policy
    from mtgym.scenario.registry import get_generator

    gen = get_generator(scenario)
    inst = gen(seed)
    kw: dict[str, Any] = {"tuned": tuned}
    if cap is not None:
        kw["max_jobs"] = cap
    pol = configure_policy(make_policy("freetrain", **kw), scenario_defaults(gen))
    t0 = time.perf_counter()
    res = play(inst, pol)
    row = episode_row(inst, res, seed)
    return {**row, "cap": cap, "tuned": tuned, "wall_s": time.perf_counter() - t0}


def main() -> None:
    from mtgym.results import cli as results_cli
    from mtgym.results import hashes, store
    from mtgym.results.provenance import command_line

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--scenario", default="summit-replay-2d")
    p.add_argument("--cap", type=int, default=4096)
    p.add_argument("--untuned", action="store_true")
    p.add_argument("--workers", type=int, default=2)
    results_cli.add_record_options(p)
    ns = p.parse_args()
    provenance = None
    if ns.record is not None:
        try:
            provenance = results_cli.start(ns)
        except (ValueError, FileExistsError) as exc:
            raise SystemExit(f"error: {exc}") from None
        provenance["command"] = command_line(["scripts/cap_check.py", *sys.argv[1:]], "python")
    seeds = TEST.seeds()
    tuned = not ns.untuned
    t0 = time.perf_counter()
    jobs = [(ns.scenario, s, c, tuned) for s in seeds for c in (None, ns.cap)]
    with ProcessPoolExecutor(max_workers=max(ns.workers, 1)) as pool:
        rows = list(pool.map(episode, *zip(*jobs, strict=True)))
    wall_s = time.perf_counter() - t0
    base = [r for r in rows if r["cap"] is None]
    big = [r for r in rows if r["cap"] is not None]
    label = "registered (tuned)" if tuned else "untuned default"
    print(
        f"{ns.scenario}, test seeds {seeds[0]}-{seeds[-1]}: freetrain {label} vs max_jobs={ns.cap}"
    )
    print("| seed | headline | with the cap | jobs done | with the cap | same episode |")
    print("|---:|---:|---:|---:|---:|---|")
    same = 0
    for a, b in zip(base, big, strict=True):
        eq = same_episode(a, b, ignore=("cap",))
        same += eq
        print(
            f"| {a['seed']} | {a['normalized_throughput']:.3f} | "
            f"{b['normalized_throughput']:.3f} | {a['jobs_completed']:.0f} | "
            f"{b['jobs_completed']:.0f} | {'yes' if eq else 'no'} |"
        )
    x = np.array([r["normalized_throughput"] for r in base])
    ref = np.array([r["normalized_throughput"] for r in big])
    pr = paired(x, ref, reference=f"max_jobs={ns.cap}")
    within = abs(pr.ratio - 1.0) <= TOLERANCE
    print(
        f"\nratio {pr.ratio:.4f} [{pr.ratio_ci_low:.4f}, {pr.ratio_ci_high:.4f}] of max_jobs="
        f"{ns.cap} over {pr.n} seeds; {same} of {len(base)} episodes identical; "
        f"{'within' if within else 'NOT within'} {TOLERANCE:.0%}; wall {wall_s:.0f} s"
    )
    if provenance is not None:
        result = store.build(
            "cap_check",
            provenance,
            seeds=list(seeds),
            scenarios=hashes.scenario_entries([ns.scenario]),
            wall_s=wall_s,
            rows=[{**r, "scenario": ns.scenario, "policy": "freetrain"} for r in rows],
            aggregates={
                "cap": ns.cap,
                "tuned": tuned,
                "ratio": pr.ratio,
                "ratio_ci": [pr.ratio_ci_low, pr.ratio_ci_high],
                "identical_episodes": same,
                "within_tolerance": bool(within),
                "tolerance": TOLERANCE,
            },
        )
        results_cli.save(ns, result, None)


if __name__ == "__main__":
    main()
