"""TFLite -> IR: the fused sequence kernels — UNIDIRECTIONAL_SEQUENCE_LSTM (TensorFlow's converter writes one per
Keras 2 LSTM layer; a Bidirectional layer is two of them, one over the reversed sequence), BIDIRECTIONAL_SEQUENCE_LSTM
(older converters and hand-built models: both directions in one kernel, outputs merged or one per direction) and the
simple recurrences UNIDIRECTIONAL_ and BIDIRECTIONAL_SEQUENCE_RNN. The LSTM kernels bound the cell state
(`cell_clip`, 10 as the converter writes Keras layers): the IR LSTM's attribute.

The kernels' state operands are variable tensors: LiteRT starts them at zero and writes the last hidden and
cell state back into them, so a call continues from the previous one. They read as state (frontends/tflite/
state.py): inputs starting at zero, and the kernel's last state as the `_next` outputs.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.tflite.base import builtin

RELU, TANH = 1, 4
#: operand positions: input, input-to-gate weights (i f c o), recurrent weights, peepholes (i f o), biases (i f c o),
#: projection weight and bias, the two state variables, layer-norm coefficients (i f c o)
_INPUT_WEIGHTS, _RECURRENT_WEIGHTS, _PEEPHOLES, _BIASES = (1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11), (12, 13, 14, 15)
_PROJECTION, _STATE, _LAYER_NORM = (16, 17), (18, 19), (20, 21, 22, 23)
#: the IR's (ONNX's) gate order: input, output, forget, cell; TFLite's is input, forget, cell, output
_IOFC = (0, 3, 1, 2)


def _operand(ins, i):
    return ins[i] if i < len(ins) else None


def _unsupported(ins, opts, first: int = 0, layer_norm: tuple = ()) -> list[str]:
    """What the IR's LSTM cannot hold in the direction whose weight operands follow operand `first`."""
    why = []
    if _operand(ins, first + _INPUT_WEIGHTS[0]) is None:
        why.append("coupled input and forget gates (CIFG)")
    if any(_operand(ins, first + i) is not None for i in _PROJECTION):
        why.append("a projection")
    if any(_operand(ins, i) is not None for i in layer_norm):
        why.append("layer normalization")
    if opts.FusedActivationFunction() != TANH:
        why.append(f"activation {opts.FusedActivationFunction()} (tanh only)")
    return why


def _gates(imp, parts, suffix):
    """The gates' tensors in the IR's order, joined into one direction's row."""
    return imp.emit("Concat", [parts[k] for k in _IOFC], {"axis": 0}, suffix=suffix)


def _by_direction(imp, parts, axis, suffix):
    """One tensor per direction, stacked on a new direction axis `axis`."""
    parts = [imp.emit("Unsqueeze", [v, imp.const([axis], np.int64)], suffix=f"{suffix}{d}")
             for d, v in enumerate(parts)]
    return parts[0] if len(parts) == 1 else imp.emit("Concat", parts, {"axis": axis}, suffix=suffix)


def _lstm_weights(imp, ins, first: int = 0):
    """One direction's (w, r, b, peepholes or None) rows from its operands following operand `first`."""
    def at(i):
        return _operand(ins, first + i)
    hidden = at(_INPUT_WEIGHTS[0]).shape[0]
    w = _gates(imp, [at(i) for i in _INPUT_WEIGHTS], "w")
    r = _gates(imp, [at(i) for i in _RECURRENT_WEIGHTS], "r")
    b = imp.emit("Concat", [_gates(imp, [at(i) for i in _BIASES], "wb"),
                            imp.const(np.zeros(4 * hidden, np.float32))], {"axis": 0}, suffix="b")
    i, f, o = (at(k) for k in _PEEPHOLES)
    p = None if i is None else imp.emit("Concat", [i, o, f], {"axis": 0}, suffix="p")  # the IR's i, o, f
    return w, r, b, p


def _write_states(imp, last, state_operands, direction_axis):
    """The kernel's last states (direction axis `direction_axis`) written back into its variable tensors."""
    operands = [int(t) for t in imp.op.InputsAsNumpy()]
    for d, i in enumerate(state_operands):
        one = last if len(state_operands) == 1 else imp.emit(
            "Slice", [last, *(imp.const([v], np.int64) for v in (d, d + 1, direction_axis))], suffix=f"last{i}")
        imp.state.write_variable_tensor(operands[i], imp.emit("Squeeze", [one, imp.const([direction_axis],
                                                                                          np.int64)],
                                                              suffix=f"state{i}"))


def _sequences(imp, y, batch_major, directions, merged):
    """The kernel's output(s) from the IR's Y ([T, dir, B, H] or batch-major [B, T, dir, H]): the directions
    side by side on the last axis when merged, else one output per direction."""
    axis = 2 if batch_major else 1
    if directions == 2 and merged:
        if not batch_major:
            y = imp.emit("Transpose", [y], {"perm": [0, 2, 1, 3]}, suffix="time_major")
        return imp.emit("Reshape", [y, imp.const([0, 0, -1], np.int64)], suffix="merged")
    halves = [y] if directions == 1 else imp.emit("Split", [y, imp.const([1, 1], np.int64)], {"axis": axis},
                                                  outputs=2, suffix="direction")
    outputs = [imp.emit("Squeeze", [half, imp.const([axis], np.int64)]) for half in halves]
    return outputs[0] if directions == 1 else outputs


def _read_lstm(imp, ins, opts, weights, state_operands, merged=True):
    """The IR LSTM over one or two directions' (w, r, b, p); the kernel's state variables as explicit state."""
    w, r, b = (_by_direction(imp, [row[k] for row in weights], 0, tag) for k, tag in enumerate(("w", "r", "b")))
    hidden = int(ins[_INPUT_WEIGHTS[0]].shape[0])
    peepholes = [row[3] for row in weights]
    p = None if all(v is None for v in peepholes) else _by_direction(
        imp, [imp.const(np.zeros(3 * hidden, np.float32)) if v is None else v for v in peepholes], 0, "p")
    batch_major = not opts.TimeMajor()
    direction_axis = 1 if batch_major else 0  # of the states: [batch, dir, hidden] / [dir, batch, hidden]
    h0 = _by_direction(imp, [ins[i] for i in state_operands[0::2]], direction_axis, "hidden")
    c0 = _by_direction(imp, [ins[i] for i in state_operands[1::2]], direction_axis, "cell")
    attrs = {"hidden_size": hidden, "layout": int(batch_major),
             "direction": "forward" if len(weights) == 1 else "bidirectional"}
    if opts.CellClip() > 0:  # TensorFlow's converter sets 10 for Keras layers
        attrs["cell_clip"] = float(opts.CellClip())
    y, h, c = imp.emit("LSTM", [ins[0], w, r, b, None, h0, c0, p], attrs, outputs=3, suffix="lstm")
    _write_states(imp, h, state_operands[0::2], direction_axis)
    _write_states(imp, c, state_operands[1::2], direction_axis)
    return _sequences(imp, y, batch_major, len(weights), merged)


@builtin("UNIDIRECTIONAL_SEQUENCE_LSTM", produces="LSTM")
def read_sequence_lstm(imp, ins, opts):
    why = _unsupported(ins, opts, layer_norm=_LAYER_NORM)
    if why:
        raise ModelError(f"UNIDIRECTIONAL_SEQUENCE_LSTM with {', '.join(why)} is not supported")
    return _read_lstm(imp, ins, opts, [_lstm_weights(imp, ins)], _STATE)


#: BIDIRECTIONAL_SEQUENCE_LSTM: input, the forward direction's weight operands (as above, to the projection), the
#: backward's, the states (forward hidden, cell; backward hidden, cell), then an auxiliary input and its weights
_BACKWARD, _BIDIRECTIONAL_STATE, _AUX_INPUT = 17, (35, 36, 37, 38), 39


@builtin("BIDIRECTIONAL_SEQUENCE_LSTM", produces="LSTM")
def read_bidirectional_sequence_lstm(imp, ins, opts):
    why = list(dict.fromkeys(_unsupported(ins, opts) + _unsupported(ins, opts, _BACKWARD)))
    if any(v is not None for v in ins[_AUX_INPUT:]):
        why.append("an auxiliary input")
    if why:
        raise ModelError(f"BIDIRECTIONAL_SEQUENCE_LSTM with {', '.join(why)} is not supported")
    weights = [_lstm_weights(imp, ins), _lstm_weights(imp, ins, _BACKWARD)]
    return _read_lstm(imp, ins, opts, weights, _BIDIRECTIONAL_STATE, merged=opts.MergeOutputs())


def _rnn_activation(imp, opts) -> str:
    activation = {RELU: "Relu", TANH: "Tanh"}.get(opts.FusedActivationFunction())
    if activation is None:
        raise ModelError(f"{imp.op_name} with activation {opts.FusedActivationFunction()} is not supported (relu "
                         "and tanh are)")
    return activation


def _read_rnn(imp, ins, opts, directions, merged=True):
    """h <- activation(x W^T + h R^T + b) over the sequence: the IR's RNN (no recurrent bias) over `directions`,
    each an operand position of its (weights, recurrent weights, bias, hidden-state variable)."""
    activation = _rnn_activation(imp, opts)
    hidden = ins[directions[0]].shape[0]
    w, r = (_by_direction(imp, [ins[d + k] for d in directions], 0, tag) for k, tag in enumerate(("w", "r")))
    zeros = imp.const(np.zeros(hidden, np.float32))
    b = _by_direction(imp, [imp.emit("Concat", [ins[d + 2], zeros], {"axis": 0}, suffix="b")
                            for d in directions], 0, "b")
    batch_major = not opts.TimeMajor()
    direction_axis = 1 if batch_major else 0
    h0 = _by_direction(imp, [ins[d + 3] for d in directions], direction_axis, "state")
    attrs = {"hidden_size": int(hidden), "layout": int(batch_major), "activations": [activation] * len(directions),
             "direction": "forward" if len(directions) == 1 else "bidirectional"}
    y, h = imp.emit("RNN", [ins[0], w, r, b, None, h0], attrs, outputs=2, suffix="rnn")
    _write_states(imp, h, [d + 3 for d in directions], direction_axis)
    return _sequences(imp, y, batch_major, len(directions), merged)


@builtin("UNIDIRECTIONAL_SEQUENCE_RNN", produces="RNN")
def read_sequence_rnn(imp, ins, opts):
    return _read_rnn(imp, ins, opts, [1])


@builtin("BIDIRECTIONAL_SEQUENCE_RNN", produces="RNN")
def read_bidirectional_sequence_rnn(imp, ins, opts):
    """Input, then per direction (forward, backward) its weights, recurrent weights, bias and state; then an
    auxiliary input and its weights."""
    if any(v is not None for v in ins[9:]):
        raise ModelError("BIDIRECTIONAL_SEQUENCE_RNN with an auxiliary input is not supported")
    return _read_rnn(imp, ins, opts, [1, 5], merged=opts.MergeOutputs())
