"""CNTK in, checked against CNTK 2.7's own outputs.

`data/` holds models saved by real CNTK 2.7 (tests/cntk/record.py, in the CNTK venv): a CIFAR ResNet (CNN), an
LSTM sequence regressor, a bidirectional LSTM/GRU slot tagger and a block of the remaining primitives, each as
CNTK's `.model` and as CNTK's own ONNX export, with what CNTK computed from the `.model`; and one small model per
op or layer in `data/ops/`. These tests need no CNTK; where its venv is set up (`make runtimes`) the live tests run
the files in it, and skip, saying so, without it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.errors import ModelError, TensorbridgeError, UnsupportedError
from tensorbridge.formats import cntk as fmt
from tensorbridge.verification.align import reorder
from tensorbridge.verification.harness import runner_for
from tensorbridge.verification.runners import cntk as runtime
from tests.models.faithful import distance

DATA = Path(__file__).with_name("data")
LIVE = pytest.mark.skipif(runtime.missing() is not None, reason=f"no CNTK: {runtime.missing()}")
MODELS = ("cnn", "lstm", "tagger", "layers")
with np.load(DATA / "ops.cntk.npz") as _ops:
    OPS = {key.split("/")[0]: None for key in _ops.files}
    OP_ARRAYS = {key: _ops[key] for key in _ops.files}
#: targets each model is taken to in `make test` (the issue's CNN and LSTM to every target)
TARGETS = ("onnx", "torch", "keras", "tflite", "flax")


def recorded(name: str) -> dict:
    with np.load(DATA / f"{name}.cntk.npz") as f:
        return dict(f)


def op_feeds(name: str) -> dict:
    return {key.split("/")[1]: a for key, a in OP_ARRAYS.items() if key.startswith(name + "/") and
            not key.endswith("/output")}


def faithful(ours, theirs, what: str) -> None:
    ours = np.asarray(ours)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    assert distance(ours, theirs) <= 1e-5, (what, distance(ours, theirs))


def evidence() -> dict[str, list[str]]:
    """The support matrix's `cntk in` evidence: for each IR op, a status per recorded model whose reading holds it
    (pass: the model reads as CNTK computed it)."""
    found: dict[str, list[str]] = {}
    models = [(DATA / f"{name}.model", recorded(name), "output0") for name in MODELS]
    models += [(DATA / "ops" / f"{name}.model", {**op_feeds(name), "output": OP_ARRAYS[f"{name}/output"]}, "output")
               for name in sorted(OPS)]
    for path, theirs, key in models:
        graph = tb.load(path)
        out = np.asarray(tb.run(graph, {v.name: theirs[v.name] for v in graph.inputs})[graph.outputs[0].name])
        ok = out.shape == theirs[key].shape and distance(out, theirs[key]) <= 1e-5
        for op in sorted({n.op for n in graph.all_nodes()}):
            found.setdefault(op, []).append("pass" if ok else f"fail: {path.stem} differs from CNTK")
    return found


def test_the_support_matrix_evidence_is_current():
    """`python -m tests.cases.corpus --formats cntk --write` records the same as the fixtures give now."""
    from tensorbridge import support

    recorded_ops = {op: r["in"]["cntk"] for op, r in support.evidence()["ops"].items() if "cntk" in r.get("in", {})}
    assert recorded_ops == evidence()


@pytest.mark.parametrize("name", MODELS)
def test_models_read_as_cntk_computed_them(name):
    theirs = recorded(name)
    graph = tb.load(DATA / f"{name}.model")
    feeds = {v.name: theirs[v.name] for v in graph.inputs}
    out = tb.run(graph, feeds)[graph.outputs[0].name]
    assert np.std(theirs["output0"]) > 1e-3, "CNTK's outputs do not vary: the comparison would prove nothing"
    faithful(out, theirs["output0"], name)
    other = {k: (v[::-1] + 0.25).astype(v.dtype) for k, v in feeds.items()}
    assert not np.allclose(tb.run(graph, other)[graph.outputs[0].name][::-1], out)


@pytest.mark.parametrize("name", MODELS)
def test_cntk_onnx_exports_read_as_cntk_computed_them(name):
    """CNTK's ONNX export takes a batch of one (a sequence as (steps, 1, features)): each batch item in turn."""
    theirs = recorded(name)
    graph = tb.load(DATA / f"{name}.onnx")
    for i in range(len(theirs["output0"])):
        feeds = {x.name: _one(theirs[x.name], i, x.shape) for x in graph.inputs}
        out = np.asarray(tb.run(graph, feeds)[graph.outputs[0].name])
        faithful(out.reshape(theirs["output0"][i:i + 1].shape), theirs["output0"][i:i + 1], f"{name}.onnx [{i}]")


def _one(batch: np.ndarray, i: int, shape) -> np.ndarray:
    """Batch item `i` as an input of CNTK's ONNX export takes it: (1, ...), or a sequence as (steps, 1, ...)."""
    return batch[i:i + 1] if shape[0] == 1 else batch[i][:, None]


@pytest.mark.parametrize("name", MODELS)
def test_models_convert_to_every_target(tmp_path, name):
    """Each target run in its own runtime against CNTK's output (the inputs' recorded shapes fixed: code targets
    size their layers)."""
    theirs = recorded(name)
    shapes = {k: list(v.shape) for k, v in theirs.items() if not k.startswith("output")}
    graph = tb.load(DATA / f"{name}.model", input_shapes=shapes)
    for to in TARGETS:
        dest = tmp_path / {"onnx": "m.onnx", "tflite": "m.tflite"}.get(to, f"m_{to}")
        tb.save(graph, dest, to=to)
        target = runner_for(str(dest))
        out = target.run({n: reorder(theirs[v.name], shape) for (n, _, shape), v in zip(target.inputs, graph.inputs)})
        got = np.asarray(out[target.outputs[0]])
        faithful(got if got.shape == theirs["output0"].shape else reorder(got, theirs["output0"].shape),
                 theirs["output0"], f"{name} -> {to}")


@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_read_as_cntk_computed_them(name):
    graph = tb.load(DATA / "ops" / f"{name}.model")
    feeds = op_feeds(name)
    out = tb.run(graph, {v.name: feeds[v.name] for v in graph.inputs})[graph.outputs[0].name]
    faithful(out, OP_ARRAYS[f"{name}/output"], name)


#: models CNTK's ONNX exporter writes as another function than the model computes (onnxruntime runs the files
#: as tensorbridge reads them): convert the .model instead
EXPORTED_WRONG = {
    "avg_pool_include_pad": "include_pad written as count_include_pad=0",
    "batch_norm_elementwise": "a per-element batch normalisation written as ONNX's per-channel one (invalid)",
    "layer_norm": "written as MeanVarianceNormalization, without the layer norm's epsilon (1.6e-5 off)",
    "recurrence_custom": "a recurrence written as a Scan that keeps only the last step",
    "slice_negative": "a slice to the end written with ends=[0] (empty)",
    "softmax_all": "a softmax over all static axes written as one over the last axis",
}


@pytest.mark.parametrize("name", sorted(n for n in OPS if (DATA / "ops" / f"{n}.onnx").is_file()))
def test_op_onnx_exports_read_as_onnx_defines_them(name):
    """CNTK's ONNX export of each op model reads as CNTK computed it, except where CNTK's exporter wrote another
    function (EXPORTED_WRONG): there the file is read as ONNX defines it, as onnxruntime runs it."""
    path = DATA / "ops" / f"{name}.onnx"
    (given,) = op_feeds(name).values()
    expected = OP_ARRAYS[f"{name}/output"][:1]
    try:
        graph = tb.load(path)
        (x,) = graph.inputs
        feeds = {x.name: _one(given, 0, x.shape)}
        out = np.asarray(tb.run(graph, feeds)[graph.outputs[0].name])
    except TensorbridgeError:
        assert name == "batch_norm_elementwise"  # the invalid file: a clean error
        return
    if name not in EXPORTED_WRONG:
        faithful(out.reshape(expected.shape), expected, f"{name}.onnx")
        return
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path))
    theirs = session.run(None, feeds)[0]
    assert out.shape == theirs.shape and (out.size == 0 or distance(out, theirs) <= 1e-5), name
    assert out.size != expected.size or distance(out.reshape(expected.shape), expected) > 1e-5, \
        f"{name}: CNTK's export now computes what CNTK does; take it off EXPORTED_WRONG"


def test_sequences_of_a_fixed_length(tmp_path):
    """With the sequence's length fixed, the selection of its last step is read for that length."""
    theirs = recorded("lstm")
    graph = tb.load(DATA / "lstm.model", input_shapes={"series": [3, 7, 4]})
    faithful(tb.run(graph, {"series": theirs["series"]})[graph.outputs[0].name], theirs["output0"], "lstm")


def test_every_blocker_is_listed_at_once(tmp_path):
    """Ops without a rule are listed together, each by its node; nothing is read half-way."""
    model = fmt.messages().Dictionary.FromString((DATA / "layers.model").read_bytes())
    functions = model.data["primitive_functions"].vector_value.value
    replace = {6: 45, 8: 60}  # one Sqrt, one Abs -> RandomSample, NDCG
    for f in functions:
        entries = f.dictionary_value.data
        if entries["op"].size_t_value in replace:
            entries["op"].size_t_value = replace.pop(entries["op"].size_t_value)
    (tmp_path / "m.model").write_bytes(model.SerializeToString())
    with pytest.raises(UnsupportedError) as e:
        tb.load(tmp_path / "m.model")
    assert {b.op for b in e.value.blockers} == {"RandomSample", "NDCG"}


def test_bad_files_fail_cleanly(tmp_path):
    whole = (DATA / "cnn.model").read_bytes()
    (tmp_path / "cut.model").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ModelError):
        tb.load(tmp_path / "cut.model", format="cntk")
    (tmp_path / "junk.model").write_bytes(b"\x08\x02 not a model")
    with pytest.raises(ModelError):
        tb.load(tmp_path / "junk.model", format="cntk")
    model = fmt.messages().Dictionary.FromString(whole)
    for v in model.data["inputs"].vector_value.value:
        value = v.dictionary_value.data.get("value")
        if value is not None and len(value.nd_array_view_value.float_values.value) > 4:
            del value.nd_array_view_value.float_values.value[-1]  # a weight one value short of its shape
            break
    (tmp_path / "short.model").write_bytes(model.SerializeToString())
    with pytest.raises(ModelError, match="values for shape"):
        tb.load(tmp_path / "short.model")
    done = subprocess.run([sys.executable, "-m", "tensorbridge", "convert", str(tmp_path / "short.model"), "-o",
                           str(tmp_path / "out.onnx")], capture_output=True, text=True)
    assert done.returncode == 2 and not (tmp_path / "out.onnx").exists(), done.stderr


def test_mutated_files_fail_cleanly(tmp_path):
    """Flipped bytes: a clean error or a model, never a crash."""
    rng = np.random.default_rng(0)
    whole = bytearray((DATA / "lstm.model").read_bytes())
    for _ in range(60):
        data = bytearray(whole)
        for at in rng.integers(0, len(data), 4):
            data[at] = rng.integers(0, 256)
        (tmp_path / "m.model").write_bytes(bytes(data))
        try:
            tb.load(tmp_path / "m.model", format="cntk")
        except TensorbridgeError:
            pass


def test_cli_reads_the_model_by_content(tmp_path):
    source = tmp_path / "weights.bin"
    source.write_bytes((DATA / "cnn.model").read_bytes())
    done = subprocess.run([sys.executable, "-m", "tensorbridge", "convert", str(source), "-o",
                           str(tmp_path / "out.onnx"), "--no-verify"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.onnx").is_file()


@LIVE
@pytest.mark.parametrize("name", ["cnn", "tagger"])
def test_live_cntk_computes_what_was_recorded(name):
    theirs = recorded(name)
    runner = runtime.CNTKRunner(DATA / f"{name}.model")
    out = runner.run({n: theirs[n] for n, _, _ in runner.inputs})
    assert distance(out[runner.outputs[0]], theirs["output0"]) <= 1e-6


@LIVE
def test_verify_runs_the_source_in_cntk(tmp_path):
    report = tb.verify(DATA / "lstm.model", tb.save(tb.load(DATA / "lstm.model"), tmp_path / "m.onnx"))
    assert report.ok, report.summary()


@LIVE
@pytest.mark.parametrize("name", ["cnn", "tagger"])
def test_live_cntk_layers_match_the_reading_layer_by_layer(name):
    """Every output CNTK evaluates on its own (outside blocks, and the blocks') against the IR value it was read as."""
    theirs = recorded(name)
    runner = runtime.CNTKRunner(DATA / f"{name}.model")
    feeds = {n: theirs[n] for n, _, _ in runner.inputs}
    layers = runner.run_intermediates(feeds)
    ours = tb.run(tb.load(DATA / f"{name}.model"), feeds, intermediates=True)
    assert len(layers) >= 5
    for value, theirs_value in layers.items():
        assert distance(ours[value], theirs_value) <= 1e-5, value
