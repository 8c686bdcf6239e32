"""An ONNX Loop in PyTorch code, written as a Python while loop, and in `.pt2`, unrolled where its length is
constant (torch.export keeps no loop), against onnxruntime running the loop itself."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import tensorbridge as tb
from tensorbridge.errors import UnsupportedError
from tests.ops.onnx_models import counted_loop

pytest.importorskip("torch")


def test_a_loop_of_constant_length_reaches_pt2_unrolled(tmp_path):
    src = tmp_path / "loop.onnx"
    onnx.save(counted_loop(4), src)
    dest = tb.save(tb.load(src), tmp_path / "loop.pt2")
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    report = tb.verify(src, dest, inputs={"x": x})
    assert report.ok and [o.shape for o in report.outputs] == [[2, 3], [4, 2, 3]], report.summary()


def test_pytorch_code_runs_the_loop_any_number_of_times(tmp_path):
    src = tmp_path / "counted.onnx"
    onnx.save(counted_loop(None), src)
    dest = tb.save(tb.load(src), tmp_path / "counted_torch", to="torch")
    assert "while " in (dest / "model.py").read_text()
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for trips in (0, 1, 5):  # no iteration: the scan output is empty, as onnxruntime's
        report = tb.verify(src, dest, inputs={"x": x, "trips": np.array(trips)})
        assert report.ok and report.outputs[1].shape == [trips, 2, 3], report.summary()
    with pytest.raises(UnsupportedError, match="torch.export keeps no loop"):
        tb.save(tb.load(src), tmp_path / "counted.pt2")
