"""Attention layers of model code in Keras 3 (rules/code.py): PyTorch's nn.MultiheadAttention written as a
`TorchMultiheadAttention` helper layer of four Dense projections, which keeps PyTorch's call (`output, weights =
attention(query, key, value)`), and the IR's [in, out] projection weights into the Dense layers; its
nn.TransformerEncoderLayer / nn.TransformerEncoder as helper layers built on it.
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import OpCall, changed, definition

HELPERS = {"TorchMultiheadAttention": definition(
    "class TorchMultiheadAttention(layers.Layer):\n"
    "    \"\"\"PyTorch's nn.MultiheadAttention call over Keras layers: (query, key, value) -> (output, the attention\n"
    "    weights averaged over heads, or None with need_weights=False); masks as PyTorch takes them\n"
    "    (is_causal is its hint that attn_mask is causal: the mask is applied as given).\"\"\"\n"
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
    "    def call(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,\n"
    "             average_attn_weights=True, is_causal=False, training=False):\n"
    "        if not self.batch_first:\n"
    "            query, key, value = (ops.swapaxes(t, 0, 1) for t in (query, key, value))\n"
    "        q, k, v = self.heads(self.q_proj(query)), self.heads(self.k_proj(key)), self.heads(self.v_proj(value))\n"
    "        scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) / q.shape[-1] ** 0.5\n"
    "        if attn_mask is not None:\n"
    "            if len(attn_mask.shape) == 3:  # (batch x heads, steps, key steps)\n"
    "                attn_mask = ops.reshape(attn_mask, (-1, self.num_heads, *ops.shape(attn_mask)[1:]))\n"
    "            scores = self.masked(scores, attn_mask)\n"
    "        if key_padding_mask is not None:\n"
    "            scores = self.masked(scores, key_padding_mask[:, None, None, :])\n"
    "        weights = ops.softmax(scores, axis=-1)\n"
    "        out = ops.transpose(ops.matmul(self.dropout(weights, training=training), v), (0, 2, 1, 3))\n"
    "        out = self.out_proj(ops.reshape(out, (ops.shape(out)[0], ops.shape(out)[1], -1)))\n"
    "        out = out if self.batch_first else ops.swapaxes(out, 0, 1)\n"
    "        if not need_weights:\n"
    "            return out, None\n"
    "        return out, ops.mean(weights, axis=1) if average_attn_weights else weights\n"
    "\n"
    "    @staticmethod\n"
    "    def masked(scores, mask):\n"
    "        \"\"\"A boolean mask leaves out its True entries; a float mask is added.\"\"\"\n"
    "        if ops.dtype(mask) == 'bool':\n"
    "            return ops.where(mask, float('-inf'), scores)\n"
    "        return scores + mask\n")}


def write_attention(c: OpCall) -> ast.expr:
    """`TorchMultiheadAttention(embed_dim, num_heads, ...)`."""
    a = c.attrs
    return P.call("TorchMultiheadAttention", a["embed_dim"], a["num_heads"],
                  **changed(a, {"dropout": 0.0, "bias": True, "batch_first": False}))


HELPERS["TorchTransformerEncoderLayer"] = definition(
    "class TorchTransformerEncoderLayer(layers.Layer):\n"
    "    \"\"\"PyTorch's nn.TransformerEncoderLayer over Keras layers: self-attention and a feed-forward block, each\n"
    "    added to its input and normalised after it (before it with norm_first).\"\"\"\n"
    "\n"
    "    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',\n"
    "                 layer_norm_eps=1e-05, batch_first=False, norm_first=False, bias=True):\n"
    "        super().__init__()\n"
    "        self.norm_first = norm_first\n"
    "        self.activation = activation\n"
    "        self.self_attn = TorchMultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,\n"
    "                                                 batch_first=batch_first)\n"
    "        self.linear1 = layers.Dense(dim_feedforward, use_bias=bias)\n"
    "        self.linear2 = layers.Dense(d_model, use_bias=bias)\n"
    "        self.norm1 = layers.LayerNormalization(epsilon=layer_norm_eps, center=bias)\n"
    "        self.norm2 = layers.LayerNormalization(epsilon=layer_norm_eps, center=bias)\n"
    "        self.dropout = layers.Dropout(dropout)\n"
    "\n"
    "    def attend(self, x, masks, training):\n"
    "        attended = self.self_attn(x, x, x, need_weights=False, training=training, **masks)[0]\n"
    "        return self.dropout(attended, training=training)\n"
    "\n"
    "    def feed_forward(self, x, training):\n"
    "        h = self.linear1(x)\n"
    "        h = ops.relu(h) if self.activation == 'relu' else ops.gelu(h, approximate=False)\n"
    "        return self.dropout(self.linear2(self.dropout(h, training=training)), training=training)\n"
    "\n"
    "    def call(self, x, src_mask=None, src_key_padding_mask=None, is_causal=False, training=False):\n"
    "        masks = {'attn_mask': src_mask, 'key_padding_mask': src_key_padding_mask}\n"
    "        if self.norm_first:\n"
    "            x = x + self.attend(self.norm1(x), masks, training)\n"
    "            return x + self.feed_forward(self.norm2(x), training)\n"
    "        x = self.norm1(x + self.attend(x, masks, training))\n"
    "        return self.norm2(x + self.feed_forward(x, training))\n")
HELPERS["TorchTransformerEncoder"] = definition(
    "class TorchTransformerEncoder(layers.Layer):\n"
    "    \"\"\"PyTorch's nn.TransformerEncoder: `num_layers` TorchTransformerEncoderLayers (`options`), then a\n"
    "    LayerNormalization when `norm_eps` is given.\"\"\"\n"
    "\n"
    "    def __init__(self, num_layers, norm_eps=None, **options):\n"
    "        super().__init__()\n"
    "        self.stack = [TorchTransformerEncoderLayer(**options) for _ in range(num_layers)]\n"
    "        self.norm = None if norm_eps is None else layers.LayerNormalization(epsilon=norm_eps)\n"
    "\n"
    "    def call(self, x, mask=None, training=False):\n"
    "        for layer in self.stack:\n"
    "            x = layer(x, src_mask=mask, training=training)\n"
    "        return x if self.norm is None else self.norm(x)\n"
    "\n"
    "    def compute_mask(self, x, mask=None):\n"
    "        return None  # `mask` is PyTorch's attention mask, not a Keras mask to pass on\n")
