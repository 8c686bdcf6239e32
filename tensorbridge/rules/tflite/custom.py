"""CUSTOM operators that published TFLite models carry, read into IR ops.

MediaPipe's segmentation and palm/hand detection models (selfie and hair segmentation, the
hand detector) ship three kernels that TFLite itself does not have. Their `custom_options`
are C structs of little-endian int32 fields, not flexbuffers:

- `Convolution2DTransposeBias`: TfLiteTransposeConvParams (padding, stride_w, stride_h);
  inputs x, OHWI filter, bias. SAME pads `max(0, k - (in - 1) % s - 1)` in total, half first.
- `MaxPoolingWithArgmax2D`: TfLitePoolParams (padding, stride_w, stride_h, filter_w, filter_h,
  activation); outputs the maxima and, as float32, each maximum's position inside its window
  (`y * filter_w + x`, plus 0.1 so that truncation reads it back exactly).
- `MaxUnpooling2D`: the same params; puts each value back at its window position.

The pooling pair is read for windows that tile the input (filter == stride, sizes divisible),
the only form these models use; anything else is refused with the reason.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.tflite.base import NHWC, R, filter_weight

custom = functools.partial(R.imports, kind="custom")

#: TfLitePadding
PADDING_SAME, PADDING_VALID = 1, 2


def _params(imp, options: bytes, names: tuple[str, ...]) -> dict[str, int]:
    size = 4 * len(names)
    if len(options) < size:
        raise ModelError(f"{imp.op_name}: custom options hold {len(options)} bytes, {size} expected")
    values = dict(zip(names, struct.unpack_from(f"<{len(names)}i", options)))
    if values["padding"] not in (PADDING_SAME, PADDING_VALID):
        raise ModelError(f"{imp.op_name}: padding {values['padding']} is neither SAME nor VALID")
    return values


_POOL = ("padding", "stride_w", "stride_h", "filter_w", "filter_h", "activation")


def _static_hw(imp, x) -> tuple[int, int]:
    if x.shape is None or len(x.shape) != 4 or not all(isinstance(d, int) for d in x.shape[1:]):
        raise ModelError(f"{imp.op_name}: needs a 4-D input with static height, width and channels")
    return x.shape[1], x.shape[2]


@custom("Convolution2DTransposeBias", produces="ConvTranspose")
def read_transpose_conv_bias(imp, ins, options):
    p = _params(imp, options, ("padding", "stride_w", "stride_h"))
    x, w, b = ins
    in_hw = _static_hw(imp, x)
    strides = [p["stride_h"], p["stride_w"]]
    begin, end = [], []
    for size, k, s in zip(in_hw, w.shape[1:3], strides):
        total = max(0, k - (size - 1) % s - 1) if p["padding"] == PADDING_SAME else 0
        begin.append(total // 2)
        end.append(total - total // 2)
    wt = filter_weight(imp, w, (3, 0, 1, 2), "iohw")  # [out, H, W, in] -> [in, out, H, W]
    return imp.emit("ConvTranspose", [x, wt, b], {"strides": strides, "pads": begin + end, "layout": NHWC})


def _tiles(imp, p, hw: tuple[int, int], divisible: bool) -> tuple[int, int]:
    """The window (filter height, width) when windows tile the image: filter == stride and, for pooling, sizes
    divisible by it; else a clear refusal."""
    fh, fw = p["filter_h"], p["filter_w"]
    if (fh, fw) != (p["stride_h"], p["stride_w"]) or (divisible and (hw[0] % fh or hw[1] % fw)):
        raise ModelError(f"{imp.op_name}: only windows that tile the input are read (filter == stride, sizes "
                         f"divisible); this one has filter {fh}x{fw}, stride {p['stride_h']}x{p['stride_w']} "
                         f"over {hw[0]}x{hw[1]}")
    return fh, fw


def _i64(imp, values):
    return imp.const(np.asarray(values, np.int64), np.int64)


@custom("MaxPoolingWithArgmax2D", produces=("ReduceMax", "ArgMax"))
def read_max_pool_argmax(imp, ins, options):
    p = _params(imp, options, _POOL)
    x = ins[0]
    h, w = _static_hw(imp, x)
    fh, fw = _tiles(imp, p, (h, w), divisible=True)
    oh, ow, c = h // fh, w // fw, x.shape[3]
    blocks = imp.emit("Reshape", [x, _i64(imp, [-1, oh, fh, ow, fw, c])], suffix="blocks")
    windows = imp.emit("Transpose", [blocks], {"perm": [0, 1, 3, 5, 2, 4]}, suffix="windows")
    flat = imp.emit("Reshape", [windows, _i64(imp, [-1, oh, ow, c, fh * fw])], suffix="window")
    y = imp.emit("ReduceMax", [flat, _i64(imp, [-1])], {"keepdims": 0})
    position = imp.emit("ArgMax", [flat], {"axis": -1, "keepdims": 0}, suffix="argmax")
    position = imp.emit("Cast", [position], {"to": "float32"}, suffix="argmax_f32")
    indices = imp.emit("Add", [position, imp.const(np.float32(0.1))], suffix="indices")
    return [imp.fused(y, p["activation"]), indices]


@custom("MaxUnpooling2D", produces=("Equal", "Mul"))
def read_max_unpooling(imp, ins, options):
    p = _params(imp, options, _POOL)
    values, indices = ins
    h, w = _static_hw(imp, values)
    fh, fw = _tiles(imp, p, (h, w), divisible=False)
    c = values.shape[3]
    position = imp.emit("Floor", [indices], suffix="position")
    position = imp.emit("Unsqueeze", [position, _i64(imp, [-1])], suffix="position")
    slots = imp.const(np.arange(fh * fw, dtype=np.float32))
    chosen = imp.emit("Cast", [imp.emit("Equal", [position, slots], suffix="chosen")], {"to": "float32"},
                      suffix="chosen_f32")
    spread = imp.emit("Mul", [chosen, imp.emit("Unsqueeze", [values, _i64(imp, [-1])], suffix="value")],
                      suffix="spread")
    windows = imp.emit("Reshape", [spread, _i64(imp, [-1, h, w, c, fh, fw])], suffix="windows")
    blocks = imp.emit("Transpose", [windows], {"perm": [0, 1, 4, 2, 5, 3]}, suffix="blocks")
    return imp.emit("Reshape", [blocks, _i64(imp, [-1, h * fh, w * fw, c])])
