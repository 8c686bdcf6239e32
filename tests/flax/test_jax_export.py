"""Serialized jax.export artifacts (StableHLO) as a source: Flax NNX modules and JAX functions exported here,
read op by op, converted to every target and run in its runtime against jax running the artifact itself."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import ModelError, UnsupportedError
from tensorbridge.verification.harness import runner_for
from tests.flax.test_jax_source import _model

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
jnp = jax.numpy


class Recurrent(nnx.Module):
    """An LSTM over time (nnx.RNN: a scan, which StableHLO writes as a while loop) and a dense head."""

    def __init__(self, *, rngs):
        self.rnn = nnx.RNN(nnx.LSTMCell(8, 12, rngs=rngs))
        self.head = nnx.Linear(12, 3, rngs=rngs)

    def __call__(self, x):
        carry = (jnp.zeros((x.shape[0], 12)), jnp.zeros((x.shape[0], 12)))
        return self.head(self.rnn(x, initial_carry=carry))


def control_flow(x):
    """cond on a computed predicate, a while loop, cumsum, argmax, take and a reflect pad."""
    y = jnp.cumsum(x, axis=1) + jnp.argmax(x, axis=-1, keepdims=True).astype(x.dtype)
    y = jax.lax.cond(y.sum() > 0, lambda t: t * 2, lambda t: t - 1, y)
    y = jax.lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 1.5 + 1), (0, y))[1]
    return jnp.pad(y, ((0, 0), (2, 1)), mode="reflect"), jnp.take(y, jnp.array([0, 2]), axis=1)


def _export(fn, x, path, *params):
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), (*params, x))
    path.write_bytes(jax.export.export(jax.jit(fn))(*specs).serialize())
    return path


def _module_fn(model):
    """The module as a function of its input, its parameters closed over (traced, as NNX transforms need)."""
    graphdef, state = nnx.split(model)
    return lambda x: nnx.merge(graphdef, jax.tree.map(jax.lax.stop_gradient, state))(x)


@pytest.mark.parametrize("target", ["onnx", "torch", "keras", "flax", "tflite"])
def test_an_exported_cnn_converts_to_every_target(target, tmp_path):
    model, x = _model("cnn")
    source = _export(_module_fn(model), x, tmp_path / "cnn.jaxexport")
    dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(target, f"m_{target}")
    report = tb.convert(str(source), str(dest), to=target, verify=True, trust_code=True)
    assert report.status == "PASS", report
    runner = runner_for(str(dest)) if target != "flax" else None
    if runner is not None:  # the target computes the module's logits, and they vary with the input
        expected = np.asarray(model(jnp.asarray(x)))
        got = runner.run({runner.inputs[0][0]: x})[runner.outputs[0]]
        assert np.abs(got - expected).max() <= 1e-5 * np.abs(expected).max()
        assert np.abs(expected - expected[::-1]).max() > 1e-3 * np.abs(expected).max()


def test_an_exported_transformer_block_converts(tmp_path):
    model, x = _model("block")
    source = _export(_module_fn(model), x, tmp_path / "block.jaxexport")
    for target, dest in (("onnx", tmp_path / "b.onnx"), ("torch", tmp_path / "b_torch")):
        assert tb.convert(str(source), str(dest), to=target, verify=True).status == "PASS"


def test_control_flow_reads_as_if_and_loop(tmp_path):
    x = np.random.default_rng(0).standard_normal((3, 6)).astype(np.float32)
    source = _export(control_flow, x, tmp_path / "flow.jaxexport")
    graph = tb.load(str(source))
    assert {"If", "Loop", "CumSum", "ArgMax"} <= set(graph.op_histogram())
    assert tb.convert(str(source), str(tmp_path / "flow.onnx"), verify=True).status == "PASS"
    report = tb.convert(str(source), str(tmp_path / "flow_flax"), to="flax", verify=True, trust_code=True)
    assert report.status == "PASS", report.summary()  # jax.lax.cond and while_loop again
    report = tb.convert(str(source), str(tmp_path / "flow_torch"), to="torch", verify=True)
    assert report.status == "PASS", report.summary()  # torch.cond and a Python while loop
    report = tb.convert(str(source), str(tmp_path / "flow.pt2"), verify=True)
    assert report.status == "PASS", report.summary()  # torch.cond and torch.while_loop


def test_an_lstm_scan_becomes_a_loop(tmp_path):
    model = Recurrent(rngs=nnx.Rngs(0))
    x = np.random.default_rng(0).standard_normal((2, 6, 8)).astype(np.float32)
    source = _export(_module_fn(model), x, tmp_path / "rnn.jaxexport")
    assert "Loop" in tb.load(str(source)).op_histogram()
    assert tb.convert(str(source), str(tmp_path / "rnn.onnx"), verify=True).status == "PASS"


def test_parameters_passed_as_arguments_become_named_weights(tmp_path):
    model, x = _model("cnn")
    graphdef, state = nnx.split(model)
    params = nnx.to_pure_dict(state)  # what jax.export serializes: plain dicts of arrays

    def predict(params, x):
        filled = jax.tree.map(lambda v: v, state)
        nnx.replace_by_pure_dict(filled, params)
        return nnx.merge(graphdef, filled)(x)

    source = _export(predict, x, tmp_path / "cnn.jaxexport", params)
    graph = tb.load(str(source), params=params)
    assert [v.name for v in graph.inputs] == ["x"] and {"conv.kernel", "bn.mean"} <= set(graph.constants)
    got = tb.run(graph, {"x": x})[graph.outputs[0].name]
    np.testing.assert_allclose(got, model(jnp.asarray(x)), rtol=1e-5, atol=1e-5)
    with pytest.raises(ModelError, match="argument 0"):
        tb.load(str(source), params={"w": np.zeros((2, 2), np.float32)})


def test_ops_without_rules_are_listed_together(tmp_path):
    def fn(x):
        return jnp.sort(x, axis=-1) + jax.lax.population_count(x.astype(np.int32)).astype(np.float32)

    source = _export(fn, np.ones((2, 3), np.float32), tmp_path / "f.jaxexport")
    with pytest.raises(UnsupportedError) as e:
        tb.load(str(source))
    assert {b.op for b in e.value.blockers} == {"stablehlo.sort", "stablehlo.popcnt"}


def test_damaged_and_symbolic_artifacts_are_refused_cleanly(tmp_path):
    model, x = _model("cnn")
    data = _export(_module_fn(model), x, tmp_path / "cnn.jaxexport").read_bytes()
    for k, damaged in enumerate((data[: len(data) // 2], b"\x00" * 64, data[:8] + bytes(200) + data[208:])):
        path = tmp_path / f"damaged{k}.jaxexport"
        path.write_bytes(damaged)
        with pytest.raises(ModelError, match="not a readable jax.export artifact|does not parse"):
            tb.load(str(path))
    with pytest.raises(ModelError, match="not a readable jax.export artifact"):  # verify reads it the same way
        tb.verify(str(tmp_path / "damaged1.jaxexport"), str(tmp_path / "damaged0.jaxexport"))
    b, = jax.export.symbolic_shape("b")
    spec = jax.ShapeDtypeStruct((b, 4), np.float32)
    (tmp_path / "sym.jaxexport").write_bytes(jax.export.export(jax.jit(jnp.tanh))(spec).serialize())
    with pytest.raises(ModelError, match="symbolic dimensions"):
        tb.load(str(tmp_path / "sym.jaxexport"))


def test_a_recursive_module_is_refused_not_followed():
    from jax.interpreters import mlir

    from tensorbridge.frontends.jax.stablehlo import StableHloImporter

    text = """module @m {
      func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
        %0 = call @f(%x) : (tensor<2xf32>) -> tensor<2xf32>
        return %0 : tensor<2xf32>
      }
      func.func private @f(%x: tensor<2xf32>) -> tensor<2xf32> {
        %0 = call @f(%x) : (tensor<2xf32>) -> tensor<2xf32>
        return %0 : tensor<2xf32>
      }
    }"""
    with mlir.make_ir_context(), pytest.raises(UnsupportedError, match="recursion"):
        StableHloImporter("m").run_module(mlir.ir.Module.parse(text), [[["2"], "float32"]], [0], [])
