"""Names from a model file are printed escaped: control and bidi characters cannot reach the terminal."""

import onnx
from onnx import TensorProto as T
from onnx import helper as h

from tensorbridge.cli.main import main


def test_control_characters_in_names_are_escaped(tmp_path, capsys):
    hostile = "relu\x1b[2J\r\u202eevil"
    graph = h.make_graph([h.make_node("Relu", ["x"], [hostile], name=hostile)], "model\x1b]0;title\x07",
                         [h.make_tensor_value_info("x", T.FLOAT, [2])],
                         [h.make_tensor_value_info(hostile, T.FLOAT, [2])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")

    assert main(["inspect", str(tmp_path / "m.onnx")]) == 0
    out = capsys.readouterr()
    printed = out.out + out.err
    assert "relu" in printed and "\\x1b[2J" in printed and "\\u202e" in printed
    assert not any(c in printed for c in "\x1b\r\u202e\x07")
