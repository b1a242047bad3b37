"""Bounded parsing of scenario text: no aliases, a size cap and a nesting cap.

A scenario file must never hang or exhaust the machine (a "billion laughs" alias bomb, a
10 MB file, a 100,000-deep list). ``parse_bounded`` reads YAML with libyaml's C parser
(``yaml.CSafeLoader``) when it is installed, else the pure-Python ``SafeLoader``, and
refuses, with a ``ScenarioError`` naming the file:

- files above ``MAX_BYTES`` (checked before reading the whole file);
- any alias (``*name``) or anchor (``&name``): scenarios need neither, and refusing them
  outright is the only way to bound the expansion of nested aliases;
- nesting deeper than ``MAX_DEPTH`` mappings/lists (checked while composing, so no
  ``RecursionError``).

JSON text goes through the same YAML parser's event checks (JSON is YAML 1.2 flow) only
for its depth; ``json.loads`` with the size cap does the parsing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from mtgym.core.errors import MtgymError

#: Largest scenario file read, in bytes (the shipped presets are under 3 kB).
MAX_BYTES = 1_000_000
#: Deepest nesting of mappings and lists (the schema itself needs 5).
MAX_DEPTH = 32

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ScenarioError(MtgymError, ValueError):
    """A scenario file is malformed; the message says where and how to fix it."""


def read_bounded(path: Path) -> str:
    """The text of ``path`` (UTF-8), refusing files above ``MAX_BYTES``.

    The size is checked with ``stat`` first and again on the bytes read (a file that grew
    meanwhile), so at most ``MAX_BYTES + 1`` bytes are ever read.

    Raises:
        ScenarioError: too large, or not UTF-8.
        OSError: the file cannot be read.
    """
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ScenarioError(
            f"{path}: file is {size:,} bytes; scenario files are limited to {MAX_BYTES:,} bytes"
        )
    with path.open("rb") as f:
        raw = f.read(MAX_BYTES + 1)  # (a file that grew since stat)
    if len(raw) > MAX_BYTES:
        raise ScenarioError(f"{path}: file is over the {MAX_BYTES:,}-byte limit")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _check_events(text: str, where: str) -> None:
    """Walk the YAML event stream once: refuse anchors, aliases and deep nesting."""
    depth = 0
    try:
        for ev in yaml.parse(text, Loader=_BASE):
            if isinstance(ev, yaml.AliasEvent):
                raise ScenarioError(
                    f"{where}: line {ev.start_mark.line + 1}: YAML alias *{ev.anchor} is not "
                    "allowed in scenario files (write the value out)"
                )
            anchor = getattr(ev, "anchor", None)
            if anchor is not None:
                raise ScenarioError(
                    f"{where}: line {ev.start_mark.line + 1}: YAML anchor &{anchor} is not "
                    "allowed in scenario files (write the value out)"
                )
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise ScenarioError(
                        f"{where}: line {ev.start_mark.line + 1}: nesting deeper than "
                        f"{MAX_DEPTH} levels"
                    )
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{where}: not valid YAML: {exc}") from None


def parse_bounded(text: str, where: str) -> Any:
    """YAML (or, for a ``.json`` name, JSON) text -> Python data, within the limits above.

    JSON's depth is counted on brackets before parsing (brackets inside strings count
    too, so it errs on the strict side).

    Args:
        text: The text.
        where: The file's name: picks the format and is named in errors.

    Raises:
        ScenarioError: too long (over ``MAX_BYTES`` characters), too deep, an alias or
            anchor, or a syntax error.
    """
    if len(text) > MAX_BYTES:
        raise ScenarioError(f"{where}: text is over the {MAX_BYTES:,}-byte limit")
    is_json = where.endswith(".json")
    if is_json:
        depth = max_depth = 0
        for ch in text:  # brackets inside strings only over-count: a safe direction
            if ch in "[{":
                depth += 1
                max_depth = max(max_depth, depth)
            elif ch in "]}":
                depth -= 1
        if max_depth > MAX_DEPTH:
            raise ScenarioError(f"{where}: nesting deeper than {MAX_DEPTH} levels")
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ScenarioError(f"{where}: not valid JSON: {exc}") from None
    _check_events(text, where)
    try:
        return yaml.load(text, Loader=_BASE)  # a safe loader (C or Python)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{where}: not valid YAML: {exc}") from None
