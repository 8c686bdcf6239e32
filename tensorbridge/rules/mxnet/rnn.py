"""MXNet's fused RNN op (LSTM, GRU, tanh/relu RNN; stacked layers, both directions) read into the IR's recurrent
ops, one per layer.

The op takes every layer's weights packed into one vector (Gluon concatenates them with `_rnn_param_concat`):
first, for each layer and direction, the input and the hidden weights (gates × hidden rows each), then, in the same
order, their biases, with the gates in cuDNN's order (rules/recurrent.py). Initial states must be zeros, as Gluon
writes them when none are given.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.mxnet.base import R, known_shape, op
from tensorbridge.rules.recurrent import GATES, fused_mode, fused_weights, stacked


def unpack(flat: np.ndarray, mode: str, layers: int, directions: int, inputs: int, hidden: int) -> list:
    """[(input weights, hidden weights, input bias, hidden bias)] per layer and direction, as MXNet packs them."""
    rows = GATES[mode] * hidden
    sizes = []
    for layer in range(layers):
        width = inputs if layer == 0 else directions * hidden
        sizes += [(rows, width), (rows, hidden)] * directions
    total = sum(r * c for r, c in sizes) + 2 * rows * layers * directions
    if flat.size != total:
        raise ModelError(f"its packed parameters hold {flat.size} values; {layers} layer(s) of {mode} with "
                         f"{hidden} units on {inputs} inputs need {total}")
    at, weights = 0, []
    for r, c in sizes:
        weights.append(flat[at:at + r * c].reshape(r, c))
        at += r * c
    biases = [flat[at + i * rows:at + (i + 1) * rows] for i in range(2 * layers * directions)]
    return [(weights[2 * i], weights[2 * i + 1], biases[2 * i], biases[2 * i + 1]) for i in range(layers * directions)]


@op("RNN", produces=("LSTM", "GRU", "RNN", "Transpose", "Reshape", "Concat"))
def rnn(imp, node):
    a, b = imp.attrs, imp.b
    mode = a.choice("mode", "lstm", tuple(GATES))
    hidden, layers = a.int("state_size"), a.int("num_layers", 1)
    directions = 2 if a.bool("bidirectional") else 1
    a.float("p")  # dropout between layers: training only
    for key in ("projection_size", "lstm_state_clip_min", "lstm_state_clip_max"):
        if a.text(key) is not None:
            raise ModelError(f"{key} is not read")
    a.bool("lstm_state_clip_nan")
    if a.bool("use_sequence_length"):
        raise ModelError("use_sequence_length (sequences of several lengths) is not read")
    outputs_states = a.bool("state_outputs")
    steps, batch, width = known_shape(imp.x, "RNN")
    if any(not imp.is_zero(v) for v in imp.inputs[2:]):
        raise ModelError("initial states other than zeros are not read")
    packed = unpack(np.asarray(imp.evaluate(imp.inputs[1])).reshape(-1), mode, layers, directions, width, hidden)
    y, last_h, last_c = stacked(imp, imp.x, mode, packed, hidden, directions)
    if not outputs_states:
        return y
    states = [last_h] + ([last_c] if mode == "lstm" else [])
    return [y] + [s[0] if layers == 1 else b.op("Concat", *s, axis=0, suffix=f"state{i}")
                  for i, s in enumerate(states)]


@R.exports("LSTM", "GRU", "RNN", check=lambda n: None if fused_mode(n) else
           "MXNet's RNN takes constant weights, zero initial states, whole sequences (time-major), default "
           "activations and, for a GRU, the reset applied after the hidden product")
def write_rnn(w, node):
    """One fused RNN op; its output (T, N, directions x H) split back into the IR's (T, directions, N, H)."""
    mode = fused_mode(node)
    steps, batch, _ = node.input(0).shape
    hidden = node.attrs["hidden_size"]
    packed = [t.reshape(-1) for t in fused_weights(node, mode)]
    directions = len(packed) // 4
    zeros = np.zeros((directions, batch, hidden), np.float32)
    states = [w.param(node, "h0", zeros)] + ([w.param(node, "c0", zeros)] if mode == "lstm" else [])
    index, _ = w.op("RNN", node, [node.input(0), w.param(node, "parameters", np.concatenate(packed).astype(np.float32)),
                                  *states],
                    {"mode": mode, "state_size": hidden, "num_layers": 1, "bidirectional": directions == 2,
                     "state_outputs": True, "p": 0.0}, outputs=[])
    for k, value in enumerate(node.outputs[1:], start=1):
        if value is not None:
            w.bind(value, (index, k))
    if node.outputs[0] is not None:
        split = w.op("Reshape", node, [(index, 0)], {"shape": (steps, batch, directions, hidden)}, outputs=[],
                     name=f"{node.name}.directions")
        w.op("transpose", node, [split], {"axes": (0, 2, 1, 3)}, outputs=[node.outputs[0]], name=f"{node.name}.steps")
