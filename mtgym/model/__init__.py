"""The physics: topology, per-device speed variability, and job throughput (pure, vectorised)."""
