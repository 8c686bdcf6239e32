"""Generated Flax NNX code: verified against the source, NHWC without transposes, trainable under jax.jit,
lint-clean and safe against hostile names."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import tensorbridge as tb
from tensorbridge import frameworks
from tensorbridge.codegen.folder import load_folder
from tensorbridge.errors import ModelError
from tests.generated_lint import RUFF, ruff_check

pytest.importorskip("flax")
pytest.importorskip("torch")
from tests.models.torch_zoo import imported  # noqa: E402

ZOO_SIZES = {"resnet18": {"size": 32}, "mobilenet_v2": {"size": 32}, "transformer_encoder": {}, "bert": {},
             "gpt2": {}, "lstm_tagger": {}}


@pytest.mark.parametrize("name", sorted(ZOO_SIZES))
def test_pytorch_zoo_to_flax(name, tmp_path):
    _, _, graph = imported(name, **ZOO_SIZES[name])
    folder = tb.save(graph, tmp_path / name, to="flax")
    report = tb.verify(graph, folder, trust_code=True)
    assert report.status == "PASS", report.summary()
    assert max(o.robust_rel for o in report.outputs) <= 1e-5, report.summary()


def _small_keras_cnn(path):
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(0)
    inputs = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", name="stem")(inputs)
    x = keras.layers.BatchNormalization(name="stem_bn")(x, training=False)
    x = keras.layers.ReLU(name="stem_relu")(x)
    x = keras.layers.DepthwiseConv2D(3, strides=2, padding="same", name="dw")(x)
    x = keras.layers.MaxPooling2D(2, name="pool")(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    outputs = keras.layers.Dense(5, name="head")(x)
    keras.Model(inputs, outputs).save(path)
    return path


def test_keras_nhwc_code_has_no_transposes(tmp_path):
    from tensorbridge.passes.layout import LayoutOptions

    src = _small_keras_cnn(tmp_path / "cnn.keras")
    folder = tmp_path / "cnn_flax"
    tb.convert(src, folder, to="flax", layout=LayoutOptions(io_layout="target"))
    code = (folder / "model.py").read_text()
    assert "transpose" not in code and "nnx.Conv(" in code and "feature_group_count=8" in code, code
    report = tb.verify(src, folder, trust_code=True)
    assert report.status == "PASS", report.summary()


def test_generated_model_trains_under_jit(tmp_path):
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    module, args, graph = imported("resnet18", size=32)
    folder = tb.save(graph, tmp_path / "r18", to="flax")
    model = load_folder(folder).load_model()
    model.train()
    x = jnp.asarray(args[0].numpy())
    labels = jnp.arange(x.shape[0]) % 10
    optimizer = nnx.Optimizer(model, optax.sgd(0.05), wrt=nnx.Param)

    @nnx.jit
    def step(model, optimizer):
        def loss_fn(model):
            return optax.softmax_cross_entropy_with_integer_labels(model(x), labels).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    losses = [float(step(model, optimizer)) for _ in range(5)]
    assert losses[-1] < losses[0], losses
    assert all(np.isfinite(losses))
    assert isinstance(jax.jit(lambda v: v)(x), jax.Array)


def test_per_layer_names_values_of_flax_code(tmp_path):
    _, _, graph = imported("transformer_encoder")
    folder = tb.save(graph, tmp_path / "enc", to="flax")
    report = tb.verify(graph, folder, per_layer=True, trust_code=True)
    assert report.first_divergence is not None and not report.first_divergence["op"], report.summary()
    assert report.first_divergence["values_compared"] > 10


def test_hostile_names_never_become_code(tmp_path, monkeypatch):
    from tests.torch.test_codegen import HOSTILE, _hostile_model

    monkeypatch.chdir(tmp_path)
    src = tmp_path / "hostile.onnx"
    onnx.save(_hostile_model(), src)
    folder = tb.save(tb.load(src), tmp_path / "gen", to="flax")
    code = (folder / "model.py").read_text()
    compile(code, "model.py", "exec")
    report = tb.verify(src, folder, rtol=1e-5, trust_code=True)
    assert report.ok, report.summary()
    assert not (tmp_path / "PWNED").exists()
    assert "os.system" not in code.replace(repr(HOSTILE), "").replace(HOSTILE, "")


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
@pytest.mark.parametrize("name", ["resnet18", "lstm_tagger", "bert"])
def test_generated_code_passes_ruff(name, tmp_path):
    folder = tb.save(imported(name, **ZOO_SIZES[name])[2], tmp_path / name, to="flax")
    p = ruff_check(folder)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_flax_folder_is_told_apart_from_a_pytorch_one(tmp_path):
    _, _, graph = imported("transformer_encoder")
    flax_folder = tb.save(graph, tmp_path / "f", to="flax")
    torch_folder = tb.save(graph, tmp_path / "t", to="torch")
    assert frameworks.detect(flax_folder).name == "flax"
    assert frameworks.detect(torch_folder).name == "torch"
    assert tb.load(flax_folder, trust_code=True).op_histogram()["Dense"] > 0  # read by JAX, not as PyTorch


def test_a_flax_folder_runs_its_code_only_when_trusted(tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    _, _, graph = imported("transformer_encoder")
    folder = tb.save(graph, tmp_path / "f", to="flax")
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)  # a folder this process did not write
    (copy / "model.py").write_text((copy / "model.py").read_text() + "\nopen('PWNED', 'w').close()\n")
    with pytest.raises(ModelError, match="--trust-code"):
        tb.load(copy)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("candidate_bias", [False, True])
def test_a_gru_becomes_nnx_gru_cells_or_is_unrolled(candidate_bias, tmp_path):
    """nnx.GRUCell has no recurrent bias on its candidate state: a GRU with one is written unrolled over time
    (the op's decomposition), not approximated by the cell."""
    import torch

    torch.manual_seed(0)
    gru = torch.nn.GRU(6, 10, batch_first=True, bidirectional=True).eval()
    if not candidate_bias:
        with torch.no_grad():
            for name in ("bias_hh_l0", "bias_hh_l0_reverse"):
                getattr(gru, name)[20:] = 0

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = gru

        def forward(self, x):
            y, h = self.gru(x)
            return y, h

    graph = tb.load(Model().eval(), example_inputs=(torch.randn(2, 7, 6),))
    folder = tb.save(graph, tmp_path / "gru", to="flax")
    assert ("nnx.GRUCell(" in (folder / "model.py").read_text()) != candidate_bias
    report = tb.verify(graph, folder, trust_code=True)
    assert report.status == "PASS" and max(o.robust_rel for o in report.outputs) <= 1e-5, report.summary()


def _attention_module(causal: bool, masked: bool):
    """Self-attention as transformers write it: query/key/value/output Linears around scaled_dot_product_attention."""
    import torch
    from torch import nn

    class SelfAttention(nn.Module):
        def __init__(self, width=32, heads=4):
            super().__init__()
            self.heads = heads
            self.query, self.key, self.value = (nn.Linear(width, width) for _ in range(3))
            self.out = nn.Linear(width, 24)

        def forward(self, x, mask=None):
            b, s, e = x.shape

            def split(t):
                return t.view(b, s, self.heads, e // self.heads).transpose(1, 2)

            y = nn.functional.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)),
                                                           split(self.value(x)), attn_mask=mask, is_causal=causal)
            return self.out(y.transpose(1, 2).reshape(b, s, e))

    torch.manual_seed(0)
    x = torch.randn(2, 7, 32)
    mask = torch.rand(2, 1, 7, 7) > 0.3
    return SelfAttention().eval(), (x, mask) if masked else (x,)


@pytest.mark.parametrize("causal,masked", [(False, False), (True, False), (False, True)])
def test_attention_layers_become_nnx_multi_head_attention(causal, masked, tmp_path):
    """The projections and attention become one nnx.MultiHeadAttention where it computes the same; a mask that
    may hide every key of a query (nnx averages such a row, the source gives zeros) keeps the plain ops."""
    module, args = _attention_module(causal, masked)
    graph = tb.load(module, example_inputs=args)
    folder = tb.save(graph, tmp_path / "attention", to="flax")
    code = (folder / "model.py").read_text()
    assert ("nnx.MultiHeadAttention(" in code) is not masked, code
    assert ("is_causal=True" in code) is causal, code
    inputs = {"x": args[0].numpy()}
    if masked:
        mask = args[1].numpy().copy()
        mask[0, 0, 3] = False  # query 3 of the first sample sees no key
        inputs["mask"] = mask
    report = tb.verify(graph, folder, inputs=inputs, trust_code=True)
    assert report.status == "PASS" and max(o.robust_rel for o in report.outputs) <= 1e-5, report.summary()


def test_an_if_whose_branches_differ_in_shape_is_refused(tmp_path):
    """jax.lax.cond traces both branches and needs their outputs alike; an ONNX If need not have them so."""
    from tensorbridge.errors import UnsupportedError
    from tensorbridge.ir.graph import Graph
    from tensorbridge.passes.infer_shapes import infer_shapes

    g = Graph("branches")
    x = g.add_input("x", "float32", (2, 3))
    branches = {}
    for key, axes in (("then_branch", [0]), ("else_branch", [0, 1])):
        body = Graph(key)
        body.outputs.append(body.op("ReduceSum", x, body.add_constant(f"{key}_axes", np.array(axes)), keepdims=0))
        branches[key] = body
    flag = g.op("Greater", g.op("ReduceSum", x, keepdims=0), g.add_constant("zero", np.array(0, np.float32)))
    g.outputs.append(g.op("If", flag, **branches))
    infer_shapes(g)
    with pytest.raises(UnsupportedError, match="branches whose outputs differ in shape"):
        tb.save(g, tmp_path / "branches", to="flax")
    assert not (tmp_path / "branches").exists()


def test_an_average_pool_whose_ceil_mode_adds_a_window(tmp_path):
    """PyTorch's AvgPool2d(ceil_mode=True) counting its padding (VOLO's token pooling), where rounding up adds a
    window that overhangs the input: written as the window's taps, since nnx.avg_pool would count the overhang."""
    import torch

    pool = torch.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True).eval()
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32))
    graph = tb.load(pool, example_inputs=(x,))
    folder = tb.save(graph, tmp_path / "pool", to="flax")
    report = tb.verify(graph, folder, trust_code=True)
    assert report.status == "PASS" and max(o.robust_rel for o in report.outputs) <= 1e-6, report.summary()


def test_a_bilinear_resize_of_an_open_batch(tmp_path):
    """SegFormer's decoder upsamples with the batch left open: the resized axes are static, so the Resize becomes
    its taps along them and the batch stays whatever size jax traces."""
    import torch

    class Upsample(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)

    x = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32))
    graph = tb.load(Upsample(), example_inputs=(x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    assert not isinstance(graph.inputs[0].shape[0], int)
    folder = tb.save(graph, tmp_path / "upsample", to="flax")
    from tensorbridge import trust
    from tensorbridge.verification.harness import runner_for

    with trust.trusting(True):
        runner = runner_for(str(folder))
    for batch in (1, 3):
        feed = np.random.default_rng(batch).standard_normal((batch, 3, 4, 5)).astype(np.float32)
        got = np.asarray(runner.run({runner.inputs[0][0]: feed})[runner.outputs[0]])
        np.testing.assert_allclose(got, Upsample()(torch.from_numpy(feed)).numpy(), rtol=1e-5, atol=1e-6)
