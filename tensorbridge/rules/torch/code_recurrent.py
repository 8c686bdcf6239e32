"""Recurrent layers of model code in PyTorch (rules/code.py): Keras' LSTM / GRU / SimpleRNN (and Bidirectional)
written as a `KerasRecurrent` helper module over `nn.LSTM` / `nn.GRU` / `nn.RNN`, which keeps Keras' call (the
last output or the sequence, then the final states) so the code around it stays as written, and the IR weights
(rules/recurrent.py) into the torch layer's parameters.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import OpCall, Refused, changed, definition
from tensorbridge.rules.recurrent import CODE_MODE, KERAS_CALL, NNX_CALL, code_layers, code_op, reorder

LAYER = {"LSTM": "nn.LSTM", "GRU": "nn.GRU", "RNN": "nn.RNN"}

HELPERS = {"KerasRecurrent": definition(
    "class KerasRecurrent(nn.Module):\n"
    "    \"\"\"Keras' LSTM / GRU / SimpleRNN call (batch first; optionally Bidirectional) over a torch recurrent\n"
    "    layer class (`rnn`) built from the first input's size: the last output, or every step's\n"
    "    (`return_sequences`), then with `return_state` the final hidden state (LSTM: and cell state) of each\n"
    "    direction.\"\"\"\n"
    "\n"
    "    def __init__(self, rnn, units, bidirectional=False, return_sequences=False, return_state=False, **options):\n"
    "        super().__init__()\n"
    "        self.make = rnn\n"
    "        self.options = dict(hidden_size=units, batch_first=True, bidirectional=bidirectional, **options)\n"
    "        self.rnn = None\n"
    "        self.return_sequences = return_sequences\n"
    "        self.return_state = return_state\n"
    "\n"
    "    def forward(self, x):\n"
    "        if self.rnn is None:\n"
    "            self.rnn = self.make(x.shape[-1], **self.options)\n"
    "        out, state = self.rnn(x)\n"
    "        states = state if isinstance(state, tuple) else (state,)\n"
    "        if not self.return_sequences:\n"
    "            out = torch.cat(list(states[0]), dim=-1)  # each direction's last step\n"
    "        if not self.return_state:\n"
    "            return out\n"
    "        return [out, *(s[d] for d in range(len(states[0])) for s in states)]\n"),
    "NnxRecurrent": definition(
        "class NnxRecurrent(nn.Module):\n"
        "    \"\"\"Flax NNX's nnx.RNN call (nnx.Bidirectional's with `bidirectional`) over a torch recurrent layer\n"
        "    class (`rnn`): batch-major x (time-major with `time_major`) -> the output sequence or, with\n"
        "    `return_carry`, (carry, outputs), an LSTM's carry being (c, h) and a bidirectional layer's one per\n"
        "    direction; `reverse` runs backwards, its outputs in the order computed unless `keep_order`.\"\"\"\n"
        "\n"
        "    def __init__(self, rnn, input_size, hidden_size, bidirectional=False, time_major=False,\n"
        "                 return_carry=False, reverse=False, keep_order=False):\n"
        "        super().__init__()\n"
        "        self.rnn = rnn(input_size, hidden_size, batch_first=not time_major, bidirectional=bidirectional)\n"
        "        self.time_axis = 0 if time_major else 1\n"
        "        self.return_carry, self.reverse, self.keep_order = return_carry, reverse, keep_order\n"
        "\n"
        "    def forward(self, x):\n"
        "        x = torch.flip(x, [self.time_axis]) if self.reverse else x\n"
        "        out, state = self.rnn(x)\n"
        "        if self.reverse and self.keep_order:\n"
        "            out = torch.flip(out, [self.time_axis])\n"
        "        if not self.return_carry:\n"
        "            return out\n"
        "        carries = [(state[1][d], state[0][d]) if isinstance(state, tuple) else state[d]\n"
        "                   for d in range(2 if self.rnn.bidirectional else 1)]\n"
        "        return (tuple(carries) if self.rnn.bidirectional else carries[0]), out\n")}


def write_recurrent(c: OpCall) -> ast.expr:
    """`KerasRecurrent(nn.LSTM, units, ...)` for a layer with Keras' call, `NnxRecurrent(nn.LSTM, ...)` for one
    with NNX's."""
    a = c.attrs
    if "return_carry" in a:  # NNX's call
        return P.call("NnxRecurrent", P.name(LAYER[c.op]), a["input_size"], a["hidden_size"], **changed(a, NNX_CALL))
    if "return_sequences" not in a:
        raise Refused(f"{c.op} with this framework's call is not translated to PyTorch")
    options = {**changed(a, KERAS_CALL), **changed(a, {"bias": True})}
    if a.get("activation", "tanh") != "tanh":
        options["nonlinearity"] = a["activation"]
    return P.call("KerasRecurrent", P.name(LAYER[c.op]), a["hidden_size"], **options)


def recurrent_weights(w: dict, attrs) -> dict:
    """W{l}, R{l}, B{l} -> weight_ih_l{l}, weight_hh_l{l}, bias_ih_l{l}, bias_hh_l{l} (`_reverse` for the backward
    direction), in cuDNN's gate order."""
    mode = CODE_MODE[code_op(w)]
    out = {}
    for layer, (kernels, recurrent, biases) in enumerate(code_layers(w)):
        hidden = recurrent.shape[2]
        for d in range(kernels.shape[0]):
            suffix = f"_l{layer}" + ("_reverse" if d else "")
            out["weight_ih" + suffix] = reorder(kernels[d], mode, hidden, back=True)
            out["weight_hh" + suffix] = reorder(recurrent[d], mode, hidden, back=True)
            if biases is not None:
                given, held = np.split(biases[d], 2)
                out["bias_ih" + suffix] = reorder(given, mode, hidden, back=True)
                out["bias_hh" + suffix] = reorder(held, mode, hidden, back=True)
    return out

