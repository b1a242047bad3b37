"""Compare a learned agent with every baseline on the same evaluation seeds.

Writes, as ``mtgym evaluate`` does (``mtgym.evaluate``): ``out/results.json`` (intervals and
paired differences against ``reference``, default ``freetrain``; the agent's entry is named
``agent``), ``out/results.md`` (the same tables as markdown), ``out/tradeoff.png`` (the
headline, normalised throughput, against the mean JCT of the jobs every policy completed, one
point per policy with its 95 % intervals as error bars: ``mtgym.tradeoff``), one TensorBoard
run per policy under ``out/tb/<policy>/`` with the shared tags (``eval/normalized_throughput``
first), summary scalars and hparams (so ``tensorboard --logdir out/tb`` overlays learned and
MILP curves). Also ``out/compare.png``: normalised throughput, mean JCT over the common jobs,
jobs completed and the share of each seed's hindsight bound (``bound_fraction``,
``mtgym.hindsight``) per policy as bars, each with its 95 % bootstrap interval over seeds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.policy import PRETRAINED, AgentPolicy


@dataclass(frozen=True)
class CompareRun:
    """How ``compare`` plays its episodes.

    Attributes:
        progress: show a transient progress bar.
        hindsight: each seed's hindsight bound and every policy's ``bound_fraction`` of it
            (``mtgym.evaluate.evaluate``).
        journal: a ``mtgym.benchmark.journal.Journal`` (``for_evaluation``): episodes and
            bounds written as they finish, and those it holds (``--resume``) not played.
    """

    progress: bool = True
    hindsight: bool = True
    journal: Any = None


def compare(
    scenario: str,
    agent: str | Path | None,
    out: Path,
    *,
    seeds: list[int],
    baselines: list[str] | None = None,
    reference: str | None = None,
    run: CompareRun = CompareRun(),
) -> dict:
    """Run the agent and the baselines; write results, TensorBoard runs and the charts.

    Args:
        scenario: a registered scenario name or a scenario file (``get_generator``).
        agent: a ``model.zip`` or its folder; None: the shipped agent (``PRETRAINED``).
        out: the output folder (created), as in the module docstring.
        seeds: the evaluation seeds; every policy plays each seed's same instance.
        baselines: registered policy names; None: every registered policy but ``agent``
            and the ``*-milp`` ones (the node-level MILPs, much slower).
        reference: the policy the paired differences are taken against; None:
            ``freetrain`` (``mtgym.evaluate.resolve_reference``).
        run: the progress bar, the bounds and the journal (``CompareRun``).

    Returns:
        ``out/results.json``'s content.

    Raises:
        ValueError: ``reference`` is not one of the compared policies (before any episode).
    """
    from mtgym.evaluate import evaluate
    from mtgym.policy.registry import default_policies, make_policy
    from mtgym.scenario.registry import get_generator

    gen = get_generator(scenario)
    names = baselines or default_policies(learned=False)
    path = Path(agent) if agent else PRETRAINED
    policies = [("agent", lambda: _agent_policy(path))] + [
        (n, lambda n=n: make_policy(n)) for n in names
    ]
    evaluate(
        gen,
        policies,
        seeds,
        out=out,
        progress=run.progress,
        scenario_name=scenario,
        reference=reference,
        hindsight=run.hindsight,
        journal=run.journal,
    )
    results = json.loads((out / "results.json").read_text())
    plot(results, out / "compare.png")
    return results


#: (metric, axis label, scale) of the chart's panels
PANELS = (
    ("normalized_throughput", "normalised throughput (best-node equivalents)", 1.0),
    ("jct_common_mean", "mean JCT, jobs all completed (h)", 1 / 3600.0),
    ("jobs_completed", "jobs completed", 1.0),
    ("bound_fraction", "share of the hindsight bound", 1.0),
)


def _num(v: object) -> float:
    """A results entry as a float; None (no value, e.g. no job completed) as NaN."""
    return float("nan") if v is None else float(v)  # type: ignore[arg-type]


def plot(results: dict, path: Path) -> None:
    """Write ``figure(results)`` to ``path`` (PNG, 80 dpi) and close the figure.

    Args:
        results: ``results.json``'s content.
        path: the PNG file.
    """
    import matplotlib.pyplot as plt

    fig = figure(results)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def figure(results: dict) -> Any:
    """Bar charts with 95 % interval error bars (matplotlib Agg); a missing value draws no bar.

    Args:
        results: ``results.json``'s content: ``policies`` (name -> metrics, with
            ``ci_low`` and ``ci_high`` by metric), ``seeds``, ``scenario``, ``reference``.

    Returns:
        A matplotlib figure: one panel per ``PANELS`` entry, a bar per policy (the agent
        red, baselines blue), in the order of ``results["policies"]``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(results["policies"])
    colors = ["tab:red" if n == "agent" else "tab:blue" for n in names]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 4))
    for ax, (key, label, scale) in zip(axes, PANELS, strict=True):
        entries = [results["policies"][n] for n in names]
        mean = np.array([_num(e.get(key)) for e in entries]) * scale
        lo = np.array([_num(e.get("ci_low", {}).get(key)) for e in entries]) * scale
        hi = np.array([_num(e.get("ci_high", {}).get(key)) for e in entries]) * scale
        err = np.vstack([np.nan_to_num(mean - lo), np.nan_to_num(hi - mean)])
        ax.bar(names, np.nan_to_num(mean), yerr=np.maximum(err, 0.0), capsize=3, color=colors)
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=45)
    n = len(results["seeds"])
    axes[0].set_title(f"{results['scenario']}: {n} seeds, 95 % bootstrap intervals")
    ref = results.get("reference")
    if ref:
        axes[1].set_title(f"reference for paired differences: {ref}")
    fig.tight_layout()
    return fig


def _agent_policy(path: Path) -> Any:
    """The agent at ``path``: an RLlib run (``agent.json``'s ``algo`` ``"rllib-ppo"``) as
    ``RLlibAgentPolicy``, else an SB3 model as ``AgentPolicy``.
    """
    from agents.policy import AgentConfig
    from agents.rllib_policy import RLLIB_ALGO, RLlibAgentPolicy

    cfg = path / "agent.json" if path.is_dir() else path.parent / "agent.json"
    if cfg.is_file() and AgentConfig.load(cfg).algo == RLLIB_ALGO:
        return RLlibAgentPolicy(path)
    return AgentPolicy(path)
