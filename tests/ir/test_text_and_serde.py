"""Text form and .tbir files round-trip losslessly, safely, and fail cleanly on bad files."""

import numpy as np
import pytest
from safetensors.numpy import load_file

import tensorbridge as tb
from tensorbridge.errors import ModelError
from tensorbridge.ir import printer, serde
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.parser import parse_graph
from tensorbridge.ir.value import QuantParams

HOSTILE = 'x"); import os; os.system("echo pwned") #'


def _rich_graph():
    g = Graph("rich")
    x = g.add_input(HOSTILE, "float32", ("batch", 3))
    big = g.add_constant("w big", np.arange(40, dtype=np.float32).reshape(10, 4))
    small = g.add_constant("bias", np.array([0.5, -1.0, 2.25], np.float32))
    y = g.op("Add", x, small, name="add")
    y.layout = "NHWC"
    y.quant = QuantParams(np.array([0.1], np.float32), np.array([3], np.int8), np.dtype(np.int8))
    z = g.op("MatMul", y, g.add_constant("eye", np.eye(3, dtype=np.float32)), name="mm")
    g.add_constant("bf", np.ones(4, dtype=tb.ir.dtypes.dtype("bfloat16")))
    g.add_constant("nibbles", np.arange(-4, 4).astype(tb.ir.dtypes.dtype("int4")))
    g.add_constant("words", np.array(["a", "b"], dtype=object))
    then_g, else_g = g.subgraph("then"), g.subgraph("else")
    then_g.outputs.append(then_g.op("Identity", z, name="t_id"))
    else_g.outputs.append(else_g.op("Neg", z, name="e_neg"))
    cond = g.add_constant("cond", np.array(True))
    out = g.add_node("If", [cond], {"then_branch": then_g, "else_branch": else_g}, name="branch").outputs[0]
    g.outputs.append(out)
    g.metadata["note"] = "kept"
    assert big.const.size > printer.INLINE_LIMIT
    return g


def test_text_round_trip_with_hostile_names():
    g = _rich_graph()
    text = printer.print_graph(g)
    weights = {k: v.const for k, v in g.constants.items()}
    again = parse_graph(text, weights)
    assert printer.print_graph(again) == text
    assert again.inputs[0].name == HOSTILE
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(tb.run(g, {HOSTILE: x})[g.outputs[0].name],
                                  tb.run(again, {HOSTILE: x})[again.outputs[0].name])


def test_external_constant_needs_weights():
    text = printer.print_graph(_rich_graph())
    with pytest.raises(ModelError, match="external"):
        parse_graph(text)


def test_tbir_round_trip_is_memory_mapped(tmp_path):
    g = _rich_graph()
    path = tmp_path / "m.tbir"
    tb.save(g, path)
    back = tb.load(path)
    assert printer.print_graph(back) == printer.print_graph(g)
    w = back.constants["w big"].const
    assert not w.flags.owndata and not w.flags.writeable  # a view of the file mapping
    for name, v in g.constants.items():
        got = back.constants[name].const
        assert got.dtype == v.const.dtype and got.shape == v.const.shape
        assert got.tobytes() == v.const.tobytes() if got.dtype != object else got.tolist() == v.const.tolist()
    assert back.metadata["note"] == "kept"
    assert back.nodes[0].outputs[0].quant.zero_point.tolist() == [3]


def test_tbir_is_a_plain_safetensors_file(tmp_path):
    g = _rich_graph()
    path = tmp_path / "m.tbir"
    serde.save(g, path)
    tensors = load_file(str(path))
    np.testing.assert_array_equal(tensors["bias"], g.constants["bias"].const)


@pytest.mark.parametrize("damage", ["truncate", "garble", "empty"])
def test_damaged_tbir_is_a_clean_error(tmp_path, damage):
    path = tmp_path / "m.tbir"
    serde.save(_rich_graph(), path)
    data = path.read_bytes()
    path.write_bytes({"truncate": data[: len(data) - 20], "garble": b"\x10" + data[1:200],
                      "empty": b""}[damage])
    with pytest.raises(ModelError):
        tb.load(path)
