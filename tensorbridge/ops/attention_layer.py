"""MultiHeadAttention: Attention with its query, key, value and output projections, as one layer.

The op exists so that a writer with one layer for it (Flax's `nnx.MultiHeadAttention`, Keras's
`layers.MultiHeadAttention`) can write it so; every other writer gets its decomposition (Dense, Reshape,
Transpose, Attention). A source that spells it in those plain ops keeps them, except for the writers that
have the layer: they fuse the pattern back (`set_fusion`).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.builder import Builder
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.patterns import constant, only_use
from tensorbridge.ops.schema import Attr, attrs_of, op, set_decomposition, set_fusion
from tensorbridge.ops.transformer import attention, hidden_score, may_hide_whole_rows

F = "transformer"
PROJECTIONS = ("query", "key", "value", "output")


def _infer(inputs, attrs):
    q, w = inputs[0], inputs[6]
    shape = None if q.shape is None or w.shape is None else (*q.shape[:-1], w.shape[-1])
    return [(q.dtype, shape)]


@op("MultiHeadAttention", inputs="query key value query_weight key_weight value_weight output_weight query_bias? "
    "key_bias? value_bias? output_bias? mask?", family=F, layout=TERMINATE, infer=_infer,
    attrs={"num_heads": Attr("int"), "scale": Attr("float", None), "is_causal": Attr("int", 0),
           "empty_rows": Attr("str", "zero")},
    examples=({"inputs": [(2, 5, 8), (2, 6, 8), (2, 6, 8), (8, 8), (8, 8), (8, 8), (8, 8), (8,), (8,), (8,), (8,)],
               "const": list(range(3, 11)), "attrs": {"num_heads": 2}},
              {"inputs": [(1, 4, 6), (1, 4, 6), (1, 4, 6), (6, 8), (6, 8), (6, 4), (4, 5)],
               "const": [3, 4, 5, 6], "attrs": {"num_heads": 2, "is_causal": 1}}),
    doc="Attention between projected [batch, seq, features] operands, its heads merged and projected (weights "
        "[in, out]; the mask and scale as Attention's; a query a boolean mask hides every key from gets zeros, "
        "or with empty_rows='average' the average of the values, as Keras and JAX compute). Equivalents: "
        "nnx.MultiHeadAttention, keras MultiHeadAttention, nn.MultiheadAttention.")
def multi_head_attention(query, key, value, query_weight, key_weight, value_weight, output_weight, query_bias=None,
                         key_bias=None, value_bias=None, output_bias=None, mask=None, *, num_heads, scale, is_causal,
                         empty_rows):
    def project(x, w, b):
        y = x.astype(np.float64) @ w.astype(np.float64)
        return y if b is None else y + b.astype(np.float64)

    def heads(x, w, b):  # [B, S, H*D] -> [B, H, S, D]
        y = project(x, w, b)
        return y.reshape(*y.shape[:-1], num_heads, -1).swapaxes(-3, -2)

    if mask is not None and mask.dtype == np.bool_ and empty_rows == "average":
        mask = np.where(mask, 0.0, hidden_score(query.dtype))
    y = attention(heads(query, query_weight, query_bias), heads(key, key_weight, key_bias),
                  heads(value, value_weight, value_bias), mask, is_causal=is_causal, kv_num_heads=None,
                  q_num_heads=None, qk_matmul_output_mode=0, scale=scale, softcap=0.0, softmax_precision=None)[0]
    y = y.swapaxes(-3, -2)
    return project(y.reshape(*y.shape[:-2], -1), output_weight, output_bias).astype(query.dtype)


def _decompose(graph, node) -> bool:
    """Each operand's Dense split into heads, Attention, the heads merged, the output Dense (a boolean mask of
    empty_rows='average' made the additive one that averages). The Dense nodes are named after the projection
    they compute (`<module>.query` ...)."""
    a = attrs_of(node)
    heads = a["num_heads"]
    weights = node.inputs[3:7]
    if any(w.shape is None or len(w.shape) != 2 or not isinstance(w.shape[1], int) for w in weights):
        return False
    biases = [node.input(i) for i in range(7, 11)]
    module = node.meta.get("module")

    def dense(x, k):
        tag = PROJECTIONS[k]
        meta = {**node.meta, "module": f"{module}.{tag}"} if module else node.meta
        part = Builder(graph, f"{node.name}.{tag}", meta, before=node)
        return part.op("Dense", *[x, weights[k]] + ([biases[k]] if biases[k] is not None else []))

    b = Builder.replacing(node)

    def split(x, k):
        depth = weights[k].shape[1] // heads
        y = b.op("Reshape", dense(x, k), b.const(np.array([0, 0, heads, depth], np.int64), b.name("heads")))
        return b.op("Transpose", y, perm=[0, 2, 1, 3])

    operands = [split(x, k) for k, x in enumerate(node.inputs[:3])]
    mask = node.input(11)
    if mask is not None and mask.dtype == np.bool_ and a["empty_rows"] == "average":
        dt = node.inputs[0].dtype
        mask = b.op("Where", mask, b.const(np.array(0, dt), b.name("seen")),
                    b.const(np.array(hidden_score(dt), dt), b.name("hidden")))
    attrs = {"is_causal": a["is_causal"]} | ({"scale": a["scale"]} if a["scale"] is not None else {})
    y = b.op("Attention", *operands, *([mask] if mask is not None else []), **attrs)
    y = b.op("Transpose", y, perm=[0, 2, 1, 3])
    y = b.op("Reshape", y, b.const(np.array([0, 0, weights[3].shape[0]], np.int64), b.name("merged")))
    graph.replace_node(node, [dense(y, 3)])
    return True


set_decomposition("MultiHeadAttention", _decompose)


def layer_blocker(node) -> str | None:
    """What the frameworks' attention layers (nnx.MultiHeadAttention, keras MultiHeadAttention) cannot hold in
    any configuration: operands other than [batch, sequence, features], a scale other than 1/sqrt(head size),
    additive masks, and zeros for a query whose mask may hide every key (the layers average the values)."""
    weights, mask = node.inputs[3:7], node.input(11)
    if any(w.shape is None for w in weights) or any(t.shape is None or len(t.shape) != 3 for t in node.inputs[:3]):
        return "operands that are not [batch, sequence, features]"
    scale, head = node.attrs.get("scale"), weights[0].shape[1] // node.attrs["num_heads"]
    if scale is not None and not np.isclose(scale, 1 / np.sqrt(head), rtol=1e-6, atol=0):
        return "a scale other than 1/sqrt(head size)"
    if mask is not None and mask.dtype != np.bool_:
        return "an additive mask (the layer takes a boolean one)"
    if mask is not None and node.attrs.get("empty_rows", "zero") == "zero" and may_hide_whole_rows(mask):
        return "a mask that may hide every key of a query, which gets zeros here (the layer averages the values)"
    return None


def layer_weights(node) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The four projections' (kernel, bias) as the frameworks' attention layers hold them: kernels [in, heads,
    depth] (the output's [heads, depth, out]), biases [heads, depth] (the output's [out]); every bias None where
    the op has none, zeros for one it lacks."""
    heads = node.attrs["num_heads"]
    weights = [np.asarray(w.const) for w in node.inputs[3:7]]
    biases = [node.input(i) for i in range(7, 11)]
    biased = any(b is not None for b in biases)
    out = []
    for k, (w, b) in enumerate(zip(weights, biases)):
        bias = np.asarray(b.const) if b is not None else np.zeros(w.shape[1], w.dtype)
        if k == 3:
            out.append((w.reshape(heads, -1, w.shape[1]), bias if biased else None))
        else:
            out.append((w.reshape(w.shape[0], heads, -1), bias.reshape(heads, -1) if biased else None))
    return out


def in_out(array: np.ndarray, projection: str) -> np.ndarray:
    """A layer's kernel or bias (as `layer_weights` gives them) as the op's input: kernels [in, out], biases
    [out]."""
    if array.ndim == 3:
        return array.reshape(-1, array.shape[-1]) if projection == "output" else array.reshape(array.shape[0], -1)
    return array.reshape(-1)


def _same_shape_reshapes_skipped(v, graph):
    """`v`, or what a chain of Reshapes that keep its shape (each read only there) was made from."""
    while (r := only_use(v, ("Reshape",), graph)) is not None and r.inputs[0].shape == v.shape \
            and v.shape is not None:
        v = r.inputs[0]
    return v


def _swapped(v, graph):
    """The input of a Transpose (perm 0 2 1 3, read only there) making `v`, else None."""
    t = only_use(v, ("Transpose",), graph)
    return t.inputs[0] if t is not None and list(t.attrs.get("perm") or ()) == [0, 2, 1, 3] else None


def _projection(v, graph):
    """(x, weight, bias, heads) when `v` = Transpose(Reshape(Dense(x, weight, bias), [B, S, heads, depth]),
    0 2 1 3), each read only there, else None."""
    split = _swapped(v, graph)
    r = only_use(split, ("Reshape",), graph) if split is not None else None
    d = only_use(r.inputs[0], ("Dense",), graph) if r is not None else None
    if d is None or constant(d.inputs[1]) is None or (d.input(2) is not None and constant(d.input(2)) is None):
        return None
    flat, shape = d.outputs[0].shape, split.shape
    if flat is None or shape is None or len(flat) != 3 or len(shape) != 4 or tuple(shape[:2]) != tuple(flat[:2]) \
            or not all(isinstance(n, int) for n in shape[2:]) or shape[2] * shape[3] != flat[2]:
        return None
    return d.inputs[0], d.inputs[1], d.input(2), shape[2]


def _fuse(graph, node):
    """Dense(Reshape(Transpose(Attention(q, k, v), 0 2 1 3) -> [B, S, H*D])) where q, k and v are projections
    split into heads (`_projection`), every intermediate read only there: the MultiHeadAttention computing it."""
    merged = only_use(node.inputs[0], ("Reshape",), graph)
    joined = _swapped(merged.inputs[0], graph) if merged is not None else None
    att = only_use(_same_shape_reshapes_skipped(joined, graph), ("Attention",), graph) if joined is not None else None
    if att is None or len(att.outputs) != 1 or len(att.inputs) > 4 or att.attrs.get("softcap") \
            or att.attrs.get("q_num_heads") or att.attrs.get("kv_num_heads") or constant(node.inputs[1]) is None \
            or (node.input(2) is not None and constant(node.input(2)) is None) \
            or merged.outputs[0].shape is None or len(merged.outputs[0].shape) != 3:
        return None
    parts = [_projection(v, graph) for v in att.inputs[:3]]
    if any(p is None for p in parts) or len({p[3] for p in parts}) != 1:
        return None
    (xs, ws, bs, heads) = zip(*parts)
    inputs = [*xs, *ws, node.inputs[1], *bs, node.input(2), att.input(3)]
    while inputs[-1] is None:
        inputs.pop()
    attrs = {"num_heads": heads[0], "is_causal": int(att.attrs.get("is_causal") or 0)}
    if att.attrs.get("scale") is not None:
        attrs["scale"] = att.attrs["scale"]
    return Builder(graph, att.name, att.meta, before=node).node("MultiHeadAttention", inputs, attrs,
                                                                name=att.meta.get("module") or "attention")


set_fusion("MultiHeadAttention", "Dense", _fuse)
