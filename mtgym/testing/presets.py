"""The shipped presets by what testing them costs, named once for every per-preset sweep."""

from __future__ import annotations

#: presets that read the real data sets (skipped without them)
REAL_DATA = frozenset(
    {
        "summit-replay",
        "summit-replay-2d",
        "summit-hps",
        "summit-manyjobs",
        "summit-manyjobs-train",
        "pal-philly-64gpu",
        "swf-lublin",
    }
)
#: presets of 4,734 nodes (seconds to build: they read the Summit trace)
BIG = frozenset(
    {"summit-replay", "summit-replay-2d", "summit-hps", "summit-manyjobs", "summit-manyjobs-train"}
)
#: train-split twins of a test preset that differ from it only in their trace window (the
#: same code runs on their twin)
TWINS = frozenset({"summit-manyjobs-train"})
