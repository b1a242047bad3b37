"""The README quotes no reproduction figure of mtgym's (they are in the report the command
writes), and its paper column is the values the reproductions judge against."""

from __future__ import annotations

from pathlib import Path

from mtgym.reproduce import cli, freetrain, malletrain_analyse, pal_analyse

README = Path(__file__).resolve().parents[1] / "README.md"


def _table(section: str) -> list[list[str]]:
    """The first markdown table under the ``## section`` heading, header row first."""
    text = README.read_text()
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    lines = [ln for ln in text[start:end].splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines if "---" not in ln]


def test_reproduction_table_quotes_the_papers_values_and_no_mtgym_figure():
    header, *rows = _table("Reproducing the papers")
    assert header == ["experiment", "what mtgym measures", "paper"]
    assert {r[0].strip("`") for r in rows} == set(cli.EXPERIMENTS)
    pal = pal_analyse.PAPER
    sweep = " / ".join(f"{t:g}" for t in freetrain.T_FWD_SWEEP)
    want = {
        "freetrain": f"up to {freetrain.PAPER_EFFICIENCY:.0%}",
        "malletrain": f"up to +{malletrain_analyse.PAPER_GAIN:.1%}",
        "pal Fig. 10": f"{pal['pal']['geomean']:.0%} ({pal['pm-first']['geomean']:.0%}), "
        "artifact README",
        "pal locality": f"PAL {pal['pal']['lam1']:.0%} to {pal['pal']['lam3']:.0%}, "
        f"PM-First {pal['pm-first']['lam1']:.0%} to {pal['pm-first']['lam3']:.0%}",
    }
    got = {}
    for exp, what, paper in rows:
        key = exp.strip("`")
        if key == "pal":
            key += " locality" if "locality" in what else " Fig. 10"
        got[key] = paper
        if key == "freetrain":
            assert f"({sweep} s)" in what
    assert got == want
