"""The models the bridge's workers train, and their synthetic data.

``MODELS`` names each model's kind and sizes (an MLP or a small CNN for CPUs, a ResNet-50 or a
small transformer in bf16 autocast for GPUs); ``MODEL_SETS`` maps PAL's app classes to them
(``model_for_app_class``); ``build_model`` makes the same initial weights on every rank and
in every run; ``SyntheticData`` draws deterministic, learnable batches. Standard library at
import time (torch inside the functions): ``mtgym.bridge.worker`` loads this file by path
when it runs as a script, without importing the ``mtgym`` package.
"""

from __future__ import annotations

from typing import Any

#: Models by name: a kind and its sizes. ``batch`` is the default per-worker batch; ``amp``
#: models run their forward pass in bf16 autocast on CUDA (fp32 on CPU).
MODELS: dict[str, dict[str, Any]] = {
    # 784-512-512-10, 670 k parameters: communication-heavy (large gradients, cheap compute).
    "mlp": {"kind": "mlp", "in": 784, "hidden": (512, 512), "out": 10, "batch": 64},
    # 256-128-10, 34 k parameters: tiny, step time dominated by framework overhead.
    "tiny-mlp": {"kind": "mlp", "in": 256, "hidden": (128,), "out": 10, "batch": 64},
    # 2 conv + 2 fc on 1x28x28, 52 k parameters: compute-heavy, scales with workers.
    "cnn": {
        "kind": "cnn",
        "channels": (8, 16),
        "in": (1, 28, 28),
        "fc": 64,
        "out": 10,
        "batch": 64,
    },
    # ResNet-50 (bottleneck blocks 3-4-6-3, widths 64-512, 23.5 M parameters with a 10-way
    # head) on 3x224x224 at batch 256: enough work to keep one GPU busy (bf16 autocast).
    "resnet50": {
        "kind": "resnet",
        "blocks": (3, 4, 6, 3),
        "width": 64,
        "in": (3, 224, 224),
        "out": 10,
        "batch": 256,
        "amp": True,
    },
    # The same code at toy size (CPU tests and the gpu_check dry run).
    "resnet50-tiny": {
        "kind": "resnet",
        "blocks": (1, 1, 1, 1),
        "width": 8,
        "in": (3, 32, 32),
        "out": 10,
        "batch": 8,
        "amp": True,
    },
    # A small pre-norm transformer encoder (6 layers, d 512, 8 heads, 19 M parameters) on
    # 256 tokens of 128 features, batch 64 (16 k tokens per step per worker), bf16 on CUDA.
    "transformer": {
        "kind": "transformer",
        "in": (256, 128),
        "d_model": 512,
        "heads": 8,
        "layers": 6,
        "ff": 2048,
        "out": 10,
        "batch": 64,
        "amp": True,
    },
    "transformer-tiny": {
        "kind": "transformer",
        "in": (16, 8),
        "d_model": 32,
        "heads": 2,
        "layers": 1,
        "ff": 64,
        "out": 10,
        "batch": 8,
        "amp": True,
    },
}

#: PAL's classes -> model: A (compute-bound, ResNet-like) and D (insensitive, PointNet-like)
#: train the CNN; B and C (BERT-like, VGG-like: large gradients) train the wide MLP.
MODEL_BY_CLASS = {0: "cnn", 1: "mlp", 2: "mlp", 3: "cnn"}

#: ``--model`` may also name a set: a model per app class (A, B, C, D).
MODEL_SETS: dict[str, dict[int, str]] = {
    "small": MODEL_BY_CLASS,  # the default: CPU-sized
    "gpu": {0: "resnet50", 1: "transformer", 2: "transformer", 3: "resnet50"},
    "gpu-tiny": {
        0: "resnet50-tiny",
        1: "transformer-tiny",
        2: "transformer-tiny",
        3: "resnet50-tiny",
    },
}


def model_for_app_class(app_class: int | str, model: str | None = None) -> str:
    """The model the bridge trains for a PAL app class (0..3 or "A".."D").

    Args:
        app_class: the class as an index (A = 0) or a letter, any case.
        model: a ``MODELS`` name (used as is, whatever the class), a ``MODEL_SETS`` name,
            or None (``small``).

    Returns:
        A ``MODELS`` name.

    Raises:
        KeyError: ``model`` names neither a model nor a set.
        ValueError: a letter other than A to D.
    """
    if model is not None and model in MODELS:
        return model
    table = MODEL_SETS[model or "small"]
    if isinstance(app_class, str):
        app_class = "ABCD".index(app_class.strip().upper())
    return table[int(app_class)]


def model_choices() -> list[str]:
    """Every accepted ``--model`` value: model names and set names."""
    return sorted(MODELS) + sorted(MODEL_SETS)


def default_batch(name: str) -> int:
    """The per-worker batch a model trains with unless ``--batch`` says otherwise.

    Args:
        name: a ``MODELS`` name (``KeyError`` otherwise).
    """
    return int(MODELS[name]["batch"])


def build_model(name: str) -> Any:
    """A fresh ``torch.nn.Module`` for a ``MODELS`` name.

    The initial weights are the same on every rank and in every run (torch's global seed is
    set to 1234 first, a side effect on the caller's RNG). The module is on the CPU, in fp32.

    Args:
        name: a ``MODELS`` name.

    Raises:
        ValueError: an unknown name.
    """
    import torch
    from torch import nn

    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}")
    spec = MODELS[name]
    torch.manual_seed(1234)  # the same initial weights on every rank and every run
    if spec["kind"] == "resnet":
        return _resnet(spec)
    if spec["kind"] == "transformer":
        return _transformer(spec)
    if spec["kind"] == "mlp":
        layers: list[nn.Module] = []
        width = spec["in"]
        for h in spec["hidden"]:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, spec["out"]))
        return nn.Sequential(*layers)
    c1, c2 = spec["channels"]
    _, hgt, wid = spec["in"]
    flat = c2 * (hgt // 4) * (wid // 4)
    return nn.Sequential(
        nn.Conv2d(spec["in"][0], c1, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(flat, spec["fc"]),
        nn.ReLU(),
        nn.Linear(spec["fc"], spec["out"]),
    )


def _resnet(spec: dict[str, Any]) -> Any:
    """ResNet with bottleneck blocks (torchvision's ``resnet50`` layout, plain torch.nn).

    A 7x7 stride-2 stem and max pool, then ``len(blocks)`` stages: stage ``i`` has
    ``blocks[i]`` bottlenecks of width ``width * 2**i`` (output 4x that), the first of each
    stage after the first with stride 2; average pool and a linear head of ``out`` classes.

    Args:
        spec: a ``MODELS`` entry of kind ``resnet``.
    """
    from torch import nn

    class Bottleneck(nn.Module):
        """1x1 reduce, 3x3 (with the stride), 1x1 expand to ``4 width``, plus the shortcut
        (a strided 1x1 projection when the shape changes).
        """

        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, cout, 1, bias=False),
                nn.BatchNorm2d(cout),
            )
            self.skip: nn.Module = nn.Identity()
            if stride != 1 or cin != cout:
                self.skip = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
                )
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: Any) -> Any:
            """ReLU of the body plus the shortcut, on (B, C, H, W)."""
            return self.relu(self.body(x) + self.skip(x))

    w = int(spec["width"])
    layers: list[nn.Module] = [
        nn.Conv2d(spec["in"][0], w, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(w),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    cin = w
    for i, n in enumerate(spec["blocks"]):
        width = w * 2**i
        for b in range(n):
            layers.append(Bottleneck(cin, width, 2 if (b == 0 and i > 0) else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, spec["out"])]
    return nn.Sequential(*layers)


def _transformer(spec: dict[str, Any]) -> Any:
    """A pre-norm transformer encoder on a sequence of feature vectors, mean-pooled.

    Input (batch, seq, feat) is projected to ``d_model``, given a learned position
    embedding, run through ``layers`` GELU encoder layers without dropout, layer-normed,
    averaged over the sequence and classified into ``out`` classes.

    Args:
        spec: a ``MODELS`` entry of kind ``transformer``.
    """
    import torch
    from torch import nn

    seq, feat = spec["in"]
    d = int(spec["d_model"])

    class Encoder(nn.Module):
        """The encoder of ``_transformer`` (built from the enclosing ``spec``)."""

        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(feat, d)
            self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
            layer = nn.TransformerEncoderLayer(
                d,
                int(spec["heads"]),
                int(spec["ff"]),
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            self.enc = nn.TransformerEncoder(layer, int(spec["layers"]), enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, int(spec["out"]))

        def forward(self, x: Any) -> Any:
            """(batch, seq, feat) inputs -> (batch, out) logits."""
            h = self.enc(self.proj(x) + self.pos)
            return self.head(self.norm(h).mean(dim=1))

    return Encoder()


def input_shape(name: str) -> tuple[int, ...]:
    """Shape of one input sample of a model.

    Args:
        name: a ``MODELS`` name.

    Returns:
        ``(features,)`` for an MLP, ``(C, H, W)`` for a CNN or ResNet, ``(tokens,
        features)`` for a transformer.
    """
    spec = MODELS[name]
    return (spec["in"],) if spec["kind"] == "mlp" else tuple(spec["in"])


class SyntheticData:
    """Deterministic, learnable synthetic batches: ``x ~ N(0, 1)``, ``y = argmax(x W)``.

    Batch ``(step, rank)`` is the same in every run, so a resumed job sees the same data.
    ``W`` (the "teacher", flattened input x ``out`` classes) is drawn once from ``seed`` on
    the CPU and moved to ``device``. The batches on CUDA differ from those on the CPU (a
    different generator), so a job should not change device between generations.

    Args:
        name: a ``MODELS`` name (input shape and class count).
        batch: samples per batch (per worker).
        seed: the data seed (``--seed``).
        device: where batches are drawn and returned.
    """

    def __init__(self, name: str, batch: int, seed: int, device: Any) -> None:
        import torch

        self.shape = input_shape(name)
        self.batch = batch
        self.seed = seed
        self.device = device
        g = torch.Generator().manual_seed(seed)
        dim = 1
        for s in self.shape:
            dim *= s
        self.teacher = torch.randn(dim, MODELS[name]["out"], generator=g).to(device)

    def get(self, step: int, rank: int) -> tuple[Any, Any]:
        """The batch of ``rank`` at ``step``.

        On CUDA the batch is drawn on the GPU (a generator per device): a ResNet-50 batch
        drawn on the CPU would take longer than the GPU's step.

        Args:
            step: the global step the batch is for (0-based: the step count before it).
            rank: the worker's rank; each rank gets different samples.

        Returns:
            ``(x, y)``: inputs of shape ``(batch, *input_shape)`` and int64 labels of shape
            ``(batch,)``.
        """
        import torch

        g = torch.Generator(device=self.device)
        g.manual_seed((self.seed * 1_000_003 + step) * 4099 + rank)
        x = torch.randn((self.batch, *self.shape), generator=g, device=self.device)
        y = (x.reshape(self.batch, -1) @ self.teacher).argmax(dim=1)
        return x, y
