"""Attention layers of model code in Keras 3 (rules/code.py): PyTorch's nn.MultiheadAttention written as a
`TorchMultiheadAttention` helper layer of four Dense projections, which keeps PyTorch's call (`output, weights =
attention(query, key, value)`), and the IR's [in, out] projection weights into the Dense layers.
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import OpCall, changed, definition

HELPERS = {"TorchMultiheadAttention": definition(
    "class TorchMultiheadAttention(layers.Layer):\n"
    "    \"\"\"PyTorch's nn.MultiheadAttention call over Keras layers: (query, key, value) -> (output, the attention\n"
    "    weights averaged over heads, or None with need_weights=False). Masks are not taken.\"\"\"\n"
    "\n"
    "    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False):\n"
    "        super().__init__()\n"
    "        self.num_heads = num_heads\n"
    "        self.batch_first = batch_first\n"
    "        self.q_proj = layers.Dense(embed_dim, use_bias=bias)\n"
    "        self.k_proj = layers.Dense(embed_dim, use_bias=bias)\n"
    "        self.v_proj = layers.Dense(embed_dim, use_bias=bias)\n"
    "        self.out_proj = layers.Dense(embed_dim, use_bias=bias)\n"
    "        self.dropout = layers.Dropout(dropout)\n"
    "\n"
    "    def heads(self, x):\n"
    "        \"\"\"(batch, steps, heads x dim) -> (batch, heads, steps, dim).\"\"\"\n"
    "        batch, steps = ops.shape(x)[0], ops.shape(x)[1]\n"
    "        return ops.transpose(ops.reshape(x, (batch, steps, self.num_heads, -1)), (0, 2, 1, 3))\n"
    "\n"
    "    def call(self, query, key, value, need_weights=True, training=False):\n"
    "        if not self.batch_first:\n"
    "            query, key, value = (ops.swapaxes(t, 0, 1) for t in (query, key, value))\n"
    "        q, k, v = self.heads(self.q_proj(query)), self.heads(self.k_proj(key)), self.heads(self.v_proj(value))\n"
    "        weights = ops.softmax(ops.matmul(q, ops.swapaxes(k, -1, -2)) / q.shape[-1] ** 0.5, axis=-1)\n"
    "        out = ops.transpose(ops.matmul(self.dropout(weights, training=training), v), (0, 2, 1, 3))\n"
    "        out = self.out_proj(ops.reshape(out, (ops.shape(out)[0], ops.shape(out)[1], -1)))\n"
    "        out = out if self.batch_first else ops.swapaxes(out, 0, 1)\n"
    "        return out, ops.mean(weights, axis=1) if need_weights else None\n")}


def write_attention(c: OpCall) -> ast.expr:
    """`TorchMultiheadAttention(embed_dim, num_heads, ...)`."""
    a = c.attrs
    return P.call("TorchMultiheadAttention", a["embed_dim"], a["num_heads"],
                  **changed(a, {"dropout": 0.0, "bias": True, "batch_first": False}))
