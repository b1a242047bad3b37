"""Generated tables in markdown files: find the marker blocks, render each from its
result file, rewrite them (``render_tree``) or report those that differ (``check_tree``).

A block is two marker lines and what lies between them::

    <!-- results:begin NAME source=results/FILE.json kind=KIND [KEY=VALUE ...] -->
    (generated: never edit by hand)
    <!-- results:end NAME -->

``NAME`` is unique in its file; ``source`` is a result file (``.json`` or ``.json.gz``)
relative to the repository root; ``kind`` names a renderer of
``mtgym.results.renderers.RENDERERS``, which also gets the other ``KEY=VALUE`` options (a
package above the registry adds its kinds with ``renderers.register_renderer`` when it is
imported, as ``mtgym.leaderboard`` adds ``leaderboard``: import it before rendering files
whose blocks use them; ``mtgym results render`` does).
The generated content is the renderer's table and a line naming the source file and the
command that wrote it. Markers inside fenced code blocks are text, not blocks; a line that
starts like a marker but does not parse is an error, so a typo cannot hide a block.

The files searched are ``README.md`` and every ``docs/**/*.md`` under the root.

A block with the option ``optional=1`` may name a result file not committed yet (a run
still to come, as the leaderboard's full run): while the file does not exist the block
holds a one-paragraph placeholder saying so (``placeholder``), and ``--check`` compares
against that; once the file exists the block renders as any other. A missing source of a
block without the option is an error, and so is an unknown ``kind`` with or without it (a
typo would otherwise wait unseen for the file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mtgym.core.errors import MtgymError
from mtgym.core.io import atomic_write_text
from mtgym.results.schema import ResultFile
from mtgym.results.store import read_result

if TYPE_CHECKING:
    from mtgym.results.renderers import Renderer

_BEGIN = re.compile(
    r"<!-- results:begin (?P<name>[A-Za-z0-9_.-]+)(?P<attrs>(?: [A-Za-z_-]+=\S+)*) -->"
)
_END = re.compile(r"<!-- results:end (?P<name>[A-Za-z0-9_.-]+) -->")
_MARKER = "<!-- results:"
_FENCE = re.compile(r"^\s*(```|~~~)")


class RenderError(MtgymError, ValueError):
    """A marker that does not parse, a block left open, a name used twice, an unknown
    renderer, or a result file that does not suit it (the message names file and line).
    """


@dataclass(frozen=True)
class Block:
    """One marker block of a markdown file.

    Attributes:
        doc: the markdown file.
        line: the begin marker's line number (from 1).
        name: the block's name.
        source: the result file, relative to the root.
        kind: the renderer's name.
        options: the marker's other ``KEY=VALUE`` pairs.
        start: the character offset just after the begin marker's line.
        end: the character offset of the end marker's line.
    """

    doc: Path
    line: int
    name: str
    source: str
    kind: str
    options: dict[str, str] = field(default_factory=dict)
    start: int = 0
    end: int = 0

    @property
    def where(self) -> str:
        """``doc:line block NAME``, for messages."""
        return f"{self.doc}:{self.line} block {self.name!r}"


def _begin(m: re.Match[str], doc: Path, line: int, start: int) -> Block:
    """The block a begin marker opens (``end`` still 0).

    Raises:
        RenderError: ``source`` or ``kind`` missing.
    """
    attrs = dict(a.split("=", 1) for a in m["attrs"].split())
    missing = [k for k in ("source", "kind") if k not in attrs]
    if missing:
        raise RenderError(f"{doc}:{line}: results block {m['name']!r} has no {', '.join(missing)}")
    source, kind = attrs.pop("source"), attrs.pop("kind")
    return Block(doc, line, m["name"], source, kind, attrs, start=start)


def find_blocks(text: str, doc: Path) -> list[Block]:
    """Every marker block of a markdown text, in order (module docstring).

    Args:
        text: the file's content.
        doc: its path, for messages and ``Block.doc``.

    Raises:
        RenderError: a malformed marker, a block inside a block, an end without its
            begin, a block left open, or a name used twice.
    """
    blocks: list[Block] = []
    opened: Block | None = None
    offset, fenced = 0, False
    for n, line in enumerate(text.splitlines(keepends=True), start=1):
        here, offset = offset, offset + len(line)
        if _FENCE.match(line):
            fenced = not fenced
        s = line.strip()
        if fenced or not s.startswith(_MARKER):
            continue
        if (m := _BEGIN.fullmatch(s)) is not None:
            if opened is not None:
                raise RenderError(f"{doc}:{n}: results block {m['name']!r} inside {opened.name!r}")
            if m["name"] in {b.name for b in blocks}:
                raise RenderError(f"{doc}:{n}: results block name {m['name']!r} used twice")
            opened = _begin(m, doc, n, offset)
        elif (m := _END.fullmatch(s)) is not None and opened and m["name"] == opened.name:
            blocks.append(replace(opened, end=here))
            opened = None
        else:
            raise RenderError(
                f"{doc}:{n}: {s!r} is not a results marker that closes or opens a block "
                "(<!-- results:begin NAME source=FILE kind=KIND --> ... "
                "<!-- results:end NAME -->)"
            )
    if opened is not None:
        raise RenderError(f"{opened.where}: no '<!-- results:end {opened.name} -->' line")
    return blocks


class _Sources:
    """The result files, each read once per render."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict[str, ResultFile] = {}

    def get(self, source: str) -> ResultFile:
        """The result file ``source`` (relative to the root), read and validated."""
        if source not in self.cache:
            self.cache[source] = read_result(self.root / source)
        return self.cache[source]


def _renderer(block: Block) -> Renderer:
    """The renderer of a block's ``kind`` (``renderers.renderer``).

    Raises:
        RenderError: an unknown kind (the message lists the known ones).
    """
    from mtgym.results.renderers import renderer

    try:
        return renderer(block.kind)
    except LookupError as exc:
        raise RenderError(f"{block.where}: {exc.args[0]}") from None


def render_block(block: Block, result: ResultFile) -> str:
    """The content between a block's markers: a blank line, the renderer's lines, a blank
    line, the source line (``renderers.source_line``), a blank line.

    Raises:
        RenderError: an unknown renderer, or a result file it cannot render.
    """
    from mtgym.results.renderers import source_line

    fn = _renderer(block)
    try:
        lines = fn(result, block.options)
    except (KeyError, TypeError, ValueError) as exc:
        raise RenderError(f"{block.where}: cannot render {block.source}: {exc!r}") from None
    return "\n" + "\n".join([*lines, "", source_line(block.source, result)]) + "\n\n"


def placeholder(block: Block) -> str:
    """The content of an ``optional=1`` block whose result file does not exist yet."""
    return (
        f"\n_No result file `{block.source}` yet: this block is generated from it by "
        "`mtgym results render` once it is committed (the marker's `optional=1`)._\n\n"
    )


def block_content(block: Block, sources: _Sources) -> str:
    """The content a block should hold: its rendering, or ``placeholder`` for an
    ``optional=1`` block whose source does not exist.

    Raises:
        OSError, ValueError: the source cannot be read (missing, without ``optional=1``),
            or ``render_block``'s ``RenderError`` (an unknown kind: even for a placeholder).
    """
    _renderer(block)
    try:
        result = sources.get(block.source)
    except FileNotFoundError:
        if block.options.get("optional") != "1":
            raise
        return placeholder(block)
    return render_block(block, result)


def render_text(text: str, doc: Path, root: Path, sources: _Sources | None = None) -> str:
    """``text`` with every block's content rendered anew.

    Args:
        text: a markdown file's content.
        doc: its path (messages).
        root: the folder the blocks' ``source`` paths start from.
        sources: the result files already read (None: read afresh).
    """
    sources = sources or _Sources(root)
    out, pos = [], 0
    for b in find_blocks(text, doc):
        try:
            content = block_content(b, sources)
        except RenderError:
            raise
        except (OSError, ValueError) as exc:
            raise RenderError(f"{b.where}: source {b.source}: {exc}") from None
        out += [text[pos : b.start], content]
        pos = b.end
    return "".join([*out, text[pos:]])


def doc_files(root: Path) -> list[Path]:
    """The files searched for blocks: ``README.md`` and ``docs/**/*.md`` (sorted)."""
    readme = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = sorted((root / "docs").rglob("*.md")) if (root / "docs").is_dir() else []
    return readme + docs


def render_tree(root: Path) -> tuple[list[Path], int]:
    """Render every block under ``root`` and rewrite (atomically) the files that changed.

    Returns:
        The files changed, and how many blocks were rendered.

    Raises:
        RenderError: as ``find_blocks`` and ``render_block``, or a source that cannot be
            read; nothing is written then.
    """
    sources, new, n = _Sources(root), {}, 0
    for doc in doc_files(root):
        text = doc.read_text(encoding="utf-8")
        n += len(find_blocks(text, doc))
        rendered = render_text(text, doc, root, sources)
        if rendered != text:
            new[doc] = rendered
    for doc, text in new.items():
        atomic_write_text(doc, text)
    return list(new), n


def check_tree(root: Path) -> tuple[list[str], int]:
    """Every block under ``root`` that differs from its rendering, or cannot be rendered.

    Returns:
        One line per such block (``doc:line block NAME: ...``), and how many blocks
        there are. A file whose markers do not parse is one line too.
    """
    sources, problems, n = _Sources(root), [], 0
    for doc in doc_files(root):
        text = doc.read_text(encoding="utf-8")
        try:
            blocks = find_blocks(text, doc)
        except RenderError as exc:
            problems.append(str(exc))
            continue
        n += len(blocks)
        for b in blocks:
            try:
                want = block_content(b, sources)
            except (OSError, ValueError) as exc:
                problems.append(f"{b.where}: cannot render: {exc}")
                continue
            if text[b.start : b.end] != want:
                problems.append(
                    f"{b.where}: differs from {b.source} (edited by hand, or the file "
                    "changed): run `mtgym results render`"
                )
    return problems, n
