"""PyTorch programs that write their buffers (a running total, a streaming window) keep state between calls:
read as explicit state (tensorbridge/ir/state.py), inputs named after the buffers and `_next` outputs, which
every target carries and verification threads through two calls."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.ir.state import initial_state
from tensorbridge.reference.interpreter import run

torch = pytest.importorskip("torch")


class RunningTotal(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.total.add_(x.sum(0))
        return x * 2 + self.total


class StreamingWindow(torch.nn.Module):
    """A streaming convolution's context: the last frames of the previous call, kept in a buffer."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(2, 4, 3)
        self.register_buffer("context", torch.full((1, 2, 2), 0.5))

    def forward(self, frames):
        x = torch.cat([self.context, frames], dim=2)
        self.context.copy_(x[:, :, -2:])
        return self.conv(x)


def test_written_buffers_read_as_explicit_state():
    graph = tb.load(RunningTotal(), example_inputs=(torch.ones(2, 3),))
    assert [v.name for v in graph.inputs] == ["x", "total"]
    assert graph.outputs[-1].name == "total_next"
    assert np.array_equal(initial_state(graph.metadata)["total"], np.zeros(3, np.float32))
    module = RunningTotal()
    state = initial_state(graph.metadata)["total"]
    for seed in (0, 1):  # two calls: the second starts from what the first left
        x = np.random.default_rng(seed).standard_normal((2, 3)).astype(np.float32)
        out = run(graph, {"x": x, "total": state})
        expected = module(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(out[graph.outputs[0].name], expected, rtol=1e-6)
        state = out["total_next"]


@pytest.mark.parametrize("to,suffix", [("onnx", ".onnx"), ("torch", "_torch")])
def test_a_streaming_model_converts_and_verifies_over_two_calls(to, suffix, tmp_path):
    source = tmp_path / "window.pt2"
    torch.export.save(torch.export.export(StreamingWindow(), (torch.ones(1, 2, 5),)), source)
    report = tb.convert(source, tmp_path / f"window{suffix}", to=to, verify=True)
    assert report.status == "PASS"
    assert any(o.name.endswith("(call 2)") for o in report.outputs)
