"""ATen ops the PyTorch frontend reads beyond the per-op corpus: what published models call."""

from __future__ import annotations

import signal

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge import trust
from tensorbridge.verification.harness import runner_for

torch = pytest.importorskip("torch")


def _run_written(graph, dest, feeds, to=None):
    tb.save(graph, dest, to=to)
    with trust.trusting(True):  # a code folder this test wrote
        runner = runner_for(str(dest))
    out = runner.run({name: f for (name, _, _), f in zip(runner.inputs, feeds)})
    return [np.asarray(out[n]) for n in runner.outputs]


def test_attention_over_more_than_four_dims(tmp_path):
    """Twins-style attention on [batch, windows, heads, time, depth]: the windows fold into the batch."""
    class Windows(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    rng = np.random.default_rng(0)
    feeds = [rng.standard_normal((2, 3, 4, 5, 8)).astype(np.float32) for _ in range(3)]
    expected = Windows()(*map(torch.from_numpy, feeds)).numpy()
    graph = tb.load(Windows(), example_inputs=tuple(map(torch.from_numpy, feeds)))
    assert "Attention" in graph.op_histogram()
    (got,) = _run_written(graph, tmp_path / "windows.onnx", feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("descending", [True, False])
def test_sort_and_topk_break_ties_by_index(tmp_path, descending):
    """torch.sort (stable) and topk read as TopK; equal values keep their order in ONNX and in torch code."""
    class Ranks(torch.nn.Module):
        def forward(self, x):
            values, order = torch.sort(x, dim=-1, descending=descending, stable=True)
            best, where = torch.topk(x, 2, dim=-1)
            return values, order, best, where

    x = np.array([[1.0, 3.0, 3.0, 0.5, 3.0], [2.0, 2.0, 1.0, 2.0, 0.0]], np.float32)
    expected = [t.numpy() for t in Ranks()(torch.from_numpy(x))]
    graph = tb.load(Ranks(), example_inputs=(torch.from_numpy(x),))
    assert graph.op_histogram().get("TopK") == 2
    for dest, to in ((tmp_path / "ranks.onnx", None), (tmp_path / "ranks_torch", "torch")):
        got = _run_written(graph, dest, [x], to)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])  # a stable sort: ties in index order
        np.testing.assert_array_equal(got[2], expected[2])
        np.testing.assert_array_equal(got[3], [[1, 2], [0, 1]])  # ONNX's TopK: the lower index among equals


def test_a_layer_named_after_a_module_that_holds_layers(tmp_path):
    """BEiT's attention module runs a Linear of its own (F.linear with its qkv weight and a bias it assembles)
    besides its `proj` child: the code generator once looked forever for a free name under the module's path."""
    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(8, 8, bias=False)
            self.q_bias = torch.nn.Parameter(torch.randn(8))
            self.proj = torch.nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(torch.nn.functional.linear(x, self.qkv.weight, self.q_bias))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention()

        def forward(self, x):
            return self.attn(x)

    torch.manual_seed(0)
    model = Block().eval()
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    graph = tb.load(model, example_inputs=(torch.from_numpy(x),))

    def hung(*_):
        raise TimeoutError("the code generator did not finish")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    try:
        (got,) = _run_written(graph, tmp_path / "block_torch", [x], "torch")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    np.testing.assert_allclose(got, model(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
