"""The benchmark's named splits: what agents may train on, and what they are judged on.

**Test split** (``TEST``): scenarios and seeds that no training or selection may touch. Nine
scenarios: ``polaris`` (560 nodes, four topology levels), ``nas-campaign`` (a 64-trial NAS
campaign), ``swf-lublin`` (supply = holes of an EASY-backfilled log), ``hetero-mix`` (three
GPU types), ``pal-philly-64gpu`` (PAL's Sia-Philly experiment, real data),
``summit-replay-2d`` (2 days of the Summit idle trace with BFTrainer's ImageNet jobs, real
data), ``summit-manyjobs`` (6 h of the Summit idle trace on 4,734 nodes with 2,000 small jobs,
more than 1,000 active at once for half the episode: where an admission cap binds, real
supply), and the default scenario at 128 and 512 nodes (``default-128``, ``default-512``). The
seeds are ``TEST_SEED_START`` onwards (9000..9009 for a full run, 9000..9001 for
``--quick``), the same for every scenario and every policy (paired). They are disjoint from
every seed range the shipped agent, its selection and the T_fwd sweep used (``USED_SEEDS``:
500-509, 700-729, 1000-1019, 4000-4029, as ``agents/pretrained/README.md`` and the presets
record them) and from the training seeds (>= 2^30).

**Quick run** (``--quick``): the first ``QUICK_SEEDS`` seeds of the full run, each scenario
played whole (``quick_horizon_s`` None), so a quick episode *is* a full-run episode and the
quick run ranks policies as the full run does on those seeds. Until issue 34 it played 1-6 h
prefixes on three seeds; those prefixes ranked baselines unlike the full run (the queue of
the large machines builds up later, and a 12-hour prefix of ``pal-philly-64gpu`` hid a
policy that never starts some jobs). The agreement of this design with the full run is
measured in ``docs/benchmark.md`` (``mtgym.benchmark.agreement``).

**Train split** (``TRAIN``): the scenario family ``default-family`` (the default scenario
randomised over node count, GPU mix, topology depth and job mix; ``mtgym.generate.family``,
registered by name in ``mtgym.scenario.registry``) and ``summit-manyjobs-train`` (the
many-jobs scenario on another day of the trace) with seeds ``>= TRAIN_SEED_MIN`` (2^30).
It is named here by string only: nothing in this module imports the family's generator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

#: first test seed (a full run uses FULL_SEEDS consecutive seeds from here, quick QUICK_SEEDS)
TEST_SEED_START = 9000
FULL_SEEDS = 10
QUICK_SEEDS = 2
#: training seeds are at or above this (the test seeds are far below)
TRAIN_SEED_MIN = 2**30
#: seed ranges (inclusive) the shipped agent, its selection or the T_fwd sweep already used
USED_SEEDS = ((500, 509), (700, 729), (1000, 1019), (4000, 4029))
#: the registered baselines fast enough for every benchmark run (the node-level ``*-milp``
#: variants are not; ``freetrain-paper`` and ``freetrain-tfwd10`` are reference settings)
FAST_BASELINES = (
    "freetrain",
    "freetrain-speedup",
    "freetrain-aware",
    "greedy",
    "packed",
    "pal",
    "pm-first",
    "malletrain",
    "equal-share",
    "random",
)


@dataclass(frozen=True)
class SuiteScenario:
    """One scenario of a split and how short its quick run is.

    Attributes:
        name: a scenario name of ``mtgym.scenario.registry`` (preset or built-in).
        quick_horizon_s: ``--quick`` plays ``[t_start, t_start + this]`` simulated seconds;
            None: all of it (every scenario of ``TEST`` since issue 34).
    """

    name: str
    quick_horizon_s: float | None


@dataclass(frozen=True)
class Split:
    """A named set of scenarios, each run on the same seeds by every policy.

    Attributes:
        name: the split's name (``--split``).
        description: one line for help texts.
        scenarios: the scenarios, in report order.
        seed_start: the first seed.
        full_seeds: seeds of a full run, consecutive from ``seed_start``.
        quick_seeds: seeds of a quick run: the first of the full run's.
    """

    name: str
    description: str
    scenarios: tuple[SuiteScenario, ...]
    seed_start: int = TEST_SEED_START
    full_seeds: int = FULL_SEEDS
    quick_seeds: int = QUICK_SEEDS

    def seeds(self, *, quick: bool = False) -> list[int]:
        """The split's seeds (the quick run's are the first of the full run's).

        Args:
            quick: the quick run's ``quick_seeds`` instead of the full ``full_seeds``.
        """
        n = self.quick_seeds if quick else self.full_seeds
        return list(range(self.seed_start, self.seed_start + n))

    def horizon_s(self, scenario: SuiteScenario, *, quick: bool = False) -> float | None:
        """Simulated seconds to play from the start (None: the scenario's own horizon).

        Args:
            scenario: one of the split's scenarios.
            quick: the quick run's horizon (``quick_horizon_s``); a full run always plays
                the whole scenario.
        """
        return scenario.quick_horizon_s if quick else None

    @property
    def names(self) -> list[str]:
        """The scenario names, in report order."""
        return [s.name for s in self.scenarios]

    def only(self, names: Iterable[str]) -> Split:
        """The split with only the scenarios ``names`` (``mtgym benchmark --scenario``): the
        same name, seeds and order, fewer scenarios. Scoring such a run defines no suite
        score (``mtgym.benchmark.scoring.score_split``'s ``skipped``).

        Args:
            names: scenario names of this split (repeats ignored).

        Raises:
            KeyError: a name that is not one of this split's (the message lists them).
        """
        wanted = set(names)
        unknown = sorted(wanted - set(self.names))
        if unknown:
            raise KeyError(
                f"scenario {unknown[0]!r} is not in the {self.name} split; its scenarios: "
                f"{', '.join(self.names)}"
            )
        return replace(self, scenarios=tuple(s for s in self.scenarios if s.name in wanted))


@dataclass(frozen=True)
class TrainSplit:
    """What agents may train on: scenario families and seeds (named, not imported).

    Attributes:
        name: the split's name.
        description: one line for help texts.
        scenarios: scenario (family) names of ``mtgym.scenario.registry``.
        seed_min: the smallest training seed (``TRAIN_SEED_MIN``, 2^30).
    """

    name: str
    description: str
    scenarios: tuple[str, ...]
    seed_min: int = TRAIN_SEED_MIN

    def check_seed(self, seed: int) -> int:
        """``seed`` if it belongs to the train split; ``ValueError`` (one line) otherwise.

        Args:
            seed: a seed a training run asks for.

        Returns:
            ``seed`` as an int.

        Raises:
            ValueError: ``seed`` < ``seed_min`` (it may be a test seed).
        """
        if int(seed) < self.seed_min:
            raise ValueError(
                f"seed {seed} is not a training seed: the train split uses seeds >= "
                f"{self.seed_min} (2^30); lower seeds may be test seeds"
            )
        return int(seed)


#: The test split (module docstring); the quick run plays its first two seeds whole.
TEST = Split(
    name="test",
    description="scenarios and seeds no training or selection may touch",
    scenarios=(
        SuiteScenario("polaris", quick_horizon_s=None),
        SuiteScenario("nas-campaign", quick_horizon_s=None),
        SuiteScenario("swf-lublin", quick_horizon_s=None),
        SuiteScenario("hetero-mix", quick_horizon_s=None),
        SuiteScenario("pal-philly-64gpu", quick_horizon_s=None),
        SuiteScenario("summit-replay-2d", quick_horizon_s=None),
        SuiteScenario("summit-manyjobs", quick_horizon_s=None),
        SuiteScenario("default-128", quick_horizon_s=None),
        SuiteScenario("default-512", quick_horizon_s=None),
    ),
)

#: The train split (module docstring).
TRAIN = TrainSplit(
    name="train",
    description="the default scenario randomised over node count, GPU mix, topology depth "
    "and job mix, and the many-jobs Summit scenario on another day, seeds >= 2^30",
    scenarios=("default-family", "summit-manyjobs-train"),
)

#: Splits ``mtgym benchmark --split`` runs.
SPLITS: dict[str, Split] = {TEST.name: TEST}


def get_split(name: str) -> Split:
    """The split called ``name``; ``KeyError`` naming the known ones.

    Args:
        name: a key of ``SPLITS`` (``"test"``).
    """
    if name not in SPLITS:
        raise KeyError(f"unknown split {name!r}; known splits: {', '.join(SPLITS)}")
    return SPLITS[name]


def is_test_seed(seed: int, split: Split = TEST) -> bool:
    """Whether ``seed`` is one of ``split``'s (full-run) seeds.

    Args:
        seed: the seed to check.
        split: the split (default: the test split, seeds 9000-9009).
    """
    return split.seed_start <= int(seed) < split.seed_start + split.full_seeds


def refuse_test_seeds(seeds: Iterable[int], *, what: str, split: Split = TEST) -> None:
    """``ValueError`` (one line naming the split) if any of ``seeds`` is one of ``split``'s.

    Called where training, imitation, DAgger, agent selection and baseline tuning take
    their seeds, so none of them touches the test split.

    Args:
        seeds: the seeds a run is about to use.
        what: who uses them, for the message (e.g. ``"mtgym train --eval-seeds"``).
        split: the split to keep out (default: the test split, seeds 9000-9009).

    Raises:
        ValueError: e.g. ``seed 9000 is in the test split 'test' (seeds 9000-9009): mtgym
            train --eval-seeds may not use it; pick seeds outside 9000-9009 (training seeds
            are >= 2^30)``.
    """
    bad = sorted({int(s) for s in seeds if is_test_seed(s, split)})
    if not bad:
        return
    span = f"{split.seed_start}-{split.seed_start + split.full_seeds - 1}"
    which = f"seed {bad[0]} is" if len(bad) == 1 else f"seeds {', '.join(map(str, bad))} are"
    raise ValueError(
        f"{which} in the {split.name} split {split.name!r} (seeds {span}): {what} may not use "
        f"{'it' if len(bad) == 1 else 'them'}; pick seeds outside {span} (training seeds are "
        f">= 2^30)"
    )
