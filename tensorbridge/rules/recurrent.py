"""The fused recurrent ops of cuDNN-style frameworks (MXNet's RNN, Paddle's rnn) read as the IR's recurrent ops,
one per layer.

Such an op holds, per layer and direction, input weights, hidden weights and two biases, with the gates in cuDNN's
order (LSTM: input, forget, cell, output; GRU: reset, update, new); the IR keeps ONNX's (LSTM: input, output,
forget, cell; GRU: update, reset, new). Their GRU applies the reset gate after the hidden product
(`linear_before_reset`).
"""

from __future__ import annotations

import numpy as np

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}
#: cuDNN's gate blocks, in the IR's order
ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2], "rnn_tanh": [0], "rnn_relu": [0]}
IR_OP = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN", "rnn_relu": "RNN"}


def reorder(a: np.ndarray, mode: str, hidden: int, back: bool = False) -> np.ndarray:
    """Gate blocks from cuDNN's order to the IR's (or back)."""
    order = ORDER[mode]
    if back:
        order = list(np.argsort(order))
    blocks = a.reshape(GATES[mode], hidden, *a.shape[1:])
    return np.concatenate([blocks[i] for i in order])


def stacked(imp, x, mode: str, parts: list, hidden: int, directions: int) -> tuple:
    """The layers as IR ops on a time-major `x`: `parts` holds (input weights, hidden weights, input bias,
    hidden bias) per layer and direction in cuDNN's order. Returns (output sequence (T, N, directions x H), last
    hidden states, last cell states) with one state per layer."""
    b = imp.b
    attrs = {"hidden_size": hidden, "direction": "bidirectional" if directions == 2 else "forward"}
    if mode == "gru":
        attrs["linear_before_reset"] = 1
    if mode.startswith("rnn_"):
        attrs["activations"] = ["Relu" if mode == "rnn_relu" else "Tanh"] * directions
    layers = len(parts) // directions
    steps = x.shape[0] if x.shape is not None and isinstance(x.shape[0], int) else 0  # 0: the input's own
    y, last_h, last_c = x, [], []
    for layer in range(layers):
        group = parts[layer * directions:(layer + 1) * directions]
        w, r, bias = (np.stack([f(p) for p in group]).astype(np.float32) for f in (
            lambda p: reorder(np.asarray(p[0]), mode, hidden), lambda p: reorder(np.asarray(p[1]), mode, hidden),
            lambda p: np.concatenate([reorder(np.asarray(p[2]), mode, hidden),
                                      reorder(np.asarray(p[3]), mode, hidden)])))
        count = 3 if mode == "lstm" else 2
        outs = b.emit(IR_OP[mode], [y, imp.weight(f"l{layer}_W", w), imp.weight(f"l{layer}_R", r),
                                    imp.weight(f"l{layer}_B", bias)], attrs, outputs=count, suffix=f"l{layer}")
        sequence = b.op("Transpose", outs[0], perm=[0, 2, 1, 3], suffix=f"l{layer}_steps")
        y = b.op("Reshape", sequence, b.const(np.array([steps, -1, directions * hidden], np.int64)),
                 suffix=f"l{layer}_out" if layer < layers - 1 else "")
        last_h.append(outs[1])
        last_c.append(outs[2] if mode == "lstm" else None)
    return y, last_h, last_c


DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


def fused_mode(node) -> str | None:
    """The cuDNN-style mode ("lstm", "gru", "rnn_tanh", "rnn_relu") in which a fused recurrent op (MXNet's RNN,
    Paddle's rnn) computes the IR recurrent op `node`: constant weights, zero initial states, whole sequences of a
    known shape (time-major), the default activations and, for a GRU, the reset applied after the hidden product;
    None when it cannot."""
    x, consts = node.input(0), [node.input(i) for i in (1, 2, 3)]
    a = node.attrs
    if x.shape is None or len(x.shape) != 3 or not all(isinstance(d, int) for d in x.shape):
        return None
    if any(v is None or v.const is None for v in consts[:2]) or (consts[2] is not None and consts[2].const is None):
        return None
    extra = [node.input(i) for i in range(4, len(node.inputs))]
    if any(v is not None and (v.const is None or np.any(v.const) or i == 0) for i, v in enumerate(extra)):
        return None  # sequence lengths, non-zero initial states, peepholes
    if a.get("clip") is not None or a.get("cell_clip") or a.get("layout", 0) or a.get("input_forget", 0) or \
            a.get("direction", "forward") not in ("forward", "bidirectional"):
        return None
    directions = 2 if a.get("direction") == "bidirectional" else 1
    activations = a.get("activations")
    if node.op == "RNN":
        kinds = activations or ["Tanh"] * directions
        return {"Tanh": "rnn_tanh", "Relu": "rnn_relu"}.get(kinds[0]) if len(set(kinds)) == 1 else None
    if activations and list(activations) != DEFAULT_ACTIVATIONS[node.op] * directions:
        return None
    if node.op == "GRU" and not a.get("linear_before_reset", 0):
        return None  # cuDNN's GRU resets after the hidden product
    return node.op.lower()


def fused_weights(node, mode: str) -> list[np.ndarray]:
    """The IR recurrent op's weights as a fused op holds them, gates in cuDNN's order: per direction the input
    then the hidden weights, then per direction the input then the hidden biases."""
    hidden = node.attrs["hidden_size"]
    weights, recurrent = np.asarray(node.input(1).const), np.asarray(node.input(2).const)
    directions, rows = weights.shape[0], weights.shape[1]
    bias = np.zeros((directions, 2 * rows), np.float32) if node.input(3) is None else np.asarray(node.input(3).const)
    packed = [reorder(m[d], mode, hidden, back=True) for d in range(directions) for m in (weights, recurrent)]
    packed += [reorder(bias[d][half], mode, hidden, back=True) for d in range(directions)
               for half in (slice(0, rows), slice(rows, None))]
    return [np.asarray(t, np.float32) for t in packed]


# -- recurrent layers of model code (the transpiler: rules/code.py) ----------------------------------------------
#: a recurrent layer of model code as an IR op: `hidden_size`, `num_layers`, `bidirectional`, `batch_first`, `bias`,
#: `dropout` (between layers), `activation` (RNN); its weights per layer l are ONNX's tensors of one op:
#: W{l} (directions, gates x hidden, input), R{l} (directions, gates x hidden, hidden), B{l} (directions,
#: 2 x gates x hidden: the input biases, then the recurrent ones), the gates in the IR's order
CODE_MODE = {"LSTM": "lstm", "GRU": "gru", "RNN": "rnn_tanh"}
#: gate count -> recurrent op
GATE_OPS = {4: "LSTM", 3: "GRU", 1: "RNN"}
#: the call of a PyTorch-style recurrent layer (torch.nn.LSTM) and a Keras-style one, with their defaults: the
#: helpers written for either take these as keyword arguments
TORCH_CALL = {"num_layers": 1, "bidirectional": False, "batch_first": False, "dropout": 0.0}
KERAS_CALL = {"bidirectional": False, "return_sequences": False, "return_state": False}
#: the call of an NNX-style one (nnx.RNN over a cell; nnx.Bidirectional over two)
NNX_CALL = {"bidirectional": False, "time_major": False, "return_carry": False, "reverse": False, "keep_order": False}


def gate_blocks(a: np.ndarray, order: list[int], axis: int = 0) -> np.ndarray:
    """The equal gate blocks of `a` along `axis`, picked in `order`."""
    blocks = np.split(a, len(order), axis=axis)
    return np.concatenate([blocks[i] for i in order], axis=axis)


def code_layers(weights: dict) -> list[tuple]:
    """(W, R, B or None) per layer of a recurrent layer's IR weights."""
    out = []
    while f"W{len(out)}" in weights:
        n = len(out)
        out.append((weights[f"W{n}"], weights[f"R{n}"], weights.get(f"B{n}")))
    return out


def code_op(weights: dict) -> str:
    """Which recurrent op ("LSTM", "GRU", "RNN") the IR weights are of, from their gate count."""
    w, r = weights["W0"], weights["R0"]
    return GATE_OPS[w.shape[1] // r.shape[2]]


def cell_weights(stacked: dict) -> dict:
    """A recurrent helper's weights of its one layer and direction (`stack.0.cell.<name>`, see the targets'
    recurrent_weights) as a TorchCell's, which holds the cell at `cell.`."""
    return {k.replace("stack.0.cell.", "cell.", 1): v for k, v in stacked.items()}
