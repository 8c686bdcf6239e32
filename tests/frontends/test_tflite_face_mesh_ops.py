"""The CUSTOM ops of MediaPipe's face mesh with attention (Landmarks2TransformMatrix, TransformTensorBilinear,
TransformLandmarks, version 2) against loop-by-loop NumPy transcriptions of MediaPipe's kernels: LiteRT has no
kernels for them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from flatbuffers import flexbuffers

import tensorbridge as tb
from tensorbridge.errors import ModelError
from tensorbridge.formats.tflite_flatbuffer import FlatbufferWriter
from tensorbridge.reference.interpreter import run

SUBSET = [5, 0, 7, 3, 9]  # an odd count: MediaPipe pairs the last index with itself
MATRIX = {"left_rotation_idx": 2, "right_rotation_idx": 6, "target_rotation_radians": 0.3, "output_height": 5,
          "output_width": 6, "scale_x": 1.5, "scale_y": 1.25, "subset_idxs": SUBSET}


def _matrix(landmarks, o):
    """Landmarks2TransformMatrix v2, as MediaPipe's kernel computes it."""
    pts = landmarks[0]
    left, right = pts[o["left_rotation_idx"]], pts[o["right_rotation_idx"]]
    r = o["target_rotation_radians"] - math.atan2(right[1] - left[1], right[0] - left[0])
    chosen = [pts[i] for i in o["subset_idxs"]]
    rotated = [(p[0] * math.cos(r) - p[1] * math.sin(r), p[0] * math.sin(r) + p[1] * math.cos(r)) for p in chosen]
    xs, ys = [p[0] for p in rotated], [p[1] for p in rotated]
    width, height = max(xs) - min(xs), max(ys) - min(ys)
    mx, my = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
    cx, cy = mx * math.cos(-r) - my * math.sin(-r), mx * math.sin(-r) + my * math.cos(-r)
    shift = np.array([[1, 0, 0, cx], [0, 1, 0, cy], [0, 0, 1, 0], [0, 0, 0, 1]])
    turn = np.array([[math.cos(-r), -math.sin(-r), 0, 0], [math.sin(-r), math.cos(-r), 0, 0], [0, 0, 1, 0],
                     [0, 0, 0, 1]])
    scale = np.diag([o["scale_x"] * width / o["output_width"], o["scale_y"] * height / o["output_height"], 1, 1])
    back = np.array([[1, 0, 0, -o["output_width"] / 2], [0, 1, 0, -o["output_height"] / 2], [0, 0, 1, 0],
                     [0, 0, 0, 1]])
    return (shift @ turn @ scale @ back)[None].astype(np.float32)


def _bilinear(image, matrix, out_h, out_w):
    """TransformTensorBilinear v2: each output pixel through the matrix (aligned corners), bilinear, 0 outside."""
    _, h, w, c = image.shape
    mx, my = matrix[0, 0].astype(np.float64), matrix[0, 1].astype(np.float64)
    mx[3] += mx[0] * 0.5 + mx[1] * 0.5 - 0.5
    my[3] += my[0] * 0.5 + my[1] * 0.5 - 0.5
    out = np.zeros((1, out_h, out_w, c), np.float32)
    for oy, ox in np.ndindex(out_h, out_w):
        tx, ty = mx[0] * ox + mx[1] * oy + mx[3], my[0] * ox + my[1] * oy + my[3]
        if tx < 0 or tx > w - 1 or ty < 0 or ty > h - 1:
            continue
        x0, y0 = math.floor(tx), math.floor(ty)

        def read(yy, xx):
            return image[0, yy, xx] if 0 <= yy < h and 0 <= xx < w else np.zeros(c)
        fx, fy = tx - x0, ty - y0
        upper = (1 - fx) * read(y0, x0) + fx * read(y0, x0 + 1)
        lower = (1 - fx) * read(y0 + 1, x0) + fx * read(y0 + 1, x0 + 1)
        out[0, oy, ox] = fy * lower + (1 - fy) * upper
    return out


def _moved(landmarks, matrix):
    """TransformLandmarks v2: (x, y) through the matrix's first two rows, z kept."""
    out = landmarks.copy()
    for i in range(landmarks.shape[1]):
        x, y = landmarks[0, i, :2]
        out[0, i, 0] = matrix[0, 0, 0] * x + matrix[0, 0, 1] * y + matrix[0, 0, 3]
        out[0, i, 1] = matrix[0, 1, 0] * x + matrix[0, 1, 1] * y + matrix[0, 1, 3]
    return out


def _face_mesh_model(path, version: int = 2):
    """landmarks -> matrix -> (a crop of the image, the landmarks moved by the matrix), as the face mesh uses them."""
    fb = FlatbufferWriter()
    landmarks, image = fb.tensor("landmarks", (1, 10, 3), "float32"), fb.tensor("image", (1, 12, 14, 3), "float32")
    matrix = fb.tensor("matrix", (1, 4, 4), "float32")
    crop, moved = fb.tensor("crop", (1, 5, 6, 3), "float32"), fb.tensor("moved", (1, 10, 3), "float32")
    fb.custom_op("Landmarks2TransformMatrix", [landmarks], [matrix], flexbuffers.Dumps(MATRIX), version)
    fb.custom_op("TransformTensorBilinear", [image, matrix], [crop],
                 flexbuffers.Dumps({"output_height": 5, "output_width": 6}), version)
    fb.custom_op("TransformLandmarks", [landmarks, matrix], [moved], b"", version)
    path.write_bytes(fb.finish([landmarks, image], [matrix, crop, moved]))


@pytest.mark.parametrize("seed", range(4))
def test_face_mesh_ops_read_as_their_kernels_compute(tmp_path, seed):
    _face_mesh_model(tmp_path / "mesh.tflite")
    graph = tb.load(tmp_path / "mesh.tflite")
    rng = np.random.default_rng(seed)
    landmarks = (rng.uniform(0, 12, (1, 10, 3))).astype(np.float32)  # pixel positions on the 12 x 14 image
    image = rng.standard_normal((1, 12, 14, 3)).astype(np.float32)
    got_matrix, got_crop, got_moved = (run(graph, {"landmarks": landmarks, "image": image})[v.name]
                                       for v in graph.outputs)
    matrix = _matrix(landmarks, MATRIX)
    np.testing.assert_allclose(got_matrix, matrix, rtol=1e-5, atol=1e-5)
    crop = _bilinear(image, matrix, 5, 6)
    assert np.count_nonzero(crop) > crop.size // 4  # the crop samples the image (not only pixels outside it)
    np.testing.assert_allclose(got_crop, crop, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_moved, _moved(landmarks, matrix), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("to", ["onnx", "torch", "keras", "tflite", "flax"])
def test_face_mesh_ops_convert_to_every_target(tmp_path, to):
    from tests.ops.onnx_models import DEST, LIBRARY

    if to != "onnx":
        pytest.importorskip(LIBRARY[to])
    _face_mesh_model(tmp_path / "mesh.tflite")
    graph = tb.load(tmp_path / "mesh.tflite")
    dest = tb.save(graph, tmp_path / {"onnx": "m.onnx", **DEST}[to], to=to)
    rng = np.random.default_rng(5)
    feeds = {"landmarks": rng.uniform(0, 12, (1, 10, 3)).astype(np.float32),
             "image": rng.standard_normal((1, 12, 14, 3)).astype(np.float32)}
    report = tb.verify(graph, dest, inputs=feeds, trust_code=True)
    assert report.ok, report.summary()


def test_version_1_is_refused_by_name(tmp_path):
    _face_mesh_model(tmp_path / "mesh_v1.tflite", version=1)
    with pytest.raises(ModelError, match="version 1"):
        tb.load(tmp_path / "mesh_v1.tflite")
