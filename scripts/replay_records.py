"""Replay the tuning records' chosen points on their first tuning seed and say which still
give the recorded headline bit for bit (else the record is stale: re-tune).

After a change to a baseline's defaults (issue [refs]: the admission cap lost its ceiling
of 128 jobs), a record whose chosen points replay exactly was not moved by the change:
its choice and its reference stand. Prints one line per (scenario, policy).

    .venv/bin/python scripts/replay_records.py [--scenario S ...] [--policy P ...]
"""

from __future__ import annotations

import argparse
import sys

from mtgym.scenario.tuning import load_record, tuning_dir
from mtgym.tuning.sweep import play_point


def main(argv: list[str] | None = None) -> int:
    """Replay and compare; exit 1 if any chosen point differs from its record."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", action="append", default=None, help="default: every record")
    p.add_argument("--policy", action="append", default=None, help="default: every one")
    ns = p.parse_args(argv)
    names = ns.scenario or sorted(f.stem for f in tuning_dir().glob("*.json"))
    stale = 0
    for sc in names:
        rec = load_record(sc)
        if rec is None:
            print(f"{sc}: no record")
            continue
        for name, t in rec.policies.items():
            if ns.policy and name not in ns.policy:
                continue
            pt = next(q for q in t.sweep if q.params == t.chosen)
            got = play_point(sc, name, pt.params, rec.seeds[0], rec.horizon_s)[0]
            same = got == pt.headline[0]
            stale += not same
            verdict = "same" if same else f"DIFFERS: {got!r} now"
            print(f"{sc} {name} {pt.params}: recorded {pt.headline[0]!r}, {verdict}", flush=True)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
