"""The MalleTrain experiment's diagnostics, markdown section and figure.

Numbers only, no new verdicts: the verdicts come from ``malletrain_analyse`` (the
pre-registered rule). The diagnostics are the measurements a reader needs to see why a
reading is or is not reproduced: how much MalleTrain pays to profile (probes and rescales
per trial against FreeTrain's), how many trials successive halving stops early, how
far the declarations are from the truth, and how diverse the curves are (if every curve
were alike, knowing them would be worth little).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mtgym.reproduce.malletrain_analyse import (
    CLAIM,
    PAPER_GAIN,
    TESTS,
    VERDICT_TEXT,
    Gain,
    fmt_gain,
    gains,
    reading,
)
from mtgym.reproduce.malletrain_run import (
    CAMPAIGN_WORKLOADS,
    DECL_BY_KEY,
    DECLARATIONS,
    GUESS_COST_S,
    INTERARRIVAL_S,
    MAX_JOBS,
    METRIC,
    NO_DECL,
    SCARCE_NODES,
    T_FWD,
    Sizes,
)

#: Median idle window of the Summit trace (s; data README) and MalleTrain's probe sequence:
#: four probes of 20 s steady rate, each after a rescale pause of about 15 s.
MEDIAN_WINDOW_S = 475.0
PROBE_SEQUENCE_S = 4 * (20.0 + 15.0)


def imagenet_linearity(table: Any) -> dict[str, float]:
    """Each ImageNet model's efficiency at its largest count against linear (1.0 = linear).

    rate(n_max) / (n_max x rate(1)), the 1-node rate linearly interpolated; BFTrainer's
    table measures every job at the same counts (up to 64 nodes).

    Args:
        table: BFTrainer's job table (``mtgym.readers.read_bftrainer_jobs``): ``model``
            (J,), ``curve_nodes`` (K,) shared by every job, ``curve_tput`` (J, K).

    Returns:
        Model name -> efficiency, from the first job of each model, in table order.
    """
    n = table.curve_nodes.astype(np.float64)
    out: dict[str, float] = {}
    for j in range(len(table)):
        m = str(table.model[j])
        if m in out:
            continue
        y = np.asarray(table.curve_tput[j], dtype=np.float64)
        one = float(np.interp(1.0, n, y))
        out[m] = float(y[-1] / (n[-1] * one))
    return out


def diagnostics(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per workload, the measurements behind a verdict: MalleTrain's probes and rescales per
    job against FreeTrain's (offline), nominal seconds lost to rescales per job, the trials'
    curve diversity (offline efficiency at 8 nodes), jobs stopped by successive halving.

    Args:
        results: every episode of the run (``malletrain_run.run_task``).

    Returns:
        Workload -> means over seeds of: ``jobs``; ``probes_per_job`` (MalleTrain);
        ``rescales_per_job_mt`` / ``_ft`` and ``lost_rescale_s_per_job_mt`` / ``_ft``
        (MalleTrain against FreeTrain told offline curves; the metric ``lost_rescale_s``);
        ``stopped_share`` (jobs stopped by successive halving / jobs); ``utilisation_mt``
        / ``_ft``; and over every job of MalleTrain's episodes the offline efficiency at 8
        nodes: ``eff8_mean``, ``eff8_p10``, ``eff8_p90``. A workload without both
        MalleTrain and FreeTrain-offline episodes is left out.
    """
    out: dict[str, dict[str, float]] = {}
    for wl in dict.fromkeys(r["workload"] for r in results):
        mt = [r for r in results if r["workload"] == wl and r["declaration"] == NO_DECL]
        ft = [r for r in results if r["workload"] == wl and r["declaration"] == "offline"]
        if not mt or not ft:
            continue
        per_job = lambda rs, k: float(np.mean([r["metrics"][k] / r["jobs"] for r in rs]))  # noqa: E731
        eff = np.concatenate([np.asarray(r["efficiency8"]) for r in mt])
        out[wl] = {
            "jobs": float(np.mean([r["jobs"] for r in mt])),
            "probes_per_job": float(np.mean([r["probes"] / r["jobs"] for r in mt])),
            "rescales_per_job_mt": per_job(mt, "rescales"),
            "rescales_per_job_ft": per_job(ft, "rescales"),
            "lost_rescale_s_per_job_mt": per_job(mt, "lost_rescale_s"),
            "lost_rescale_s_per_job_ft": per_job(ft, "lost_rescale_s"),
            "stopped_share": float(np.mean([r["metrics"]["jobs_stopped"] / r["jobs"] for r in mt])),
            "utilisation_mt": float(np.mean([r["metrics"]["utilisation"] for r in mt])),
            "utilisation_ft": float(np.mean([r["metrics"]["utilisation"] for r in ft])),
            "eff8_mean": float(eff.mean()),
            "eff8_p10": float(np.quantile(eff, 0.1)),
            "eff8_p90": float(np.quantile(eff, 0.9)),
        }
    return out


def reasons(
    table: list[Gain], info: list[Gain], diag: dict[str, dict[str, float]]
) -> dict[str, str]:
    """The likeliest reason a headline reading is not reproduced, with its measurements:
    probe and rescale cost against trial lifetimes, how far the declarations are from the
    truth, and what declarations are worth to FreeTrain at all.

    Args:
        table: the gains (``malletrain_analyse.gains``).
        info: the information value of declarations (``information_value``).
        diag: the diagnostics (``diagnostics``).

    Returns:
        ``{"a": text, "b": text}``, one clause per campaign cell of the reading (cells of
        workloads without diagnostics are skipped). Computed for both readings; the rows
        quote it only for a reading that is not reproduced.
    """
    out = {}
    for key, decl in (("a", "none"), ("b", "offline")):
        _, cells = reading(table, key)
        parts = []
        for g in cells:
            d = diag.get(g.workload)
            if d is None:
                continue
            extra = d["lost_rescale_s_per_job_mt"] - d["lost_rescale_s_per_job_ft"]
            worth = next(
                (x for x in info if (x.workload, x.declaration) == (g.workload, "offline")), None
            )
            text = (
                f"{g.workload.upper()}: MalleTrain issues {d['probes_per_job']:.1f} probes per "
                f"trial and loses {extra:+.0f} s per trial to rescales against FreeTrain told "
                f"offline curves; {100 * d['stopped_share']:.0f} % of trials are stopped by "
                f"successive halving (a probe sequence is ~{PROBE_SEQUENCE_S:.0f} s); "
                f"`{decl}` is {g.decl_error:.3f} from the runtime truth (median |log|)"
            )
            if worth is not None:
                text += (
                    f"; offline curves are worth {fmt_gain(worth)} to FreeTrain over no "
                    "information, the most that measuring curves could recover"
                )
            parts.append(text)
        out[key] = "; ".join(parts) + "."
    return out


def section(
    table: list[Gain],
    info: list[Gain],
    results: list[dict[str, Any]],
    sizes: Sizes,
    source: str,
    diag: dict[str, dict[str, float]],
    linearity: dict[str, float],
) -> str:
    """The experiment's detail section of report.md.

    In order: the setup (claim, sizes, declaration models, gain and verdict rule), the
    headline readings, every cell, the diagnostics, the raw-samples context, probe cost and
    ImageNet linearity, the metric means per policy, and the figure.

    Args:
        table: the gains (``malletrain_analyse.gains``).
        info: the information value of declarations.
        results: every episode of the run.
        sizes: the sizes the run used.
        source: the command line and sizes the figures come from.
        diag: the diagnostics (``diagnostics``).
        linearity: the ImageNet models' efficiency at 64 nodes (``imagenet_linearity``).
    """
    lines = [
        *_setup_lines(sizes, source),
        *_reading_lines(table),
        *_cell_lines(table, info),
        *_diagnostic_lines(diag),
        *_raw_lines(results),
        *_linearity_lines(table, info, linearity),
        *_mean_lines(results),
        "",
        "![MalleTrain gain against declaration quality](malletrain_gain.png)",
    ]
    return "\n".join(lines)


def _setup_lines(sizes: Sizes, source: str) -> list[str]:
    """The claim, where the figures come from, the workloads, declarations and verdicts.

    Args:
        sizes: the sizes the run used (seeds, campaign sizes, horizons, ImageNet jobs).
        source: the command line and sizes the figures come from.

    Returns:
        Markdown lines, ending with the "Headline readings" heading.
    """
    c = sizes.campaign
    lines = [
        "## MalleTrain vs FreeTrain: NAS/HPO campaigns and the ImageNet replay",
        "",
        f"**Claim tested:** {CLAIM}. Pre-registration: `docs/malletrain-preregistration.md`.",
        "",
        f"**Figures from:** {source}. Summit idle trace, first {SCARCE_NODES:,} nodes (scarce "
        "supply), a start drawn per seed in the week after row 1000; seeds "
        f"{list(sizes.seeds)}; T_fwd = {T_FWD:g} s, maxJ = {MAX_JOBS}; BFTrainer's cost "
        "accounting.",
        f"- **Campaigns** ({sizes.campaign_horizon_s / 3600:g} h, per-GPU variability on): "
        f"NAS = Transformer + LSTM-LM campaigns, trials' width and model size x lognormal(0, "
        f"{c.arch_sigma:g}); HPO = ResNet-18 + ShuffleNet (fitted to BFTrainer's HPS curve) "
        f"campaigns, per-GPU batch 32-256. {c.trials} trials per campaign, one every "
        f"{c.interarrival_s:g} s, {c.work_hours[0]:g}-{c.work_hours[1]:g} h of work on "
        f"{c.work_ref_nodes} nodes, 1-{c.max_nodes} nodes, successive halving (eta 3, rungs "
        "1/9, 1/3). Metric: `normalized_throughput` (best-node equivalents).",
        f"- **ImageNet replay** ({sizes.horizon_s / 3600:g} h): {sizes.jobs} of BFTrainer's "
        f"ImageNet jobs per seed, one every {INTERARRIVAL_S:g} s. Metric: samples/s.",
        "",
        "**Declaration models** (what FreeTrain is told; MalleTrain is told nothing): "
        + "; ".join(f"*{d.key}* = {d.text}" for d in DECLARATIONS)
        + f". FreeTrain told nothing runs with `information='none'` ({GUESS_COST_S:g} s costs).",
        "",
        "**Gain** = mean MalleTrain metric / mean FreeTrain metric - 1 over the seeds, "
        "[95 % paired percentile-bootstrap interval] (`mtgym.stats.paired`).",
        "",
        VERDICT_TEXT,
        "",
        "### Headline readings",
        "",
    ]
    return lines


def _reading_lines(table: list[Gain]) -> list[str]:
    """The headline readings (a) and (b): one bullet each, its verdict and cell gains.

    Args:
        table: the gains.
    """
    lines: list[str] = []
    for key, text in (("a", "users provide nothing"), ("b", "users provide what they can measure")):
        v, cells = reading(table, key)
        lines.append(
            f"- **({key}) {text}: {v.upper()}.** "
            + "; ".join(f"{g.workload.upper()} {fmt_gain(g)} ({g.verdict})" for g in cells)
        )
    return lines


def _cell_lines(table: list[Gain], info: list[Gain]) -> list[str]:
    """Every cell's gain, the declaration errors, and FreeTrain's gain from declarations.

    The cell table has one line per declaration model and one column per workload (``n/a``
    where the model does not apply).

    Args:
        table: the gains of MalleTrain over FreeTrain.
        info: the information value of declarations.
    """
    lines: list[str] = []
    lines += [
        "",
        "### Every cell (gain of MalleTrain over FreeTrain told that model)",
        "",
        "| declarations | what the cell tests | "
        + " | ".join(dict.fromkeys(g.workload for g in table))
        + " |",
        "| --- | --- |" + " ---: |" * len(dict.fromkeys(g.workload for g in table)),
    ]
    wls = list(dict.fromkeys(g.workload for g in table))
    for d in DECLARATIONS:
        cells = []
        for wl in wls:
            g = next((x for x in table if (x.workload, x.declaration) == (wl, d.key)), None)
            cells.append("n/a" if g is None else f"{fmt_gain(g)} *{g.verdict}*")
        lines.append(f"| {d.key} | {TESTS[d.key]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Declaration error (median |log declared / runtime truth| over jobs and counts): "
        + "; ".join(
            f"{wl}: "
            + ", ".join(f"{g.declaration} {g.decl_error:.2f}" for g in table if g.workload == wl)
            for wl in wls
        )
        + ".",
        "",
        "Context: FreeTrain with declarations vs FreeTrain told nothing",
        "",
        "| workload | declarations | gain |",
        "| --- | --- | ---: |",
    ]
    lines += [f"| {g.workload} | {g.declaration} | {fmt_gain(g)} |" for g in info]
    return lines


def _diagnostic_lines(diag: dict[str, dict[str, float]]) -> list[str]:
    """The measurements behind the verdicts, per workload: a table of ``diagnostics``.

    Args:
        diag: the diagnostics.
    """
    lines: list[str] = []
    lines += [
        "",
        "### Measurements behind the verdicts",
        "",
        "| workload | jobs | MalleTrain probes/job | rescales/job MT / FT(offline) | "
        "s lost to rescales/job MT / FT | stopped by SH | utilisation MT / FT | "
        "offline efficiency at 8 nodes (p10 / mean / p90) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for wl, d in diag.items():
        lines.append(
            f"| {wl} | {d['jobs']:.0f} | {d['probes_per_job']:.1f} | "
            f"{d['rescales_per_job_mt']:.1f} / {d['rescales_per_job_ft']:.1f} | "
            f"{d['lost_rescale_s_per_job_mt']:.0f} / {d['lost_rescale_s_per_job_ft']:.0f} | "
            f"{100 * d['stopped_share']:.0f} % | {d['utilisation_mt']:.3f} / "
            f"{d['utilisation_ft']:.3f} | {d['eff8_p10']:.2f} / {d['eff8_mean']:.2f} / "
            f"{d['eff8_p90']:.2f} |"
        )
    return lines


def _raw_lines(results: list[dict[str, Any]]) -> list[str]:
    """The campaign cells in raw samples/s (context, not a verdict).

    Raw samples add samples of different models, which the headline avoids; both solvers
    maximise that raw sum, so it is shown beside it. Empty when the run has no campaign.

    Args:
        results: every episode of the run.
    """
    lines: list[str] = []
    raw = [g for g in gains(results, "throughput") if g.workload in CAMPAIGN_WORKLOADS]
    if raw:
        lines += [
            "",
            "Context, not a verdict: the same campaign cells in raw samples/s (which adds "
            "samples of different models; FreeTrain's and MalleTrain's solvers both maximise "
            "this raw sum):",
            "",
            "| workload | " + " | ".join(d.key for d in DECLARATIONS) + " |",
            "| --- |" + " ---: |" * len(DECLARATIONS),
        ]
        for wl in dict.fromkeys(g.workload for g in raw):
            cells = []
            for d in DECLARATIONS:
                g = next((x for x in raw if (x.workload, x.declaration) == (wl, d.key)), None)
                cells.append("n/a" if g is None else fmt_gain(g))
            lines.append(f"| {wl} | " + " | ".join(cells) + " |")
    return lines


def _linearity_lines(table: list[Gain], info: list[Gain], linearity: dict[str, float]) -> list[str]:
    """Probe cost against idle windows, and how linear BFTrainer's ImageNet curves are.

    Also opens the table of metric means per policy, whose lines ``_mean_lines`` adds.

    Args:
        table: the gains (for the ``linear`` cell's declaration error on ImageNet).
        info: the information value of declarations (``linear`` and ``exact`` on ImageNet).
        linearity: the ImageNet models' efficiency at 64 nodes.
    """
    lines: list[str] = []
    lin = ", ".join(f"{m} {e:.2f}" for m, e in linearity.items())
    worth = {g.declaration: g for g in info if g.workload == "imagenet"}
    lin_err = [g.decl_error for g in table if (g.workload, g.declaration) == ("imagenet", "linear")]
    lines += [
        "",
        f"MalleTrain's probe sequence takes about {PROBE_SEQUENCE_S:.0f} s per job against a "
        f"median idle window of {MEDIAN_WINDOW_S:.0f} s.",
        "",
        "**Are BFTrainer's ImageNet curves close to linear?** Efficiency at 64 nodes against "
        f"linear (1.00 = linear): {lin}"
        + (
            f"; from {min(linearity.values()):.2f} to {max(linearity.values()):.2f}, so not "
            "linear at their largest count"
            if linearity
            else ""
        )
        + (
            f". At the counts scarce supply gives, the `linear` declaration is "
            f"{lin_err[0]:.2f} from the truth (median |log|), and FreeTrain told linear curves "
            f"gains {fmt_gain(worth['linear'])} over no information, against "
            f"{fmt_gain(worth['exact'])} told the exact ones."
            if lin_err and "linear" in worth and "exact" in worth
            else "."
        ),
        "",
        "Metric means per policy (mean over seeds):",
        "",
        "| workload | policy | declarations | metric | utilisation | rescales | probes |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    return lines


def _mean_lines(results: list[dict[str, Any]]) -> list[str]:
    """Metric means per workload, policy and declaration: the rows of the table that
    ``_linearity_lines`` opens (headline metric, utilisation, rescales, probes).

    Args:
        results: every episode of the run.
    """
    lines: list[str] = []
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["workload"], r["policy"], r["declaration"]), []).append(r)
    for (wl, pol, dec), rs in groups.items():
        m = lambda k, rs=rs: float(np.mean([x["metrics"][k] for x in rs]))  # noqa: E731
        probes = float(np.mean([x["probes"] for x in rs]))
        lines.append(
            f"| {wl} | {pol} | {dec} | {m(METRIC[wl]):,.2f} ({METRIC[wl]}) | "
            f"{m('utilisation'):.3f} | {m('rescales'):,.0f} | {probes:,.0f} |"
        )
    return lines


def plot(table: list[Gain], out_dir: Path) -> list[Path]:
    """``malletrain_gain.png``: the gain against declaration quality, exact to none.

    One series per workload (gain with its 95 % interval as error bars), the declaration
    models on the x axis in ``DECLARATIONS`` order, each labelled with its mean declaration
    error; lines at 0 and at the paper's +22.3 %.

    Args:
        table: the gains.
        out_dir: the output folder (created if missing).

    Returns:
        The PNG's path, in a list.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    wls = list(dict.fromkeys(g.workload for g in table))
    fig, ax = plt.subplots(figsize=(9, 5))
    keys = [d.key for d in DECLARATIONS]
    width = 0.8 / max(len(wls), 1)
    for k, wl in enumerate(wls):
        gs = [
            next((x for x in table if (x.workload, x.declaration) == (wl, d)), None) for d in keys
        ]
        xs = np.arange(len(keys)) + (k - (len(wls) - 1) / 2) * width
        ok = [i for i, g in enumerate(gs) if g is not None]
        y = np.array([gs[i].gain for i in ok])
        lo = np.nan_to_num(y - np.array([gs[i].ci_low for i in ok]))
        hi = np.nan_to_num(np.array([gs[i].ci_high for i in ok]) - y)
        ax.errorbar(
            xs[ok], y, yerr=[lo, hi], fmt="o-", capsize=3, color=f"C{k}", label=f"{wl} (95 % CI)"
        )
    ax.axhline(0, color="black", lw=0.8)
    ax.axhline(PAPER_GAIN, color="red", ls="-.", label="paper: up to +22.3 %")
    err = [np.mean([g.decl_error for g in table if g.declaration == k]) for k in keys]
    ax.set_xticks(
        np.arange(len(keys)), [f"{k}\n(err {e:.2f})" for k, e in zip(keys, err, strict=True)]
    )
    ax.set_xlabel(
        "FreeTrain's declarations, from the runtime truth (exact) to nothing (none); "
        "err = median |log declared / true|"
    )
    ax.set_ylabel("MalleTrain / FreeTrain - 1")
    ax.set_title("MalleTrain's gain against declaration quality (scarce supply, paired seeds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out_dir / "malletrain_gain.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return [p]


__all__ = ["DECL_BY_KEY", "diagnostics", "imagenet_linearity", "plot", "reasons", "section"]
