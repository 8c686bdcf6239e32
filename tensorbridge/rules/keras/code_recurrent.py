"""Recurrent layers of model code in Keras 3 (rules/code.py): PyTorch's nn.LSTM / nn.GRU / nn.RNN written as a
`TorchRecurrent` helper layer over `layers.LSTM` / `layers.GRU` / `layers.SimpleRNN`, which keeps PyTorch's call
(`output, (h_n, c_n) = lstm(x)`) so the code around it stays as written, and the IR weights (rules/recurrent.py)
into the Keras cells' kernels.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import OpCall, Refused, definition, keywords, known, only, value_of
from tensorbridge.rules.recurrent import code_layers, code_op, gate_blocks

LAYER = {"LSTM": "layers.LSTM", "GRU": "layers.GRU", "RNN": "layers.SimpleRNN"}
#: the IR's gate blocks in Keras' order (LSTM: i f c o; GRU: z r h)
ORDER = {"LSTM": [0, 2, 3, 1], "GRU": [0, 1, 2], "RNN": [0]}

HELPERS = {"TorchRecurrent": definition(
    "class TorchRecurrent(layers.Layer):\n"
    "    \"\"\"PyTorch's nn.LSTM / nn.GRU / nn.RNN over a Keras recurrent layer class (`rnn`): `num_layers` stacked,\n"
    "    each optionally bidirectional, dropout between layers. Returns the output sequence and the final hidden\n"
    "    state (LSTM: and cell state) of every layer and direction, stacked as (layers x directions, batch,\n"
    "    units).\"\"\"\n"
    "\n"
    "    def __init__(self, rnn, units, num_layers=1, bidirectional=False, batch_first=False, dropout=0.0,\n"
    "                 **options):\n"
    "        super().__init__()\n"
    "        self.batch_first = batch_first\n"
    "        self.stack = []\n"
    "        for _ in range(num_layers):\n"
    "            layer = rnn(units, return_sequences=True, return_state=True, **options)\n"
    "            self.stack.append(layers.Bidirectional(layer) if bidirectional else layer)\n"
    "        self.dropout = layers.Dropout(dropout)\n"
    "\n"
    "    def call(self, x, training=False):\n"
    "        x = x if self.batch_first else ops.swapaxes(x, 0, 1)\n"
    "        hidden, cell = [], []\n"
    "        for i, layer in enumerate(self.stack):\n"
    "            if i:\n"
    "                x = self.dropout(x, training=training)\n"
    "            x, *states = layer(x, training=training)\n"
    "            per_direction = len(states) // (2 if isinstance(layer, layers.Bidirectional) else 1)\n"
    "            hidden += states[::per_direction]\n"
    "            cell += states[1::per_direction] if per_direction == 2 else []\n"
    "        x = x if self.batch_first else ops.swapaxes(x, 0, 1)\n"
    "        return (x, (ops.stack(hidden), ops.stack(cell))) if cell else (x, ops.stack(hidden))\n")}


def write_recurrent(c: OpCall) -> ast.expr:
    """`TorchRecurrent(layers.LSTM, units, ...)`."""
    a = c.attrs
    options = keywords(num_layers=(value_of(a["num_layers"]), 1), bidirectional=(value_of(a["bidirectional"]), False),
                       batch_first=(value_of(a["batch_first"]), False), dropout=(value_of(a["dropout"]), 0.0),
                       use_bias=(value_of(a["bias"]), True))
    if a.get("activation", "tanh") != "tanh":
        options["activation"] = a["activation"]
    return P.call("TorchRecurrent", P.name(LAYER[c.op]), a["hidden_size"], **options)


def recurrent_weights(w: dict, attrs) -> dict:
    """W{l}, R{l}, B{l} -> `stack.{l}[.forward_layer|.backward_layer].cell.kernel` / `recurrent_kernel` / `bias`
    (LSTM and SimpleRNN: one bias, the two summed; GRU: both, as (2, 3 x units))."""
    op = code_op(w)
    order = ORDER[op]
    out = {}
    for layer, (kernels, recurrent, biases) in enumerate(code_layers(w)):
        directions = kernels.shape[0]
        for d in range(directions):
            cell = f"stack.{layer}." + (("forward_layer.", "backward_layer.")[d] if directions == 2 else "") + "cell."
            out[cell + "kernel"] = gate_blocks(kernels[d], order).T
            out[cell + "recurrent_kernel"] = gate_blocks(recurrent[d], order).T
            if biases is not None:
                given, hidden = (gate_blocks(b, order) for b in np.split(biases[d], 2))
                out[cell + "bias"] = np.stack([given, hidden]) if op == "GRU" else given + hidden
    return out


# -- reading Keras' recurrent layers ------------------------------------------------------------------------------
OPS = {"LSTM": "LSTM", "GRU": "GRU", "SimpleRNN": "RNN"}
#: Keras' gate blocks in the IR's order
TO_IR = {"LSTM": [0, 3, 1, 2], "GRU": [0, 1, 2], "RNN": [0]}
ARGS = ("units {activations}use_bias=True kernel_initializer='glorot_uniform' recurrent_initializer='orthogonal' "
        "bias_initializer='zeros' {forget}kernel_regularizer=None recurrent_regularizer=None bias_regularizer=None "
        "activity_regularizer=None kernel_constraint=None recurrent_constraint=None bias_constraint=None dropout=0.0 "
        "recurrent_dropout=0.0 {seed}return_sequences=False return_state=False go_backwards=False stateful=False "
        "unroll=False {tail}name=None dtype=None trainable=True")
GATED = "activation='tanh' recurrent_activation='sigmoid' "
SIGNATURES = {
    "LSTM": ARGS.format(activations=GATED, forget="unit_forget_bias=True ", seed="seed=None ",
                        tail="use_cudnn='auto' "),
    "GRU": ARGS.format(activations=GATED, forget="", seed="seed=None ", tail="reset_after=True use_cudnn='auto' "),
    "SimpleRNN": ARGS.format(activations="activation='tanh' ", forget="", seed="", tail="seed=None "),
}


def read_recurrent(kind: str):
    """layers.LSTM / GRU / SimpleRNN -> the IR op, with Keras' call (`return_sequences`, `return_state`)."""
    def read(a):
        only(a, dropout=0.0, recurrent_dropout=0.0, go_backwards=False, stateful=False, kernel_regularizer=None,
             recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
             recurrent_constraint=None, bias_constraint=None,
             **({"recurrent_activation": "sigmoid"} if "recurrent_activation" in a else {}),
             **({"reset_after": True} if kind == "GRU" else {}))
        activation, allowed = known(a["activation"]), ("tanh", "relu") if kind == "SimpleRNN" else ("tanh",)
        if activation not in allowed:
            raise Refused(f"an activation other than {' or '.join(map(repr, allowed))} (not translated)")
        return OpCall(OPS[kind], attrs={"input_size": None, "hidden_size": a["units"], "num_layers": 1,
                                        "bias": a["use_bias"], "batch_first": True, "dropout": 0.0,
                                        "bidirectional": False, "activation": activation,
                                        "return_sequences": a["return_sequences"], "return_state": a["return_state"]})
    return read


def read_bidirectional(a) -> OpCall:
    """layers.Bidirectional(<recurrent layer>) -> the wrapped layer's IR op, both directions concatenated."""
    only(a, merge_mode="concat", weights=None, backward_layer=None)
    inner = a["layer"]
    if inner.op not in OPS.values():
        raise Refused(f"Bidirectional over {inner.op} (only LSTM, GRU and SimpleRNN are translated)")
    return OpCall(inner.op, attrs={**inner.attrs, "bidirectional": True})


def recurrent_to_ir(w: dict, attrs) -> dict:
    """A Keras recurrent layer's kernel, recurrent_kernel and bias (Bidirectional: prefixed forward_layer. and
    backward_layer.) -> W0, R0, B0."""
    prefixes = ["forward_layer.", "backward_layer."] if "forward_layer.kernel" in w else [""]
    kernels = [w[p + "kernel"] for p in prefixes]
    op = {4: "LSTM", 3: "GRU", 1: "RNN"}[kernels[0].shape[1] // w[prefixes[0] + "recurrent_kernel"].shape[0]]
    order = TO_IR[op]

    def biases(p):
        bias = w[p + "bias"]
        given, held = (bias[0], bias[1]) if op == "GRU" else (bias, np.zeros_like(bias))
        return np.concatenate([gate_blocks(given, order), gate_blocks(held, order)])

    out = {"W0": np.stack([gate_blocks(k.T, order) for k in kernels]),
           "R0": np.stack([gate_blocks(w[p + "recurrent_kernel"].T, order) for p in prefixes])}
    if prefixes[0] + "bias" in w:
        out["B0"] = np.stack([biases(p) for p in prefixes])
    return out
