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
from tensorbridge.rules.recurrent import CODE_MODE, KERAS_CALL, code_layers, code_op, reorder

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
    "        return [out, *(s[d] for d in range(len(states[0])) for s in states)]\n")}


def write_recurrent(c: OpCall) -> ast.expr:
    """`KerasRecurrent(nn.LSTM, units, ...)` for a layer with Keras' call."""
    a = c.attrs
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

