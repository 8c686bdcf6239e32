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
    tiny = np.abs(y[3:]) * 1e-8  # a sigmoid of large negative logits: every value within atol of 0
    assert "within the absolute tolerance (1e-06) of 0" in module.conclusiveness(tiny, tiny[::-1], atol=1e-6)
    assert module.conclusiveness(tiny * 1e3, tiny[::-1] * 1e3, atol=1e-6) == ""


def test_the_reference_interpreter_names_the_runtime_whose_arithmetic_differs(tmp_path):
    """Two runtimes disagree by float32-sized amounts; the reference interpreter runs the source to the target
    runtime's output, so the source runtime is the odd one: INCONCLUSIVE, naming it, instead of FAIL. A
    difference beyond rounding is one of meaning (a misread model agrees with the reference interpreter's run of
    the same reading): the failure stands."""
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
    right, off = np.maximum(x, 0), np.maximum(x, 0) * (1 + 3e-4)

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
    for misread in (right * 1.01, np.where(x > 1, 0, right)):  # a source runtime that means another function
        report, whole = verdict(misread, right)
        assert not report.runtime_differs and whole.status == "FAIL"


def test_a_model_that_amplifies_rounding_is_inconclusive_not_failed(tmp_path):
    """y = (x*1e8 + 1) - x*1e8 is 1 in float64 and rounding noise in float32: two float32 runtimes that disagree
    on it say nothing about the conversion, and the report says why; where only the source runtime is far from
    the float64 result (the model misread), the failure stands."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    from tensorbridge.api import load
    from tensorbridge.reference.interpreter import run
    from tensorbridge.verification.compare import Report
    from tensorbridge.verification.harness import _arbitrate

    big = numpy_helper.from_array(np.array(1e8, np.float32), "big")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    nodes = [h.make_node("Mul", ["x", "big"], ["s"]), h.make_node("Add", ["s", "one"], ["t"]),
             h.make_node("Sub", ["t", "s"], ["y"])]
    graph = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [64])],
                         [h.make_tensor_value_info("y", T.FLOAT, [64])], [big, one])
    path = tmp_path / "cancel.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8), path)
    x = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    float32 = run(load(path), {"x": x})["y"]
    assert np.abs(float32 - 1).max() >= 1  # the float32 result is noise

    class Runtime:
        name = "source rt"

    def verdict(source_says):
        report = compare("y", "y", source_says, source_says + 3)
        _arbitrate(lambda: load(path), tmp_path / "unreadable.onnx", (Runtime(), Runtime()), ({"x": x}, {"x": x}),
                   [("y", "y")], ({"y": source_says}, {"y": source_says + 3}), [report], None, None, {})
        return report, Report("s", "t", [report], {})

    report, whole = verdict(float32)
    assert "amplifies float32 rounding" in report.runtime_differs and whole.status == "INCONCLUSIVE"
    assert "--inputs" in report.runtime_differs

    nodes[1] = h.make_node("Add", ["x", "one"], ["t"])  # a well-conditioned model: y = x + 1 - 1e8 x
    onnx.save(h.make_model(h.make_graph(nodes, "g", graph.input, graph.output, [big, one]),
                           opset_imports=[h.make_opsetid("", 17)], ir_version=8), path)
    report, whole = verdict(np.full(64, 5.0, np.float32))
    assert not report.runtime_differs and whole.status == "FAIL"


def test_float32_runtimes_drifting_from_the_float64_result_are_named_not_blamed(tmp_path):
    """MediaPipe's deep pose model: LiteRT and onnxruntime both land 2.4e-4 from the float64 result, the reference
    interpreter's float32 run (float64 sums) 1.5e-5: the model amplifies float32 rounding (INCONCLUSIVE). A source
    runtime that drifts alone, no farther than float32 arithmetic goes, is the odd one out; one farther than that
    means another function (the failure stands)."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper

    from tensorbridge.api import load
    from tensorbridge.verification.harness import _flag_rounding_amplified

    graph = h.make_graph([h.make_node("Mul", ["x", "two"], ["y"])], "g", [h.make_tensor_value_info("x", T.FLOAT, [64])],
                         [h.make_tensor_value_info("y", T.FLOAT, [64])],
                         [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    path = tmp_path / "double.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8), path)
    x = np.random.default_rng(0).uniform(1, 2, 64).astype(np.float32)
    exact = 2 * x

    class Runtime:
        name = "source rt"

    def verdict(source_says, target_says):
        report = compare("y", "y", source_says, target_says)
        _flag_rounding_amplified(lambda: load(path), Runtime(), {"x": x}, [("y", "y")],
                                 ({"y": source_says}, {"y": exact}, {"y": target_says}), [report], None, None, {})
        return report

    assert "amplifies float32 rounding" in verdict(exact * (1 + 3e-4), exact * (1 - 3e-4)).runtime_differs
    assert "source rt is the odd one out" in verdict(exact * (1 + 3e-4), exact).runtime_differs
    assert not verdict(exact * 1.01, exact).runtime_differs  # another function: the failure stands
    assert not verdict(exact * 1.01, exact * (1 - 3e-4)).runtime_differs
