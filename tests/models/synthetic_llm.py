"""A LLaMA-style decoder of any size as an ONNX file with external data, its weights drawn deterministically
and streamed to disk one tensor at a time (never all in memory): the source of the large-model benchmark
(benchmarks/llm_bench.py) and of the bounded-memory tests.

    python -m tests.models.synthetic_llm 7b out/llama7b.onnx --dtype bfloat16

The graph is the decoder transformers' LlamaForCausalLM computes for a prompt (no cache): token embedding,
per layer RMSNorm -> grouped-query attention with rotary embeddings -> RMSNorm -> SwiGLU MLP, residuals, final
RMSNorm and the LM head, written with ONNX's own RMSNormalization, RotaryEmbedding and Attention ops.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

#: the shapes of published models: TinyLlama-1.1B, OpenLLaMA-3B, LLaMA-2-7B
CONFIGS = {
    "1b": dict(vocab=32000, hidden=2048, intermediate=5632, layers=22, heads=32, kv_heads=4),
    "3b": dict(vocab=32000, hidden=3200, intermediate=8640, layers=26, heads=32, kv_heads=32),
    "7b": dict(vocab=32000, hidden=4096, intermediate=11008, layers=32, heads=32, kv_heads=32),
}


def parameters(cfg: dict) -> int:
    h, i, kv = cfg["hidden"], cfg["intermediate"], cfg["hidden"] // cfg["heads"] * cfg["kv_heads"]
    per_layer = h * (h + 2 * kv + h) + 3 * h * i + 2 * h
    return 2 * cfg["vocab"] * h + cfg["layers"] * per_layer + h


def weight_shapes(cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    """Every weight's name and shape, in the order they are written (Dense weights are [in, out])."""
    h, i = cfg["hidden"], cfg["intermediate"]
    kv = h // cfg["heads"] * cfg["kv_heads"]
    out = [("model.embed_tokens.weight", (cfg["vocab"], h))]
    for n in range(cfg["layers"]):
        p = f"model.layers.{n}."
        out += [(p + "input_layernorm.weight", (h,)), (p + "self_attn.q_proj.weight", (h, h)),
                (p + "self_attn.k_proj.weight", (h, kv)), (p + "self_attn.v_proj.weight", (h, kv)),
                (p + "self_attn.o_proj.weight", (h, h)), (p + "post_attention_layernorm.weight", (h,)),
                (p + "mlp.gate_proj.weight", (h, i)), (p + "mlp.up_proj.weight", (h, i)),
                (p + "mlp.down_proj.weight", (i, h))]
    return out + [("model.norm.weight", (h,)), ("lm_head.weight", (h, cfg["vocab"]))]


def stream_weights(cfg: dict, path: Path, dtype: np.dtype, seed: int = 0) -> dict[str, np.ndarray]:
    """Draw each weight (seeded by its position) into one raw file, a slab of rows at a time; returns read-only
    memory-mapped views of them."""
    offsets, offset = {}, 0
    for name, shape in weight_shapes(cfg):
        offsets[name] = (offset, shape)
        offset += int(np.prod(shape)) * dtype.itemsize
    with open(path, "wb") as f:
        f.truncate(offset)
    for k, (start, shape) in enumerate(offsets.values()):
        rng = np.random.default_rng(seed + k)
        out = np.memmap(path, dtype=dtype, mode="r+", offset=start, shape=shape)
        if len(shape) == 1:
            out[:] = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            scale = 1.0 / np.sqrt(shape[0])
            rows = max(1, (16 << 20) // (shape[1] * 4))
            for r in range(0, shape[0], rows):
                out[r:r + rows] = (scale * rng.standard_normal((min(rows, shape[0] - r), shape[1]))).astype(dtype)
        out.flush()
        del out
    return {name: np.memmap(path, dtype=dtype, mode="r", offset=start, shape=shape)
            for name, (start, shape) in offsets.items()}


def rotary_tables(cfg: dict, seq: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of each position's angles, [1, seq, head_dim / 2] (LLaMA's base 10000)."""
    head = cfg["hidden"] // cfg["heads"]
    inv_freq = 1.0 / 10000 ** (np.arange(0, head, 2, dtype=np.float64) / head)
    angles = np.outer(np.arange(seq), inv_freq)[None]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def build_graph(cfg: dict, weights: dict[str, np.ndarray], seq: int = 16):
    """The decoder's IR graph: input_ids [1, seq] -> logits [1, seq, vocab]; weights are the given arrays."""
    from tensorbridge.ir.builder import Builder
    from tensorbridge.ir.graph import Graph

    g = Graph(name="llama")
    b = Builder(g)
    h, heads, kv_heads = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
    head = h // heads
    dtype = next(iter(weights.values())).dtype
    w = {name: b.weight(name, arr) for name, arr in weights.items()}
    ids = g.add_input("input_ids", np.int64, (1, seq))
    cos, sin = (b.const(t.astype(dtype), name) for t, name in zip(rotary_tables(cfg, seq), ("rope.cos", "rope.sin")))

    def split_heads(x, n):
        x = b.op("Reshape", x, b.const(np.array([1, seq, n, head], np.int64)))
        return b.op("Transpose", x, perm=[0, 2, 1, 3])

    x = b.op("Gather", w["model.embed_tokens.weight"], ids, axis=0)
    for n in range(cfg["layers"]):
        p = f"model.layers.{n}."
        b.at(p.rstrip("."))
        y = b.op("RMSNormalization", x, w[p + "input_layernorm.weight"], epsilon=1e-5)
        q, k, v = (b.op("Dense", y, w[p + f"self_attn.{m}_proj.weight"]) for m in "qkv")
        q = b.op("RotaryEmbedding", split_heads(q, heads), cos, sin)
        k = b.op("RotaryEmbedding", split_heads(k, kv_heads), cos, sin)
        a = b.op("Attention", q, k, split_heads(v, kv_heads), is_causal=1)
        a = b.op("Reshape", b.op("Transpose", a, perm=[0, 2, 1, 3]), b.const(np.array([1, seq, h], np.int64)))
        x = b.op("Add", x, b.op("Dense", a, w[p + "self_attn.o_proj.weight"]))
        y = b.op("RMSNormalization", x, w[p + "post_attention_layernorm.weight"], epsilon=1e-5)
        gate = b.op("SiLU", b.op("Dense", y, w[p + "mlp.gate_proj.weight"]))
        up = b.op("Dense", y, w[p + "mlp.up_proj.weight"])
        x = b.op("Add", x, b.op("Dense", b.op("Mul", gate, up), w[p + "mlp.down_proj.weight"]))
    b.at("model")
    x = b.op("RMSNormalization", x, w["model.norm.weight"], epsilon=1e-5)
    g.outputs = [b.op("Dense", x, w["lm_head.weight"], suffix="logits")]
    return g


def write(size: str | dict, dest: Path, dtype: str = "float32", seq: int = 16) -> Path:
    """The decoder (a CONFIGS name or a config) as `dest` (ONNX, external data beside it); its raw weights
    file is removed after."""
    import tensorbridge as tb
    from tensorbridge.ir import dtypes

    cfg = CONFIGS[size] if isinstance(size, str) else size
    dest.parent.mkdir(parents=True, exist_ok=True)
    raw = dest.with_suffix(".raw")
    weights = stream_weights(cfg, raw, np.dtype(dtypes.dtype(dtype)))
    try:
        tb.save(build_graph(cfg, weights, seq), dest)
    finally:
        del weights
        raw.unlink()
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size", choices=sorted(CONFIGS))
    ap.add_argument("dest", type=Path)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    a = ap.parse_args()
    print(write(a.size, a.dest, a.dtype))


if __name__ == "__main__":
    main()
