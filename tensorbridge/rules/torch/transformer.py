"""PyTorch <-> IR: Attention and recurrent layers.

Each IR op's import converters (ATen -> IR) and export writer (IR -> torch code) sit together.
"""
from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand
from tensorbridge.errors import ModelError
from tensorbridge.ir.value import Value
from tensorbridge.ops.recurrent import plain_rnn_blocker
from tensorbridge.ops.transformer import sdpa_blocker
from tensorbridge.rules.ir_spellings import mask_over_keys
from tensorbridge.rules.torch.base import (
    R,
    aten,
    const_data,
    non_default,
)


@aten("scaled_dot_product_attention", produces="Attention")
def read_attention(imp, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """Attention over [..., heads, time, depth]: leading dims past the batch are folded into it and restored;
    [batch, time, depth] (SAM's attention) is one head."""
    rank = imp.rank(q)
    if rank < 3 or (rank > 4 and attn_mask is not None and imp.rank(attn_mask) > 2):
        raise ModelError(f"{node.name}: scaled_dot_product_attention on rank-{rank} tensors"
                         f"{' with a mask of more than 2 dims' if rank > 4 else ''} is not supported")
    vals = [imp.value(t) for t in (q, k, v)]
    if rank == 3:
        one_head = imp.const([1], dtype=np.int64)
        vals = [imp.emit("Unsqueeze", [val, one_head], suffix=f"head{i}") for i, val in enumerate(vals)]
        if attn_mask is not None and imp.rank(attn_mask) == 3:
            attn_mask = imp.emit("Unsqueeze", [imp.value(attn_mask), one_head], suffix="mask_head")
    if rank > 4:
        vals = [imp.emit("Reshape", [val, imp.shape_tensor([-1, *t.meta["val"].shape[-3:]])], suffix=f"fold{i}")
                for i, (t, val) in enumerate(zip((q, k, v), vals))]
    attrs = {"is_causal": int(bool(is_causal))}
    if scale is not None:
        attrs["scale"] = float(scale)
    if attn_mask is not None:
        vals.append(mask_over_keys(imp, attn_mask if isinstance(attn_mask, Value) else imp.value(attn_mask), vals[1]))
    y = imp.emit("Attention", vals, attrs, suffix="" if rank == 4 else "folded")
    return y if rank == 4 else imp.emit("Reshape", [y, imp.out_shape()])


def _attention_check(node) -> str | None:
    if node.attrs.get("is_causal") and node.input(3) is not None:
        return "Attention with is_causal and a mask (F.scaled_dot_product_attention takes one of them)"
    return sdpa_blocker(node)


@R.exports("Attention", check=_attention_check)
def write_attention(em, node):
    q, k, v = node.inputs[:3]
    mask = node.input(3)
    a = node.attrs
    kw = {}
    if mask is not None:
        kw["attn_mask"] = em.tensor(mask)
    if a.get("is_causal"):
        kw["is_causal"] = True
    if a.get("scale") is not None:
        kw["scale"] = a["scale"]
    if q.shape[1] != k.shape[1]:
        kw["enable_gqa"] = True
    em.out(node, P.call("F.scaled_dot_product_attention", em.tensor(q), em.tensor(k), em.tensor(v), **kw))


def _reorder(w, order, hidden):
    chunks = [w[i * hidden:(i + 1) * hidden] for i in range(len(order))]
    return np.concatenate([chunks[i] for i in order], axis=0)


def _recurrent(imp, node, op, order, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first, activation=None):
    """torch.nn.LSTM/GRU/RNN (all layers, both directions) as a chain of IR LSTM/GRU/RNN ops."""
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    arrays = [const_data(imp, p) for p in params]
    if any(a is None for a in arrays):
        raise ModelError(f"{node.name}: recurrent weights must be constants")
    hidden = arrays[1].shape[1]
    x = imp.value(input)
    if batch_first:
        x = imp.emit("Transpose", [x], {"perm": [1, 0, 2]}, suffix="time_major")
    states = [imp.value(h) for h in (hx if isinstance(hx, (list, tuple)) else [hx])]
    finals: list[list] = [[] for _ in states]
    for layer in range(num_layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            base = (layer * dirs + d) * per
            w_ih, w_hh = arrays[base], arrays[base + 1]
            ws.append(_reorder(w_ih, order, hidden))
            rs.append(_reorder(w_hh, order, hidden))
            if has_biases:
                bs.append(np.concatenate([_reorder(arrays[base + 2], order, hidden),
                                          _reorder(arrays[base + 3], order, hidden)]))
        W = imp.graph.add_constant(imp.name(f"l{layer}.W"), np.stack(ws))
        R = imp.graph.add_constant(imp.name(f"l{layer}.R"), np.stack(rs))
        B = imp.graph.add_constant(imp.name(f"l{layer}.B"), np.stack(bs)) if has_biases else None
        zero_states = all(s.const is not None and not np.asarray(s.const).any() for s in states)
        init = [] if zero_states else [  # zero initial states are the IR default
            imp.emit("Slice", [s, imp.const([layer * dirs], dtype=np.int64),
                               imp.const([(layer + 1) * dirs], dtype=np.int64),
                               imp.const([0], dtype=np.int64)], suffix=f"l{layer}.state{i}")
            for i, s in enumerate(states)]
        n_out = 1 + len(states)
        attrs = {"hidden_size": int(hidden), "direction": "bidirectional" if bidirectional else "forward"}
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        if activation:
            attrs["activations"] = [activation] * dirs
        outs = imp.emit(op, [x, W, R, B, None, *init], attrs, outputs=n_out, suffix=f"l{layer}")
        y = outs[0]  # [seq, dirs, batch, hidden]
        y = imp.emit("Transpose", [y], {"perm": [0, 2, 1, 3]}, suffix=f"l{layer}.seq_batch")
        x = imp.emit("Reshape", [y, imp.const([0, 0, -1], dtype=np.int64)], suffix=f"l{layer}.out")
        for i, f in enumerate(outs[1:]):
            finals[i].append(f)
    out = imp.emit("Transpose", [x], {"perm": [1, 0, 2]}, suffix="batch_major") if batch_first else x
    final = [imp.emit("Concat", f, {"axis": 0}, suffix=f"state{i}") if len(f) > 1 else f[0]
             for i, f in enumerate(finals)]
    return (out, *final)


@aten("lstm", produces="LSTM")
def read_lstm(imp, node, input, hx, params, *rest):
    return _recurrent(imp, node, "LSTM", [0, 3, 1, 2], input, hx, params, *rest)  # i f g o -> i o f g


@aten("gru", produces="GRU")
def read_gru(imp, node, input, hx, params, *rest):
    return _recurrent(imp, node, "GRU", [1, 0, 2], input, hx, params, *rest)  # r z n -> z r n


@aten("rnn_tanh", "rnn_relu", produces="RNN")
def read_rnn(imp, node, input, hx, params, *rest):
    activation = "Relu" if "relu" in str(node.target) else "Tanh"
    return _recurrent(imp, node, "RNN", [0], input, hx, params, *rest, activation=activation)


def _recurrent_check(node) -> str | None:
    return plain_rnn_blocker(node, "PyTorch applies the reset gate after the matmul")


@R.exports("LSTM", "GRU", "RNN", check=_recurrent_check)
def write_recurrent(em, node):
    """IR LSTM/GRU/RNN (ONNX gate order, [seq, dirs, batch, hidden] output) as nn.LSTM/nn.GRU/nn.RNN."""
    x, w, r = node.inputs[:3]
    b = node.input(3)
    wa, ra = const_operand(w), const_operand(r)
    dirs, gates_h, in_size = wa.shape
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[node.op]
    hidden = gates_h // gates
    # IR (i o f c / z r h) -> torch (i f g o / r z n)
    order = {"LSTM": [0, 2, 3, 1], "GRU": [1, 0, 2], "RNN": [0]}[node.op]
    ba = const_operand(b) if b is not None else np.zeros((dirs, 2 * gates_h), wa.dtype)

    def torch_order(m):
        return np.concatenate([m[i * hidden:(i + 1) * hidden] for i in order], axis=0)

    weights = {}
    for d in range(dirs):
        suffix = "_l0" + ("_reverse" if d else "")
        weights[f"weight_ih{suffix}"] = torch_order(wa[d])
        weights[f"weight_hh{suffix}"] = torch_order(ra[d])
        weights[f"bias_ih{suffix}"] = torch_order(ba[d, :gates_h])
        weights[f"bias_hh{suffix}"] = torch_order(ba[d, gates_h:])
    ctor = {"LSTM": "nn.LSTM", "GRU": "nn.GRU", "RNN": "nn.RNN"}[node.op]
    relu = [s.lower() for s in node.attrs.get("activations") or []][:1] == ["relu"]
    options = non_default(bidirectional=(dirs == 2, False), nonlinearity=("relu" if relu else "tanh", "tanh"))
    layer = em.layer(node, ctor, [in_size, hidden], options, weights)
    reverse = node.attrs.get("direction") == "reverse"  # nn.LSTM has no backward-only form: flip time around it
    args = [P.call("torch.flip", em.tensor(x), [0]) if reverse else em.tensor(x)]
    h0 = node.input(5)
    if node.op == "LSTM":
        c0 = node.input(6)
        if (h0 is None) != (c0 is None):
            raise Unsupported("LSTM with only one of initial_h / initial_c")
        if h0 is not None:
            args.append(ast.Tuple([em.tensor(h0), em.tensor(c0)], ast.Load()))
    elif h0 is not None:
        args.append(em.tensor(h0))
    seq_name = em.namer.name(node.outputs[0].name + "_seq", "t")
    graph_outputs = {id(v) for v in node.graph.outputs}

    def state_name(i, tag):
        used = i < len(node.outputs) and (node.outputs[i].uses() or id(node.outputs[i]) in graph_outputs)
        return em.namer.name(f"{node.name}_{tag}", "t") if used else "_"

    state_names = [state_name(1, "h")] + ([state_name(2, "c")] if node.op == "LSTM" else [])
    if all(s == "_" for s in state_names):
        state = P.name("_")
    elif node.op == "LSTM":
        state = ast.Tuple([P.name(s) for s in state_names], ast.Load())
    else:
        state = P.name(state_names[0])
    target = ast.Tuple([P.name(seq_name), state], ast.Load())
    em.body.append(ast.Assign([P._store(target)], P.call(layer, *args), lineno=0))
    seq = P.name(seq_name)
    if reverse:
        em.body.append(P.assign([seq_name], P.call("torch.flip", seq, [0])))
    merged = _merged_sequence_output(node)
    if merged is not None:  # the graph only wants torch's own [seq, batch, dirs * hidden] layout
        transpose_node, reshape_node = merged
        em.skip |= {id(transpose_node), id(reshape_node)}
        em.var[id(reshape_node.outputs[0])] = seq
    else:  # torch: [seq, batch, dirs * hidden] -> IR: [seq, dirs, batch, hidden]
        em.out(node, P.method(P.method(seq, "unflatten", -1, (dirs, hidden)), "transpose", 1, 2), 0)
    for i, s in enumerate(state_names, start=1):
        if i < len(node.outputs) and s != "_":
            em.var[id(node.outputs[i])] = P.name(s)


def _merged_sequence_output(node):
    """(Transpose, Reshape) when Y is only read as Reshape(Transpose(Y, 0 2 1 3), [0, 0, -1])."""
    uses = node.outputs[0].uses()
    if len(uses) != 1 or uses[0][0].op != "Transpose" or uses[0][0].attrs.get("perm") != [0, 2, 1, 3]:
        return None
    t = uses[0][0]
    t_uses = t.outputs[0].uses()
    if len(t_uses) != 1 or t_uses[0][0].op != "Reshape" or t_uses[0][1] != 0:
        return None
    r = t_uses[0][0]
    target = r.inputs[1].const
    if target is None or [int(v) for v in np.asarray(target).ravel()] != [0, 0, -1] or r.attrs.get("allowzero"):
        return None
    return t, r
