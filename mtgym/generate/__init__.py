"""Generators: seeded callables that build an immutable ``Instance``."""
