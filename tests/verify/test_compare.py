"""The comparison metrics mean what their docs say."""

import numpy as np

from tensorbridge.verification.compare import compare
from tensorbridge.verification.tolerance import default_tolerance


def test_metrics_on_a_known_difference():
    y = np.array([[1.0, -2.0, 0.0, 4.0]], np.float32)
    z = np.array([[1.1, -2.0, 0.5, 4.0]], np.float32)
    r = compare("o", "o", y, z, rtol=0.2, atol=0.0)
    assert np.isclose(r.max_abs, 0.5)
    assert np.isclose(r.mean_rel, (0.1 / 1 + 0 + 0) / 3, rtol=1e-5)  # zero reference left out
    assert np.isclose(r.robust_rel, 0.5 / 4)
    assert r.ok
    assert not compare("o", "o", y, z, rtol=0.1, atol=0.0).ok


def test_topk_agreement_for_class_scores():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((4, 20)).astype(np.float32)
    z = y.copy()
    z[0, np.argmax(y[0])] -= 100  # row 0 loses its best class
    r = compare("o", "o", y, z)
    assert r.topk["top5"] == 0.75 and not r.ok


def test_shape_nan_and_integer_rules():
    assert not compare("o", "o", np.zeros(3), np.zeros(4)).ok
    assert not compare("o", "o", np.array([np.nan, 1.0]), np.array([1.0, 1.0])).ok
    assert compare("o", "o", np.array([np.nan, 1.0]), np.array([np.nan, 1.0])).ok
    assert not compare("o", "o", np.array([1, 2]), np.array([1, 3])).ok
    assert default_tolerance(np.int64) == (0.0, 0.0)


def test_chunked_metrics_equal_whole_array_metrics(monkeypatch):
    """Large outputs are compared a chunk at a time; the metrics do not depend on the chunk size."""
    from tensorbridge.verification import compare as module

    rng = np.random.default_rng(1)
    y = rng.standard_normal((30, 12)).astype(np.float32)
    z = y + rng.standard_normal(y.shape).astype(np.float32) * 1e-3
    y[0, 0] = z[0, 0] = np.nan
    y[1, 1], z[1, 1] = np.inf, np.inf
    y[2, :] = 0.0
    whole = compare("o", "o", y, z)
    whole_spread = module.conclusiveness(y, z)
    monkeypatch.setattr(module, "CHUNK", 7)
    chunked = compare("o", "o", y, z)
    for metric in ("max_abs", "mean_rel", "robust_rel", "cosine", "ok", "topk", "problem"):
        assert np.allclose(getattr(chunked, metric), getattr(whole, metric)) if isinstance(
            getattr(whole, metric), float) else getattr(chunked, metric) == getattr(whole, metric), metric
    assert module.conclusiveness(y, z) == whole_spread
    assert module.conclusiveness(y, y.copy()) == "the output is the same for two different inputs"
    assert "no spread" in module.conclusiveness(np.full(50, 3.0), y)


def test_the_reference_interpreter_names_the_runtime_whose_arithmetic_differs(tmp_path):
    """Two runtimes disagree; the reference interpreter runs the source to the target runtime's output, so the
    source runtime is the odd one: INCONCLUSIVE, naming it, instead of FAIL."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    from tensorbridge.api import load
    from tensorbridge.verification.compare import Report
    from tensorbridge.verification.harness import _arbitrate

    graph = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [h.make_tensor_value_info("x", T.FLOAT, [4])],
                         [h.make_tensor_value_info("y", T.FLOAT, [4])])
    path = tmp_path / "relu.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8), path)
    x = np.array([-1.0, 0.5, 2.0, -3.0], np.float32)
    right, off = np.maximum(x, 0), np.maximum(x, 0) * 1.01

    class Runtime:
        def __init__(self, name):
            self.name = name

    def verdict(source_says, target_says):
        report = compare("y", "y", source_says, target_says)
        _arbitrate(lambda: load(path), path, (Runtime("source rt"), Runtime("target rt")), ({"x": x}, {"x": x}),
                   [("y", "y")], ({"y": source_says}, {"y": target_says}), [report], None, None, {})
        return report, Report("s", "t", [report], {})

    report, whole = verdict(off, right)
    assert "source rt is the odd one out" in report.runtime_differs and whole.status == "INCONCLUSIVE"
    report, whole = verdict(right, off)
    assert "target rt is the odd one out" in report.runtime_differs and whole.status == "INCONCLUSIVE"
    report, whole = verdict(off, off * 1.5)  # neither agrees with the reference: the failure stands
    assert not report.runtime_differs and whole.status == "FAIL"
