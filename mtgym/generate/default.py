"""The embedded default scenario (needs no external data; ``make run`` uses it).

64 nodes x 4 GPUs in 4 topology groups of 16 (two groups of A100 nodes, two of V100),
Longhorn-calibrated per-GPU variability, about 35 % of the nodes idle on average in
Summit-shaped windows (median 475 s) plus correlated drains with known ends, 22 independent
jobs of six models arriving over about 3 hours, and an 8-trial HPO campaign (successive
halving, eta 2) starting after 1 hour: 30 jobs in 6 simulated hours.
"""

from __future__ import annotations

from mtgym.generate.supply import SyntheticSupply
from mtgym.generate.synthetic import SyntheticGenerator
from mtgym.generate.workload import Campaign, JobMix

DEFAULT_SEED = 0
#: The default scenario's HPO campaign (``default-family`` varies its kind, model, size and
#: start).
DEFAULT_CAMPAIGN = Campaign(
    kind="hpo",
    model="resnet18",
    num_trials=8,
    start_s=3600.0,
    interarrival_s=120.0,
    eta=2.0,
    rungs=(0.25, 0.5),
    work_hours=(0.5, 1.0),
    work_ref_nodes=2,
    max_nodes=8,
)


def default_generator() -> SyntheticGenerator:
    """The default scenario's generator.

    Returns:
        A ``SyntheticGenerator`` named ``"default"`` (module docstring); call it with a seed
        (``DEFAULT_SEED`` for the reference instance).
    """
    return SyntheticGenerator(
        name="default",
        num_nodes=64,
        gpus_per_node=4,
        group_size=16,
        gpu_types=("A100", "V100"),
        group_types=(0, 0, 1, 1),
        supply=SyntheticSupply(idle_fraction=0.35, drains_per_hour=1.0, drain_nodes_median=6.0),
        horizon_s=6 * 3600.0,
        jobs=JobMix(num_jobs=22, arrival_rate_per_h=7.0, work_hours=(0.5, 2.0), work_ref_nodes=4),
        campaigns=(DEFAULT_CAMPAIGN,),
    )
