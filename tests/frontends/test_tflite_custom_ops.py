"""TFLite sources with the CUSTOM ops of MediaPipe's published models and with sparse (DENSIFY) weights.

LiteRT cannot run the custom ops without MediaPipe's kernels, so the expected outputs come from
loop-by-loop NumPy transcriptions of what those kernels compute; the sparse model is written by
TensorFlow's converter and checked against LiteRT.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.cli.main import main
from tensorbridge.errors import ModelError
from tensorbridge.formats.tflite_flatbuffer import FlatbufferWriter
from tensorbridge.frontends.tflite.sparse import DENSE, SPARSE_CSR, Level, densify
from tensorbridge.reference.interpreter import run

SAME, VALID = 1, 2  # TfLitePadding


def _pool_params(k: int, stride: int | None = None) -> bytes:
    s = stride or k
    return struct.pack("<6i", SAME, s, s, k, k, 0) + bytes(16)  # + computed padding values


def _argmax_pool(x, k):
    n, h, w, c = x.shape
    y = np.zeros((n, h // k, w // k, c), np.float32)
    idx = np.zeros_like(y)
    for b, oy, ox, ch in np.ndindex(*y.shape):
        best, at = -np.inf, 0
        for fy in range(k):
            for fx in range(k):
                v = x[b, oy * k + fy, ox * k + fx, ch]
                if v > best:
                    best, at = v, fy * k + fx
        y[b, oy, ox, ch], idx[b, oy, ox, ch] = best, at + 0.1
    return y, idx


def _unpool(v, idx, k):
    n, h, w, c = v.shape
    out = np.zeros((n, h * k, w * k, c), np.float32)
    for b, y, x, ch in np.ndindex(*v.shape):
        i = int(idx[b, y, x, ch])
        out[b, y * k + i // k, x * k + i % k, ch] = v[b, y, x, ch]
    return out


def _transpose_conv_bias(x, w, bias, stride, padding):
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    pads = [max(0, k - (size - 1) % stride - 1) if padding == SAME else 0 for size, k in ((h, kh), (wd, kw))]
    oh, ow = stride * (h - 1) + kh - pads[0], stride * (wd - 1) + kw - pads[1]
    out = np.broadcast_to(bias, (n, oh, ow, o)).astype(np.float64)
    for b, iy, ix in np.ndindex(n, h, wd):
        for fy, fx in np.ndindex(kh, kw):
            y, x_ = iy * stride - pads[0] // 2 + fy, ix * stride - pads[1] // 2 + fx
            if 0 <= y < oh and 0 <= x_ < ow:
                out[b, y, x_] += w[:, fy, fx, :] @ x[b, iy, ix]
    return out.astype(np.float32)


def mediapipe_style_model(path, size: int = 6, stride: int = 2, padding: int = SAME):
    """Argmax pooling -> transposed conv with bias, and unpooling by the argmax: an encoder/decoder step as
    MediaPipe's segmentation models write it."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    fb = FlatbufferWriter()
    x = fb.tensor("image", (1, size, size, 4), "float32")
    half = (1, size // 2, size // 2, 4)
    pooled, indices = fb.tensor("pooled", half, "float32"), fb.tensor("indices", half, "float32")
    fb.custom_op("MaxPoolingWithArgmax2D", [x], [pooled, indices], _pool_params(2))
    up = fb.tensor("unpooled", (1, size, size, 4), "float32")
    fb.custom_op("MaxUnpooling2D", [pooled, indices], [up], _pool_params(2))
    wt, bt = fb.tensor("filter", w.shape, "float32", w), fb.tensor("bias", bias.shape, "float32", bias)
    h = size // 2
    out = stride * (h - 1) + 3 - (max(0, 3 - (h - 1) % stride - 1) if padding == SAME else 0)
    dec = fb.tensor("decoded", (1, out, out, 3), "float32")
    fb.custom_op("Convolution2DTransposeBias", [pooled, wt, bt], [dec], struct.pack("<3i", padding, stride, stride))
    path.write_bytes(fb.finish([x], [up, dec, indices]))
    return w, bias


@pytest.mark.parametrize("size,stride,padding", [(6, 2, SAME), (10, 2, SAME), (6, 2, VALID), (6, 1, SAME)])
def test_mediapipe_custom_ops_read_as_their_kernels_compute(tmp_path, size, stride, padding):
    path = tmp_path / "segmenter.tflite"
    w, bias = mediapipe_style_model(path, size, stride, padding)
    graph = tb.load(path)
    x = np.random.default_rng(1).standard_normal((1, size, size, 4)).astype(np.float32)
    got = run(graph, {graph.inputs[0].name: x})
    pooled, indices = _argmax_pool(x, 2)
    np.testing.assert_array_equal(got[graph.outputs[2].name], indices)
    np.testing.assert_array_equal(got[graph.outputs[0].name], _unpool(pooled, indices, 2))
    np.testing.assert_allclose(got[graph.outputs[1].name], _transpose_conv_bias(pooled, w, bias, stride, padding),
                               rtol=1e-5, atol=1e-5)


def test_custom_ops_convert_to_onnx_and_torch(tmp_path, capsys):
    path = tmp_path / "segmenter.tflite"
    mediapipe_style_model(path)
    for to, dest in (("onnx", tmp_path / "seg.onnx"), ("torch", tmp_path / "seg_torch")):
        # LiteRT cannot run MediaPipe's kernels: the reference interpreter stands for the source, and says so
        assert main(["-q", "convert", str(path), "-o", str(dest), "--to", to]) == 0
        out = capsys.readouterr().out
        assert "PASS" in out and "no kernel for the custom op" in out
        graph = tb.load(path)
        x = np.random.default_rng(2).standard_normal((1, 6, 6, 4)).astype(np.float32)
        report = tb.verify(graph, dest, inputs={graph.inputs[0].name: x}, rtol=1e-5)
        assert report.ok, report.summary()


def test_unknown_custom_op_and_untiled_pooling_are_refused(tmp_path, capsys):
    fb = FlatbufferWriter()
    x = fb.tensor("x", (1, 4, 4, 2), "float32")
    y = fb.tensor("y", (1, 4, 4, 2), "float32")
    fb.custom_op("TFLite_Fancy", [x], [y], b"")
    (tmp_path / "fancy.tflite").write_bytes(fb.finish([x], [y]))
    assert main(["-q", "convert", str(tmp_path / "fancy.tflite"), "-o", str(tmp_path / "f.onnx")]) == 2
    assert "TFLite_Fancy" in capsys.readouterr().err and not (tmp_path / "f.onnx").exists()

    fb = FlatbufferWriter()
    x = fb.tensor("x", (1, 5, 5, 2), "float32")
    y, i = fb.tensor("y", (1, 3, 3, 2), "float32"), fb.tensor("i", (1, 3, 3, 2), "float32")
    fb.custom_op("MaxPoolingWithArgmax2D", [x], [y, i], _pool_params(2))
    (tmp_path / "odd.tflite").write_bytes(fb.finish([x], [y, i]))
    with pytest.raises(ModelError, match="tile the input"):
        tb.load(tmp_path / "odd.tflite")


def test_densify_reads_blocked_and_csr_storage():
    # 4x4, dim 0 dense, dim 1 CSR; values at (0,1), (2,0), (2,3), (3,2)
    levels = [Level(DENSE, 4), Level(SPARSE_CSR, segments=np.array([0, 1, 1, 3, 4]),
                                      indices=np.array([1, 0, 3, 2]))]
    dense = densify(np.array([1, 2, 3, 4], np.float32), (4, 4), [0, 1], [], levels)
    expected = np.zeros((4, 4), np.float32)
    expected[0, 1], expected[2, 0], expected[2, 3], expected[3, 2] = 1, 2, 3, 4
    np.testing.assert_array_equal(dense, expected)
    # 2x4 in 1x2 blocks (dim 1 blocked): rows dense, block columns CSR, the block's entries dense
    levels = [Level(DENSE, 2), Level(SPARSE_CSR, segments=np.array([0, 1, 2]), indices=np.array([1, 0])),
              Level(DENSE, 2)]
    dense = densify(np.arange(1, 5, dtype=np.float32), (2, 4), [0, 1, 2], [1], levels)
    np.testing.assert_array_equal(dense, [[0, 0, 1, 2], [3, 4, 0, 0]])
    with pytest.raises(ModelError, match="stored values"):
        densify(np.zeros(3, np.float32), (4, 4), [0, 1], [], [Level(DENSE, 4), Level(DENSE, 4)])


@pytest.mark.parametrize("half", [False, True], ids=["float32", "float16"])
def test_sparse_weights_from_tensorflows_converter_match_litert(tmp_path, half):
    """Sparse weights, also stored in float16 (DENSIFY, then DEQUANTIZE: MediaPipe's full-range face detector)."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(3)
    kernel = rng.standard_normal((64, 32)).astype(np.float32)
    kernel[rng.random(kernel.shape) < 0.9] = 0  # a pruned layer: the converter stores it sparse

    class Pruned(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 64], tf.float32)])
        def __call__(self, x):
            return tf.nn.relu(tf.matmul(x, kernel) + 0.5)

    module = Pruned()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY] + ([tf.lite.Optimize.DEFAULT] if half else [])
    converter.target_spec.supported_types = [tf.float16] if half else []
    path = tmp_path / "pruned.tflite"
    path.write_bytes(converter.convert())
    assert {"DENSIFY"} | ({"DEQUANTIZE"} if half else set()) <= _builtin_ops(path)  # else the test reads neither
    graph = tb.load(path)
    dest = tb.save(graph, tmp_path / "pruned.onnx")
    x = rng.standard_normal((1, 64)).astype(np.float32)
    report = tb.verify(path, dest, inputs={graph.inputs[0].name: x}, rtol=1e-5)
    assert report.ok, report.summary()
    stored = kernel.astype(np.float16).astype(np.float32) if half else kernel
    np.testing.assert_allclose(run(graph, {graph.inputs[0].name: x})[graph.outputs[0].name],
                               np.maximum(x @ stored + 0.5, 0), rtol=1e-5, atol=1e-5)


def _builtin_ops(path) -> set[str]:
    import tflite

    model = tflite.Model.GetRootAs(bytearray(path.read_bytes()), 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if isinstance(v, int)}
    return {names[max(model.OperatorCodes(i).BuiltinCode(), model.OperatorCodes(i).DeprecatedBuiltinCode())]
            for i in range(model.OperatorCodesLength())}
