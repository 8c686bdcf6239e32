"""Attention ops: Attention, RotaryEmbedding (the recurrent layers are in ops/recurrent.py).

Attention follows ONNX `Attention` (3-D [batch, seq, heads*dim] or 4-D [batch, heads, seq,
dim] operands, grouped-query heads, boolean or additive masks, causal masking, KV cache,
softcap).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import shapes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.patterns import only_use, producer, scalar
from tensorbridge.ops.schema import Attr, op, set_decomposition, set_recovery

F = "transformer"


def _softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return e / np.where(s == 0, 1, s)


def _heads(x, n):
    """[B, S, n*D] -> [B, n, S, D] (4-D input is returned as is)."""
    if x.ndim == 4:
        return x
    b, s, hd = x.shape
    return x.reshape(b, s, n, hd // n).transpose(0, 2, 1, 3)


def _attention_infer(inputs, attrs):
    q, v = inputs[0], inputs[2]
    if q.shape is None or v.shape is None:
        return [(q.dtype, None)]
    if len(q.shape) == 4:
        return [(q.dtype, (*q.shape[:3], v.shape[3]))]
    heads, kv_heads = attrs.get("q_num_heads"), attrs.get("kv_num_heads")
    dv = v.shape[2] // kv_heads if isinstance(v.shape[2], int) and kv_heads else None
    return [(q.dtype, (q.shape[0], q.shape[1], heads * dv if heads and dv else None))]


def hidden_score(dtype) -> float:
    """The finite score Keras's and JAX's attention give a key a boolean mask hides: added to any score it rounds
    to itself, so hidden keys get no weight, and a query that sees no key averages every value (where the op's
    -inf gives zeros)."""
    return -0.7 * float(np.finfo(dtype).max)


def may_hide_whole_rows(mask) -> bool:
    """Whether an Attention mask value (bool: keep; float: added, -inf hides) may hide every key of some query,
    whose output is then 0 (frameworks' attention averages every value there): unknown unless it is a constant."""
    if mask.const is None:
        return True
    keep = mask.const if mask.dtype == np.bool_ else np.isfinite(mask.const)
    return not np.all(np.any(keep, axis=-1))


@op("Attention", inputs="Q K V attn_mask? past_key? past_value? nonpad_kv_seqlen?", infer=_attention_infer,
    outputs="Y present_key? present_value? qk_matmul_output?", family=F, layout=TERMINATE,
    attrs={"is_causal": Attr("int", 0), "kv_num_heads": Attr("int", None), "q_num_heads": Attr("int", None),
           "qk_matmul_output_mode": Attr("int", 0), "scale": Attr("float", None),
           "softcap": Attr("float", 0.0), "softmax_precision": Attr("int", None)},
    doc="Scaled dot-product attention. Equivalents: F.scaled_dot_product_attention, nn.MultiheadAttention core, keras MultiHeadAttention core.")
def attention(Q, K, V, attn_mask=None, past_key=None, past_value=None, nonpad_kv_seqlen=None, *,
              is_causal, kv_num_heads, q_num_heads, qk_matmul_output_mode, scale, softcap,
              softmax_precision):
    dt = Q.dtype
    q = _heads(Q.astype(np.float64), q_num_heads)
    k = _heads(K.astype(np.float64), kv_num_heads)
    v = _heads(V.astype(np.float64), kv_num_heads)
    if past_key is not None:
        k = np.concatenate([past_key.astype(np.float64), k], axis=2)
    if past_value is not None:
        v = np.concatenate([past_value.astype(np.float64), v], axis=2)
    present_k, present_v = k, v
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk:
        k = np.repeat(k, hq // hk, axis=1)
        v = np.repeat(v, hq // hk, axis=1)
    sc = scale if scale is not None else 1.0 / np.sqrt(q.shape[-1])
    raw = (q * np.sqrt(sc)) @ (np.swapaxes(k, -1, -2) * np.sqrt(sc))
    capped = softcap * np.tanh(raw / softcap) if softcap and softcap > 0 else raw  # before the masks: -inf stays
    s_q, s_kv = raw.shape[-2], raw.shape[-1]
    bias = np.zeros(raw.shape[-2:], np.float64)
    if is_causal:  # bottom-right aligned: query i sees keys up to i + the cache's (or the keys' own) excess
        offset = past_key.shape[2] if past_key is not None else \
            (nonpad_kv_seqlen.reshape(-1, 1, 1, 1) - s_q if nonpad_kv_seqlen is not None else 0)
        bias = np.where(np.arange(s_kv)[None, :] <= np.arange(s_q)[:, None] + offset, 0.0, -np.inf)
    if attn_mask is not None:
        m = attn_mask
        if m.shape[-1] < s_kv:
            pad = [(0, 0)] * (m.ndim - 1) + [(0, s_kv - m.shape[-1])]
            m = np.pad(m, pad, constant_values=False if m.dtype == bool else -np.inf)
        bias = bias + (np.where(m, 0.0, -np.inf) if m.dtype == bool else m.astype(np.float64))
    if nonpad_kv_seqlen is not None:
        keep = np.arange(s_kv)[None, :] < nonpad_kv_seqlen.reshape(-1, 1)
        bias = bias + np.where(keep, 0.0, -np.inf)[:, None, None, :]
    biased = capped + bias
    closed = np.isneginf(np.max(np.broadcast_to(bias, biased.shape), axis=-1, keepdims=True))
    probs = np.where(closed, 0.0, _softmax(biased))  # a query the masks hide every key from attends to nothing
    y = probs @ v
    mode_out = {0: raw, 1: capped, 2: biased, 3: probs}[qk_matmul_output_mode]
    if Q.ndim == 3:
        b, h, s, d = y.shape
        y = y.transpose(0, 2, 1, 3).reshape(b, s, h * d)
    kd = (past_key.dtype if past_key is not None else K.dtype)
    return (y.astype(dt), present_k.astype(kd), present_v.astype(kd), mode_out.astype(dt))


@op("RotaryEmbedding", inputs="X cos_cache sin_cache position_ids?", family=F, layout=TERMINATE,
    attrs={"interleaved": Attr("int", 0), "num_heads": Attr("int", None),
           "rotary_embedding_dim": Attr("int", 0)},
    doc="Rotary position embedding (RoPE). Equivalents: transformers apply_rotary_pos_emb.")
def rotary_embedding(X, cos_cache, sin_cache, position_ids=None, *, interleaved, num_heads,
                     rotary_embedding_dim):
    if X.ndim == 4:
        x = X.transpose(0, 2, 1, 3)  # B, S, H, D
    else:
        b, s, hd = X.shape
        x = X.reshape(b, s, num_heads, hd // num_heads)
    d = x.shape[-1]
    rd = rotary_embedding_dim or d
    rot, rest = x[..., :rd], x[..., rd:]
    if position_ids is not None:
        cos, sin = cos_cache[position_ids], sin_cache[position_ids]
    else:
        cos, sin = cos_cache, sin_cache
    cos, sin = cos[..., :rd // 2][:, :, None, :], sin[..., :rd // 2][:, :, None, :]
    if interleaved:
        x1, x2 = rot[..., 0::2], rot[..., 1::2]
    else:
        x1, x2 = rot[..., :rd // 2], rot[..., rd // 2:]
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if interleaved:
        out = np.stack([real, imag], axis=-1).reshape(rot.shape)
    else:
        out = np.concatenate([real, imag], axis=-1)
    y = np.concatenate([out, rest], axis=-1).astype(X.dtype)
    return y.transpose(0, 2, 1, 3) if X.ndim == 4 else y.reshape(X.shape)


def _decompose_rotary(graph, node) -> bool:
    """The pairs of the rotated part turn by the angle whose cosine and sine the caches hold (x1·cos - x2·sin,
    x1·sin + x2·cos; pairs are the two halves, or neighbours when interleaved), the rest passes through. The
    caches are gathered at the position ids when given; 3-D input is split into its heads and merged back."""
    x, cos, sin = node.inputs[:3]
    positions = node.input(3)
    a = node.attrs
    rank = len(x.shape) if x.shape is not None else 0
    heads = a.get("num_heads")
    if rank not in (3, 4) or not isinstance(x.shape[-1], int) or (rank == 3 and not heads) \
            or cos.shape is None or not isinstance(cos.shape[-1], int):
        return False
    head = x.shape[-1] if rank == 4 else x.shape[-1] // heads
    rd = a.get("rotary_embedding_dim") or head
    b = Builder.replacing(node)

    def part(v, lo, hi, step=1):
        return b.op("Slice", v, b.named([lo], "start"), b.named([hi], "end"), b.named([-1], "axis"), b.named([step], "step"))

    x4 = b.op("Reshape", x, b.named([0, 0, heads, head], "heads")) if rank == 3 else x  # [B, S, H, D] / [B, H, S, D]
    tables = []
    for table in (cos, sin):
        if positions is not None:  # [max_position, rd/2] at [B, S] positions
            table = b.op("Gather", table, positions, axis=0)
        if cos.shape[-1] > rd // 2:
            table = part(table, 0, rd // 2)
        tables.append(b.op("Unsqueeze", table, b.named([2 if rank == 3 else 1], "heads_axis")))
    c, s_ = tables
    if a.get("interleaved"):
        x1, x2 = part(x4, 0, rd, 2), part(x4, 1, rd, 2)
    else:
        x1, x2 = part(x4, 0, rd // 2), part(x4, rd // 2, rd)
    real = b.op("Sub", b.op("Mul", x1, c), b.op("Mul", x2, s_))
    imag = b.op("Add", b.op("Mul", x1, s_), b.op("Mul", x2, c))
    if a.get("interleaved"):  # (real, imag) pairs back into neighbouring places
        pair_axis = b.named([-1], "pair_axis")
        pairs = b.op("Concat", b.op("Unsqueeze", real, pair_axis), b.op("Unsqueeze", imag, pair_axis), axis=-1)
        turned = [b.op("Reshape", pairs, b.named([0, 0, 0, rd], "pairs"))]
    else:
        turned = [real, imag]
    rest = [part(x4, rd, head)] if rd < head else []
    y = b.op("Concat", *turned, *rest, axis=-1)
    if rank == 3:
        y = b.op("Reshape", y, b.named([0, 0, heads * head], "merged"))
    graph.replace_node(node, [y])
    return True


def _half_of(v, x, head: int):
    """0 or 1 when `v` is the first or second half of `x`'s last axis (a Slice), else None."""
    sl = producer(v, "Slice")
    if sl is None or sl.inputs[0] is not x or len(sl.inputs) < 4 or any(
            sl.inputs[i].const is None for i in (1, 2, 3)) or (sl.input(4) is not None and scalar(sl.inputs[4]) != 1):
        return None
    start, end, axis = (int(np.asarray(sl.inputs[i].const).ravel()[0]) for i in (1, 2, 3))
    if axis not in (-1, 3) or np.asarray(sl.inputs[1].const).size != 1:
        return None
    end = min(end, head)
    return {(0, head // 2): 0, (head // 2, head): 1}.get((start, end))


def _rotate_half_of(v):
    """x when `v` = concat(-x[..., D/2:], x[..., :D/2]) (transformers' rotate_half), else None."""
    cat = producer(v, "Concat")
    if cat is None or len(cat.inputs) != 2 or cat.attrs.get("axis") not in (-1, 3):
        return None
    neg = producer(cat.inputs[0], "Neg")
    x = producer(neg.inputs[0], "Slice").inputs[0] if neg is not None and producer(neg.inputs[0], "Slice") else None
    if x is None or x.shape is None or len(x.shape) != 4 or not isinstance(x.shape[-1], int) or x.shape[-1] % 2:
        return None
    head = x.shape[-1]
    return x if _half_of(neg.inputs[0], x, head) == 1 and _half_of(cat.inputs[1], x, head) == 0 else None


def _half_cache(table, x) -> np.ndarray | None:
    """A constant [1, 1, S, D] (or [S, D]) cos/sin table whose halves are equal -> the [B, S, D/2] cache the op
    takes, else None."""
    if table is None or table.const is None or x.shape is None or not isinstance(x.shape[0], int):
        return None
    t = np.asarray(table.const)
    t = t.reshape(t.shape[-2:]) if t.ndim >= 2 and all(d == 1 for d in t.shape[:-2]) else None
    half = x.shape[-1] // 2
    if t is None or t.shape != (x.shape[2], x.shape[3]) or not np.array_equal(t[:, :half], t[:, half:]):
        return None
    return np.ascontiguousarray(np.broadcast_to(t[:, :half], (x.shape[0], *t[:, :half].shape)))


def _recover_rotary(graph, node) -> bool:
    """x·cos + rotate_half(x)·sin with constant cos/sin tables -> RotaryEmbedding(x, cos, sin)."""
    terms = [producer(v, "Mul") for v in node.inputs]
    if any(t is None for t in terms):
        return False
    for plain, turned in (terms, terms[::-1]):
        for x, cos in (plain.inputs, plain.inputs[::-1]):
            for rotated, sin in (turned.inputs, turned.inputs[::-1]):
                if _rotate_half_of(rotated) is not x:
                    continue
                caches = [_half_cache(cos, x), _half_cache(sin, x)]
                if any(c is None for c in caches) or cos.learned or sin.learned or x.dtype != node.outputs[0].dtype:
                    continue  # a trained table is a parameter, which the op's caches are not
                b = Builder.replacing(node)
                cos_v, sin_v = (b.const(c.astype(x.dtype), b.name(n)) for c, n in zip(caches, ("cos", "sin")))
                for v, src in ((cos_v, cos), (sin_v, sin)):
                    v.meta["role"] = src.meta.get("role", "literal")
                graph.replace_node(node, [b.op("RotaryEmbedding", x, cos_v, sin_v, suffix="rotary")])
                return True
    return False


set_decomposition("RotaryEmbedding", _decompose_rotary)
set_recovery("RotaryEmbedding", "Add", _recover_rotary)


def sdpa_blocker(node) -> str | None:
    """Why an Attention node is not the plain form the frameworks' attention functions take (4-D operands, no KV
    cache, key lengths or softcap, one output, a mask as long as the keys), or None; the rest is decomposed."""
    q, k, v = node.inputs[:3]
    mask = node.input(3)
    if any(node.input(i) is not None for i in (4, 5, 6)) or len(node.outputs) > 1 or node.attrs.get("softcap"):
        return "Attention with a KV cache, key lengths, softcap or extra outputs"
    if any(t.shape is None or len(t.shape) != 4 for t in (q, k, v)):
        return "Attention on 3-D inputs"
    if mask is not None and (mask.shape is None or mask.shape[-1] != k.shape[2]):
        return "an attention mask shorter than the keys"
    return None


def _attention_shapes_known(node) -> bool:
    """What the decomposition needs fixed: ranks, head counts and sizes, and the sequence lengths a causal or
    padded mask is built for."""
    q, k, v = node.inputs[:3]
    a = node.attrs
    if any(x.shape is None or len(x.shape) != len(q.shape) or len(x.shape) not in (3, 4) for x in (q, k, v)):
        return False
    if len(q.shape) == 3:
        heads = (a.get("q_num_heads"), a.get("kv_num_heads"))
        if not shapes.is_static((*heads, q.shape[2], k.shape[2], v.shape[2])) or any(h <= 0 for h in heads):
            return False
        q_heads, kv_heads = heads
    else:
        q_heads, kv_heads = q.shape[1], k.shape[1]
        if not shapes.is_static((q_heads, kv_heads, k.shape[3], v.shape[3])) or kv_heads != v.shape[1]:
            return False
    past = node.input(4)
    needs_lengths = a.get("is_causal") or node.input(3) is not None
    lengths = (q.shape[-2], k.shape[-2], past.shape[2] if past is not None and past.shape else 0)  # 3-D or 4-D
    return q_heads % kv_heads == 0 and (not needs_lengths or shapes.is_static(lengths))


def _split_heads(b, x, heads: int):
    """[B, S, heads*D] -> [B, heads, S, D]."""
    split = b.op("Reshape", x, b.named([0, 0, heads, -1], "heads", np.int64))
    return b.op("Transpose", split, perm=[0, 2, 1, 3])


def _decompose_attention(graph, node):
    """softmax(Q K^T * scale + masks) V in plain ops, for every configuration of the op whose shapes are known:
    3-D operands split into heads and merged back, a KV cache concatenated in front of the new keys and values
    (the present outputs), grouped-query heads repeated, softcap, causal, boolean or additive masks (a shorter
    mask padded as hiding the rest), per-batch key lengths, and the raw, capped, masked or softmax scores as the
    fourth output. A row the masks close entirely gets zero weights (as the op, and PyTorch's SDPA, define it)."""
    if not _attention_shapes_known(node):
        return False
    q, k, v = node.inputs[:3]
    mask, past_k, past_v, kv_lens = (node.input(i) for i in (3, 4, 5, 6))
    a = node.attrs
    three_d = len(q.shape) == 3
    dt = q.dtype or np.dtype(np.float32)
    b = Builder.replacing(node)
    emit = b.op

    def const(value, name, dtype=dt):
        return b.const(np.asarray(value, dtype), b.name(name))

    if three_d:
        q = _split_heads(b, q, a["q_num_heads"])
        k, v = (_split_heads(b, t, a["kv_num_heads"]) for t in (k, v))
    if past_k is not None:
        k = emit("Concat", past_k, k, axis=2)
    if past_v is not None:
        v = emit("Concat", past_v, v, axis=2)
    present = [k, v]
    if q.shape[1] != k.shape[1]:  # grouped-query heads: each key/value head serves q_heads / kv_heads queries
        k, v = (_repeat_heads(b, t, q.shape[1] // k.shape[1]) for t in (k, v))
    head = q.shape[-1]
    scale = a.get("scale") or 1.0 / np.sqrt(head)
    raw = emit("Mul", emit("MatMul", q, emit("Transpose", k, perm=[0, 1, 3, 2])), const(scale, "scale"))
    scores = raw
    if a.get("softcap"):  # before the masks, which so stay -inf
        cap = const(a["softcap"], "softcap")
        scores = emit("Mul", emit("Tanh", emit("Div", scores, cap)), cap)
    capped = scores
    s_q, s_kv = q.shape[2], k.shape[2]
    closable = mask is not None or kv_lens is not None  # masks that may hide a query's every key
    if a.get("is_causal"):  # bottom-right aligned: query i sees keys up to i + the cache's (or the keys') excess
        if past_k is None and kv_lens is not None:
            excess = emit("Sub", emit("Unsqueeze", kv_lens, const([1, 2, 3], "batch_axes", np.int64)),
                          const(s_q, "queries", kv_lens.dtype))
            reach = emit("Add", const(np.arange(s_q)[:, None], "query_index", kv_lens.dtype), excess)
            seen = emit("LessOrEqual", const(np.arange(s_kv)[None, :], "key_index", kv_lens.dtype), reach)
            scores = emit("Add", scores, emit("Where", seen, const(0.0, "zero"), const(-np.inf, "neginf")))
        else:
            past = past_k.shape[2] if past_k is not None else 0
            open_ = np.arange(s_kv)[None, :] <= np.arange(s_q)[:, None] + past
            scores = emit("Add", scores, const(np.where(open_, 0.0, -np.inf), "causal"))
    if mask is not None:
        if mask.dtype == np.bool_:
            mask = emit("Where", mask, const(0.0, "zero"), const(-np.inf, "neginf"))
        if mask.shape is not None and isinstance(mask.shape[-1], int) and mask.shape[-1] < s_kv:  # keys past it are hidden
            pads = [0] * (2 * len(mask.shape))
            pads[2 * len(mask.shape) - 1] = s_kv - mask.shape[-1]
            mask = emit("Pad", mask, const(pads, "mask_pads", np.int64), const(-np.inf, "hidden"))
        scores = emit("Add", scores, mask)
    if kv_lens is not None:  # [B] key lengths: keys at or past a batch's length are hidden
        lens = emit("Unsqueeze", kv_lens, const([1], "lens_axis", np.int64))
        keep = emit("Less", const(np.arange(s_kv)[None, :], "key_index", kv_lens.dtype), lens)
        hidden = emit("Where", keep, const(0.0, "zero"), const(-np.inf, "neginf"))
        scores = emit("Add", scores, emit("Unsqueeze", hidden, const([1, 2], "batch_axes", np.int64)))
    biased = scores
    probs = emit("Softmax", scores, axis=-1)
    if closable:  # a closed row attends to nothing (the op's zeros, not Softmax's NaN)
        top = emit("ReduceMax", scores, const([-1], "last", np.int64), keepdims=1)
        closed = emit("Equal", top, const(-np.inf, "closed"))
        probs = emit("Where", closed, const(0.0, "nothing"), probs)
    y = emit("MatMul", probs, v)
    if three_d:
        merged = emit("Transpose", y, perm=[0, 2, 1, 3])
        y = emit("Reshape", merged, const([0, 0, -1], "merged", np.int64))
    scores_out = {0: raw, 1: capped, 2: biased, 3: probs}[a.get("qk_matmul_output_mode") or 0]
    graph.replace_node(node, [y, *present, scores_out][:len(node.outputs)])
    return True


set_decomposition("Attention", _decompose_attention)


def _repeat_heads(b, t, n: int):
    """[B, H, S, D] -> [B, H*n, S, D], each head n times in a row."""
    grown = b.op("Expand", b.op("Unsqueeze", t, b.const(np.array([2], np.int64), b.name("group_axis"))),
                 b.const(np.array([1, 1, n, 1, 1], np.int64), b.name("group")))
    return b.op("Reshape", grown, b.const(np.array([0, t.shape[1] * n, -1, t.shape[3]], np.int64), b.name("heads")))


def _shared_kv_heads(graph, v):
    """The [B, Hkv, S, D] tensor `v` repeats when it is Reshape(Expand(Unsqueeze(kv, 2))) to [B, Hkv*n, S, D]
    (transformers' repeat_kv), else None."""
    reshape = only_use(v, ("Reshape",), graph)
    expand = only_use(reshape.inputs[0], ("Expand",), graph) if reshape else None
    unsqueeze = only_use(expand.inputs[0], ("Unsqueeze",), graph) if expand else None
    if unsqueeze is None or unsqueeze.input(1) is None or unsqueeze.inputs[1].const is None:
        return None
    kv = unsqueeze.inputs[0]
    axes = np.asarray(unsqueeze.inputs[1].const).ravel().tolist()
    if kv.shape is None or len(kv.shape) != 4 or v.shape is None or axes not in ([2], [-3]):
        return None
    big, small = expand.outputs[0].shape, kv.shape
    if big is None or len(big) != 5 or big[:2] != small[:2] or big[3:] != small[2:] or not isinstance(big[2], int):
        return None
    return kv if v.shape == (small[0], small[1] * big[2], *small[2:]) else None


def _recover_grouped_query(graph, node) -> bool:
    """Attention whose keys and values are repeated to the query's heads -> the same Attention on the shared
    heads (grouped-query attention: F.scaled_dot_product_attention(enable_gqa=True), ONNX kv_num_heads)."""
    shared = [_shared_kv_heads(graph, node.inputs[i]) for i in (1, 2)]
    if any(kv is None for kv in shared) or shared[0].shape[1] != shared[1].shape[1]:
        return False
    node.set_input(1, shared[0])
    node.set_input(2, shared[1])
    return True


def _recover_causal(graph, node) -> bool:
    """A constant mask that is the causal triangle (queries and keys aligned) -> is_causal; one that masks
    nothing -> no mask."""
    mask = node.input(3)
    if mask is None or mask.const is None or node.attrs.get("is_causal") or len(node.inputs) > 4:
        return False
    m = np.asarray(mask.const)
    open_ = m if m.dtype == np.bool_ else m == 0
    if m.dtype != np.bool_ and not np.all((m == 0) | np.isneginf(m)):
        return False
    if not open_.all():
        s_q, s_k = m.shape[-2:] if m.ndim >= 2 else (None, None)
        if s_q != s_k or not np.array_equal(np.broadcast_to(np.tril(np.ones((s_q, s_k), bool)), open_.shape), open_):
            return False
        node.attrs["is_causal"] = 1
    node.set_inputs(node.inputs[:3])
    return True


set_recovery("Attention", "Attention", _recover_grouped_query)
set_recovery("Attention", "Attention", _recover_causal)
