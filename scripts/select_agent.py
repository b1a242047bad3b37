"""Pick a trained agent (and its sampling temperature) on validation seeds, never test ones.

Plays each candidate ``DIR`` (a ``mtgym train --out`` folder: ``model.zip`` + ``agent.json``)
at each ``--temperature`` on the default scenario's seeds ``--seed`` .. ``--seed + --seeds - 1``
(1000-1019 by default: neither the training envs, offset by 2^30, nor the test seeds 500-509
of ``agents/pretrained/README.md``), as ``mtgym evaluate`` plays it, and prints the mean
throughput with its 95 % bootstrap interval and the paired difference against the first
candidate at temperature 1 (``mtgym.stats``). The rule the README states (highest mean) is
applied by the reader; the script prints the ranking and writes ``--out`` JSON.

    .venv/bin/python scripts/select_agent.py runs/A runs/B --temperature 1.0 0.7 0.5 \
        --out runs/select.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from agents.policy import AgentPolicy
from mtgym.core.io import atomic_write_json
from mtgym.policy.play import play
from mtgym.scenario.registry import get_generator
from mtgym.stats import mean_ci, paired


def throughputs(path: Path, temperature: float, scenario: str, seeds: list[int]) -> np.ndarray:
    """The agent's evaluator throughput on each seed."""
    gen = get_generator(scenario)
    pol = AgentPolicy(path, temperature=temperature)
    return np.array([play(gen(s), pol).metrics.throughput for s in seeds])


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("candidates", nargs="+", type=Path)
    p.add_argument("--temperature", type=float, nargs="+", default=[1.0])
    p.add_argument("--scenario", default="default")
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--out", type=Path, default=None)
    ns = p.parse_args()
    seeds = list(range(ns.seed, ns.seed + ns.seeds))
    rows = []
    for c in ns.candidates:
        for t in ns.temperature:
            rows.append((str(c), t, throughputs(c, t, ns.scenario, seeds)))
    ref = rows[0][2]
    table = Table(title=f"{ns.scenario}, seeds {seeds[0]}-{seeds[-1]} (throughput, samples/s)")
    for col in ("candidate", "temperature", "mean [95 % CI]", f"vs {rows[0][0]} (paired)"):
        table.add_column(col, justify="right")
    out = []
    for name, t, x in sorted(rows, key=lambda r: -r[2].mean()):
        ci, pr = mean_ci(x), paired(x, ref, reference=rows[0][0])
        table.add_row(
            name,
            f"{t:g}",
            f"{ci.mean:,.0f} [{ci.ci_low:,.0f}, {ci.ci_high:,.0f}]",
            f"{pr.diff:+,.0f} [{pr.diff_ci_low:+,.0f}, {pr.diff_ci_high:+,.0f}]",
        )
        out.append({"candidate": name, "temperature": t, "per_seed": x.tolist(), **ci.as_dict()})
    Console(width=140).print(table)
    if ns.out:
        atomic_write_json(ns.out, {"seeds": seeds, "rows": out})


if __name__ == "__main__":
    main()
