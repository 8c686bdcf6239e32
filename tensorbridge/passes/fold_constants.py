"""Constant folding: nodes whose inputs are all constants are evaluated once, at conversion.

The reference interpreter computes the value; the node's outputs become constants with the
same names. An op that reads only its input's shape (Shape, Size) folds whenever that shape is
static, so shape arithmetic on static models disappears; so does shape arithmetic whose every entry shape
inference knows (the static dims of a shape with another open). Backends that need weights as data (code
generators building layers) run it, so a weight produced by an op (ConstantOfShape, a Transpose of
a weight...) still becomes a layer parameter. Ops the catalogue marks not foldable (side effects,
randomness, control flow) and results larger than `max_bytes` are left alone. Subgraphs (If branches, Loop
bodies) are folded too, and an If whose condition folded to a constant becomes the branch it takes.

Folding is bounded on hostile input: a result may be at most 8x its constant operands (a dtype widening,
such as int8 -> float64) plus `FREE_BYTES`; the bytes beyond that (a ConstantOfShape, an Expand or a Tile
that makes much from little) may add up to `GROWTH_BUDGET` per pass. Beyond either, the op stays in the graph.
"""

from __future__ import annotations

import logging

import numpy as np

from tensorbridge.ir import shapes
from tensorbridge.ir.graph import Graph
from tensorbridge.ops import schema as op_schema
from tensorbridge.ops.control import inline_chosen_branch

log = logging.getLogger(__name__)

FREE_BYTES = 64 << 20
GROWTH_BUDGET = 256 << 20


def fold_constants(graph: Graph, max_bytes: int = 1 << 31, keep: frozenset = frozenset(),
                   keep_learned: bool = False) -> Graph:
    """Fold every foldable node except those whose op is in `keep` (and, with `keep_learned`, those reading a
    learned weight, which then stays a weight: `Value.learned`)."""
    from tensorbridge.ops.infer import infer_node
    from tensorbridge.reference.interpreter import run_node

    budget = GROWTH_BUDGET
    for node in list(graph.nodes):
        for sub in node.subgraphs():
            fold_constants(sub, max_bytes, keep, keep_learned)
        if inline_chosen_branch(graph, node):
            continue
        infer_node(node)  # earlier folds may have made this node's types knowable
        schema = op_schema.get(node.op)
        if schema is not None and schema.reads_shape_only and node.inputs[0].shape is not None \
                and shapes.is_static(node.inputs[0].shape):
            _replace(graph, node, [run_node(node, [np.empty(node.inputs[0].shape, np.uint8)])[0]])
            continue
        if schema is None or not schema.foldable or node.op in keep or not node.inputs:
            continue
        known = _known_entries(node)
        if known is not None:
            _replace(graph, node, [known])
            continue
        data = [None if v is None else _data(v) for v in node.inputs]
        if any(v is not None and d is None for v, d in zip(node.inputs, data)):
            continue
        if keep_learned and any(v is not None and v.learned for v in node.inputs):
            continue
        if any(v.shape is None or not shapes.is_static(v.shape) for v in node.outputs):
            continue
        size = sum(_bytes(v.shape, v.dtype) for v in node.outputs)
        growth = size - 8 * sum(d.nbytes for d in data if d is not None)
        if size > max_bytes or growth > min(FREE_BYTES, budget):
            log.debug("not folding %s %r: its %d-byte result is beyond the folding budget", node.op, node.name, size)
            continue
        budget -= max(growth, 0)
        _replace(graph, node, run_node(node, data))
    return graph


def fold_keeping_quantization(graph: Graph) -> Graph:
    """Folding before a writer's layout and lowering passes: everything but (de)quantization, whose patterns
    those passes read (int8 weights behind a DequantizeLinear)."""
    return fold_constants(graph, keep=frozenset({"DequantizeLinear", "QuantizeLinear"}))


def _known_entries(node):
    """The output of shape arithmetic whose every entry shape inference knows (ops/infer.py `elements`), though
    its inputs are not all constants: a Gather of a shape's static dims while another dim is open."""
    v = node.outputs[0] if len(node.outputs) == 1 else None
    entries = v.meta.get("elements") if v is not None else None
    if entries is None or not all(isinstance(e, int) for e in entries) or v.dtype is None or \
            v.dtype.kind not in "iu" or v.shape is None or not shapes.is_static(v.shape) or \
            int(np.prod(v.shape)) != len(entries):
        return None
    return np.array(entries, v.dtype).reshape(v.shape)


def _data(v):
    """A value's data when it is known before the model runs: its constant, or, for a value of static shape with
    no elements (a reduction over an empty axis, say), that empty array: what reads it depends on its shape only."""
    if v.const is not None:
        return v.const
    if v.shape is not None and shapes.is_static(v.shape) and 0 in v.shape and v.dtype is not None:
        return np.zeros(v.shape, v.dtype)
    return None


def fold_value(v, max_bytes: int = 1 << 20, depth: int = 64):
    """`v`'s data: its constant, or computed now through its foldable producers when their leaves are
    constants or static shapes (folding those nodes in the graph); None when it depends on an input.
    Importers call it where an operand must be known (a permutation, a target shape) before the graph's
    own folding runs."""
    from tensorbridge.ops.infer import infer_node
    from tensorbridge.reference.interpreter import run_node

    if v is None or v.const is not None:
        return None if v is None else v.const
    node = v.producer
    schema = op_schema.get(node.op) if node is not None else None
    if schema is None or depth == 0 or not node.inputs:
        return None
    if schema.reads_shape_only and node.inputs[0].shape is not None and shapes.is_static(node.inputs[0].shape):
        operands = [np.empty(node.inputs[0].shape, np.uint8)]
    elif schema.foldable:
        operands = [None if u is None else fold_value(u, max_bytes, depth - 1) for u in node.inputs]
        if any(u is not None and a is None for u, a in zip(node.inputs, operands)):
            return None
    else:
        return None
    infer_node(node)
    if any(o.shape is None or not shapes.is_static(o.shape) for o in node.outputs) or \
            sum(_bytes(o.shape, None) for o in node.outputs) > max_bytes:
        return None
    graph, name = node.graph, v.name
    _replace(graph, node, run_node(node, operands))
    return graph.constants[name].const


def _bytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=object)) * (dtype.itemsize if dtype is not None else 8)


def _replace(graph: Graph, node, results) -> None:
    """Swap the node's outputs for constants holding `results`, keeping the value names."""
    roles = {v.meta.get("role") if not v.learned else "learned" for v in node.inputs if v is not None}
    for old, arr in zip(node.outputs, results):
        name = old.name
        old.name = graph.unique_name(f"{name}.folded")
        new = graph.add_constant(name, np.asarray(arr))
        graph.constants.pop(new.name)
        new.name = name
        graph.constants[name] = new
        new.meta = dict(old.meta)
        if roles <= {"literal"}:
            new.meta["role"] = "literal"  # computed from literals only: a literal too
        elif "learned" not in roles:
            new.meta["role"] = "buffer"  # computed from buffers (and literals): not trained either
        graph.replace_all_uses(old, new)
    graph.remove_node(node)
