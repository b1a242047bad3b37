"""The tables of ``evaluate`` and ``compare``: printed (rich) and written (``results.md``).

Both are drawn from the content of ``results.json`` (``mtgym.evaluate.results_dict``), so
the printed, the markdown and the JSON numbers are the same. The headline,
``normalized_throughput`` (``docs/metrics.md``), is the first column.

**Readable at any width.** The printed tables hold as many metric columns as fit the console
(``Console.width``: the terminal's, ``$COLUMNS``, or 80 when stdout is a pipe or a log) and
carry the rest on to further tables, each repeating the policy column; a value and its
interval sit on separate lines of a cell, and every cell folds rather than being cut, so no
number is ever replaced by an ellipsis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: (metric, column head, meaning) of the tables, in order: the headline first, then the
#: trade-offs reported beside it (fairness, JCT of common jobs, jobs completed) and raw samples/s
COLUMNS: tuple[tuple[str, str, str], ...] = (
    (
        "normalized_throughput",
        "norm. tput",
        "normalised throughput, the headline: each job's samples/s / its reference rate, "
        "summed (best-node equivalents of training)",
    ),
    ("fairness_jain", "Jain", "Jain's index over per-job normalised rates (1 = all equal)"),
    ("jct_common_mean", "JCT common s", "mean JCT of the jobs every policy completed (s)"),
    ("jobs_completed", "done", "jobs completed"),
    ("throughput", "tput/s", "raw samples/s, summed over models"),
    (
        "bound_fraction",
        "of HB",
        "normalised throughput / the episode's hindsight bound (mtgym.hindsight): the share "
        "of what any policy, knowing the future, could reach",
    ),
    (
        "normalized_efficiency",
        "norm. eff.",
        "normalised samples / offered node-seconds at reference rates",
    ),
    ("upper_bound_fraction", "of UB", "samples / upper bound (raw)"),
    ("utilisation", "util", "allocated / offered node-seconds"),
    ("jct_mean", "JCT mean s", "mean JCT of the jobs the policy completed (s)"),
    ("makespan", "makespan s", "last completion (or the run's end) - first submission (s)"),
    ("makespan_common", "mksp common s", "makespan over the common jobs (s)"),
    ("rescales", "rescales", "rescales per episode"),
    ("decision_ms", "ms/dec", "wall milliseconds per decision"),
    (
        "hindsight_bound",
        "HB",
        "hindsight upper bound of the normalised throughput, per seed (the same for every "
        "policy; docs/metrics.md)",
    ),
)
#: metrics shown with one decimal (counts averaged over seeds)
COUNTS = frozenset({"jobs_completed", "jobs_common", "rescales"})
#: metrics shown with a fixed number of decimals (the rest: 3 below 10, else whole numbers)
DECIMALS = {"normalized_throughput": 2, "hindsight_bound": 2}

MEAN_TITLE = "mean [95 % bootstrap interval over seeds]"
PAIRED_TITLE = "paired against {ref}: mean of per-seed differences [95 % interval] (ratio)"


def fmt(v: float | None, key: str = "", sign: str = "") -> str:
    """A metric value as the tables print it; ``n/a`` when undefined (None or NaN).

    Counts (``COUNTS``) get one decimal (they are means over seeds), ``DECIMALS`` metrics
    their fixed decimals, others 3 decimals below 10 and whole numbers from 10 on;
    thousands are separated by commas.

    Args:
        v: The value.
        key: The metric's name (picks the format).
        sign: ``"+"`` to print the sign of positive values too (paired differences).
    """
    if v is None or math.isnan(v):
        return "n/a"
    if key in COUNTS:
        return f"{v:{sign},.1f}"
    if key in DECIMALS:
        return f"{v:{sign},.{DECIMALS[key]}f}"
    return f"{v:{sign}.3f}" if abs(v) < 10 else f"{v:{sign},.0f}"


def wall_text(s: float | None) -> str:
    """Wall seconds, rounded for a reader: ``42 s``, ``12 min`` or ``3 h 05 min`` (``n/a``
    when unknown). The one format of every duration mtgym prints or renders approximately.
    """
    if s is None or not math.isfinite(s):
        return "n/a"
    if s < 120:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.0f} min"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def clock_text(seconds: float) -> str:
    """Wall seconds to the second, for progress lines: ``3 min 05 s`` (``42 s`` under a
    minute).
    """
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def mean_cell(entry: dict[str, Any], key: str) -> tuple[str, str]:
    """(value, "[low, high]") of one policy's metric in ``results.json``'s entry.

    Args:
        entry: ``results["policies"][name]``.
        key: The metric.
    """
    lo, hi = entry["ci_low"].get(key), entry["ci_high"].get(key)
    return fmt(entry.get(key), key), f"[{fmt(lo, key)}, {fmt(hi, key)}]"


def paired_cell(entry: dict[str, Any], key: str) -> tuple[str, str]:
    """("diff (ratio x)", "[low, high]") of one policy's paired comparison.

    The ratio part is left out when undefined; a metric with no paired entry prints
    ``n/a``.

    Args:
        entry: ``results["policies"][name]``.
        key: The metric.
    """
    p = entry["paired"].get(key) or {}
    ratio = p.get("ratio")
    r = "" if ratio is None or math.isnan(ratio) else f" ({ratio:.3f}x)"
    lo, hi = fmt(p.get("diff_ci_low"), key, "+"), fmt(p.get("diff_ci_high"), key, "+")
    return f"{fmt(p.get('diff'), key, '+')}{r}", f"[{lo}, {hi}]"


def censored_note(entry: dict[str, Any]) -> str:
    """``censored n/seeds`` when the makespan is censored on some seeds, else ''."""
    cens = [r.get("makespan_censored") for r in entry.get("per_seed", [])]
    n = sum(1 for c in cens if c)
    return f"censored {n}/{len(cens)}" if n else ""


#: one row: (policy, its note, per column (value, interval))
Row = tuple[str, str, list[tuple[str, str]]]


def _rows(results: dict[str, Any], paired: bool) -> list[Row]:
    """One ``Row`` per policy with a cell per ``COLUMNS`` metric.

    Args:
        results: The ``results.json`` content.
        paired: Paired cells against the reference (the reference itself left out, no
            notes), else mean cells with the censored-makespan note.
    """
    ref = results.get("reference")
    out = []
    for name, entry in results["policies"].items():
        if paired and name == ref:
            continue
        cell = paired_cell if paired else mean_cell
        note = "" if paired else censored_note(entry)
        out.append((name, note, [cell(entry, k) for k, _, _ in COLUMNS]))
    return out


CENSORED_CAPTION = (
    "censored n/s: on n of s seeds a job was unfinished at the run's end; the makespan "
    "counts to that end"
)


def _table(title: str, rows: list[Row], cols: Sequence[int], caption: str | None = None) -> Any:
    """A rich table of ``rows`` restricted to the ``COLUMNS`` indices ``cols``.

    The policy column comes first (its note on a second line); each cell holds the value
    over its interval; every column folds instead of truncating.
    """
    from rich.table import Table

    table = Table(title=title, caption=caption)
    table.add_column("policy", overflow="fold")
    for c in cols:
        table.add_column(COLUMNS[c][1], justify="right", overflow="fold")
    for name, note, cells in rows:
        label = f"{name}\n({note})" if note else name
        table.add_row(label, *(f"{cells[c][0]}\n{cells[c][1]}" for c in cols))
    return table


def fitted_tables(title: str, rows: list[Row], width: int) -> list:
    """Rich tables of ``rows`` with as many metric columns each as fit ``width`` (at least
    one): the first titled ``title``, the others ``(continued)``; the last one explains a
    censored note, if any.

    Columns are added in ``COLUMNS`` order; each table is measured at its natural width
    and a column that would push it past ``width`` starts the next table.

    Args:
        title: The first table's title.
        rows: The rows (``_rows``).
        width: The console's width, characters.
    """
    from rich.console import Console

    ruler = Console(width=10_000)  # measures natural widths (a narrow one clamps them)
    tables: list = []
    cols: list[int] = []
    for c in range(len(COLUMNS)):
        trial = _table(title if not tables else "(continued)", rows, [*cols, c])
        if cols and ruler.measure(trial).maximum > width:
            tables.append(_table(title if not tables else "(continued)", rows, cols))
            cols = [c]
        else:
            cols.append(c)
    if cols:
        caption = CENSORED_CAPTION if any(note for _, note, _ in rows) else None
        tables.append(_table(title if not tables else "(continued)", rows, cols, caption))
    return tables


def few_seeds_note(results: dict[str, Any]) -> str | None:
    """``mtgym.stats.few_seeds_warning`` for the results' seed count (None: 5 or more).

    Args:
        results: The ``results.json`` content (its ``seeds``).
    """
    from mtgym.stats import few_seeds_warning

    return few_seeds_warning(len(results.get("seeds", [])))


def print_results(results: dict[str, Any], console: Any, title: str) -> None:
    """Print the mean table, then the paired table (when there is a reference and another
    policy), each split to fit ``console.width``; between them, a warning when the
    intervals come from fewer than 5 seeds (``few_seeds_note``).

    Args:
        results: The ``results.json`` content (``mtgym.evaluate.results_dict``).
        console: A ``rich.console.Console``.
        title: Prefix of the mean table's title (the scenario and seeds).
    """
    width = console.width
    for t in fitted_tables(f"{title}: {MEAN_TITLE}", _rows(results, False), width):
        console.print(t)
    note = few_seeds_note(results)
    if note:
        console.print(note, markup=False, highlight=False)
    ref = results.get("reference")
    paired = _rows(results, True)
    if ref is None or not paired:
        return
    for t in fitted_tables(PAIRED_TITLE.format(ref=ref), paired, width):
        console.print(t)


def _md_row(cells: Sequence[str]) -> str:
    """One markdown table row; ``|`` inside a cell is escaped."""
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def markdown(results: dict[str, Any], title: str | None = None) -> str:
    """``results.md``: the same numbers as the printed tables, as markdown tables.

    A header (scenario, seeds, reference; the few-seeds warning, ``few_seeds_note``), the
    mean table, the paired table (when there is a reference and another policy), and a
    legend of the columns. The tables are not split by width.

    Args:
        results: The ``results.json`` content.
        title: The heading; None: the scenario's name.
    """
    ref = results.get("reference")
    seeds = results.get("seeds", [])
    lines = [
        f"# {title or results.get('scenario', 'results')}",
        "",
        f"Scenario `{results.get('scenario')}`, {len(seeds)} seed(s)"
        + (f" ({seeds[0]}-{seeds[-1]})" if seeds else "")
        + f", reference `{ref}`. Mean over seeds [95 % percentile bootstrap interval]; "
        "paired: mean of the per-seed differences against the reference [95 % interval] "
        "(ratio of the means).",
        "",
    ]
    note = few_seeds_note(results)
    if note:
        lines += [f"**{note[0].upper()}{note[1:]}.**", ""]
    heads = ["policy", *(h for _, h, _ in COLUMNS)]
    sep = ["---", *("---:" for _ in COLUMNS)]
    lines += ["## " + MEAN_TITLE, "", _md_row(heads), _md_row(sep)]
    for name, note, cells in _rows(results, False):
        label = f"{name} ({note})" if note else name
        lines.append(_md_row([label, *(f"{v} {iv}" for v, iv in cells)]))
    if any(note for _, note, _ in _rows(results, False)):
        lines += ["", CENSORED_CAPTION + "."]
    paired = _rows(results, True)
    if ref is not None and paired:
        lines += ["", "## " + PAIRED_TITLE.format(ref=ref), "", _md_row(heads), _md_row(sep)]
        for name, _, cells in paired:
            lines.append(_md_row([name, *(f"{v} {iv}" for v, iv in cells)]))
    lines += ["", "## Columns", "", "| column | metric | meaning |", "| --- | --- | --- |"]
    lines += [f"| {h} | `{k}` | {d} |" for k, h, d in COLUMNS]
    lines += ["", "Metric definitions: `docs/metrics.md`.", ""]
    return "\n".join(lines)
