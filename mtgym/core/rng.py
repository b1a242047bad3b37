"""Named, independent random streams derived from one seed.

Every random draw in mtgym comes from a stream named after its purpose ("supply",
"arrivals", "variability", ...). Streams are children of one ``SeedSequence`` keyed by a
stable hash of the name, so adding a draw to one stream never shifts another.
"""

from __future__ import annotations

import zlib

import numpy as np


def stream(seed: int | np.random.SeedSequence, name: str) -> np.random.Generator:
    """Return the generator for ``name`` under ``seed`` (same inputs, same draws, always).

    The child's spawn key is the parent's plus the CRC-32 of the UTF-8 name, so the
    stream does not depend on which other streams were drawn from, nor in which order.

    Args:
        seed: A non-negative integer, or a ``SeedSequence`` (its entropy is kept and its
            spawn key extended, so a spawned child's streams differ from its parent's).
        name: The stream's purpose (``"supply"``, ``"arrivals"``, ...).

    Returns:
        A fresh PCG64 generator; two calls with the same inputs give equal generators.

    Raises:
        ValueError: a negative integer seed.
    """
    if isinstance(seed, np.random.SeedSequence):
        entropy, key = seed.entropy, tuple(seed.spawn_key)
    else:
        if int(seed) < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        entropy, key = int(seed), ()
    child = np.random.SeedSequence(entropy, spawn_key=(*key, zlib.crc32(name.encode("utf-8"))))
    return np.random.Generator(np.random.PCG64(child))
