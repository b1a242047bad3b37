"""The core types every layer shares: the immutable ``Instance``, enums, errors, rng, I/O."""
