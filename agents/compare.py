"""Compare a learned agent with every baseline on the same evaluation seeds.

Writes ``out/results.json`` (as ``mtgym evaluate``; the agent's entry is named ``agent``),
one TensorBoard run per policy under ``out/tb/<policy>/`` with the shared tags (so
``tensorboard --logdir out/tb`` overlays learned and MILP curves), and ``out/compare.png``,
a bar chart of throughput (fraction of the upper bound) and mean JCT per policy.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from agents.policy import PRETRAINED, AgentPolicy


def compare(
    scenario: str,
    agent: str | Path | None,
    out: Path,
    *,
    seeds: list[int],
    baselines: list[str] | None = None,
    progress: bool = True,
) -> dict:
    """Run the agent and the baselines; write results, TensorBoard runs and the chart."""
    from mtgym.evaluate import evaluate
    from mtgym.policy.registry import available_policies, make_policy
    from mtgym.scenario.registry import get_generator

    gen = get_generator(scenario)
    names = baselines or [
        n for n in available_policies() if n != "agent" and not n.endswith("-milp")
    ]
    path = Path(agent) if agent else PRETRAINED
    policies = [("agent", lambda: AgentPolicy(path))] + [
        (n, lambda n=n: make_policy(n)) for n in names
    ]
    evaluate(gen, policies, seeds, out=out, progress=progress, scenario_name=scenario)
    results = json.loads((out / "results.json").read_text())
    plot(results, out / "compare.png")
    return results


def plot(results: dict, path: Path) -> None:
    """A two-panel bar chart (matplotlib Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["policies"])
    ub = [results["policies"][n].get("upper_bound_fraction") or 0.0 for n in names]
    jct = [results["policies"][n].get("jct_mean") for n in names]
    jct = [
        0.0 if (v is None or (isinstance(v, float) and math.isnan(v))) else v / 3600.0 for v in jct
    ]
    colors = ["tab:red" if n == "agent" else "tab:blue" for n in names]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    axes[0].bar(names, ub, color=colors)
    axes[0].set_ylabel("samples / upper bound")
    axes[0].set_title(f"{results['scenario']}: throughput ({len(results['seeds'])} seeds)")
    axes[1].bar(names, jct, color=colors)
    axes[1].set_ylabel("mean JCT (h)")
    axes[1].set_title("job completion time")
    for ax in axes:
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
