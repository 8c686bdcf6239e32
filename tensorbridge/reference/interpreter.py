"""The reference interpreter: runs any IR graph with the ops' NumPy references.

It is the semantic oracle every frontend and backend is tested against. `run` returns the
graph outputs, or every value with `intermediates=True` (used by per-layer verification).
Values are released as soon as their last reader has run, unless intermediates are kept.
Errors are wrapped with the node's name and op (`ReferenceError`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from tensorbridge.errors import Blocker, ModelError, TensorbridgeError, UnsupportedError
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph, values_read
from tensorbridge.ir.node import Node
from tensorbridge.ops import schema as op_schema

log = logging.getLogger(__name__)


class ReferenceError(TensorbridgeError):
    """An op failed while the reference interpreter ran it."""


def check_supported(graph: Graph) -> None:
    """Raise one error listing every node whose op has no reference implementation."""
    missing = [Blocker(n.op, n.name, "no reference implementation") for n in graph.all_nodes()
               if op_schema.get(n.op) is None]
    if missing:
        raise UnsupportedError(missing, "reference interpreter")


def coerce_feed(name: str, array, value) -> np.ndarray:
    arr = np.asarray(array)
    if value.dtype is not None and arr.dtype != value.dtype:
        if value.dtype == np.dtype(object) or arr.dtype.kind in "USO":
            arr = arr.astype(value.dtype)
        elif np.can_cast(arr.dtype, value.dtype, "same_kind") or arr.dtype.kind == value.dtype.kind:
            arr = arr.astype(value.dtype)
        else:
            raise ModelError(f"input {name!r} expects {dtypes.name(value.dtype)}, got {arr.dtype}")
    if value.shape is not None:
        if len(value.shape) != arr.ndim or any(isinstance(d, int) and d != a for d, a in zip(value.shape, arr.shape)):
            raise ModelError(f"input {name!r} expects shape {list(value.shape)}, got {list(arr.shape)}")
    return arr


def run_in_float64(graph: Graph, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's float64 result: `graph` run with every float32 constant and input widened to float64 (the
    function the weights define, free of float32 rounding); attribute variants lowered first, as the float32 run
    lowers them (LiteRT's run-time quantization of a float32 input is part of that function)."""
    from tensorbridge.ir.graph import clone
    from tensorbridge.passes.lower import has_variants, lower_variants

    g = clone(graph)
    if has_variants(g):
        g = lower_variants(g)
    for v in [*g.constants.values(), *g.inputs]:
        if v.dtype == np.float32:
            if v.const is not None:
                v.const = v.const.astype(np.float64)
            v.dtype = np.dtype(np.float64)
    widened = {k: np.asarray(a, np.float64) if np.asarray(a).dtype == np.float32 else a for k, a in inputs.items()}
    return run(g, widened)


def run(graph: Graph, inputs: dict[str, np.ndarray], intermediates: bool = False,
        on_node: Callable[[Node, list[np.ndarray]], None] | None = None) -> dict[str, np.ndarray]:
    """Run `graph` on named inputs; return outputs (or every value) by name."""
    check_supported(graph)
    from tensorbridge.passes.lower import has_variants, lower_variants

    if has_variants(graph):  # attribute variants (LiteRT's integer arithmetic ...) run as their exact lowering
        from tensorbridge.ir.graph import clone

        graph = lower_variants(clone(graph))
    missing = [v.name for v in graph.inputs if v.name not in inputs]
    if missing:
        raise ModelError(f"missing input(s) {missing}; the graph takes {[v.name for v in graph.inputs]}")
    env: dict[int, np.ndarray] = {}
    for v in graph.inputs:
        env[id(v)] = coerce_feed(v.name, inputs[v.name], v)
    return _run_graph(graph, env, intermediates, on_node)


def _run_graph(graph: Graph, env: dict[int, np.ndarray], keep_all: bool,
               on_node=None) -> dict[str, np.ndarray]:
    names: dict[str, np.ndarray] = {}
    for v in graph.constants.values():
        env[id(v)] = v.const
    remaining = {}
    if not keep_all:
        for n in graph.nodes:
            for v in values_read(n):
                if v.producer is not None and v.producer.graph is graph:
                    remaining[id(v)] = remaining.get(id(v), 0) + 1
    outputs = {id(v) for v in graph.outputs}
    for node in graph.nodes:
        args = []
        for v in node.inputs:
            if v is None:
                args.append(None)
            elif id(v) not in env:
                raise ReferenceError(f"node {node.name!r} ({node.op}) reads {v.name!r}, which has no value")
            else:
                args.append(env[id(v)])
        results = run_node(node, args, env)
        for v, r in zip(node.outputs, results):
            env[id(v)] = r
            if keep_all:
                names[v.name] = r
        if on_node is not None:
            on_node(node, results)
        if not keep_all:
            for v in values_read(node):
                if id(v) in remaining:
                    remaining[id(v)] -= 1
                    if remaining[id(v)] == 0 and id(v) not in outputs:
                        env.pop(id(v), None)
    for v in graph.outputs:
        if id(v) not in env:
            raise ReferenceError(f"graph output {v.name!r} was not computed")
        names[v.name] = env[id(v)]
    return names


def run_node(node: Node, args: list, env: dict | None = None) -> list[np.ndarray]:
    """Evaluate one node with its schema's reference implementation."""
    schema = op_schema.get(node.op)
    attrs = schema.attr_values(node.attrs, node.name)
    for variant in schema.lowerings:  # carried out by lowering the graph first (`run`)
        attrs.pop(variant, None)
    if "_num_outputs" in schema.wants:
        attrs["_num_outputs"] = len(node.outputs)
    if "_run_graph" in schema.wants:
        attrs["_run_graph"] = lambda g, feeds: run_subgraph(g, feeds, env or {})
    while args and args[-1] is None:
        args = args[:-1]
    try:
        with np.errstate(all="ignore"):
            out = schema.reference(*args, **attrs)
    except TensorbridgeError:
        raise
    except Exception as e:
        raise ReferenceError(f"while running node {node.name!r} ({node.op}): {type(e).__name__}: {e}") from e
    results = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(results) < len(node.outputs):
        raise ReferenceError(f"node {node.name!r} ({node.op}) produced {len(results)} outputs, "
                             f"{len(node.outputs)} expected")
    return [r if isinstance(r, np.ndarray) or r is None else np.asarray(r)
            for r in results[:len(node.outputs)]]


def run_subgraph(graph: Graph, feeds: list, outer_env: dict) -> list:
    """Run a nested graph (If branch, Loop body) with positional inputs and outer values."""
    env = dict(outer_env)
    for v, a in zip(graph.inputs, feeds):
        env[id(v)] = a
    out = _run_graph(graph, env, True)
    return [out[v.name] for v in graph.outputs]
