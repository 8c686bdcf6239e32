"""timm architectures with seeded random weights: timm installs without torchvision (no CPU wheel here), and
tests/shims/torchvision stands in for the names it imports, visible only while timm imports (transformers
would take it for the real package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

SHIMS = str(Path(__file__).resolve().parents[1] / "shims")


def import_timm():
    if importlib.util.find_spec("torchvision") is not None or "timm" in sys.modules:
        import timm

        return timm
    sys.path.insert(0, SHIMS)
    try:
        import timm
    finally:
        sys.path.remove(SHIMS)
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
    return timm


def input_shape(model) -> tuple[int, ...]:
    cfg = getattr(model, "pretrained_cfg", None) or {}
    return tuple(cfg.get("input_size", (3, 224, 224)))


def create(name: str):
    """(model, input) for a timm architecture: seeded weights, BatchNorm statistics calibrated on data."""
    import torch

    torch.manual_seed(0)
    model = import_timm().create_model(name, pretrained=False)
    with torch.no_grad():  # zero-initialised heads (MLP-Mixer, ResMLP) would make the output a constant
        for p in model.parameters():
            if p.ndim >= 2 and not p.any():
                p.normal_(0.0, 0.02)
    shape = input_shape(model)
    calibrate_batch_norms(model, shape)
    x = np.random.default_rng(6).standard_normal((1, *shape)).astype(np.float32)
    return model.eval(), x


def calibrate_batch_norms(model, shape, batch: int = 4) -> None:
    """BatchNorm shifts drawn in (0.5, 1), as trained nets mostly have them (zero shifts make a deep random net
    amplify float32 rounding), then the running statistics set from seeded data (one training pass with momentum
    1), so the features a comparison sees vary instead of saturating."""
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    shifts = np.random.default_rng(2)
    with torch.no_grad():
        for m in norms:
            if m.bias is not None:
                m.bias.copy_(torch.from_numpy(shifts.uniform(0.5, 1.0, tuple(m.bias.shape)).astype(np.float32)))
    saved = [m.momentum for m in norms]
    for m in norms:
        m.momentum = 1.0
    model.train()
    with torch.no_grad():
        model(torch.from_numpy(np.random.default_rng(7).standard_normal((batch, *shape)).astype(np.float32)))
    for m, momentum in zip(norms, saved):
        m.momentum = momentum
    model.eval()
