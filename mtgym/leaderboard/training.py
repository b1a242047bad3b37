"""How a learned policy of a result file was trained, read from its agent's folder: the
leaderboard's training columns.

A result file names a policy as the command was given it: ``agent`` is the shipped agent
(``agents/pretrained/default`` in the checkout), ``agent:PATH`` and ``rllib-agent:PATH`` a
run folder (or its ``model.zip``), a relative ``PATH`` read from the checkout, else from
the current folder. The folder's ``train.json`` (``mtgym train`` writes it: ``timesteps``,
``wall_s``, ``kept``) gives the steps and wall time, its ``args.json`` the seeds: the run's
own ``seed`` (training episodes draw from the train split, seeds >= 2^30, from it), the
behaviour-cloning episodes' ``bc_seeds`` and DAgger rounds, and the ``eval_seeds`` the kept
weights were selected on.

The folder is read as it is now, not as it was when the result file was written: a
shipped agent replaced since then is described by its successor's files. ``mtgym`` does
not import ``agents`` (house style), so the shipped agent's folder is named here by path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the shipped agent's folder, relative to the checkout (``--policy agent``)
PRETRAINED = Path("agents/pretrained/default")
#: registry names of learned policies that take a run folder as ``NAME:PATH``
LEARNED_PREFIXES = ("agent", "rllib-agent")


@dataclass(frozen=True)
class Training:
    """A learned policy's training, as its folder records it (None: not recorded).

    Attributes:
        folder: the agent's folder, as shown (relative to the checkout when inside it).
        found: whether the folder has a ``train.json``.
        timesteps: env steps of RL (``train.json``).
        wall_s: the run's wall seconds, imitation included.
        kept: which weights were kept (``ppo@650000``, ``imitation``, ...).
        trained_on: the seeds of the run (``seed 0; BC 11-18; 2 DAgger rounds``).
        selected_on: the seeds the kept weights were chosen on (``eval_seeds``).
    """

    folder: str
    found: bool
    timesteps: int | None = None
    wall_s: float | None = None
    kept: str | None = None
    trained_on: str | None = None
    selected_on: str | None = None


def agent_folder(policy: str) -> Path | None:
    """The folder of a learned policy's agent; None for a policy that names none.

    Args:
        policy: the policy's name in the result file (``agent``, ``agent:PATH``, ...).
    """
    from mtgym.core.paths import CHECKOUT

    name, _, arg = policy.partition(":")
    if name not in LEARNED_PREFIXES:
        return None
    if not arg:
        return CHECKOUT / PRETRAINED if name == "agent" else None
    path = Path(arg).expanduser()
    if path.suffix == ".zip":
        path = path.parent
    if path.is_absolute():
        return path
    inside = CHECKOUT / path
    return inside if inside.exists() else Path.cwd() / path


def seed_span(seeds: Sequence[int]) -> str:
    """Seeds as ranges: ``[1, 2, 3, 7]`` -> ``1-3, 7``; ``none`` when empty."""
    runs: list[list[int]] = []
    for s in sorted({int(s) for s in seeds}):
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs) or "none"


def _json(path: Path) -> dict[str, Any]:
    """A JSON object file, or ``{}`` when missing or unreadable (a record is optional)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _trained_on(args: dict[str, Any]) -> str | None:
    """``args.json``'s training seeds as one phrase (None: no ``args.json``)."""
    if not args:
        return None
    parts = [f"seed {args.get('seed', 'n/a')}"]
    if args.get("bc_expert") and args.get("bc_seeds"):
        parts.append(f"BC {seed_span(args['bc_seeds'])}")
        if args.get("dagger_rounds"):
            parts.append(f"{args['dagger_rounds']} DAgger rounds")
    return "; ".join(parts)


def _shown(folder: Path) -> str:
    """``folder`` relative to the checkout when inside it, else as it is."""
    from mtgym.core.paths import CHECKOUT

    try:
        return folder.resolve().relative_to(CHECKOUT).as_posix()
    except ValueError:
        return str(folder)


#: the ``args.json`` keys listing seeds a run trained or selected on
SEED_KEYS = ("eval_seeds", "bc_seeds")


def recorded_seeds(policy: str) -> dict[str, list[int]]:
    """The seed lists of a learned policy's ``args.json`` (``SEED_KEYS``), by key; empty
    for a baseline or a folder without the file.

    Args:
        policy: the policy's name in the result file.
    """
    folder = agent_folder(policy)
    args = _json(folder / "args.json") if folder is not None else {}
    out = {}
    for key in SEED_KEYS:
        seeds = args.get(key)
        if isinstance(seeds, list):
            out[key] = [int(s) for s in seeds if isinstance(s, int | float)]
    return out


def read_training(policy: str) -> Training | None:
    """The training record of a learned policy; None for a baseline (or a learned policy
    named without a folder, as a bare ``rllib-agent``).

    Args:
        policy: the policy's name in the result file.
    """
    folder = agent_folder(policy)
    if folder is None:
        return None
    train, args = _json(folder / "train.json"), _json(folder / "args.json")
    steps, wall = train.get("timesteps"), train.get("wall_s")
    eval_seeds = args.get("eval_seeds")
    return Training(
        folder=_shown(folder),
        found=bool(train),
        timesteps=int(steps) if isinstance(steps, int | float) else None,
        wall_s=float(wall) if isinstance(wall, int | float) else None,
        kept=str(train["kept"]) if train.get("kept") is not None else None,
        trained_on=_trained_on(args),
        selected_on=seed_span(eval_seeds) if isinstance(eval_seeds, list) else None,
    )
