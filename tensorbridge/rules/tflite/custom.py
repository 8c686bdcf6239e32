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

`TFLite_Detection_PostProcess`, the last op of TensorFlow's object-detection SSD models (its options a
flexbuffer map): the box encodings decoded against the anchors, each box's best class (after the background
ones), one greedy NMS over those scores (or, with use_regular_nms, an NMS per class and the best scores of
all), the selected boxes, classes and scores padded with zeros to
max_detections (LiteRT leaves those rows as they were in memory), and their count.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.tensorflow_semantics import pad_rows
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


#: TFLite_Detection_PostProcess's options and their defaults (None: required)
_DETECTION_OPTIONS = {"max_detections": None, "max_classes_per_detection": 1, "detections_per_class": 100,
                      "use_regular_nms": False, "nms_score_threshold": None, "nms_iou_threshold": None,
                      "num_classes": None, "y_scale": None, "x_scale": None, "h_scale": None, "w_scale": None}


def flexbuffer_map(imp, options: bytes, required=()) -> dict:
    """A custom op's options as the flexbuffer map they are, holding every `required` key; else a clear error."""
    from flatbuffers import flexbuffers

    try:
        given = flexbuffers.Loads(options)
    except Exception as e:  # a malformed buffer raises whatever its reader meets
        raise ModelError(f"{imp.op_name}: custom options are not a flexbuffer map ({type(e).__name__})") from e
    if not isinstance(given, dict):
        raise ModelError(f"{imp.op_name}: custom options are not a flexbuffer map")
    missing = [k for k in required if k not in given]
    if missing:
        raise ModelError(f"{imp.op_name}: custom options lack {', '.join(missing)}")
    return given


def _detection_options(imp, options: bytes) -> dict:
    given = flexbuffer_map(imp, options, [k for k, v in _DETECTION_OPTIONS.items() if v is None])
    out = {**_DETECTION_OPTIONS, **{k: v for k, v in given.items() if k in _DETECTION_OPTIONS}}
    if min(out["max_classes_per_detection"], out["num_classes"]) != 1:
        raise ModelError(f"{imp.op_name} with max_classes_per_detection {out['max_classes_per_detection']} is not "
                         "read (only each box's best class)")
    return out


@custom("TFLite_Detection_PostProcess", produces="NonMaxSuppression")
def read_detection_postprocess(imp, ins, options):
    o = _detection_options(imp, options)
    encodings, predictions, anchors = ins[:3]
    if predictions.shape is None or len(predictions.shape) != 3 or not isinstance(predictions.shape[2], int):
        raise ModelError(f"{imp.op_name}: class predictions must be [1, boxes, classes] with known classes")
    first_class = predictions.shape[2] - int(o["num_classes"])  # after the background columns
    boxes = _decoded_boxes(imp, encodings, anchors, [np.float32(o[k]) for k in ("y_scale", "x_scale", "h_scale",
                                                                               "w_scale")])
    scores = imp.emit("Slice", [predictions, _i64(imp, [first_class]), _i64(imp, [predictions.shape[2]]),
                                _i64(imp, [2])], suffix="classes")
    scores = imp.emit("Reshape", [scores, _i64(imp, [-1, int(o["num_classes"])])], suffix="per_box")
    select = _per_class if o["use_regular_nms"] else _best_class
    chosen, labels, kept = select(imp, boxes, scores, o)
    limit = int(o["max_detections"])
    picked = [imp.emit("Gather", [boxes, chosen], {"axis": 0}, suffix="boxes"),
              imp.emit("Cast", [labels], {"to": "float32"}, suffix="labels_f32"), kept]
    outs = [imp.emit("Unsqueeze", [pad_rows(imp, v, limit), _i64(imp, [0])]) for v in picked]
    count = imp.emit("Cast", [imp.emit("Shape", [chosen], suffix="count")], {"to": "float32"}, suffix="count")
    return outs + [count]


def _nms(imp, boxes, classes_first, limit: int, o):
    """The IR's NMS over one batch of boxes and `classes_first` [classes, boxes] scores: (class, box) rows.
    LiteRT keeps scores >= the threshold, the IR's NMS those above it: the next float32 down is that bound."""
    floor = np.nextafter(np.float32(o["nms_score_threshold"]), np.float32(-np.inf))
    selected = imp.emit("NonMaxSuppression", [
        imp.emit("Unsqueeze", [boxes, _i64(imp, [0])], suffix="batch"),
        imp.emit("Unsqueeze", [classes_first, _i64(imp, [0])], suffix="scores"), _i64(imp, [limit]),
        imp.const(np.float32(o["nms_iou_threshold"])), imp.const(np.float32(floor))], suffix="selected")
    return imp.emit("Slice", [selected, _i64(imp, [1]), _i64(imp, [3]), _i64(imp, [1])], suffix="rows")


def _best_class(imp, boxes, scores, o):
    """The fast form: one NMS over each box's best score, up to max_detections; (boxes, their classes, scores)."""
    best = imp.emit("ReduceMax", [scores, _i64(imp, [1])], {"keepdims": 0}, suffix="best_score")
    label = imp.emit("ArgMax", [scores], {"axis": 1, "keepdims": 0}, suffix="best_class")
    rows = _nms(imp, boxes, imp.emit("Unsqueeze", [best, _i64(imp, [0])], suffix="one_class"),
                int(o["max_detections"]), o)
    chosen = imp.emit("Gather", [rows, _i64(imp, 1)], {"axis": 1}, suffix="chosen")
    return chosen, imp.emit("Gather", [label, chosen], {"axis": 0}, suffix="labels"), \
        imp.emit("Gather", [best, chosen], {"axis": 0}, suffix="kept_scores")


def _per_class(imp, boxes, scores, o):
    """use_regular_nms: an NMS per class (up to min(detections_per_class, max_detections) each), then the
    max_detections best scores of all the classes' selections, best first."""
    classes_first = imp.emit("Transpose", [scores], {"perm": [1, 0]}, suffix="per_class")
    rows = _nms(imp, boxes, classes_first, min(int(o["detections_per_class"]), int(o["max_detections"])), o)
    found = imp.emit("GatherND", [classes_first, rows], suffix="found")
    count = imp.emit("Min", [imp.emit("Shape", [found], suffix="found_count"), _i64(imp, [int(o["max_detections"])])],
                     suffix="top")
    kept, order = imp.emit("TopK", [found, count], {"axis": 0, "largest": 1, "sorted": 1}, outputs=2,
                           suffix="best")
    rows = imp.emit("Gather", [rows, order], {"axis": 0}, suffix="best_rows")
    return imp.emit("Gather", [rows, _i64(imp, 1)], {"axis": 1}, suffix="chosen"), \
        imp.emit("Gather", [rows, _i64(imp, 0)], {"axis": 1}, suffix="labels"), kept


def _decoded_boxes(imp, encodings, anchors, scales):
    """[boxes, 4] corners (ymin, xmin, ymax, xmax) from centre-size encodings (ty, tx, th, tw) and anchors
    (y, x, h, w), in LiteRT's order of operations: centre = t / scale * anchor size + anchor centre, half size =
    0.5 * exp(t / scale) * anchor size."""
    def column(v, i, tag):
        part = imp.emit("Gather", [v, _i64(imp, i)], {"axis": -1}, suffix=tag)
        return imp.emit("Reshape", [part, _i64(imp, [-1])], suffix=tag)
    t = [column(encodings, i, f"t{k}") for i, k in enumerate("yxhw")]
    a = [column(anchors, i, f"anchor_{k}") for i, k in enumerate("yxhw")]
    scaled = [imp.emit("Div", [ti, imp.const(s)], suffix="scaled") for ti, s in zip(t, scales)]
    centre = [imp.emit("Add", [imp.emit("Mul", [scaled[i], a[i + 2]], suffix="offset"), a[i]], suffix="centre")
              for i in (0, 1)]
    half = [imp.emit("Mul", [imp.emit("Mul", [imp.const(np.float32(0.5)), imp.emit("Exp", [scaled[i + 2]],
                                                                                    suffix="size")], suffix="size"),
                             a[i + 2]], suffix="half") for i in (0, 1)]
    corners = [imp.emit(op, [centre[i], half[i]], suffix="corner") for op in ("Sub", "Add") for i in (0, 1)]
    corners = [imp.emit("Unsqueeze", [c, _i64(imp, [1])], suffix="corner") for c in corners]
    return imp.emit("Concat", corners, {"axis": 1}, suffix="boxes")
