"""The scenario schema (pydantic v2). Units are in field names (``_s``, ``_gbps``).

A scenario file (YAML or JSON) has: ``name``, ``description``, a ``generator`` (one of
``synthetic``, ``summit-replay``, ``pal-philly``) and an ``episode`` section. Paths may use
``${MTGYM_DATA}`` (the real-data folder: that variable, else ``../shared/data`` beside the
repository) and are otherwise relative to the scenario file. Unknown fields are errors.

Every float must be finite (``.inf`` and ``.nan`` are refused), every integer a real integer
(``true`` and ``4.0`` are refused), and names (models, GPU types, classes) are enums, so
the JSON Schema (``mtgym scenario schema``) lists what is allowed. Sizes are bounded by
``mtgym.core.limits``; ``mtgym.scenario.check`` adds
the checks that need the file system (paths) and a memory estimate of the build.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Literal, Union

from pydantic import Field, model_validator

from mtgym.core.limits import (
    MAX_GPUS_PER_NODE,
    MAX_HORIZON_S,
    MAX_JOBS,
    MAX_NODES,
    MAX_SLOTS,
    MIN_DECISION_INTERVAL_S,
    MIN_DURATION_S,
)
from mtgym.core.names import (
    ACTION_MODES,
    DEFAULT_ACTION_MODE,
    DEFAULT_INFO_MODE,
    DEFAULT_REWARD,
    INFO_MODES,
    REWARD_NAMES,
)
from mtgym.core.spec import Duration, Int, Knob, NonNeg, Pos, Prob, Strict, desc
from mtgym.generate import mix_defaults as mix
from mtgym.generate.catalog import CATALOG
from mtgym.generate.supply import SOURCES, AlwaysIdle, SWFSupply, SyntheticSupply, TraceSupply

#: Model names of the parametric catalog (``mtgym.generate.catalog.CATALOG``).
MODEL_NAMES: tuple[str, ...] = tuple(sorted(CATALOG))
#: GPU types every catalog model has a rate for.
GPU_TYPES: tuple[str, ...] = tuple(
    sorted(set.intersection(*(set(p.rate_per_gpu) for p in CATALOG.values())))
)
ModelName = Literal[MODEL_NAMES]  # type: ignore[valid-type]
GpuType = Literal[GPU_TYPES]  # type: ignore[valid-type]

ClassName = Literal["A", "B", "C", "D"]
_d = desc


# -- cluster ---------------------------------------------------------------------------
class LevelSpec(Strict):
    """One topology level.

    The first is the node, the last the whole system; levels in between have ``group_size``
    nodes per group (consecutive node indices), each a multiple of the previous so groups
    nest. ``num_nodes`` need not be a multiple: the last group of a level is then partial
    (4,360 nodes in groups of 128 give 34 full groups and one of 8). With a node list
    (``cluster.nodes``) the groups come from the file and the levels take no ``group_size``.
    """

    name: str = _d("level name (node, rack, group, system, ...)", min_length=1)
    group_size: Int | None = _d(
        "nodes per group (levels between node and system only)", None, ge=1, le=MAX_NODES
    )
    bandwidth_gbps: Pos = _d("per-node bandwidth across this level, GB/s", le=1e6)
    latency_s: NonNeg = _d("per-message latency across this level, s", le=1.0)
    locality_factor: float = _d(
        "slowdown factor of a job spanning this level (>= 1)", 1.0, ge=1.0, le=100.0
    )


class ClassVariabilitySpec(Strict):
    """Lognormal body with rare outliers for one class (see ``mtgym.model.variability``)."""

    sigma: float = _d("lognormal sigma of per-GPU slowdowns", 0.02, ge=0, lt=1)
    outlier_prob: Prob = _d("probability that a GPU is an outlier", 0.0)
    outlier_min: float = _d("smallest outlier slowdown (>= 1)", 1.1, ge=1, le=100)
    outlier_max: float = _d("largest outlier slowdown (>= outlier_min)", 1.1, ge=1, le=100)
    floor: float = _d("smallest slowdown (a fast GPU), in (0, 1]", 0.9, gt=0, le=1)

    @model_validator(mode="after")
    def _order(self) -> ClassVariabilitySpec:
        if self.outlier_min > self.outlier_max:
            raise ValueError(f"outlier_min {self.outlier_min} > outlier_max {self.outlier_max}")
        return self


class VariabilitySpec(Strict):
    """Per-GPU slowdowns.

    ``longhorn-like`` (the calibrated default), ``none``, ``parametric`` (give ``classes``)
    or ``measured`` (resample per-GPU factors from PAL's CSVs: ``measured`` maps a class to a
    file).
    """

    kind: Literal["longhorn-like", "none", "parametric", "measured"] = _d(
        "source of per-GPU slowdowns", "longhorn-like"
    )
    correlation: Prob = _d("correlation of a GPU's slowdowns across classes", 0.7)
    classes: dict[ClassName, ClassVariabilitySpec] | None = _d(
        "per-class parameters (kind parametric: all of A, B, C, D)", None
    )
    measured: dict[ClassName, str] | None = _d(
        "class -> CSV of measured slowdowns (kind measured)", None
    )
    profile_noise: float = _d(
        "relative noise of the profiled (observed) slowdowns", 0.01, ge=0, lt=0.5
    )

    @model_validator(mode="after")
    def _need(self) -> VariabilitySpec:
        if self.kind == "parametric" and (not self.classes or len(self.classes) != 4):
            raise ValueError("kind 'parametric' needs 'classes' for all of A, B, C, D")
        if self.kind == "measured" and not self.measured:
            raise ValueError("kind 'measured' needs 'measured': {class: csv path}")
        return self


class ClusterSpec(Strict):
    """Nodes, GPU types and topology of a synthetic machine."""

    num_nodes: Int = _d(f"number of nodes (1..{MAX_NODES:,})", ge=1, le=MAX_NODES)
    gpus_per_node: Int = _d("GPUs per node", 4, ge=1, le=MAX_GPUS_PER_NODE)
    gpu_types: list[GpuType] = _d(
        "GPU type names (indexed by group_types)",
        default_factory=lambda: ["A100"],
        min_length=1,
        max_length=len(GPU_TYPES),
    )
    group_types: list[Annotated[Int, Field(ge=0)]] = _d(
        "GPU type index of each top-level group, cycled over the groups",
        default_factory=lambda: [0],
        min_length=1,
        max_length=MAX_NODES,
    )
    levels: list[LevelSpec] = _d(
        "topology levels, node first and system last", min_length=3, max_length=8
    )
    nodes: str | None = _d(
        "node list CSV (may use ${MTGYM_DATA}): one row per node in node order, a column "
        "named after each level between node and system holding the node's group there "
        "(mtgym.readers.node_list); replaces the levels' group_size",
        None,
        min_length=1,
    )
    variability: VariabilitySpec = _d("per-GPU slowdowns", default_factory=VariabilitySpec)

    @model_validator(mode="after")
    def _levels(self) -> ClusterSpec:
        inner = self.levels[1:-1]
        if self.levels[0].group_size not in (None, 1) or self.levels[-1].group_size is not None:
            raise ValueError("levels: the first (node) and last (system) levels take no group_size")
        sizes = [lv.group_size for lv in inner]
        if self.nodes is not None:
            if any(s is not None for s in sizes):
                raise ValueError(
                    "levels: no group_size with a node list (cluster.nodes gives the groups)"
                )
            if len({lv.name for lv in inner}) != len(inner):
                raise ValueError("levels: names between node and system must differ (columns)")
            sizes = []
        elif any(s is None for s in sizes):
            raise ValueError(
                "levels: every level between node and system needs group_size "
                "(or give a node list, cluster.nodes)"
            )
        for a, b in itertools.pairwise(sizes):
            if b % a:  # type: ignore[operator]
                raise ValueError(
                    f"levels: group_size {b} is not a multiple of {a} (groups must nest)"
                )
        if max(self.group_types) >= len(self.gpu_types):
            raise ValueError(f"group_types: indices must be in 0..{len(self.gpu_types) - 1}")
        return self


# -- supply: each source's spec lives in its module (mtgym.generate.supply) -------------
SyntheticSupplySpec = SyntheticSupply.Spec
TraceSupplySpec = TraceSupply.Spec
SWFSupplySpec = SWFSupply.Spec
AlwaysIdleSpec = AlwaysIdle.Spec
SupplySpec = Annotated[
    Union[tuple(src.Spec for src in SOURCES.values())],  # noqa: UP007  (built from the registry)
    Field(discriminator="kind"),
]


# -- workload --------------------------------------------------------------------------
class MixSpec(Strict):
    """Independent jobs of catalog models arriving as a Poisson process."""

    kind: Literal["mix"] = _d("a Poisson mix of catalog models", "mix")
    num_jobs: Int = _d("number of jobs", mix.NUM_JOBS, ge=0, le=MAX_JOBS)
    arrival_rate_per_h: Pos = _d("mean arrivals per hour", mix.ARRIVAL_RATE_PER_H, le=1e6)
    start_s: NonNeg = _d("time of the first possible arrival, s", mix.START_S, le=MAX_HORIZON_S)
    models: dict[ModelName, Pos] = _d(
        "catalog model -> relative weight",
        default_factory=lambda: dict(mix.MODELS),
        min_length=1,
    )
    min_nodes: list[Annotated[Int, Field(ge=1, le=MAX_NODES)]] = _d(
        "choices of a job's minimum nodes (uniform)",
        default_factory=lambda: list(mix.MIN_NODES),
        min_length=1,
        max_length=1000,
    )
    max_nodes: list[Annotated[Int, Field(ge=1, le=MAX_NODES)]] = _d(
        "choices of a job's maximum nodes (uniform; each >= every min_nodes choice)",
        default_factory=lambda: list(mix.MAX_NODES),
        min_length=1,
        max_length=1000,
    )
    work_hours: tuple[Pos, Pos] = _d(
        "range of a job's work, hours on work_ref_nodes", mix.WORK_HOURS
    )
    work_ref_nodes: Int = _d(
        "node count the work is measured on", mix.WORK_REF_NODES, ge=1, le=MAX_NODES
    )
    r_up_s: tuple[NonNeg, NonNeg] = _d("range of the scale-up pause, s", mix.R_UP_S)
    r_down_s: tuple[NonNeg, NonNeg] = _d("range of the scale-down pause, s", mix.R_DOWN_S)
    startup_s: NonNeg = _d("start-up pause, s", mix.STARTUP_S)
    ckpt_every_s: Pos = _d("checkpoint period, s", mix.CKPT_EVERY_S, ge=MIN_DURATION_S)

    @model_validator(mode="after")
    def _ranges(self) -> MixSpec:
        for name in ("work_hours", "r_up_s", "r_down_s"):
            lo, hi = getattr(self, name)
            if lo > hi:
                raise ValueError(f"{name}: low {lo} > high {hi}")
        if max(self.min_nodes) > min(self.max_nodes):
            raise ValueError(
                f"min_nodes: choice {max(self.min_nodes)} is above max_nodes choice "
                f"{min(self.max_nodes)}; every min_nodes must be <= every max_nodes"
            )
        return self


class TableSpec(Strict):
    """Jobs from a BFTrainer-format CSV (measured throughput curves)."""

    kind: Literal["table"] = _d("jobs from a BFTrainer-format CSV")
    path: str = _d("the jobs CSV (may use ${MTGYM_DATA})", min_length=1)
    time_offset_s: NonNeg = _d("added to every submission time, s", 0.0)
    max_jobs: Int | None = _d("keep the first max_jobs jobs (None: all)", None, ge=1, le=MAX_JOBS)
    startup_s: NonNeg = _d("start-up pause, s", 0.0)


class CampaignSpec(Strict):
    """A NAS or HPO campaign with successive-halving stops (``mtgym.generate.workload``)."""

    kind: Literal["hpo", "nas"] = _d("hyper-parameter or architecture search", "hpo")
    model: ModelName = _d("catalog model of the trials", "resnet18")
    num_trials: Int = _d("number of trials", 16, ge=1, le=MAX_JOBS)
    start_s: NonNeg = _d("time of the first trial, s", 0.0, le=MAX_HORIZON_S)
    interarrival_s: NonNeg = _d("time between trials, s", 60.0, le=MAX_HORIZON_S)
    eta: float = _d("successive-halving reduction factor", 3.0, ge=1, le=1000)
    rungs: list[Annotated[float, Field(gt=0, lt=1)]] = _d(
        "work fractions at which trials are judged (increasing)",
        default_factory=lambda: [1 / 9, 1 / 3],
        max_length=64,
    )
    work_hours: tuple[Pos, Pos] = _d("range of a trial's work, hours", (0.25, 0.5))
    work_ref_nodes: Int = _d("node count the work is measured on", 1, ge=1, le=MAX_NODES)
    min_nodes: Int = _d("a trial's minimum nodes", 1, ge=1, le=MAX_NODES)
    max_nodes: Int = _d("a trial's maximum nodes (>= min_nodes)", 8, ge=1, le=MAX_NODES)
    arch_sigma: NonNeg = _d("lognormal sigma of per-architecture rate (nas)", 0.3, le=5)
    r_up_s: NonNeg = _d("scale-up pause, s", 18.0)
    r_down_s: NonNeg = _d("scale-down pause, s", 12.0)
    startup_s: NonNeg = _d("start-up pause, s", 30.0)

    @model_validator(mode="after")
    def _rungs(self) -> CampaignSpec:
        if any(b <= a for a, b in zip(self.rungs, self.rungs[1:], strict=False)):
            raise ValueError("rungs must increase")
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"min_nodes {self.min_nodes} must be <= max_nodes {self.max_nodes}")
        lo, hi = self.work_hours
        if lo > hi:
            raise ValueError(f"work_hours: low {lo} > high {hi}")
        return self


class DeclarationSpec(Strict):
    """How users misdeclare curves and costs (FreeTrain's inputs)."""

    curve_bias: Pos = _d("declared / true throughput (1 = honest)", 1.0, le=1e3)
    curve_sigma: float = _d("lognormal noise of declared curves", 0.0, ge=0, lt=3)
    cost_bias: Pos = _d("declared / true rescale cost (1 = honest)", 1.0, le=1e3)
    cost_sigma: float = _d("lognormal noise of declared costs", 0.0, ge=0, lt=3)


class CostSpec(Strict):
    """Rescale and pre-emption semantics (``docs/model.md``)."""

    rescale: Literal["pause", "bftrainer"] = _d("how a rescale is charged", "pause")
    preemption: Literal["rdown", "checkpoint"] = _d("how a reclaimed node is charged", "rdown")


# -- generators ------------------------------------------------------------------------
class SyntheticGen(Strict):
    """A synthetic machine with any supply and workload source."""

    kind: Literal["synthetic"] = _d("a synthetic machine")
    cluster: ClusterSpec = _d("nodes, GPU types, topology")
    supply: SupplySpec = _d("where idle windows come from", default_factory=SyntheticSupplySpec)
    workload: MixSpec | TableSpec = _d(
        "where jobs come from", default_factory=MixSpec, discriminator="kind"
    )
    campaigns: list[CampaignSpec] = _d("HPO/NAS campaigns", default_factory=list, max_length=1000)
    declaration: DeclarationSpec = _d(
        "how users misdeclare curves and costs", default_factory=DeclarationSpec
    )
    costs: CostSpec = _d("rescale and pre-emption semantics", default_factory=CostSpec)
    horizon_s: Duration = _d("episode length, s", 6 * 3600.0)


class SummitReplayGen(Strict):
    """BFTrainer's setup: the Summit idle trace and a BFTrainer job table."""

    kind: Literal["summit-replay"] = _d("the Summit idle trace with a BFTrainer job table")
    fragments: str = _d("idle-fragments CSV (may use ${MTGYM_DATA})", min_length=1)
    nodes: str = _d("nodes CSV (may use ${MTGYM_DATA})", min_length=1)
    jobs: str = _d("BFTrainer jobs CSV (may use ${MTGYM_DATA})", min_length=1)
    t_start_s: NonNeg = _d("trace time of the episode start, s", 0.0)
    t_end_s: Pos | None = _d("trace time of the episode end, s (None: the trace's)", None)
    num_nodes: Int | None = _d(
        "use the first num_nodes nodes (None: all)", None, ge=1, le=MAX_NODES
    )
    variability: VariabilitySpec | None = _d("per-GPU slowdowns (None: none)", None)
    costs: CostSpec = _d(
        "rescale and pre-emption semantics",
        default_factory=lambda: CostSpec(rescale="bftrainer", preemption="rdown"),
    )

    @model_validator(mode="after")
    def _span(self) -> SummitReplayGen:
        if self.t_end_s is not None and self.t_end_s <= self.t_start_s:
            raise ValueError(f"t_end_s {self.t_end_s} must be > t_start_s {self.t_start_s}")
        return self


class PALPhillyGen(Strict):
    """PAL's 64-GPU experiment: a Sia-Philly trace on 16 hosts x 4 GPUs, Longhorn variability."""

    kind: Literal["pal-philly"] = _d("PAL's Sia-Philly experiment")
    trace: str = _d("Sia-Philly workload CSV (may use ${MTGYM_DATA})", min_length=1)
    variability_dir: str = _d("folder of PAL's variability CSVs", min_length=1)
    num_hosts: Int = _d("hosts", 16, ge=1, le=MAX_NODES)
    gpus_per_host: Int = _d("GPUs per host", 4, ge=1, le=MAX_GPUS_PER_NODE)
    locality: float = _d("cross-host slowdown factor", 1.7, ge=1, le=100)
    max_jobs: Int | None = _d("keep the first max_jobs jobs (None: all)", None, ge=1, le=MAX_JOBS)


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

    horizon_s: Duration | None = _d("episode length, s (None: the scenario's)", None)
    decision_interval_s: float | None = _d(
        f"decide every that many seconds (None: at every event; >= {MIN_DECISION_INTERVAL_S})",
        None,
        ge=MIN_DECISION_INTERVAL_S,
        le=MAX_HORIZON_S,
    )
    reward: Literal[REWARD_NAMES] = _d("reward function", DEFAULT_REWARD)  # type: ignore[valid-type]
    info_mode: Literal[INFO_MODES] = _d("what the agent is told", DEFAULT_INFO_MODE)  # type: ignore[valid-type]
    action_mode: Literal[ACTION_MODES] = _d("action encoding", DEFAULT_ACTION_MODE)  # type: ignore[valid-type]
    max_jobs: Int | None = _d(
        f"job slots S (1..{MAX_SLOTS}; None: one per node, at most {MAX_SLOTS}: "
        "mtgym.env.slots.slot_rule)",
        None,
        ge=1,
        le=MAX_SLOTS,
    )
    t_fwd_s: Pos = _d(
        "BFTrainer's forward-looking time T_fwd, s (the T_fwd-based allocators' default)",
        10.0,
        le=MAX_HORIZON_S,
    )
    baselines: dict[str, dict[str, Knob]] = _d(
        "knobs of baselines on this scenario, by registered policy name (e.g. "
        "{freetrain: {max_jobs: 64}}); a policy built without them takes these, and a "
        "`mtgym tune` record (scenarios/tuning/<name>.json) fills the policies not named here",
        default_factory=dict,
    )


class ScenarioSpec(Strict):
    """A whole scenario file."""

    name: str = _d(
        "scenario name (letters, digits, _ . -)",
        min_length=1,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
    )
    description: str = _d("one line shown by `mtgym scenario list`", "")
    generator: GeneratorSpec = _d("what builds the instance")
    episode: EpisodeSpec = _d("defaults of the env", default_factory=EpisodeSpec)
