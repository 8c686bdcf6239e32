"""Paddle's fused rnn op (paddle.nn.LSTM, GRU, SimpleRNN: stacked layers, one or both directions) read into the
IR's recurrent ops, one per layer (rules/recurrent.py).

Its inputs: the time-major sequence, the initial states (zeros, as paddle.nn's layers make them when none are
given), and the weights: for each layer and direction the input and hidden weights, then the biases in the same
order, gates in cuDNN's order (LSTM: input, forget, cell, output; GRU: reset, update, new, the reset applied after
the hidden product) — proven by fixtures recorded from Paddle for each mode (tests/paddle: the OCR recognizer's
LSTM, a GRU and a ReLU simple RNN).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.paddle.base import known_shape, op
from tensorbridge.rules.recurrent import GATES, stacked


def _zeros(v) -> bool:
    """A constant of zeros, or zeros expanded to a shape computed at run time."""
    if v is None:
        return True
    if v.const is not None:
        return not np.any(v.const)
    node = v.producer
    return node is not None and node.op == "Expand" and node.input(0).const is not None and \
        not np.any(node.input(0).const)


#: Paddle's modes -> the cuDNN-style modes of rules/recurrent.py
MODES = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}


@op("rnn", produces=("LSTM", "GRU", "RNN", "Transpose", "Reshape", "Concat"))
def rnn(imp, node):
    a, b = imp.attrs, imp.b
    mode = MODES[a.choice("mode", "LSTM", tuple(MODES))]
    hidden, layers = a.get("hidden_size"), a.get("num_layers", 1)
    directions = 2 if a.get("is_bidirec", False) else 1
    a.get("dropout_prob"), a.get("input_size")  # dropout between layers: training only
    x, states, weights = imp.inputs[:3]
    if len(imp.inputs) > 3 and imp.inputs[3] is not None:
        raise ModelError("sequence lengths (sequences of several lengths) are not read")
    if not all(_zeros(s) for s in states):
        raise ModelError("initial states other than zeros are not read")
    count = layers * directions
    if len(weights) != 4 * count:
        raise ModelError(f"{len(weights)} weights for {layers} layer(s) in {directions} direction(s): {4 * count} "
                         "expected")
    arrays = [None if w.const is None else np.asarray(w.const) for w in weights]
    if any(w is None for w in arrays):
        raise ModelError("its weights are computed at run time")
    width = x.shape[2] if x.shape is not None and len(x.shape) == 3 else known_shape(x, "rnn")[2]
    parts = [(arrays[2 * i], arrays[2 * i + 1], arrays[2 * count + 2 * i], arrays[2 * count + 2 * i + 1])
             for i in range(count)]
    if parts[0][0].shape != (GATES[mode] * hidden, width):
        raise ModelError(f"input weights {list(parts[0][0].shape)} do not fit {hidden} units on {width} inputs")
    y, last_h, last_c = stacked(imp, x, mode, parts, hidden, directions)
    states = (last_h, last_c) if mode == "lstm" else (last_h,)
    return [y, None, [s[0] if layers == 1 else b.op("Concat", *s, axis=0, suffix=f"state{i}")
                      for i, s in enumerate(states)], None]
