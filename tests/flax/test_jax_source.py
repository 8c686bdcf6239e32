"""JAX as a source: Flax NNX modules written here, traced to a jaxpr and read into the IR, converted to every
target and run in its runtime against the module itself; NNX layers read as one op each; Flax code round trips."""

from __future__ import annotations

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge import trust
from tensorbridge.errors import UnsupportedError
from tensorbridge.verification.harness import runner_for

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
jnp = jax.numpy


class CNN(nnx.Module):
    def __init__(self, *, rngs):
        self.conv = nnx.Conv(3, 8, (3, 3), padding="SAME", rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.down = nnx.Conv(8, 16, (3, 3), strides=2, padding=((1, 1), (1, 1)), rngs=rngs)
        self.head = nnx.Linear(16, 5, rngs=rngs)

    def __call__(self, x):
        x = jax.nn.relu(self.bn(self.conv(x)))
        x = nnx.max_pool(jax.nn.silu(self.down(x)), (2, 2), strides=(2, 2))
        return self.head(jnp.mean(x, axis=(1, 2)))


class Block(nnx.Module):
    """A pre-norm transformer block: causal self-attention written out, and a GELU MLP."""

    def __init__(self, dim=32, heads=4, *, rngs):
        self.heads = heads
        self.norm1, self.norm2 = nnx.LayerNorm(dim, rngs=rngs), nnx.LayerNorm(dim, rngs=rngs)
        self.qkv, self.proj = nnx.Linear(dim, 3 * dim, rngs=rngs), nnx.Linear(dim, dim, rngs=rngs)
        self.up, self.down = nnx.Linear(dim, 4 * dim, rngs=rngs), nnx.Linear(4 * dim, dim, rngs=rngs)

    def __call__(self, x):
        b, s, d = x.shape
        q, k, v = jnp.split(self.qkv(self.norm1(x)), 3, axis=-1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(0, 2, 1, 3) for t in (q, k, v))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // self.heads)
        scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9)
        attended = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
        x = x + self.proj(attended)
        return x + self.down(jax.nn.gelu(self.up(self.norm2(x)), approximate=False))


class Tagger(nnx.Module):
    def __init__(self, *, rngs):
        self.embed = nnx.Embed(50, 16, rngs=rngs)
        self.rnn = nnx.RNN(nnx.LSTMCell(16, 24, rngs=rngs))
        self.out = nnx.Linear(24, 6, rngs=rngs)

    def __call__(self, tokens):
        return self.out(self.rnn(self.embed(tokens)))


class Attending(nnx.Module):
    """nnx.MultiHeadAttention layers: self-attention, and causal cross-attention of other widths without biases."""

    def __init__(self, *, rngs):
        self.norm = nnx.LayerNorm(16, rngs=rngs)
        self.attend = nnx.MultiHeadAttention(4, 16, qkv_features=32, decode=False, rngs=rngs)
        self.cross = nnx.MultiHeadAttention(2, 16, in_kv_features=16, out_features=8, use_bias=False, decode=False,
                                            rngs=rngs)

    def __call__(self, x, mask=None):
        h = self.norm(x + self.attend(x, mask=mask))
        return self.cross(h, x, is_causal=True)


def _calibrated(model, x):
    """BatchNorm statistics from data (random statistics would make every comparison meaningless)."""
    model.train()
    for layer in [m for _, m in model.iter_modules() if isinstance(m, nnx.BatchNorm)]:
        layer.momentum = 0.0
    model(x)
    model.eval()
    return model


MODELS = {
    "cnn": (lambda: CNN(rngs=nnx.Rngs(0)), lambda rng: rng.standard_normal((2, 16, 16, 3)).astype(np.float32)),
    "block": (lambda: Block(rngs=nnx.Rngs(1)), lambda rng: rng.standard_normal((2, 8, 32)).astype(np.float32)),
    "tagger": (lambda: Tagger(rngs=nnx.Rngs(2)), lambda rng: rng.integers(0, 50, (2, 7)).astype(np.int32)),
    "attending": (lambda: Attending(rngs=nnx.Rngs(3)), lambda rng: rng.standard_normal((2, 6, 16)).astype(np.float32)),
}


def _model(name):
    build, make_input = MODELS[name]
    x = make_input(np.random.default_rng(0))
    model = build()
    if name == "cnn":
        model = _calibrated(model, jnp.asarray(x))
    return model, x


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("target", ["onnx", "torch", "keras", "tflite"])
def test_flax_module_to_every_target(name, target, tmp_path):
    model, x = _model(name)
    expected = np.asarray(model(jnp.asarray(x)))
    other = np.asarray(model(jnp.asarray(MODELS[name][1](np.random.default_rng(1)))))
    assert np.abs(expected - other).max() > 1e-3 * np.abs(expected).max()  # the outputs vary with the input
    graph = tb.load(model, example_inputs=(x,))
    dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(target, f"m_{target}")
    tb.save(graph, dest, to=target)
    runner = runner_for(str(dest))
    got = runner.run({runner.inputs[0][0]: x})[runner.outputs[0]]
    rel = np.abs(np.asarray(got, np.float64) - expected).max() / np.abs(expected).max()
    assert rel <= 1e-5, rel


def test_nnx_layers_read_as_one_op_each():
    model, x = _model("cnn")
    hist = tb.load(model, example_inputs=(x,)).op_histogram()
    assert hist == {"Conv": 2, "BatchNormalization": 1, "Relu": 1, "SiLU": 1, "MaxPool": 1, "ReduceMean": 1,
                    "Dense": 1}, hist
    graph = tb.load(model, example_inputs=(x,))
    weights = {v.name for v in graph.constants.values() if v.meta.get("role") != "literal"}
    assert {"conv.kernel", "bn.mean", "head.kernel"} <= weights


def test_nnx_multi_head_attention_reads_as_one_op_and_round_trips(tmp_path):
    model, x = _model("attending")
    graph = tb.load(model, example_inputs=(x,))
    assert graph.op_histogram() == {"LayerNormalization": 1, "Add": 1, "MultiHeadAttention": 2}
    assert {"attend.query.kernel", "cross.out.kernel"} <= set(graph.constants)
    folder = tb.save(graph, tmp_path / "attending", to="flax")
    assert (folder / "model.py").read_text().count("nnx.MultiHeadAttention(") == 2
    assert tb.load(folder, trust_code=True).op_histogram() == graph.op_histogram()


def test_a_masked_nnx_attention_keeps_what_jax_computes_for_a_query_that_sees_no_key(tmp_path):
    """JAX averages the values for a query whose mask hides every key (the plain IR Attention gives zeros): the
    layer reads as a MultiHeadAttention that averages there, and every target computes what the module does."""
    model, x = _model("attending")
    mask = np.ones((2, 1, 6, 6), bool)
    mask[0, :, 2] = False
    graph = tb.load(model, example_inputs=(x, mask))
    layers = [n for n in graph.nodes if n.op == "MultiHeadAttention"]
    assert len(layers) == 2 and layers[0].attrs.get("empty_rows") == "average"
    expected = np.asarray(model(jnp.asarray(x), jnp.asarray(mask)))
    for target in ("onnx", "torch", "flax"):
        dest = tb.save(graph, tmp_path / ("m.onnx" if target == "onnx" else f"m_{target}"), to=target)
        with trust.trusting():
            runner = runner_for(str(dest))
            got = runner.run({"x": x, "mask": mask})[runner.outputs[0]]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=target)
    assert (tmp_path / "m_flax" / "model.py").read_text().count("nnx.MultiHeadAttention(") == 2


def test_a_function_with_params_keeps_them_as_weights():
    params = {"w": np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32), "b": np.ones(3, np.float32)}

    def predict(params, x):
        return jnp.tanh(x @ params["w"] + params["b"])

    x = np.ones((2, 4), np.float32)
    graph = tb.load(predict, format="flax", example_inputs=(x,), params=params)
    assert {"w", "b"} <= set(graph.constants) and [v.name for v in graph.inputs] == ["x"]
    np.testing.assert_allclose(tb.run(graph, {"x": x})[graph.outputs[0].name], predict(params, x), rtol=1e-6)


def test_flax_code_round_trip_keeps_the_op_histogram(tmp_path):
    from tensorbridge.backends.flax.codegen import emit

    model, x = _model("cnn")
    folder = tb.save(tb.load(model, example_inputs=(x,)), tmp_path / "cnn", to="flax")
    first = emit(tb.load(model, example_inputs=(x,))).g.op_histogram()
    again = tb.load(folder, trust_code=True)
    assert emit(again).g.op_histogram() == first
    assert tb.verify(again, folder, trust_code=True).status == "PASS"


def test_unknown_primitives_are_listed_together():
    def fn(x):
        return jax.lax.cummax(x, axis=0) + jax.lax.population_count(x.astype(np.int32)).astype(np.float32)

    with pytest.raises(UnsupportedError) as e:
        tb.load(fn, format="flax", example_inputs=(np.ones((3,), np.float32),))
    assert {b.op for b in e.value.blockers} == {"cummax", "population_count"}


def test_an_lstm_rnn_reads_as_one_lstm_op():
    model, x = _model("tagger")
    graph = tb.load(model, example_inputs=(x,))
    assert graph.op_histogram().get("LSTM") == 1 and "Sigmoid" not in graph.op_histogram()
    np.testing.assert_allclose(tb.run(graph, {"tokens": x})[graph.outputs[0].name], model(jnp.asarray(x)),
                               rtol=1e-5, atol=1e-6)


def test_a_scan_reads_as_a_scan_and_unrolls_for_code_targets_without_one(tmp_path):
    def smooth(xs, c0):
        def step(c, v):
            c = 0.5 * c + v
            return c, jnp.tanh(c)
        return jax.lax.scan(step, c0, xs, reverse=True)

    rng = np.random.default_rng(0)
    xs, c0 = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    graph = tb.load(smooth, format="flax", example_inputs=(xs, c0))
    assert graph.op_histogram().get("Scan") == 1, graph.op_histogram()
    want = [np.asarray(w) for w in smooth(xs, c0)]
    got = tb.run(graph, {"xs": xs, "c0": c0})
    for v, w in zip(graph.outputs, want):
        np.testing.assert_allclose(got[v.name], w, rtol=1e-6, atol=1e-7)
    for target, dest in (("onnx", "scan.onnx"), ("torch", "scan_torch"), ("flax", "scan_flax")):
        path = tb.save(graph, tmp_path / dest, to=target)
        runner = runner_for(str(path))
        out = runner.run({"xs": xs, "c0": c0})
        for name, w in zip(runner.outputs, want):
            np.testing.assert_allclose(out[name], w, rtol=1e-5, atol=1e-6, err_msg=target)
    code = (tmp_path / "scan_flax" / "model.py").read_text()
    assert "jax.lax.scan(" in code and "reverse=True" in code, code  # Flax keeps the loop


def test_a_cond_becomes_torch_cond_in_pytorch_code_and_pt2(tmp_path):
    def fn(x):
        return jax.lax.cond(x.sum() > 0, lambda t: t * 2, lambda t: jnp.tanh(t) - 1, x)

    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    graph = tb.load(fn, format="flax", example_inputs=(x,))
    for target, dest in (("torch", "cond_torch"), ("pt2", "cond.pt2")):
        path = tb.save(graph, tmp_path / dest, to=target)
        with trust.trusting():
            runner = runner_for(str(path))
            for sample in (x, -np.abs(x)):  # both branches
                np.testing.assert_allclose(runner.run({"x": sample})[runner.outputs[0]], fn(sample), rtol=1e-5)
    assert "torch.cond(" in (tmp_path / "cond_torch" / "model.py").read_text()
    back = tb.load(tmp_path / "cond.pt2")  # torch.cond read back as one If
    assert back.op_histogram().get("If") == 1
    for sample in (x, -np.abs(x)):
        np.testing.assert_allclose(tb.run(back, {back.inputs[0].name: sample})[back.outputs[0].name], fn(sample),
                                   rtol=1e-5)


def test_cond_and_while_loop_read_as_if_and_loop_and_write_back(tmp_path):
    def fn(x):
        y = jax.lax.cond(x.sum() > 0, lambda t: t * 2, lambda t: jnp.tanh(t) - 1, x)
        return jax.lax.while_loop(lambda s: s[0] < 4, lambda s: (s[0] + 1, s[1] * 0.5 + s[1].mean()), (0, y))[1]

    x = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    graph = tb.load(fn, format="flax", example_inputs=(x,))
    assert {"If", "Loop"} <= set(graph.op_histogram())
    for sample in (x, -np.abs(x)):  # both branches
        np.testing.assert_allclose(tb.run(graph, {"x": sample})[graph.outputs[0].name], fn(sample), rtol=1e-5)
    for target, dest in (("onnx", "flow.onnx"), ("flax", "flow_flax")):  # Flax: jax.lax.cond and while_loop
        path = tb.save(graph, tmp_path / dest, to=target)
        with trust.trusting():
            runner = runner_for(str(path))
            for sample in (x, -np.abs(x)):
                np.testing.assert_allclose(runner.run({"x": sample})[runner.outputs[0]], fn(sample), rtol=1e-5)
    code = (tmp_path / "flow_flax" / "model.py").read_text()
    assert "jax.lax.cond(" in code and "jax.lax.while_loop(" in code, code
