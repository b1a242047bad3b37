"""Long fuzz run of the env: random action streams over every preset and action mode, with
every invariant checked after each step (``debug=True``); reports steps and breaks.

    PYTHONPATH=. python scripts/fuzz.py --minutes 3
    PYTHONPATH=. python scripts/fuzz.py --steps 1000000     # the issue-17 target

A "break" is an ``InvariantError`` (the state broke the model), an observation outside
``observation_space``, a non-finite reward, ``sample_valid`` needing repair, or any other
exception from an in-space action. Presets whose real data is absent are skipped (named).
Deterministic for a given ``--seed`` (wall-clock limits only decide where it stops).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
import traceback

import numpy as np

from mtgym.core.errors import InvariantError
from mtgym.core.names import ACTION_MODES
from mtgym.env.env import ScavengeEnv
from mtgym.scenario import ScenarioError
from mtgym.scenario.registry import preset_names

MODES = ACTION_MODES
STRATEGIES = ("space", "mask", "valid", "noop", "extreme")


def _action(env: ScavengeEnv, strategy: str, rng: np.random.Generator) -> np.ndarray:
    nvec = env.codec.nvec
    if strategy == "space":
        return rng.integers(0, nvec).astype(np.int64)
    if strategy == "valid":
        return env.sample_valid(rng)
    if strategy == "noop":
        return env.noop()
    if strategy == "extreme":  # all-max or all-min
        return (nvec - 1) if rng.random() < 0.5 else np.zeros_like(nvec)
    m = env.action_masks()
    out = np.empty(nvec.size, dtype=np.int64)
    off = 0
    for i, n in enumerate(nvec):
        legal = np.flatnonzero(m[off : off + n])
        out[i] = rng.choice(legal)
        off += n
    return out


def main() -> int:
    """Run the fuzz loop; print a JSON summary."""
    args = _parse_args()
    rng = np.random.default_rng(args.seed)
    presets = [p for p in preset_names() if not p.startswith("toy")]
    envs, skipped = _make_envs(presets, args.horizon_s)
    # the preset changes fastest, then the mode, then the strategy: a short run covers all
    combos = [
        ((name, mode), s)
        for s in STRATEGIES
        for mode in MODES
        for name in presets
        if (name, mode) in envs
    ]
    steps = episodes = 0
    breaks: list[dict] = []
    per: dict[str, int] = {}
    t0 = time.perf_counter()
    deadline = t0 + 60 * args.minutes
    for i in itertools.count():
        if time.perf_counter() > deadline or (args.steps and steps >= args.steps):
            break
        (name, mode), strategy = combos[i % len(combos)]
        env = envs[name, mode]
        env.reset(seed=int(rng.integers(2**31)))
        episodes += 1
        n = _episode(env, [name, mode, strategy], rng, args.episode_steps, breaks)
        steps += n
        if n:
            per[name] = per.get(name, 0) + n
    wall = time.perf_counter() - t0
    rate = steps / wall if wall > 0 else 0.0
    print(
        json.dumps(
            {
                "steps": steps,
                "episodes": episodes,
                "breaks": len(breaks),
                "first_breaks": breaks[:5],
                "wall_s": round(wall, 1),
                "steps_per_s": round(rate, 1),
                "hours_for_1e6_steps": round(1e6 / rate / 3600, 2) if rate else None,
                "steps_per_preset": per,
                "skipped": skipped,
            },
            indent=2,
        )
    )
    return 1 if breaks else 0


def _parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episode-steps", type=int, default=400, help="steps per episode at most")
    ap.add_argument("--horizon-s", type=float, default=4 * 3600.0)
    return ap.parse_args()


def _make_envs(
    presets: list[str], horizon_s: float
) -> tuple[dict[tuple[str, str], ScavengeEnv], dict[str, str]]:
    """A debug env per (preset, action mode), and the presets skipped (with why)."""
    envs: dict[tuple[str, str], ScavengeEnv] = {}
    skipped: dict[str, str] = {}
    for name, mode in itertools.product(presets, MODES):
        if name in skipped:
            continue
        try:
            envs[name, mode] = ScavengeEnv(name, action_mode=mode, horizon_s=horizon_s, debug=True)
        except (ScenarioError, OSError) as exc:
            skipped[name] = str(exc).splitlines()[0]
    return envs, skipped


def _episode(
    env: ScavengeEnv, where: list[str], rng: np.random.Generator, max_steps: int, breaks: list
) -> int:
    """Step a reset env with ``where``'s strategy until the episode ends, ``max_steps`` or
    a break (appended to ``breaks``); returns the steps taken.
    """
    strategy = where[2]
    steps = 0
    for _ in range(max_steps):
        a = _action(env, strategy, rng)
        try:
            obs, r, term, trunc, info = env.step(a)
        except InvariantError as exc:
            breaks.append({"where": where, "invariant": str(exc)})
            break
        except Exception as exc:  # every other failure is a finding
            breaks.append({"where": where, "error": traceback.format_exception(exc)[-1]})
            break
        steps += 1
        if not env.observation_space.contains(obs):
            breaks.append({"where": where, "obs": "outside the space"})
        if not math.isfinite(r):
            breaks.append({"where": where, "reward": r})
        if strategy == "valid" and info["repaired"]:
            breaks.append({"where": where, "repaired": info["repair"]})
        if term or trunc:
            break
    return steps


if __name__ == "__main__":
    raise SystemExit(main())
