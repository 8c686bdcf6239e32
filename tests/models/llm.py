"""LLaMA-style decoders from transformers configs with seeded weights, as a user exports them: a prefill step
without a cache, and a decode step with the KV cache as explicit inputs and outputs."""

from __future__ import annotations

import numpy as np

#: a decoder small enough for `make test`: grouped-query heads (4 queries share 2 keys), SwiGLU, RMSNorm, RoPE
SMALL = dict(vocab_size=500, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=64)
#: TinyLlama-1.1B's shape: 1.1e9 parameters
ONE_B = dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
             num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048)


def llama(config: dict, seed: int = 0):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(**config)).eval()


def prefill(model):
    """ids [B, S] -> logits, no cache."""
    import torch

    class Prefill(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids):
            return self.model(input_ids=input_ids, use_cache=False).logits

    return Prefill().eval()


def decode(model):
    """ids [B, 1] and each layer's past keys and values [B, kv_heads, P, head_dim] -> logits and the present
    keys and values [B, kv_heads, P+1, head_dim] (transformers' DynamicCache filled from the inputs)."""
    import torch
    from transformers import DynamicCache

    layers = model.config.num_hidden_layers

    class Decode(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, *past):
            cache = DynamicCache(config=model.config)
            for i in range(layers):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True)
            return (out.logits, *[t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)])

    return Decode().eval()


def prefill_feeds(config: dict, seq: int = 12, seed: int = 3) -> list[np.ndarray]:
    return [np.random.default_rng(seed).integers(0, config["vocab_size"], (1, seq)).astype(np.int64)]


def decode_feeds(config: dict, past: int = 7, seed: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    head = config["hidden_size"] // config["num_attention_heads"]
    kv = (1, config["num_key_value_heads"], past, head)
    return [rng.integers(0, config["vocab_size"], (1, 1)).astype(np.int64)] + \
        [rng.standard_normal(kv).astype(np.float32) for _ in range(2 * config["num_hidden_layers"])]
