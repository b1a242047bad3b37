"""What a cold kernel cache costs: the first env step of each action mode and a first
baseline episode, timed in one fresh process against an empty numba cache folder.

    .venv/bin/python scripts/bench_cold_start.py

Prints one line of wall seconds (``docs/performance.md``, "Compilation"). The cache
folder is a new temporary one (``$NUMBA_CACHE_DIR``, removed afterwards), so the figures
do not depend on what this machine compiled before; run it with nothing else running.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time


def main() -> None:
    folder = tempfile.mkdtemp(prefix="mtgym-cold-")
    os.environ["NUMBA_CACHE_DIR"] = folder  # (before mtgym is imported: it reads it then)
    try:
        t0 = time.perf_counter()
        from dataclasses import replace

        from mtgym.env.env import ScavengeEnv
        from mtgym.policy.play import play
        from mtgym.policy.registry import make_policy
        from mtgym.scenario.registry import get_generator

        parts = [("import", time.perf_counter() - t0)]
        for k, mode in enumerate(("shares", "counts", "delta", "assign")):
            t = time.perf_counter()
            env = ScavengeEnv("default", action_mode=mode)
            env.reset(seed=0)
            env.step(env.noop())
            label = f"first reset + step ({mode})" if k == 0 else f"then {mode}"
            parts.append((label, time.perf_counter() - t))
        inst = get_generator("default")(0)
        t = time.perf_counter()
        play(replace(inst, t_end=inst.t_start + 1800.0), make_policy("freetrain"))
        parts.append(("then a freetrain episode (30 min of default)", time.perf_counter() - t))
        total = time.perf_counter() - t0
        print("; ".join(f"{k} {v:.1f} s" for k, v in parts) + f"; in all {total:.1f} s")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
