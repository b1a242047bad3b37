"""Baselines tuned per scenario: the sweep (``sweep``), its record (``record``), ``mtgym tune``."""
