"""Print what an action mode can express: each baseline's normalised throughput played as
is and through the mode (``mtgym.policy.mapped.ModeMapped``), per preset, whole episodes.

    python scripts/mode_resolution.py [--mode shares] [--policies packed freetrain]
        [--scenarios default ...] [--seeds 9000 9001]
"""

from __future__ import annotations

import argparse
import time

from mtgym.evaluate import configure_policy, scenario_defaults
from mtgym.policy.mapped import ModeMapped
from mtgym.policy.play import play
from mtgym.policy.registry import make_policy
from mtgym.scenario.registry import get_generator, preset_names


def main() -> None:
    """Parse the arguments, play each (scenario, policy, seed) both ways, print ratios."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="shares")
    ap.add_argument("--policies", nargs="+", default=["packed", "freetrain"])
    ap.add_argument("--scenarios", nargs="+", default=None)
    ap.add_argument("--seeds", nargs="+", type=int, default=[9000])
    ap.add_argument("--horizon-h", type=float, default=None, help="cut episodes (hours)")
    args = ap.parse_args()
    print(
        f"{'scenario':18s} {'policy':10s} {'seed':>5s} {'base':>9s} {'mapped':>9s} "
        f"{'ratio':>6s} {'unexpr.':>8s} {'s':>6s}"
    )
    for name in args.scenarios or preset_names():
        gen = get_generator(name)
        defaults = scenario_defaults(gen)
        for pol in args.policies:
            for seed in args.seeds:
                inst = gen(seed)
                if args.horizon_h is not None:
                    from dataclasses import replace

                    inst = replace(
                        inst, t_end=min(inst.t_end, inst.t_start + 3600 * args.horizon_h)
                    )
                t0 = time.perf_counter()
                a = play(inst, configure_policy(make_policy(pol), defaults)).metrics
                mapped = ModeMapped(configure_policy(make_policy(pol), defaults), args.mode)
                b = play(inst, mapped).metrics
                x, y = a.normalized_throughput, b.normalized_throughput
                print(
                    f"{name:18s} {pol:10s} {seed:5d} {x:9.3f} {y:9.3f} {y / x:6.3f} "
                    f"{mapped.unexpressed:8d} {time.perf_counter() - t0:6.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
