"""The LLM recoveries (RMSNorm, rotary embedding, grouped-query heads, causal masks) rebuild the op only where
the plain ops compute exactly it, and the ops' decompositions compute what the ops do."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.reference.interpreter import run

torch = pytest.importorskip("torch")


def ops(graph) -> set[str]:
    return {n.op for n in graph.nodes}


class RMSNorm(torch.nn.Module):
    """transformers' LlamaRMSNorm, with the mean over `dim`."""

    def __init__(self, dim=-1):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(8) + 0.5)
        self.dim = dim

    def forward(self, x):
        x32 = x.to(torch.float32)
        normed = x32 * torch.rsqrt(x32.pow(2).mean(self.dim, keepdim=True) + 1e-6)
        return self.weight * normed.to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_recovered_with_its_casts(dtype):
    module = RMSNorm().to(dtype)
    x = torch.randn(2, 3, 8, dtype=dtype)
    graph = tb.load(module, example_inputs=(x,))
    assert ops(graph) == {"RMSNormalization"}, ops(graph)
    norm = graph.nodes[0]
    assert norm.attrs["epsilon"] == 1e-6 and norm.outputs[0].dtype == graph.inputs[0].dtype
    got = tb.run(graph, {graph.inputs[0].name: x.float().numpy().astype(graph.inputs[0].dtype)})
    with torch.no_grad():
        want = module(x).float().numpy()
    np.testing.assert_allclose(np.asarray(got[graph.outputs[0].name], np.float32), want,
                               rtol=1e-5 if dtype == torch.float32 else 2e-2, atol=1e-6)


def test_rms_norm_over_another_axis_is_not_recovered():
    module = RMSNorm(dim=1)
    graph = tb.load(module, example_inputs=(torch.randn(2, 8, 8),))
    assert "RMSNormalization" not in ops(graph)


def test_rms_norm_decomposition_computes_the_op():
    g = Graph()
    x = g.add_input("x", np.float32, (2, 5, 8))
    g.outputs = [g.op("RMSNormalization", x, g.add_constant("w", np.linspace(0.5, 2, 8, dtype=np.float32)),
                      epsilon=1e-5)]
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)}
    before = run(g, feeds)[g.outputs[0].name]
    legalize(g, lambda n: "no" if n.op == "RMSNormalization" else None, "test")
    assert "RMSNormalization" not in ops(g)
    np.testing.assert_allclose(run(g, feeds)[g.outputs[0].name], before, rtol=1e-6, atol=1e-6)


class Rotary(torch.nn.Module):
    """transformers' apply_rotary_pos_emb on q [B, H, S, D] with fixed cos/sin tables."""

    def __init__(self, cos, sin):
        super().__init__()
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, q):
        half = q.shape[-1] // 2
        rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        return q * self.cos + rotated * self.sin


def _tables(same_halves: bool):
    angles = torch.outer(torch.arange(6.0), 1.0 / 100 ** (torch.arange(4.0) / 4))
    second = angles if same_halves else angles * 1.5
    emb = torch.cat((angles, second), dim=-1)[None, None]
    return emb.cos(), emb.sin()


@pytest.mark.parametrize("same_halves", [True, False])
def test_rotary_recovered_only_from_tables_with_equal_halves(same_halves):
    module = Rotary(*_tables(same_halves))
    q = torch.randn(1, 3, 6, 8)
    graph = tb.load(module, example_inputs=(q,))
    assert ("RotaryEmbedding" in ops(graph)) == same_halves, ops(graph)
    with torch.no_grad():
        want = module(q).numpy()
    got = tb.run(graph, {graph.inputs[0].name: q.numpy()})[graph.outputs[0].name]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    legalize(graph, lambda n: "no" if n.op == "RotaryEmbedding" else None, "test")
    got = tb.run(graph, {graph.inputs[0].name: q.numpy()})[graph.outputs[0].name]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _attention_graph(mask=None, kv_heads=2):
    g = Graph()
    q = g.add_input("q", np.float32, (1, 4, 5, 8))
    k = g.add_input("k", np.float32, (1, kv_heads, 5, 8))
    v = g.add_input("v", np.float32, (1, kv_heads, 5, 8))
    extra = [g.add_constant("mask", mask)] if mask is not None else []
    g.outputs = [g.op("Attention", q, k, v, *extra)]
    rng = np.random.default_rng(1)
    feeds = {x.name: rng.standard_normal(x.shape).astype(np.float32) for x in g.inputs}
    return g, feeds


@pytest.mark.parametrize("mask, causal", [
    (np.tril(np.ones((5, 5), bool)), 1),
    (np.where(np.tril(np.ones((1, 1, 5, 5))), 0.0, -np.inf).astype(np.float32), 1),
    (np.ones((1, 1, 5, 5), bool), 0),
    (np.triu(np.ones((5, 5), bool)), None),  # not causal: the mask stays
])
def test_constant_masks_become_is_causal_or_nothing(mask, causal):
    g, feeds = _attention_graph(mask)
    before = run(g, feeds)[g.outputs[0].name]
    recover_patterns(g)
    (att,) = g.nodes
    if causal is None:
        assert att.input(3) is not None and not att.attrs.get("is_causal")
    else:
        assert len(att.inputs) == 3 and int(att.attrs.get("is_causal", 0)) == causal
    np.testing.assert_allclose(run(g, feeds)[g.outputs[0].name], before, rtol=1e-6, atol=1e-6)


def test_grouped_query_attention_decomposes_with_repeated_heads():
    g, feeds = _attention_graph(np.tril(np.ones((5, 5), bool)))
    before = run(g, feeds)[g.outputs[0].name]
    legalize(g, lambda n: "no" if n.op == "Attention" else None, "test")
    assert "Attention" not in ops(g)
    np.testing.assert_allclose(run(g, feeds)[g.outputs[0].name], before, rtol=1e-5, atol=1e-6)
