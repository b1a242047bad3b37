"""Per-device, per-application-class slowdown factors (PAL's variability model).

``sf[g, c]`` is device g's iteration time for class c divided by the median device's
(1.0 = median, > 1 = slower). Synchronous data parallelism runs at the pace of the slowest
device, so a node's factor is the maximum over its GPUs.

Two sources:

- ``VariabilitySpec``: a parametric mixture (lognormal body + rare outliers), with defaults
  calibrated to the per-GPU Longhorn V100 measurements PAL ships (ResNet-50 = class A: 6.5 % of
  GPUs above 1.05, 1.8 % above 1.10, worst run 3.57x; BERT = classes B/C: within about 1.3x;
  PageRank = class D: within 0.5 %). Classes are linked by a Gaussian copula (``correlation``):
  a slow chip tends to be slow for every compute-heavy class. PAL's own simulator draws classes
  independently (``correlation=0``).
- ``sample_empirical``: resample measured per-GPU factors (e.g. from
  ``mtgym.readers.read_variability``), one array per class.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from mtgym.core.errors import ConfigError
from mtgym.core.types import NUM_CLASSES, AppClass


@dataclass(frozen=True)
class ClassVariability:
    """Mixture for one class: ``exp(sigma * z)`` for most devices, outliers otherwise.

    Attributes:
        sigma: lognormal spread of the body (0 = identical devices).
        outlier_prob: probability that a device is an outlier.
        outlier_min: outliers' factor is uniform on [outlier_min, outlier_max].
        outlier_max: the worst device's factor.
        floor: no device is faster than this (measured minimum about 0.91-0.97).
    """

    sigma: float = 0.02
    outlier_prob: float = 0.0
    outlier_min: float = 1.1
    outlier_max: float = 1.1
    floor: float = 0.9

    def __post_init__(self) -> None:
        if not (0 <= self.sigma < 1):
            raise ConfigError("sigma", self.sigma, "0 <= sigma < 1")
        if not (0 <= self.outlier_prob <= 1):
            raise ConfigError("outlier_prob", self.outlier_prob, "a probability in [0, 1]")
        if not (1.0 <= self.outlier_min <= self.outlier_max):
            raise ConfigError(
                "outlier_min/outlier_max", (self.outlier_min, self.outlier_max), "1 <= min <= max"
            )
        if not (0 < self.floor <= 1):
            raise ConfigError("floor", self.floor, "0 < floor <= 1")


def _longhorn_like() -> dict[AppClass, ClassVariability]:
    """The default per-class mixtures, fitted to PAL's Longhorn V100 files (module doc).

    A (ResNet-50): 1.7 % outliers up to 2.6x; B and C (BERT): 0.5 % up to 1.3x; D
    (PageRank): a body only, nothing faster than 0.97.
    """
    return {
        AppClass.A: ClassVariability(
            sigma=0.029, outlier_prob=0.017, outlier_min=1.1, outlier_max=2.6
        ),
        AppClass.B: ClassVariability(
            sigma=0.012, outlier_prob=0.005, outlier_min=1.05, outlier_max=1.3
        ),
        AppClass.C: ClassVariability(
            sigma=0.012, outlier_prob=0.005, outlier_min=1.05, outlier_max=1.3
        ),
        AppClass.D: ClassVariability(sigma=0.002, outlier_prob=0.0, floor=0.97),
    }


@dataclass(frozen=True)
class VariabilitySpec:
    """Parametric variability for all classes (defaults: Longhorn-like, see module doc).

    Attributes:
        classes: the mixture of each class; all four classes A-D are required.
        correlation: Gaussian-copula correlation between the classes of one device, in
            [0, 1] (0 = independent, as PAL's simulator draws them).

    Raises:
        ConfigError: a correlation outside [0, 1] or a class missing.
    """

    classes: Mapping[AppClass, ClassVariability] = field(default_factory=_longhorn_like)
    correlation: float = 0.7

    def __post_init__(self) -> None:
        if not (0 <= self.correlation <= 1):
            raise ConfigError("correlation", self.correlation, "0 <= correlation <= 1")
        missing = [c.name for c in AppClass if c not in self.classes]
        if missing:
            raise ConfigError("classes", missing, "one ClassVariability per class A, B, C, D")

    @classmethod
    def none(cls) -> VariabilitySpec:
        """Identical devices: every factor is 1."""
        flat = ClassVariability(sigma=0.0, outlier_prob=0.0, floor=1.0)
        return cls({c: flat for c in AppClass}, correlation=0.0)

    def sample(self, rng: np.random.Generator, num_devices: int) -> np.ndarray:
        """Draw (num_devices, 4) factors.

        One standard normal ``z`` per (device, class), correlated across classes; the body
        is ``exp(sigma z)``. The outliers of a class are the devices whose ``z`` lies in its
        top ``outlier_prob`` quantile (already the slowest of the body), whose factor becomes
        the larger of the body and a uniform draw on [outlier_min, outlier_max]; then the
        floor applies.

        Args:
            rng: the "variability" stream.
            num_devices: devices (GPUs, not nodes) to draw.

        Returns:
            (num_devices, 4) float64 factors, column = ``AppClass``.
        """
        # Correlated standard normals: z_c = sqrt(rho) * common + sqrt(1 - rho) * own_c.
        common = rng.standard_normal(num_devices)
        own = rng.standard_normal((num_devices, NUM_CLASSES))
        rho = self.correlation
        z = np.sqrt(rho) * common[:, None] + np.sqrt(1.0 - rho) * own
        u = _norm_cdf(z)  # the same quantile drives the outlier draw
        tail_u = rng.random((num_devices, NUM_CLASSES))
        out = np.empty((num_devices, NUM_CLASSES))
        for c in AppClass:
            spec = self.classes[c]
            body = np.exp(spec.sigma * z[:, c])
            is_out = u[:, c] > 1.0 - spec.outlier_prob
            tail = spec.outlier_min + (spec.outlier_max - spec.outlier_min) * tail_u[:, c]
            out[:, c] = np.maximum(np.where(is_out, np.maximum(body, tail), body), spec.floor)
        return out


def _norm_cdf(z: np.ndarray) -> np.ndarray:
    """The standard normal CDF element-wise, through ``math.erf``."""
    from math import erf, sqrt

    x = np.asarray(z / sqrt(2.0), dtype=np.float64)  # (math.erf per value; no numpy erf)
    return 0.5 * (1.0 + np.array([erf(v) for v in x.ravel().tolist()]).reshape(x.shape))


def sample_empirical(
    rng: np.random.Generator, num_devices: int, samples: Mapping[AppClass, np.ndarray]
) -> np.ndarray:
    """Draw each device's factor per class from measured per-GPU factors (with replacement).

    Classes missing from ``samples`` get 1.0. Like PAL's simulator, classes are drawn
    independently.

    Args:
        rng: the "variability" stream.
        num_devices: devices (GPUs) to draw.
        samples: class -> 1-D measured factors (``mtgym.readers.slowdown_samples``).

    Returns:
        (num_devices, 4) float64 factors.

    Raises:
        ConfigError: a class's samples are empty, not finite or not positive.
    """
    out = np.ones((num_devices, NUM_CLASSES))
    for c in AppClass:
        vals = samples.get(c)
        if vals is None:
            continue
        vals = np.asarray(vals, dtype=np.float64)
        if vals.size == 0 or not np.all(np.isfinite(vals)) or np.any(vals <= 0):
            raise ConfigError(
                f"samples[{c.name}]", vals[:5], "a non-empty array of positive factors"
            )
        out[:, c] = vals[rng.integers(0, vals.size, size=num_devices)]
    return out


def node_factors(device_sf: np.ndarray) -> np.ndarray:
    """(nodes, gpus_per_node, classes) -> (nodes, classes): the slowest device gates a node.

    Args:
        device_sf: (nodes, gpus_per_node, classes) per-device factors.
    """
    return device_sf.max(axis=1)
