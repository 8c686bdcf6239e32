"""The per-op corpus: for every catalogue op, small one-op graphs with inputs and the reference's outputs.

Cases come from two places, neither written here:
- the ONNX backend node tests of the installed `onnx` package (`collect_testcases()`): every one-node
  case of the op that the reference interpreter passes (tests/onnx_corpus), in name order, so the
  attribute variants, ranks and dtypes are ONNX's own choice;
- the op's own `examples` in its catalogue entry, for ops ONNX does not have (Dense, SiLU ...).

A case's graph keeps its data inputs as graph inputs and makes its other operands constants
(weights, axes, shapes, indices), as a model holds them; its expected outputs are the reference
interpreter's on the graph as built.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import numpy as np

from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema


@dataclass
class Case:
    op: str
    name: str
    graph: Graph
    feeds: dict[str, np.ndarray]
    expected: list[np.ndarray] = field(default_factory=list)


def _dynamic_inputs(schema, node_inputs) -> set[int]:
    """Which inputs stay graph inputs: the first, the variadic ones, and the required float or boolean operands
    of elementwise ops that are not weights (PRelu's slope is one); the rest are constants, as in models."""
    keep = {0}
    for i, v in enumerate(node_inputs):
        param = schema.inputs[min(i, len(schema.inputs) - 1)] if schema.inputs else None
        if param is not None and param.variadic:
            keep.add(i)
        elif schema.layout.kind == "transparent" and param is not None and not param.optional \
                and param.name not in schema.weights and v is not None and v.dtype is not None \
                and v.dtype.kind in "fb":
            keep.add(i)
    return keep


def _from_onnx(case) -> Case | None:
    import tensorbridge as tb
    from tensorbridge.ir.graph import clone
    from tensorbridge.passes.infer_shapes import infer_shapes
    from tests.onnx_corpus.corpus import _feeds

    graph = tb.load(case.model)
    if len(graph.nodes) != 1:
        return None
    node = graph.nodes[0]
    feeds = _feeds(case.model, case.data_sets[0][0])
    schema = op_schema.get(node.op)
    keep = _dynamic_inputs(schema, node.inputs)
    g = clone(graph)
    for i, v in enumerate(g.nodes[0].inputs):
        if v is None or v not in g.inputs or i in keep or v.name not in feeds:
            continue
        g.inputs.remove(v)
        v.const = np.asarray(feeds.pop(v.name))
        v.meta["role"] = "weight" if v.const.dtype.kind == "f" else "literal"
        g.constants[v.name] = v
    infer_shapes(g)
    # the op's required outputs: optional ones (LayerNormalization's Mean ...) are seldom read in models
    wanted = [v for i, v in enumerate(g.nodes[0].outputs)
              if schema.outputs and (schema.outputs[min(i, len(schema.outputs) - 1)].variadic
                                     or not schema.outputs[min(i, len(schema.outputs) - 1)].optional)]
    g.outputs = [v for v in g.outputs if v in wanted] or g.outputs[:1]
    return Case(node.op, case.name, g, feeds)


def _from_example(op: str, i: int, example: dict) -> Case:
    """A catalogue example: {"inputs": [shape, ...], "const": [input indices], "attrs": {...}}."""
    rng = np.random.default_rng(i)
    g = Graph(f"{op}_example{i}")
    values, feeds = [], {}
    for k, shape in enumerate(example["inputs"]):
        arr = rng.standard_normal(shape).astype(np.float32)
        if k in example.get("const", ()):
            v = g.add_constant(f"w{k}", arr)
        else:
            v = g.add_input(f"x{k}", "float32", shape)
            feeds[v.name] = arr
        values.append(v)
    node = g.add_node(op, values, dict(example.get("attrs", {})), name=op.lower())
    from tensorbridge.ops.infer import infer_node

    infer_node(node)
    g.outputs = list(node.outputs)
    return Case(op, f"{op}_example{i}", g, feeds)


@functools.cache
def _onnx_cases() -> dict[str, list]:
    from onnx.backend.test.case.node import collect_testcases

    from tests.onnx_corpus.corpus import read_known

    failing = {name for kind, name in read_known() if kind == "ref"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = [c for c in collect_testcases() if "_expanded" not in c.name and c.name not in failing]
    by_op: dict[str, list] = {}
    for c in sorted(found, key=lambda c: c.name):
        nodes = c.model.graph.node
        if len(nodes) == 1:
            by_op.setdefault(nodes[0].op_type, []).append(c)
    return by_op


def cases(op: str, limit: int = 3) -> list[Case]:
    """Up to `limit` cases of `op`, each with the reference's outputs."""
    from tensorbridge.reference.interpreter import run

    schema = op_schema.get(op)
    found: list[Case] = []
    for i, example in enumerate(schema.examples):
        found.append(_from_example(op, i, example))
    for c in _onnx_cases().get(op, []):
        if len(found) >= limit:
            break
        try:
            case = _from_onnx(c)
        except Exception:  # noqa: BLE001 - a case the IR cannot take in this form is not a case of the op
            continue
        if case is not None and case.op == op:
            found.append(case)
    for case in found[:limit]:
        out = run(case.graph, case.feeds)
        case.expected = [np.asarray(out[v.name]) for v in case.graph.outputs]
    return found[:limit]
