"""Recurrent layers of model code in Flax NNX (rules/code.py): PyTorch's nn.LSTM / nn.GRU / nn.RNN and Keras'
LSTM / GRU / SimpleRNN written as `TorchRecurrent` / `KerasRecurrent` helper modules over `nnx.RNN` with an
`nnx.LSTMCell` / `BiasedGRUCell` / `nnx.SimpleCell`, which keep the source's call (`output, (h_n, c_n) = lstm(x)`,
`sequence, h, c = lstm(x)`) so the code around them stays as written, and the IR weights (rules/recurrent.py) into
the cells' dense layers.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import NOT_LITERAL, OpCall, Refused, changed, definition, known
from tensorbridge.rules.recurrent import KERAS_CALL, TORCH_CALL, code_layers, code_op, gate_blocks

CELL = {"LSTM": "nnx.LSTMCell", "GRU": "BiasedGRUCell", "RNN": "nnx.SimpleCell"}
#: nnx.LSTMCell's dense layers per IR gate block (i o f c): input ones, then recurrent ones (which hold the bias)
LSTM_GATES = (("ii", "hi"), ("io", "ho"), ("if_", "hf"), ("ig", "hg"))
#: the IR's GRU gate blocks (z r h) in nnx.GRUCell's order (r z n)
GRU_ORDER = [1, 0, 2]
#: the activations a recurrent layer's activation held by a variable may name (PyTorch's nn.RNN takes these)
RNN_ACTIVATIONS = ("tanh", "relu")

HELPERS = {"TorchCell": definition(
    "class TorchCell(nnx.Module):\n"
    "    \"\"\"PyTorch's nn.LSTMCell / nn.GRUCell / nn.RNNCell over an nnx cell class (`cell`): one step on (input,\n"
    "    state), the state (h, c) for an LSTM and h otherwise, zeros when not given; returns the new state so (an\n"
    "    nnx LSTM's carry is (c, h)).\"\"\"\n"
    "\n"
    "    def __init__(self, cell, input_size, hidden_size, *, rngs: nnx.Rngs):\n"
    "        self.hidden_size = hidden_size\n"
    "        self.cell = cell(input_size, hidden_size, rngs=rngs)\n"
    "\n"
    "    def __call__(self, x, hx=None):\n"
    "        lstm = isinstance(self.cell, nnx.LSTMCell)\n"
    "        if hx is None:\n"
    "            zeros = jnp.zeros((x.shape[0], self.hidden_size), x.dtype)\n"
    "            hx = (zeros, zeros) if lstm else zeros\n"
    "        carry, _ = self.cell((hx[1], hx[0]) if lstm else hx, x)\n"
    "        return (carry[1], carry[0]) if lstm else carry\n"),
    "TorchRecurrent": definition(
    "class TorchRecurrent(nnx.Module):\n"
    "    \"\"\"PyTorch's nn.LSTM / nn.GRU / nn.RNN over nnx.RNN with an nnx cell class (`cell`): `num_layers`\n"
    "    stacked, each optionally bidirectional, dropout between layers. Returns the output sequence and the final\n"
    "    hidden state (LSTM: and cell state) of every layer and direction, stacked as (layers x directions,\n"
    "    batch, hidden); `hx`, the initial ones, is stacked the same way. A sequence packed by\n"
    "    pack_padded_sequence comes back packed.\"\"\"\n"
    "\n"
    "    def __init__(self, cell, input_size, hidden_size, num_layers=1, bidirectional=False, batch_first=False,\n"
    "                 dropout=0.0, *, rngs: nnx.Rngs):\n"
    "        self.batch_first = batch_first\n"
    "        stack = []\n"
    "        for i in range(num_layers):\n"
    "            size = input_size if i == 0 else hidden_size * (2 if bidirectional else 1)\n"
    "            rnns = [nnx.RNN(cell(size, hidden_size, rngs=rngs), return_carry=True)\n"
    "                    for _ in range(2 if bidirectional else 1)]\n"
    "            stack.append(nnx.Bidirectional(*rnns, return_carry=True) if bidirectional else rnns[0])\n"
    "        self.stack = nnx.List(stack)\n"
    "        self.dropout = nnx.Dropout(dropout, rngs=rngs)\n"
    "\n"
    "    def __call__(self, x, hx=None):\n"
    "        packed = isinstance(x, dict)  # pack_padded_sequence's: steps past each sequence's length are skipped\n"
    "        lengths = x[\"lengths\"] if packed else None\n"
    "        x = x[\"padded\"] if packed else x if self.batch_first else jnp.swapaxes(x, 0, 1)\n"
    "        hidden, cell = [], []\n"
    "        for i, layer in enumerate(self.stack):\n"
    "            if i:\n"
    "                x = self.dropout(x)\n"
    "            carry, x = layer(x, initial_carry=self.initial_carry(hx, i, layer), seq_lengths=lengths)\n"
    "            for state in carry if isinstance(layer, nnx.Bidirectional) else (carry,):\n"
    "                if isinstance(state, tuple):  # an LSTM's carry: (c, h)\n"
    "                    cell.append(state[0])\n"
    "                    state = state[1]\n"
    "                hidden.append(state)\n"
    "        if packed:\n"
    "            x = {\"padded\": x, \"lengths\": lengths}\n"
    "        else:\n"
    "            x = x if self.batch_first else jnp.swapaxes(x, 0, 1)\n"
    "        return (x, (jnp.stack(hidden), jnp.stack(cell))) if cell else (x, jnp.stack(hidden))\n"
    "\n"
    "    @staticmethod\n"
    "    def initial_carry(hx, i, layer):\n"
    "        \"\"\"Layer i's carry from initial states stacked as PyTorch's (LSTM: (h_0, c_0) as (c, h)).\"\"\"\n"
    "        if hx is None:\n"
    "            return None\n"
    "        directions = 2 if isinstance(layer, nnx.Bidirectional) else 1\n"
    "        carries = [(hx[1][i * directions + d], hx[0][i * directions + d]) if isinstance(hx, tuple)\n"
    "                   else hx[i * directions + d] for d in range(directions)]\n"
    "        return tuple(carries) if directions == 2 else carries[0]\n"),
    "KerasRecurrent": definition(
        "class KerasRecurrent(nnx.Module):\n"
        "    \"\"\"Keras' LSTM / GRU / SimpleRNN call (batch first; optionally Bidirectional) over nnx.RNN with an\n"
        "    nnx cell class (`cell`), built from the first input's size (call the model once before using or porting\n"
        "    it): the last output, or every step's (`return_sequences`), then with `return_state` the final hidden\n"
        "    state (LSTM: and cell state) of each direction. `stack` holds the one layer, as in TorchRecurrent.\"\"\"\n"
        "\n"
        "    def __init__(self, cell, units, bidirectional=False, return_sequences=False, return_state=False, *,\n"
        "                 rngs: nnx.Rngs):\n"
        "        self.cell = cell\n"
        "        self.units = units\n"
        "        self.bidirectional = bidirectional\n"
        "        self.return_sequences = return_sequences\n"
        "        self.return_state = return_state\n"
        "        self.rngs = rngs\n"
        "        self.stack = nnx.List([])\n"
        "\n"
        "    def __call__(self, x):\n"
        "        if not self.stack:\n"
        "            rnns = [nnx.RNN(self.cell(x.shape[-1], self.units, rngs=self.rngs), return_carry=True)\n"
        "                    for _ in range(2 if self.bidirectional else 1)]\n"
        "            rnn = nnx.Bidirectional(*rnns, return_carry=True) if self.bidirectional else rnns[0]\n"
        "            self.stack.append(rnn)\n"
        "        carry, out = self.stack[0](x)\n"
        "        carries = carry if self.bidirectional else (carry,)\n"
        "        # (h,) or, LSTM, (h, c) per direction (an nnx LSTM carry is (c, h))\n"
        "        states = [s[::-1] if isinstance(s, tuple) else (s,) for s in carries]\n"
        "        if not self.return_sequences:\n"
        "            out = jnp.concatenate([s[0] for s in states], axis=-1)\n"
        "        if not self.return_state:\n"
        "            return out\n"
        "        return [out, *(v for s in states for v in s)]\n"),
    "BiasedGRUCell": definition(
        "class BiasedGRUCell(nnx.GRUCell):\n"
        "    \"\"\"nnx.GRUCell with a bias on its recurrent product too, inside the reset gate's product as in\n"
        "    PyTorch's and Keras' GRU.\"\"\"\n"
        "\n"
        "    def __init__(self, in_features, hidden_features, *, rngs: nnx.Rngs):\n"
        "        super().__init__(in_features, hidden_features, rngs=rngs)\n"
        "        self.dense_h = nnx.Linear(hidden_features, 3 * hidden_features,\n"
        "                                  kernel_init=nnx.initializers.orthogonal(), rngs=rngs)\n")}


def write_recurrent(c: OpCall) -> ast.expr:
    """`TorchRecurrent(nnx.LSTMCell, input_size, hidden_size, ..., rngs=rngs)` for a layer with PyTorch's call,
    `KerasRecurrent(nnx.LSTMCell, units, ..., rngs=rngs)` for one with Keras'."""
    a = c.attrs
    if known(a["bias"]) is not True:
        raise Refused(f"{CELL[c.op.removesuffix('Cell')]} always has biases (only bias=True is translated)")
    cell = P.name(CELL[c.op.removesuffix("Cell")])
    activation = known(a.get("activation", "tanh"))
    if activation != "tanh":  # a name held by a variable: the function of that name
        function = P.name(f"nnx.{activation}") if activation is not NOT_LITERAL else ast.Subscript(
            ast.Dict([P.lit(n) for n in RNN_ACTIVATIONS], [P.name(f"nnx.{n}") for n in RNN_ACTIVATIONS]),
            a["activation"], ast.Load())
        cell = P.call("partial", cell, activation_fn=function)
    if c.op.endswith("Cell"):  # PyTorch's cell: one step
        return P.call("TorchCell", cell, a["input_size"], a["hidden_size"], rngs=P.name("rngs"))
    if "return_sequences" in a:  # Keras' call
        return P.call("KerasRecurrent", cell, a["hidden_size"], **changed(a, KERAS_CALL), rngs=P.name("rngs"))
    return P.call("TorchRecurrent", cell, a["input_size"], a["hidden_size"], **changed(a, TORCH_CALL),
                  rngs=P.name("rngs"))


def nnx_recurrent_to_ir(w: dict, attrs) -> dict:
    """nnx.RNN's (`cell.<dense>.kernel|bias`) or nnx.Bidirectional's (`forward_rnn.cell...`, `backward_rnn.cell...`)
    weights -> W0, R0, B0 (the cells have no recurrent bias but LSTMCell's, held as the recurrent one)."""
    prefixes = ["forward_rnn.cell.", "backward_rnn.cell."] if "forward_rnn.cell.hi.kernel" in w or \
        "forward_rnn.cell.dense_i.kernel" in w else ["cell."]
    kernels, recurrent, biases = [], [], []
    for p in prefixes:
        if p + "ii.kernel" in w:  # LSTM: one dense layer per gate
            kernels.append(np.concatenate([w[f"{p}{i}.kernel"].T for i, _ in LSTM_GATES]))
            recurrent.append(np.concatenate([w[f"{p}{h}.kernel"].T for _, h in LSTM_GATES]))
            held = np.concatenate([w[f"{p}{h}.bias"] for _, h in LSTM_GATES])
            biases.append(np.concatenate([np.zeros_like(held), held]))
            continue
        gates = w[p + "dense_i.kernel"].shape[1] // w[p + "dense_h.kernel"].shape[0]
        order = GRU_ORDER if gates == 3 else [0]
        kernels.append(gate_blocks(w[p + "dense_i.kernel"].T, order))
        recurrent.append(gate_blocks(w[p + "dense_h.kernel"].T, order))
        given = gate_blocks(w[p + "dense_i.bias"], order)
        biases.append(np.concatenate([given, np.zeros_like(given)]))
    return {"W0": np.stack(kernels), "R0": np.stack(recurrent), "B0": np.stack(biases)}


def recurrent_weights(w: dict, attrs) -> dict:
    """W{l}, R{l}, B{l} -> `stack.{l}[.forward_rnn|.backward_rnn].cell.<dense>.kernel|bias`: input kernels and
    recurrent ones as (in, out); LSTM and SimpleCell: the two biases summed into the one the cell has."""
    op = code_op(w)
    out = {}
    for layer, (kernels, recurrent, biases) in enumerate(code_layers(w)):
        directions, hidden = kernels.shape[0], recurrent.shape[2]
        for d in range(directions):
            cell = f"stack.{layer}." + (("forward_rnn.", "backward_rnn.")[d] if directions == 2 else "") + "cell."
            given, held = np.split(biases[d], 2)
            if op == "LSTM":
                for k, (i, h) in enumerate(LSTM_GATES):
                    block = slice(k * hidden, (k + 1) * hidden)
                    out[f"{cell}{i}.kernel"] = kernels[d][block].T
                    out[f"{cell}{h}.kernel"] = recurrent[d][block].T
                    out[f"{cell}{h}.bias"] = given[block] + held[block]
            else:
                order = GRU_ORDER if op == "GRU" else [0]
                out[f"{cell}dense_i.kernel"] = gate_blocks(kernels[d], order).T
                out[f"{cell}dense_h.kernel"] = gate_blocks(recurrent[d], order).T
                if op == "GRU":
                    out[f"{cell}dense_i.bias"] = gate_blocks(given, order)
                    out[f"{cell}dense_h.bias"] = gate_blocks(held, order)
                else:
                    out[f"{cell}dense_i.bias"] = given + held
    return out
