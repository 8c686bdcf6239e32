"""PyTorch frontend: `nn.Module` (+ example inputs), `ExportedProgram` or `.pt2` -> IR `Graph`.

The module goes through `torch.export` (never pickles, never TorchScript), whose ATen graph
keeps layers whole (aten.conv2d, aten.linear, aten.layer_norm, aten.scaled_dot_product_attention,
aten.lstm ...), so each maps to one high-level IR op through `rules/torch.py`. Parameters
and buffers become constants named by their state-dict key; IR nodes are named after the
module hierarchy (`layer1.0.conv1`); dynamic dims (`torch.export.Dim`) become symbolic IR
dims. Every unsupported ATen op is listed in one error before anything is built.
"""

from __future__ import annotations

import functools
import logging
import operator
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import Value
from tensorbridge.passes.infer_shapes import infer_node, infer_shapes
from tensorbridge.rules import torch as rules

log = logging.getLogger(__name__)


def load(source, example_inputs=None, dynamic_shapes=None, strict: bool = False) -> Graph:
    """Import a PyTorch model through `torch.export`."""
    import torch

    if isinstance(source, (str, Path)) and Path(source).is_dir():
        return _load_folder(Path(source))
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.suffix in (".pt", ".pth"):
            _explain_state_dict(path)
        try:
            ep = load_program(path)
        except Exception as e:  # noqa: BLE001 - torch raises many kinds for a bad archive
            raise ModelError(f"{path} is not a readable torch.export program (.pt2): {e}") from None
        names = None
    elif isinstance(source, torch.export.ExportedProgram):
        ep, names = source, None
    elif isinstance(source, torch.nn.Module):
        if example_inputs is None:
            raise ModelError("loading an nn.Module needs example_inputs=(tensor, ...) to trace it with torch.export")
        args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        source.eval()
        try:
            ep = torch.export.export(source, args, dynamic_shapes=dynamic_shapes, strict=strict)
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"torch.export could not trace the module: {type(e).__name__}: {e}") from None
        names = _dim_names(ep, dynamic_shapes)
    else:
        raise ModelError(f"cannot load a {type(source).__name__} as a PyTorch model")
    return Importer(ep, names or _dim_names(ep, None)).run()


def _load_folder(path: Path) -> Graph:
    """A generated code folder: import it, trace it with inputs made from its INPUTS signature."""
    import torch

    from tensorbridge.verification.runners.torch import TorchModuleRunner, _to_torch

    runner = TorchModuleRunner(path)
    args, dynamic, dims = [], [], {}
    for _, dt, shape in runner.inputs:
        concrete = [d if isinstance(d, int) else 2 for d in shape]
        args.append(_to_torch(np.zeros(concrete, dtype=dtypes.dtype(dt))))
        spec = {i: dims.setdefault(d, torch.export.Dim(_ident(d))) for i, d in enumerate(shape) if isinstance(d, str)}
        dynamic.append(spec or None)
    return load(runner.module, tuple(args), tuple(dynamic) if dims else None)


def _ident(name: str) -> str:
    import re

    ident = re.sub(r"\W", "_", name)
    return ident if ident and not ident[0].isdigit() else f"d_{ident}"


def _explain_state_dict(path: Path) -> None:
    """A .pt/.pth file is read with weights_only=True and then we say what is missing."""
    import torch

    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"{path} cannot be read safely (weights_only=True refused it: {str(e).splitlines()[0]}). "
                         "tensorbridge never unpickles code; export the model with torch.export.save "
                         "(.pt2) or pass the nn.Module") from None
    what = "a state dict" if isinstance(obj, dict) else f"a {type(obj).__name__}"
    raise ModelError(f"{path} holds {what}: weights without the model code. Build the nn.Module in Python, "
                     "load the weights into it, and call tensorbridge.load(module, example_inputs=...) "
                     "or save it with torch.export.save(...) as .pt2")


def _dim_names(ep, dynamic_shapes) -> dict:
    """sympy symbol -> user's Dim name (from dynamic_shapes), by input position."""
    import torch

    names: dict = {}
    user_inputs = [n for n in ep.graph.nodes if n.op == "placeholder"
                   and n.name in ep.graph_signature.user_inputs]
    specs = []
    if isinstance(dynamic_shapes, dict):
        specs = list(dynamic_shapes.values())
    elif isinstance(dynamic_shapes, (list, tuple)):
        specs = list(dynamic_shapes)
    for node, spec in zip(user_inputs, specs):
        val = node.meta.get("val")
        if spec is None or val is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for axis, dim in items:
            if dim is not None and isinstance(val.shape[axis], torch.SymInt):
                names[val.shape[axis].node.expr] = getattr(dim, "__name__", str(dim))
    return names


def to_numpy(t) -> np.ndarray:
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(dtypes.dtype("bfloat16"))
    return t.numpy()


def torch_dtype_name(dt) -> str:
    import torch

    table = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
             torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
             torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}
    if dt not in table:
        raise ModelError(f"torch dtype {dt} is not supported")
    return table[dt]


class Importer:
    def __init__(self, ep, dim_names: dict):
        self.ep = ep
        self.dim_names = dim_names
        self.graph = Graph("torch_model")
        self.env: dict[str, object] = {}  # fx node name -> Value | tuple | python value
        self.sym_values: dict = {}  # sympy symbol -> IR int64[1] value
        self.report = BlockerReport("PyTorch import", "torch")
        self.node = None  # fx node being converted

    # -- driver -----------------------------------------------------------------------------
    def run(self) -> Graph:
        from tensorbridge.frontends.torch import convert

        self._preflight()
        sig = self.ep.graph_signature
        consts = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
                  **getattr(sig, "inputs_to_lifted_tensor_constants", {})}
        state = {**self.ep.state_dict, **getattr(self.ep, "constants", {})}
        for node in self.ep.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                if node.name in consts:
                    fqn = consts[node.name]
                    self.env[node.name] = self.graph.add_constant(fqn, to_numpy(state[fqn]))
                else:
                    self.env[node.name] = self._input(node)
            elif node.op == "call_function":
                self.env[node.name] = self._call(node, convert)
            elif node.op == "output":
                self._outputs(node)
        self.graph.metadata.update({"source_framework": "torch"})
        infer_shapes(self.graph)
        return self.graph

    def _preflight(self) -> None:
        for node in self.ep.graph.nodes:
            if node.op != "call_function" or node.target is operator.getitem or node.target in _sym_ops():
                continue
            name, quantization = aten_name(node.target), pt2e_name(node.target)
            if quantization is not None:
                if quantization not in rules.QUANTIZED:
                    self.report.add(str(node.target), node.name, "dynamic quantization (parameters computed at "
                                    "run time); only static PT2E quantization is supported")
            elif name is None:
                self.report.add(str(node.target), node.name, "not an ATen op")
            elif name not in rules.UNARY and name not in rules.BINARY and name not in rules.PASSTHROUGH \
                    and name not in rules.SPECIAL:
                self.report.add(f"aten.{name}", node.name, "no IR mapping yet")
        self.report.raise_if_any("Nothing was written. Unsupported ATen ops need a row in rules/torch.py.")

    def _input(self, node) -> Value:
        val = node.meta["val"]
        shape = tuple(self.dim(d) for d in val.shape)
        v = self.graph.add_input(node.name, torch_dtype_name(val.dtype), shape)
        for axis, d in enumerate(val.shape):
            if not isinstance(d, int):
                expr = d.node.expr
                if expr not in self.sym_values and getattr(expr, "is_Symbol", False):
                    self.sym_values[expr] = ("input", v, axis)
        return v

    def _outputs(self, node) -> None:
        sig = self.ep.graph_signature
        user = set(sig.user_outputs)
        outs = node.args[0]
        for arg in outs:
            if getattr(arg, "name", None) not in user and len(outs) > len(user):
                continue  # buffer mutations are not model outputs
            self.graph.outputs.append(self.value(arg))

    def _call(self, node, convert):
        if node.target is operator.getitem:
            src, idx = node.args
            return self.env[src.name][idx]
        if node.target in _sym_ops():
            return _sym_ops()[node.target](self, *[self.sym_or_value(a) for a in node.args])
        quantization = pt2e_name(node.target)
        if quantization is not None:
            return getattr(convert, rules.QUANTIZED[quantization])(self, node, *node.args, **node.kwargs)
        name = aten_name(node.target)
        if name in rules.PASSTHROUGH:
            return self.value(node.args[0])
        if name in rules.UNARY:
            return self.emit(rules.UNARY[name], [self.value(node.args[0])])
        if name in rules.BINARY:
            a, b = node.args[0], node.args[1]
            av, bv = self.value(a, like=b), self.value(b, like=a)
            alpha = node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)
            if alpha != 1 and name in ("add", "sub"):
                bv = self.emit("Mul", [bv, self.const(alpha, like=bv)], suffix="alpha")
            if name == "div" and node.kwargs.get("rounding_mode") == "floor":
                return self.emit("Floor", [self.emit("Div", [av, bv], suffix="div")])
            return self.emit(rules.BINARY[name], [av, bv], attrs={"fmod": 1} if name == "fmod" else None)
        return getattr(convert, rules.SPECIAL[name])(self, node, *node.args, **node.kwargs)

    # -- helpers for converters ---------------------------------------------------------------
    def dim(self, d):
        """A torch dim (int or SymInt) as an IR shape entry (int or symbolic name)."""
        if isinstance(d, int):
            return d
        expr = d.node.expr
        if getattr(expr, "is_Integer", False):
            return int(expr)
        return self.dim_names.get(expr, str(expr)) if getattr(expr, "is_Symbol", False) else None

    def meta(self, node=None):
        return (node or self.node).meta.get("val")

    def name(self, suffix: str = "") -> str:
        node = self.node
        stack = node.meta.get("nn_module_stack") or {}
        path = list(stack.values())[-1][0] if stack else ""
        base = path or node.name
        return f"{base}.{suffix}" if suffix else base

    def provenance(self) -> dict:
        node = self.node
        stack = node.meta.get("nn_module_stack") or {}
        path, kind = list(stack.values())[-1] if stack else ("", "")
        kind = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
        return {"framework": "torch", "source_op": str(node.target), "source_name": node.name,
                "module": path, "module_type": kind}

    def emit(self, op: str, inputs, attrs=None, outputs: int = 1, suffix: str = ""):
        """Add an IR node for the current fx node; returns its output (or outputs if > 1)."""
        node = self.graph.add_node(op, inputs, attrs or {}, outputs=outputs, name=self.name(suffix),
                                   meta=self.provenance())
        infer_node(node)
        val = self.meta()
        out = node.outputs[0]
        if not suffix and outputs == 1 and hasattr(val, "dtype") and hasattr(val, "shape"):
            if out.dtype is None:  # torch knows the type when no IR rule could infer it
                out.dtype = np.dtype(dtypes.dtype(torch_dtype_name(val.dtype)))
            if out.shape is None:
                out.shape = tuple(self.dim(d) for d in val.shape)
        return node.outputs[0] if outputs == 1 else node.outputs

    def const(self, value, like=None, dtype=None) -> Value:
        if dtype is None:
            dtype = like.dtype if isinstance(like, Value) and like.dtype is not None else None
        arr = np.asarray(value, dtype=dtype)
        if dtype is None and arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        v = self.graph.add_constant(self.name("const"), arr)
        v.meta["role"] = "literal"
        return v

    def value(self, arg, like=None) -> Value:
        """An fx argument as an IR value (scalars become constants of `like`'s dtype)."""
        import torch

        if hasattr(arg, "name") and hasattr(arg, "op"):
            v = self.env[arg.name]
            if isinstance(v, Value):
                return v
            if isinstance(v, tuple) and v[0] == "sym":
                return v[1]
            raise ModelError(f"{self.node.name}: argument {arg.name} is not a tensor")
        if isinstance(arg, (list, tuple)):
            return self.shape_tensor(arg)
        likev = None
        if like is not None and hasattr(like, "name") and hasattr(like, "op"):
            lv = self.env.get(like.name)
            likev = lv if isinstance(lv, Value) else None
        if isinstance(arg, bool):
            return self.const(arg, dtype=np.bool_)
        if isinstance(arg, (int, float)):
            if likev is not None and likev.dtype is not None:
                return self.const(arg, dtype=likev.dtype)
            return self.const(arg, dtype=np.float32 if isinstance(arg, float) else np.int64)
        if isinstance(arg, torch.SymInt):
            return self.sym_value(arg.node.expr)
        raise ModelError(f"{self.node.name}: unsupported argument {arg!r}")

    def sym_or_value(self, arg):
        if hasattr(arg, "name") and hasattr(arg, "op"):
            return self.env[arg.name]
        return arg

    def sym_value(self, expr) -> Value:
        """IR int64[1] value computing a sympy expression over the input dims."""
        import sympy

        if getattr(expr, "is_Integer", False):
            return self.const([int(expr)], dtype=np.int64)
        cached = self.sym_values.get(expr)
        if isinstance(cached, Value):
            return cached
        if isinstance(cached, tuple):
            _, inp, axis = cached
            v = self.emit("Shape", [inp], {"start": axis, "end": axis + 1}, suffix=f"dim{axis}")
        elif isinstance(expr, sympy.Add):
            parts = [self.sym_value(a) for a in expr.args]
            v = parts[0]
            for p in parts[1:]:
                v = self.emit("Add", [v, p], suffix="dim_add")
        elif isinstance(expr, sympy.Mul):
            parts = [self.sym_value(a) for a in expr.args]
            v = parts[0]
            for p in parts[1:]:
                v = self.emit("Mul", [v, p], suffix="dim_mul")
        elif type(expr).__name__ in ("FloorDiv", "CleanDiv"):
            v = self.emit("Div", [self.sym_value(expr.args[0]), self.sym_value(expr.args[1])], suffix="dim_div")
        else:
            raise ModelError(f"{self.node.name}: symbolic size {expr} is not supported")
        self.sym_values[expr] = v
        return v

    def shape_tensor(self, dims) -> Value:
        """A list of ints / SymInts / sym nodes as one IR int64 vector."""
        import torch

        static = []
        for d in dims:
            if isinstance(d, int):
                static.append(d)
            elif isinstance(d, torch.SymInt) and getattr(d.node.expr, "is_Integer", False):
                static.append(int(d.node.expr))
            else:
                static = None
                break
        if static is not None:
            return self.const(static, dtype=np.int64)
        parts = []
        for d in dims:
            if isinstance(d, int):
                parts.append(self.const([d], dtype=np.int64))
            elif isinstance(d, torch.SymInt):
                parts.append(self.sym_value(d.node.expr))
            else:
                v = self.env[d.name]
                parts.append(v[1] if isinstance(v, tuple) else v)
        return self.emit("Concat", parts, {"axis": 0}, suffix="shape")

    def out_shape(self, node=None) -> Value:
        """The current node's output shape as an IR value (constant when static)."""
        return self.shape_tensor(list(self.meta(node).shape))

    def rank(self, arg) -> int:
        return len(arg.meta["val"].shape)


def aten_name(target) -> str | None:
    ns = getattr(target, "namespace", None)
    if ns != "aten":
        return None
    return target.__name__.split(".")[0]


def pt2e_name(target) -> str | None:
    """The op name of a PT2E quantize/dequantize (`quantized_decomposed` namespace), else None."""
    if getattr(target, "namespace", None) != "quantized_decomposed":
        return None
    return target.__name__.split(".")[0]


def load_program(path):
    """`torch.export.load`, with PT2E's quantize/dequantize ops registered so quantized programs load."""
    import torch
    import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers the quantized_decomposed ops

    return torch.export.load(str(path))


def _sym_size(imp, x, dim):
    v = imp.emit("Shape", [x], {"start": dim, "end": dim + 1 if dim != -1 else None}, suffix=f"dim{dim}")
    expr = imp.meta().node.expr if hasattr(imp.meta(), "node") else None
    if expr is not None and expr not in imp.sym_values:
        imp.sym_values[expr] = v
    return ("sym", v)


def _sym_arith(op):
    def fn(imp, a, b):
        av = a[1] if isinstance(a, tuple) else imp.const([a], dtype=np.int64)
        bv = b[1] if isinstance(b, tuple) else imp.const([b], dtype=np.int64)
        return ("sym", imp.emit(op, [av, bv], suffix="dim"))
    return fn


@functools.cache
def _sym_ops() -> dict:
    """Python-level ops on symbolic sizes that torch.export leaves in the graph."""
    import torch

    return {torch.ops.aten.sym_size.int: _sym_size, operator.mul: _sym_arith("Mul"),
            operator.add: _sym_arith("Add"), operator.sub: _sym_arith("Sub"),
            operator.floordiv: _sym_arith("Div")}


def importable_ops() -> set[str]:
    """IR ops the PyTorch frontend produces: the table rows plus the op names the converters use."""
    from tensorbridge.frontends.torch import convert
    from tensorbridge.ops.schema import op_names_quoted_in

    named = op_names_quoted_in(convert)
    return set(rules.UNARY.values()) | set(rules.BINARY.values()) | named
