"""Parametric model profiles: per-GPU training rates by GPU type, batch, gradient size.

V100, P100 and K80 rates are Gavel's measured isolated throughputs (steps/s x batch,
``stanford-futuredata/gavel`` ``scheduler/simulation_throughputs.json``, scale factor 1).
A100 and H100 rates are the V100 rate times a speed-up assumed from vendor training
benchmarks (A100/V100 about 1.5-2.0x in FP32/TF32, H100/A100 about 1.6-2.0x); they are
documented assumptions, not measurements. Parameter counts are the models' published sizes;
gradients are all-reduced in FP32 (4 bytes per parameter). Classes follow PAL/blox-pal's
mapping (ResNet-50 -> A, language models -> B, ResNet-18 / VGG -> C, recommendation -> D).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mtgym.core.types import AppClass


@dataclass(frozen=True)
class ModelProfile:
    """What the parametric throughput model needs to know about one DNN.

    Attributes:
        name: the catalog key, e.g. ``"resnet50"``.
        app_class: variability class (PAL's mapping, module docstring).
        rate_per_gpu: GPU type name -> samples/s of one GPU alone at slowdown 1 (no
            communication).
        local_batch: samples per GPU per iteration.
        params_m: millions of parameters (the gradient is 4 bytes each).
        overlap: share of the all-reduce hidden behind backward compute, in [0, 1].
    """

    name: str
    app_class: AppClass
    rate_per_gpu: Mapping[str, float] = field(repr=False)
    local_batch: int = 32
    params_m: float = 25.0
    overlap: float = 0.3

    @property
    def grad_bytes(self) -> float:
        """Bytes all-reduced per iteration."""
        return self.params_m * 1e6 * 4.0

    def rate_on(self, gpu_type: str) -> float:
        """Per-GPU rate on ``gpu_type`` (KeyError naming the known types if missing).

        Args:
            gpu_type: a GPU type name: ``"K80"``, ``"P100"``, ``"V100"``, ``"A100"`` or
                ``"H100"`` for the catalog's profiles.

        Returns:
            Samples/s of one GPU at slowdown 1.
        """
        try:
            return self.rate_per_gpu[gpu_type]
        except KeyError:
            raise KeyError(
                f"model {self.name!r} has no rate for GPU type {gpu_type!r}; "
                f"known: {sorted(self.rate_per_gpu)}"
            ) from None


def _rates(
    v100: float, p100: float, k80: float, a100_x: float, h100_x: float = 1.8
) -> dict[str, float]:
    """Per-GPU rates by type from Gavel's three measurements and two assumed speed-ups.

    Args:
        v100: measured samples/s on a V100.
        p100: measured samples/s on a P100.
        k80: measured samples/s on a K80.
        a100_x: assumed A100 / V100 speed-up.
        h100_x: assumed H100 / A100 speed-up.
    """
    return {
        "K80": k80,
        "P100": p100,
        "V100": v100,
        "A100": v100 * a100_x,
        "H100": v100 * a100_x * h100_x,
    }


CATALOG: dict[str, ModelProfile] = {
    p.name: p
    for p in (
        # ResNet-50 (batch 64): Gavel 4.39 / 2.62 / 0.62 steps/s on V100 / P100 / K80.
        ModelProfile(
            "resnet50", AppClass.A, _rates(4.39 * 64, 2.62 * 64, 0.62 * 64, 2.0), 64, 25.6, 0.4
        ),
        # ResNet-18 on CIFAR-10 (batch 128): 17.99 / 11.68 / 1.81 steps/s.
        ModelProfile(
            "resnet18",
            AppClass.C,
            _rates(17.99 * 128, 11.68 * 128, 1.81 * 128, 1.6),
            128,
            11.7,
            0.3,
        ),
        # Transformer translation (batch 64): 8.62 / 5.09 / 1.75 steps/s; ~65 M parameters.
        ModelProfile(
            "transformer", AppClass.B, _rates(8.62 * 64, 5.09 * 64, 1.75 * 64, 1.9), 64, 65.0, 0.3
        ),
        # LSTM language model (batch 20): 64.74 / 58.17 / 17.14 steps/s; ~30 M parameters.
        ModelProfile(
            "lm", AppClass.B, _rates(64.74 * 20, 58.17 * 20, 17.14 * 20, 1.5), 20, 30.0, 0.2
        ),
        # Recommendation (batch 2048): 7.47 / 16.6 / 10.44 steps/s (memory-bound); dense part ~10 M.
        ModelProfile(
            "recommendation",
            AppClass.D,
            _rates(7.47 * 2048, 16.6 * 2048, 10.44 * 2048, 1.3),
            2048,
            10.0,
            0.1,
        ),
        # CycleGAN (batch 1): 4.43 / 2.40 / 0.50 steps/s; ~28 M parameters.
        ModelProfile("cyclegan", AppClass.B, _rates(4.43, 2.40, 0.50, 1.7), 1, 28.0, 0.2),
    )
}
