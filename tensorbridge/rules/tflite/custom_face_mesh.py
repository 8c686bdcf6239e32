"""MediaPipe's face mesh with attention (face_landmark_with_attention.tflite) crops the feature map around the
lips and each eye with three CUSTOM operators (version 2, options in a flexbuffer map), read into IR ops:

- `Landmarks2TransformMatrix`: from [1, N, 3] landmarks, a 4x4 matrix mapping a crop's pixels to the image's.
  The rotation turns the line from landmark `left_rotation_idx` to `right_rotation_idx` to
  `target_rotation_radians`; the crop is the box of the `subset_idxs` landmarks in that rotated frame, scaled by
  (scale_x, scale_y), over an output of output_width x output_height pixels, its centre at the output's.
- `TransformTensorBilinear`: the crop of an NHWC tensor through that matrix, bilinear with aligned corners
  (MediaPipe adds half a pixel before and takes it after); a pixel that maps outside the input is 0.
- `TransformLandmarks`: [1, N, 2 or 3] landmarks through the matrix's first two rows (z kept).

Each is read as a composite of ordinary ops, so it claims none of them for the TFLite registry (`produces=()`):
reading TFLite's own GridSample or Atan is not what these readers do.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.ir_spellings import atan2
from tensorbridge.rules.tflite.custom import custom, flexbuffer_map


def _version_2(imp) -> None:
    if imp.op_version() != 2:
        raise ModelError(f"{imp.op_name} version {imp.op_version()} is not read (MediaPipe's version 2 is)")


def _i64(imp, values):
    return imp.const(np.asarray(values, np.int64), np.int64)


def _part(imp, x, axes, starts, ends, suffix: str):
    return imp.emit("Slice", [x, _i64(imp, starts), _i64(imp, ends), _i64(imp, axes)], suffix=suffix)


def _f32(imp, value):
    return imp.const(np.float32(value))


def _rows_of_matrix(imp, matrix):
    """The 4x4 matrix's [1, 2, 2] linear part and [1, 1, 2] shift, of its first two rows."""
    linear = _part(imp, matrix, [1, 2], [0, 0], [2, 2], "linear")
    shift = _part(imp, matrix, [1, 2], [0, 3], [2, 4], "shift")
    return linear, imp.emit("Reshape", [shift, _i64(imp, [-1, 1, 2])], suffix="shift")


@custom("TransformLandmarks", produces=())
def read_transform_landmarks(imp, ins, options):
    _version_2(imp)
    landmarks, matrix = ins
    dims = landmarks.shape[-1] if landmarks.shape is not None and len(landmarks.shape) == 3 else None
    if dims not in (2, 3):
        raise ModelError(f"{imp.op_name}: landmarks must be [1, N, 2] or [1, N, 3]")
    linear, shift = _rows_of_matrix(imp, matrix)
    xy = _part(imp, landmarks, [2], [0], [2], "xy") if dims == 3 else landmarks
    moved = imp.emit("Add", [imp.emit("MatMul", [xy, imp.emit("Transpose", [linear], {"perm": [0, 2, 1]},
                                                               suffix="rows")], suffix="turned"), shift],
                     suffix="moved" if dims == 3 else "")
    if dims == 2:
        return moved
    return imp.emit("Concat", [moved, _part(imp, landmarks, [2], [2], [3], "z")], {"axis": 2})


_MATRIX_OPTIONS = ("left_rotation_idx", "right_rotation_idx", "target_rotation_radians", "output_height",
                   "output_width", "scale_x", "scale_y", "subset_idxs")


@custom("Landmarks2TransformMatrix", produces=())
def read_landmarks_to_matrix(imp, ins, options):
    _version_2(imp)
    o = flexbuffer_map(imp, options, _MATRIX_OPTIONS)
    landmarks = ins[0]
    count = landmarks.shape[1] if landmarks.shape is not None and len(landmarks.shape) == 3 else None
    indices = [int(i) for i in o["subset_idxs"]] + [int(o["left_rotation_idx"]), int(o["right_rotation_idx"])]
    if not isinstance(count, int) or not o["subset_idxs"] or not all(0 <= i < count for i in indices):
        raise ModelError(f"{imp.op_name}: landmark indices must lie within [1, N, 3] landmarks of known N")

    def xy(rows, suffix):
        picked = imp.emit("Gather", [landmarks, _i64(imp, rows)], {"axis": 1}, suffix=suffix)
        return (_part(imp, picked, [2], [0], [1], f"{suffix}_x"), _part(imp, picked, [2], [1], [2], f"{suffix}_y"))

    def mul(a, b, suffix):
        return imp.emit("Mul", [a, b], suffix=suffix)

    def turned(x, y, cos, sin, suffix):  # (x cos - y sin, x sin + y cos)
        return (imp.emit("Sub", [mul(x, cos, f"{suffix}_xc"), mul(y, sin, f"{suffix}_ys")], suffix=f"{suffix}_x"),
                imp.emit("Add", [mul(x, sin, f"{suffix}_xs"), mul(y, cos, f"{suffix}_yc")], suffix=f"{suffix}_y"))

    (lx, ly), (rx, ry) = xy([o["left_rotation_idx"]], "left"), xy([o["right_rotation_idx"]], "right")
    line = atan2(imp, imp.emit("Sub", [ry, ly], suffix="dy"), imp.emit("Sub", [rx, lx], suffix="dx"))
    rotation = imp.emit("Sub", [_f32(imp, o["target_rotation_radians"]), line], suffix="rotation")
    cos, sin = imp.emit("Cos", [rotation], suffix="cos"), imp.emit("Sin", [rotation], suffix="sin")
    neg_sin = imp.emit("Neg", [sin], suffix="neg_sin")
    x, y = turned(*xy(sorted(set(int(i) for i in o["subset_idxs"])), "subset"), cos, sin, "rotated")
    box = {}
    for axis, v in (("x", x), ("y", y)):
        for kind in ("Max", "Min"):
            box[axis, kind] = imp.emit(f"Reduce{kind}", [v, _i64(imp, [1])], {"keepdims": 1},
                                       suffix=f"{kind.lower()}_{axis}")
    half = _f32(imp, 0.5)
    middle = [imp.emit("Mul", [imp.emit("Add", [box[a, "Max"], box[a, "Min"]], suffix=f"sum_{a}"), half],
                       suffix=f"middle_{a}") for a in ("x", "y")]
    centre_x, centre_y = turned(*middle, cos, neg_sin, "centre")  # turned back by -rotation
    scale = [imp.emit("Mul", [imp.emit("Sub", [box[a, "Max"], box[a, "Min"]], suffix=f"size_{a}"),
                              _f32(imp, float(o[f"scale_{a}"]) / float(o[f"output_{side}"]))], suffix=f"scale_{a}")
             for a, side in (("x", "width"), ("y", "height"))]
    # shift(centre) . rotate(-rotation) . scale . shift(-output / 2), as rows of the 4x4 matrix
    m00, m01 = imp.emit("Mul", [cos, scale[0]], suffix="m00"), imp.emit("Mul", [sin, scale[1]], suffix="m01")
    m10, m11 = imp.emit("Mul", [neg_sin, scale[0]], suffix="m10"), imp.emit("Mul", [cos, scale[1]], suffix="m11")
    to_x, to_y = _f32(imp, -float(o["output_width"]) / 2), _f32(imp, -float(o["output_height"]) / 2)

    def shift(a, b, centre, suffix):
        return imp.emit("Add", [imp.emit("Add", [imp.emit("Mul", [a, to_x], suffix=f"{suffix}_a"),
                                                 imp.emit("Mul", [b, to_y], suffix=f"{suffix}_b")],
                                         suffix=f"{suffix}_ab"), centre], suffix=suffix)
    zero, one = imp.const(np.zeros((1, 1, 1), np.float32)), imp.const(np.ones((1, 1, 1), np.float32))
    rows = [m00, m01, zero, shift(m00, m01, centre_x, "m03"), m10, m11, zero, shift(m10, m11, centre_y, "m13"),
            zero, zero, one, zero, zero, zero, zero, one]
    flat = imp.emit("Concat", rows, {"axis": 1}, suffix="entries")
    return imp.emit("Reshape", [flat, _i64(imp, [1, 4, 4])])


@custom("TransformTensorBilinear", produces=())
def read_transform_tensor_bilinear(imp, ins, options):
    _version_2(imp)
    o = flexbuffer_map(imp, options, ("output_height", "output_width"))
    x, matrix = ins
    if x.shape is None or len(x.shape) != 4 or not all(isinstance(d, int) for d in x.shape[1:3]):
        raise ModelError(f"{imp.op_name}: needs a 4-D NHWC input of known height and width")
    height, width = x.shape[1:3]
    out_h, out_w = int(o["output_height"]), int(o["output_width"])
    linear, shift = _rows_of_matrix(imp, matrix)
    # aligned corners: the shift gains half of each column, less half a pixel
    half_columns = imp.emit("Mul", [imp.emit("ReduceSum", [linear, _i64(imp, [2])], {"keepdims": 0},
                                             suffix="columns"), _f32(imp, 0.5)], suffix="half_columns")
    shift = imp.emit("Add", [shift, imp.emit("Sub", [imp.emit("Unsqueeze", [half_columns, _i64(imp, [1])]),
                                                     _f32(imp, 0.5)], suffix="aligned")], suffix="aligned_shift")
    ys, xs = np.meshgrid(np.arange(out_h, dtype=np.float32), np.arange(out_w, dtype=np.float32), indexing="ij")
    pixels = imp.const(np.stack([xs.ravel(), ys.ravel()], axis=-1)[None])  # [1, out_h * out_w, 2]: (x, y)
    points = imp.emit("Add", [imp.emit("MatMul", [pixels, imp.emit("Transpose", [linear], {"perm": [0, 2, 1]},
                                                                    suffix="rows")], suffix="mapped"), shift],
                      suffix="points")
    last = np.array([width - 1, height - 1], np.float32)  # the last pixel's (x, y)
    limits = imp.const(last)
    inside = imp.emit("And", [imp.emit("GreaterOrEqual", [points, _f32(imp, 0.0)], suffix="after_start"),
                              imp.emit("LessOrEqual", [points, limits], suffix="before_end")], suffix="inside")
    kept = imp.emit("Cast", [imp.emit("ReduceMin", [imp.emit("Cast", [inside], {"to": "int32"}, suffix="inside_i"),
                                                    _i64(imp, [2])], {"keepdims": 1}, suffix="both")],
                    {"to": "float32"}, suffix="kept")
    # GridSample's aligned corners: -1 and 1 are the first and last pixels' centres
    scaled = imp.emit("Mul", [points, imp.const(np.float32(2) / np.maximum(last, 1))], suffix="scaled")
    grid = imp.emit("Sub", [scaled, _f32(imp, 1.0)], suffix="normalised")
    grid = imp.emit("Reshape", [grid, _i64(imp, [1, out_h, out_w, 2])], suffix="grid")
    nchw = imp.emit("Transpose", [x], {"perm": [0, 3, 1, 2]}, suffix="nchw")
    sampled = imp.emit("GridSample", [nchw, grid], {"align_corners": 1, "mode": "linear", "padding_mode": "zeros"})
    sampled = imp.emit("Transpose", [sampled], {"perm": [0, 2, 3, 1]}, suffix="nhwc")
    mask = imp.emit("Reshape", [kept, _i64(imp, [1, out_h, out_w, 1])], suffix="mask")
    return imp.emit("Mul", [sampled, mask])

