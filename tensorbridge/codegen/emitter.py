"""`CodeEmitter`: what the PyTorch, Keras and Flax code generators share.

An emitter walks a legalised graph once, in order. For every node it looks up the export rule
in its framework's registry; the rule adds statements through the emitter (`out`, `outs`,
`tensor`, `scalar`) and raises `Unsupported` for configurations the framework cannot express.
Every such node is collected into one report before anything is written (the nodes that only
depend on a failed node are not reported again).

Locals are named after IR values through the `Namer` (so no model string becomes code);
`value_names` keeps local -> IR value name for `verify --per-layer`, written beside the code,
never into it. With `release=True` a value's local is deleted after its last reader, as
torch.fx's code generator does, so eager frameworks free intermediates as hand-written code does.

Shape values: small integer vectors computed from shapes alone (Shape -> Gather -> Concat -> Reshape) are
written as Python ints and lists (`x.shape` and arithmetic on it) by the rules' `shape_write`, where the
registry has one for the op: open dims stay open in PyTorch code, and are the static ints JAX traces.
"""

from __future__ import annotations

import ast
import contextlib
import textwrap

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported
from tensorbridge.errors import BlockerReport
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.namer import Namer
from tensorbridge.ir.value import Value
from tensorbridge.rules.core import Registry


class CodeEmitter:
    label = "code"
    #: a size cast to a float scalar is a Python float too (not in code for torch.export, which specialises one)
    float_sizes = True

    def __init__(self, graph: Graph, registry: Registry, release: bool = False):
        self.g = graph
        self.registry = registry
        self.namer = Namer()
        self.var = _Locals()
        self.body: list[ast.stmt] = []
        self.report = BlockerReport(f"{self.label} generation", registry.framework)
        self.value_names: dict[str, str] = {}
        self.skip: set[int] = set()  # nodes a rule already wrote as part of its own code
        self.release = release
        self._released: set[str] = set()
        self._holders: dict[str, int] = {}  # local name -> index of the last node reading a value it holds
        self._dying: dict[int, list[str]] = {}  # node index -> the locals whose last reader it is
        self._readers: dict[int, int] = {}  # value id -> how many nodes read it
        self._index = -1  # the node being written
        self.inputs: list[str] = []  # the generated function's parameters, one per graph input
        self.helpers: dict[str, ast.FunctionDef] = {}  # module-level functions the code calls, by their rule's name
        self.shape_values: set[int] = set()  # ids of the values written as Python ints and lists

    # -- the walk ----------------------------------------------------------------------------------
    def run(self) -> None:
        self.begin()
        self._write_nodes(self.g, self._last_readers() if self.release else {})
        self.report.raise_if_any("Nothing was written.")
        self.finish()
        self.report.raise_if_any("Nothing was written.")

    def _write_nodes(self, graph: Graph, last_reader: dict[int, int]) -> set[int]:
        """Write `graph`'s nodes in order; every node a rule refuses is reported. The ids of the values that could
        not be written (refused, or computed from refused ones) are returned."""
        failed: set[int] = set()
        for index, node in enumerate(graph.nodes):
            self._index = index
            if id(node) in self.skip:
                continue
            if any(v is not None and id(v) in failed for v in node.inputs):
                failed |= {id(v) for v in node.outputs}  # a consequence, not another blocker
                continue
            rule = self.registry.export_rule(node.op)
            try:
                if rule is None:
                    raise Unsupported(f"no {self.label} rule")
                self.write(node, rule)
            except Unsupported as e:
                self.report.add(node.op, node.name, str(e))
                failed |= {id(v) for v in node.outputs}
            if self.release:
                self._release(index, last_reader)
        return failed

    def function(self, graph: Graph, hint: str) -> str:
        """Write subgraph `graph` (a control-flow body) as a nested function of the code being written: its
        inputs are its parameters, its outputs returned as a tuple, the enclosing values read through their
        locals (a closure). Returns the function's name; a node the body cannot take is reported."""
        outer, index, release = self.body, self._index, self.release
        self.body, self.release = [], False  # the enclosing locals it reads live until its node is written
        try:
            with self.var.apart():
                params = []
                for v in graph.inputs:
                    params.append(self.local(v, "arg"))
                    self.var[id(v)] = P.name(params[-1])
                failed = self._write_nodes(graph, {})
                if any(id(v) in failed for v in graph.outputs):
                    raise Unsupported("its body has ops the target cannot take (listed)")
                self.body.append(P.ret(ast.Tuple([self.tensor(v) for v in graph.outputs], ast.Load())))
            fname = self.namer.name(hint, "body")
            outer.append(P.function(fname, params, self.body))
            return fname
        finally:
            self.body, self._index, self.release = outer, index, release

    def begin(self) -> None:
        """Bind each graph input to a parameter of the generated function, named after it."""
        self.find_shape_values()
        for v in self.g.inputs:
            ident = self.local(v, "input")
            self.var[id(v)] = P.name(ident)
            self.inputs.append(ident)

    def write(self, node, rule) -> None:
        if id(node.outputs[0]) in self.shape_values and rule.shape_write is not None:
            rule.shape_write(self, node)
        else:
            rule.write(self, node)

    def find_shape_values(self) -> None:
        """Mark the values computed from shapes alone by ops whose rule writes them as Python values."""
        from tensorbridge.ops import schema as op_schema

        shape_ops = self.registry.shape_ops()
        for node in self.g.all_nodes():  # loop bodies and branches compute shapes too
            if node.op not in shape_ops or len(node.outputs) != 1:
                continue
            out = node.outputs[0]
            if out.dtype is None or out.shape is None or len(out.shape) > 1:
                continue
            if out.dtype.kind not in "iub" and not (out.dtype.kind == "f" and self._float_size(node)):
                continue
            reads_shape = op_schema.get(node.op).reads_shape_only
            if len(out.shape) == 1 and not isinstance(out.shape[0], int) and not reads_shape:
                continue  # a vector of unknown length from the data; a shape (list(x.shape)) is one whatever its rank
            data = node.inputs[1:] if reads_shape else node.inputs
            if reads_shape or all(v is None or self.is_shape(v) for v in data):
                self.shape_values.add(id(out))

    def _float_size(self, node) -> bool:
        """Whether the node makes a float scalar from integer shape values alone: a size cast to a float (YOLOv8's
        anchor grid, Range(0, float(h))), where the code holds such sizes as Python floats (`float_sizes`)."""
        return self.float_sizes and node.outputs[0].shape == () and all(
            v is not None and id(v) in self.shape_values and v.dtype.kind in "iu" for v in node.inputs)

    def finish(self) -> None:
        """Return the graph outputs: one bare, several as a tuple."""
        outs = self.outputs()
        self.body.append(P.ret(outs[0] if len(outs) == 1 else ast.Tuple(outs, ast.Load())))

    def outputs(self) -> list[ast.expr]:
        """Expressions of the graph outputs; one no rule computed (an optional output of an op) is reported."""
        exprs = []
        for v in self.g.outputs:
            try:
                exprs.append(self.tensor(v))
            except Unsupported as e:
                producer = v.producer
                self.report.add(producer.op if producer is not None else "output", v.name,
                                f"graph output {v.name!r}: {e}")
                exprs.append(ast.Constant(None))
        return exprs

    # -- what rules call ---------------------------------------------------------------------------
    def helper(self, source: str) -> ast.expr:
        """The name of the module-level function `source` defines (written once, before the model, for an op the
        framework has no call for: a person would write the function too)."""
        fn = ast.parse(textwrap.dedent(source)).body[0]
        if fn.name not in self.helpers:
            wanted, fn.name = fn.name, self.namer.name(fn.name)
            self.helpers[wanted] = fn
        return P.name(self.helpers[fn.name].name)

    def local(self, v: Value, fallback: str = "t") -> str:
        ident = self.namer.name(v.name, fallback)
        if ident != v.name:
            self.value_names[ident] = v.name
        return ident

    def out(self, node, value: ast.expr, index: int = 0) -> str:
        """Assign `value` to a fresh local named after the node's output `index`."""
        v = node.outputs[index]
        ident = self.local(v)
        self.body.append(P.assign([ident], value))
        self.var[id(v)] = P.name(ident)
        return ident

    def outs(self, node, value: ast.expr, count: int, discarded: int = 0) -> None:
        """Unpack `value` into locals for the node's first `count` outputs, after `discarded` items it holds
        first; an output nothing reads is `_`, a sequence of one item is indexed."""
        graph_outputs = {id(v) for v in node.graph.outputs} if node.graph is not None else set()
        idents = [self.local(v) if v.uses() or id(v) in graph_outputs else "_" for v in node.outputs[:count]]
        if len(idents) == 1 and not discarded:
            value = P.subscript(value, 0)
        self.body.append(P.assign(["_"] * discarded + idents, value))
        for v, ident in zip(node.outputs, idents):
            if ident != "_":
                self.var[id(v)] = P.name(ident)

    def alias(self, node, expr: ast.expr, index: int = 0) -> None:
        """The node's output is `expr` itself (Identity, Dropout at inference): no statement."""
        self.var[id(node.outputs[index])] = expr

    def tensor(self, v: Value) -> ast.expr:
        if id(v) in self.var and id(v) in self.shape_values:
            return self.shape_tensor(v)
        if id(v) in self.var:
            return self.var[id(v)]
        if v.const is not None:
            return self.constant(v)
        raise Unsupported(f"value {v.name!r} has no expression")

    def constant(self, v: Value) -> ast.expr:
        raise Unsupported(f"constant {v.name!r}")

    def shape_tensor(self, v: Value) -> ast.expr:
        """A shape value the code holds as Python ints, as the framework's tensor."""
        raise Unsupported(f"{v.name!r}, computed from shapes, is used as a tensor")

    def is_shape(self, v: Value) -> bool:
        """Whether `v` is a shape value or a small integer constant (both can be written as Python values)."""
        if id(v) in self.shape_values:
            return True
        c = v.const
        return c is not None and c.dtype.kind in "iu" and c.ndim <= 1 and c.size <= 16

    def pylist(self, v: Value) -> ast.expr:
        """An expression for a shape-like integer value as a Python list/int."""
        import numpy as np

        if v.const is not None:
            return P.lit(np.asarray(v.const).tolist())
        if id(v) in self.shape_values:
            return self.var[id(v)]
        raise Unsupported(f"{v.name!r} must be a constant or computed from shapes")

    def arg(self, v: Value | None) -> ast.expr | None:
        """A tensor expression, or a Python number for a 0-d constant (broadcast like a scalar, taking the other
        operand's type)."""
        if v is None:
            return None
        s = self.scalar(v)
        if s is not None and v.const.ndim == 0:
            return P.lit(s)
        return self.tensor(v)

    @staticmethod
    def scalar(v: Value | None):
        """A Python number for a one-element constant, else None."""
        import numpy as np

        if v is not None and v.const is not None and np.asarray(v.const).size == 1:
            return np.asarray(v.const).ravel()[0].item()
        return None

    def last_use(self, v: Value) -> bool:
        """Whether the node being written is the only reader of `v`, `v` is no graph output, and no other value
        shares its local: its tensor may then be overwritten in place (needs `release=True`)."""
        expr = self.var.get(id(v))
        return (isinstance(expr, ast.Name) and self._readers.get(id(v)) == 1
                and self._holders.get(expr.id) == self._index)

    # -- releasing locals --------------------------------------------------------------------------
    def _last_readers(self) -> dict[int, int]:
        """Value id -> index of the last node reading it (graph outputs are never released)."""
        last: dict[int, int] = {}
        for i, node in enumerate(self.g.nodes):
            read = {id(v) for v in node.inputs if v is not None}
            for sub in node.subgraphs():
                read |= {id(v) for inner in sub.all_nodes() for v in inner.inputs if v is not None}
            for vid in read:
                last[vid] = i
                self._readers[vid] = self._readers.get(vid, 0) + 1
        for v in self.g.outputs:
            last[id(v)] = len(self.g.nodes)
        return last

    def _release(self, index: int, last_reader: dict[int, int]) -> None:
        """`del` the locals whose every value was last read by node `index`."""
        for vid in self.var.changed():
            expr = self.var.get(vid)
            if isinstance(expr, ast.Name) and last_reader.get(vid, -1) > self._holders.get(expr.id, -1):
                self._holders[expr.id] = last_reader[vid]
                self._dying.setdefault(last_reader[vid], []).append(expr.id)
        dead = sorted({n for n in self._dying.pop(index, []) if self._holders[n] == index and n not in self._released})
        if dead:
            self._released.update(dead)
            self.body.append(ast.Delete([ast.Name(n, ast.Del()) for n in dead]))


class _Locals(dict):
    """Value id -> the expression that holds it; remembers which entries were set since `changed()` was last
    called, so releasing locals looks only at what each node wrote."""

    def __init__(self):
        super().__init__()
        self._changed: list[int] = []

    def __setitem__(self, key: int, value: ast.expr) -> None:
        super().__setitem__(key, value)
        self._changed.append(key)

    def changed(self) -> list[int]:
        out, self._changed = self._changed, []
        return out

    @contextlib.contextmanager
    def scoped(self):
        """`apart`, and every entry set or changed inside is undone on leaving (the values a generated method
        binds to its own parameters)."""
        saved = dict(self)
        try:
            with self.apart():
                yield
        finally:
            dict.clear(self)
            dict.update(self, saved)

    @contextlib.contextmanager
    def apart(self):
        """Entries set inside are not reported by `changed()` (a nested function's locals, which are never
        released from the enclosing scope)."""
        pending, self._changed = self._changed, []
        try:
            yield
        finally:
            self._changed = pending
