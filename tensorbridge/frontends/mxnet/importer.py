"""MXNet frontend: a `-symbol.json` and its `.params` -> IR `Graph`, without MXNet.

The symbol says what the model computes, node by node in topological order; the params give the weights by
name (`arg:` for parameters, `aux:` for BatchNorm's running statistics). A variable with a value in the params
is a weight; one without is an input (besides the labels that only losses read), and since Gluon's `export`
does not record input shapes, `input_shapes` must give those the symbol does not (`__shape__`). Every op is
checked before any is read: an op without a rule, or an attribute no rule reads, is a blocker, and all are
reported together. `graph.metadata["mxnet"]["outputs"]` maps each MXNet output name (`NODE_output`) to the IR
value it is, for comparing with MXNet op by op.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import BlockerReport, InputShapesNeeded, ModelError, TensorbridgeError
from tensorbridge.formats.mxnet import DTYPES, Node, Symbol, paths, read_params, read_symbol
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.reference.interpreter import run_node
from tensorbridge.rules.mxnet import REGISTRY
from tensorbridge.rules.mxnet.base import (
    LABEL_READERS,
    MULTI_OUTPUT,
    OUTPUT_NAMES,
    PARAMETERISED,
    READS_LATER_ZEROS,
    VARIABLE,
    Attrs,
)


def load(source, weights=None, input_shapes: dict | None = None, input_dtypes: dict | None = None) -> Graph:
    """Read an MXNet model: `source` is the `-symbol.json` (or the `.params`, with the symbol beside it);
    `weights` names a params file elsewhere (default: the latest `PREFIX-NNNN.params` beside the symbol)."""
    symbol_path, params_path = paths(source, weights)
    symbol = read_symbol(symbol_path)
    params = read_params(params_path)
    graph = Importer(symbol, params, input_shapes or {}, input_dtypes or {}).run()
    graph.name = symbol_path.name.removesuffix("-symbol.json").removesuffix(".json") or "mxnet"
    return graph


def head_names(symbol_path) -> list[str]:
    """MXNet's names of the model's outputs (`list_outputs()`)."""
    symbol = read_symbol(symbol_path)
    return [output_name(symbol.nodes[i], k) for i, k in symbol.heads]


def output_name(node: Node, index: int) -> str:
    """MXNet's name for a node's output (what `get_internals()` lists): numbered when the op has several."""
    if node.op in OUTPUT_NAMES:
        return f"{node.name}_{OUTPUT_NAMES[node.op][index]}"
    parts = node.attrs.get("num_outputs", "1")
    several = node.op in MULTI_OUTPUT and (not parts.isdigit() or int(parts) > 1)
    return f"{node.name}_output{index}" if several else f"{node.name}_output"


class Importer:
    def __init__(self, symbol: Symbol, params: dict[str, np.ndarray], input_shapes: dict, input_dtypes: dict):
        self.symbol, self.input_shapes, self.input_dtypes = symbol, input_shapes, input_dtypes
        self.params = {name.split(":", 1)[1] if name[:4] in ("arg:", "aux:") else name: a
                       for name, a in params.items()}
        self.graph = Graph("mxnet")
        self.b = Builder(self.graph)
        self.values: dict[tuple[int, int], object] = {}
        self.node: Node | None = None
        self.attrs: Attrs | None = None
        self.inputs: list = []

    @property
    def x(self):
        return self.inputs[0] if self.inputs else None

    def is_zero(self, value) -> bool:
        """Whether an input is all zeros (zeros whose shape MXNet infers at run time included)."""
        return isinstance(value, LaterZeros) or (value is not None and value.const is not None
                                                 and not np.any(value.const))

    def evaluate(self, value) -> np.ndarray:
        """The value of what is computed from weights alone (Gluon packs an RNN's weights with ops)."""
        if value.const is not None:
            return np.asarray(value.const)
        node = value.producer
        if node is None or isinstance(value, LaterZeros):
            raise ModelError(f"{value.name} is computed from inputs, not from weights alone")
        results = run_node(node, [None if v is None else self.evaluate(v) for v in node.inputs])
        return results[node.outputs.index(value)]

    def zeros(self, shape, dtype):
        """Zeros of `shape`; a 0 in it is a size MXNet infers at run time from the op reading them."""
        if all(d > 0 for d in shape):
            return self.b.const(np.zeros(shape, dtype))
        return LaterZeros(self.b.name(""), tuple(shape))

    def weight(self, suffix: str, array):
        return self.b.weight(self.b.name(suffix), np.asarray(array))

    # -- reading -------------------------------------------------------------------------------------------
    def run(self) -> Graph:
        needed = self._needed()
        self._check(needed)
        self._variables(needed)
        report = BlockerReport("reading the MXNet model", "mxnet")
        for index in sorted(needed):
            node = self.symbol.nodes[index]
            if node.op == VARIABLE:
                continue
            if any(edge not in self.values for edge in node.inputs):
                continue  # it reads an op that could not be read (reported)
            self.node, self.attrs = node, Attrs(node.attrs)
            self.inputs = [self.values[edge] for edge in node.inputs]
            if node.op not in READS_LATER_ZEROS and any(isinstance(v, LaterZeros) for v in self.inputs):
                report.add(node.op, node.name, "reads zeros whose shape MXNet infers at run time")
                continue
            self.b.at(node.name, {"framework": "mxnet", "source_op": node.op, "source_name": node.name})
            try:
                outputs = self._convert(node)
                unread = self.attrs.unread()
                if unread:
                    raise ModelError(f"attribute(s) {', '.join(unread)} not read: tensorbridge cannot tell what "
                                     "they change")
            except TensorbridgeError as e:
                report.add(node.op, node.name, str(e))
                continue
            outputs = outputs if isinstance(outputs, list) else [outputs]
            self.values.update({(index, k): v for k, v in enumerate(outputs)})
        if any(isinstance(self.values.get(edge), LaterZeros) for edge in self.symbol.heads):
            report.add("_zeros", "", "an output is zeros whose shape MXNet infers at run time")
        report.raise_if_any()
        self.graph.outputs.extend(self.values[edge] for edge in self.symbol.heads)
        self._name_outputs()
        recover_patterns(self.graph)  # the layers written as plain ops (PReLU by a writer without prelu)
        eliminate_dead_code(self.graph)  # the parameters read through a transformed copy
        return self.graph

    def _convert(self, node: Node):
        rule = REGISTRY.import_rule(node.op)
        if rule.convert is not None:
            return rule.convert(self, node)
        return self.b.op(rule.ir_op, *self.inputs, **rule.attrs)

    def _needed(self) -> set[int]:
        """The nodes the heads depend on (labels that only losses read are left out)."""
        needed, stack = set(), [i for i, _ in self.symbol.heads]
        while stack:
            i = stack.pop()
            if i in needed:
                continue
            needed.add(i)
            node = self.symbol.nodes[i]
            label = LABEL_READERS.get(node.op)
            stack += [j for k, (j, _) in enumerate(node.inputs) if k != label]
        return needed

    def _check(self, needed: set[int]) -> None:
        report = BlockerReport("reading the MXNet symbol", "mxnet")
        for i in sorted(needed):
            node = self.symbol.nodes[i]
            if node.op != VARIABLE and REGISTRY.import_rule(node.op) is None:
                report.add(node.op, node.name, "MXNet op without a rule")
        report.raise_if_any()

    def _variables(self, needed: set[int]) -> None:
        declared = []
        for i in sorted(needed):
            node = self.symbol.nodes[i]
            if node.op != VARIABLE:
                continue
            if node.name in self.params:
                self.values[(i, 0)] = self.b.weight(node.name, self.params[node.name])
            else:
                declared.append((i, node))
        parameters = {i for j in needed if self.symbol.nodes[j].op in PARAMETERISED
                      for i, _ in self.symbol.nodes[j].inputs[1:]}
        absent = [node.name for i, node in declared if i in parameters]
        if absent:
            raise ModelError(f"the params file has no value for parameter(s) {', '.join(absent)}")
        unknown = sorted(set(self.input_shapes) - {node.name for _, node in declared})
        if unknown:
            raise ModelError(f"input_shapes names {unknown}, which are not inputs of the model "
                             f"({[node.name for _, node in declared]})")
        missing = []
        for i, node in declared:
            shape = self.input_shapes.get(node.name) or _declared_shape(node)
            if not shape:
                missing.append(node.name)
                continue
            dtype = self.input_dtypes.get(node.name) or _declared_dtype(node)
            self.values[(i, 0)] = self.graph.add_input(node.name, np.dtype(dtype), tuple(int(d) for d in shape))
        if missing:
            example = ", ".join(f"{name!r}: [...]" for name in missing)
            flags = " ".join(f"--input-shape {name}=N,C,H,W" for name in missing)
            raise InputShapesNeeded(f"the symbol does not record the shape of input(s) {', '.join(missing)} (Gluon's "
                             f"export does not); pass input_shapes={{{example}}} (command line: {flags})",
                             inputs=[node.name for _, node in declared])
        if not declared:
            raise ModelError("the model has no input: every variable has a value in the params file")

    def _name_outputs(self) -> None:
        names = {}
        for (i, k), value in self.values.items():
            if isinstance(value, LaterZeros):
                continue
            node = self.symbol.nodes[i]
            names[node.name if node.op == VARIABLE else output_name(node, k)] = value.name
        self.graph.metadata["mxnet"] = {"outputs": names}


class LaterZeros:
    """Zeros whose shape MXNet infers from the op that reads them (Gluon's initial RNN states): only ops of
    READS_LATER_ZEROS may read them."""

    def __init__(self, name: str, shape: tuple):
        self.name, self.shape, self.const, self.producer = name, shape, None, None


def _declared_shape(node: Node) -> list[int] | None:
    raw = node.attrs.get("__shape__")
    if not raw:
        return None
    shape = Attrs({"s": raw}).ints("s")
    return shape if shape and all(isinstance(d, int) and d > 0 for d in shape) else None


def _declared_dtype(node: Node) -> str:
    """The dtype a variable declares (`__dtype__`, MXNet's type flag), float32 when it declares none."""
    raw = node.attrs.get("__dtype__")
    if raw is None:
        return "float32"
    if not raw.isdigit() or int(raw) not in DTYPES:
        raise ModelError(f"input {node.name!r} declares dtype flag {raw!r}, which tensorbridge does not read")
    return np.dtype(DTYPES[int(raw)]).name
