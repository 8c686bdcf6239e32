"""Every op of the catalogue is complete, and decompositions compute what the op computes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.infer_shapes import infer_shapes


@pytest.mark.parametrize("s", op_schema.all_schemas(), ids=lambda s: s.name)
def test_schema_is_complete(s):
    assert s.doc and s.family
    assert s.layout.kind in ("implicit", "transparent", "attribute", "terminate", "permute", "shape")
    assert callable(s.reference)
    for name, attr in s.attrs.items():
        assert attr.kind, name


def _single(op, shapes_, attrs=None, dtype="float32", extra_consts=()):
    g = Graph(op)
    ins = [g.add_input(f"in{i}", dtype, s) for i, s in enumerate(shapes_)]
    ins += [g.add_constant(f"c{i}", c) for i, c in enumerate(extra_consts)]
    g.outputs.append(g.op(op, *ins, name=op.lower(), **(attrs or {})))
    infer_shapes(g)
    return g


CASES = [
    ("SiLU", [(2, 5)], {}, ()),
    ("HardSwish", [(2, 5)], {}, ()),
    ("Gelu", [(2, 5)], {}, ()),
    ("Gelu", [(2, 5)], {"approximate": "tanh"}, ()),
    ("Dense", [(2, 3, 4)], {}, (np.ones((4, 6), np.float32) * 0.3, np.arange(6, dtype=np.float32))),
    ("Attention", [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], {}, ()),
    ("Attention", [(1, 2, 5, 4), (1, 2, 5, 4), (1, 2, 5, 4)], {"is_causal": 1}, ()),
    # the mask closes the first query row entirely: the op's zero weights, not Softmax's NaN
    ("Attention", [(1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4)], {},
     (np.array([[False, False, False], [True, False, True], [True, True, True]]),)),
    # projections of other widths (value heads of 3), biases, and a mask that closes the first query row
    ("MultiHeadAttention", [(2, 5, 8), (2, 6, 4), (2, 6, 4)], {"num_heads": 2},
     tuple(np.random.default_rng(3).standard_normal(s).astype(np.float32)
           for s in ((8, 8), (4, 8), (4, 6), (6, 7), (8,), (8,), (6,), (7,)))
     + ((np.arange(30).reshape(5, 6) > 5) & (np.arange(30).reshape(5, 6) % 4 > 0),)),
    ("MaxPool", [(1, 2, 9, 8)], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, ()),
    ("AveragePool", [(1, 2, 9, 8)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                      "ceil_mode": 1}, ()),
    ("AveragePool", [(1, 2, 9, 8)], {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1],
                                      "count_include_pad": 1, "ceil_mode": 1}, ()),
    ("AveragePool", [(1, 7, 9, 2)], {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "layout": "NHWC"}, ()),
    ("Resize", [(1, 2, 5, 4)], {"mode": "linear"}, (np.zeros(0, np.float32), np.array([1, 1, 2, 1.5], np.float32))),
    ("Resize", [(1, 2, 5, 4)], {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
     (np.zeros(0, np.float32), np.zeros(0, np.float32), np.array([1, 2, 7, 3], np.int64))),
    ("Resize", [(1, 2, 5, 4)], {"mode": "nearest", "nearest_mode": "round_prefer_ceil", "antialias": 1},
     (np.zeros(0, np.float32), np.array([1, 1, 0.6, 2], np.float32))),
]


@pytest.mark.parametrize("op,shapes_,attrs,consts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_decomposition_matches_reference(op, shapes_, attrs, consts):
    g = _single(op, shapes_, attrs, extra_consts=consts)
    rng = np.random.default_rng(0)
    feeds = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in g.inputs}
    expected = tb.run(g, feeds)[g.outputs[0].name]
    original = g.nodes[0]  # blocked: a decomposition may use the op in a configuration a target takes
    legalize(g, lambda n: "blocked" if n is original else None, "test")
    assert original not in g.nodes
    got = tb.run(g, feeds)[g.outputs[0].name]
    assert not np.isnan(expected).any()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_nhwc_layout_computes_the_same_as_nchw():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    outs = {}
    for layout in ("NCHW", "NHWC"):
        g = Graph(layout)
        xin = g.add_input("x", "float32", x.shape if layout == "NCHW" else x.transpose(0, 2, 3, 1).shape)
        y = g.op("Conv", xin, g.add_constant("w", w), name="conv", pads=[1, 1, 1, 1], layout=layout)
        g.outputs.append(g.op("MaxPool", y, name="pool", kernel_shape=[2, 2], strides=[2, 2], layout=layout))
        infer_shapes(g)
        feed = x if layout == "NCHW" else x.transpose(0, 2, 3, 1)
        outs[layout] = tb.run(g, {"x": feed})[g.outputs[0].name]
        assert tuple(g.outputs[0].shape) == outs[layout].shape
    np.testing.assert_allclose(outs["NHWC"].transpose(0, 3, 1, 2), outs["NCHW"], rtol=1e-6)


OP_MODULES = sorted(p.stem for p in Path(op_schema.__file__).parent.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module", OP_MODULES)
def test_any_catalogue_module_imported_first_loads_the_whole_catalogue(module):
    """Families register lowerings and decompositions on each other's ops: importing any one of them first (a
    user's `import tensorbridge.ops.quant`) must not meet a half-initialised module."""
    code = (f"import tensorbridge.ops.{module}\nfrom tensorbridge.ops import schema\n"
            "assert schema.get('Dense') is not None and schema.get('QuantizeLinear').decompose is not None")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
