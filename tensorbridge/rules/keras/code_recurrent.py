"""Recurrent layers of model code in Keras 3 (rules/code.py): PyTorch's nn.LSTM / nn.GRU / nn.RNN written as a
`TorchRecurrent` helper layer over `layers.LSTM` / `layers.GRU` / `layers.SimpleRNN`, which keeps PyTorch's call
(`output, (h_n, c_n) = lstm(x)`) so the code around it stays as written, and the IR weights (rules/recurrent.py)
into the Keras cells' kernels. Keras' own recurrent layers are read in code_read.py.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import OpCall, changed, definition, keywords, value_of
from tensorbridge.rules.recurrent import NNX_CALL, TORCH_CALL, code_layers, code_op, gate_blocks

LAYER = {"LSTM": "layers.LSTM", "GRU": "layers.GRU", "RNN": "layers.SimpleRNN"}
#: the IR's gate blocks in Keras' order (LSTM: i f c o; GRU: z r h)
ORDER = {"LSTM": [0, 2, 3, 1], "GRU": [0, 1, 2], "RNN": [0]}

#: the Keras cell classes of PyTorch's nn.LSTMCell / nn.GRUCell / nn.RNNCell
CELL = {"LSTM": "layers.LSTMCell", "GRU": "layers.GRUCell", "RNN": "layers.SimpleRNNCell"}

HELPERS = {"TorchCell": definition(
    "class TorchCell(layers.Layer):\n"
    "    \"\"\"PyTorch's nn.LSTMCell / nn.GRUCell / nn.RNNCell over a Keras cell class (`cell`): one step on (input,\n"
    "    state), the state (h, c) for an LSTM and h otherwise, zeros when not given; returns the new state so.\"\"\"\n"
    "\n"
    "    def __init__(self, cell, units, **options):\n"
    "        super().__init__()\n"
    "        self.units = units\n"
    "        self.cell = cell(units, **options)\n"
    "\n"
    "    def call(self, x, hx=None):\n"
    "        lstm = isinstance(self.cell, layers.LSTMCell)\n"
    "        if hx is None:\n"
    "            zeros = ops.zeros((ops.shape(x)[0], self.units), dtype=x.dtype)\n"
    "            hx = (zeros, zeros) if lstm else zeros\n"
    "        _, state = self.cell(x, list(hx) if lstm else [hx])\n"
    "        return tuple(state) if lstm else state[0]\n"),
    "TorchRecurrent": definition(
    "class TorchRecurrent(layers.Layer):\n"
    "    \"\"\"PyTorch's nn.LSTM / nn.GRU / nn.RNN over a Keras recurrent layer class (`rnn`): `num_layers` stacked,\n"
    "    each optionally bidirectional, dropout between layers. Returns the output sequence and the final hidden\n"
    "    state (LSTM: and cell state) of every layer and direction, stacked as (layers x directions, batch,\n"
    "    units); `hx`, the initial ones, is stacked the same way. A sequence packed by pack_padded_sequence\n"
    "    comes back packed.\"\"\"\n"
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
    "    def call(self, x, hx=None, training=False):\n"
    "        packed = isinstance(x, dict)  # pack_padded_sequence's: steps past each sequence's length are skipped\n"
    "        lengths = x[\"lengths\"] if packed else None\n"
    "        x = x[\"padded\"] if packed else x if self.batch_first else ops.swapaxes(x, 0, 1)\n"
    "        mask = ops.arange(ops.shape(x)[1])[None, :] < lengths[:, None] if packed else None\n"
    "        hidden, cell = [], []\n"
    "        given = () if hx is None else hx if isinstance(hx, (tuple, list)) else (hx,)  # LSTM: (h_0, c_0)\n"
    "        for i, layer in enumerate(self.stack):\n"
    "            if i:\n"
    "                x = self.dropout(x, training=training)\n"
    "            directions = 2 if isinstance(layer, layers.Bidirectional) else 1\n"
    "            initial = [state[i * directions + d] for d in range(directions) for state in given] or None\n"
    "            x, *states = layer(x, initial_state=initial, mask=mask, training=training)\n"
    "            per_direction = len(states) // directions\n"
    "            hidden += states[::per_direction]\n"
    "            cell += states[1::per_direction] if per_direction == 2 else []\n"
    "        if packed:\n"
    "            x = {\"padded\": x, \"lengths\": lengths}\n"
    "        else:\n"
    "            x = x if self.batch_first else ops.swapaxes(x, 0, 1)\n"
    "        return (x, (ops.stack(hidden), ops.stack(cell))) if cell else (x, ops.stack(hidden))\n"),
    "NnxRecurrent": definition(
        "class NnxRecurrent(layers.Layer):\n"
        "    \"\"\"Flax NNX's nnx.RNN call (nnx.Bidirectional's with `bidirectional`) over a Keras recurrent layer\n"
        "    class (`rnn`): batch-major x (time-major with `time_major`) -> the output sequence or, with\n"
        "    `return_carry`, (carry, outputs), an LSTM's carry being (c, h) and a bidirectional layer's one per\n"
        "    direction; `reverse` runs backwards, its outputs in the order computed unless `keep_order`. `stack`\n"
        "    holds the one layer, as in TorchRecurrent.\"\"\"\n"
        "\n"
        "    def __init__(self, rnn, units, bidirectional=False, time_major=False, return_carry=False,\n"
        "                 reverse=False, keep_order=False):\n"
        "        super().__init__()\n"
        "        layer = rnn(units, return_sequences=True, return_state=True, go_backwards=reverse)\n"
        "        self.stack = [layers.Bidirectional(layer) if bidirectional else layer]\n"
        "        self.directions = 2 if bidirectional else 1\n"
        "        self.time_major, self.return_carry = time_major, return_carry\n"
        "        self.reverse, self.keep_order = reverse, keep_order\n"
        "\n"
        "    def call(self, x):\n"
        "        x = ops.swapaxes(x, 0, 1) if self.time_major else x\n"
        "        out, *states = self.stack[0](x)\n"
        "        if self.reverse and self.keep_order:\n"
        "            out = ops.flip(out, axis=1)\n"
        "        out = ops.swapaxes(out, 0, 1) if self.time_major else out\n"
        "        if not self.return_carry:\n"
        "            return out\n"
        "        per_direction = len(states) // self.directions  # (h,) or, LSTM, (h, c)\n"
        "        carries = [(states[i + 1], states[i]) if per_direction == 2 else states[i]\n"
        "                   for i in range(0, len(states), per_direction)]\n"
        "        return (tuple(carries) if self.directions == 2 else carries[0]), out\n")}


def write_recurrent(c: OpCall) -> ast.expr:
    """`TorchRecurrent(layers.LSTM, units, ...)` for a layer with PyTorch's call, `NnxRecurrent(...)` for one with
    NNX's."""
    a = c.attrs
    if "return_carry" in a:
        return P.call("NnxRecurrent", P.name(LAYER[c.op]), a["hidden_size"], **changed(a, NNX_CALL))
    options = {**changed(a, TORCH_CALL), **keywords(use_bias=(value_of(a["bias"]), True))}  # Keras names it use_bias
    if a.get("activation", "tanh") != "tanh":
        options["activation"] = a["activation"]
    if c.op.endswith("Cell"):
        return P.call("TorchCell", P.name(CELL[c.op[:-4]]), a["hidden_size"], **keywords(
            use_bias=(value_of(a["bias"]), True)), **{k: v for k, v in options.items() if k == "activation"})
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
