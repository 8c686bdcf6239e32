"""Layers that frameworks write as plain ops, read back as the IR's op: GELU in its erf forms (PyTorch's ONNX
export, TensorFlow's gelu through erfc, the IR's own decomposition) and TensorFlow's tensordot around a Dense."""

from __future__ import annotations

import numpy as np
import pytest

from tensorbridge.ir.graph import Graph
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.reference.interpreter import run

ROOT2 = np.float32(np.sqrt(2.0))


def _c(g, name, value):
    return g.add_constant(name, np.array(value, np.float32))


def _onnx_export_form(g, x):  # x * (erf(x / sqrt 2) + 1) * 0.5
    gate = g.op("Add", g.op("Erf", g.op("Div", x, _c(g, "root2", ROOT2))), _c(g, "one", 1.0))
    return g.op("Mul", g.op("Mul", x, gate), _c(g, "half", 0.5))


def _tensorflow_form(g, x):  # 0.5 * x * (1 - erf(-x * (1 / sqrt 2))), TensorFlow's erfc as read
    erf = g.op("Erf", g.op("Mul", g.op("Neg", x), _c(g, "inv_root2", 1 / ROOT2)))
    return g.op("Mul", g.op("Mul", _c(g, "half", 0.5), x), g.op("Sub", _c(g, "one", 1.0), erf))


def _decomposed_form(g, x):  # the IR's own decomposition, made by legalizing this Gelu in the test
    return g.op("Gelu", x)


@pytest.mark.parametrize("form", [_onnx_export_form, _tensorflow_form, _decomposed_form])
def test_gelu_in_its_erf_forms_is_recovered(form):
    g = Graph()
    x = g.add_input("x", np.float32, (3, 7))
    g.outputs = [form(g, x)]
    if form is _decomposed_form:
        legalize(g, lambda n: "no" if n.op == "Gelu" else None, "test")
    feeds = {"x": np.linspace(-4, 4, 21, dtype=np.float32).reshape(3, 7)}
    before = run(g, feeds)[g.outputs[0].name]
    recover_patterns(g)
    assert [n.op for n in g.nodes] == ["Gelu"]
    np.testing.assert_allclose(run(g, feeds)[g.outputs[0].name], before, rtol=1e-6, atol=1e-7)


def test_a_gelu_like_product_of_another_scale_is_not_recovered():
    g = Graph()
    x = g.add_input("x", np.float32, (3, 7))
    gate = g.op("Add", g.op("Erf", g.op("Div", x, _c(g, "two", 2.0))), _c(g, "one", 1.0))
    g.outputs = [g.op("Mul", g.op("Mul", x, gate), _c(g, "half", 0.5))]
    recover_patterns(g)
    assert "Gelu" not in {n.op for n in g.nodes}


@pytest.mark.parametrize("keeps_last_axis", [True, False])
def test_tensordot_around_a_dense_is_the_dense(keeps_last_axis):
    """Reshape(Dense(Reshape(x, [rows, K]), W), x's leading dims + [N]) -> Dense(x, W); a flattening that does
    not keep x's last axis is another computation and stays."""
    g = Graph()
    x = g.add_input("x", np.float32, (2, 3, 4))
    flat = [6, 4] if keeps_last_axis else [4, 6]
    w = g.add_constant("w", np.random.default_rng(0).standard_normal((flat[1], 5)).astype(np.float32))
    rows = g.op("Reshape", x, g.add_constant("flat", np.array(flat, np.int64)))
    y = g.op("Dense", rows, w)
    out = [2, 3, 5] if keeps_last_axis else [2, 2, 5]
    g.outputs = [g.op("Reshape", y, g.add_constant("back", np.array(out, np.int64)))]
    feeds = {"x": np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)}
    before = run(g, feeds)[g.outputs[0].name]
    recover_patterns(infer_shapes(g))  # matched on shapes, as readers give them
    assert ([n.op for n in g.nodes] == ["Dense"]) == keeps_last_axis
    np.testing.assert_allclose(run(g, feeds)[g.outputs[0].name], before, rtol=1e-6, atol=1e-6)


def test_gelu_is_fused_for_a_writer_that_has_the_layer():
    """An ONNX source keeps its ops as spelled; the Keras writer (and LiteRT through it, which has no erf) fuses
    the formula into its GELU layer."""
    from tensorbridge.passes.recover import fuse_layers

    g = Graph()
    x = g.add_input("x", np.float32, (3, 7))
    g.outputs = [_onnx_export_form(g, x)]
    feeds = {"x": np.linspace(-4, 4, 21, dtype=np.float32).reshape(3, 7)}
    before = run(g, feeds)[g.outputs[0].name]
    fuse_layers(g, lambda node: None)
    assert [n.op for n in g.nodes] == ["Gelu"]
    np.testing.assert_allclose(run(g, feeds)[g.outputs[0].name], before, rtol=1e-6, atol=1e-7)
