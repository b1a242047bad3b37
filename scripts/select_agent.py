"""Pick a trained agent (and its sampling temperature) on validation sets, never test ones.

The rule is round 4's in ``agents/pretrained/README.md``, fixed before its candidates
existed. Each candidate ``DIR`` (a ``mtgym train --out`` folder: ``model.zip`` +
``agent.json``) is played at each ``--temperature``, as ``mtgym evaluate`` plays it, on three
validation sets that neither training (seeds >= 2^30) nor the benchmark's test split uses:

- the train split's family at 64 nodes, seeds 1000-1011;
- the same family at 256 nodes, seeds 1000-1011;
- the default scenario, seeds 1000-1019.

On each set the reference ``--reference`` (``freetrain-speedup``) is played on the same seeds;
a candidate's ratio there is its paired mean ``normalized_throughput`` over the reference's
(``mtgym.stats.paired``, 95 % bootstrap interval), and its **validation score** is the
geometric mean of the three ratios. The script prints the ranking (highest score first) and
writes ``--out`` JSON; the reader applies the rule. With ``--record NAME`` it also writes a
result file into the registry (``results/NAME.json``, ``mtgym.results``; kind
``select_agent``): its rows are the ranking's rows, its aggregates the reference, the seeds,
the reference's per-seed values and the ranking.

    .venv/bin/python scripts/select_agent.py runs/R4a agents/pretrained/default \
        --temperature 1.0 0.7 --out runs/select4.json [--record select-round4]

``--draws per-slot budget`` plays each ``shares`` candidate both ways (each slot drawn from
its own mask, or the slots in order within the node budget: ``agents.budget_dist``); every
row also gives the share of decisions whose action the env's codec had to repair.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from agents.policy import AgentPolicy
from mtgym.benchmark.splits import refuse_test_seeds
from mtgym.core.io import atomic_write_json
from mtgym.evaluate import configure_policy, scenario_defaults
from mtgym.generate.default import default_generator
from mtgym.generate.family import DefaultFamily
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.results import cli as results_cli
from mtgym.results.provenance import command_line
from mtgym.stats import paired

#: (name, generator, seeds): round 4's validation sets
SETS = (
    ("family-64", DefaultFamily(num_nodes=64), list(range(1000, 1012))),
    ("family-256", DefaultFamily(num_nodes=256), list(range(1000, 1012))),
    ("default", default_generator(), list(range(1000, 1020))),
)


def validation_sets(sets=SETS, limit: int | None = None) -> list[tuple[str, object, list[int]]]:
    """``sets`` with each set's seeds cut to the first ``limit`` (None: all); exits with one
    line (``SystemExit``) if any seed is one of the benchmark's test split (9000-9009):
    selection may never touch it (``mtgym.benchmark.splits.refuse_test_seeds``).

    Args:
        sets: (name, generator, seeds) triples (``SETS``).
        limit: ``--limit``.
    """
    out = [(n, g, list(seeds[:limit])) for n, g, seeds in sets]
    try:
        for n, _, seeds in out:
            refuse_test_seeds(seeds, what=f"agent selection (validation set {n!r})")
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    return out


def headline(make, gen, seeds: list[int], repairs: list | None = None) -> np.ndarray:
    """``normalized_throughput`` per seed of a fresh policy from ``make()`` (evaluate's way).

    Args:
        make: a policy factory, called once per seed.
        gen: the set's generator.
        seeds: its seeds.
        repairs: a list to which (decisions, repaired decisions) of each episode is added
            (an ``AgentPolicy``'s counters); None: not kept.
    """
    defaults = scenario_defaults(gen)
    out = []
    for s in seeds:
        pol = configure_policy(make(), defaults)
        res = play(gen(s), pol)
        out.append(res.metrics.normalized_throughput)
        if repairs is not None:
            repairs.append((getattr(pol, "decisions", 0), getattr(pol, "repaired", 0)))
    return np.array(out)


#: ``--draws``: None = as ``agent.json`` says, else ``AgentPolicy``'s ``budget_masks``
DRAWS = {"trained": None, "per-slot": False, "budget": True}


def check_draws(candidates: list[Path], draws: list[str]) -> None:
    """``SystemExit`` with one line, before any episode, if ``--draws`` asks a candidate that
    is not a ``shares`` agent to draw another way than it trained."""
    from agents.policy import AgentConfig

    if all(d == "trained" for d in draws):
        return
    for c in candidates:
        folder = c if c.is_dir() else c.parent
        mode = AgentConfig.load(folder / "agent.json").action_mode
        if mode != "shares":
            raise SystemExit(
                f"error: {c}: --draws {' '.join(draws)} needs a shares agent, not {mode!r}"
            )


def start_record(ns: argparse.Namespace) -> dict[str, Any] | None:
    """With ``--record``: refuse a taken name now, before any episode (``SystemExit`` with
    one line), and capture the provenance (the command as ``python
    scripts/select_agent.py ...``); else None.
    """
    if ns.record is None:
        return None
    try:
        provenance = results_cli.start(ns)
    except (ValueError, FileExistsError) as exc:
        raise SystemExit(f"error: {exc}") from None
    provenance["command"] = command_line(["scripts/select_agent.py", *sys.argv[1:]], "python")
    return provenance


def result_file(
    provenance: dict[str, Any],
    sets: list[tuple[str, object, list[int]]],
    summary: dict[str, Any],
    wall_s: float,
) -> Any:
    """The selection's result file (kind ``select_agent``).

    Args:
        provenance: ``start_record``'s.
        sets: the validation sets played (name, generator, seeds).
        summary: ``--out``'s content: ``reference``, ``seeds``, ``ref_per_seed`` and
            ``rows`` (the ranking's rows, which become the file's rows).
        wall_s: the script's wall seconds.
    """
    from mtgym.results import hashes, store

    aggregates = {k: v for k, v in summary.items() if k != "rows"}
    aggregates["ranking"] = [
        {
            k: r[k]
            for k in ("candidate", "temperature", "draws", "score", "repaired_share")
            if k in r
        }
        for r in summary["rows"]
    ]
    return store.build(
        "select_agent",
        provenance,
        seeds=sorted({s for _, _, seeds in sets for s in seeds}),
        scenarios=[hashes.generator_entry(n, g) for n, g, _ in sets],
        wall_s=wall_s,
        rows=summary["rows"],
        aggregates=aggregates,
    )


def validate(
    candidate: Path,
    temperature: float,
    draws: str,
    sets: list[tuple[str, object, list[int]]],
    ref: dict[str, np.ndarray],
    reference: str,
) -> dict[str, Any]:
    """One candidate's row: its headline per seed on every set, paired with the reference's
    per-seed values ``ref``, the validation score (geometric mean of the sets' ratios), and
    the decisions it made and the share the codec repaired (None: no decision).

    Args:
        candidate: the agent's folder.
        temperature: its sampling temperature.
        draws: a ``DRAWS`` key.
        sets: the validation sets.
        ref: set name -> the reference's per-seed headlines.
        reference: the reference's name.
    """
    b = DRAWS[draws]
    ratios, per_set, reps = [], {}, []
    for name, g, seeds in sets:
        x = headline(
            lambda: AgentPolicy(candidate, temperature=temperature, budget_masks=b),
            g,
            seeds,
            reps,
        )
        pr = paired(x, ref[name], reference=reference)
        ratios.append(pr.ratio)
        per_set[name] = {"per_seed": x.tolist(), **pr.as_dict()}
    score = float(np.exp(np.mean(np.log(ratios))))
    n_dec = sum(d for d, _ in reps)
    row = {"candidate": str(candidate), "temperature": temperature, "score": score}
    row["sets"] = per_set
    if draws != "trained":
        row["draws"] = draws
    row["decisions"] = n_dec
    row["repaired_share"] = sum(r for _, r in reps) / n_dec if n_dec else None
    return row


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("candidates", nargs="+", type=Path)
    p.add_argument("--temperature", type=float, nargs="+", default=[1.0])
    p.add_argument(
        "--draws",
        nargs="+",
        choices=list(DRAWS),
        default=["trained"],
        help="how a shares agent draws its slots: as trained (agent.json), each from its own "
        "mask (per-slot), or in order within the node budget (budget); each is a candidate",
    )
    p.add_argument("--reference", default="freetrain-speedup")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--limit", type=int, default=None, help="first N seeds of each set (tests)")
    p.add_argument(
        "--reference-from",
        type=Path,
        default=None,
        help="reuse the reference's per-seed values from an earlier --out JSON (same reference "
        "and seeds; the simulation is deterministic, so this only saves time)",
    )
    results_cli.add_record_options(p)
    ns = p.parse_args()
    t0 = time.perf_counter()
    sets = validation_sets(SETS, ns.limit)  # (before any episode is played)
    provenance = start_record(ns)  # (a taken --record name: refused before any episode)
    check_draws(ns.candidates, ns.draws)  # (before any episode too)
    if ns.reference_from is not None:
        import json

        old = json.loads(ns.reference_from.read_text())
        if old["reference"] != ns.reference or old["seeds"] != {n: s for n, _, s in sets}:
            raise SystemExit(f"{ns.reference_from}: another reference or other seeds")
        ref = {n: np.array(v) for n, v in old["ref_per_seed"].items()}
    else:
        ref = {n: headline(lambda: make_policy(ns.reference), g, seeds) for n, g, seeds in sets}
    rows = [
        validate(c, t, draws, sets, ref, ns.reference)
        for c in ns.candidates
        for t in ns.temperature
        for draws in ns.draws
    ]
    rows.sort(key=lambda r: -r["score"])
    table = Table(title=f"validation: normalized_throughput / {ns.reference} (paired)")
    for col in ("candidate", "temperature", "score", *(n for n, _, _ in SETS), "repaired"):
        table.add_column(col, justify="right", overflow="fold")
    for r in rows:
        cells = [
            f"{r['sets'][n]['ratio']:.3f} [{r['sets'][n]['ratio_ci_low']:.3f}, "
            f"{r['sets'][n]['ratio_ci_high']:.3f}]"
            for n, _, _ in SETS
        ]
        label = r["candidate"] + (f" ({r['draws']} draws)" if "draws" in r else "")
        share = "n/a" if r["repaired_share"] is None else f"{r['repaired_share']:.1%}"
        table.add_row(label, f"{r['temperature']:g}", f"{r['score']:.4f}", *cells, share)
    Console(width=160).print(table)
    reference = {n: ref[n].tolist() for n in ref}
    seeds = {n: s for n, _, s in sets}
    summary = {"reference": ns.reference, "seeds": seeds, "ref_per_seed": reference, "rows": rows}
    if ns.out:
        atomic_write_json(ns.out, summary)
    if provenance is not None:
        results_cli.save(ns, result_file(provenance, sets, summary, time.perf_counter() - t0), None)


if __name__ == "__main__":
    main()
