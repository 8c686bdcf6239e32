"""PyTorch backend: IR `Graph` -> a folder with readable, trainable `nn.Module` code.

    <dest>/model.py              class Model(nn.Module): layers built in __init__, one line per op
    <dest>/weights.safetensors   keys == Model().state_dict() keys
    <dest>/__init__.py           load_model() -> Model with weights loaded, in eval mode
    <dest>/tensorbridge.json     the signature and local -> IR value names, for `verify`

Weighted ops become real layers (nn.Conv2d, nn.Linear, nn.BatchNorm2d, nn.LayerNorm,
nn.Embedding, nn.LSTM ...); other float constants become nn.Parameters and integer ones
buffers, so the module trains. Small integer vectors computed from shapes (Shape, and
arithmetic on it) are generated as Python lists, which keeps dynamic dims dynamic. Locals are
deleted after their last use, so the module runs as fast as hand-written code. Code is
assembled as an `ast` and unparsed; identifiers come from the namer, so no string of the
source model can become code. Ops without a rule are reported together before writing.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import numpy as np

from tensorbridge.backends.torch import module_tree
from tensorbridge.backends.torch.module_tree import ModuleTree
from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.emitter import CodeEmitter
from tensorbridge.codegen.folder import write_signature
from tensorbridge.codegen.rule_helpers import Unsupported
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.ir.value import Value
from tensorbridge.ops import schema as op_schema
from tensorbridge.ops.litert import exact_quantized_convs
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.fold_constants import fold_constants
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget, plan_layout
from tensorbridge.passes.lower import int_arithmetic_pass
from tensorbridge.passes.pipeline import Pipeline
from tensorbridge.rules.torch import REGISTRY
from tensorbridge.rules.torch.base import TORCH_DTYPES

log = logging.getLogger(__name__)
LAYOUT = LayoutTarget(("NCHW",), native="NCHW")


def pipeline(layout: LayoutOptions | None = None, int_arithmetic: str = "source") -> Pipeline:
    """Dead code out, layouts planned NCHW, LiteRT integer arithmetic kept exact (torch has no int8
    convolution to call), constants folded, ops without a rule decomposed, and folded again (weights a
    decomposition dequantizes, such as QLinearConv's)."""
    p = Pipeline("PyTorch code").then("dead code", eliminate_dead_code)
    p.then("layout", lambda g: plan_layout(g, LAYOUT, layout))
    lower = int_arithmetic_pass(int_arithmetic)
    if int_arithmetic == "source":
        p.then("exact quantized convolutions", exact_quantized_convs)
    p.then("attribute variants", lower)
    p.then("dead code", eliminate_dead_code).then("fold constants", fold_constants)
    p.then("legalize", lambda g: legalize(g, REGISTRY.blocker, "PyTorch code"))
    return p.then("dead code", eliminate_dead_code).then("fold constants", fold_constants)


def save(graph: Graph, dest, layout: LayoutOptions | None = None, int_arithmetic: str = "source",
         **_options) -> None:
    """Write the code folder for `graph` at `dest`."""
    from tensorbridge.ir.serde import write_safetensors

    em = emit(graph, layout, int_arithmetic)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "model.py").write_text(em.module_source())
    (dest / "__init__.py").write_text(init_code())
    write_safetensors(dest / "weights.safetensors", em.state, {"format": "pt"})
    write_signature(dest, em.g, em.value_names)


def generate(graph: Graph, layout: LayoutOptions | None = None,
             int_arithmetic: str = "source") -> tuple[str, dict[str, np.ndarray]]:
    """The model.py source and its state dict (name -> array); `int_arithmetic` as for ONNX export."""
    em = emit(graph, layout, int_arithmetic)
    return em.module_source(), em.state


def emit(graph: Graph, layout: LayoutOptions | None = None, int_arithmetic: str = "source") -> TorchEmitter:
    em = TorchEmitter(pipeline(layout, int_arithmetic).run(clone(graph)))
    em.run()
    return em


def init_code() -> str:
    """load_model(): the module built on the meta device (no memory, no random initialisation), then given the
    weights file's tensors."""
    build = ast.With([ast.withitem(P.call("torch.device", "meta"))],
                     [ast.Assign([ast.Name("model", ast.Store())], P.call("Model"), lineno=0)], lineno=0)
    body = [P.function("load_model", ["device"], [
        build,
        ast.Assign([ast.Name("weights", ast.Store())], P.call(
            "load_file", P.call("str", P.method(P.call("Path", P.name("__file__")), "with_name",
                                                "weights.safetensors")), device=P.name("device")), lineno=0),
        P.expr_stmt(P.method(P.name("model"), "load_state_dict", P.name("weights"), assign=True)),
        P.ret(P.method(P.name("model"), "eval")),
    ], doc="The generated model with its weights loaded, in eval mode.")]
    body[0].args.defaults = [ast.Constant("cpu")]
    return P.module("Generated by tensorbridge. `load_model()` returns the model with its weights.",
                    [[P.from_import("pathlib", ["Path"])],
                     [P.import_("torch"), P.from_import("safetensors.torch", ["load_file"])],
                     [P.from_import("model", ["Model"], level=1)]], body)


def _source_tree(graph: Graph) -> ModuleTree | None:
    """The source's module tree, for a PyTorch source (nodes carry module paths, weights state-dict keys)."""
    if graph.metadata.get("source_framework") != "torch":
        return None
    paths = {tuple(n.meta["module"].split(".")) for n in graph.nodes if n.meta.get("module")}
    paths |= {tuple(v.meta["state_key"].split(".")) for v in graph.constants.values() if v.meta.get("state_key")}
    return ModuleTree(paths)


class TorchEmitter(CodeEmitter):
    """Collects __init__ statements, forward statements and the state dict."""

    label = "PyTorch code"

    def __init__(self, graph: Graph):
        super().__init__(graph, REGISTRY, release=True)
        from tensorbridge.ir.namer import Namer

        self.attrs = Namer()
        self.tree = _source_tree(graph)
        self.init: list[ast.stmt] = []
        self.state: dict[str, np.ndarray] = {}
        self.shape_values: set[int] = set()
        self.params: dict[int, ast.expr] = {}
        self.inputs: list[str] = []

    # -- the walk ----------------------------------------------------------------------------------
    def begin(self) -> None:
        self._find_shape_values()
        for v in self.g.inputs:
            ident = self.local(v, "input")
            self.var[id(v)] = P.name(ident)
            self.inputs.append(ident)

    def write(self, node, rule) -> None:
        if id(node.outputs[0]) in self.shape_values and rule.shape_write is not None:
            rule.shape_write(self, node)
        else:
            rule.write(self, node)

    def finish(self) -> None:
        outs = self.outputs()
        self.body.append(P.ret(outs[0] if len(outs) == 1 else ast.Tuple(outs, ast.Load())))

    def _find_shape_values(self) -> None:
        shape_ops = self.registry.shape_ops()
        for node in self.g.nodes:
            if node.op not in shape_ops or len(node.outputs) != 1:
                continue
            out = node.outputs[0]
            if out.dtype is None or out.dtype.kind not in "iu" or out.shape is None or len(out.shape) > 1:
                continue
            if len(out.shape) == 1 and not isinstance(out.shape[0], int):
                continue
            reads_shape = op_schema.get(node.op).reads_shape_only
            data = node.inputs[1:] if reads_shape else node.inputs
            if reads_shape or all(v is None or self.is_shape(v) for v in data):
                self.shape_values.add(id(out))

    def is_shape(self, v: Value) -> bool:
        if id(v) in self.shape_values:
            return True
        c = v.const
        return c is not None and c.dtype.kind in "iu" and c.ndim <= 1 and c.size <= 16

    # -- what rules call ---------------------------------------------------------------------------
    def tensor(self, v: Value) -> ast.expr:
        """An expression for `v` as a torch tensor."""
        if id(v) in self.var and id(v) in self.shape_values:
            return P.call("torch.tensor", self.var[id(v)], dtype=P.name("torch.int64"))
        return super().tensor(v)

    def constant(self, v: Value) -> ast.expr:
        return self.param(v)

    def pylist(self, v: Value) -> ast.expr:
        """An expression for a shape-like integer value as a Python list/int."""
        if v.const is not None:
            return P.lit(np.asarray(v.const).tolist())
        if id(v) in self.shape_values:
            return self.var[id(v)]
        raise Unsupported(f"{v.name!r} must be a constant or computed from shapes")

    def arg(self, v: Value | None) -> ast.expr | None:
        """Tensor expression, or a literal for 0-d constants (broadcast like a scalar)."""
        if v is None:
            return None
        s = self.scalar(v)
        if s is not None and v.const.ndim == 0:
            return P.lit(s)
        return self.tensor(v)

    def param(self, v: Value) -> ast.expr:
        """A constant as a module attribute: nn.Parameter (float weights) or buffer (the rest).

        Constants the source built in code rather than learned (`meta["role"] == "literal"`)
        become buffers, or an inline `torch.full` when every element is the same.
        """
        if id(v) in self.params:
            return self.params[id(v)]
        arr = np.asarray(v.const)
        name_dt = dtypes.name(arr.dtype)
        if name_dt not in TORCH_DTYPES:
            raise Unsupported(f"constant {v.name!r} of dtype {name_dt}")
        if v.meta.get("role") == "literal" and arr.size and (arr == arr.ravel()[0]).all():
            expr = P.call("torch.full", list(arr.shape), arr.ravel()[0].item(), dtype=P.name(TORCH_DTYPES[name_dt]))
            self.params[id(v)] = expr
            return expr
        dims = arr.shape if arr.ndim else [()]
        empty = P.call("torch.empty", *dims, dtype=P.name(TORCH_DTYPES[name_dt]))
        learned = dtypes.is_float(arr.dtype) and v.meta.get("role") != "literal"
        path = self._path(v.meta.get("state_key", "") if learned else "", "const", v.name)
        owner = self.tree.expr(path[:-1]) if len(path) > 1 else P.name("self")
        if learned:
            self.init.append(module_tree.assign(self._expr(path), P.call("nn.Parameter", empty)))
        else:
            self.init.append(P.expr_stmt(P.method(owner, "register_buffer", path[-1], empty)))
        self.state[".".join(path)] = arr
        expr = self._expr(path)
        self.params[id(v)] = expr
        return expr

    def layer(self, node, ctor: str, args: list, kwargs: dict, weights: dict[str, np.ndarray]) -> ast.expr:
        """Construct a layer in __init__ at the source's module path (or named after the node); its weights join
        the state dict under the same keys as in the source."""
        path = self._path(node.meta.get("module", ""), "layer", node.name)
        self.init.append(module_tree.assign(self._expr(path), P.call(ctor, *args, **kwargs)))
        for key, arr in weights.items():
            self.state[f"{'.'.join(path)}.{key}"] = np.ascontiguousarray(arr)
        return self._expr(path)

    def _path(self, source_path: str, fallback: str, name: str) -> tuple[str, ...]:
        """Where a layer or parameter goes: its source module path when the source has a tree, else a flat
        attribute named after the node; the containers above it are created first."""
        if self.tree is None or not source_path:
            return (self.attrs.name(name, fallback) if self.tree is None else self.tree.claim((name,))[0],)
        path = self.tree.claim(tuple(source_path.split(".")))
        self.init.extend(self.tree.containers_for(path))
        return path

    def _expr(self, path: tuple[str, ...]) -> ast.expr:
        return self.tree.expr(path) if self.tree is not None else P.name(f"self.{path[0]}")

    # -- output -------------------------------------------------------------------------------------
    def module_source(self) -> str:
        init = P.function("__init__", ["self"], [P.expr_stmt(P.method(P.call("super"), "__init__")), *self.init])
        forward = P.function("forward", ["self", *self.inputs], self.body)
        cls = P.class_def("Model", ["nn.Module"], [init, forward],
                          doc=f"{self.g.name}: {len(self.g.nodes)} ops converted by tensorbridge.")
        classes = [module_tree.submodule_class(), cls] if self.tree is not None and self.tree.created else [cls]
        source = self.g.metadata.get("source_framework", "IR")
        used = {n.id for n in ast.walk(ast.Module(classes, [])) if isinstance(n, ast.Name)}
        imports = [P.import_("torch")] if "torch" in used else []
        imports += [P.import_("torch.nn.functional", "F")] if "F" in used else []
        imports += [P.from_import("torch", ["nn"])]
        return P.module(f"PyTorch model generated by tensorbridge from {source}.", [imports], classes)
