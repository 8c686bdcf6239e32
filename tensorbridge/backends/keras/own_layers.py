"""Layer classes the generated Keras file defines for nodes a functional graph cannot hold as `keras.ops` calls
on symbolic tensors: control flow (If, Loop, Scan), whose bodies must run when the model is called, and calls
that need their operands' values (a shape or a range computed when the model runs).

Such a node becomes `class If3(layers.Layer)` whose `call` takes the values the node reads (its inputs and the
enclosing values its bodies read) and writes the node with the ordinary Keras rules; the layers and learned
tensors its bodies use become the class's attributes, made in `__init__`, so they are saved, loaded and trained
with the model. Keras traces `call` when the functional model is built, and TensorFlow's TFLite converter turns
its `ops.cond` / `ops.while_loop` into LiteRT's IF / WHILE.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from tensorbridge.codegen import pyast as P
from tensorbridge.ir import dtypes
from tensorbridge.ir.namer import Namer, readable


@dataclass
class OwnLayer:
    """The class being written: its name, the model's name for its one instance, its `__init__` statements."""

    cls: str
    name: str
    init: list[ast.stmt] = field(default_factory=list)
    attrs: Namer = field(default_factory=Namer)

    def attribute(self, raw: str, value: ast.expr, fallback: str) -> ast.expr:
        """`self.<attr> = value` in `__init__`; returns `self.<attr>`."""
        attr = self.attrs.name(raw, fallback)
        self.init.append(P.assign_attr(f"self.{attr}", value))
        return P.name(f"self.{attr}")

    def path(self, attribute: ast.expr) -> str:
        """Where `save` finds an attribute's weights: "<layer name>/<attribute>"."""
        return f"{self.name}/{attribute.attr}"


def class_name(raw: str) -> str:
    """"/blocks/loop_3" -> "Loop3": a source name as a CamelCase class name (the namer makes it legal)."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[\W_]+", readable(raw), flags=re.ASCII) if p)


def class_def(owner: OwnLayer, node, operands: list, params: list[str], body: list[ast.stmt],
              returned: list) -> ast.ClassDef:
    """The layer class: `__init__` making its attributes (and keeping its inputs' float types: Keras would cast
    them to float32), `call(self, *params)` with `body`, and where the IR knows the rank and type of every value
    it returns (`returned`), `compute_output_spec` giving them: Keras's own tracing of `call` loses the dims a
    computed shape fixes (a reshape to [batch, seq, 64]), which the layers after it are built with."""
    methods = []
    keeps_types = any(v.dtype is not None and v.dtype.kind == "f" and dtypes.name(v.dtype) != "float32"
                      for v in operands)
    if owner.init or keeps_types:
        init_super = ast.Call(ast.Attribute(P.call("super"), "__init__", ast.Load()), [],
                              ([ast.keyword("autocast", P.lit(False))] if keeps_types else [])
                              + [ast.keyword(None, P.name("kwargs"))])
        methods.append(P.function("__init__", ["self"], [P.expr_stmt(init_super), *owner.init], kwargs="kwargs"))
    methods.append(P.function("call", ["self", *params], body))
    if returned and all(v.shape is not None and v.dtype is not None for v in returned):
        specs = [P.call("keras.KerasTensor", tuple(d if isinstance(d, int) else None for d in v.shape),
                        dtype=dtypes.name(v.dtype)) for v in returned]
        methods.append(P.function("compute_output_spec", ["self", *params], [
            P.ret(specs[0] if len(specs) == 1 else ast.Tuple(specs, ast.Load()))]))
    doc = (f"The source's {node.op}: a functional graph holds no control flow, so it runs in a layer."
           if next(node.subgraphs(), None) is not None else
           f"The source's {node.op}, computed from its operands' values when the model runs.")
    cls = P.class_def(owner.cls, ["layers.Layer"], methods, doc=doc)
    cls.decorator_list = [P.call("keras.saving.register_keras_serializable", package="tensorbridge")]
    return cls


def nested(model, path: str):
    """The layer or variable at `path` ("<layer name>[/<attribute>]") of a built model."""
    name, *attrs = path.split("/")
    found = model.get_layer(name)
    for attr in attrs:
        found = getattr(found, attr)
    return found
