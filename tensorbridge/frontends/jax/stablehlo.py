"""JAX frontend for serialized `jax.export` artifacts (`Exported.serialize()`): the StableHLO module inside,
read op by op into the IR through the Flax registry's `stablehlo` rules.

- A file is deserialized by a throwaway process (the MLIR bytecode reader is C++ code and the file may be
  hostile), which hands back the module as text; an `Exported` in memory is the user's own and read here.
- The text is parsed with jaxlib's MLIR bindings. Each op becomes an `HloOp` (name, attributes as Python
  values, result types, the ops of a reduction's body) and the rule of its name converts it.
- `func.call` is inlined; the rules of `stablehlo.if`, `stablehlo.case` and `stablehlo.while` make If and
  Loop of the regions this importer reads on request (`inline`, `subgraph`).
- Float constants of more than one distinct value (what the exported function closed over: its parameters)
  are weights, named after the op that reads them; the rest are literals.
- Every op without a rule, and every configuration a rule cannot read, is listed in one error.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np

from tensorbridge.errors import InvariantError, ModelError
from tensorbridge.formats.isolated import run_child
from tensorbridge.frontends.jax.importer import JaxprImporter
from tensorbridge.frontends.jax.marks import Marks
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import Value
from tensorbridge.rules.flax import REGISTRY

#: seconds allowed to deserialize a file: a base for starting Python and jax, plus time per byte
BASE_SECONDS = 20
BYTES_PER_SECOND = 50 << 20

_DESERIALIZE = """
import json
import sys

from jax import export

with open(sys.argv[1], "rb") as f:
    exported = export.deserialize(bytearray(f.read()))
print(json.dumps({"text": exported.mlir_module(), "kept": sorted(exported.module_kept_var_idx),
                  "inputs": [[[str(d) for d in a.shape], str(a.dtype)] for a in exported.in_avals]}))
"""

#: MLIR element types -> numpy dtypes
ELEMENT_TYPES = {"bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64, "f16": np.float16,
                 "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                 "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64}


@dataclass
class HloOp:
    """One StableHLO op as the rules read it: plain Python values, no MLIR objects."""

    name: str
    attrs: dict
    results: list[tuple[tuple[int, ...], np.dtype]]
    #: a reduction's body: (op name, comparison direction or None) per op, its return left out
    body: list[tuple[str, str | None]] = field(default_factory=list)
    #: the op's regions (branches, a loop's condition and body), for `importer.inline`
    regions: list = field(default_factory=list)


def load(source, params=None, **_options) -> Graph:
    """The graph of a serialized `jax.export` artifact (a path) or of an `Exported` object. `params` (any
    pytree, as `nnx.split` gives) are the values of the function's first arguments, when it was exported
    as f(params, *inputs): they become weights named by their paths, the remaining arguments inputs."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        limit = BASE_SECONDS + path.stat().st_size / BYTES_PER_SECOND
        found = json.loads(run_child(_DESERIALIZE, [str(path)], limit,
                                     f"{path} is not a readable jax.export artifact"))
        name = path.stem
    else:
        found = {"text": source.mlir_module(), "kept": sorted(source.module_kept_var_idx),
                 "inputs": [[[str(d) for d in a.shape], str(a.dtype)] for a in source.in_avals]}
        name = source.fun_name
    symbolic = [shape for shape, _ in found["inputs"] if not all(d.isdigit() for d in shape)]
    if symbolic:
        raise ModelError(f"the artifact was exported with symbolic dimensions ({', '.join(map(str, symbolic))}); "
                         "export it with concrete shapes")
    from jax.interpreters import mlir

    with mlir.make_ir_context():
        try:
            module = mlir.ir.Module.parse(found["text"])
        except Exception as e:  # noqa: BLE001 - the MLIR parser's diagnostics
            raise ModelError(f"the artifact's StableHLO module does not parse: {str(e).splitlines()[0]}") \
                from None
        return StableHloImporter(_safe_name(name)).run_module(module, found["inputs"], found["kept"],
                                                                _weights(params, found["inputs"]))


def _weights(params, inputs: list) -> list[tuple[str, np.ndarray]]:
    """(path, array) of each leaf of `params`, checked against the argument it stands for."""
    if params is None:
        return []
    import jax

    from tensorbridge.frontends.jax.importer import path_name

    leaves = [(path_name(path), np.asarray(leaf)) for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]]
    if len(leaves) > len(inputs):
        raise ModelError(f"params has {len(leaves)} arrays; the exported function takes {len(inputs)} arguments")
    for k, ((name, array), (shape, dtype)) in enumerate(zip(leaves, inputs)):
        if list(array.shape) != [int(d) for d in shape] or str(array.dtype) != dtype:
            raise ModelError(f"params {name!r} is {array.dtype}{list(array.shape)}; the exported function's "
                             f"argument {k} is {dtype}{[int(d) for d in shape]}")
    return leaves


def _safe_name(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_") or "jax_export"


class StableHloImporter(JaxprImporter):
    """Reads a StableHLO module; shares the jaxpr importer's graph building and blocker report."""

    def __init__(self, name: str):
        super().__init__(name, Marks())
        self.functions: dict = {}
        self._calls: list[str] = []  # the functions being inlined, outermost first
        self._env: dict = {}  # the SSA values of the function being read (regions read those around them)
        self._constants_read = 0

    def run_module(self, module, inputs: list, kept: list[int], weights: list[tuple[str, np.ndarray]]) -> Graph:
        """The graph of `module`'s main function, whose first arguments are the `weights`."""
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.functions[op.attributes["sym_name"].value] = op
        main = self.functions.get("main")
        if main is None:
            raise ModelError("the artifact's module has no main function")
        input_names, output_names = _signature(main, len(inputs), kept)
        values = [self.weight(name, array) for name, array in weights]
        values += [self.graph.add_input(name, dtype, tuple(int(d) for d in shape))
                   for name, (shape, dtype) in list(zip(input_names, inputs))[len(weights):]]
        outputs = self._block(main.regions[0].blocks[0], [values[i] for i in kept], {})
        self.report.raise_if_any("Nothing was written. An op needs an import rule (tensorbridge/rules/flax/).")
        for name, v in zip(output_names, outputs):
            if v.producer is None or v.producer.graph is not self.graph or v in self.graph.outputs:
                v = self.emit("Identity", [v], suffix=name)
            v.name = self.graph.unique_name(name)
            self.graph.outputs.append(v)
        return self.finish()

    # -- the walk ------------------------------------------------------------------------------------
    def _block(self, block, arguments: list, env: dict) -> list:
        """Read a block's ops with its arguments bound; the values its terminator returns. `env` maps the
        function's SSA values (a region reads those of the blocks around it) to IR values."""
        env.update(zip(block.arguments, arguments))
        for op in block.operations:
            op = op.operation
            operands = [self._value(env, v) for v in op.operands]
            if op.name in ("func.return", "stablehlo.return"):
                return operands
            results = self._op(op, operands, env) if all(v is not None for v in operands) else None
            for k, value in enumerate(op.results):
                env[value] = results[k] if results is not None else None
                if isinstance(env[value], Value):
                    _check_type(env[value], value.type, op.name)
        raise ModelError("a StableHLO block without a terminator")

    def _value(self, env, value):
        found = env[value] if value in env else None
        if isinstance(found, np.ndarray):  # a constant, made an IR value (of the outermost graph) where first read
            with self.building(self.graph):
                uniform = found.size == 0 or bool(np.all(found == found.flat[0]))
                found = env[value] = self._constant(found, f"{self.build.base}.param{self._constants_read}",
                                                    literal=uniform)
            self._constants_read += 1
        return found

    def _op(self, op, operands: list, env: dict) -> list | None:
        name = op.name
        self.build.at(f"{_location_op(op.location) or name.split('.')[-1]}_{len(self.graph.nodes)}")
        try:
            if name == "stablehlo.constant":
                return [_array(op.attributes["value"])]
            if name in ("func.call", "stablehlo.composite"):
                return self._call(op.attributes["callee" if name == "func.call" else "decomposition"].value,
                                  operands)
            rule = REGISTRY.import_rule(name, "stablehlo")
            if rule is None:
                target = f" (custom call {op.attributes['call_target_name'].value})" \
                    if name == "stablehlo.custom_call" else ""
                raise ModelError(f"no rule for the StableHLO op {name}{target}")
            outer, self._env = self._env, env
            try:
                out = rule.convert(self, _hlo_op(op), *operands)
            finally:
                self._env = outer
            return list(out) if isinstance(out, (list, tuple)) else [out]
        except ModelError as e:
            self.report.add(name, self.build.base, str(e))
            return None

    def _call(self, callee: str, operands: list) -> list:
        """The callee's body inlined with its arguments bound to `operands`."""
        if callee not in self.functions:
            raise ModelError(f"a call to {callee!r}, which the module does not define")
        if callee in self._calls:
            raise ModelError(f"{callee!r} calls itself (through {' -> '.join(self._calls)}): recursion is not read")
        self._calls.append(callee)
        try:
            return self._block(self.functions[callee].regions[0].blocks[0], operands, {})
        finally:
            self._calls.pop()

    def inline(self, region, arguments: list) -> list:
        """The values a region (an if/case branch, a while loop's condition or body) returns from `arguments`,
        read into the graph being built; its ops may read the values of the blocks around it."""
        return self._block(region.blocks[0], arguments, self._env)


def _check_type(v: Value, declared, op_name: str) -> None:
    """Give an IR value without inferred types (an Einsum, a Slice of computed bounds) the op's declared ones;
    a value whose inferred shape differs from the declared one is a reading bug."""
    shape = tuple(declared.shape)
    known = v.shape is not None and len(v.shape) == len(shape) and \
        all(d is None or d == e for d, e in zip(v.shape, shape))
    if v.shape is None or (known and None in v.shape):  # a dynamic Slice's size: the module knows it
        v.shape, v.dtype = shape, _element_type(declared.element_type)
    elif tuple(v.shape) != shape:
        made = v.producer.op if v.producer is not None else "a constant"
        raise InvariantError(f"{op_name} read as {made} of shape {v.shape}; the module says {shape}")


def _hlo_op(op) -> HloOp:
    attrs = {key: _python(op.attributes[key]) for key in op.attributes if not key.startswith("mhlo.")}
    results = [(tuple(r.type.shape), _element_type(r.type.element_type)) for r in op.results]
    body = []
    if op.regions and op.name in ("stablehlo.reduce", "stablehlo.reduce_window"):
        for inner in op.regions[0].blocks[0].operations:
            inner = inner.operation
            if inner.name != "stablehlo.return":
                direction = _python(inner.attributes["comparison_direction"]) \
                    if "comparison_direction" in inner.attributes else None
                body.append((inner.name, direction))
    return HloOp(op.name, attrs, results, body, list(op.regions))


def _python(attr):
    """An MLIR attribute as a Python value: ints, floats, lists, numpy arrays, dicts of dimension numbers."""
    from jax.interpreters.mlir import ir
    from jaxlib.mlir.dialects import stablehlo as hlo

    numbers = {hlo.ConvDimensionNumbers: ("input_batch_dimension", "input_feature_dimension",
                                          "input_spatial_dimensions", "kernel_input_feature_dimension",
                                          "kernel_output_feature_dimension", "kernel_spatial_dimensions",
                                          "output_batch_dimension", "output_feature_dimension",
                                          "output_spatial_dimensions"),
               hlo.DotDimensionNumbers: ("lhs_batching_dimensions", "rhs_batching_dimensions",
                                         "lhs_contracting_dimensions", "rhs_contracting_dimensions"),
               hlo.GatherDimensionNumbers: ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                            "start_indices_batching_dims", "start_index_map", "index_vector_dim")}
    for cls, fields in numbers.items():
        if cls.isinstance(attr):
            typed = cls(attr)
            return {f: (list(v) if isinstance(v := getattr(typed, f), (list, tuple)) or hasattr(v, "__iter__")
                        else int(v)) for f in fields}
    if hlo.ComparisonDirectionAttr.isinstance(attr):
        return hlo.ComparisonDirectionAttr(attr).value
    if hlo.ComparisonTypeAttr.isinstance(attr):
        return hlo.ComparisonTypeAttr(attr).value
    attr = attr.maybe_downcast() if hasattr(attr, "maybe_downcast") else attr
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, (ir.DenseI64ArrayAttr, ir.DenseBoolArrayAttr)):
        return [v for v in attr]
    if isinstance(attr, ir.DenseElementsAttr):
        return _array(attr)
    if isinstance(attr, ir.ArrayAttr):
        return [_python(a) for a in attr]
    return str(attr)


def _array(attr) -> np.ndarray:
    from jax.interpreters.mlir import ir

    dense = ir.DenseElementsAttr(attr)
    kind = ir.RankedTensorType(dense.type)
    dtype, shape = _element_type(kind.element_type), tuple(kind.shape)
    if dense.is_splat:
        splat = dense.get_splat_value()
        value = _python(splat)
        return np.full(shape, value, dtype)
    if dtype == np.bool_:  # packed one bit per element in MLIR's buffer
        return np.array([bool(_python(dense[i])) for i in range(len(dense))]).reshape(shape)
    return np.array(dense, copy=True).astype(dtype).reshape(shape)


def _element_type(element) -> np.dtype:
    name = str(element)
    if name not in ELEMENT_TYPES:
        raise ModelError(f"the StableHLO element type {name} is not read")
    return np.dtype(ELEMENT_TYPES[name])


def signature(exported) -> tuple[list[str], list[str]]:
    """The input and output names an `Exported` reads as: its main function's argument names (`x`), else
    `input_<k>`, and its results' (`result[0]` as `result_0`)."""
    from jax.interpreters import mlir

    with mlir.make_ir_context():
        module = mlir.ir.Module.parse(exported.mlir_module())
        main = next(op for op in module.body.operations if op.operation.name == "func.func"
                    and op.attributes["sym_name"].value == "main")
        return _signature(main, len(exported.in_avals), sorted(exported.module_kept_var_idx))


def _signature(main, n_inputs: int, kept: list[int]) -> tuple[list[str], list[str]]:
    block = main.regions[0].blocks[0]
    located = {index: _location_name(block.arguments[k].location) for k, index in enumerate(kept)}
    inputs = _unique([_safe_name(located.get(i) or f"input_{i}") for i in range(n_inputs)])
    results = main.attributes["res_attrs"] if "res_attrs" in main.attributes else None
    n_outputs = len(main.type.results)
    labels = [_result_name(results[k]) if results is not None else None for k in range(n_outputs)]
    return inputs, _unique([_safe_name(label or f"output_{k}") for k, label in enumerate(labels)])


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name] - 1}")
    return out


def _location_name(location) -> str | None:
    """'x' for loc("x")."""
    found = re.match(r'loc\("([^"]*)"', str(location))
    return found.group(1) if found else None


def _location_op(location) -> str | None:
    """The primitive jax's name stack records for an op ('conv_general_dilated' for
    loc("jit(f)/conv_general_dilated"(...)))."""
    name = _location_name(location)
    return re.sub(r"\W+", "_", name.rsplit("/", 1)[-1]).strip("_") or None if name else None


def _result_name(attrs) -> str | None:
    """The name jax.export gives a result ('result[0]')."""
    from jax.interpreters.mlir import ir

    found = ir.DictAttr(attrs)
    return ir.StringAttr(found["jax.result_info"]).value if "jax.result_info" in found else None
