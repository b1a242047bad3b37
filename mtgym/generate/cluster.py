"""Build a ``Cluster``: node types, per-device variability and topology."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Cluster, frozen
from mtgym.core.topology import Topology
from mtgym.core.types import AppClass
from mtgym.model.variability import VariabilitySpec, node_factors, sample_empirical


def build_cluster(
    rng: np.random.Generator,
    *,
    gpus_per_node: int,
    gpu_type_names: Sequence[str],
    gpu_type: Sequence[int] | np.ndarray,
    topology: Topology,
    variability: VariabilitySpec | Mapping[AppClass, np.ndarray] | None = None,
    profile_noise: float = 0.01,
    node_names: Sequence[str] | None = None,
) -> Cluster:
    """Draw per-device slowdowns and assemble the cluster.

    Args:
        rng: the "variability" stream.
        gpus_per_node: devices per node.
        gpu_type_names: names of the GPU types, e.g. ("A100", "V100").
        gpu_type: (N,) type index of each node.
        topology: the node grouping and link costs.
        variability: a parametric spec (default Longhorn-like), measured per-GPU samples
            per class (resampled), or None for identical devices.
        profile_noise: relative sd of the per-node factors a profile reports (PAL measures
            them; 0 = exact).
        node_names: optional host names, one per node.

    Returns:
        The validated cluster: per-device factors (N, gpus_per_node, 4), per-node true
        factors (the slowest device's) and the profiled factors (the true ones times
        ``exp(profile_noise x standard normal)``), all read-only.

    Raises:
        ConfigError: ``gpus_per_node`` < 1, a topology of another node count, or
            ``profile_noise`` outside [0, 0.5).
    """
    gtype = np.asarray(gpu_type, dtype=np.int16)
    n = gtype.shape[0]
    if gpus_per_node < 1:
        raise ConfigError("gpus_per_node", gpus_per_node, ">= 1")
    if topology.num_nodes != n:
        raise ConfigError("topology", topology.num_nodes, f"{n} nodes as in gpu_type")
    if not (0 <= profile_noise < 0.5):
        raise ConfigError("profile_noise", profile_noise, "0 <= profile_noise < 0.5")
    devices = n * gpus_per_node
    if variability is None:
        sf = np.ones((devices, len(AppClass)))
    elif isinstance(variability, VariabilitySpec):
        sf = variability.sample(rng, devices)
    else:
        sf = sample_empirical(rng, devices, variability)
    device_sf = sf.reshape(n, gpus_per_node, len(AppClass))
    node_sf = node_factors(device_sf)
    noise = np.exp(profile_noise * rng.standard_normal(node_sf.shape)) if profile_noise > 0 else 1.0
    cluster = Cluster(
        gpus_per_node=gpus_per_node,
        gpu_type_names=tuple(gpu_type_names),
        gpu_type=frozen(gtype),
        device_slowdown=frozen(device_sf),
        slowdown=frozen(node_sf),
        profiled_slowdown=frozen(node_sf * noise),
        topology=topology,
        node_names=None if node_names is None else tuple(node_names),
    )
    cluster.validate()
    return cluster
