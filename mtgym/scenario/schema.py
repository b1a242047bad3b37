"""The scenario schema (pydantic v2). Units are in field names (``_s``, ``_gbps``).

A scenario file (YAML or JSON) has: ``name``, ``description``, a ``generator`` (one of
``synthetic``, ``summit-replay``, ``pal-philly``) and an ``episode`` section. Paths may use
``${MTGYM_DATA}`` (the real-data folder: that variable, else ``../shared/data`` beside the
repository) and are otherwise relative to the scenario file. Unknown fields are errors.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Pos = Annotated[float, Field(gt=0)]
NonNeg = Annotated[float, Field(ge=0)]
Prob = Annotated[float, Field(ge=0, le=1)]
ClassName = Literal["A", "B", "C", "D"]


class Strict(BaseModel):
    """Forbid unknown fields; immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# -- cluster ---------------------------------------------------------------------------
class LevelSpec(Strict):
    """One topology level.

    The first is the node, the last the whole system; levels in between have ``group_size``
    nodes per group, each a multiple of the previous.
    """

    name: str = Field(min_length=1)
    group_size: int | None = Field(None, ge=1)
    bandwidth_gbps: Pos
    latency_s: NonNeg
    locality_factor: float = Field(1.0, ge=1.0)


class ClassVariabilitySpec(Strict):
    """Lognormal body with rare outliers for one class (see ``mtgym.model.variability``)."""

    sigma: float = Field(0.02, ge=0, lt=1)
    outlier_prob: Prob = 0.0
    outlier_min: float = Field(1.1, ge=1)
    outlier_max: float = Field(1.1, ge=1)
    floor: float = Field(0.9, gt=0, le=1)


class VariabilitySpec(Strict):
    """Per-GPU slowdowns.

    ``longhorn-like`` (the calibrated default), ``none``, ``parametric`` (give ``classes``)
    or ``measured`` (resample per-GPU factors from PAL's CSVs: ``measured`` maps a class to a
    file).
    """

    kind: Literal["longhorn-like", "none", "parametric", "measured"] = "longhorn-like"
    correlation: Prob = 0.7
    classes: dict[ClassName, ClassVariabilitySpec] | None = None
    measured: dict[ClassName, str] | None = None
    profile_noise: float = Field(0.01, ge=0, lt=0.5)

    @model_validator(mode="after")
    def _need(self) -> VariabilitySpec:
        if self.kind == "parametric" and (not self.classes or len(self.classes) != 4):
            raise ValueError("kind 'parametric' needs 'classes' for all of A, B, C, D")
        if self.kind == "measured" and not self.measured:
            raise ValueError("kind 'measured' needs 'measured': {class: csv path}")
        return self


class ClusterSpec(Strict):
    """Nodes, GPU types and topology of a synthetic machine."""

    num_nodes: int = Field(ge=1)
    gpus_per_node: int = Field(4, ge=1)
    gpu_types: list[str] = Field(default_factory=lambda: ["A100"], min_length=1)
    group_types: list[int] = Field(default_factory=lambda: [0], min_length=1)
    levels: list[LevelSpec] = Field(min_length=3)
    variability: VariabilitySpec = Field(default_factory=VariabilitySpec)

    @model_validator(mode="after")
    def _levels(self) -> ClusterSpec:
        inner = self.levels[1:-1]
        if self.levels[0].group_size not in (None, 1) or self.levels[-1].group_size is not None:
            raise ValueError("levels: the first (node) and last (system) levels take no group_size")
        sizes = [lv.group_size for lv in inner]
        if any(s is None for s in sizes):
            raise ValueError("levels: every level between node and system needs group_size")
        for a, b in itertools.pairwise(sizes):
            if b % a:  # type: ignore[operator]
                raise ValueError(f"levels: group_size {b} is not a multiple of {a}")
        if max(self.group_types) >= len(self.gpu_types) or min(self.group_types) < 0:
            raise ValueError(f"group_types: indices must be in 0..{len(self.gpu_types) - 1}")
        return self


# -- supply ----------------------------------------------------------------------------
class SyntheticSupplySpec(Strict):
    """Summit-calibrated synthetic windows (``mtgym.generate.supply.SyntheticSupply``)."""

    kind: Literal["synthetic"] = "synthetic"
    idle_fraction: float = Field(0.083, gt=0, lt=1)
    window_median_s: Pos = 475.0
    window_mean_s: Pos = 1191.6
    min_window_s: NonNeg = 50.0
    end_known_prob: Prob = 0.0
    drains_per_hour: NonNeg = 0.0
    drain_nodes_median: float = Field(8.0, ge=1)
    drain_median_s: Pos = 1800.0

    @model_validator(mode="after")
    def _order(self) -> SyntheticSupplySpec:
        if self.window_median_s > self.window_mean_s:
            raise ValueError("window_median_s must be <= window_mean_s (lognormal tail)")
        if self.min_window_s >= self.window_median_s:
            raise ValueError("min_window_s must be < window_median_s")
        return self


class TraceSupplySpec(Strict):
    """Replay of recorded idle windows (``summit-idle-fragments.csv.gz`` format)."""

    kind: Literal["trace"]
    path: str
    trace_start_s: NonNeg = 0.0


class SWFSupplySpec(Strict):
    """An SWF job log replayed through FCFS + EASY backfilling."""

    kind: Literal["swf"]
    path: str
    procs_per_node: int | None = Field(None, ge=1)
    log_start_s: NonNeg = 0.0
    known_ends: bool = True


class AlwaysIdleSpec(Strict):
    """Every node idle for the whole episode (a dedicated cluster)."""

    kind: Literal["always-idle"]


SupplySpec = Annotated[
    SyntheticSupplySpec | TraceSupplySpec | SWFSupplySpec | AlwaysIdleSpec,
    Field(discriminator="kind"),
]


# -- workload --------------------------------------------------------------------------
class MixSpec(Strict):
    """Independent jobs of catalog models arriving as a Poisson process."""

    kind: Literal["mix"] = "mix"
    num_jobs: int = Field(30, ge=0)
    arrival_rate_per_h: Pos = 10.0
    start_s: NonNeg = 0.0
    models: dict[str, Pos] = Field(
        default_factory=lambda: {
            "resnet50": 3,
            "resnet18": 2,
            "transformer": 2,
            "lm": 1,
            "recommendation": 1,
            "cyclegan": 1,
        }
    )
    min_nodes: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [1, 1, 2], min_length=1
    )
    max_nodes: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=lambda: [4, 8, 16], min_length=1
    )
    work_hours: tuple[Pos, Pos] = (0.5, 2.0)
    work_ref_nodes: int = Field(4, ge=1)
    r_up_s: tuple[NonNeg, NonNeg] = (17.0, 19.0)
    r_down_s: tuple[NonNeg, NonNeg] = (11.0, 13.0)
    startup_s: NonNeg = 30.0
    ckpt_every_s: Pos = 600.0

    @model_validator(mode="after")
    def _ranges(self) -> MixSpec:
        for name in ("work_hours", "r_up_s", "r_down_s"):
            lo, hi = getattr(self, name)
            if lo > hi:
                raise ValueError(f"{name}: low {lo} > high {hi}")
        return self


class TableSpec(Strict):
    """Jobs from a BFTrainer-format CSV (measured throughput curves)."""

    kind: Literal["table"]
    path: str
    time_offset_s: NonNeg = 0.0
    max_jobs: int | None = Field(None, ge=1)
    startup_s: NonNeg = 0.0


class CampaignSpec(Strict):
    """A NAS or HPO campaign with successive-halving stops (``mtgym.generate.workload``)."""

    kind: Literal["hpo", "nas"] = "hpo"
    model: str = "resnet18"
    num_trials: int = Field(16, ge=1)
    start_s: NonNeg = 0.0
    interarrival_s: NonNeg = 60.0
    eta: float = Field(3.0, ge=1)
    rungs: list[Annotated[float, Field(gt=0, lt=1)]] = Field(default_factory=lambda: [1 / 9, 1 / 3])
    work_hours: tuple[Pos, Pos] = (0.25, 0.5)
    work_ref_nodes: int = Field(1, ge=1)
    min_nodes: int = Field(1, ge=1)
    max_nodes: int = Field(8, ge=1)
    arch_sigma: NonNeg = 0.3
    r_up_s: NonNeg = 18.0
    r_down_s: NonNeg = 12.0
    startup_s: NonNeg = 30.0

    @model_validator(mode="after")
    def _rungs(self) -> CampaignSpec:
        if any(b <= a for a, b in zip(self.rungs, self.rungs[1:], strict=False)):
            raise ValueError("rungs must increase")
        if self.min_nodes > self.max_nodes:
            raise ValueError("min_nodes must be <= max_nodes")
        return self


class DeclarationSpec(Strict):
    """How users misdeclare curves and costs (FreeTrain's inputs)."""

    curve_bias: Pos = 1.0
    curve_sigma: float = Field(0.0, ge=0, lt=3)
    cost_bias: Pos = 1.0
    cost_sigma: float = Field(0.0, ge=0, lt=3)


class CostSpec(Strict):
    """Rescale and pre-emption semantics (``docs/model.md``)."""

    rescale: Literal["pause", "bftrainer"] = "pause"
    preemption: Literal["rdown", "checkpoint"] = "rdown"


# -- generators ------------------------------------------------------------------------
class SyntheticGen(Strict):
    """A synthetic machine with any supply and workload source."""

    kind: Literal["synthetic"]
    cluster: ClusterSpec
    supply: SupplySpec = Field(default_factory=SyntheticSupplySpec)
    workload: MixSpec | TableSpec = Field(default_factory=MixSpec, discriminator="kind")
    campaigns: list[CampaignSpec] = Field(default_factory=list)
    declaration: DeclarationSpec = Field(default_factory=DeclarationSpec)
    costs: CostSpec = Field(default_factory=CostSpec)
    horizon_s: Pos = 6 * 3600.0


class SummitReplayGen(Strict):
    """BFTrainer's setup: the Summit idle trace and a BFTrainer job table."""

    kind: Literal["summit-replay"]
    fragments: str
    nodes: str
    jobs: str
    t_start_s: NonNeg = 0.0
    t_end_s: Pos | None = None
    num_nodes: int | None = Field(None, ge=1)
    variability: VariabilitySpec | None = None
    costs: CostSpec = Field(
        default_factory=lambda: CostSpec(rescale="bftrainer", preemption="rdown")
    )


class PALPhillyGen(Strict):
    """PAL's 64-GPU experiment: a Sia-Philly trace on 16 hosts x 4 GPUs, Longhorn variability."""

    kind: Literal["pal-philly"]
    trace: str
    variability_dir: str
    num_hosts: int = Field(16, ge=1)
    gpus_per_host: int = Field(4, ge=1)
    locality: float = Field(1.7, ge=1)
    max_jobs: int | None = Field(None, ge=1)


GeneratorSpec = Annotated[
    SyntheticGen | SummitReplayGen | PALPhillyGen, Field(discriminator="kind")
]


class EpisodeSpec(Strict):
    """Defaults for the environment and the policies run on this scenario.

    ``t_fwd_s`` is BFTrainer's forward-looking time T_fwd ("how long a new allocation is
    expected to last", a property of the machine's idle windows): the T_fwd-based allocators
    (``freetrain*``, ``malletrain``) use it unless built with an explicit ``t_fwd``. The
    default is the paper's 10 s; the ``default`` scenario sets the value its documented sweep
    chose (``scripts/sweep_tfwd.py``).
    """

    horizon_s: Pos | None = None
    decision_interval_s: Pos | None = None
    reward: Literal["progress", "throughput", "jct"] = "progress"
    info_mode: Literal["user", "profiled", "oracle"] = "user"
    action_mode: Literal["counts", "assign", "delta"] = "counts"
    max_jobs: int = Field(16, ge=1)
    t_fwd_s: Pos = 10.0


class ScenarioSpec(Strict):
    """A whole scenario file."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    generator: GeneratorSpec
    episode: EpisodeSpec = Field(default_factory=EpisodeSpec)
