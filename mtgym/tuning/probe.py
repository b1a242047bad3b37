"""The reference probe: does any tuned baseline, at any value of a wider grid, beat the
scenario's recorded reference by more than ``PROBE_MARGIN``?

``mtgym tune`` picks each baseline's knobs on a short grid; the benchmark divides every
policy by the best of them (the scenario's *reference*). A reference set by the edge of a
grid rather than by the policies (issue [refs]: an admission cap of 128 jobs on a machine
that holds 1,000) makes every ratio against it flattering. The probe checks it:

- **Grid, written here before any run** (``probe_values``): from each tuned baseline's
  chosen setting, one knob at a time over a grid wider than the sweep's: the admission cap
  ``max_jobs`` at every power of two from 8 up to the scenario's job count, and the job
  count itself (a cap above it admits no more); ``t_fwd`` at the scenario's T_fwd x 2^k for
  k = -4..4; a round length ``round_s`` at 30 s to 1 h and every event; every other knob at
  every value of its sweep grid.
- **Seeds**: the tuning seeds (``TUNE_SEEDS``), whole episodes; a point the record's sweep
  already played is reused, not replayed (the record replays bit for bit:
  ``tests/tuning``), and so is a point an earlier probe of the same record played and found
  not beating (``earlier_points``: the probe file's ``record_sha256`` is the record's now),
  so that widening the grid plays only the new values.
- **Verdict**: a point whose mean headline is above the reference's recorded mean x (1 +
  ``PROBE_MARGIN``) *beats* it. ``--apply`` then adds every beating point to its policy's
  sweep (knob ``probe:<knob>``), makes the best of them the policy's choice when it beats
  the policy's own choice by more than ``MIN_GAIN`` (the sweep's rule), and re-derives the
  reference (``TuningRecord.best``): the tuning takes what the probe found. The record is
  re-read before it is saved, and a probed policy's entry changed meanwhile (a concurrent
  ``mtgym tune``) refuses the apply.

Every run writes ``scenarios/tuning/probes/<scenario>.json`` (``ProbeResult``): every point,
the reference before and after, the verdict. A run of some policies (``--policy``) keeps the
other policies' points of an earlier, not stale probe of the same record, so that a probe too
long for one sitting (a Summit scenario: hours on two cores) is done policy by policy;
``probed_policies`` says which it covers, and the tuning page names the missing ones.
Baselines without a tuning entry are not probed (the report names them).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mtgym.scenario.tuning import Point, TuningRecord, load_record, record_path, save_record
from mtgym.tuning.sweep import (
    MIN_GAIN,
    TUNE_SEEDS,
    Params,
    play_points,
    point_key,
    policy_knobs,
    scenario_job_count,
)

#: how far above the recorded reference's mean a probe point must be to count as beating it
PROBE_MARGIN = 0.02
#: T_fwd multipliers of the probe (the sweep tries x1/4..x4): x1/16..x256, widened from
#: x16 after a stopped summit-replay-2d probe saw freetrain-speedup still rising at x16
T_FWD_OCTAVES = tuple(2.0**k for k in range(-4, 9))
#: round lengths of the probe, s (None: every event)
ROUND_S = (None, 30.0, 60.0, 120.0, 360.0, 900.0, 1800.0, 3600.0)
#: the smallest fixed admission cap probed
MIN_CAP = 8


class ProbePoint(BaseModel):
    """One probed setting and how it compares with the reference."""

    model_config = ConfigDict(extra="forbid")

    policy: str
    knob: str
    params: dict[str, Any]
    mean: float
    ratio: float = Field(description="mean / the reference's recorded mean")
    reused: bool = Field(
        description="played by the tuning sweep, or by an earlier probe of the same record"
    )


class ProbeResult(BaseModel):
    """A probe of one scenario's reference (``scenarios/tuning/probes/<scenario>.json``)."""

    model_config = ConfigDict(extra="forbid")

    scenario: str
    seeds: list[int]
    margin: float
    reference_before: str | None
    reference_mean: float
    reference_after: str | None
    applied: bool
    beats: list[ProbePoint]
    points: list[ProbePoint]
    not_probed: list[str] = Field(description="policies named without a tuning entry")
    record_sha256: str | None = Field(
        None,
        description="sha256 of the record file as the probe left it: a later re-tune makes "
        "the verdict stale (``docs/tuning.md`` says so); None in probes written before it "
        "was kept (``is_stale`` then compares the reference and its mean)",
    )


def probe_values(knob: str, grid: list[Any], t_fwd_s: float, job_count: int) -> list[Any]:
    """The probe's values of one knob (module docstring), the sweep grid's included.

    Args:
        knob: the knob's name.
        grid: its values in the tuning sweep.
        t_fwd_s: the scenario's T_fwd, s (the base of a ``t_fwd`` probe).
        job_count: the scenario's jobs (the largest admission cap worth trying).
    """
    if knob == "max_jobs":
        extra: list[Any] = [None]
        cap = MIN_CAP
        while cap < job_count:
            extra.append(cap)
            cap *= 2
        extra.append(int(job_count))
    elif knob == "t_fwd":
        extra = [None, *[float(f"{t_fwd_s * m:.4g}") for m in T_FWD_OCTAVES]]
    elif knob == "round_s":
        extra = list(ROUND_S)
    else:
        extra = []
    out: list[Any] = []
    for v in [*grid, *extra]:
        if v not in out and not (isinstance(v, float) and not math.isfinite(v)):
            out.append(v)
    return out


def probe_points(scenario: str, policy: str, chosen: Params) -> list[tuple[str, Params]]:
    """(knob, setting) pairs: ``chosen`` with one knob moved over its probe values.

    Args:
        scenario: a scenario name.
        policy: a tunable registry name.
        chosen: the policy's recorded choice.
    """
    from mtgym.evaluate import scenario_defaults
    from mtgym.scenario.registry import get_generator

    gen = get_generator(scenario)
    t_fwd_s = float(scenario_defaults(gen).t_fwd_s)
    jobs = scenario_job_count(gen)
    _, grid = policy_knobs(scenario, policy)
    points = []
    for knob, values in grid.items():
        for v in probe_values(knob, values, t_fwd_s, jobs):
            points.append((f"probe:{knob}", {**chosen, knob: v}))
    return points


def probe_scenario(
    scenario: str,
    policies: list[str] | None = None,
    *,
    workers: int = 1,
    apply: bool = False,
    path: Path | None = None,
) -> ProbeResult:
    """Probe ``scenario``'s recorded reference (module docstring); with ``apply``, save the
    record the probe changed.

    Args:
        scenario: a scenario with a tuning record.
        policies: the policies to probe (default: every one the record tuned).
        workers: processes.
        apply: let the tuning take what beats the reference.
        path: the record file (default ``record_path(scenario)``).

    Raises:
        ValueError: the scenario has no tuning record, or it has no reference.
    """
    path = path or record_path(scenario)
    rec = TuningRecord.model_validate_json(path.read_text()) if path.is_file() else None
    if rec is None:
        rec = load_record(scenario)
    if rec is None or rec.reference is None:
        raise ValueError(f"scenario {scenario!r} has no tuning record with a reference")
    ref_mean = rec.policies[rec.reference].chosen_mean
    names = list(rec.policies) if policies is None else list(policies)
    not_probed = [p for p in names if p not in rec.policies]
    seeds = list(rec.seeds)
    pool = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None
    points: list[ProbePoint] = []
    played: dict[str, list[Point]] = {}
    earlier = earlier_points(path)
    kept = _earlier_result(path)  # (read before an apply changes the record)
    try:
        for name in [p for p in names if p in rec.policies]:
            pts, played[name] = _probe_policy(rec, name, ref_mean, pool, earlier)
            points += pts
    finally:
        if pool is not None:
            pool.shutdown()
    probed = {p.policy for p in points}
    if kept is not None:  # the other policies' points of an earlier probe of this record
        points += [p for p in kept.points if p.policy not in probed]
        not_probed = sorted(set(not_probed) | (set(kept.not_probed) - probed))
    beats = [p for p in points if p.mean > ref_mean * (1 + PROBE_MARGIN)]
    before = rec.reference
    if apply and beats:
        rec = _apply(path, rec, played, ref_mean)
    result = ProbeResult(
        scenario=scenario,
        seeds=seeds,
        margin=PROBE_MARGIN,
        reference_before=before,
        reference_mean=ref_mean,
        reference_after=rec.reference,
        applied=apply,
        beats=beats,
        points=points,
        not_probed=not_probed,
        record_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
    )
    out = path.parent / "probes" / f"{scenario}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result.model_dump_json(indent=1) + "\n")
    return result


def _earlier_result(path: Path) -> ProbeResult | None:
    """The probe file of the record at ``path`` when it is not stale (``is_stale``) and
    played the record's seeds, else None.
    """
    probe = path.parent / "probes" / f"{path.stem}.json"
    if not probe.is_file():
        return None
    try:
        result = ProbeResult.model_validate_json(probe.read_text())
    except ValueError:
        return None
    if is_stale(result, path) or list(result.seeds) != _record_seeds(path):
        return None
    return result


def probed_policies(result: ProbeResult) -> list[str]:
    """The policies whose points ``result`` holds, in order of first appearance."""
    return list(dict.fromkeys(p.policy for p in result.points))


def earlier_points(path: Path) -> dict[tuple[str, tuple], float]:
    """(policy, ``point_key``) -> mean of the points an earlier probe of the record at
    ``path`` played and found not beating, when that probe is not stale (``is_stale``: its
    ``record_sha256`` is the record's now, or, in a probe written before it was kept, the
    reference and its mean are); empty otherwise. A point is keyed by every knob's value,
    so it is reused only for the very setting that was played, on the same seeds.
    """
    result = _earlier_result(path)
    if result is None:
        return {}
    return {
        (p.policy, point_key(p.params)): p.mean
        for p in result.points
        if p.mean <= result.reference_mean * (1 + result.margin)
    }


def _record_seeds(path: Path) -> list[int]:
    """The tuning seeds of the record at ``path``."""
    return list(TuningRecord.model_validate_json(path.read_text()).seeds)


def _probe_policy(
    rec: TuningRecord,
    name: str,
    ref_mean: float,
    pool: ProcessPoolExecutor | None,
    earlier: dict[tuple[str, tuple], float] | None = None,
) -> tuple[list[ProbePoint], list[Point]]:
    """Play ``name``'s probe points (the record's own sweep and ``earlier``'s points
    reused) and compare each with the reference's mean.

    Returns:
        Every probe point, and the played points that beat the reference by more than
        ``PROBE_MARGIN`` (what ``_apply`` may take).
    """
    tuning = rec.policies[name]
    earlier = earlier or {}
    done = {point_key(pt.params): pt for pt in tuning.sweep}
    reused = set(done)
    todo = probe_points(rec.scenario, name, dict(tuning.chosen))
    fresh = [(k, p) for k, p in todo if point_key(p) in done or (name, point_key(p)) not in earlier]
    progress = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    play_points(rec.scenario, name, fresh, rec.seeds, rec.horizon_s, done, pool, progress)
    out, beating = [], []
    for knob, params in todo:
        key = point_key(params)
        mean = done[key].mean if key in done else earlier[(name, key)]
        ratio = mean / ref_mean if ref_mean > 0 else math.inf
        out.append(
            ProbePoint(
                policy=name,
                knob=knob,
                params=params,
                mean=mean,
                ratio=ratio,
                reused=key in reused or key not in done,
            )
        )
        if key in done and mean > ref_mean * (1 + PROBE_MARGIN):
            beating.append(done[key].model_copy(update={"knob": knob}))
    return out, beating


def _apply(
    path: Path, probed: TuningRecord, played: dict[str, list[Point]], ref_mean: float
) -> TuningRecord:
    """Let the tuning take the beating points: re-read the record (another ``mtgym tune``
    may have saved meanwhile), refuse if a probed policy's entry changed since the probe
    read it, add each policy's beating points to its sweep, make the best of them its
    choice when it beats the current one by more than ``MIN_GAIN`` (the sweep's rule),
    re-derive the reference and save.

    Raises:
        ValueError: a probed policy's entry changed while the probe ran.
    """
    rec = TuningRecord.model_validate_json(path.read_text())
    for name in played:
        if rec.policies.get(name) != probed.policies[name]:
            raise ValueError(
                f"{path}: {name}'s entry changed while the probe ran (a concurrent "
                "mtgym tune?); nothing applied: probe again"
            )
    for name, pts in played.items():
        if not pts:
            continue
        t = rec.policies[name]
        keys = {point_key(p.params) for p in t.sweep}
        t.sweep += [p for p in pts if point_key(p.params) not in keys]
        top = max(pts, key=lambda p: p.mean)  # the first of equal means
        if top.mean > t.chosen_mean * (1 + MIN_GAIN):
            t.chosen, t.chosen_mean = dict(top.params), top.mean
    rec.reference = rec.best()
    save_record(rec, path)
    return rec


def is_stale(result: ProbeResult, path: Path) -> bool:
    """Whether the record at ``path`` changed since ``result`` probed it: another file hash,
    or (a probe that kept none) another reference or reference mean than it left.

    Args:
        result: a probe of the record's scenario.
        path: the record file.
    """
    if result.record_sha256 is not None:
        return hashlib.sha256(path.read_bytes()).hexdigest() != result.record_sha256
    rec = TuningRecord.model_validate_json(path.read_text())
    if rec.reference != result.reference_after or rec.reference is None:
        return True
    return (result.applied and bool(result.beats)) or (
        rec.policies[rec.reference].chosen_mean != result.reference_mean
    )


def report(result: ProbeResult) -> str:
    """The probe as markdown: the verdict, then each policy's best probe point."""
    lines = [
        f"### {result.scenario}: reference `{result.reference_before}` "
        f"(mean {result.reference_mean:.3f} on seeds {result.seeds})",
        "",
        "| policy | best probe point | mean | x reference |",
        "|---|---|---:|---:|",
    ]
    best: dict[str, ProbePoint] = {}
    for p in result.points:
        if p.policy not in best or p.mean > best[p.policy].mean:
            best[p.policy] = p
    for name, p in sorted(best.items(), key=lambda kv: -kv[1].mean):
        knobs = ", ".join(f"{k}={v}" for k, v in p.params.items())
        lines.append(f"| {name} | {knobs} | {p.mean:.3f} | {p.ratio:.3f} |")
    played = sum(not p.reused for p in result.points)
    if not result.beats:
        verdict = f"no point beats the reference by more than {result.margin:.0%}"
    else:
        verdict = (
            f"**{len(result.beats)} point(s) beat the reference by more than {result.margin:.0%}**"
        )
        if result.applied:
            verdict += f"; the tuning took them: reference now `{result.reference_after}`"
    lines += ["", f"{len(result.points)} points ({played} played, the rest reused): {verdict}."]
    if result.not_probed:
        lines.append(f"Not probed (no tuning entry): {', '.join(result.not_probed)}.")
    return "\n".join(lines)


def add(sub: argparse._SubParsersAction) -> None:
    """Register ``probe`` on the ``mtgym`` sub-command parser.

    Args:
        sub: the ``mtgym`` parser's sub-parsers object.
    """
    p = sub.add_parser(
        "probe",
        help="check a scenario's recorded reference against every tuned baseline on a "
        f"wider grid (beaten by more than {PROBE_MARGIN:.0%}: say so; --apply: re-tune)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--scenario", action="append", default=[], help="preset name; repeat")
    p.add_argument("--policy", action="append", default=None, help="default: every tuned one")
    p.add_argument("--workers", type=int, default=1, help="processes (default: %(default)s)")
    p.add_argument("--apply", action="store_true", help="let the tuning take what beats it")
    p.set_defaults(func=_cmd_probe)


def _cmd_probe(args: argparse.Namespace) -> int:
    """Handler of ``mtgym probe``: probe each scenario, print the report.

    Returns:
        0 when no reference is beaten (or ``--apply`` took what beat it), else 1.

    Raises:
        ValueError: no ``--scenario``, ``--workers`` < 1, or a scenario without a record.
    """
    if not args.scenario:
        raise ValueError("mtgym probe needs --scenario")
    if args.workers < 1:
        raise ValueError("--workers must be >= 1")
    print(f"seeds: {list(TUNE_SEEDS)}; margin {PROBE_MARGIN:.0%}")
    status = 0
    for sc in args.scenario:
        res = probe_scenario(sc, args.policy, workers=args.workers, apply=args.apply)
        print(report(res))
        if res.beats and not args.apply:
            status = 1
    return status
