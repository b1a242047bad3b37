"""PAL experiment, part 3 of 3: the markdown section and the figures, from an ``Analysis``.

Tables of numbers only; the verdicts are in the rows (``pal_analyse.rows_for``), and the
one summary line per claim quotes them.

The section, in order: the setup and the variability draw (with its class-A factor range
against the artifact's 0.93-2.83), the references, mean JCT per trace, the set's geomean
gains and their spread over other draws, the locality sweep (and its sensitivity run) with
its trend verdict, the Synergy table, and the two figures. Percentages are fractions
printed by ``common.fmt_pct``; JCTs are in hours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mtgym.reproduce.common import Row, fmt_dist, fmt_pct
from mtgym.reproduce.pal_analyse import (
    PAL_POLICIES,
    SET_REF,
    SWEEP_REF,
    SYNERGY_REF,
    Analysis,
    artifact_sweep_note,
    trend_verdict,
)
from mtgym.reproduce.pal_run import ARTIFACT, LOCALITY, ROUND_S


def _sweep_table(loc: dict[str, Any], lambdas: tuple[float, ...]) -> list[str]:
    """A sweep as a markdown table: one line per lambda.

    Columns: the JCT gain of each PAL policy on the headline draw, then for every
    placement played the share of GPU-hours held by jobs spanning hosts.

    Args:
        loc: a ``pal_analyse.locality_summary``.
        lambdas: the lambdas, in line order.
    """
    pols = sorted({k.split("@")[0] for k in loc["gain"]})
    lines = [
        "| lambda | "
        + " | ".join(f"{p} gain" for p in PAL_POLICIES)
        + " | "
        + " | ".join(f"{p} spanning GPU-h" for p in pols)
        + " |",
        "| ---: | " + " | ".join("---:" for _ in (*PAL_POLICIES, *pols)) + " |",
    ]
    for lam in lambdas:
        lines.append(
            f"| {lam:g} | "
            + " | ".join(fmt_pct(loc["gain"][f"{p}@{lam:g}"]) for p in PAL_POLICIES)
            + " | "
            + " | ".join(fmt_pct(loc["span_share"][f"{p}@{lam:g}"]) for p in pols)
            + " |"
        )
    return lines


def section(a: Analysis, rows: list[Row], records: list[dict[str, Any]], draws: list[str]) -> str:
    """The experiment's detail section of report.md (module docstring).

    Args:
        a: the analysis.
        rows: the experiment's rows (``rows_for``); the trend verdicts are read from them.
        records: the set's episode records (for the JCT per trace).
        draws: the other draws, as listed in the spread's line.
    """
    lines = [
        *_set_lines(a, records),
        *_geomean_lines(a, draws),
        *_locality_lines(a, rows),
        *_synergy_lines(a),
        "",
        "![JCT per trace](pal_jct.png)",
        "",
        "![Locality sweep](pal_locality.png)",
    ]
    return "\n".join(lines)


def _set_lines(a: Analysis, records: list[dict[str, Any]]) -> list[str]:
    """The setup, the variability draw, the references and the JCT per trace.

    The table has one line per trace: every placement's mean JCT (hours) on the headline
    draw, then PAL's and PM-First's JCT / the reference's.

    Args:
        a: the analysis.
        records: the set's episode records; the headline draw's constant-lambda ones are
            used.
    """
    pols = list(a.head[SET_REF])
    t = {(r["trace"], r["policy"]): r for r in records if r["draw"] == a.head_draw}
    t = {k: v for k, v in t.items() if v["locality"] == LOCALITY and v["growth"] == 0.0}
    lines = [
        "## PAL and PM-First on the Sia-Philly traces, the locality sweep, and Synergy",
        "",
        f"16 hosts x 4 GPUs, FIFO, {ROUND_S:g} s rounds, lambda = {LOCALITY}, traces "
        f"{list(a.traces)}. "
        + (
            "Completions recorded at the next round boundary, as the artifact does "
            "(`--completion-at-round`). "
            if a.completion_at_round
            else "Completions recorded at their exact times (the artifact records them at the "
            "next round boundary: `--completion-at-round`). "
        )
        + f"**Variability: draw `{a.head_draw}`** (`artifact` = the artifact's "
        "own draw: Python `random` seeded 42, `random.choice(perf / median)` per GPU and "
        "class, `mtgym.readers.pal_artifact_draw`): class-A factors "
        f"{a.class_a[a.head_draw]['min']:.2f}-{a.class_a[a.head_draw]['max']:.2f}, "
        f"{a.class_a[a.head_draw]['above_1_1']} GPUs above 1.1 (artifact: 0.93-2.83, 6). "
        f"**References, fixed by the artifact's plot scripts:** the set is normalised to "
        f"`{SET_REF}` (Fig. 10 script: `Default-Packed-NS`), the locality sweep to "
        f"`{SWEEP_REF}` (Fig. 12 script: `Default-Packed-S`), Synergy to `{SYNERGY_REF}` "
        "(assumed: no plot script).",
        "",
        f"Average JCT per trace (hours), draw `{a.head_draw}`:",
        "",
        "| trace | " + " | ".join(pols) + f" | PAL / {SET_REF} | PM-First / {SET_REF} |",
        "| ---: | " + " | ".join("---:" for _ in pols) + " | ---: | ---: |",
    ]
    for k in a.traces:
        jct = {p: t[(k, p)]["jct_mean"] for p in pols}
        lines.append(
            f"| {k} | "
            + " | ".join(f"{jct[p] / 3600:.2f}" for p in pols)
            + "".join(f" | {jct[p] / jct[SET_REF]:.3f}" for p in PAL_POLICIES)
            + " |"
        )
    return lines


def _geomean_lines(a: Analysis, draws: list[str]) -> list[str]:
    """Geomean gains over the traces, and their spread over other draws.

    One table line per placement (JCT, makespan, utilisation gains vs ``SET_REF``), then,
    when other draws ran, one bullet per PAL policy with the distribution and each draw's
    gain and largest class-A factor.

    Args:
        a: the analysis.
        draws: the other draws, named in the heading line.
    """
    g = a.head[SET_REF]
    pols = list(g)
    lines: list[str] = []
    lines += [
        "",
        f"Geomean over the traces vs `{SET_REF}` (JCT and makespan: 1 - geomean ratio; "
        "utilisation: geomean ratio - 1):",
        "",
        "| policy | JCT | makespan | utilisation |",
        "| --- | ---: | ---: | ---: |",
    ]
    for p in pols:
        lines.append(
            f"| {p} | {fmt_pct(g[p]['jct_gain'])} | {fmt_pct(g[p]['makespan_gain'])} | "
            f"{fmt_pct(g[p]['utilisation_gain'])} |"
        )
    if a.spread:
        lines += [
            "",
            f"The same set on other draws ({', '.join(draws)}; `--draw seed:N`), JCT gain vs "
            f"`{SET_REF}`:",
            "",
        ]
        for p, sp in a.spread.items():
            lines.append(
                f"- {p}: {fmt_dist(sp['dist'])}; per draw "
                + ", ".join(
                    f"{d} {fmt_pct(x)} (class-A max {a.class_a[d]['max']:.2f})"
                    for d, x in sp["per_draw"].items()
                )
            )
    return lines


def _locality_lines(a: Analysis, rows: list[Row]) -> list[str]:
    """The locality sweep and, when run, its host-count-dependent sensitivity.

    Each with its table and its trend verdict (``trend_verdict`` of its rows); the
    constant-lambda trend also quotes the artifact's own flat sweep on the artifact draw.

    Args:
        a: the analysis.
        rows: the experiment's rows, whose ``Fig. 12`` and ``sensitivity`` change rows
            give the verdicts.
    """
    lines: list[str] = []
    loc_rows = [r for r in rows if r.metric.startswith("Fig. 12")]
    lines += [
        "",
        f"Locality sweep (workload-6, draw `{a.head_draw}`; gains vs `{SWEEP_REF}`; "
        "spanning GPU-h = share of the GPU-hours held by jobs whose GPUs lie on more than "
        "one host). "
        "Artifact README: PAL 30 % -> 20 %, PM-First 30 % -> 9 %.",
        "",
        *_sweep_table(a.locality, a.lambdas),
        "",
        f"**Locality trend (constant lambda): {trend_verdict(loc_rows)}.**"
        + (f" {artifact_sweep_note()}." if a.head_draw == ARTIFACT else ""),
    ]
    if a.sensitivity is not None:
        sens_rows = [r for r in rows if r.metric.startswith("sensitivity")]
        lines += [
            "",
            f"Sensitivity: host-count-dependent lambda, growth {a.growth:g} (a job within an "
            "aligned block of H hosts runs 1 + (lambda - 1)(1 + growth log2(H/2)) times slower; "
            "an extension, not PAL's model):",
            "",
            *_sweep_table(a.sensitivity, a.lambdas),
            "",
            f"**Locality trend (host-count-dependent lambda): {trend_verdict(sens_rows)}.**",
        ]
    return lines


def _synergy_lines(a: Analysis) -> list[str]:
    """The Synergy experiment's table (none when it was not run).

    One line per ``order@jobs/h`` setting (sorted by order, then load): each placement's
    mean JCT in hours, PAL's JCT, makespan and utilisation gains and PM-First's JCT gain,
    all against ``SYNERGY_REF``.

    Args:
        a: the analysis.
    """
    lines: list[str] = []
    if a.synergy:
        keys = sorted(
            {k.split("/")[0] for k in a.synergy},
            key=lambda k: (k.split("@")[0], float(k.split("@")[1])),
        )
        spols = sorted({k.split("/")[1] for k in a.synergy})
        lines += [
            "",
            f"Synergy (64 hosts x 4 GPUs, class A, artifact draw; gains vs `{SYNERGY_REF}`; "
            "JCT in hours; see `mtgym.generate.pal_philly.PALSynergy` for what is assumed):",
            "",
            "| order@jobs/h | "
            + " | ".join(f"{p} JCT h" for p in spols)
            + " | PAL JCT gain | PAL makespan gain | PAL utilisation gain | PM-First JCT gain |",
            "| --- | " + " | ".join("---:" for _ in spols) + " | ---: | ---: | ---: | ---: |",
        ]
        for k in keys:
            s = {p: a.synergy[f"{k}/{p}"] for p in spols}
            lines.append(
                f"| {k} | "
                + " | ".join(f"{s[p]['jct_h']:.1f}" for p in spols)
                + f" | {fmt_pct(s['pal']['jct_gain'])} | {fmt_pct(s['pal']['makespan_gain'])}"
                f" | {fmt_pct(s['pal']['utilisation_gain'])}"
                f" | {fmt_pct(s['pm-first']['jct_gain'])} |"
            )
    return lines


def plot(a: Analysis, records: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """``pal_jct.png`` (per-trace JCT / the set's reference) and ``pal_locality.png``.

    ``pal_jct.png``: one bar per placement and trace of its mean JCT / ``SET_REF``'s on
    the headline draw, and a last group with the geomean. ``pal_locality.png``: PAL's and
    PM-First's gain against lambda, for the constant run (solid) and the sensitivity run
    (dashed), beside the artifact README's two points per policy (dotted).

    Args:
        a: the analysis.
        records: the set's episode records.
        out_dir: the output folder (created if missing).

    Returns:
        The two PNG paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    g = a.head[SET_REF]
    pols = list(g)
    t = {
        (r["trace"], r["policy"]): r["jct_mean"]
        for r in records
        if r["draw"] == a.head_draw and r["locality"] == LOCALITY and r["growth"] == 0.0
    }
    fig, ax = plt.subplots(figsize=(9, 4.2))
    width = 0.8 / len(pols)
    x = np.arange(len(a.traces) + 1)
    for i, p in enumerate(pols):
        vals = [t[(k, p)] / t[(k, SET_REF)] for k in a.traces] + [1.0 - g[p]["jct_gain"]]
        ax.bar(x + (i - len(pols) / 2 + 0.5) * width, vals, width, label=p)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(x, [str(k) for k in a.traces] + ["geomean"])
    ax.set_xlabel("trace")
    ax.set_ylabel(f"avg JCT / {SET_REF}")
    ax.set_title(f"Sia-Philly, draw {a.head_draw} (Fig. 10 reference)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    p1 = out_dir / "pal_jct.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    lams = list(a.lambdas)
    runs = [("constant", a.locality, "-")]
    if a.sensitivity is not None:
        runs.append((f"growth {a.growth:g}", a.sensitivity, "--"))
    for label, loc, ls in runs:
        for pol, color in (("pal", "C0"), ("pm-first", "C1")):
            ax.plot(
                lams,
                [loc["gain"][f"{pol}@{lam:g}"] for lam in lams],
                ls,
                marker="o",
                color=color,
                label=f"mtgym {pol} ({label})",
            )
    ax.plot([1.0, 3.0], [0.30, 0.20], ":", marker="s", color="C0", label="artifact README: PAL")
    ax.plot(
        [1.0, 3.0], [0.30, 0.09], ":", marker="s", color="C1", label="artifact README: PM-First"
    )
    ax.set_xlabel("locality penalty lambda")
    ax.set_ylabel(f"avg-JCT gain over {SWEEP_REF}")
    ax.set_title(f"Locality sweep, workload-6, draw {a.head_draw}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    p2 = out_dir / "pal_locality.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]
