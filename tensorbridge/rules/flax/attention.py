"""Flax code for attention: `jax.nn.dot_product_attention`, and `nnx.MultiHeadAttention` for the whole layer,
which the JAX frontend also reads back as one MultiHeadAttention.

Both compute softmax attention as the IR does except where a mask hides every key of a query (JAX averages
such a row, the IR gives zeros): such masks are refused here, and the op decomposed into matrix products.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.ops.attention_layer import PROJECTIONS, in_out, layer_blocker, layer_weights
from tensorbridge.ops.transformer import may_hide_whole_rows, sdpa_blocker
from tensorbridge.rules.flax.base import R
from tensorbridge.rules.flax.jaxpr import mark
from tensorbridge.rules.ir_spellings import mask_over_keys


def _attention_blocker(node) -> str | None:
    q, v = node.inputs[0], node.inputs[2]
    blocker = sdpa_blocker(node)
    if blocker:
        return blocker
    if v.shape[3] != q.shape[3]:
        return "values of another head size than queries and keys (jax.nn.dot_product_attention takes one)"
    if node.input(3) is not None and may_hide_whole_rows(node.input(3)):
        return "a mask that may close a whole row (jax.nn.dot_product_attention averages such a row; the op gives 0)"
    return None


@R.exports("Attention", check=_attention_blocker)
def write_attention(em, node):
    q, k, v = node.inputs[:3]
    mask = node.input(3)

    def bthd(t):  # IR [B, H, T, D] <-> jax [B, T, H, D]
        return P.call("jnp.transpose", t, (0, 2, 1, 3))

    kw = {}
    if mask is not None:
        kw["mask" if mask.dtype == np.bool_ else "bias"] = em.tensor(mask)
    if node.attrs.get("scale") is not None:
        kw["scale"] = node.attrs["scale"]
    if node.attrs.get("is_causal"):
        kw["is_causal"] = True
    y = P.call("jax.nn.dot_product_attention", *(bthd(em.tensor(t)) for t in (q, k, v)), **kw)
    em.out(node, bthd(y))


def _layer_blocker(node) -> str | None:
    """What nnx.MultiHeadAttention cannot hold: it projects query, key and value to one width (`qkv_features`)
    and keys and values from inputs of one width."""
    key, value = node.inputs[1:3]
    weights = node.inputs[3:7]
    blocker = layer_blocker(node)
    if blocker is None and (len({w.shape[1] for w in weights[:3]}) != 1 or key.shape[-1] != value.shape[-1]):
        return "query, key and value projections of different widths (nnx.MultiHeadAttention has one qkv_features)"
    return blocker


@R.exports("MultiHeadAttention", check=_layer_blocker)
def write_multi_head_attention(em, node):
    query, key, value = node.inputs[:3]
    heads = node.attrs["num_heads"]
    weights = [w.shape for w in node.inputs[3:7]]
    state = {}
    for tag, (kernel, bias) in zip(("query", "key", "value", "out"), layer_weights(node)):
        state |= {f"{tag}.kernel": kernel} | ({f"{tag}.bias": bias} if bias is not None else {})
    in_features = weights[0][0]
    options = {"qkv_features": weights[0][1], "out_features": weights[3][1], "in_kv_features": weights[1][0]}
    options = {k: v for k, v in options.items() if v != in_features}
    options |= {"use_bias": False} if "out.bias" not in state else {}
    layer = em.layer(node, "nnx.MultiHeadAttention", [heads, in_features],
                     options | {"decode": False, "keep_rngs": False}, state)
    # nnx.MultiHeadAttention's key defaults to the query, its value to the key
    operands = [query, key, value] if value is not key else [query, key] if key is not query else [query]
    call = {"mask": em.tensor(node.input(11))} if node.input(11) is not None else {}
    call |= {"is_causal": True} if node.attrs.get("is_causal") else {}
    em.out(node, P.call(layer, *(em.tensor(t) for t in operands), **call))


@mark("MultiHeadAttention", produces=("MultiHeadAttention", "Cast"))
def read_multi_head_attention(imp, eqn, settings, layer, query, key, value, *tensors):
    """The layer's kernels ([in, heads, depth]; output [heads, depth, out]) as the op's [in, out] weights; JAX
    averages the values for a query its mask hides every key from."""
    params, mask = (tensors[:-1], tensors[-1]) if len(tensors) in (5, 9) else (tensors, None)
    if any(p.const is None for p in params):
        return None
    kernels, biases = (params[0::2], params[1::2]) if len(params) == 8 else (params, [None] * 4)
    weights = [imp.rearranged(k, lambda a, p=p: in_out(a, p), "in_out") for k, p in zip(kernels, PROJECTIONS)]
    biases = [b if b is None else imp.rearranged(b, lambda a, p=p: in_out(a, p), "flat")
              for b, p in zip(biases, PROJECTIONS)]
    if mask is not None and mask.dtype != np.bool_:
        mask = imp.emit("Cast", [mask], {"to": "bool"}, suffix="mask")
    inputs = [query, key, value, *weights, *biases, mask_over_keys(imp, mask, key)]
    while inputs[-1] is None:
        inputs.pop()
    attrs = {"num_heads": settings["num_heads"], "is_causal": int(settings["is_causal"])}
    return imp.emit("MultiHeadAttention", inputs, attrs | ({"empty_rows": "average"} if mask is not None else {}))
