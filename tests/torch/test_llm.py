"""LLaMA-style decoders (transformers, from configs) to every target, with and without the KV cache: outputs
against transformers' own, and the LLM ops kept as ops (RMSNorm, rotary embedding, grouped-query attention)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.verification.harness import runner_for
from tests.models import llm

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

DEST = {"onnx": "model.onnx", "torch": "model_torch", "keras": "model_keras", "tflite": "model.tflite",
        "flax": "model_flax"}
#: what each code target writes for the LLM ops
WRITTEN = {"torch": ("nn.RMSNorm(", "F.scaled_dot_product_attention(", "enable_gqa=True"),
           "keras": ("layers.RMSNormalization(", "ops.dot_product_attention("),
           "flax": ("nnx.RMSNorm(", "jax.nn.dot_product_attention(")}
STEPS = {"prefill": (llm.prefill, llm.prefill_feeds), "decode": (llm.decode, llm.decode_feeds)}


def transformers_outputs(module, feeds):
    with torch.no_grad():
        out = module(*[torch.from_numpy(f) for f in feeds])
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def target_outputs(graph, target, feeds, tmp_path):
    dest = tmp_path / DEST[target]
    tb.save(graph, dest, to=target)
    runner = runner_for(str(dest))
    out = runner.run({name: f for (name, _, _), f in zip(runner.inputs, feeds)})
    return dest, [np.asarray(out[n]) for n in runner.outputs]


def relative(expected, got) -> float:
    return float(np.abs(got.astype(np.float64) - expected).max() / np.abs(expected).max())


@pytest.fixture(scope="module")
def small():
    return llm.llama(llm.SMALL)


@pytest.fixture(scope="module", params=sorted(STEPS))
def step(request, small):
    wrap, feeds_for = STEPS[request.param]
    module, feeds = wrap(small), feeds_for(llm.SMALL)
    graph = tb.load(module, example_inputs=tuple(torch.from_numpy(f) for f in feeds))
    return request.param, module, feeds, graph


def test_llm_ops_are_recovered(step):
    name, _, _, graph = step
    ops = collections.Counter(n.op for n in graph.nodes)
    layers = llm.SMALL["num_hidden_layers"]
    assert ops["RMSNormalization"] == 2 * layers + 1 and ops["RotaryEmbedding"] == 2 * layers, ops
    assert ops["Attention"] == layers and ops["SiLU"] == layers, ops
    assert not {"Pow", "ReduceMean", "Sqrt", "Neg", "Expand", "Unsqueeze"} & set(ops), ops
    for att in (n for n in graph.nodes if n.op == "Attention"):
        q, k = att.inputs[:2]
        assert (q.shape[1], k.shape[1]) == (4, 2), "grouped-query heads kept, not repeated"
        assert len(att.inputs) == 3 and att.attrs["is_causal"] == (name == "prefill")


@pytest.mark.parametrize("target", sorted(DEST))
def test_llm_matches_transformers(step, target, tmp_path):
    name, module, feeds, graph = step
    expected = transformers_outputs(module, feeds)
    other = transformers_outputs(module, [(f + 5) % llm.SMALL["vocab_size"] if f.dtype == np.int64 else -f
                                          for f in feeds])
    assert relative(expected[0], other[0]) > 1e-2, "the logits vary with the input"
    dest, got = target_outputs(graph, target, feeds, tmp_path)
    assert [g.shape for g in got] == [e.shape for e in expected]
    for e, g in zip(expected, got):
        assert relative(e, g) <= 1e-5, f"{target} {name}: {relative(e, g):.2e}"
    if target in WRITTEN:
        code = (dest / "model.py").read_text()
        causal = ("is_causal=True",) if name == "prefill" else ()
        for piece in WRITTEN[target] + causal:
            assert piece in code, f"{piece} not in the {target} code"
    if target == "onnx":
        import onnx

        ops = {n.op_type for n in onnx.load(str(dest), load_external_data=False).graph.node}
        assert {"RMSNormalization", "RotaryEmbedding", "Attention"} <= ops, ops


@pytest.mark.slow
@pytest.mark.parametrize("step_name", sorted(STEPS))
def test_one_billion_parameters(step_name, tmp_path):
    """TinyLlama-1.1B's shape from its config, seeded: ONNX, torch code and Keras code within 1e-5 of
    transformers, with and without the KV cache."""
    wrap, feeds_for = STEPS[step_name]
    model = llm.llama(llm.ONE_B)
    module, feeds = wrap(model), feeds_for(llm.ONE_B, **({"seq": 8} if step_name == "prefill" else {"past": 4}))
    expected = transformers_outputs(module, feeds)
    graph = tb.load(module, example_inputs=tuple(torch.from_numpy(f) for f in feeds))
    del model, module
    for target in ("onnx", "torch", "keras"):
        _, got = target_outputs(graph, target, feeds, tmp_path / target)
        for e, g in zip(expected, got):
            assert relative(e, g) <= 1e-5, f"{target} {step_name}: {relative(e, g):.2e}"
