"""What a PyTorch program computes from literals and buffers is computed by PyTorch when it is read: a diffusion
model's timestep embedding (exp of a range, scaled by the timestep and by 1000 before a sine) amplifies one ulp
of a frequency to 1e-2 in the sine, so NumPy's float32 exp (one ulp from PyTorch's on some elements) made
AuraFlow's IR compute something else (4e-4 on the output)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.reference.interpreter import run

torch = pytest.importorskip("torch")


class TimestepEmbedding(torch.nn.Module):
    def __init__(self, channels: int = 256):
        super().__init__()
        self.half = channels // 2
        self.proj = torch.nn.Linear(channels, 8)
        self.scale = torch.nn.Parameter(torch.full((8,), 0.5))

    def forward(self, t):
        exponent = -math.log(10000) * torch.arange(self.half, dtype=torch.float32) / self.half
        angles = 1000 * (t[:, None] * torch.exp(exponent)[None])
        return self.proj(torch.cat([torch.sin(angles), torch.cos(angles)], -1)) * (self.scale * 2)


def test_constants_are_pytorchs_own():
    module = TimestepEmbedding().eval()
    t = np.array([500.0, 731.0], np.float32)
    graph = tb.load(module, example_inputs=(torch.from_numpy(t),))
    frequencies = torch.exp(-math.log(10000) * torch.arange(128, dtype=torch.float32) / 128).numpy()
    assert not np.array_equal(frequencies, np.exp(-math.log(10000) * np.arange(128, dtype=np.float32) / 128)), \
        "NumPy's exp rounds as PyTorch's does here: this test would prove nothing"
    assert any(np.array_equal(v.const.ravel(), frequencies) for v in graph.constants.values())
    expected = module(torch.from_numpy(t)).detach().numpy()
    got = run(graph, {graph.inputs[0].name: t})[graph.outputs[0].name]
    assert np.abs(got - expected).max() <= 1e-6 * np.abs(expected).max()


def test_parameters_stay_weights():
    """What the program computes from a parameter stays ops (a generated module trains the parameter)."""
    graph = tb.load(TimestepEmbedding().eval(), example_inputs=(torch.tensor([1.0]),))
    learned = [v for v in graph.constants.values() if v.learned and v.const.shape == (8,)]
    assert learned and learned[0].uses(), "the scale parameter was folded into a constant"
