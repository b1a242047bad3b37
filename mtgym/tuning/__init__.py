"""Baselines tuned per scenario: the sweep (``sweep``) and ``mtgym tune`` (``cli``).

The record a sweep writes, and the code that reads it back into ``make_policy`` and into
the benchmark's references, is ``mtgym.scenario.tuning``.
"""
