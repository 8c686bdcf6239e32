"""Every decomposition against ONNX's own cases of its op: where a decomposition takes a case, the ops it writes
compute every output the op does (the reference on both graphs)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorbridge.ops import schema as op_schema
from tensorbridge.reference.interpreter import run
from tests.cases.catalogue import cases

DECOMPOSED = sorted(s.name for s in op_schema.all_schemas() if s.decompose is not None)
#: ops whose decomposition takes every ONNX case of theirs that the corpus holds
COMPLETE = {"Acos", "AffineGrid", "Asin", "Atan", "Attention", "Col2Im", "DFT", "Dropout", "DynamicQuantizeLinear",
            "Einsum", "GRU", "GridSample", "GroupNormalization", "IsNaN", "LSTM", "MatMulInteger", "MaxUnpool", "Mish",
            "QLinearMatMul", "RNN", "RoiAlign", "RotaryEmbedding", "STFT", "TensorScatter", "Trilu"}


@pytest.mark.parametrize("op", DECOMPOSED)
def test_a_decomposition_computes_its_ops_cases(op):
    decompose = op_schema.get(op).decompose
    for case in cases(op, limit=200):
        node = next(n for n in case.graph.nodes if n.op == op)
        if decompose(case.graph, node) is not True:  # False, or why it does not cover the case
            assert op not in COMPLETE, f"{case.name} is not decomposed"
            continue
        got = run(case.graph, case.feeds)
        for v, expected in zip(case.graph.outputs, case.expected):
            tol = 2e-3 if expected.dtype == np.float16 else 1e-4  # float16 rounds each op's result
            np.testing.assert_allclose(np.asarray(got[v.name], np.float64), np.asarray(expected, np.float64),
                                       rtol=tol, atol=tol / 10, err_msg=f"{case.name}: {v.name}")
