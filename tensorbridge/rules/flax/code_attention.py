"""Attention layers of model code in Flax NNX (rules/code.py): PyTorch's nn.MultiheadAttention written as a
`TorchMultiheadAttention` helper module of four nnx.Linear projections, which keeps PyTorch's call (`output,
weights = attention(query, key, value)`), and the IR's [in, out] projection weights into the Linear layers.
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import OpCall, changed, definition, known, value_of

HELPERS = {"TorchMultiheadAttention": definition(
    "class TorchMultiheadAttention(nnx.Module):\n"
    "    \"\"\"PyTorch's nn.MultiheadAttention call over nnx layers: (query, key, value) -> (output, the attention\n"
    "    weights averaged over heads, or None with need_weights=False); masks as PyTorch takes them\n"
    "    (is_causal is its hint that attn_mask is causal: the mask is applied as given).\"\"\"\n"
    "\n"
    "    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, kdim=None, vdim=None, batch_first=False, *,\n"
    "                 rngs: nnx.Rngs):\n"
    "        self.num_heads = num_heads\n"
    "        self.batch_first = batch_first\n"
    "        self.q_proj = nnx.Linear(embed_dim, embed_dim, use_bias=bias, rngs=rngs)\n"
    "        self.k_proj = nnx.Linear(kdim or embed_dim, embed_dim, use_bias=bias, rngs=rngs)\n"
    "        self.v_proj = nnx.Linear(vdim or embed_dim, embed_dim, use_bias=bias, rngs=rngs)\n"
    "        self.out_proj = nnx.Linear(embed_dim, embed_dim, use_bias=bias, rngs=rngs)\n"
    "        self.dropout = nnx.Dropout(dropout, rngs=rngs)\n"
    "\n"
    "    def heads(self, x):\n"
    "        \"\"\"(batch, steps, heads x dim) -> (batch, heads, steps, dim).\"\"\"\n"
    "        return jnp.swapaxes(x.reshape(*x.shape[:2], self.num_heads, -1), 1, 2)\n"
    "\n"
    "    def __call__(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,\n"
    "                 average_attn_weights=True, is_causal=False):\n"
    "        if not self.batch_first:\n"
    "            query, key, value = (jnp.swapaxes(t, 0, 1) for t in (query, key, value))\n"
    "        q, k, v = self.heads(self.q_proj(query)), self.heads(self.k_proj(key)), self.heads(self.v_proj(value))\n"
    "        scores = q @ jnp.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5\n"
    "        if attn_mask is not None:\n"
    "            if attn_mask.ndim == 3:  # (batch x heads, steps, key steps)\n"
    "                attn_mask = attn_mask.reshape(-1, self.num_heads, *attn_mask.shape[1:])\n"
    "            scores = self.masked(scores, attn_mask)\n"
    "        if key_padding_mask is not None:\n"
    "            scores = self.masked(scores, key_padding_mask[:, None, None, :])\n"
    "        weights = jax.nn.softmax(scores, axis=-1)\n"
    "        out = jnp.swapaxes(self.dropout(weights) @ v, 1, 2)\n"
    "        out = self.out_proj(out.reshape(*out.shape[:2], -1))\n"
    "        out = out if self.batch_first else jnp.swapaxes(out, 0, 1)\n"
    "        if not need_weights:\n"
    "            return out, None\n"
    "        return out, weights.mean(axis=1) if average_attn_weights else weights\n"
    "\n"
    "    @staticmethod\n"
    "    def masked(scores, mask):\n"
    "        \"\"\"A boolean mask leaves out its True entries; a float mask is added.\"\"\"\n"
    "        return jnp.where(mask, -jnp.inf, scores) if mask.dtype == jnp.bool_ else scores + mask\n")}


def write_attention(c: OpCall) -> ast.expr:
    """`TorchMultiheadAttention(embed_dim, num_heads, ..., rngs=rngs)`."""
    a = c.attrs
    sizes = {k: value_of(a[k]) for k in ("kdim", "vdim") if known(a[k]) is not None}
    return P.call("TorchMultiheadAttention", a["embed_dim"], a["num_heads"],
                  **changed(a, {"dropout": 0.0, "bias": True}), **sizes, **changed(a, {"batch_first": False}),
                  rngs=P.name("rngs"))



HELPERS["KerasMultiHeadAttention"] = definition(
    "class KerasMultiHeadAttention(nnx.Module):\n"
    "    \"\"\"Keras' layers.MultiHeadAttention over nnx layers, its call kept: the output, and with\n"
    "    return_attention_scores the attention weights (batch, heads, steps, key steps) too. Masks as Keras takes\n"
    "    them: True where a query step attends to a key step (a step that attends to none spreads evenly, as in\n"
    "    Keras' fused attention, or is zero where Keras computes the weights itself: with dropout or\n"
    "    return_attention_scores). The projections are sized by the first call (made outside jax.jit).\"\"\"\n"
    "\n"
    "    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, *, rngs: nnx.Rngs):\n"
    "        self.num_heads = num_heads\n"
    "        self.key_dim = key_dim\n"
    "        self.value_dim = value_dim or key_dim\n"
    "        self.use_bias = use_bias\n"
    "        self.rngs = rngs\n"
    "        self.dropout = nnx.Dropout(dropout, rngs=rngs)\n"
    "        self.query_dense = nnx.data(None)\n"
    "\n"
    "    def build(self, query, key, value):\n"
    "        heads, options = self.num_heads, dict(use_bias=self.use_bias, rngs=self.rngs)\n"
    "        self.query_dense = nnx.Linear(query.shape[-1], heads * self.key_dim, **options)\n"
    "        self.key_dense = nnx.Linear(key.shape[-1], heads * self.key_dim, **options)\n"
    "        self.value_dense = nnx.Linear(value.shape[-1], heads * self.value_dim, **options)\n"
    "        self.output_dense = nnx.Linear(heads * self.value_dim, query.shape[-1], **options)\n"
    "\n"
    "    def heads(self, x):\n"
    "        \"\"\"(batch, steps, heads x dim) -> (batch, heads, steps, dim).\"\"\"\n"
    "        return jnp.swapaxes(x.reshape(*x.shape[:2], self.num_heads, -1), 1, 2)\n"
    "\n"
    "    def __call__(self, query, value, key=None, value_mask=None, key_mask=None,\n"
    "                 attention_mask=None, return_attention_scores=False, use_causal_mask=False):\n"
    "        key = value if key is None else key\n"
    "        if self.query_dense is None:\n"
    "            self.build(query, key, value)\n"
    "        q = self.heads(self.query_dense(query)) / self.key_dim ** 0.5\n"
    "        scores = q @ jnp.swapaxes(self.heads(self.key_dense(key)), -1, -2)\n"
    "        masks = [m for m in (None if value_mask is None else value_mask.astype(bool)[:, None, :],\n"
    "                             None if key_mask is None else key_mask.astype(bool)[:, None, :],\n"
    "                             None if attention_mask is None else attention_mask.astype(bool)) if m is not None]\n"
    "        if use_causal_mask:\n"
    "            masks.append(jnp.tril(jnp.ones((query.shape[1], value.shape[1]), dtype=bool))[None])\n"
    "        mask = None\n"
    "        for m in masks:\n"
    "            mask = m[:, None] if mask is None else mask & m[:, None]  # the same for every head\n"
    "        if mask is not None:\n"
    "            scores = jnp.where(mask, scores, -1e9)\n"
    "        weights = jax.nn.softmax(scores, axis=-1)\n"
    "        if mask is not None and (return_attention_scores or self.dropout.rate > 0):\n"
    "            weights = jnp.where(mask, weights, 0.0)  # Keras' own softmax; its fused kernel leaves them\n"
    "        out = jnp.swapaxes(self.dropout(weights) @ self.heads(self.value_dense(value)), 1, 2)\n"
    "        out = self.output_dense(out.reshape(*out.shape[:2], -1))\n"
    "        return (out, weights) if return_attention_scores else out\n")


def write_keras_attention(c: OpCall) -> ast.expr:
    """`KerasMultiHeadAttention(num_heads, key_dim, ..., rngs=rngs)`."""
    a = c.attrs
    return P.call("KerasMultiHeadAttention", a["num_heads"], a["key_dim"],
                  **changed(a, {"value_dim": None, "dropout": 0.0, "use_bias": True}), rngs=P.name("rngs"))


HELPERS["TorchTransformerEncoderLayer"] = definition(
    "class TorchTransformerEncoderLayer(nnx.Module):\n"
    "    \"\"\"PyTorch's nn.TransformerEncoderLayer over nnx layers: self-attention and a feed-forward block, each\n"
    "    added to its input and normalised after it (before it with norm_first).\"\"\"\n"
    "\n"
    "    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation='relu',\n"
    "                 layer_norm_eps=1e-05, batch_first=False, norm_first=False, bias=True, *, rngs: nnx.Rngs):\n"
    "        self.norm_first = norm_first\n"
    "        self.activation = activation\n"
    "        self.self_attn = TorchMultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,\n"
    "                                                 batch_first=batch_first, rngs=rngs)\n"
    "        self.linear1 = nnx.Linear(d_model, dim_feedforward, use_bias=bias, rngs=rngs)\n"
    "        self.linear2 = nnx.Linear(dim_feedforward, d_model, use_bias=bias, rngs=rngs)\n"
    "        self.norm1 = nnx.LayerNorm(d_model, epsilon=layer_norm_eps, use_bias=bias, rngs=rngs)\n"
    "        self.norm2 = nnx.LayerNorm(d_model, epsilon=layer_norm_eps, use_bias=bias, rngs=rngs)\n"
    "        self.dropout = nnx.Dropout(dropout, rngs=rngs)\n"
    "\n"
    "    def attend(self, x, masks):\n"
    "        return self.dropout(self.self_attn(x, x, x, need_weights=False, **masks)[0])\n"
    "\n"
    "    def feed_forward(self, x):\n"
    "        h = self.linear1(x)\n"
    "        h = nnx.relu(h) if self.activation == 'relu' else nnx.gelu(h, approximate=False)\n"
    "        return self.dropout(self.linear2(self.dropout(h)))\n"
    "\n"
    "    def __call__(self, x, src_mask=None, src_key_padding_mask=None, is_causal=False):\n"
    "        masks = {'attn_mask': src_mask, 'key_padding_mask': src_key_padding_mask}\n"
    "        if self.norm_first:\n"
    "            x = x + self.attend(self.norm1(x), masks)\n"
    "            return x + self.feed_forward(self.norm2(x))\n"
    "        x = self.norm1(x + self.attend(x, masks))\n"
    "        return self.norm2(x + self.feed_forward(x))\n")
HELPERS["TorchTransformerEncoder"] = definition(
    "class TorchTransformerEncoder(nnx.Module):\n"
    "    \"\"\"PyTorch's nn.TransformerEncoder: `num_layers` TorchTransformerEncoderLayers (`options`), then a\n"
    "    LayerNorm when `norm_eps` is given.\"\"\"\n"
    "\n"
    "    def __init__(self, num_layers, norm_eps=None, *, rngs: nnx.Rngs, **options):\n"
    "        self.stack = nnx.List([TorchTransformerEncoderLayer(**options, rngs=rngs) for _ in range(num_layers)])\n"
    "        self.norm = nnx.data(None) if norm_eps is None else nnx.LayerNorm(options['d_model'], epsilon=norm_eps,\n"
    "                                                                           rngs=rngs)\n"
    "\n"
    "    def __call__(self, x, mask=None):\n"
    "        for layer in self.stack:\n"
    "            x = layer(x, src_mask=mask)\n"
    "        return x if self.norm is None else self.norm(x)\n")
