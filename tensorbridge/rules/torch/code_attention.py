"""Attention layers of model code in PyTorch (rules/code.py): Keras' MultiHeadAttention written as a
`KerasMultiHeadAttention` helper module of four nn.Linear projections sized by the first call, which keeps Keras'
call (`attention(query, value, key=None, ..., attention_mask=None, use_causal_mask=False)`), NNX's as an
`NnxMultiHeadAttention` helper keeping NNX's call (`attention(inputs_q, inputs_k=None, inputs_v=None, mask=None)`),
and the IR's [in, out] projection weights into the Linear layers.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ops.attention_layer import PROJECTIONS
from tensorbridge.rules.code import definition

HELPERS = {"KerasMultiHeadAttention": definition(
    "class KerasMultiHeadAttention(nn.modules.lazy.LazyModuleMixin, nn.Module):\n"
    "    \"\"\"Keras' layers.MultiHeadAttention over torch layers, its call kept: the output, and with\n"
    "    return_attention_scores the attention weights (batch, heads, steps, key steps) too. Masks as Keras takes\n"
    "    them: True where a query step attends to a key step (a step that attends to none spreads evenly, as in\n"
    "    Keras' fused attention, or is zero where Keras computes the weights itself: with dropout or\n"
    "    return_attention_scores). The projections are sized by the first call.\"\"\"\n"
    "\n"
    "    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True):\n"
    "        super().__init__()\n"
    "        self.num_heads = num_heads\n"
    "        self.key_dim = key_dim\n"
    "        self.value_dim = value_dim or key_dim\n"
    "        self.use_bias = use_bias\n"
    "        self.dropout = nn.Dropout(dropout)\n"
    "\n"
    "    def initialize_parameters(self, query, value, key=None, **masks):\n"
    "        key = value if key is None else key\n"
    "        heads, bias = self.num_heads, self.use_bias\n"
    "        self.query_dense = nn.Linear(query.shape[-1], heads * self.key_dim, bias=bias)\n"
    "        self.key_dense = nn.Linear(key.shape[-1], heads * self.key_dim, bias=bias)\n"
    "        self.value_dense = nn.Linear(value.shape[-1], heads * self.value_dim, bias=bias)\n"
    "        self.output_dense = nn.Linear(heads * self.value_dim, query.shape[-1], bias=bias)\n"
    "\n"
    "    def heads(self, x):\n"
    "        \"\"\"(batch, steps, heads x dim) -> (batch, heads, steps, dim).\"\"\"\n"
    "        return x.reshape(*x.shape[:2], self.num_heads, -1).transpose(1, 2)\n"
    "\n"
    "    def forward(self, query, value, key=None, value_mask=None, key_mask=None,\n"
    "                attention_mask=None, return_attention_scores=False, use_causal_mask=False):\n"
    "        key = value if key is None else key\n"
    "        q = self.heads(self.query_dense(query)) / self.key_dim ** 0.5\n"
    "        scores = q @ self.heads(self.key_dense(key)).transpose(-1, -2)\n"
    "        masks = [m for m in (None if value_mask is None else value_mask.bool()[:, None, :],\n"
    "                             None if key_mask is None else key_mask.bool()[:, None, :],\n"
    "                             None if attention_mask is None else attention_mask.bool()) if m is not None]\n"
    "        if use_causal_mask:\n"
    "            steps = torch.ones(query.shape[1], value.shape[1], dtype=torch.bool, device=query.device)\n"
    "            masks.append(steps.tril()[None])\n"
    "        mask = None\n"
    "        for m in masks:\n"
    "            mask = m[:, None] if mask is None else mask & m[:, None]  # the same for every head\n"
    "        if mask is not None:\n"
    "            scores = scores.masked_fill(~mask, -1e9)\n"
    "        weights = torch.softmax(scores, dim=-1)\n"
    "        if mask is not None and (return_attention_scores or self.dropout.p > 0):\n"
    "            weights = weights.masked_fill(~mask, 0.0)  # Keras' own softmax; its fused kernel leaves them\n"
    "        out = (self.dropout(weights) @ self.heads(self.value_dense(value))).transpose(1, 2)\n"
    "        out = self.output_dense(out.reshape(*out.shape[:2], -1))\n"
    "        return (out, weights) if return_attention_scores else out\n")}

HELPERS["NnxMultiHeadAttention"] = definition(
    "class NnxMultiHeadAttention(nn.Module):\n"
    "    \"\"\"Flax NNX's nnx.MultiHeadAttention over torch layers, its call kept: (inputs_q, inputs_k=None,\n"
    "    inputs_v=None, mask=None, is_causal=False) -> the output. The mask as NNX takes it: True where a query\n"
    "    step attends to a key step, broadcast to (batch, heads, steps, key steps).\"\"\"\n"
    "\n"
    "    def __init__(self, num_heads, in_features, qkv_features=None, out_features=None, in_kv_features=None,\n"
    "                 dropout_rate=0.0, use_bias=True):\n"
    "        super().__init__()\n"
    "        features = qkv_features or in_features\n"
    "        self.num_heads = num_heads\n"
    "        self.query = nn.Linear(in_features, features, bias=use_bias)\n"
    "        self.key = nn.Linear(in_kv_features or in_features, features, bias=use_bias)\n"
    "        self.value = nn.Linear(in_kv_features or in_features, features, bias=use_bias)\n"
    "        self.out = nn.Linear(features, out_features or in_features, bias=use_bias)\n"
    "        self.dropout = nn.Dropout(dropout_rate)\n"
    "\n"
    "    def heads(self, x):\n"
    "        \"\"\"(batch, steps, heads x dim) -> (batch, heads, steps, dim).\"\"\"\n"
    "        return x.reshape(*x.shape[:2], self.num_heads, -1).transpose(1, 2)\n"
    "\n"
    "    def forward(self, inputs_q, inputs_k=None, inputs_v=None, mask=None, is_causal=False):\n"
    "        inputs_k = inputs_q if inputs_k is None else inputs_k\n"
    "        inputs_v = inputs_k if inputs_v is None else inputs_v\n"
    "        q = self.heads(self.query(inputs_q))\n"
    "        scores = q / q.shape[-1] ** 0.5 @ self.heads(self.key(inputs_k)).transpose(-1, -2)\n"
    "        mask = None if mask is None else mask.bool()\n"
    "        if is_causal:\n"
    "            causal = torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device).tril()\n"
    "            mask = causal if mask is None else mask & causal\n"
    "        if mask is not None:\n"
    "            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
    "        weights = self.dropout(torch.softmax(scores, dim=-1))\n"
    "        out = (weights @ self.heads(self.value(inputs_v))).transpose(1, 2)\n"
    "        return self.out(out.reshape(*out.shape[:2], -1))\n")

def linear_projection_weights(w: dict, attrs) -> list:
    """The IR's query/key/value/output weights ([in, out]) and biases -> the four Linear layers' (in that order)."""
    return [{"weight": np.ascontiguousarray(w[f"{role}_weight"].T),
             **({"bias": w[f"{role}_bias"]} if f"{role}_bias" in w else {})} for role in PROJECTIONS]
