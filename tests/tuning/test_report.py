"""``docs/tuning.md`` and ``docs/tuning-sweeps/<scenario>.md`` are generated from the tuning records
(``mtgym tune --report --write docs``): a hand edit, or a record changed without
regenerating, fails here."""

from __future__ import annotations

from pathlib import Path

from mtgym.tuning import report

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_committed_tuning_pages_are_what_the_records_give():
    want = report.pages()
    stale = [rel for rel, text in want.items() if (DOCS / rel).read_text() != text]
    extra = sorted(
        f"{report.PAGES}/{p.name}"
        for p in (DOCS / report.PAGES).glob("*.md")
        if f"{report.PAGES}/{p.name}" not in want
    )
    assert not stale and not extra, (
        f"regenerate with `mtgym tune --report --write docs`: stale {stale}, extra {extra}"
    )


def test_write_pages_writes_every_page_and_drops_stale_ones(tmp_path):
    (tmp_path / report.PAGES).mkdir()
    (tmp_path / report.PAGES / "gone.md").write_text("old")
    written = report.write_pages(tmp_path)
    assert {p.relative_to(tmp_path).as_posix() for p in written} == set(report.pages())
    assert not (tmp_path / report.PAGES / "gone.md").exists()
    for rel, text in report.pages().items():
        assert (tmp_path / rel).read_text() == text


def test_the_short_page_is_short_and_links_every_scenario():
    text = report.report_markdown()
    assert len(text.splitlines()) < 40
    for r in report.records():
        assert f"({report.PAGES}/{r.scenario}.md)" in text
