"""Paddle in, checked against PaddlePaddle 3.3.1's own outputs.

`data/` holds, per model of tests/paddle/models.py (and paddle.vision's MobileNetV3-Small), its program as Paddle
saved it (`<name>.json`, PIR; `<name>.pdmodel`, the legacy ProgramDesc, where Paddle 3.3 can still save it) and
what `paddle.inference` computed from each, recorded by tests/paddle/record.py; the weights are regenerated from
their names, the BatchNorm statistics (calibrated on data) are recorded. These tests need no Paddle; where its
venv is set up (`make runtimes`), the live tests run the files in it, and skip, saying so, without it.

A model passes when our reading is within 1e-5 of Paddle's output, or no farther from the float64 truth than
Paddle's own float32 run is (x2). (With the batch norm shifts of trained nets, tests/paddle/weights.py, every
recorded model is within 2e-6 of its float64 result in Paddle; with shifts around 0, ResNet50-vd was 8e-5 from it.)

The models written as Paddle by tensorbridge (tests/paddle/written.py) are checked the same way against what
paddle.inference computed from the files written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import InputShapesNeeded, ModelError, TensorbridgeError, UnsupportedError
from tensorbridge.formats.paddle import read_params, read_program, write_params
from tensorbridge.verification.harness import runner_for
from tensorbridge.verification.runners import paddle as runtime
from tests.models.faithful import distance, float64_truth
from tests.paddle.weights import image, is_statistic, parameter
from tests.paddle.written import BACK as WRITTEN_BACK
from tests.paddle.written import ZOO as WRITTEN_ZOO
from tests.paddle.written import files_digest, written

DATA = Path(__file__).with_name("data")
LIVE = pytest.mark.skipif(runtime.missing() is not None, reason=f"no Paddle: {runtime.missing()}")
NAMES = ("pplcnet", "resnet50_vd", "mobilenet_v3_small", "ocr_det", "ocr_rec", "svtr_block", "recurrent", "layers")
FORMS = {"pir": ".json", "legacy": ".pdmodel"}
SAVED = [(name, form) for name in NAMES for form, suffix in FORMS.items() if (DATA / f"{name}{suffix}").is_file()]
#: the models small enough to take through every target in `make test` (the others: onnx and torch)
SMALL = ("pplcnet", "ocr_det", "ocr_rec", "svtr_block", "recurrent", "layers")


def recorded(name: str) -> dict:
    with np.load(DATA / f"{name}.paddle.npz") as f:
        return dict(f)


def saved_model(name: str, form: str, folder: Path) -> Path:
    """The program as Paddle saved it, with a .pdiparams of its regenerated weights and recorded statistics."""
    theirs, suffix = recorded(name), FORMS[form]
    source = DATA / f"{name}{suffix}"
    program = read_program(source)
    model = folder / f"model{suffix}"
    model.write_bytes(source.read_bytes())
    write_params(folder / "model.pdiparams", {v.name: theirs[v.name] if is_statistic(v.name) else
                                              parameter(v.name, v.shape) for v in program.params})
    return model


def feeds_of(graph, theirs: dict) -> dict:
    return {v.name: theirs[v.name] for v in graph.inputs}


def assert_faithful(name: str, graph, feeds: dict, got: list, theirs: list) -> None:
    """Within 1e-5 of Paddle's outputs, or no farther from the float64 truth than Paddle (x2)."""
    truth = None
    for i, (ours, paddle) in enumerate(zip(got, theirs)):
        ours = np.asarray(ours).reshape(paddle.shape)
        if distance(ours, paddle) <= 1e-5:
            continue
        truth = truth or float64_truth(graph, feeds)
        exact = truth[graph.outputs[i].name]
        assert distance(ours, exact) <= 2 * max(distance(paddle, exact), 1e-6), \
            (name, i, distance(ours, paddle), distance(ours, exact), distance(paddle, exact))


@pytest.mark.parametrize("name,form", SAVED)
def test_saved_models_read_as_paddle_computed_them(tmp_path, name, form):
    theirs = recorded(name)
    graph = tb.load(saved_model(name, form, tmp_path))
    feeds = feeds_of(graph, theirs)
    out = tb.run(graph, feeds)
    expected = [theirs[f"{form}_output{i}"] for i in range(len(graph.outputs))]
    assert np.std(expected[0]) > 1e-3, "Paddle's outputs do not vary: the comparison would prove nothing"
    assert_faithful(name, graph, feeds, [out[v.name] for v in graph.outputs], expected)
    other = {k: image(v.shape, seed=9) if v.dtype.kind == "f" else (v + 1) % 10 for k, v in feeds.items()}
    assert not np.allclose(tb.run(graph, other)[graph.outputs[0].name], out[graph.outputs[0].name])


CELLS = [pytest.param(name, to, marks=[] if name in SMALL or to in ("onnx", "torch") else [pytest.mark.slow])
         for name in NAMES for to in ("onnx", "torch", "keras", "tflite", "flax")]


@pytest.mark.parametrize("name,to", CELLS)
def test_saved_models_convert_to_every_target(tmp_path, name, to):
    """Each target from the program read with its inputs' recorded shapes (code targets size their layers); the
    large models' Keras, TFLite and Flax cells run in `make test-all`."""
    theirs = recorded(name)
    model = saved_model(name, "pir", tmp_path)
    graph = tb.load(model, input_shapes={v.name: list(theirs[v.name].shape) for v in read_program(model).inputs})
    feeds = feeds_of(graph, theirs)
    dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
    tb.save(graph, dest, to=to)
    target = runner_for(str(dest))
    out = target.run({n: feeds[v.name] for (n, _, _), v in zip(target.inputs, graph.inputs)})
    assert_faithful(f"{name} -> {to}", graph, feeds, [out[n] for n in target.outputs],
                    [theirs[f"pir_output{i}"] for i in range(len(graph.outputs))])


def test_both_forms_read_to_the_same_graph(tmp_path):
    pir = tb.load(saved_model("pplcnet", "pir", tmp_path))
    legacy = tb.load(saved_model("pplcnet", "legacy", tmp_path))  # model.pdmodel beside model.json
    histogram = [sorted(n.op for n in g.nodes) for g in (pir, legacy)]
    assert histogram[0] == histogram[1]


def test_pdiparams_round_trip_byte_for_byte(tmp_path):
    model = saved_model("layers", "pir", tmp_path)
    program = read_program(model)
    arrays = read_params(tmp_path / "model.pdiparams", program.params)
    write_params(tmp_path / "again.pdiparams", dict(arrays))
    assert (tmp_path / "again.pdiparams").read_bytes() == (tmp_path / "model.pdiparams").read_bytes()


def test_open_input_sizes_are_asked_for(tmp_path):
    model = saved_model("pplcnet", "pir", tmp_path)
    text = model.read_text().replace("[-1,3,64,64]", "[-1,3,-1,-1]")
    model.write_text(text)
    with pytest.raises(InputShapesNeeded, match="--input-shape x="):
        tb.load(model)
    graph = tb.load(model, input_shapes={"x": [1, 3, 64, 64]})
    assert graph.inputs[0].shape == (1, 3, 64, 64)


def test_every_blocker_is_listed_at_once(tmp_path):
    """Ops without a rule and attributes no rule reads are listed together; nothing is read half-way."""
    model = saved_model("layers", "pir", tmp_path)
    text = model.read_text().replace('"1.elu"', '"1.selu"').replace('"1.relu6"', '"1.celu"')
    text = text.replace('"N":"negative_slope"', '"N":"negative_slope"},{"AT":{"#":"0.a_f32","D":2.0},'
                        '"N":"unknown_option"', 1)
    model.write_text(text)
    with pytest.raises(UnsupportedError) as e:
        tb.load(model)
    assert {b.op for b in e.value.blockers} == {"selu", "celu"}
    model.write_text(model.read_text().replace('"1.selu"', '"1.elu"').replace('"1.celu"', '"1.relu6"'))
    with pytest.raises(UnsupportedError, match="unknown_option"):
        tb.load(model)


def test_paddle_quirks_are_followed(tmp_path):
    """SAME padding drops a convolution's dilation in Paddle; the `layers` fixture's conv (dilation 2) proves
    it: read with the dilation, the output is 20% off."""
    graph = tb.load(saved_model("layers", "pir", tmp_path))
    conv = next(n for n in graph.nodes if n.op == "Conv" and n.attrs.get("kernel_shape") == [3, 3])
    assert conv.attrs["dilations"] == [1, 1]


def test_bad_files_fail_cleanly(tmp_path):
    model = saved_model("pplcnet", "pir", tmp_path)
    params = tmp_path / "model.pdiparams"
    whole = params.read_bytes()
    params.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ModelError, match="truncated"):
        tb.load(model)
    params.write_bytes(whole + b"\0" * 8)
    with pytest.raises(ModelError, match="more than"):
        tb.load(model)
    params.write_bytes(whole)
    model.write_text('{"base_code": {"magic": "pir"}, "program": {"regions": []}}')
    with pytest.raises(ModelError):
        tb.load(model)
    (tmp_path / "junk.pdmodel").write_bytes(b"\xff\xfe not a protobuf")
    (tmp_path / "junk.pdiparams").write_bytes(b"")
    with pytest.raises(ModelError):
        tb.load(tmp_path / "junk.pdmodel")
    (tmp_path / "alone.json").write_text(model.read_text())
    with pytest.raises(ModelError, match="pdiparams"):
        tb.load(tmp_path / "alone.json")


def test_mutated_files_fail_cleanly(tmp_path):
    """Flipped bytes in the program or the weights: a clean error or a model, never a crash."""
    rng = np.random.default_rng(0)
    model = saved_model("layers", "pir", tmp_path)
    program, params = model.read_bytes(), (tmp_path / "model.pdiparams").read_bytes()
    for i in range(60):
        s, p = bytearray(program), bytearray(params)
        target = s if i % 2 else p
        for at in rng.integers(0, len(target), 4):
            target[at] = rng.integers(0, 256)
        model.write_bytes(bytes(s))
        (tmp_path / "model.pdiparams").write_bytes(bytes(p))
        try:
            tb.load(model)
        except TensorbridgeError:
            pass


def test_cli_reads_the_program_by_content(tmp_path):
    model = saved_model("ocr_rec", "pir", tmp_path)
    done = subprocess.run([sys.executable, "-m", "tensorbridge", "convert", str(model), "-o",
                           str(tmp_path / "out.onnx"), "--no-verify"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.onnx").is_file()


@LIVE
@pytest.mark.parametrize("name,form", [("pplcnet", "pir"), ("pplcnet", "legacy"), ("ocr_rec", "pir")])
def test_live_paddle_computes_what_was_recorded(tmp_path, name, form):
    model = saved_model(name, form, tmp_path)
    runner = runtime.PaddleRunner(model)
    theirs = recorded(name)
    out = runner.run({n: theirs[n] for n, _, _ in runner.inputs})
    # the recording may come from another CPU, whose oneDNN kernels sum in another order
    assert distance(out["output0"], theirs[f"{form}_output0"]) <= 1e-5


@LIVE
def test_verify_runs_the_source_in_paddle(tmp_path):
    report = tb.verify(saved_model("svtr_block", "pir", tmp_path), tb.save(tb.load(tmp_path / "model.json"),
                                                                          tmp_path / "m.onnx"))
    assert report.ok, report.summary()


@pytest.mark.parametrize("name", [*WRITTEN_ZOO, *WRITTEN_BACK])
def test_models_written_as_paddle_run_in_paddle(tmp_path, name):
    """PyTorch zoo models, and the Paddle-saved models read and written back, as legacy programs: what
    paddle.inference computed from the files written (recorded by `python -m tests.paddle.written`; live too where
    Paddle is set up) and our own reading of them, against PyTorch's output or Paddle's from the original."""
    program, feeds, expected = written(name, tmp_path)
    with np.load(DATA / f"{name}.written.paddle.npz") as f:
        theirs = dict(f)
    assert str(theirs["digest"]) == files_digest(program), \
        "the writer's output changed: record Paddle's output again (python -m tests.paddle.written)"
    assert np.std(expected) > 1e-3
    assert distance(theirs["output"], expected) <= 1e-5, distance(theirs["output"], expected)
    graph = tb.load(program)
    ours = tb.run(graph, {v.name: a for v, a in zip(graph.inputs, feeds.values())})[graph.outputs[0].name]
    assert distance(ours, expected) <= 1e-5, distance(ours, expected)
    if runtime.missing() is None:
        paddle = runtime.PaddleRunner(program)
        out = paddle.run({n: a for (n, _, _), a in zip(paddle.inputs, feeds.values())})
        assert distance(out[paddle.outputs[0]], expected) <= 1e-5


def test_what_paddle_cannot_express_is_listed_at_once(tmp_path):
    import torch
    from torch import nn

    class Odd(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 1) + torch.nn.functional.conv1d(x[:, :, 0], torch.ones(2, 2, 3))[..., :1, None]

    with pytest.raises(UnsupportedError) as e:
        tb.save(tb.load(Odd(), example_inputs=(torch.rand(1, 2, 4, 4),)), tmp_path / "m.pdmodel")
    assert len({b.op for b in e.value.blockers}) >= 2, str(e.value)
    assert not list(tmp_path.iterdir())
