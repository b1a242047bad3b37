"""Every code reference in the docs and in the code's docstrings and comments resolves.

Checked references:

- a repository folder in backticks, ``agents/pretrained/``: it exists;
- a repository path, ``mtgym/env/step.py``, ``docs/model.md``, ``sim/state.py`` (under
  ``mtgym/``), optionally with ``:symbol`` or ``:line``: the file exists, the symbol is
  defined in it, the file has that many lines; a markdown link ``[text](path)`` likewise;
- a dotted name in backticks, ``mtgym.env.wrappers.TimeDiscount``, ``policy.play``,
  ``engine.run``: its first part names a module of the repository (absolute, under
  ``mtgym``, a sibling of the module the docstring is in, or a module that file imports),
  and the rest is defined there (a function, class, constant, import, or a class's field
  or method).

Everything is read with ``ast`` (nothing is imported), so the test takes seconds. Names
that are not the repository's (``np.zeros``, ``info.all_done``, the papers' own files) are
left alone: a dotted name is a reference only when its first part is one of our modules
and is not also a variable of the file it is written in.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mtgym", "agents", "baselines")
CODE_DIRS = (*PACKAGES, "scripts")
#: Top-level folders a path reference may start with (others are the papers' repositories,
#: output folders such as ``runs/`` or the shared data).
TOP = ("mtgym", "agents", "baselines", "scripts", "tests", "docs", "scenarios")

_PATH = re.compile(
    r"(?<![\w./-])((?:[A-Za-z_][\w.-]*/)+[\w.-]+?(?:\.py|\.md))(?::([A-Za-z_][\w.]*|\d+))?"
    r"(?![\w/-])"
)
#: A section of a markdown file: ``docs/papers.md §1.3``, ``§1.2-1.5``, ``, addendum 2``.
_SECTION = re.compile(r"([\w/.-]+\.md),? (?:§([\d.]+)(?:-([\d.]+))?|addendum (\d+))")
_DIR = re.compile(r"`((?:[A-Za-z_][\w.-]*/)+)`")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
_TICKED = re.compile(r"``?([^`\s]+?)``?")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_BARE_MD = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
#: The last part of a file name in backticks (``report.json``, ``model.zip``): not code.
FILE_EXTENSIONS = {
    "py",
    "md",
    "json",
    "jsonl",
    "zip",
    "conf",
    "yaml",
    "yml",
    "toml",
    "csv",
    "gz",
    "png",
    "txt",
    "npz",
    "npy",
    "pkl",
    "pt",
    "log",
    "html",
    "whl",
}
#: Heads that prose uses for objects, not our modules: ``env.reset`` (a Gymnasium env),
#: ``model.predict`` (an SB3 model).
OBJECTS = {"env", "model", "self"}


# ---------------------------------------------------------------------------------------
# The repository's modules, read with ast
# ---------------------------------------------------------------------------------------
@dataclass
class Module:
    """What a module defines at top level, its classes' members, and what it imports."""

    path: Path
    names: set[str] = field(default_factory=set)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted target
    variables: set[str] = field(default_factory=set)  # names bound otherwise anywhere
    dynamic: bool = False  # defines a module __getattr__ (lazy attributes)
    docs: list[tuple[int, str]] = field(default_factory=list)  # (line, docstring)
    strings: set[str] = field(default_factory=set)  # ``*.md`` names in string literals


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@cache
def modules() -> dict[str, Module]:
    """Dotted name -> ``Module`` for every Python file of the packages and scripts."""
    out = {}
    for top in CODE_DIRS:
        for p in sorted((ROOT / top).rglob("*.py")):
            out[_module_name(p)] = _read(p)
    return out


def _top_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    out = []
    for s in body:
        out.append(s)
        if isinstance(s, (ast.If, ast.Try, ast.With)):
            for sub in ("body", "orelse", "finalbody", "handlers"):
                for x in getattr(s, sub, []):
                    out += _top_statements(x.body if isinstance(x, ast.ExceptHandler) else [x])
    return out


def _targets(t: ast.expr) -> list[str]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _targets(e)]
    return []


def _resolve_relative(path: Path, level: int, mod: str | None) -> str:
    base = _module_name(path).split(".")
    if path.name != "__init__.py":
        base.pop()
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, mod] if mod else base)


def _read(path: Path) -> Module:
    tree = _tree(path)
    m = Module(path)
    for s in _top_statements(tree.body):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            m.names.add(s.name)
            m.dynamic |= s.name == "__getattr__"
        elif isinstance(s, ast.ClassDef):
            m.names.add(s.name)
            m.classes[s.name] = s
        elif isinstance(s, ast.Assign):
            m.names.update(n for t in s.targets for n in _targets(t))
        elif isinstance(s, (ast.AnnAssign, ast.AugAssign)):
            m.names.update(_targets(s.target))
        elif isinstance(s, ast.Import):
            for a in s.names:
                local = a.asname or a.name.split(".")[0]
                m.imports[local] = a.name if a.asname else local
        elif isinstance(s, ast.ImportFrom):
            src = _resolve_relative(path, s.level, s.module) if s.level else (s.module or "")
            for a in s.names:
                m.imports[a.asname or a.name] = f"{src}.{a.name}"
    m.names.update(m.imports)
    for node in ast.walk(tree):  # one walk: variables, docstrings, string literals
        if isinstance(node, ast.arg):
            m.variables.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            m.variables.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m.strings.update(_BARE_MD.findall(node.value))
        elif isinstance(node, ast.Expr) and isinstance(getattr(node.value, "value", None), str):
            m.docs.append((node.lineno, node.value.value))  # module, class, function, attribute
    m.variables -= set(m.imports)
    return m


def _class_has(cls: ast.ClassDef, owner: Module, attr: str, depth: int = 0) -> bool:
    for s in _top_statements(cls.body):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if s.name == attr:
                return True
        elif isinstance(s, ast.Assign):
            if attr in {n for t in s.targets for n in _targets(t)}:
                return True
        elif isinstance(s, ast.AnnAssign) and attr in _targets(s.target):
            return True
    for node in ast.walk(cls):  # instance attributes: self.attr = ...
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr == attr
        ):
            return True
    for base in cls.bases:  # inherited: follow the repository's classes, trust others
        name = ast.unparse(base).split("[")[0]
        target = _find_class(owner, name) if depth < 5 else None
        if target is None:
            if name not in ("object", "Protocol", "NamedTuple", "Enum", "IntEnum", "IntFlag"):
                return True
            continue
        if _class_has(*target, attr, depth + 1):
            return True
    return False


def _find_class(owner: Module, name: str) -> tuple[ast.ClassDef, Module] | None:
    if name in owner.classes:
        return owner.classes[name], owner
    target = owner.imports.get(name)
    if target is None or "." not in target:
        return None
    mod, _, cls = target.rpartition(".")
    m = modules().get(mod)
    return _find_class(m, cls) if m is not None else None


def resolves(module: str, attrs: list[str]) -> bool:
    """``attrs`` (``["Class", "method"]``) is defined in the repository module ``module``."""
    m = modules()[module]
    if not attrs or m.dynamic:
        return True
    head, rest = attrs[0], attrs[1:]
    if f"{module}.{head}" in modules():  # a submodule
        return resolves(f"{module}.{head}", rest)
    if head not in m.names:
        return False
    if not rest:
        return True
    if head in m.classes:  # a class's member (deeper attributes are not followed)
        return _class_has(m.classes[head], m, rest[0])
    target = m.imports.get(head)
    if target is not None:  # imported: follow it into the repository, trust the rest
        return _resolve_dotted(target.split(".") + rest)
    return True  # an attribute of a constant (a named tuple's field, an enum member ...)


@cache
def package_dirs() -> dict[str, str]:
    """``[tool.setuptools.package-dir]`` of pyproject.toml: a package installed from another
    folder (``mtgym.scenarios`` is the top-level ``scenarios/``)."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return dict(conf.get("tool", {}).get("setuptools", {}).get("package-dir", {}))


def _mapped_dir(dotted: str) -> Path | None:
    """The folder of a package mapped by ``package_dirs`` (or a folder inside it)."""
    for pkg, folder in package_dirs().items():
        if dotted == pkg or dotted.startswith(pkg + "."):
            return ROOT / folder / dotted[len(pkg) :].lstrip(".").replace(".", "/")
    return None


def _resolve_dotted(parts: list[str]) -> bool:
    """Absolute dotted name: the longest prefix that is a repository module, then attributes
    (True when it leaves the repository: that is not ours to check)."""
    mapped = _mapped_dir(".".join(parts))
    if mapped is not None:
        return mapped.is_dir()
    for k in range(len(parts), 0, -1):
        mod = ".".join(parts[:k])
        if mod in modules():
            return resolves(mod, parts[k:])
    return parts[0] not in PACKAGES


# ---------------------------------------------------------------------------------------
# The references
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Text:
    """A piece of prose to check: where it is, and (for code) the module it belongs to."""

    where: str
    text: str
    module: str | None = None  # dotted name of the module whose docstring or comment it is
    base: Path = ROOT  # folder that relative links are relative to


def _doc_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for top in PACKAGES:
        files += sorted((ROOT / top).rglob("README.md"))
    return files


def _code_texts(path: Path) -> list[Text]:
    src = path.read_text()
    mod = _module_name(path)
    rel = path.relative_to(ROOT)
    out = [Text(f"{rel}:{line}", doc, mod, path.parent) for line, doc in modules()[mod].docs]
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            out.append(Text(f"{rel}:{tok.start[0]}", tok.string, mod, path.parent))
    return out


@cache
def texts() -> tuple[Text, ...]:
    """The docs (fenced code blocks removed) and every docstring and comment of the code."""
    out = [
        Text(str(p.relative_to(ROOT)), _FENCE.sub("", p.read_text()), None, p.parent)
        for p in _doc_files()
    ]
    for top in CODE_DIRS:
        for p in sorted((ROOT / top).rglob("*.py")):
            out += _code_texts(p)
    return tuple(out)


def _check_file(rel: str, symbol: str | None, base: Path) -> str | None:
    """None when ``rel`` (and ``symbol``) resolve, else why not."""
    first = rel.split("/")[0]
    if first in TOP:
        path = ROOT / rel
    elif (ROOT / "mtgym" / first).is_dir():  # ``sim/state.py``: under mtgym/
        path = ROOT / "mtgym" / rel
    elif (base / rel).exists():
        path = base / rel
    else:
        return None  # another repository's file (``blox/blox_manager.py``) or an output
    if not path.is_file():
        return f"no file {path.relative_to(ROOT)}"
    if symbol is None:
        return None
    if symbol.isdigit():
        n = len(path.read_text().splitlines())
        return None if int(symbol) <= n else f"{rel} has {n} lines, not {symbol}"
    if path.suffix != ".py":
        return None
    ok = resolves(_module_name(path), symbol.split("."))
    return None if ok else f"{symbol} is not defined in {rel}"


def _check_section(rel: str, numbers: list[str | None], addendum: str | None) -> str | None:
    """None when the repository's markdown file ``rel`` has the cited sections' headings."""
    path = ROOT / rel
    if rel.split("/")[0] not in TOP or not path.is_file():
        return None  # not ours (checked as a path elsewhere)
    heads = [ln.lstrip("#").strip() for ln in path.read_text().splitlines() if ln[:1] == "#"]
    # headings read "1.3 The MILP ..." and "Addendum 2: ..."
    want = [f"Addendum {addendum}:"] if addendum else [f"{n} " for n in numbers if n]
    missing = [w.strip(": ") for w in want if not any(h.startswith(w) for h in heads)]
    return f"{rel} has no section {', '.join(missing)}" if missing else None


def _check_dotted(ref: str, t: Text) -> str | None:
    """None when ``ref`` resolves or is not a reference to our code, else why not."""
    parts = ref.split(".")
    head = parts[0]
    if head in PACKAGES:
        return None if _resolve_dotted(parts) else f"{ref} does not resolve"
    if head in OBJECTS:
        return None
    candidates = []
    if t.module is not None:
        m = modules()[t.module]
        if head in m.variables:
            return None  # a local variable of that name (``state.time``)
        target = m.imports.get(head)
        if target is not None:
            if target.split(".")[0] not in PACKAGES:
                return None  # numpy, numba, ...
            candidates.append(target)
        pkg = t.module if m.path.name == "__init__.py" else t.module.rpartition(".")[0]
        candidates.append(f"{pkg}.{head}")
    candidates.append(f"mtgym.{head}")
    for c in candidates:
        if _exists(c):
            ok = _resolve_dotted([*c.split("."), *parts[1:]])
            return None if ok else f"{ref} does not resolve (read as {c})"
    return None  # not one of our modules: prose (``info.all_done``, ``trial.t_fwd_s``)


@cache
def entry_point_groups() -> frozenset[str]:
    """The entry-point groups pyproject.toml declares (``mtgym.policies``): names, not code."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as fh:
        eps = tomllib.load(fh)["project"].get("entry-points", {})
    return frozenset(eps)


@cache
def written_names() -> frozenset[str]:
    """File names the code writes (string literals such as ``"report.md"``): outputs."""
    return frozenset(n for m in modules().values() for n in m.strings)


def _exists(dotted: str) -> bool:
    """``dotted`` is a repository module or a name defined in one."""
    if dotted in modules():
        return True
    mod, _, name = dotted.rpartition(".")
    return mod in modules() and name in modules()[mod].names


def find_broken() -> list[str]:
    """Every unresolved reference, as ``where: reference: why``."""
    broken = []
    for t in texts():
        for m in _PATH.finditer(t.text):
            why = _check_file(m.group(1), m.group(2), t.base)
            if why:
                broken.append(f"{t.where}: {m.group(0)}: {why}")
        for m in _SECTION.finditer(t.text):
            why = _check_section(m.group(1), [m.group(2), m.group(3)], m.group(4))
            if why:
                broken.append(f"{t.where}: {m.group(0)}: {why}")
        for m in _DIR.finditer(t.text):
            first = m.group(1).split("/")[0]
            mapped = _mapped_dir(m.group(1).strip("/").replace("/", "."))
            folder = mapped if mapped is not None else ROOT / m.group(1)
            if first in TOP and not folder.is_dir():
                broken.append(f"{t.where}: {m.group(1)}: no such folder")
        if t.module is None:
            for m in _LINK.finditer(t.text):
                rel = m.group(1)
                if "://" in rel or rel.startswith("mailto:"):
                    continue
                if not (t.base / rel).exists():
                    broken.append(f"{t.where}: link {rel}: no such file")
        for m in _BARE_MD.finditer(t.text):
            name = m.group(1)
            beside = any((d / name).exists() for d in (t.base, ROOT))
            if not beside and name not in written_names():
                broken.append(f"{t.where}: {name}: no such file, and no code writes one")
        for m in _TICKED.finditer(t.text):
            ref = re.sub(r"\(.*\)$", "", m.group(1)).rstrip(".,;:")
            if "/" in ref or not _DOTTED.fullmatch(ref) or ref in entry_point_groups():
                continue
            if ref.rpartition(".")[2] in FILE_EXTENSIONS:
                continue
            why = _check_dotted(ref, t)
            if why:
                broken.append(f"{t.where}: ``{ref}``: {why}")
    return sorted(set(broken))


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------
def test_every_reference_in_docs_docstrings_and_comments_resolves():
    broken = find_broken()
    assert not broken, "unresolved references:\n" + "\n".join(broken)


@pytest.mark.parametrize(
    ("text", "module", "bad"),
    [
        ("see ``engine.run_bundled``", "mtgym.sim.state", True),  # sibling module, no such function
        ("see ``engine.run``", "mtgym.sim.state", False),
        ("see ``mtgym.sim.engine.nothing_here``", None, True),
        ("see ``mtgym.env.wrappers.TimeDiscount``", None, False),
        ("see ``mtgym.sim.state.ClusterState.finish_time``", None, False),  # a field
        ("see ``mtgym.sim.state.ClusterState.no_field``", None, True),
        ("see `policy.play` and `core.rng.stream`", None, False),  # under mtgym/
        ("see `policy.nothing`", None, True),
        ("see `sim/state.py` and `mtgym/env/step.py:Step`", None, False),
        ("see `sim/nothing.py`", None, True),
        ("see `agents/pretrained/` and `runs/default/tb/`", None, False),
        ("see `agents/nothing/`", None, True),
        ("see `mtgym/env/step.py:NoSuchThing`", None, True),
        ("see `mtgym/env/step.py:999999`", None, True),
        ("``np.zeros``, ``info.all_done``, ``trial.t_fwd_s``", "mtgym.sim.dynamics", False),
        ("``blox/blox_manager.py`` and `runs/x/report.md`", None, False),  # not ours
        ("[model](model.md) and [none](nothing.md)", None, True),
        ("as papers.md §1.3 says", "mtgym.sim.state", True),  # not in the repository
        ("as docs/papers.md §1.3 says; writes report.md", "mtgym.sim.state", False),
        ("docs/papers.md §1.2-1.5 and docs/papers.md, addendum 2", None, False),
        ("docs/papers.md §9.9", None, True),
        ("docs/papers.md §1.2-1.9", None, True),
        ("docs/papers.md, addendum 7", None, True),
    ],
)
def test_checker_flags_broken_references_and_only_those(text, module, bad, monkeypatch):
    base = ROOT / "mtgym" / "sim" if module else ROOT / "docs"
    t = Text("case", text, module, base)
    monkeypatch.setattr(f"{__name__}.texts", lambda: (t,))
    assert bool(find_broken()) is bad, find_broken()
