"""The printed and markdown tables of evaluate/compare (``mtgym.tables``) and the trade-off
chart (``mtgym.tradeoff``): readable at any width, every number whole, the headline first.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
from rich.console import Console

from mtgym import tables, tradeoff
from mtgym.evaluate import RESULT_KEYS, TAGS, PolicyRun, results_dict

#: per-metric magnitudes like the default scenario's (raw samples/s in the 100,000s)
SCALE = {"throughput": 250_000.0, "samples": 5e9, "normalized_samples": 2e5, "makespan": 21_600.0}
NAMES = ("freetrain", "freetrain-tfwd10", "equal-share", "greedy", "malletrain", "pal")


def synthetic_results(names=NAMES, seeds=(0, 1, 2)) -> dict:
    """``results.json`` content for made-up per-seed rows of every metric."""
    rng = np.random.default_rng(7)
    runs = []
    for i, name in enumerate(names):
        rows = []
        for s in seeds:
            row = {
                k: SCALE.get(k, 1_000.0 if "jct" in k else 1.0) * (1 + 0.1 * i + rng.random())
                for k in RESULT_KEYS
            }
            row["fairness_jain"] = float(rng.uniform(0.3, 1.0))
            row["makespan_censored"] = float(i % 2)
            row["seed"] = s
            rows.append(row)
        runs.append(PolicyRun(name, rows))
    return results_dict(runs, list(seeds), "default")


def numbers(results: dict) -> list[str]:
    """Every number the tables must show: means, interval bounds, paired diffs and ratios."""
    out = []
    ref = results["reference"]
    for name, e in results["policies"].items():
        for key, _, _ in tables.COLUMNS:
            value, interval = tables.mean_cell(e, key)
            out += [value, *interval.strip("[]").split(", ")]
            if name != ref:
                diff, interval = tables.paired_cell(e, key)
                out += [*diff.split(" "), *interval.strip("[]").split(", ")]
    return out


def render(results: dict, width: int) -> str:
    buf = io.StringIO()
    tables.print_results(results, Console(file=buf, width=width), "default: 3 seed(s)")
    return buf.getvalue()


def test_columns__headline_first_with_its_tradeoffs_beside_it():
    keys = [k for k, _, _ in tables.COLUMNS]
    assert keys[:5] == [
        "normalized_throughput",
        "fairness_jain",
        "jct_common_mean",
        "jobs_completed",
        "throughput",
    ]
    assert set(keys) <= set(RESULT_KEYS)
    assert TAGS["normalized_throughput"] == "eval/normalized_throughput"
    assert {"fairness_jain", "normalized_efficiency", "throughput"} <= set(TAGS)


@pytest.mark.parametrize("width", [80, 60])
def test_print__fits_the_width_and_cuts_no_number(width):
    res = synthetic_results()
    text = render(res, width)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    missing = [n for n in numbers(res) if n not in text]
    assert not missing, missing[:10]
    # the headline is the first metric column of the first table
    head = next(line for line in text.splitlines() if "policy" in line)
    assert re.search(r"policy\s+\S\s+norm\. tput", head), head
    assert "paired against freetrain" in text and "censored 3/3" in text


def test_print__a_wide_console_gets_one_table_each():
    text = render(synthetic_results(), 400)
    assert text.count("policy") == 2  # the mean table and the paired table, unsplit
    assert "(continued)" not in text and "…" not in text


def test_markdown__the_same_numbers_in_one_table_each(tmp_path):
    res = synthetic_results()
    md = tables.markdown(res)
    missing = [n for n in numbers(res) if n not in md]
    assert not missing, missing[:10]
    lines = md.splitlines()
    head = next(line for line in lines if line.startswith("| policy"))
    assert head.split(" | ")[1] == "norm. tput"
    rows = [line for line in lines if line.startswith("| ") and "---" not in line]
    # one header + 6 policies (means), one header + 5 policies (paired), column legend
    assert len(rows) == 1 + len(NAMES) + 1 + len(NAMES) - 1 + 1 + len(tables.COLUMNS)
    assert all(line.count(" | ") == len(tables.COLUMNS) for line in rows[: 2 * len(NAMES) + 1])


def test_tradeoff__one_point_per_policy_with_its_intervals(tmp_path):
    from matplotlib.container import ErrorbarContainer

    res = synthetic_results(names=("freetrain", "greedy"))
    res["policies"]["none"] = {"ci_low": {}, "ci_high": {}}  # no value: no point
    fig = tradeoff.figure(res)
    (ax,) = [a for a in fig.axes if a.get_xlabel()]
    points = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert [c.get_label() for c in points] == ["freetrain", "greedy"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["freetrain", "greedy"]
    for c in points:
        e = res["policies"][c.get_label()]
        data, caplines = c.lines[0], c.lines[1]
        assert data.get_xdata()[0] == pytest.approx(e["jct_common_mean"] / 3600.0)
        assert data.get_ydata()[0] == pytest.approx(e["normalized_throughput"])
        # the error bars end at the 95 % interval bounds on both axes
        ends = {round(float(v), 9) for ln in caplines for v in ln.get_ydata()}
        ends |= {round(float(v), 9) for ln in caplines for v in ln.get_xdata()}
        for key, scale in (("normalized_throughput", 1.0), ("jct_common_mean", 1 / 3600.0)):
            for bound in ("ci_low", "ci_high"):
                assert round(e[bound][key] * scale, 9) in ends, (c.get_label(), key, bound)
    path = tradeoff.write(res, tmp_path / "t.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate__writes_results_md_and_tradeoff_png_and_fits_80_columns(
    tmp_path, capsys, monkeypatch
):
    from mtgym.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "ev"
    args = ["evaluate", "--scenario", "toy-linear", "--policy", "greedy", "--policy"]
    assert main([*args, "freetrain", "--seeds", "2", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "…" not in printed and max(len(x) for x in printed.splitlines()) <= 80
    res = json.loads((out / "results.json").read_text())
    assert res["policies"]["greedy"]["normalized_throughput"] > 0
    md = (out / "results.md").read_text()
    missing = [n for n in numbers(res) if n not in md or n not in printed]
    assert not missing, missing[:10]
    assert (out / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("n", "warned"), [(1, True), (4, True), (5, False), (10, False)])
def test_print__intervals_from_fewer_than_5_seeds_carry_a_warning(n, warned):
    res = synthetic_results(names=NAMES[:2], seeds=tuple(range(n)))
    printed = " ".join(render(res, 80).split())
    md = tables.markdown(res)
    word = "seed" if n == 1 else "seeds"
    assert (f"warning: intervals from {n} {word} (fewer than 5)" in printed) is warned
    assert (f"**Warning: intervals from {n} {word} (fewer than 5)" in md) is warned
    assert max(len(line) for line in render(res, 80).splitlines()) <= 80
