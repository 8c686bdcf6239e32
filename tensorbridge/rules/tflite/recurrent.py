"""TFLite -> IR: the fused sequence LSTM kernels TensorFlow's converter writes for Keras 2 LSTM layers
(UNIDIRECTIONAL_SEQUENCE_LSTM; a Bidirectional layer is two of them, one over the reversed sequence), and the
fused simple recurrence (UNIDIRECTIONAL_SEQUENCE_RNN). The LSTM kernel bounds the cell state (`cell_clip`, 10 as
the converter writes Keras layers): the IR LSTM's attribute.

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


def _unsupported(ins, opts) -> list[str]:
    why = []
    if _operand(ins, _INPUT_WEIGHTS[0]) is None:
        why.append("coupled input and forget gates (CIFG)")
    if any(_operand(ins, i) is not None for i in _PROJECTION):
        why.append("a projection")
    if any(_operand(ins, i) is not None for i in _LAYER_NORM):
        why.append("layer normalization")
    if opts.FusedActivationFunction() != TANH:
        why.append(f"activation {opts.FusedActivationFunction()} (tanh only)")
    return why


def _stacked(imp, parts, suffix):
    """The gates' tensors in the IR's order, stacked on a new leading (direction) axis."""
    joined = imp.emit("Concat", [parts[k] for k in _IOFC], {"axis": 0}, suffix=suffix)
    return imp.emit("Unsqueeze", [joined, imp.const([0], np.int64)], suffix=f"{suffix}_dir")


@builtin("UNIDIRECTIONAL_SEQUENCE_LSTM", produces="LSTM")
def read_sequence_lstm(imp, ins, opts):
    why = _unsupported(ins, opts)
    if why:
        raise ModelError(f"UNIDIRECTIONAL_SEQUENCE_LSTM with {', '.join(why)} is not supported")
    x = ins[0]
    hidden = ins[_INPUT_WEIGHTS[0]].shape[0]
    w = _stacked(imp, [ins[i] for i in _INPUT_WEIGHTS], "w")
    r = _stacked(imp, [ins[i] for i in _RECURRENT_WEIGHTS], "r")
    biases = [ins[i] for i in _BIASES]
    b = imp.emit("Concat", [imp.emit("Concat", [biases[k] for k in _IOFC], {"axis": 0}, suffix="wb"),
                            imp.const(np.zeros(4 * hidden, np.float32))], {"axis": 0}, suffix="b")
    b = imp.emit("Unsqueeze", [b, imp.const([0], np.int64)], suffix="b_dir")
    peepholes = [_operand(ins, i) for i in _PEEPHOLES]
    p = None
    if any(v is not None for v in peepholes):  # i, f, o -> the IR's i, o, f
        p = imp.emit("Unsqueeze", [imp.emit("Concat", [peepholes[0], peepholes[2], peepholes[1]], {"axis": 0},
                                            suffix="p"), imp.const([0], np.int64)], suffix="p_dir")
    batch_major = not opts.TimeMajor()
    direction_axis = 1 if batch_major else 0  # of the states: [batch, dir, hidden] / [dir, batch, hidden]
    h0, c0 = (imp.emit("Unsqueeze", [ins[i], imp.const([direction_axis], np.int64)], suffix=f"state{i}")
              for i in _STATE)
    attrs = {"hidden_size": int(hidden), "layout": int(batch_major)}
    if opts.CellClip() > 0:  # TensorFlow's converter sets 10 for Keras layers
        attrs["cell_clip"] = float(opts.CellClip())
    y, h, c = imp.emit("LSTM", [x, w, r, b, None, h0, c0, p], attrs, outputs=3, suffix="lstm")
    operands = [int(t) for t in imp.op.InputsAsNumpy()]
    for i, last in zip(_STATE, (h, c)):
        imp.state.write_variable_tensor(operands[i], imp.emit("Squeeze", [last, imp.const([direction_axis],
                                                                                           np.int64)],
                                                              suffix=f"last{i}"))
    return imp.emit("Squeeze", [y, imp.const([2 if batch_major else 1], np.int64)])


@builtin("UNIDIRECTIONAL_SEQUENCE_RNN", produces="RNN")
def read_sequence_rnn(imp, ins, opts):
    """h <- activation(x W^T + h R^T + b) over the sequence: the IR's RNN of one direction (no recurrent bias)."""
    activation = {RELU: "Relu", TANH: "Tanh"}.get(opts.FusedActivationFunction())
    if activation is None:
        raise ModelError(f"UNIDIRECTIONAL_SEQUENCE_RNN with activation {opts.FusedActivationFunction()} is not "
                         "supported (relu and tanh are)")
    x, w, r, bias, state = ins[:5]
    hidden = w.shape[0]
    directions = [imp.emit("Unsqueeze", [v, imp.const([0], np.int64)], suffix=f"{tag}_dir")
                  for v, tag in ((w, "w"), (r, "r"))]
    b = imp.emit("Concat", [bias, imp.const(np.zeros(hidden, np.float32))], {"axis": 0}, suffix="b")
    b = imp.emit("Unsqueeze", [b, imp.const([0], np.int64)], suffix="b_dir")
    batch_major = not opts.TimeMajor()
    direction_axis = 1 if batch_major else 0
    h0 = imp.emit("Unsqueeze", [state, imp.const([direction_axis], np.int64)], suffix="state")
    attrs = {"hidden_size": int(hidden), "layout": int(batch_major), "activations": [activation]}
    y, h = imp.emit("RNN", [x, *directions, b, None, h0], attrs, outputs=2, suffix="rnn")
    operands = [int(t) for t in imp.op.InputsAsNumpy()]
    imp.state.write_variable_tensor(operands[4], imp.emit("Squeeze", [h, imp.const([direction_axis], np.int64)],
                                                          suffix="last"))
    return imp.emit("Squeeze", [y, imp.const([2 if batch_major else 1], np.int64)])
