"""The command line: success paths, exit codes, and clean errors on bad input (no partial files)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tensorbridge.cli.main import main
from tests.conftest import make_model


def run_cli(*args) -> tuple[int, str, str]:
    p = subprocess.run([sys.executable, "-m", "tensorbridge", *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def test_convert_with_verify_and_round_trip(small_cnn_path, tmp_path):
    out = tmp_path / "cnn.tbir"
    code, stdout, _ = run_cli("convert", small_cnn_path, "-o", out, "--verify")
    assert code == 0 and "PASS" in stdout and out.exists()
    back = tmp_path / "back.onnx"
    assert main(["-q", "convert", str(out), "-o", str(back), "--verify"]) == 0
    onnx.checker.check_model(str(back))


def test_inspect_text_and_json(small_cnn_path, capsys):
    assert main(["-q", "inspect", str(small_cnn_path)]) == 0
    text = capsys.readouterr().out
    assert "Conv" in text and "probs" in text and "batch" in text
    assert main(["-q", "inspect", str(small_cnn_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["ops"]["Conv"] == 1
    assert doc["summary"]["inputs"][0]["shape"] == ["batch", 3, 8, 8]


def test_verify_fails_with_exit_1_on_a_different_model(small_cnn, small_cnn_path, tmp_path, capsys):
    other = onnx.ModelProto()
    other.CopyFrom(small_cnn)
    other.graph.node[1].op_type = "Sigmoid"  # a different function with the same signature
    path = tmp_path / "other.onnx"
    onnx.save(other, path)
    assert main(["-q", "verify", str(small_cnn_path), str(path)]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_verify_with_user_inputs_and_json(small_cnn_path, tmp_path, capsys):
    npz = tmp_path / "in.npz"
    np.savez(npz, x=np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32))
    tbir = tmp_path / "m.tbir"
    assert main(["-q", "convert", str(small_cnn_path), "-o", str(tbir)]) == 0
    capsys.readouterr()
    assert main(["-q", "verify", str(small_cnn_path), str(tbir), "--inputs", str(npz), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["inputs"]["x"]["shape"] == [2, 3, 8, 8]
    assert doc["outputs"][0]["topk"]["top5"] == 1.0


def test_ops_lists_the_catalogue(capsys):
    assert main(["ops", "--from", "onnx", "--to", "tbir"]) == 0
    out = capsys.readouterr().out
    assert "Conv" in out and "onnx in" in out and "tbir out" in out


# -- bad input -----------------------------------------------------------------------------------
def _no_output(tmp_path, name="out.onnx"):
    return not (tmp_path / name).exists() and not any(p.name.startswith(f".{name}") for p in tmp_path.iterdir())


def test_missing_file(tmp_path):
    code, _, err = run_cli("convert", tmp_path / "nope.onnx", "-o", tmp_path / "out.onnx")
    assert code == 2 and "no such file" in err and "Traceback" not in err
    assert _no_output(tmp_path)


def test_unknown_extension(small_cnn_path, tmp_path):
    code, _, err = run_cli("convert", small_cnn_path, "-o", tmp_path / "out.xyz")
    assert code == 2 and "extension" in err and "Traceback" not in err
    assert not (tmp_path / "out.xyz").exists()


@pytest.mark.parametrize("damage", ["truncated", "garbled", "text"])
def test_damaged_onnx(small_cnn_path, tmp_path, damage):
    data = small_cnn_path.read_bytes()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes({"truncated": data[: len(data) // 2], "garbled": bytes(b ^ 0x5A for b in data[:400]) + data[400:],
                     "text": b"this is not a model\n" * 10}[damage])
    code, _, err = run_cli("convert", bad, "-o", tmp_path / "out.onnx")
    assert code == 2 and "error:" in err and "Traceback" not in err
    assert _no_output(tmp_path)


def test_every_unsupported_op_is_listed_once(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("FancyOp", ["a"], ["b"], name="fancy_1", domain="com.example"),
             helper.make_node("ImageDecoder", ["b"], ["c"], name="decoder"),
             helper.make_node("FancyOp", ["c"], ["d"], name="fancy_2", domain="com.example"),
             helper.make_node("Relu", ["d"], ["y"], name="relu", alpha=1.0)]
    model = make_model(nodes, [x], [y])
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    code, _, err = run_cli("convert", path, "-o", tmp_path / "out.onnx")
    assert code == 2 and "Traceback" not in err
    for part in ("fancy_1", "fancy_2", "decoder", "ImageDecoder", "com.example.FancyOp", "alpha"):
        assert part in err
    assert err.count("error:") == 1
    assert _no_output(tmp_path)


def test_dangling_input_and_cycle(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    dangling = make_model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [x], [y])
    cycle = make_model([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                        helper.make_node("Relu", ["a"], ["b"], name="second"),
                        helper.make_node("Identity", ["a"], ["y"], name="out")], [x], [y])
    for name, model in (("dangling", dangling), ("cycle", cycle)):
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, path)
        code, _, err = run_cli("convert", path, "-o", tmp_path / "out.onnx")
        assert code == 2 and "Traceback" not in err, err
        assert "nothing produces" in err
        assert _no_output(tmp_path)


def test_bad_input_shape_option(small_cnn_path, tmp_path):
    code, _, err = run_cli("convert", small_cnn_path, "-o", tmp_path / "o.onnx", "--input-shape", "nope=1,2")
    assert code == 2 and "nope" in err


def test_input_shape_fixes_a_dynamic_dim(small_cnn_path, tmp_path):
    out = tmp_path / "fixed.onnx"
    assert main(["-q", "convert", str(small_cnn_path), "-o", str(out), "--input-shape", "x=4,3,8,8"]) == 0
    dims = [d.dim_value for d in onnx.load(out).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [4, 3, 8, 8]


def test_a_model_too_large_to_run_twice_is_converted_and_said_unverified(small_cnn_path, tmp_path, capsys,
                                                                          monkeypatch):
    from tensorbridge.cli import main as cli

    monkeypatch.setattr(cli, "_available_memory", lambda: 1000)
    out = tmp_path / "cnn.onnx"
    assert main(["-q", "convert", str(small_cnn_path), "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "not verified: running source and result side by side needs about" in said and out.is_file()
    assert f"tensorbridge verify {small_cnn_path} {out}" in said


def _rate_switched(tmp_path):
    """y = x * 2 at a rate of 16000, x + 1 at any other (Silero VAD takes its sample rate as an input)."""
    double = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["y16"])], "at16k", [],
                               [helper.make_tensor_value_info("y16", TensorProto.FLOAT, [1, 4])],
                               [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    shifted = helper.make_graph([helper.make_node("Add", ["x", "one"], ["y8"])], "other", [],
                                [helper.make_tensor_value_info("y8", TensorProto.FLOAT, [1, 4])],
                                [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    graph = helper.make_graph(
        [helper.make_node("Equal", ["sr", "rate16k"], ["at16k"]),
         helper.make_node("If", ["at16k"], ["y"], then_branch=double, else_branch=shifted)], "rates",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor("rate16k", TensorProto.INT64, [], [16000])])
    path = tmp_path / "rates.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def test_convert_verifies_on_the_inputs_given(tmp_path, capsys):
    """Where only some values are valid (a sample rate), `convert --inputs` verifies on them."""
    npz = tmp_path / "at16k.npz"
    np.savez(npz, x=np.arange(4, dtype=np.float32)[None], sr=np.array(16000))
    out = tmp_path / "rates.tbir"
    assert main(["-q", "convert", str(_rate_switched(tmp_path)), "-o", str(out), "--inputs", str(npz)]) == 0
    assert "PASS" in capsys.readouterr().out


def test_a_scalar_input_shape(tmp_path):
    """NAME=:int64 gives a scalar input (a TorchScript program's int argument, say)."""
    out = tmp_path / "rates.onnx"
    assert main(["-q", "convert", str(_rate_switched(tmp_path)), "-o", str(out), "--input-shape", "sr=:int64"]) == 0
    assert not onnx.load(out).graph.input[1].type.tensor_type.shape.dim
