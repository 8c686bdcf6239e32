"""CNTK frontend: a CNTK 2.x model file (`.model`, `ModelFormat.CNTKv2`) -> IR `Graph`, without CNTK.

The file is a composite function (formats/cntk). Blocks (the layers library's Dense, Convolution, LSTM, ...) are read
as what they are made of: their composites are inlined, each placeholder standing for the block's input that fills
it, so only primitive ops reach the registry (rules/cntk), each read by its own meaning and never by the name of the
layer around it.

Dynamic axes become leading IR axes: an input with the batch axis is (batch, static...), a sequence (batch,
sequence, static...); a batch holds sequences of one length, as the converted models take them. A recurrence, a
loop through PastValue or FutureValue ops (what `layers.Recurrence` builds), becomes one IR Scan over the sequence
axis: the delayed values are its state, initialised from the delays' initial values, the values entering from
outside along the sequence its scan inputs, and the values read after the loop its scan outputs; a FutureValue
loop scans backwards. Every op is checked before any is read, and every blocker is reported at once.
`graph.metadata["cntk"]["outputs"]` maps the outputs CNTK can evaluate on their own (those outside blocks, and the
blocks') to the IR values they are, for comparing layer by layer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, InputShapesNeeded, ModelError, TensorbridgeError
from tensorbridge.formats.cntk import (
    BLOCK,
    CONSTANT,
    INPUT,
    PARAMETER,
    Function,
    Model,
    output_uid,
    producer,
    read_model,
)
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.rules.cntk import REGISTRY
from tensorbridge.rules.cntk.base import ARITY, BATCH_AXIS, DELAYS, NAMES, OUTPUTS, SEQUENCE_AXIS, attributes
from tensorbridge.rules.core import TrackedAttrs

COMBINE = 44
#: the symbolic sizes of CNTK's dynamic axes
BATCH, SEQUENCE = "batch", "sequence"


def load(source, input_shapes: dict | None = None) -> Graph:
    """Read a CNTK v2 model file."""
    path = Path(source)
    if not path.is_file():
        raise ModelError(f"{path} does not exist")
    graph = Importer(read_model(path), input_shapes or {}).run()
    graph.name = path.stem or "cntk"
    return graph


class Importer:
    def __init__(self, model: Model, input_shapes: dict):
        self.model, self.input_shapes = model, input_shapes
        self.graph = Graph("cntk")
        self.b = Builder(self.graph)
        self.values: dict[str, object] = {}  # variable uid -> IR value
        self.axes: dict[int, int] = {}  # id(IR value) -> how many of its leading axes are dynamic
        self.inputs: list = []
        self.attrs: TrackedAttrs | None = None
        self.alias: dict[str, str] = {}
        self.report = BlockerReport("reading the CNTK model", "cntk")
        self.order: list[Function] = []  # the primitive functions the outputs depend on
        self.outputs: list[str] = []  # the uids of the model's outputs

    # -- what rules use --------------------------------------------------------------------------------------
    def dynamic(self, value) -> int:
        """How many leading axes of `value` are dynamic (batch, sequence); constants have none."""
        return self.axes.get(id(value), 0)

    def result(self, value, dynamic: int):
        """`value`, known to have `dynamic` leading dynamic axes (a copy of it, when it is already known with
        another count: UnpackSequence makes the sequence axis of a value that stays a sequence a static one)."""
        if self.axes.get(id(value), dynamic) != dynamic:
            value = self.emit("Identity", [value], suffix="axes")
        self.axes[id(value)] = dynamic
        return value

    def const(self, array, dtype=None):
        return self.b.const(np.asarray(array, dtype))

    def ints(self, values):
        return self.b.const(np.asarray(values, np.int64))

    def emit(self, op: str, inputs, attrs: dict | None = None, outputs: int = 1, suffix: str = ""):
        return self.b.emit(op, inputs, attrs, outputs, suffix)

    # -- reading ---------------------------------------------------------------------------------------------
    def run(self) -> Graph:
        self._resolve_blocks()
        self.order, self.outputs = self._primitives()
        self._check(self.order)
        self._declare()
        for group in _strongly_connected(self.order, self._feeders):
            if len(group) == 1 and not self._loops(group[0]):
                self._read(group[0])
            else:
                self._recurrence(group)
        missing = [uid for uid in self.outputs if self.values.get(uid) is None]
        if missing and not self.report.blockers:
            self.report.add("output", "", f"output(s) {', '.join(missing)} are computed by no op read")
        self.report.raise_if_any()
        for k, uid in enumerate(self.outputs):
            value = self.values[uid]
            self.graph.outputs.append(self.emit("Identity", [value], suffix=f"out{k}") if value.producer is None
                                      else value)
        self.graph.metadata["cntk"] = {"outputs": self._visible()}
        recover_patterns(self.graph)
        eliminate_dead_code(self.graph)
        return self.graph

    def _visible(self) -> dict[str, str]:
        """CNTK output uid -> IR value name, for the outputs CNTK can evaluate on their own: those of the functions
        outside every block (a block's inner ops read placeholders only the block binds), blocks included."""
        inner: set[str] = set()
        for f in self.model.functions.values():
            if f.op == BLOCK:
                stack = [f.root]
                while stack:
                    uid = stack.pop()
                    g = self.model.functions.get(uid)
                    if g is None or uid in inner:
                        continue
                    inner.add(uid)
                    stack.extend(made[0] for made in map(producer, g.inputs) if made)  # outer values: placeholders
        visible = {}
        for f in self.model.functions.values():
            if f.uid in inner or f.op == COMBINE:
                continue
            for k in range(self._count(f)):
                value = self.values.get(self._resolve(output_uid(f.uid, k)))
                if value is not None and hasattr(value, "name") and value.producer is not None and \
                        value.producer.graph is self.graph:
                    visible[output_uid(f.uid, k)] = value.name
        return visible

    def _resolve(self, uid: str) -> str:
        """The variable a uid stands for: a block's placeholder is the block's input that fills it, a block's or a
        combine's output the output of what is inside."""
        seen = set()
        while uid in self.alias:
            if uid in seen:
                raise ModelError(f"variable {uid} stands for itself")
            seen.add(uid)
            uid = self.alias[uid]
        return uid

    def _resolve_blocks(self) -> None:
        for f in self.model.functions.values():
            if f.op == BLOCK:
                self.alias.update(f.arguments)
                for k in range(self._count(f)):
                    self.alias[output_uid(f.uid, k)] = output_uid(f.root, k)
            elif f.op == COMBINE:
                for k, uid in enumerate(f.inputs):
                    self.alias[output_uid(f.uid, k)] = uid

    def _count(self, f: Function) -> int:
        """How many outputs a function has."""
        if f.op == BLOCK:
            root = self.model.functions.get(f.root)
            if root is None:
                raise ModelError(f"block {f.uid}'s composite root {f.root} is not in the model")
            return self._count(root)
        if f.op == COMBINE:
            return len(f.inputs)
        if NAMES.get(f.op) == "UnpackSequence":
            return 1 if f.attrs.get("sequenceUnpackSuppressMaskOutput", False) else 2
        return OUTPUTS.get(NAMES.get(f.op, ""), 1)

    def _primitives(self) -> tuple[list[Function], list[str]]:
        """The primitive functions the model's outputs depend on, in the order stored, and the outputs' uids."""
        root = self.model.functions.get(self.model.root)
        if root is None:
            raise ModelError(f"the model's root function {self.model.root} is not in it")
        outputs = [self._resolve(output_uid(root.uid, k)) for k in range(self._count(root))]
        needed, stack = set(), list(outputs)
        while stack:
            made_by = producer(stack.pop())
            if made_by is None or made_by[0] in needed:
                continue
            f = self.model.functions.get(made_by[0])
            if f is None:
                raise ModelError(f"{made_by[0]} is read but not in the model")
            needed.add(f.uid)
            stack.extend(self._resolve(uid) for uid in f.inputs)
        return [f for f in self.model.functions.values() if f.uid in needed], outputs

    def _feeders(self, f: Function) -> list[str]:
        """The functions whose outputs `f` reads."""
        return [made_by[0] for made_by in (producer(self._resolve(uid)) for uid in f.inputs) if made_by]

    def _loops(self, f: Function) -> bool:
        return f.uid in self._feeders(f)

    def _check(self, order: list[Function]) -> None:
        for f in order:
            name = NAMES.get(f.op, f"op {f.op}")
            if REGISTRY.import_rule(name) is None:
                self.report.add(name, f.name or f.uid, "CNTK op without a rule")
            elif len(f.inputs) != ARITY.get(name, len(f.inputs)) or not f.inputs:
                raise ModelError(f"{name} {f.name or f.uid} has {len(f.inputs)} inputs (it takes "
                                 f"{ARITY.get(name, 'some')}): the model file is damaged")
        self.report.raise_if_any()

    def _declare(self) -> None:
        variables = self.model.variables
        arguments = [v for v in variables.values() if v.kind == INPUT]
        names = {v.uid: v.name if v.name and [a.name for a in arguments].count(v.name) == 1 else v.uid
                 for v in arguments}
        unknown = sorted(set(self.input_shapes) - set(names.values()))
        if unknown:
            raise ModelError(f"input_shapes names {unknown}, which are not inputs of the model "
                             f"({sorted(names.values())})")
        missing = []
        for v in arguments:
            leading = _dynamic_dims(v.dynamic_axes)
            shape = self.input_shapes.get(names[v.uid])
            if shape is None:
                if any(d < 0 for d in v.shape):
                    missing.append(names[v.uid])
                    continue
                shape = (*leading, *v.shape)
            elif len(shape) != len(leading) + len(v.shape):
                raise ModelError(f"input_shapes gives {names[v.uid]} {len(shape)} axes; it has {len(leading)} dynamic "
                                 f"and {len(v.shape)} static")
            value = self.graph.add_input(names[v.uid], v.dtype, tuple(shape))
            value.meta["cntk_uid"] = v.uid
            self.values[v.uid] = self.result(value, len(leading))
        if missing:
            flags = " ".join(f"--input-shape {name}=..." for name in missing)
            raise InputShapesNeeded(f"the model leaves sizes of input(s) {', '.join(missing)} to be inferred when it "
                                    f"runs; pass input_shapes (command line: {flags})", inputs=sorted(names.values()))
        for v in variables.values():
            if v.kind in (PARAMETER, CONSTANT):
                if v.value is None:
                    raise ModelError(f"{v.kind == PARAMETER and 'parameter' or 'constant'} {v.uid} has no value")
                name = f"{v.name}_{v.uid}" if v.name else v.uid
                self.values[v.uid] = self.b.weight(name, v.value) if v.kind == PARAMETER else self.b.const(v.value,
                                                                                                             name)

    def _read(self, f: Function) -> None:
        """Read one primitive function (its inputs read before it)."""
        uids = [self._resolve(uid) for uid in f.inputs]
        if any(self.values.get(uid) is None for uid in uids):
            return  # it reads what could not be read (reported)
        name = NAMES[f.op]
        self.b.at(f.name or f.uid, {"framework": "cntk", "source_op": name, "source_name": f.name or f.uid})
        self.inputs = [self.values[uid] for uid in uids]
        self.attrs = attributes(f.attrs)
        try:
            rule = REGISTRY.import_rule(name)
            results = rule.convert(self, f) if rule.convert else self.emit(rule.ir_op, self.inputs, rule.attrs)
            unread = self.attrs.unread()
            if unread:
                raise ModelError(f"attribute(s) {', '.join(unread)} not read: tensorbridge cannot tell what they "
                                 "change")
        except TensorbridgeError as e:
            self.report.add(name, f.name or f.uid, str(e))
            return
        results = results if isinstance(results, list) else [results]
        for k, value in enumerate(results):
            if id(value) not in self.axes and hasattr(value, "shape"):
                self.result(value, max((self.dynamic(v) for v in self.inputs if hasattr(v, "shape")), default=0))
            self.values[output_uid(f.uid, k)] = value

    # -- recurrences -----------------------------------------------------------------------------------------
    def _recurrence(self, group: list[Function]) -> None:
        """A loop through delays as a Scan over the sequence axis (axis 1)."""
        from tensorbridge.rules.cntk.sequence import recurrence

        inside = {f.uid for f in group}
        delays = [f for f in group if NAMES.get(f.op) in DELAYS]
        kinds = {NAMES[f.op] for f in delays}
        where = delays[0].name or delays[0].uid if delays else group[0].uid
        if not delays:
            self.report.add("loop", where, "a loop through ops other than PastValue / FutureValue")
            return
        if len(kinds) > 1:
            self.report.add("loop", where, "a loop through both PastValue and FutureValue (read: one direction)")
            return
        try:
            recurrence(self, group, inside, delays, backwards=kinds == {"FutureValue"})
        except TensorbridgeError as e:
            self.report.add("Recurrence", where, str(e))

    def read_group(self, group: list[Function], inside: set[str]) -> None:
        """Read the non-delay functions of a recurrence's body, in an order where each follows what it reads."""
        done: set[str] = set()
        pending = [f for f in group if NAMES.get(f.op) not in DELAYS]
        while pending:
            ready = [f for f in pending if all(u not in inside or u in done or NAMES.get(self.model.functions[u].op)
                                               in DELAYS for u in self._feeders(f))]
            if not ready:
                raise ModelError("a loop whose ops wait on each other without a delay between them")
            for f in ready:
                self._read(f)
                done.add(f.uid)
                if self.values.get(output_uid(f.uid)) is None:
                    raise ModelError(f"an op of the recurrence ({NAMES[f.op]} {f.name or f.uid}) could not be read")
            pending = [f for f in pending if f.uid not in done]

    def used_after(self, inside: set[str]) -> list[str]:
        """The values computed in `inside` that functions outside it, or the model's outputs, read."""
        used = []
        for f in self.order:
            if f.uid not in inside:
                used.extend(u for u in self.resolved_inputs(f) if producer(u) and producer(u)[0] in inside)
        used.extend(u for u in self.outputs if producer(u) and producer(u)[0] in inside)
        return list(dict.fromkeys(used))

    def subgraph(self, tag: str, inputs: list[tuple[str, object, tuple]], read) -> Graph:
        """A subgraph (a Scan's body) of the graph being built, with `inputs` ((name, dtype, shape) each), whose
        outputs are what `read(*input values)` returns as it emits into it (a value passed through, or read from
        outside, copied by an Identity)."""
        outer = self.b
        graph = self.graph.subgraph(f"{outer.base}.{tag}")
        values = [graph.add_input(f"{outer.base}.{name}", dtype, shape) for name, dtype, shape in inputs]
        self.b = Builder(graph, outer.base, outer.meta)
        try:
            outputs = read(*values)
            graph.outputs = [v if v.producer is not None and v.producer.graph is graph else
                             self.emit("Identity", [v], suffix=f"{tag}.out{i}") for i, v in enumerate(outputs)]
        finally:
            self.b = outer
        return graph

    def resolved_inputs(self, f: Function) -> list[str]:
        return [self._resolve(uid) for uid in f.inputs]

    def state_shape(self, f: Function) -> tuple:
        """The static shape of the value a delay in a loop carries, as the model declares it."""
        uid = self._resolve(f.inputs[0])
        declared = self.model.variables.get(f.inputs[0]) or self.model.variables.get(uid)
        if declared is None or any(d < 0 for d in declared.shape):
            raise ModelError(f"the shape of the state that {f.name or f.uid} carries is not declared in the model")
        return declared.shape


def _dynamic_dims(axes: tuple[str, ...]) -> tuple[str, ...]:
    """The leading IR dims of a variable with these dynamic axes (CNTK lists the sequence axis first)."""
    if not axes:
        return ()
    if axes == (BATCH_AXIS,):
        return (BATCH,)
    if len(axes) == 2 and axes[1] == BATCH_AXIS:
        return (BATCH, SEQUENCE if axes[0] == SEQUENCE_AXIS else axes[0])
    raise ModelError(f"an input with dynamic axes {list(axes)} (read: the batch axis, and one sequence axis)")


def _strongly_connected(order: list[Function], feeders) -> list[list[Function]]:
    """The functions grouped into strongly connected components (a recurrence is one), each group after the
    groups it reads from (Tarjan's algorithm, iterative)."""
    by_uid = {f.uid: f for f in order}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[Function]] = []
    for start in order:
        if start.uid in index:
            continue
        work = [(start.uid, iter([u for u in feeders(start) if u in by_uid]))]
        index[start.uid] = low[start.uid] = len(index)
        stack.append(start.uid)
        on_stack.add(start.uid)
        while work:
            uid, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter([u for u in feeders(by_uid[nxt]) if u in by_uid])))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[uid] = min(low[uid], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[uid])
            if low[uid] == index[uid]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(by_uid[member])
                    if member == uid:
                        break
                groups.append(sorted(group, key=order.index))
    return groups
