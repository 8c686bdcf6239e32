"""Keras 3 <-> IR: attention and recurrent layers.

Each IR op's import converters (layers and `keras.ops` calls -> IR) and export writer (IR -> Keras
code) sit together.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand
from tensorbridge.errors import ModelError
from tensorbridge.ops.attention_layer import PROJECTIONS, in_out, layer_blocker, layer_weights
from tensorbridge.ops.recurrent import plain_rnn_blocker
from tensorbridge.ops.transformer import hidden_score, may_hide_whole_rows, sdpa_blocker
from tensorbridge.rules.ir_spellings import mask_over_keys
from tensorbridge.rules.keras.base import (
    R,
    keras_op,
    layer,
    operand_value,
    to_numpy,
)


@layer("AdditiveAttention", produces="Softmax")
def read_additive_attention(imp, layer, inputs, node):
    """keras.layers.AdditiveAttention([query, value(, key)]): Bahdanau scores sum(scale * tanh(q + k)) over the
    features, softmax over the keys, the values weighed by them. Masks and returned scores are refused."""
    kwargs = node.arguments.kwargs
    if any(kwargs.get(k) is not None and kwargs.get(k) is not False
           for k in ("mask", "return_attention_scores", "use_causal_mask")):
        raise ModelError(f"{layer.name}: AdditiveAttention with a mask, a causal mask or its scores returned "
                         "is not supported")
    query, value = inputs[0], inputs[1]
    key = inputs[2] if len(inputs) > 2 else value
    summed = imp.emit("Add", [imp.emit("Unsqueeze", [query, imp.const([-2], np.int64)], suffix="query"),
                              imp.emit("Unsqueeze", [key, imp.const([-3], np.int64)], suffix="key")], suffix="sum")
    energy = imp.emit("Tanh", [summed], suffix="energy")
    if layer.use_scale:
        energy = imp.emit("Mul", [energy, imp.weight("scale", to_numpy(layer.scale))], suffix="scaled")
    scores = imp.emit("ReduceSum", [energy, imp.const([-1], np.int64)], {"keepdims": 0}, suffix="scores")
    weights = imp.emit("Softmax", [scores], {"axis": -1}, suffix="weights")
    return imp.emit("MatMul", [weights, value])


@layer("MultiHeadAttention", produces="MultiHeadAttention")
def read_multi_head_attention(imp, layer, inputs, node):
    """keras.layers.MultiHeadAttention(query, value, key, attention_mask) -> one MultiHeadAttention."""
    kwargs = node.arguments.kwargs
    args = list(node.arguments.args)
    given = {"query": args[0] if args else kwargs.get("query"),
             "value": args[1] if len(args) > 1 else kwargs.get("value"),
             "key": args[2] if len(args) > 2 else kwargs.get("key"),
             "attention_mask": kwargs.get("attention_mask")}
    # by identity: the node's input tensors are ordered as Keras flattens the call (keywords sorted by name)
    tensors = {k: imp.operands(t) for k, t in given.items() if t is not None}
    query = tensors["query"]
    value = tensors.get("value", query)
    key = tensors.get("key", value)
    mask = tensors.get("attention_mask")
    dense = (layer._query_dense, layer._key_dense, layer._value_dense, layer._output_dense)
    weights, biases = [], []
    for tag, d in zip(PROJECTIONS, dense):
        weights.append(imp.weight(f"{tag}.kernel", in_out(to_numpy(d.kernel), tag)))
        biases.append(imp.weight(f"{tag}.bias", in_out(to_numpy(d.bias), tag)) if d.bias is not None else None)
    if mask is not None:  # [B, T, S] (True: attend), the same for every head
        if mask.dtype != np.bool_:
            mask = imp.emit("Cast", [mask], {"to": "bool"}, suffix="mask_bool")
        mask = mask_over_keys(imp, imp.emit("Unsqueeze", [mask, imp.const([1], np.int64)], suffix="mask"), key)
    ins = [query, key, value, *weights, *biases, mask]
    while ins[-1] is None:
        ins.pop()
    attrs = {"num_heads": int(layer.num_heads), "scale": 1.0 / float(np.sqrt(int(layer.key_dim)))}
    if mask is not None:  # Keras averages the values for a query its mask hides every key from
        attrs["empty_rows"] = "average"
    if kwargs.get("use_causal_mask"):
        attrs["is_causal"] = 1
    return imp.emit("MultiHeadAttention", ins, attrs)


def _layer_blocker(node) -> str | None:
    """What keras MultiHeadAttention cannot hold: it projects query and key to one width and takes one mask
    for every head."""
    weights, mask = node.inputs[3:7], node.input(11)
    blocker = layer_blocker(node)
    if blocker is None and weights[0].shape[1] != weights[1].shape[1]:
        return "query and key projections of different widths"
    if blocker is None and mask is not None and (mask.shape is None or (len(mask.shape) >= 3 and mask.shape[-3] != 1)):
        return "a mask that differs per head"
    return blocker


@R.exports("MultiHeadAttention", check=_layer_blocker)
def write_multi_head_attention(em, node):
    query, key, value = node.inputs[:3]
    heads = node.attrs["num_heads"]
    weights = [w.shape for w in node.inputs[3:7]]
    arrays = [a for pair in layer_weights(node) for a in pair if a is not None]
    use_bias = len(arrays) == 8
    key_dim, value_dim = weights[0][1] // heads, weights[2][1] // heads
    options = {"value_dim": value_dim if value_dim != key_dim else None, "use_bias": use_bias,
               "output_shape": weights[3][1] if weights[3][1] != query.shape[-1] else None}
    call = {"key": em.tensor(key)} if key is not value else {}
    mask = node.input(11)
    if mask is not None:  # [.., 1, T, S] -> [.., T, S]: Keras adds the heads axis itself
        call["attention_mask"] = P.call("ops.squeeze", em.tensor(mask), 1) if len(mask.shape) == 4 else \
            em.tensor(mask)
    if node.attrs.get("is_causal"):
        call["use_causal_mask"] = True
    em.out(node, em.layer(node, "layers.MultiHeadAttention", [heads, key_dim],
                          {k: v for k, v in options.items() if v is not None}, arrays, em.tensor(query),
                          em.tensor(value), **call))


@keras_op("DotProductAttention", produces="Attention")
def read_op_dot_product_attention(imp, op, args, kwargs, node):
    """Keras [batch, time, heads, depth] operands around the IR's [batch, heads, time, depth] Attention."""
    names = ("query", "key", "value", "bias", "mask", "scale")
    given = dict(zip(names, args)) | kwargs
    bias, mask, scale = given.get("bias"), given.get("mask"), given.get("scale")
    if bias is not None and mask is not None:
        raise ModelError(f"{op.name}: dot_product_attention with both a bias and a mask is not supported")
    q, k, v = [imp.emit("Transpose", [given[n]], {"perm": [0, 2, 1, 3]}, suffix=n) for n in names[:3]]
    attrs = {"is_causal": int(bool(op.is_causal))}
    if scale is not None:
        attrs["scale"] = float(scale)
    if op.attn_logits_soft_cap is not None:
        attrs["softcap"] = float(op.attn_logits_soft_cap)
    given_extra = bias if bias is not None else mask
    extra = operand_value(imp, given_extra, None) if given_extra is not None else None
    if mask is not None and extra.dtype == np.bool_:  # Keras averages the values for a query that sees no key
        dt = q.dtype
        extra = imp.emit("Where", [extra, imp.const(np.array(0, dt)), imp.const(np.array(hidden_score(dt), dt))],
                         suffix="hidden")
    extra = mask_over_keys(imp, extra, k) if mask is not None else extra
    y = imp.emit("Attention", [q, k, v] + ([extra] if extra is not None else []), attrs, suffix="bhtd")
    return imp.emit("Transpose", [y], {"perm": [0, 2, 1, 3]})


def _attention_check(node) -> str | None:
    mask = node.input(3)
    if node.attrs.get("is_causal") and mask is not None and may_hide_whole_rows(mask):
        return "Attention with is_causal and a mask that may hide every key of a query"
    if _value_depth_differs(node) and (mask is not None or node.attrs.get("is_causal")):
        return "Attention with values of another depth than the queries' and a mask"
    return sdpa_blocker(node)


def _value_depth_differs(node) -> bool:
    """Whether the values' depth differs from the queries' (iFormer), which Keras' dot_product_attention computes
    but gives the queries' shape when building a model."""
    q, v = node.inputs[0].shape, node.inputs[2].shape
    return q is not None and v is not None and q[-1] != v[-1]


@R.exports("Attention", check=_attention_check)
def write_attention(em, node):
    q, k, v = node.inputs[:3]
    a = node.attrs

    def bthd(t):  # IR [B, H, T, D] -> keras [B, T, H, D]
        return P.call("ops.transpose", em.tensor(t), (0, 2, 1, 3))

    kw = {"is_causal": bool(a.get("is_causal"))}
    mask = node.input(3)
    masked_rows = mask is not None and may_hide_whole_rows(mask)
    if mask is not None:  # [B, H, Tq, Tk] broadcasting, the same in both conventions
        kw["mask" if mask.dtype == np.bool_ else "bias"] = em.tensor(mask)
    if a.get("scale") is not None:
        kw["scale"] = a["scale"]
    if _value_depth_differs(node):  # softmax(q k^T * scale) v, written out
        scale = a.get("scale") if a.get("scale") is not None else float(q.shape[-1]) ** -0.5
        scores = P.binop(P.call("ops.matmul", em.tensor(q), P.call("ops.swapaxes", em.tensor(k), -1, -2)), "*", scale)
        return em.out(node, P.call("ops.matmul", P.call("ops.softmax", scores, axis=-1), em.tensor(v)))
    key, value = bthd(k), bthd(v)
    heads = q.shape[1]
    if k.shape[1] == 1 and isinstance(heads, int) and heads > 1:  # one key head for all: Keras on TensorFlow
        key, value = (P.call("ops.repeat", t, heads, axis=2) for t in (key, value))  # fails to broadcast it
    y = P.call("ops.transpose", P.call("ops.dot_product_attention", bthd(q), key, value, **kw), (0, 2, 1, 3))
    if masked_rows:  # a query that sees no key attends to nothing (0), where Keras would average every value
        attended = em.namer.name(f"{node.outputs[0].name}_attended", "t")
        em.body.append(P.assign([attended], y))
        seen = em.tensor(mask) if mask.dtype == np.bool_ else \
            P.call("ops.greater", em.tensor(mask), P.neg(P.name("np.inf")))
        y = P.binop(P.name(attended), "*",
                    P.call("ops.max", P.call("ops.cast", seen, str(q.dtype)), axis=-1, keepdims=True))
    em.out(node, y)



def _cell_weights(cell, kind):
    """Keras kernels -> IR W [gates*H, in], R [gates*H, H], B [2*gates*H] (ONNX gate order)."""
    kernel, rec = to_numpy(cell.kernel), to_numpy(cell.recurrent_kernel)
    hidden = rec.shape[0]
    bias = to_numpy(cell.bias) if cell.use_bias else None
    if kind == "LSTM":  # keras i f c o -> IR i o f c
        order = [0, 3, 1, 2]
    elif kind == "GRU":  # keras z r h -> IR z r h
        order = [0, 1, 2]
    else:
        order = [0]
    gates = len(order)

    def reorder(m):  # m: [..., gates*H] columns
        return np.concatenate([m[..., i * hidden:(i + 1) * hidden] for i in order], axis=-1)

    W, R = reorder(kernel).T, reorder(rec).T
    if bias is None:
        B = np.zeros(2 * gates * hidden, np.float32)
    elif kind == "GRU" and bias.ndim == 2:  # reset_after: input and recurrent biases
        B = np.concatenate([reorder(bias[0]), reorder(bias[1])])
    else:
        B = np.concatenate([reorder(bias), np.zeros(gates * hidden, np.float32)])
    return W, R, B, hidden


def _recurrent_node(imp, layer, x, cells, direction, suffix=""):
    kind = type(layer).__name__ if type(layer).__name__ != "Bidirectional" else type(layer.forward_layer).__name__
    mats = [_cell_weights(c, kind) for c in cells]
    hidden = mats[0][3]
    cell = cells[0]
    acts = []
    if kind == "LSTM":
        acts = [_act(cell.recurrent_activation), _act(cell.activation), _act(cell.activation)]
    elif kind == "GRU":
        acts = [_act(cell.recurrent_activation), _act(cell.activation)]
        if not cell.reset_after:
            raise ModelError(f"{layer.name}: GRU with reset_after=False is not supported")
    else:
        acts = [_act(cell.activation)]
    attrs = {"hidden_size": hidden, "direction": direction, "activations": acts * len(cells)}
    if kind == "GRU":
        attrs["linear_before_reset"] = 1
    op = {"LSTM": "LSTM", "GRU": "GRU", "SimpleRNN": "RNN"}[kind]
    W = imp.weight(f"{suffix}W", np.stack([m[0] for m in mats]))
    R = imp.weight(f"{suffix}R", np.stack([m[1] for m in mats]))
    B = imp.weight(f"{suffix}B", np.stack([m[2] for m in mats]))
    xt = imp.emit("Transpose", [x], {"perm": [1, 0, 2]}, suffix=f"{suffix}time_major")
    n_out = 3 if op == "LSTM" else 2
    return imp.emit(op, [xt, W, R, B], attrs, outputs=n_out, suffix=f"{suffix}cell")


def _act(fn):
    name = getattr(fn, "__name__", fn)
    table = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu", "hard_sigmoid": "HardSigmoid"}
    if name not in table:
        raise ModelError(f"recurrent activation {name!r} is not supported")
    return table[name]


def _sequence_out(imp, y, return_sequences, suffix=""):
    """IR Y [seq, dirs, batch, H] -> Keras [batch, seq, dirs*H] or last step [batch, dirs*H]."""
    y = imp.emit("Transpose", [y], {"perm": [2, 0, 1, 3]}, suffix=f"{suffix}batch_major")
    y = imp.emit("Reshape", [y, imp.const([0, 0, -1], np.int64)], suffix=f"{suffix}merge" if not return_sequences
                 else "")
    if return_sequences:
        return y
    return imp.emit("Gather", [y, imp.const(-1, np.int64)], {"axis": 1})


@layer("LSTM", "GRU", "SimpleRNN", produces=("LSTM", "GRU", "RNN"))
def read_recurrent(imp, layer, inputs, node):
    """go_backwards runs the IR op in reverse; Keras then returns the sequence in reversed time order."""
    if layer.stateful or len(inputs) > 1:
        raise ModelError(f"{layer.name}: stateful layers and initial states are not supported")
    backwards = bool(layer.go_backwards)
    outs = _recurrent_node(imp, layer, inputs[0], [layer.cell], "reverse" if backwards else "forward")
    states = [imp.emit("Squeeze", [s, imp.const([0], np.int64)], suffix=f"state{i}") for i, s in enumerate(outs[1:])]
    if backwards and not layer.return_sequences:
        y = states[0]  # the last step processed is the first in time
    else:
        y = outs[0]
        if backwards:
            big = np.iinfo(np.int64).max
            y = imp.emit("Slice", [y, imp.const([-1], np.int64), imp.const([-big], np.int64),
                                   imp.const([0], np.int64), imp.const([-1], np.int64)], suffix="reversed")
        y = _sequence_out(imp, y, layer.return_sequences)
    return [y, *states] if getattr(layer, "return_state", False) else y


@layer("Bidirectional", produces=("LSTM", "GRU", "RNN"))
def read_bidirectional(imp, layer, inputs, node):
    fwd, bwd = layer.forward_layer, layer.backward_layer
    if layer.merge_mode != "concat" or fwd.return_state or len(inputs) > 1:
        raise ModelError(f"{layer.name}: Bidirectional merge_mode={layer.merge_mode!r}/states are not supported")
    outs = _recurrent_node(imp, layer, inputs[0], [fwd.cell, bwd.cell], "bidirectional")
    if fwd.return_sequences:
        return _sequence_out(imp, outs[0], True)
    # last output of each direction: forward at the last step, backward at step 0 -> Y_h
    h = imp.emit("Transpose", [outs[1]], {"perm": [1, 0, 2]}, suffix="final")
    return imp.emit("Reshape", [h, imp.const([0, -1], np.int64)])


def _recurrent_check(node) -> str | None:
    return plain_rnn_blocker(node, "Keras's reset_after=True resets after the matmul")


@R.exports("LSTM", "GRU", "RNN", check=_recurrent_check)
def write_recurrent(em, node):
    """IR LSTM/GRU/RNN ([seq, batch, in] in, [seq, dirs, batch, hidden] out) as Keras layers per direction."""
    x, w, r = node.inputs[:3]
    b = node.input(3)
    wa, ra = const_operand(w), const_operand(r)
    dirs, gh, _ = wa.shape
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[node.op]
    hidden = gh // gates
    ba = const_operand(b) if b is not None else np.zeros((dirs, 2 * gh), wa.dtype)
    order = {"LSTM": [0, 2, 3, 1], "GRU": [0, 1, 2], "RNN": [0]}[node.op]  # IR i o f c -> Keras i f c o

    def keras_order(m):
        return np.concatenate([m[i * hidden:(i + 1) * hidden] for i in order], axis=0)

    batch_major = P.call("ops.transpose", em.tensor(x), (1, 0, 2))
    seqs, finals = [], [[] for _ in range(2 if node.op == "LSTM" else 1)]  # (h, c) or (h,)
    for d in range(dirs):
        if node.op != "GRU":  # one bias: the input and the recurrent ones added
            weights = [keras_order(wa[d]).T, keras_order(ra[d]).T, keras_order(ba[d, :gh]) + keras_order(ba[d, gh:])]
        else:
            weights = [keras_order(wa[d]).T, keras_order(ra[d]).T,
                       np.stack([keras_order(ba[d, :gh]), keras_order(ba[d, gh:])])]
        kwargs = {"return_sequences": True, "return_state": True}
        if node.op == "RNN" and [s.lower() for s in node.attrs.get("activations") or []][:1] == ["relu"]:
            kwargs["activation"] = "relu"
        backward = d == 1 or node.attrs.get("direction") == "reverse"
        if backward:
            kwargs["go_backwards"] = True
        init = [node.input(i) for i in ((5, 6) if node.op == "LSTM" else (5,))]
        kind = "SimpleRNN" if node.op == "RNN" else node.op
        layer_call = em.layer(node, f"layers.{kind}", [hidden], kwargs, weights, batch_major)
        if any(v is not None for v in init):
            if any(v is None for v in init):
                raise Unsupported("LSTM with only one of initial_h / initial_c")
            layer_call.keywords.append(ast.keyword("initial_state", P.lit([P.subscript(em.tensor(v), d)
                                                                           for v in init])))
        names = [em.namer.name(f"{node.name}_d{d}_{tag}", "t") for tag in (("seq", "h", "c")
                                                                           if node.op == "LSTM" else ("seq", "h"))]
        em.body.append(P.assign(names, layer_call))
        seq = P.name(names[0])
        if backward:
            seq = P.call("ops.flip", seq, axis=1)  # Keras returns the backward pass in reversed time order
        seqs.append(P.call("ops.transpose", seq, (1, 0, 2)))
        for i, n in enumerate(names[1:]):
            finals[i].append(P.name(n))
    em.out(node, P.call("ops.stack", P.lit(seqs), axis=1))
    for i, parts in enumerate(finals, start=1):
        if i < len(node.outputs):
            em.out(node, P.call("ops.stack", P.lit(parts), axis=0), i)
