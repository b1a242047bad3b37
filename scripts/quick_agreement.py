"""Measure how the quick benchmark run ranks policies against the full run.

    python scripts/quick_agreement.py --quick runs/bq/results.json --full runs/bf/results.json
    python scripts/quick_agreement.py --full runs/bf/results.json --seed-prefix 1 2 3

The first form compares two runs (``mtgym benchmark --quick`` and the same command without
it, over every fast baseline: ``mtgym.benchmark.splits.FAST_BASELINES``). The second measures
quick designs that play the full run's first k seeds whole, from its per-seed figures.
Prints the markdown of ``mtgym.benchmark.agreement``; exit 1 when the targets are missed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mtgym.benchmark.agreement import agreement, markdown, seed_prefix


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--full", type=Path, required=True, help="the full run's results.json")
    ap.add_argument("--quick", type=Path, default=None, help="the quick run's results.json")
    ap.add_argument("--seed-prefix", type=int, nargs="*", default=[], metavar="K")
    args = ap.parse_args(argv)
    full = json.loads(args.full.read_text())
    ok = True
    if args.quick is not None:
        quick = json.loads(args.quick.read_text())
        a = agreement(quick, full)
        print(f"## {args.quick} against {args.full}\n\n{markdown(a, quick, full)}")
        ok &= a.met
    for k in args.seed_prefix:
        quick = seed_prefix(full, k)
        a = agreement(quick, full)
        print(f"## first {k} seeds, whole\n\n{markdown(a, quick, full)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
