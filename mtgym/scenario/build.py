"""``ScenarioSpec`` -> the generator objects of ``mtgym.generate`` (one mapping, no logic).

``SpecGenerator`` is the seeded generator of a scenario file: it builds the instance for a
seed and carries the file's ``episode`` defaults for the env.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mtgym.scenario.schema as sc
from mtgym.core.errors import MtgymError
from mtgym.core.instance import CostModel, Instance
from mtgym.core.types import AppClass, PreemptionMode, RescaleMode
from mtgym.generate.base import Generator
from mtgym.generate.supply import SOURCES
from mtgym.generate.synthetic import SyntheticGenerator
from mtgym.generate.workload import Campaign, Declaration, JobMix, TableWorkload
from mtgym.model.variability import ClassVariability, VariabilitySpec
from mtgym.scenario.paths import resolve_path
from mtgym.scenario.safe_yaml import ScenarioError
from mtgym.scenario.schema import EpisodeSpec, ScenarioSpec


def costs(spec: sc.CostSpec) -> CostModel:
    """The cost model of a ``costs`` section (its names are the enums' values)."""
    return CostModel(RescaleMode(spec.rescale), PreemptionMode(spec.preemption))


def variability(spec: sc.VariabilitySpec | None, base: Path):  # spec, samples or None
    """A ``VariabilitySpec``, measured samples per class, or None.

    ``none`` (or no section) gives None; ``longhorn-like`` the calibrated default with the
    section's correlation; ``parametric`` one ``ClassVariability`` per class; ``measured``
    reads each class's CSV and keeps the per-GPU slowdowns of its first class column
    (a per-GPU file has one; a ready-made table's first is its class A).

    Args:
        spec: The ``variability`` section.
        base: The scenario file's folder (for relative CSV paths).
    """
    if spec is None or spec.kind == "none":
        return None
    if spec.kind == "longhorn-like":
        return VariabilitySpec(correlation=spec.correlation)
    if spec.kind == "parametric":
        return VariabilitySpec(
            {
                AppClass[k]: ClassVariability(**v.model_dump())
                for k, v in (spec.classes or {}).items()
            },
            correlation=spec.correlation,
        )
    from mtgym.readers import read_variability

    out = {}
    for k, rel in (spec.measured or {}).items():
        var = read_variability(resolve_path(rel, base))
        out[AppClass[k]] = var.slowdown[:, 0]
    return out


def supply(spec: sc.SupplySpec, base: Path):  # -> a supply source
    """The supply source of a spec (``mtgym.generate.supply.SOURCES``, by its kind).

    Args:
        spec: The ``supply`` section.
        base: The scenario file's folder; the source resolves its data paths from it.
    """
    return SOURCES[spec.kind].from_spec(spec, lambda value: resolve_path(value, base))


def build_generator(spec: sc.ScenarioSpec, base: Path) -> Generator:
    """The generator a scenario describes.

    ``synthetic`` gives a ``SyntheticGenerator``, ``summit-replay`` a ``SummitReplay``,
    ``pal-philly`` a ``PALPhilly``; data paths are resolved (``${VAR}`` expanded) here.

    Args:
        spec: The validated scenario.
        base: The scenario file's folder.
    """
    g = spec.generator
    if isinstance(g, sc.SyntheticGen):
        return _synthetic_generator(spec.name, g, base)
    if isinstance(g, sc.SummitReplayGen):
        from mtgym.generate.replay import SummitReplay

        return SummitReplay(
            resolve_path(g.fragments, base),
            resolve_path(g.nodes, base),
            resolve_path(g.jobs, base),
            name=spec.name,
            t_start=g.t_start_s,
            t_end=g.t_end_s,
            num_nodes=g.num_nodes,
            variability=variability(g.variability, base),
            costs=costs(g.costs),
        )
    from mtgym.generate.pal_philly import PALPhilly

    return PALPhilly(
        trace=resolve_path(g.trace, base),
        variability_dir=resolve_path(g.variability_dir, base),
        num_hosts=g.num_hosts,
        gpus_per_host=g.gpus_per_host,
        locality=g.locality,
        max_jobs=g.max_jobs,
    )


def _with_tuples(fields: dict[str, Any]) -> dict[str, Any]:
    """A spec's fields (``model_dump``) with its lists as tuples, for frozen dataclasses."""
    return {k: (tuple(v) if isinstance(v, list) else v) for k, v in fields.items()}


def _synthetic_generator(name: str, g: sc.SyntheticGen, base: Path) -> SyntheticGenerator:
    """The ``SyntheticGenerator`` of a synthetic scenario's generator section.

    Args:
        name: The scenario's name.
        g: The ``generator`` section.
        base: The scenario file's folder.
    """
    c = g.cluster
    w = g.workload
    if isinstance(w, sc.MixSpec):
        jobs = JobMix(**_with_tuples(w.model_dump(exclude={"kind"})))
    else:
        jobs = TableWorkload(resolve_path(w.path, base), w.time_offset_s, w.max_jobs, w.startup_s)
    levels = c.levels
    sizes, groups = _level_groups(c, base)
    return SyntheticGenerator(
        name=name,
        num_nodes=c.num_nodes,
        gpus_per_node=c.gpus_per_node,
        gpu_types=tuple(c.gpu_types),
        group_types=tuple(c.group_types),
        level_names=tuple(lv.name for lv in levels),
        bandwidth_gbps=tuple(lv.bandwidth_gbps for lv in levels),
        latency_s=tuple(lv.latency_s for lv in levels),
        locality_factor=tuple(lv.locality_factor for lv in levels),
        level_sizes=sizes,
        level_groups=groups,
        variability=variability(c.variability, base),
        profile_noise=c.variability.profile_noise,
        supply=supply(g.supply, base),
        horizon_s=g.horizon_s,
        jobs=jobs,
        campaigns=tuple(Campaign(**_with_tuples(cs.model_dump())) for cs in g.campaigns),
        declaration=Declaration(**g.declaration.model_dump()),
        costs=costs(g.costs),
    )


def _level_groups(
    c: sc.ClusterSpec, base: Path
) -> tuple[tuple[int, ...] | None, tuple[tuple[int, ...], ...] | None]:
    """The inner topology levels' group sizes, or (with a node list) each node's groups.

    Returns:
        (sizes, None) without a node list; (None, groups) with one, ``groups`` holding one
        tuple per inner level with each node's group id there.

    Raises:
        ValueError: the node list's node count differs from ``num_nodes``.
    """
    inner = c.levels[1:-1]
    if c.nodes is None:
        return tuple(int(lv.group_size) for lv in inner), None  # type: ignore[arg-type]
    from mtgym.readers.node_list import read_node_list

    nl = read_node_list(resolve_path(c.nodes, base), [lv.name for lv in inner])
    if nl.num_nodes != c.num_nodes:
        raise ValueError(
            f"generator.cluster.nodes: the node list has {nl.num_nodes:,} nodes but "
            f"num_nodes is {c.num_nodes:,}"
        )
    return None, tuple(tuple(col) for col in nl.group_ids.T.tolist())


@dataclass(frozen=True)
class SpecGenerator:
    """The generator a scenario file describes; ``episode`` holds the env defaults.

    Attributes:
        spec: The validated scenario.
        base_dir: The folder relative data paths start from (the file's folder).
        source: The scenario file, named in build errors; None names the scenario.
    """

    spec: ScenarioSpec
    base_dir: Path
    source: Path | None = None

    @property
    def name(self) -> str:
        """The scenario's name."""
        return self.spec.name

    @property
    def episode(self) -> EpisodeSpec:
        """Environment defaults."""
        return self.spec.episode

    def __call__(self, seed: int) -> Instance:
        """Build the instance for ``seed``.

        A supply with no idle window in the episode is a ``ScenarioError`` (nothing could
        ever run); so is a data or parameter error met while building, with the file named.

        The generator is rebuilt from the spec on every call (nothing is cached).

        Args:
            seed: The episode's seed.

        Raises:
            ScenarioError: as above; the original error is its ``__cause__``.
        """
        where = self.source if self.source is not None else self.spec.name
        try:
            inst = build_generator(self.spec, self.base_dir)(seed)
        except (MtgymError, KeyError, ValueError) as exc:
            if isinstance(exc, ScenarioError):
                raise
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            raise ScenarioError(f"{where}: building generator (seed {seed}): {msg}") from exc
        if inst.supply.num_windows == 0:
            raise ScenarioError(
                f"{where}: generator.supply: no idle window between t={inst.t_start:g} s and "
                f"t={inst.t_end:g} s (seed {seed}); check the supply's start time and span"
            )
        return inst
