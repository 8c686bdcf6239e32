"""Keras 3 -> IR: the convolutional LSTMs (ConvLSTM1D/2D/3D), unrolled over their time steps.

Each step convolves the step's input with the kernel (the layer's strides, padding, dilation; the bias added
there) and the carried state with the recurrent kernel ("same", stride 1), as Keras's ConvLSTMCell does, and
applies the LSTM's gates (i, f, c, o along the channels). The first step starts from zero state, so its
recurrent terms are left out rather than computed from zeros. The IR has no convolutional LSTM op: the steps
are its Conv, Split and elementwise ops, which every target holds.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.ir_spellings import int64s
from tensorbridge.rules.keras.base import (
    NHWC,
    activate,
    int_list,
    layer,
    padding_attrs,
    require_channels_last,
    to_numpy,
)


@layer("ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", produces=("Conv", "Split", "Sigmoid", "Tanh"))
def read_conv_lstm(imp, layer, inputs, node):
    cell = layer.cell
    require_channels_last(cell)
    if layer.stateful or len(inputs) > 1:
        raise ModelError(f"{layer.name}: stateful ConvLSTM layers and initial states are not read")
    x = inputs[0]
    steps = x.shape[1] if x.shape is not None else None
    if not isinstance(steps, int):
        raise ModelError(f"{layer.name}: a ConvLSTM is unrolled over its time steps, which must be static "
                         f"(input shape {x.shape})")
    kernel, recurrent = to_numpy(cell.kernel), to_numpy(cell.recurrent_kernel)  # [*k, in, 4F], [*k, F, 4F]
    rank = kernel.ndim - 2
    to_ir = (rank + 1, rank, *range(rank))  # -> [4F, in, *k]
    w = imp.weight("kernel", np.transpose(kernel, to_ir))
    r = imp.weight("recurrent_kernel", np.transpose(recurrent, to_ir))
    b = imp.weight("bias", to_numpy(cell.bias)) if cell.use_bias else None
    x_attrs = padding_attrs(cell, {"strides": int_list(cell.strides, rank),
                                   "dilations": int_list(cell.dilation_rate, rank), "layout": NHWC})
    h_attrs = {"strides": [1] * rank, "dilations": [1] * rank, "auto_pad": "SAME_UPPER", "layout": NHWC}
    filters = recurrent.shape[rank]
    order = range(steps - 1, -1, -1) if layer.go_backwards else range(steps)
    h = c = None
    outputs = []
    for t in order:
        xt = imp.emit("Gather", [x, int64s(imp, t)], {"axis": 1}, suffix=f"step{t}")
        z = imp.emit("Conv", [xt, w] + ([b] if b is not None else []), x_attrs, suffix=f"step{t}_input")
        if h is not None:
            z = imp.emit("Add", [z, imp.emit("Conv", [h, r], h_attrs, suffix=f"step{t}_state")], suffix=f"step{t}")
        i, f, g, o = imp.emit("Split", [z, int64s(imp, [filters] * 4)], {"axis": -1}, outputs=4,
                              suffix=f"step{t}_gates")
        i, f, o = (activate(imp, cell, v, name=cell.recurrent_activation, suffix=f"step{t}_gate") for v in (i, f, o))
        new = imp.emit("Mul", [i, activate(imp, cell, g, suffix=f"step{t}_candidate")], suffix=f"step{t}_new")
        c = new if c is None else imp.emit("Add", [imp.emit("Mul", [f, c], suffix=f"step{t}_kept"), new],
                                           suffix=f"step{t}_c")
        h = imp.emit("Mul", [o, activate(imp, cell, c, suffix=f"step{t}_cell")], suffix=f"step{t}_h")
        outputs.append(h)
    if layer.return_sequences:  # in the order the steps ran (reversed in time for go_backwards, as Keras gives)
        rows = [imp.emit("Unsqueeze", [v, int64s(imp, [1])], suffix="sequence") for v in outputs]
        y = imp.emit("Concat", rows, {"axis": 1})
    else:
        y = imp.emit("Identity", [h])
    return [y, imp.emit("Identity", [h], suffix="h"), imp.emit("Identity", [c], suffix="c")] \
        if layer.return_state else y
