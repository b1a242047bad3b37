"""The trade-off chart of ``evaluate`` and ``compare``: the headline against the JCT.

One point per policy: normalised throughput (``normalized_throughput``, best-node
equivalents of training; up is better) against the mean JCT of the jobs every policy
completed (``jct_common_mean``, hours; left is better), each with its 95 % bootstrap
intervals over seeds as error bars. A policy that gains throughput by starving jobs moves
right as it moves up, which a table of means hides. Drawn from ``results.json``'s content
(``mtgym.evaluate.results_dict``) with matplotlib's Agg backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: (metric, axis label, scale) of the axes
X = ("jct_common_mean", "mean JCT of the jobs every policy completed (h)", 1 / 3600.0)
Y = ("normalized_throughput", "normalised throughput (best-node equivalents)", 1.0)
FILENAME = "tradeoff.png"
#: marker cycle, one per ten policies (colours cycle within)
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def _num(v: object) -> float:
    """``v`` as a float; None (JSON null, an undefined value) becomes NaN."""
    return float("nan") if v is None else float(v)  # type: ignore[arg-type]


def points(results: dict[str, Any]) -> dict[str, tuple[float, float, float, float, float, float]]:
    """Per policy (x, x_low, x_high, y, y_low, y_high) in the chart's units (NaN: missing).

    x is the mean JCT of the common jobs in hours, y the normalised throughput; the lows
    and highs are their 95 % bootstrap interval ends.

    Args:
        results: The ``results.json`` content.
    """
    out = {}
    for name, e in results["policies"].items():
        vals = []
        for key, _, scale in (X, Y):
            lo, hi = e.get("ci_low", {}).get(key), e.get("ci_high", {}).get(key)
            vals += [_num(e.get(key)) * scale, _num(lo) * scale, _num(hi) * scale]
        out[name] = tuple(vals)
    return out  # type: ignore[return-value]


def figure(results: dict[str, Any]) -> Any:
    """The chart (a matplotlib Figure): a policy with no value on an axis draws no point; one
    with no interval (a single seed) draws no bar on that axis.

    The legend sits right of the axes; the title names the scenario and the number of
    seeds. Selects matplotlib's Agg backend (no display needed).

    Args:
        results: The ``results.json`` content.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(8.0, 4.8))
    colors = plt.get_cmap("tab10").colors
    drawn = 0
    for name, (x, xl, xh, y, yl, yh) in points(results).items():
        if np.isnan(x) or np.isnan(y):
            continue
        xerr = np.nan_to_num([[max(x - xl, 0.0)], [max(xh - x, 0.0)]])
        yerr = np.nan_to_num([[max(y - yl, 0.0)], [max(yh - y, 0.0)]])
        # a colour and marker pair per policy (distinct for 70), named in the legend
        color, marker = colors[drawn % len(colors)], MARKERS[(drawn // len(colors)) % len(MARKERS)]
        ax.errorbar([x], [y], xerr=xerr, yerr=yerr, fmt=marker, capsize=3, label=name, color=color)
        drawn += 1
    if drawn:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    ax.set_xlabel(X[1])
    ax.set_ylabel(Y[1])
    n = len(results.get("seeds", []))
    ax.set_title(
        f"{results.get('scenario')}: {n} seeds, 95 % bootstrap intervals (better: up, left)",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def write(results: dict[str, Any], path: Path) -> Path:
    """Write ``figure(results)`` to ``path`` (PNG at 80 dpi); returns the path.

    The figure is closed afterwards, so repeated calls do not accumulate in pyplot.

    Args:
        results: The ``results.json`` content.
        path: The file to write (``out/tradeoff.png`` under ``evaluate``).
    """
    import matplotlib.pyplot as plt

    fig = figure(results)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return Path(path)
