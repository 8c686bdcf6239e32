"""Sequence-model ops: Attention, RotaryEmbedding, LSTM, GRU, RNN.

Attention follows ONNX `Attention` (3-D [batch, seq, heads*dim] or 4-D [batch, heads, seq,
dim] operands, grouped-query heads, boolean or additive masks, causal masking, KV cache,
softcap). The recurrent ops follow ONNX gate orders (LSTM: i o f c, GRU: z r h).
"""

from __future__ import annotations

import numpy as np

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
    qk = (q * np.sqrt(sc)) @ (np.swapaxes(k, -1, -2) * np.sqrt(sc))
    raw = qk
    s_q, s_kv = qk.shape[-2], qk.shape[-1]
    bias = np.zeros(qk.shape[-2:], np.float64)
    if is_causal:  # aligned so that query i sees the past plus keys up to its own position
        past = past_key.shape[2] if past_key is not None else 0
        allowed = np.arange(s_kv)[None, :] <= np.arange(s_q)[:, None] + past
        bias = np.where(allowed, 0.0, -np.inf)
    if attn_mask is not None:
        m = attn_mask
        if m.shape[-1] < s_kv:
            pad = [(0, 0)] * (m.ndim - 1) + [(0, s_kv - m.shape[-1])]
            m = np.pad(m, pad, constant_values=False if m.dtype == bool else -np.inf)
        bias = bias + (np.where(m, 0.0, -np.inf) if m.dtype == bool else m.astype(np.float64))
    if nonpad_kv_seqlen is not None:
        keep = np.arange(s_kv)[None, :] < nonpad_kv_seqlen.reshape(-1, 1)
        bias = bias + np.where(keep, 0.0, -np.inf)[:, None, None, :]
    qk = qk + bias
    masked = qk
    if softcap and softcap > 0:
        qk = softcap * np.tanh(qk / softcap)
    capped = qk
    probs = _softmax(qk)
    y = probs @ v
    mode_out = {0: raw, 1: masked, 2: capped, 3: probs}[qk_matmul_output_mode]
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
    """4-D, non-interleaved, without position ids: the two halves of the rotated part turn by the angle whose
    cosine and sine the caches hold (x1·cos - x2·sin, x1·sin + x2·cos), the rest passes through."""
    x, cos, sin = node.inputs[:3]
    rd = node.attrs.get("rotary_embedding_dim") or (x.shape[-1] if x.shape else None)
    if node.input(3) is not None or node.attrs.get("interleaved") or x.shape is None or len(x.shape) != 4 \
            or not isinstance(x.shape[-1], int) or not isinstance(rd, int):
        return False
    b = Builder.replacing(node)

    def part(lo, hi):
        ints = [b.const(np.array([v], np.int64), b.name(n)) for v, n in ((lo, "start"), (hi, "end"), (3, "axis"))]
        return b.op("Slice", x, *ints)

    one = b.const(np.array([1], np.int64), b.name("heads_axis"))
    c, s = b.op("Unsqueeze", cos, one), b.op("Unsqueeze", sin, one)  # [B, S, rd/2] -> [B, 1, S, rd/2]
    x1, x2 = part(0, rd // 2), part(rd // 2, rd)
    turned = [b.op("Sub", b.op("Mul", x1, c), b.op("Mul", x2, s)), b.op("Add", b.op("Mul", x1, s), b.op("Mul", x2, c))]
    rest = [part(rd, x.shape[-1])] if rd < x.shape[-1] else []
    graph.replace_node(node, [b.op("Concat", *turned, *rest, axis=-1)])
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


# -- recurrent cells ----------------------------------------------------------------------------
def _activation(name, alpha, beta):
    n = name.lower()
    table = {
        "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh,
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x > alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.log1p(np.exp(x)),
    }
    return table[n]


_DEFAULT_ALPHA = {"leakyrelu": 0.01, "thresholdedrelu": 1.0, "hardsigmoid": 0.2, "elu": 1.0}
_DEFAULT_BETA = {"hardsigmoid": 0.5}


def _activations(names, alphas, betas, per_dir, num_dir):
    out = []
    ai = bi = 0
    for name in names:
        n = name.lower()
        a = alphas[ai] if alphas and ai < len(alphas) else _DEFAULT_ALPHA.get(n, 1.0)
        b = betas[bi] if betas and bi < len(betas) else _DEFAULT_BETA.get(n, 0.0)
        if n in ("affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"):
            ai += 1
        if n in ("affine", "scaledtanh", "hardsigmoid"):
            bi += 1
        out.append(_activation(name, a, b))
    if len(out) < per_dir * num_dir:
        out = out * num_dir
    return [out[d * per_dir:(d + 1) * per_dir] for d in range(num_dir)]


def _rnn_infer(inputs, attrs):
    x, w = inputs[0], inputs[1]
    if x.shape is None or w.shape is None:
        return [(x.dtype, None)] * 3
    dirs = w.shape[0]
    hidden = attrs.get("hidden_size")
    if hidden is None and isinstance(w.shape[1], int):
        hidden = w.shape[1] // {"LSTM": 4, "GRU": 3, "RNN": 1}[attrs["_op"]]
    if attrs.get("layout"):
        batch, seq = x.shape[0], x.shape[1]
        return [(x.dtype, (batch, seq, dirs, hidden)), (x.dtype, (batch, dirs, hidden)), (x.dtype, (batch, dirs, hidden))]
    seq, batch = x.shape[0], x.shape[1]
    return [(x.dtype, (seq, dirs, batch, hidden)), (x.dtype, (dirs, batch, hidden)), (x.dtype, (dirs, batch, hidden))]


def _rnn_rule(op_name):
    def rule(inputs, attrs):
        return _rnn_infer(inputs, {**attrs, "_op": op_name})
    return rule


_RNN_ATTRS = {"activation_alpha": Attr("floats", None), "activation_beta": Attr("floats", None),
              "clip": Attr("float", None), "direction": Attr("str", "forward"),
              "hidden_size": Attr("int", None), "layout": Attr("int", 0)}


def _run_recurrent(X, sequence_lens, initial, direction, layout, step):
    """Shared driver: run `step(d, x_t, state) -> state` over time for each direction."""
    if layout:
        X = X.transpose(1, 0, 2)
        initial = [None if s is None else s.transpose(1, 0, 2) for s in initial]
    seq, batch = X.shape[:2]
    lens = np.full(batch, seq) if sequence_lens is None else sequence_lens.astype(np.int64)
    dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    ys, finals = [], []
    for d, rev in enumerate(dirs):
        state = [s[d] for s in initial]
        y = np.zeros((seq, batch, state[0].shape[-1]), np.float64)
        for t_i in range(seq):
            t = seq - 1 - t_i if rev else t_i
            active = np.zeros(batch, bool)
            if rev:
                # reversed within each sequence's own length
                tt = lens - 1 - t_i
                valid = tt >= 0
                xt = X[np.clip(tt, 0, seq - 1), np.arange(batch)]
                active = valid
            else:
                valid = t < lens
                xt = X[t]
                active = valid
            new = step(d, xt, state)
            state = [np.where(active[:, None], n, s) for n, s in zip(new, state)]
            if rev:
                pos = np.clip(lens - 1 - t_i, 0, seq - 1)
                y[pos[active], np.arange(batch)[active]] = state[0][active]
            else:
                y[t, active] = state[0][active]
        ys.append(y)
        finals.append(state)
    Y = np.stack(ys, axis=1)  # seq, dirs, batch, hidden
    outs = [np.stack([f[i] for f in finals]) for i in range(len(finals[0]))]
    if layout:
        Y = Y.transpose(2, 0, 1, 3)
        outs = [o.transpose(1, 0, 2) for o in outs]
    return Y, outs


def _init_state(h, num_dir, batch, hidden, layout):
    if h is not None:
        return h.astype(np.float64)
    return np.zeros((batch, num_dir, hidden) if layout else (num_dir, batch, hidden))


def _clipf(c):
    return (lambda v: np.clip(v, -c, c)) if c else (lambda v: v)


@op("LSTM", inputs="X W R B? sequence_lens? initial_h? initial_c? P?", outputs="Y? Y_h? Y_c?", family=F,
    layout=TERMINATE, infer=_rnn_rule("LSTM"),
    attrs={**_RNN_ATTRS, "activations": Attr("strs", None), "input_forget": Attr("int", 0)},
    doc="Long short-term memory layer (gates i, o, f, c). Equivalents: nn.LSTM, keras LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM.")
def lstm(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha,
         activation_beta, clip, direction, hidden_size, layout, activations, input_forget):
    num_dir, h4, _ = W.shape
    hid = h4 // 4
    batch = X.shape[0 if layout else 1]
    acts = _activations(activations or ["Sigmoid", "Tanh", "Tanh"], activation_alpha, activation_beta, 3, num_dir)
    B = np.zeros((num_dir, 8 * hid)) if B is None else B.astype(np.float64)
    P = np.zeros((num_dir, 3 * hid)) if P is None else P.astype(np.float64)
    cl = _clipf(clip)

    def step(d, x, state):
        h, c = state
        f_, g_, h_ = acts[d]
        gates = x @ W[d].T.astype(np.float64) + h @ R[d].T.astype(np.float64) + B[d, :4 * hid] + B[d, 4 * hid:]
        i, o, f, cc = np.split(gates, 4, axis=-1)
        pi, po, pf = np.split(P[d], 3)
        i = f_(cl(i + pi * c))
        f = (1 - i) if input_forget else f_(cl(f + pf * c))
        cc = g_(cl(cc))
        c_new = f * c + i * cc
        o = f_(cl(o + po * c_new))
        return [o * h_(c_new), c_new]

    h0 = _init_state(initial_h, num_dir, batch, hid, layout)
    c0 = _init_state(initial_c, num_dir, batch, hid, layout)
    Y, (yh, yc) = _run_recurrent(X.astype(np.float64), sequence_lens, [h0, c0], direction, layout, step)
    return Y.astype(X.dtype), yh.astype(X.dtype), yc.astype(X.dtype)


@op("GRU", inputs="X W R B? sequence_lens? initial_h?", outputs="Y? Y_h?", family=F, layout=TERMINATE,
    infer=_rnn_rule("GRU"),
    attrs={**_RNN_ATTRS, "activations": Attr("strs", None), "linear_before_reset": Attr("int", 0)},
    doc="Gated recurrent unit layer (gates z, r, h). Equivalents: nn.GRU (linear_before_reset=1), keras GRU.")
def gru(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha, activation_beta, clip,
        direction, hidden_size, layout, activations, linear_before_reset):
    num_dir, h3, _ = W.shape
    hid = h3 // 3
    batch = X.shape[0 if layout else 1]
    acts = _activations(activations or ["Sigmoid", "Tanh"], activation_alpha, activation_beta, 2, num_dir)
    B = np.zeros((num_dir, 6 * hid)) if B is None else B.astype(np.float64)
    cl = _clipf(clip)

    def step(d, x, state):
        (h,) = state
        f_, g_ = acts[d]
        w, r = W[d].astype(np.float64), R[d].astype(np.float64)
        wb, rb = B[d, :3 * hid], B[d, 3 * hid:]
        xw = x @ w.T + wb
        z = f_(cl(xw[:, :hid] + h @ r[:hid].T + rb[:hid]))
        rr = f_(cl(xw[:, hid:2 * hid] + h @ r[hid:2 * hid].T + rb[hid:2 * hid]))
        if linear_before_reset:
            hh = g_(cl(xw[:, 2 * hid:] + rr * (h @ r[2 * hid:].T + rb[2 * hid:])))
        else:
            hh = g_(cl(xw[:, 2 * hid:] + (rr * h) @ r[2 * hid:].T + rb[2 * hid:]))
        return [(1 - z) * hh + z * h]

    h0 = _init_state(initial_h, num_dir, batch, hid, layout)
    Y, (yh,) = _run_recurrent(X.astype(np.float64), sequence_lens, [h0], direction, layout, step)
    return Y.astype(X.dtype), yh.astype(X.dtype)


@op("RNN", inputs="X W R B? sequence_lens? initial_h?", outputs="Y? Y_h?", family=F, layout=TERMINATE,
    infer=_rnn_rule("RNN"),
    attrs={**_RNN_ATTRS, "activations": Attr("strs", None)},
    doc="Simple recurrent layer. Equivalents: nn.RNN, keras SimpleRNN.")
def rnn(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha, activation_beta, clip,
        direction, hidden_size, layout, activations):
    num_dir, hid, _ = W.shape
    batch = X.shape[0 if layout else 1]
    acts = _activations(activations or ["Tanh"], activation_alpha, activation_beta, 1, num_dir)
    B = np.zeros((num_dir, 2 * hid)) if B is None else B.astype(np.float64)
    cl = _clipf(clip)

    def step(d, x, state):
        (h,) = state
        return [acts[d][0](cl(x @ W[d].T + h @ R[d].T + B[d, :hid] + B[d, hid:]))]

    h0 = _init_state(initial_h, num_dir, batch, hid, layout)
    Y, (yh,) = _run_recurrent(X.astype(np.float64), sequence_lens, [h0], direction, layout, step)
    return Y.astype(X.dtype), yh.astype(X.dtype)


def _decompose_attention(graph, node):
    """4-D attention without cache, softcap or extra outputs: softmax(Q K^T * scale + mask) V, where a row the
    mask closes entirely gets zero weights (as the op, and PyTorch's SDPA, define it)."""
    q, k, v = node.inputs[:3]
    mask = node.input(3)
    a = node.attrs
    if any(node.input(i) is not None for i in (4, 5, 6)) or len(node.outputs) > 1 or a.get("softcap") or \
            any(x.shape is None or len(x.shape) != 4 for x in (q, k, v)) or k.shape[1] != v.shape[1] or \
            not all(isinstance(d, int) for d in (q.shape[1], k.shape[1], k.shape[3], v.shape[3])) or \
            q.shape[1] % k.shape[1]:
        return False
    head = q.shape[-1]
    if a.get("is_causal") and not all(isinstance(d, int) for d in (q.shape[2], k.shape[2])):
        return False
    dt = q.dtype or np.dtype(np.float32)
    scale = a.get("scale") or 1.0 / np.sqrt(head)

    b = Builder.replacing(node)
    emit = b.op
    if q.shape[1] != k.shape[1]:  # grouped-query heads: each key/value head serves q_heads / kv_heads queries
        k, v = (_repeat_heads(b, t, q.shape[1] // k.shape[1]) for t in (k, v))
    kt = emit("Transpose", k, perm=[0, 1, 3, 2])
    scores = emit("Mul", emit("MatMul", q, kt), b.const(np.array(scale, dt), b.name("scale")))
    if a.get("is_causal"):
        s_q, s_k = q.shape[2], k.shape[2]
        causal = np.where(np.arange(s_k)[None, :] <= np.arange(s_q)[:, None], 0.0, -np.inf).astype(dt)
        scores = emit("Add", scores, b.const(causal, b.name("causal")))
    if mask is not None:
        if mask.dtype == np.bool_:
            mask = emit("Where", mask, b.const(np.array(0.0, dt), b.name("zero")),
                        b.const(np.array(-np.inf, dt), b.name("neginf")))
        scores = emit("Add", scores, mask)
    probs = emit("Softmax", scores, axis=-1)
    if mask is not None:  # a row the mask closes entirely attends to nothing (the op's zeros, not Softmax's NaN)
        top = emit("ReduceMax", scores, b.const(np.array([-1], np.int64), b.name("last")), keepdims=1)
        closed = emit("Equal", top, b.const(np.array(-np.inf, dt), b.name("closed")))
        probs = emit("Where", closed, b.const(np.array(0.0, dt), b.name("nothing")), probs)
    y = emit("MatMul", probs, v)
    graph.replace_node(node, [y])
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


def plain_rnn_blocker(node, gru_reset: str) -> str | None:
    """Why an IR LSTM/GRU/RNN is not one the layer libraries hold (default activations, no sequence_lens, clip,
    peepholes, input_forget or batch-major layout, and a GRU with linear_before_reset; `gru_reset` says
    why the last matters), or None when it is."""
    a = node.attrs
    acts = [s.lower() for s in a.get("activations") or []]
    if node.op == "RNN":  # one nonlinearity for every direction
        defaults = acts[:1] if acts[:1] in (["tanh"], ["relu"]) else ["tanh"]
    else:
        defaults = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"]}[node.op]
    if acts != defaults * (len(acts) // len(defaults)) or node.input(4) is not None or a.get("clip") \
            or a.get("layout") or a.get("input_forget") or (node.op == "LSTM" and node.input(7) is not None):
        return f"{node.op} with custom activations, sequence_lens, clip, peepholes or batch-major layout"
    if node.op == "GRU" and not a.get("linear_before_reset"):
        return f"GRU with linear_before_reset=0 ({gru_reset})"
    return None
