"""Generated PyTorch code: lint-clean, safe against hostile names, trainable, dynamic, re-importable."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorbridge as tb
from tensorbridge.codegen.folder import load_folder
from tensorbridge.verification.runners.torch import TorchModuleRunner
from tests.conftest import make_model

torch = pytest.importorskip("torch")
from tests.generated_lint import RUFF, ruff_check  # noqa: E402
from tests.models.torch_zoo import ZOO, imported  # noqa: E402

HOSTILE = 'x"); import os; os.system("touch PWNED") #'


def _hostile_model():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), HOSTILE + "w")
    fc = numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "__import__('os')")
    nodes = [helper.make_node("Conv", [HOSTILE, HOSTILE + "w"], ["class"], pads=[1, 1, 1, 1], name=HOSTILE),
             helper.make_node("Relu", ["class"], ["def"], name="self.forward"),
             helper.make_node("GlobalAveragePool", ["def"], ["g"], name="import"),
             helper.make_node("Flatten", ["g"], ["f"], name="1st"),
             helper.make_node("MatMul", ["f", "__import__('os')"], ["exec('boom')"], name="exec('boom')")]
    return make_model(nodes, [helper.make_tensor_value_info(HOSTILE, TensorProto.FLOAT, [1, 3, 6, 6])],
                      [helper.make_tensor_value_info("exec('boom')", TensorProto.FLOAT, [1, 5])], [w, fc])


def test_hostile_names_never_become_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "hostile.onnx"
    onnx.save(_hostile_model(), src)
    folder = tb.save(tb.load(src), tmp_path / "gen", to="torch")
    code = (folder / "model.py").read_text()
    compiled = compile(code, "model.py", "exec")  # noqa: F841 - it must at least be valid Python
    report = tb.verify(src, folder, rtol=1e-5)
    assert report.ok, report.summary()
    assert not (tmp_path / "PWNED").exists()
    assert "os.system" not in code.replace(repr(HOSTILE), "").replace(HOSTILE, "")




@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
@pytest.mark.parametrize("name", ["resnet18", "transformer_encoder", "lstm_tagger", "bert"])
def test_generated_code_passes_ruff(name, tmp_path):
    folder = _generate(name, tmp_path)
    p = ruff_check(folder)
    assert p.returncode == 0, p.stdout + p.stderr


def _generate(name, tmp_path):
    return tb.save(imported(name)[2], tmp_path / name, to="torch")


@pytest.mark.parametrize("name", ["resnet18", "transformer_encoder", "lstm_tagger"])
def test_generated_module_trains(name, tmp_path):
    folder = _generate(name, tmp_path)
    model = load_folder(folder).load_model().train()
    from safetensors.numpy import load_file

    assert set(load_file(str(folder / "weights.safetensors"))) == set(model.state_dict())
    _, args, _ = ZOO[name]()
    params = [p for p in model.parameters() if p.requires_grad]
    assert params
    before = [p.detach().clone() for p in params]
    opt = torch.optim.SGD(params, lr=0.1)
    loss = model(*args).float().pow(2).mean()
    loss.backward()
    assert all(p.grad is not None for p in params)
    opt.step()
    assert any(not torch.equal(b, p.detach()) for b, p in zip(before, params))


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "transformer_encoder", "lstm_tagger"])
def test_generated_module_reimports_to_the_same_ops(name, tmp_path):
    _, args, graph = imported(name)
    folder = tb.save(graph, tmp_path / name, to="torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = tb.load(load_folder(folder).load_model(), example_inputs=args)
    # compare the live computation: the generated code does not compute outputs nothing reads
    from tensorbridge.passes.dce import eliminate_dead_code

    regenerated, source = eliminate_dead_code(again).op_histogram(), eliminate_dead_code(graph).op_histogram()
    # the layout planner may merge reciprocal transposes of the source (attention head splits)
    assert regenerated.pop("Transpose", 0) <= source.pop("Transpose", 0)
    assert regenerated == source


def test_dynamic_batch_and_sequence(tmp_path):
    from torch.export import Dim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module, args, _ = ZOO["transformer_encoder"](seq=16)
        batch, seq = Dim("batch"), Dim("seq", max=16)

        class Dyn(torch.nn.Module):  # positions sliced to the sequence length
            def __init__(self):
                super().__init__()
                self.m = module

            def forward(self, tokens):
                h = self.m.embed(tokens) + self.m.pos[:, : tokens.shape[1]]
                return self.m.head(self.m.norm(self.m.encoder(h)).mean(1))

        dyn = Dyn().eval()
        graph = tb.load(dyn, example_inputs=(torch.randint(0, 1000, (2, 8)),),
                        dynamic_shapes={"tokens": {0: batch, 1: seq}})
    assert graph.inputs[0].shape == ("batch", "seq")
    onnx_path = tb.save(graph, tmp_path / "dyn.onnx")
    folder = tb.save(graph, tmp_path / "dyn_torch", to="torch")
    from tensorbridge.verification.compare import compare
    from tensorbridge.verification.runners.onnxruntime import OnnxRuntimeRunner

    for b, s in ((1, 5), (3, 12)):
        tokens = torch.randint(0, 1000, (b, s))
        with torch.no_grad():
            expected = dyn(tokens).numpy()
        for runner in (OnnxRuntimeRunner(onnx_path), TorchModuleRunner(folder)):
            got = list(runner.run({runner.inputs[0][0]: tokens.numpy()}).values())[0]
            assert compare("y", "y", expected, got, rtol=1e-5, atol=0).ok, (runner.name, b, s)


def test_pt2_round_trip(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module, args, _ = ZOO["resnet18"](size=32)
        ep = torch.export.export(module, args)
        src = tmp_path / "resnet.pt2"
        torch.export.save(ep, str(src))
        graph = tb.load(src)
        out = tb.save(graph, tmp_path / "again.pt2")
        report = tb.verify(src, out, rtol=1e-5)
    assert report.ok, report.summary()
    assert graph.nodes[0].name == "conv1"


def test_state_dict_file_needs_model_code(tmp_path):
    module, _, _ = ZOO["resnet18"]()
    path = tmp_path / "weights.pt"
    torch.save(module.state_dict(), path)
    with pytest.raises(tb.errors.ModelError, match="model code"):
        tb.load(path)


def test_gru_and_bidirectional_lstm_round_trip(tmp_path):
    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = torch.nn.GRU(8, 12, num_layers=2, batch_first=True)
            self.lstm = torch.nn.LSTM(12, 6, bidirectional=True)

        def forward(self, x, h0):
            y, _ = self.gru(x, h0)
            z, (h, _) = self.lstm(y.transpose(0, 1))
            return z, h

    torch.manual_seed(0)
    model = Recurrent().eval()
    args = (torch.randn(3, 5, 8), torch.randn(2, 3, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = tb.load(model, example_inputs=args)
    assert graph.op_histogram()["GRU"] == 2 and graph.op_histogram()["LSTM"] == 1
    with torch.no_grad():
        expected = [t.numpy() for t in model(*args)]
    feeds = {v.name: a.numpy() for v, a in zip(graph.inputs, args)}
    from tensorbridge.verification.compare import compare
    from tensorbridge.verification.runners.onnxruntime import OnnxRuntimeRunner

    for runner in (OnnxRuntimeRunner(tb.save(graph, tmp_path / "rnn.onnx")),
                   TorchModuleRunner(tb.save(graph, tmp_path / "rnn_torch", to="torch"))):
        got = list(runner.run(feeds).values())
        for e, g in zip(expected, got):
            assert compare("y", "y", e, g, rtol=1e-5, atol=0).ok, runner.name


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_generated_module_keeps_the_source_module_tree(name, tmp_path):
    """The source's state_dict loads into the generated Model unchanged, and the two compute the same."""
    import torch

    from tensorbridge.codegen.folder import load_folder
    from tests.models.torch_zoo import imported

    module, args, graph = imported(name)
    package = load_folder(tb.save(graph, tmp_path / "gen", to="torch"))
    fresh = sys.modules[package.__name__ + ".model"].Model()
    assert set(fresh.state_dict()) == set(module.state_dict())
    fresh.load_state_dict(module.state_dict())
    with torch.no_grad():
        assert torch.equal(fresh.eval()(*args), module(*args))
    code = (tmp_path / "gen" / "model.py").read_text()
    assert "self.layer1[0].conv1" in code if name == "resnet18" else "self.features[" in code


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
@pytest.mark.parametrize("shape,pads", [((6, 7), [1, 2, 2, 1]), ((2, 6, 7), [0, 0, 2, 0, 0, 1]),
                                        ((1, 2, 6, 7), [0, 0, 1, 2, 0, 0, 2, 1]),
                                        ((1, 2, 5, 6, 7), [0, 0, 1, 1, 2, 0, 0, 1, 2, 1])])
def test_non_constant_pads_of_every_rank(tmp_path, mode, shape, pads):
    """PyTorch pads the last 1-3 axes of a tensor with one or two axes before them in these modes: the code pads
    only what is padded, lifting a 2-D tensor to 3-D and back (an ONNX audio model's reflect pad of a 2-D tensor
    once ended in an internal error)."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    model = make_model([helper.make_node("Pad", ["x", "p"], ["y"], mode=mode)],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                       [numpy_helper.from_array(np.array(pads, np.int64), "p")])
    tb.save(tb.load(model), tmp_path / "m", to="torch")
    runner = TorchModuleRunner(str(tmp_path / "m"))
    rank = len(shape)
    expected = np.pad(x, list(zip(pads[:rank], pads[rank:])), mode={"edge": "edge", "wrap": "wrap"}.get(mode, mode))
    np.testing.assert_allclose(runner.run({"x": x})[runner.outputs[0]], expected)


def test_a_layer_at_a_list_item_that_holds_layers_goes_beside_it():
    """DAC's quantizers: a list item holds its in_proj and the source also computes at the item's own path; the
    item is not replaced (its layers' weights would be lost) and no `quantizers.0_1` attribute is written."""
    from tensorbridge.backends.torch.module_tree import ModuleTree

    tree = ModuleTree([("quantizers", "0", "in_proj"), ("quantizers", "0"), ("quantizers", "1", "in_proj")])
    inner = tree.claim(("quantizers", "0", "in_proj"))
    tree.containers_for(inner)
    outer = tree.claim(("quantizers", "0"))
    assert inner == ("quantizers", "0", "in_proj")
    assert len(outer) == 1 and outer[0].isidentifier()  # a top-level attribute beside the list
