"""PyTorch frontend: `nn.Module` (+ example inputs), `ExportedProgram` or `.pt2` -> IR `Graph`.

The module goes through `torch.export` (never pickles, never TorchScript), whose ATen graph
keeps layers whole (aten.conv2d, aten.linear, aten.layer_norm, aten.scaled_dot_product_attention,
aten.lstm ...), so each maps to one high-level IR op through `rules/torch.py`. Parameters
and buffers become constants named by their state-dict key; IR nodes are named after the
module hierarchy (`layer1.0.conv1`); dynamic dims (`torch.export.Dim`) become symbolic IR
dims. Every unsupported ATen op is listed in one error before anything is built.
"""

from __future__ import annotations

import contextlib
import logging
import operator
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.frontends.torch.decompose import decompose_unconvertible
from tensorbridge.frontends.torch.fold import fold_in_torch
from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.state import state_entry
from tensorbridge.ir.value import Value
from tensorbridge.ops.control import computed_in
from tensorbridge.ops.elementwise import passed_on
from tensorbridge.passes.fold_constants import fold_constants
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.rules.torch import REGISTRY
from tensorbridge.rules.torch.base import UNCONVERTIBLE, dtype_name, to_numpy, to_torch
from tensorbridge.rules.torch.complex import BOUNDARY, real_view, touches_complex

log = logging.getLogger(__name__)
#: not folded at import: a quantized weight stays int8 storage and its dequantization
QUANTIZATION = frozenset({"QuantizeLinear", "DequantizeLinear"})


def load(source, example_inputs=None, dynamic_shapes=None, strict: bool = False) -> Graph:
    """Import a PyTorch model through `torch.export`."""
    import torch

    if isinstance(source, (str, Path)) and Path(source).is_dir():
        return _load_folder(Path(source))
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.suffix in (".pt", ".pth"):
            _explain_state_dict(path)
        ep, names = load_program(path), None
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
            raise ModelError(f"torch.export could not trace the module: {type(e).__name__}: {e}"
                             + (DATA_DEPENDENT if _data_dependent(e) else "")) from None
        names = _dim_names(ep, dynamic_shapes)
    else:
        raise ModelError(f"cannot load a {type(source).__name__} as a PyTorch model")
    try:
        ep = decompose_unconvertible(ep)
    except Exception as e:  # noqa: BLE001 - torch's decomposition can fail; the preflight then lists the ops
        log.info("torch's decompositions failed (%s: %s); converting the program as exported", type(e).__name__, e)
    return Importer(ep, names or _dim_names(ep, None)).run()


def _load_folder(path: Path) -> Graph:
    """A generated code folder: import it, trace it with inputs made from its signature."""
    import torch

    from tensorbridge.codegen.folder import load_model, read_signature

    signature = read_signature(path)
    module = load_model(path)
    args, dynamic, dims = [], [], {}
    for spec in signature["inputs"]:
        shape, dt = spec["shape"], spec["dtype"]
        concrete = [d if isinstance(d, int) else 2 for d in shape]
        args.append(to_torch(np.zeros(concrete, dtype=dtypes.dtype(dt))))
        spec = {i: dims.setdefault(d, torch.export.Dim(_ident(d))) for i, d in enumerate(shape) if isinstance(d, str)}
        dynamic.append(spec or None)
    return load(module, tuple(args), tuple(dynamic) if dims else None)


#: what a user can do when the module's Python decides on values its inputs hold
DATA_DEPENDENT = ("\nThe module's Python reads values out of tensors (.tolist(), .item(), a tensor's truth) and "
                  "branches on or hashes them, which torch.export cannot trace: those values are unknown while it "
                  "traces, even of a constant tensor. Rewrite that part with tensor ops (torch.where; torch.cond for "
                  "a branch) and convert again.")


def _data_dependent(error: Exception) -> bool:
    text = f"{type(error).__name__} {error}"
    return any(k in text for k in ("data-dependent", "DataDependent", "non-nested SymInt", "unbacked"))


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


class Importer:
    def __init__(self, ep, dim_names: dict):
        self.ep = ep
        self.dim_names = dim_names
        self.graph = Graph("torch_model")
        self.env: dict[str, object] = {}  # fx node name -> Value | tuple | python value
        self.sym_values: dict = {}  # sympy symbol -> IR int64[1] value
        self.report = BlockerReport("PyTorch import", "torch")
        self.build = Builder(self.graph)
        self.node = None  # fx node being converted
        self.prefix = ""  # inside a control-flow branch: its graph's name, which names its nodes
        self.state: dict[str, tuple[Value, np.ndarray]] = {}  # buffer written by the program -> (input, initial)
        self.state_written: dict[str, Value] = {}  # buffer -> the value the call leaves in it
        self.folded = fold_in_torch(ep)  # fx node name -> what it computes from buffers and literals

    # -- driver -----------------------------------------------------------------------------
    def run(self) -> Graph:
        self._preflight()
        sig = self.ep.graph_signature
        consts = {**sig.inputs_to_parameters, **sig.inputs_to_buffers,
                  **getattr(sig, "inputs_to_lifted_tensor_constants", {})}
        state = {**self.ep.state_dict, **getattr(self.ep, "constants", {})}
        written = set(getattr(sig, "buffers_to_mutate", {}).values())
        for node in self.ep.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                if consts.get(node.name) in written:  # state the program keeps between calls: an input
                    self.env[node.name] = self._state_input(consts[node.name], to_numpy(state[consts[node.name]]))
                elif node.name in consts:
                    fqn = consts[node.name]
                    v = self.env[node.name] = self.graph.add_constant(fqn, real_view(to_numpy(state[fqn])))
                    v.meta["state_key"] = fqn  # where the generated module keeps it
                    if node.name not in sig.inputs_to_parameters:
                        v.meta["role"] = "buffer"  # not trained: what the source computes from it is not either
                else:
                    self.env[node.name] = self._input(node)
            elif node.op == "call_function" and node.name in self.folded:
                self.env[node.name] = self.graph.add_constant(self.name(), to_numpy(self.folded[node.name]))
                self.env[node.name].meta["role"] = "buffer"
            elif node.op == "call_function":
                self.env[node.name] = self._call(node)
            elif node.op == "output":
                self._outputs(node)
        for name in self.folded:  # a step of a folded computation that only the next step read
            if not self.env[name].uses() and self.env[name] not in self.graph.outputs:
                self.graph.remove_constant(self.env[name])
        self._carry_state()
        self.graph.metadata.update({"source_framework": "torch"})
        # what the source computes from buffers and literals; a quantized weight keeps its (de)quantization
        fold_constants(self.graph, keep=QUANTIZATION, keep_learned=True)
        recover_patterns(self.graph)  # the layers the framework runs as plain ops (PReLU, RMSNorm ...)
        infer_shapes(self.graph)
        return self.graph

    def _preflight(self) -> None:
        """List every op without a rule, in the program and in its control flow's branches."""
        import torch

        graphs = [m.graph for m in self.ep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)]
        user_inputs = set(self.ep.graph_signature.user_inputs)
        boundary = {n for n in self.ep.graph.nodes
                    if n.op == "output" or n.op == "placeholder" and n.name in user_inputs}
        for node in (node for graph in graphs for node in graph.nodes):
            if node in boundary and touches_complex(node):
                self.report.add("complex tensor", node.name, BOUNDARY)
            if node.op != "call_function" or node.target is operator.getitem or node.name in self.folded:
                continue
            key = rule_key(node)
            if key is not None and key[0] == "complex" and REGISTRY.import_rule(key[1], key[0]) is None:
                self.report.add(f"aten.{key[1]}", node.name, "on complex tensors: no reading of it yet (a complex "
                                                            "tensor is read as its (real, imaginary) pair)")
                continue
            if key is not None and key[0] == "higher_order" and REGISTRY.import_rule(key[1], key[0]) is None:
                self.report.add(f"torch.{key[1]}", node.name, "this control flow (a scripted while loop, say) is "
                                                              "not converted yet")
            elif key is None:
                self.report.add(str(node.target), node.name, "not an ATen op")
            elif REGISTRY.import_rule(key[1], key[0]) is None:
                detail = "dynamic quantization (parameters computed at run time); only static PT2E quantization " \
                         "is supported" if key[0] == "pt2e" else "a library's own op (torch.library): no IR mapping" \
                    if key[0] == "library" else UNCONVERTIBLE.get(key[1], "no IR mapping yet")
                self.report.add(key[1] if key[0] == "library" else f"{key[0]}.{key[1]}", node.name, detail)
        self._refuse_state()
        self.report.raise_if_any("Nothing was written. Each op needs an import rule in tensorbridge/rules/torch/.")

    def _refuse_state(self) -> None:
        """A buffer written in place by an op of the program (a graph not functionalized, as torch.export's
        training IR keeps it) is a blocker; one the functional program returns to be written (`buffers_to_mutate`)
        is state the IR carries explicitly (see _carry_state)."""
        sig = self.ep.graph_signature
        buffers = getattr(sig, "inputs_to_buffers", {})
        for node in self.ep.graph.nodes:
            schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
            if schema is None or not schema.is_mutable:
                continue
            for arg, param in zip(node.args, schema.arguments):
                written = param.alias_info is not None and param.alias_info.is_write
                if written and getattr(arg, "name", None) in buffers:
                    self.report.add(str(node.target), node.name, f"writes buffer {buffers[arg.name]!r} in place: "
                                    "state kept between calls is not read from PyTorch programs yet")

    def _state_input(self, fqn: str, initial: np.ndarray) -> Value:
        """A buffer the program writes (a counter, a streaming cache): the value a call starts from is an input
        named after the buffer, after the model's own (see _carry_state)."""
        v = self.graph.add_input(fqn, initial.dtype, initial.shape)
        self.state[fqn] = (v, initial)
        return v

    def _carry_state(self) -> None:
        """The buffers the program writes as explicit state (tensorbridge/ir/state.py): their inputs after the
        model's own, the values the call leaves in them as outputs `<name>_next` after the model's own, in the
        same order, and their initial values (the buffers' values when the program was exported) in the
        metadata; the caller feeds each call's `_next` outputs to the next call, as the source keeps them."""
        if not self.state:
            return
        inputs = [v for v, _ in self.state.values()]
        self.graph.inputs = [v for v in self.graph.inputs if v not in inputs] + inputs
        entries = []
        for fqn, (v, initial) in self.state.items():
            out = passed_on(self.graph, self.state_written[fqn], f"{v.name}_next")
            self.graph.outputs.append(out)
            entries.append(state_entry(v.name, out.name, initial))
        self.graph.metadata["state"] = entries

    def branch(self, fn, key: str, bound: list[Value]) -> Graph:
        """The graph of control-flow branch `fn` (a get_attr node) as an IR subgraph reading `bound` for its
        parameters from the enclosing graph (a closure)."""
        graph = self.graph.subgraph(f"{self.name()}.{key.split('_')[0]}")
        with self.inside(graph):
            graph.outputs = [computed_in(graph, v, f"{graph.name}.out") for v in self.inline(fn, bound)]
        return graph

    @contextlib.contextmanager
    def inside(self, graph: Graph):
        """Read nodes into `graph` (a control-flow body), named after it, while the block runs."""
        saved = self.graph, self.env, self.build, self.node, self.prefix
        self.graph, self.env, self.build, self.prefix = graph, {}, Builder(graph), graph.name
        try:
            yield
        finally:
            self.graph, self.env, self.build, self.node, self.prefix = saved

    def inline(self, fn, bound: list[Value]) -> list[Value]:
        """The outputs of control-flow function `fn` (a get_attr node) read into the current graph, its parameters
        bound to `bound`."""
        module = getattr(self.ep.graph_module, fn.target)
        env, caller, params, outputs = dict(self.env), self.node, iter(bound), []
        for node in module.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                self.env[node.name] = next(params)
            elif node.op == "call_function":
                self.env[node.name] = self._call(node)
            elif node.op == "output":
                returned = node.args[0]  # a tuple, or a while loop's test: one value
                outputs = [self.value(arg) for arg in (returned if isinstance(returned, (list, tuple)) else [returned])]
        self.env, self.node = env, caller
        return outputs

    def _input(self, node) -> Value:
        val = node.meta["val"]
        shape = tuple(self.dim(d) for d in val.shape)
        v = self.graph.add_input(node.name, dtype_name(val.dtype), shape)
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
        written = getattr(sig, "buffers_to_mutate", {})
        for arg in outs:
            if getattr(arg, "name", None) in written and getattr(arg, "name", None) not in user:
                self.state_written[written[arg.name]] = self.value(arg)  # state: an output after the model's own
                continue
            if arg is None:
                raise ModelError("the model returns None among its outputs: return tensors only (drop the None "
                                 "or return a tensor in its place)")
            self.graph.outputs.append(self.value(arg))

    def _call(self, node):
        if node.target is operator.getitem:
            src, idx = node.args
            return self.env[src.name][idx]
        kind, name = rule_key(node)
        self.build.at(self.name(), self.provenance())
        return REGISTRY.import_rule(name, kind).convert(self, node, *node.args, **node.kwargs)

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
        base = f"{self.prefix}.{node.name}" if self.prefix else path or node.name
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
        node = self.build.node(op, inputs, attrs, outputs, suffix)
        if not suffix and outputs == 1:
            self.typed(node.outputs[0], self.meta())
        return node.outputs[0] if outputs == 1 else node.outputs

    def typed(self, out: Value, val) -> Value:
        """`out` with the dtype and shape torch recorded (`val`, a fake tensor) where no IR rule inferred them."""
        if hasattr(val, "dtype") and hasattr(val, "shape"):
            if out.dtype is None:
                out.dtype = np.dtype(dtypes.dtype(dtype_name(val.dtype)))
            if out.shape is None:
                out.shape = tuple(self.dim(d) for d in val.shape)
        return out

    def const(self, value, like=None, dtype=None) -> Value:
        if dtype is None:
            dtype = like.dtype if isinstance(like, Value) and like.dtype is not None else None
        arr = np.asarray(value, dtype=dtype)
        if dtype is None and arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        return self.build.const(arr)

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
        """IR int64[1] value computing a sympy expression over the input dims (cached)."""
        from tensorbridge.rules.torch.shape import size_value

        if not getattr(expr, "is_Integer", False) and isinstance(self.sym_values.get(expr), Value):
            return self.sym_values[expr]
        v = size_value(self, expr)
        if not getattr(expr, "is_Integer", False):
            self.sym_values[expr] = v
        return v

    def shape_tensor(self, dims) -> Value:
        """A list of ints / SymInts / size nodes as one IR int64 vector."""
        from tensorbridge.rules.torch.shape import shape_vector

        return shape_vector(self, dims)

    def out_shape(self, node=None) -> Value:
        """The current node's output shape as an IR value (constant when static)."""
        return self.shape_tensor(list(self.meta(node).shape))

    def rank(self, arg) -> int:
        return len(arg.meta["val"].shape)


def source_op(target) -> tuple[str, str] | None:
    """(namespace, name) of an fx call target in the registry's terms; None for anything else."""
    namespace = getattr(target, "namespace", None)
    if namespace == "aten":
        return "aten", target.__name__.split(".")[0]
    if namespace == "quantized_decomposed":
        return "pt2e", target.__name__.split(".")[0]
    if namespace == "higher_order":
        return "higher_order", target.__name__
    if getattr(target, "__module__", None) in ("_operator", "operator"):
        return "python", target.__name__
    if namespace is not None and hasattr(target, "_schema"):  # a library's op, registered with torch.library
        return "library", f"{namespace}.{target.__name__.split('.')[0]}"
    return None


def rule_key(node) -> tuple[str, str] | None:
    """The registry key of an fx call: an ATen op with a complex operand or result is read by its `complex`
    rule (tensorbridge/rules/torch/complex.py)."""
    key = source_op(node.target)
    return ("complex", key[1]) if key is not None and key[0] == "aten" and touches_complex(node) else key


def pt2e_name(target) -> str | None:
    """The op name of a PT2E quantize/dequantize (`quantized_decomposed` namespace), else None."""
    key = source_op(target)
    return key[1] if key is not None and key[0] == "pt2e" else None


def load_program(path):
    """A `.pt2` program read as data (`pt2_archive`), with PT2E's quantize/dequantize ops registered so
    quantized programs load."""
    import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers the quantized_decomposed ops

    from tensorbridge.frontends.torch import pt2_archive

    return pt2_archive.load_program(path)
