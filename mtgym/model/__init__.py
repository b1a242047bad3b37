"""The physics: per-device speed variability, job throughput, node placement (pure, vectorised).

The topology itself is an instance type (``mtgym.core.topology``).
"""
