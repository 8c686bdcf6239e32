"""Decoder steps as ONNX writes them (3-D Attention with a KV cache and its present outputs, a boolean mask,
softcap, or per-batch key lengths; interleaved RotaryEmbedding at position ids) in
targets whose attention functions take none of that: the decompositions written by each, against
onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb

B, S, PAST, HEADS, KV_HEADS, D, MAX_POS = 2, 3, 4, 4, 2, 8, 16


def _decoder_step(tmp_path, cached: bool) -> str:
    """With the cache: past keys and values, a mask and softcap; without: key lengths (onnxruntime takes them
    only without a cache)."""
    rng = np.random.default_rng(0)
    angles = rng.uniform(0, np.pi, (MAX_POS, D // 2)).astype(np.float32)
    nodes = [
        helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "positions"], ["q_turned"], interleaved=1,
                         num_heads=HEADS),
        helper.make_node("RotaryEmbedding", ["k", "cos", "sin", "positions"], ["k_turned"], interleaved=1,
                         num_heads=KV_HEADS),
        helper.make_node("Attention", ["q_turned", "k_turned", "v", "mask", "past_key", "past_value"] if cached
                         else ["q_turned", "k_turned", "v", "", "", "", "kv_lens"],
                         ["y", "present_key", "present_value"] if cached else ["y"], q_num_heads=HEADS,
                         kv_num_heads=KV_HEADS, **({"softcap": 5.0} if cached else {})),
    ]
    f = TensorProto.FLOAT
    kv = PAST + S if cached else S
    state = [("past_key", [B, KV_HEADS, PAST, D]), ("past_value", [B, KV_HEADS, PAST, D])]
    graph = helper.make_graph(
        nodes, "decoder_step",
        [helper.make_tensor_value_info("q", f, [B, S, HEADS * D]),
         helper.make_tensor_value_info("k", f, [B, S, KV_HEADS * D]),
         helper.make_tensor_value_info("v", f, [B, S, KV_HEADS * D]),
         helper.make_tensor_value_info("positions", TensorProto.INT64, [B, S])] +
        ([helper.make_tensor_value_info(n, f, shape) for n, shape in state] if cached else
         [helper.make_tensor_value_info("kv_lens", TensorProto.INT64, [B])]),
        [helper.make_tensor_value_info("y", f, [B, S, HEADS * D])] +
        ([helper.make_tensor_value_info(f"present_{n}", f, [B, KV_HEADS, kv, D]) for n in ("key", "value")]
         if cached else []),
        [numpy_helper.from_array(np.cos(angles), "cos"), numpy_helper.from_array(np.sin(angles), "sin")] +
        ([numpy_helper.from_array(rng.random((S, kv)) < 0.7, "mask")] if cached else []))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    model.ir_version = 10
    path = tmp_path / "step.onnx"
    onnx.save(model, path)
    return str(path)


def _feeds(cached: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    shapes = [("q", (B, S, HEADS * D)), ("k", (B, S, KV_HEADS * D)), ("v", (B, S, KV_HEADS * D))]
    shapes += [("past_key", (B, KV_HEADS, PAST, D)), ("past_value", (B, KV_HEADS, PAST, D))] if cached else []
    feeds = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes}
    feeds["positions"] = np.array([[4, 5, 6], [2, 3, 4]], np.int64)
    if not cached:
        feeds["kv_lens"] = np.array([S, 1], np.int64)
    return feeds


@pytest.mark.parametrize("cached", [True, False], ids=["cache", "key_lengths"])
@pytest.mark.parametrize("target", ["torch", "keras", "tflite"])
def test_a_decoder_step_runs_in_the_target(tmp_path, target, cached):
    pytest.importorskip("torch" if target == "torch" else "keras")
    src = _decoder_step(tmp_path, cached)
    dest = tmp_path / {"torch": "step_torch", "keras": "step_keras", "tflite": "step.tflite"}[target]
    tb.save(tb.load(src), dest, to=target)
    report = tb.verify(src, dest, inputs=_feeds(cached))
    assert report.ok and len(report.outputs) == (3 if cached else 1), report.summary()


def _scored(mode: int, softcap: bool, mask: bool, causal: bool, key_lengths: bool) -> onnx.ModelProto:
    """4-D Attention with its scores as a second output; the mask hides every key of the second query."""
    h, s, kv, d = 2, 3, 4, 4
    inputs = ["q", "k", "v", "mask" if mask else "", "", "", "lens" if key_lengths else ""]
    while not inputs[-1]:
        inputs.pop()
    node = helper.make_node("Attention", inputs, ["y", "", "", "scores"], qk_matmul_output_mode=mode,
                            is_causal=int(causal), **({"softcap": 2.0} if softcap else {}))
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [node], "scored",
        [helper.make_tensor_value_info(n, f, [1, h, length, d]) for n, length in (("q", s), ("k", kv), ("v", kv))]
        + ([helper.make_tensor_value_info("lens", TensorProto.INT64, [1])] if key_lengths else []),
        [helper.make_tensor_value_info("y", f, None), helper.make_tensor_value_info("scores", f, None)],
        [numpy_helper.from_array(np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]], bool), "mask")] if mask else [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("masks", ["none", "mask", "causal", "key_lengths", "causal+key_lengths"])
def test_softcap_masks_and_scores_as_onnxruntime_computes_them(tmp_path, mode, masks):
    """The reference and the decomposition against onnxruntime: softcap comes before the masks (so they stay
    -inf), the scores output is raw, capped, masked or softmax (modes 0-3), a fully hidden query gives zeros."""
    import onnxruntime as ort

    from tensorbridge.ops import schema as op_schema

    model = _scored(mode, True, "mask" in masks.split("+"), "causal" in masks, "key_lengths" in masks)
    path = tmp_path / "scored.onnx"
    onnx.save(model, path)
    rng = np.random.default_rng(0)
    feeds = {n: 3 * rng.standard_normal((1, 2, 3 if n == "q" else 4, 4)).astype(np.float32) for n in "qkv"}
    if "key_lengths" in masks:
        feeds["lens"] = np.array([3], np.int64)
    expected = ort.InferenceSession(model.SerializeToString()).run(None, feeds)
    graph = tb.load(path)
    for decomposed in (False, True):
        if decomposed:
            op_schema.get("Attention").decompose(graph, graph.nodes[0])
            assert all(n.op != "Attention" for n in graph.nodes)
        got = tb.run(graph, feeds)
        for v, e in zip(graph.outputs, expected):  # onnxruntime hides a masked score as the lowest float, not -inf
            lowest = np.finfo(np.float32).min
            np.testing.assert_allclose(np.maximum(got[v.name], lowest), e, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{v.name} {decomposed=}")


def _multi_query(tmp_path) -> str:
    """4-D causal attention of four query heads over one key/value head (Falcon's multi-query attention)."""
    f = TensorProto.FLOAT
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
    graph = helper.make_graph(
        [node], "multi_query",
        [helper.make_tensor_value_info("q", f, [B, HEADS, S, D]),
         helper.make_tensor_value_info("k", f, [B, 1, S, D]), helper.make_tensor_value_info("v", f, [B, 1, S, D])],
        [helper.make_tensor_value_info("y", f, [B, HEADS, S, D])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    path = tmp_path / "multi_query.onnx"
    onnx.save(model, path)
    return str(path)


@pytest.mark.parametrize("target, dest", [("keras", "k"), ("tflite", "m.tflite"), ("torch", "t")])
def test_one_key_head_for_every_query_head(tmp_path, target, dest):
    pytest.importorskip("tensorflow" if target != "torch" else "torch")
    src = _multi_query(tmp_path)
    written = tb.save(tb.load(src), tmp_path / dest, to=target)
    report = tb.verify(src, written)
    assert report.ok, report.summary()
