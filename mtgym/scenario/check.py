"""The checks of a scenario that need more than its text but not its data.

``check_spec(spec, path)`` raises one ``ScenarioError`` listing every problem, each naming
the file, the field path and the value:

- every data path (``${VAR}`` expanded) exists, is a file (a folder for
  ``variability_dir``) and is readable;
- the estimated memory of building the instance (``estimate_build_bytes``) is at most
  ``MAX_BUILD_BYTES`` unless ``allow_large``.

Names (models, GPU types, classes), finite numbers, size limits and the nesting of topology
levels are the schema's (``mtgym.scenario.schema``); what needs the data read (a table's
columns, a trace's rows) is ``validate --build``'s.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import mtgym.scenario.schema as sc
from mtgym.scenario.paths import problems_message, resolve_path
from mtgym.scenario.safe_yaml import ScenarioError

#: Largest estimated build memory accepted without ``allow_large`` / ``--allow-large``.
MAX_BUILD_BYTES = 1 << 30  # 1 GiB

_CELL_BYTES = 64  # synthetic supply: ~8 float64 arrays of (nodes x cycles) while sampling
_DRAIN_BYTES = 200  # one drained-node entry (Python lists while drains are placed)
_NODE_BYTES = 512  # per node: topology coordinates, slowdowns, state arrays


def _paths(spec: sc.ScenarioSpec) -> Iterator[tuple[str, str, bool]]:
    """(field path, value, is a folder) of every data path of ``spec``.

    Synthetic: a replayed supply's ``path``, a table workload's ``path``, the node list
    and measured variability CSVs. Summit replay: its three CSVs and measured
    variability. PAL-Philly: the trace and the variability folder.
    """
    g = spec.generator

    def var(v: sc.VariabilitySpec | None, where: str) -> Iterator[tuple[str, str, bool]]:
        """The measured-variability CSVs of ``v`` (none for other kinds), under ``where``."""
        if v is not None and v.kind == "measured":
            for k, rel in (v.measured or {}).items():
                yield f"{where}.variability.measured.{k}", rel, False

    if isinstance(g, sc.SyntheticGen):
        if isinstance(getattr(g.supply, "path", None), str):  # a replayed source's file
            yield "generator.supply.path", g.supply.path, False
        if isinstance(g.workload, sc.TableSpec):
            yield "generator.workload.path", g.workload.path, False
        if g.cluster.nodes is not None:
            yield "generator.cluster.nodes", g.cluster.nodes, False
        yield from var(g.cluster.variability, "generator.cluster")
    elif isinstance(g, sc.SummitReplayGen):
        for name in ("fragments", "nodes", "jobs"):
            yield f"generator.{name}", getattr(g, name), False
        yield from var(g.variability, "generator")
    else:
        yield "generator.trace", g.trace, False
        yield "generator.variability_dir", g.variability_dir, True


def _path_problem(value: str, base: Path, folder: bool) -> str | None:
    """What is wrong with one data path, or None when it is usable.

    Args:
        value: The path as written (``${VAR}`` allowed).
        base: The scenario file's folder (relative paths start there).
        folder: The path must be a readable, searchable folder, else a readable file.
    """
    try:
        p = resolve_path(value, base)
    except ScenarioError as exc:
        return str(exc)
    if not p.exists():
        return f"no such {'folder' if folder else 'file'} {str(p)!r}"
    if folder and not p.is_dir():
        return f"{str(p)!r} is not a folder"
    if not folder and not p.is_file():
        return f"{str(p)!r} is not a file"
    if not os.access(p, os.R_OK | (os.X_OK if folder else 0)):
        return f"{str(p)!r} is not readable"
    return None


def _synthetic_cells(g: sc.SyntheticGen) -> float:
    """Nodes x sampled cycles of a synthetic supply (``SyntheticSupply.generate``).

    Cycles: the horizon over one idle-plus-busy cycle (``window_mean_s / idle_fraction``),
    with a margin of 1.5x plus 6 standard deviations plus 8, as the sampler draws them.
    An always-idle or recorded supply counts one cell per node.
    """
    s, n, span = g.supply, g.cluster.num_nodes, g.horizon_s
    if isinstance(s, sc.AlwaysIdleSpec):
        return float(n)
    if not isinstance(s, sc.SyntheticSupplySpec):
        return float(n)  # (recorded windows: bounded by the data file)
    cycle = s.window_mean_s / s.idle_fraction
    cycles = span / cycle * 1.5 + 6 * math.sqrt(span / cycle) + 8
    return n * cycles


def estimate_build_bytes(spec: sc.ScenarioSpec) -> int:
    """An estimate (upper end) of the peak memory of building ``spec``'s instance, bytes.

    Synthetic: sampled supply cells, drained-node entries, per-node arrays and about 2 kB
    per job (mix jobs and campaign trials). Summit replay: per-node arrays of its nodes
    (4,734 when ``num_nodes`` is None). PAL-Philly: per-GPU arrays. Data files' own size
    is not counted. Capped at 2**62.
    """
    g = spec.generator
    if isinstance(g, sc.SyntheticGen):
        total = _synthetic_cells(g) * _CELL_BYTES + g.cluster.num_nodes * _NODE_BYTES
        s = g.supply
        if isinstance(s, sc.SyntheticSupplySpec) and s.drains_per_hour > 0:
            drains = s.drains_per_hour * g.horizon_s / 3600.0
            # e x the median: above the mean of the lognormal(sigma 1) block size, e^0.5 x
            size = min(s.drain_nodes_median * math.e, g.cluster.num_nodes)
            total += drains * size * _DRAIN_BYTES
        jobs = (g.workload.num_jobs if isinstance(g.workload, sc.MixSpec) else 0) + sum(
            c.num_trials for c in g.campaigns
        )
        total += jobs * 2048
        return int(min(total, 2**62))
    if isinstance(g, sc.SummitReplayGen):
        return int((g.num_nodes or 4734) * _NODE_BYTES)
    return int(g.num_hosts * g.gpus_per_host * _NODE_BYTES)


def check_spec(spec: sc.ScenarioSpec, path: str | Path, *, allow_large: bool = False) -> None:
    """Raise ``ScenarioError`` listing every problem above (nothing when all hold).

    Args:
        spec: The validated scenario.
        path: The scenario file; relative data paths are resolved from its folder, and
            the message names it.
        allow_large: Accept an estimate above ``MAX_BUILD_BYTES``.
    """
    p = Path(path)
    base = p.resolve().parent
    problems = []
    for field, value, folder in _paths(spec):
        why = _path_problem(value, base, folder)
        if why is not None:
            problems.append(f"{field}: {why}; got {value!r}")
    est = estimate_build_bytes(spec)
    if est > MAX_BUILD_BYTES and not allow_large:
        problems.append(
            f"generator: building this instance needs about {est / 2**30:,.1f} GiB "
            f"(limit {MAX_BUILD_BYTES / 2**30:g} GiB); shrink num_nodes/horizon_s/num_jobs "
            "or pass --allow-large (allow_large=True)"
        )
    if problems:
        raise ScenarioError(problems_message(p, problems))
