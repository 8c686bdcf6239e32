"""`OpSchema` and the catalogue registry: every IR op is defined exactly once.

A schema holds the op's signature (inputs with optional/variadic markers, outputs,
attributes with types and defaults), its layout class, a NumPy reference implementation,
an optional shape/dtype rule, an optional decomposition into other IR ops, and a short doc
naming its equivalents in other frameworks. Families register ops with the `op` decorator
in `ops/<family>.py`; everything else looks ops up by name through `get`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tensorbridge.errors import ModelError
from tensorbridge.ops.layout_classes import TRANSPARENT, LayoutClass

REQUIRED = object()

#: attribute kinds; `dtype` attributes hold IR dtype names, `graph` attributes hold `Graph`s.
ATTR_KINDS = ("int", "float", "str", "ints", "floats", "strs", "tensor", "graph", "dtype")


@dataclass(frozen=True)
class Attr:
    kind: str
    default: Any = REQUIRED

    def __post_init__(self):
        assert self.kind in ATTR_KINDS, self.kind

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Param:
    name: str
    optional: bool = False
    variadic: bool = False


def _params(spec: str) -> tuple[Param, ...]:
    """Parse `"X W B?"` / `"inputs*"` into parameters (`?` optional, `*` variadic)."""
    out = []
    for tok in spec.split():
        out.append(Param(tok.rstrip("?*"), optional=tok.endswith("?"), variadic=tok.endswith("*")))
    return tuple(out)


@dataclass
class OpSchema:
    name: str
    family: str
    inputs: tuple[Param, ...]
    outputs: tuple[Param, ...]
    attrs: dict[str, Attr]
    reference: Callable
    doc: str
    layout: LayoutClass = TRANSPARENT
    infer: Callable | None = None
    decompose: Callable | None = None
    #: entries of a small integer output vector from its inputs' (see ops/infer.py)
    elements: Callable | None = None
    #: attribute -> lowering(graph, node) -> bool, for attribute values whose meaning plain ops state only
    #: in a longer form (LiteRT's integer arithmetic): the reference interpreter and the backends lower
    #: such nodes (passes/lower.py); the reference function itself never sees the attribute
    lowerings: dict[str, Callable] = field(default_factory=dict)
    #: constant folding may evaluate it at conversion time (not ops with effects, randomness or subgraphs)
    foldable: bool = True
    #: inputs models hold as learned parameters even where the op is elementwise (a PReLU's slope)
    weights: tuple[str, ...] = ()
    #: pattern recoveries: (root op, fn(graph, root_node) -> bool) rebuilding this op from the plain ops a
    #: framework lowers it into (passes/recover.py)
    recoveries: list = field(default_factory=list)
    #: fusions: (root op, fn(graph, root_node) -> Node | None) rebuilding this op, for a writer that has one
    #: layer for it, from the plain ops it decomposes into (passes/recover.py `fuse_layers`)
    fusions: list = field(default_factory=list)
    #: cases for the per-op corpus where ONNX's node tests have none: {"inputs": [shape, ...],
    #: "const": [indices of inputs that are weights], "attrs": {...}}
    examples: tuple = ()
    equivalents: dict[str, str] = field(default_factory=dict)
    #: reference asks for extra context (`_num_outputs`, `_run_graph`) by naming it.
    wants: frozenset = frozenset()

    def attr_values(self, given: dict[str, Any], node_name: str = "") -> dict[str, Any]:
        """Attributes with defaults filled in; unknown or missing required ones raise."""
        unknown = set(given) - set(self.attrs)
        if unknown:
            raise ModelError(f"{self.name} node {node_name!r}: unknown attribute(s) {sorted(unknown)}")
        out = {}
        for k, a in self.attrs.items():
            if k in given and given[k] is not None:
                out[k] = given[k]
            elif a.required:
                raise ModelError(f"{self.name} node {node_name!r}: missing attribute {k!r}")
            else:
                out[k] = a.default
        return out

    @property
    def reads_shape_only(self) -> bool:
        """The op reads only its input's shape (Shape, Size): known whenever that shape is static."""
        return self.layout.kind == "shape"

    @property
    def max_outputs(self) -> int | None:
        return None if any(p.variadic for p in self.outputs) else len(self.outputs)


_REGISTRY: dict[str, OpSchema] = {}


def op(name: str, inputs: str = "X", outputs: str = "Y", attrs: dict[str, Attr] | None = None,
       doc: str = "", layout: LayoutClass = TRANSPARENT, infer: Callable | None = None,
       family: str = "", equivalents: dict[str, str] | None = None, elements: Callable | None = None,
       foldable: bool = True, examples: tuple = (), weights: tuple[str, ...] = ()):
    """Decorator registering a reference function as the IR op `name`."""

    def register(fn: Callable) -> Callable:
        if name in _REGISTRY:
            raise RuntimeError(f"op {name} defined twice")
        params = inspect.signature(fn).parameters
        _REGISTRY[name] = OpSchema(
            name=name, family=family or fn.__module__.rsplit(".", 1)[-1], inputs=_params(inputs),
            outputs=_params(outputs), attrs=dict(attrs or {}), reference=fn,
            doc=doc or (fn.__doc__ or "").strip().split("\n")[0], layout=layout, infer=infer,
            elements=elements, foldable=foldable, examples=tuple(examples), weights=tuple(weights), equivalents=dict(equivalents or {}),
            wants=frozenset(p for p in params if p in ("_num_outputs", "_run_graph")))
        return fn

    return register


def alias(name: str, fn: Callable, **kwargs) -> None:
    """Register `fn` under another op name (for one-line table entries)."""
    op(name, **kwargs)(fn)


def set_decomposition(name: str, fn: Callable) -> None:
    """`fn(graph, node) -> bool | str` rewrites `node` into other ops (False, or a string saying why: configuration
    not covered)."""
    _REGISTRY[name].decompose = fn


def set_lowering(name: str, attr: str, fn: Callable) -> None:
    """Give op `name` a string attribute `attr` (default "": plain meaning) whose other values `fn(graph, node)`
    lowers into plain ops (False: the pattern is not one it covers, and the node keeps its plain meaning)."""
    if name not in _REGISTRY:
        _load_families()  # a module of lowerings may be imported before the catalogue
    _REGISTRY[name].attrs[attr] = Attr("str", "")
    _REGISTRY[name].lowerings[attr] = fn


def set_recovery(name: str, root: str, fn: Callable) -> None:
    """`fn(graph, node)` rebuilds op `name` from the plain ops a framework lowered it into, tried on every node
    of op `root`; returns True when it rewrote the graph."""
    _REGISTRY[name].recoveries.append((root, fn))


def set_fusion(name: str, root: str, fn: Callable) -> None:
    """`fn(graph, node)` matches the plain ops op `name` decomposes into, ending at a node of op `root`: it returns
    the node of op `name` computing the same, inserted but read by nothing yet (or None). Writers that write op
    `name` as one layer run it (`passes.recover.fuse_layers`); the graph is left as it is for the others."""
    _REGISTRY[name].fusions.append((root, fn))


def get(name: str) -> OpSchema | None:
    _load_families()
    return _REGISTRY.get(name) if isinstance(name, str) else None


def attrs_of(node) -> dict[str, Any]:
    """The node's attributes, with its op's defaults for those it leaves out."""
    return get(node.op).attr_values(node.attrs, node.name)


def all_schemas() -> list[OpSchema]:
    _load_families()
    return sorted(_REGISTRY.values(), key=lambda s: (s.family, s.name))


def all_op_names() -> set[str]:
    return {s.name for s in all_schemas()}


_loaded = False


def _load_families() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from tensorbridge.ops import (  # noqa: F401  (import registers the ops)
            attention_layer,
            control,
            elementwise,
            loss,
            nn,
            quant,
            quant_arith,
            recurrent,
            reduce,
            shape,
            signal,
            text,
            transformer,
            vision,
            vision_arith,
        )
        # lowerings of the ops' attribute variants: registered once the ops above exist
        importlib.import_module("tensorbridge.ops.litert")
