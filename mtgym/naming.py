"""Names of policies in results and of the folders written for them.

**Labels** (``policy_labels``): a policy's results, tables and TensorBoard runs go under a
label. For a registered name (``freetrain``) the label is that name, which is also the
policy's ``name``. For a policy imported as ``module:factory`` (``--policy
examples.min_then_grow:factory``, ``mtgym.policy.registry.make_policy``) it is the policy's
own ``name`` (``min-then-grow``), unless that would be ambiguous: the name is registered
(a ``freetrain`` of one's own must not pass for the reference), another policy of the run
has it, or it is another policy's ``--policy`` string; the ``--policy`` string is kept
then. A registered name with an argument (``agent:PATH``) keeps its string: the argument
says which model it is (the leaderboard reads the run's training from that path), and
``agent`` alone would collide with the shipped agent.

**Folders** (``safe_name``, ``safe_names``): a label becomes a folder name (``tb/<name>/``)
that every file system takes: no ``:``, no ``/``, no nested folders
(``agent:/abs/runs/a/model.zip`` -> ``agent_abs_runs_a_model.zip``); names that would
collide get ``-2``, ``-3``, ... in the order given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

#: characters kept in a folder name (everything else becomes ``_``)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str) -> str:
    """A folder name for ``text``, safe on every file system.

    Each run of characters other than ASCII letters, digits, ``_``, ``.`` and ``-`` becomes
    one ``_``; leading and trailing ``_`` and ``.`` are dropped (no hidden folder, no
    ``..``); an empty result is ``policy``.

    Args:
        text: a policy's label (``agent:/a/b/model.zip`` -> ``agent_a_b_model.zip``).
    """
    return _UNSAFE.sub("_", text).strip("_.") or "policy"


def safe_names(names: Sequence[str]) -> dict[str, str]:
    """Each name's ``safe_name``, made unique: a folder name already given gets ``-2``,
    ``-3``, ... (first come first served, case-insensitively: macOS and Windows fold case).

    Args:
        names: distinct labels, in the order their folders are written.

    Returns:
        name -> its folder name, in the order given.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = safe_name(name)
        folder, k = base, 1
        while folder.lower() in taken:
            k += 1
            folder = f"{base}-{k}"
        taken.add(folder.lower())
        out[name] = folder
    return out


def is_import_path(spec: str, registered: set[str] | frozenset[str]) -> bool:
    """Whether ``make_policy`` imports ``spec`` as ``module:factory`` (it has a ``:``, and
    neither it nor its part before the ``:`` is a registered name).

    Args:
        spec: a ``--policy`` string.
        registered: the registered policy names.
    """
    return ":" in spec and spec not in registered and spec.split(":", 1)[0] not in registered


def policy_labels(
    specs: Sequence[str],
    names: Mapping[str, str],
    registered: set[str] | frozenset[str] | None = None,
) -> dict[str, str]:
    """The label of each ``--policy`` string (module docstring).

    Args:
        specs: the ``--policy`` strings of one run, distinct.
        names: spec -> the ``name`` of the policy it builds (a spec left out keeps its
            string).
        registered: the registered policy names; None: ``available_policies()``.

    Returns:
        spec -> label, in the order of ``specs``; the labels are distinct.
    """
    if registered is None:
        from mtgym.policy.registry import available_policies

        registered = frozenset(available_policies())
    wanted = {
        s: names[s]
        if is_import_path(s, registered) and isinstance(names.get(s), str) and names[s]
        else s
        for s in specs
    }
    count = Counter(wanted.values())
    return {
        s: lab
        if lab == s or (count[lab] == 1 and lab not in registered and lab not in wanted)
        else s
        for s, lab in wanted.items()
    }
