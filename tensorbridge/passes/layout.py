"""Layout planning: run every layout-carrying op in the target's layout, with transposes only where unavoidable.

How the plan is made
--------------------
Every value of the source graph has a *logical* form (what the source computes). After
planning the rewritten graph holds it in a *physical* form, `transpose(logical, P)`: the value
is "held under P". One walk over the nodes in topological order decides P for every value
(tflite2onnx's propagation, with TVM ConvertLayout's rule that layouts change only at
boundaries), following the op's layout class from the catalogue:

- implicit (Conv, pools, BatchNorm, Resize, DepthToSpace, ...): the op runs in the layout the
  target chooses (`LayoutTarget`, overridden by --layout). It asks for its data input under the
  permutation from its own layout to that one, and its outputs are held under it. Weights keep
  the IR's layout-independent form; per-axis operands (Resize scales/sizes) are permuted here.
- transparent (elementwise): the op adopts the permutation most of its full-rank computed inputs
  already have. A lower-rank broadcast operand is aligned first: a constant is reshaped and
  permuted once, now; a computed one gets an Unsqueeze.
- attribute (Concat, Softmax, reductions, Slice, Pad, Split, Gather, Squeeze, Unsqueeze, Tile,
  Q/DQ, ...): the op keeps its input's permutation and its axes are rewritten (logical axis `a`
  is physical axis `P^-1[a]`); axes an op removes are removed from P as well. An op whose
  axes cannot be rewritten (a layer norm whose normalised suffix would be split, axes
  given at run time) asks for the logical form instead.
- Transpose is absorbed: its output is its input held under another permutation; no node stays.
- terminate (Reshape, Flatten, MatMul, Dense, RNNs, ...): asks for the logical form unless it is
  proven safe: a permutation that moves only size-1 axes keeps element order (the Reshape reads
  the physical tensor), and a Flatten/Reshape read only by Dense/MatMul/Gemm with constant
  weights reads the permuted tensor while the weight rows are permuted once.

"Ask for v under Q" costs nothing when v is already held under Q. Otherwise a constant is
permuted now; a permutation that moves only size-1 axes becomes a Reshape; anything else
becomes one Transpose, shared by every consumer that asks for the same form (so reciprocal
pairs never appear: MMdnn's cancellation happens by construction). Each Transpose is recorded
with the op that asked and why, for `inspect --layout-plan`.

Graph inputs are held under the identity (`--io-layout keep`) or, for rank-4 inputs that feed
layout-carrying ops, under the target layout (`--io-layout target`; other ranks are never
transposed by guess); `--pin-layout NAME=NHWC` holds one tensor in a given layout. Outputs are
asked for in the same way, so `keep` costs at most one transpose per graph input and output.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from tensorbridge.errors import Blocker, ModelError, UnsupportedError
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.ops import schema as op_schema
from tensorbridge.ops.infer import infer_node
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.layout_rules import LAYOUTS, between, channel_perms, inverse, is_identity


@dataclass(frozen=True)
class LayoutTarget:
    """The layouts a backend runs layout-carrying ops in; the first is its native one (none: keep the source's)."""

    layouts: tuple[str, ...] = LAYOUTS
    native: str | None = None
    #: ops this target runs only over the last axis (TFLite's SOFTMAX): the planner moves their axis last
    last_axis_ops: frozenset[str] = frozenset()


@dataclass
class LayoutOptions:
    """User control: `layout` native|nchw|nhwc|auto, `io_layout` keep|target, `pins` {tensor: layout}."""

    layout: str = "native"
    io_layout: str = "keep"
    pins: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        self.layout = self.layout.lower()
        if self.layout not in ("native", "nchw", "nhwc", "auto"):
            raise ModelError(f"--layout must be nchw, nhwc or auto, not {self.layout!r}")
        if self.io_layout not in ("keep", "target"):
            raise ModelError(f"--io-layout must be keep or target, not {self.io_layout!r}")
        self.pins = {k: v.upper() for k, v in self.pins.items()}
        bad = {k: v for k, v in self.pins.items() if v not in LAYOUTS}
        if bad:
            raise ModelError(f"--pin-layout takes NCHW or NHWC, got {bad}")


@dataclass
class Transform:
    """One layout change left in the graph: a Transpose (or a Reshape that only moves size-1 axes)."""

    node: str
    op: str
    value: str
    perm: tuple[int, ...]
    consumer: str
    reason: str


@dataclass
class LayoutPlan:
    """What the planner decided: each layout-carrying op's layout, the I/O forms, and every transform left."""

    ops: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    outputs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    transforms: list[Transform] = field(default_factory=list)
    weights_permuted: int = 0

    def to_dict(self) -> dict:
        return {"ops": self.ops, "inputs": {k: list(v) for k, v in self.inputs.items()},
                "outputs": {k: list(v) for k, v in self.outputs.items()}, "weights_permuted": self.weights_permuted,
                "transforms": [{**t.__dict__, "perm": list(t.perm)} for t in self.transforms]}

    @property
    def transposes(self) -> list[Transform]:
        return [t for t in self.transforms if t.op == "Transpose"]

    def describe(self) -> str:
        changed = Counter(self.ops.values())
        lines = [f"layout-carrying ops: {sum(changed.values())} ("
                 + ", ".join(f"{n} {k}" for k, n in sorted(changed.items())) + ")",
                 f"constants permuted at conversion time: {self.weights_permuted}"]
        for kind, io in (("input", self.inputs), ("output", self.outputs)):
            for name, perm in io.items():
                form = "unchanged" if perm == tuple(range(len(perm))) else f"permuted {list(perm)}"
                lines.append(f"graph {kind} {name!r}: {form}")
        lines.append(f"transposes left: {len(self.transposes)}")
        for t in self.transforms:
            lines.append(f"  {t.op} {t.node!r} on {t.value!r} perm={list(t.perm)} before {t.consumer}: {t.reason}")
        return "\n".join(lines)


# -- permutations ------------------------------------------------------------------------------
def _moves_only_ones(shape, perm) -> bool:
    """True when transposing a tensor of `shape` by `perm` keeps its element order."""
    if shape is None:
        return False
    big = [p for p in perm if shape[p] != 1]  # symbolic and unknown dims count as big
    return big == sorted(big)


def _suffix(perm) -> str:
    """A readable tag for values the planner adds in form `perm` (presentation only: layouts live in
    `Value.layout`, and nothing parses names)."""
    perm = tuple(perm)
    named = {p: s for s, p in channel_perms(len(perm)).items() if not is_identity(p)}
    return named.get(perm) or "t" + "".join(map(str, perm))


# -- the planner -------------------------------------------------------------------------------
class Planner:
    def __init__(self, graph: Graph, target: LayoutTarget, options: LayoutOptions):
        self.g = graph
        self.target = target
        self.options = options
        self.held: dict[int, tuple[Value, tuple[int, ...]]] = {}
        self.cache: dict[tuple[int, tuple[int, ...]], Value] = {}
        self.plan = LayoutPlan()
        self.source_layout = _dominant_layout(graph)
        self.blockers: list[Blocker] = []
        self.current: Node | None = None  # new nodes go before it (None: at the end)
        self.next: Node | None = None
        self.input_forms: dict[str, tuple[int, ...]] | None = None  # set for the dry runs of --io-layout target

    # holding and asking
    def form(self, v: Value) -> tuple[Value, tuple[int, ...]]:
        if id(v) in self.held:
            return self.held[id(v)]
        return v, tuple(range(len(v.shape))) if v.shape is not None else ()

    def hold(self, v: Value, perm) -> None:
        """Record that `v` now holds its data under `perm` (`v.layout`; its name stays the source's)."""
        perm = tuple(perm)
        if v.shape is not None and not is_identity(perm):
            v.shape = tuple(v.shape[p] for p in perm)
            v.layout = perm
        self.held[id(v)] = (v, perm)

    def ask(self, v: Value, want, reason: str) -> Value:
        """`v` in the physical form `want`, adding a constant, Reshape or Transpose when needed."""
        phys, have = self.form(v)
        want = tuple(want)
        if have == want or phys.shape is None:
            return phys
        return self._permuted(phys, tuple(have.index(w) for w in want), reason)

    def _derived(self, source: Value, name: str, arr) -> Value:
        """A constant holding `source`'s data rearranged: learned or not as `source` is."""
        out = self.g.add_constant(name, arr)
        if "role" in source.meta:
            out.meta["role"] = source.meta["role"]
        return out

    def _permuted(self, phys: Value, rel, reason: str) -> Value:
        """`phys` transposed by `rel` (each position takes that physical axis), made once and shared."""
        key = (id(phys), rel)
        if key in self.cache:
            return self.cache[key]
        if phys.const is not None:
            arr = np.ascontiguousarray(np.transpose(phys.const, rel))
            out = self._derived(phys, f"{phys.name}.{_suffix(rel)}", arr)
            self.plan.weights_permuted += 1
        elif _moved_behind(phys):
            out = self._through_dequantize(phys.producer, rel, reason)
        elif _moves_only_ones(phys.shape, rel) and sum(not isinstance(d, int) for d in phys.shape) <= 1:
            target = [d if isinstance(d, int) else -1 for d in (phys.shape[p] for p in rel)]
            shape = self.g.add_constant(f"{phys.name}.shape", np.array(target, np.int64))
            out = self._insert("Reshape", [phys, shape], {}, f"{phys.name}.as_{_suffix(rel)}", rel, reason)
        else:
            out = self._insert("Transpose", [phys], {"perm": list(rel)}, f"{phys.name}.to_{_suffix(rel)}", rel, reason)
        self.cache[key] = out
        return out

    def _through_dequantize(self, dq: Node, rel, reason: str) -> Value:
        """A dequantized tensor in another form: permute the integer tensor (a quantized weight: once, now)
        and dequantize that, so Q/DQ stay next to the ops that read them."""
        x, scale = self._permuted(dq.inputs[0], rel, reason), dq.input(1)
        attrs = dict(dq.attrs)
        if scale.shape is not None and len(scale.shape) == 1 and scale.shape[0] != 1:
            attrs["axis"] = rel.index(dq.attrs.get("axis", 1) % len(rel))
        node = self.g.add_node(dq.op, [x, *dq.inputs[1:]], attrs, name=f"{dq.name}.{_suffix(rel)}",
                               before=self.current, meta=dq.meta)
        infer_node(node)
        return node.outputs[0]

    def _insert(self, op, inputs, attrs, name, rel, reason) -> Value:
        node = self.g.add_node(op, inputs, attrs, name=name, before=self.current,
                               meta=self.current.meta if self.current is not None else None)
        infer_node(node)
        consumer = f"{self.current.op} {self.current.name!r}" if self.current is not None else "graph output"
        self.plan.transforms.append(Transform(node.name, op, inputs[0].name, rel, consumer, reason))
        return node.outputs[0]

    def logical(self, node: Node, reason: str, first: int = 0) -> None:
        """Give the inputs of `node` from `first` on their logical form; its outputs are held as they are."""
        for i, v in enumerate(node.inputs[first:], first):
            if v is not None and v.shape is not None:
                node.set_input(i, self.ask(v, range(len(v.shape)), reason))

    # the walk
    def run(self) -> LayoutPlan:
        self._inputs()
        nodes = list(self.g.nodes)
        for k, node in enumerate(nodes):
            self.current, self.next = node, nodes[k + 1] if k + 1 < len(nodes) else None
            self._visit(node)
            self.current = self.next
            for v in node.outputs:
                self._pin(v)
        self.current = None
        self._outputs()
        self._captured()
        for node in reversed(list(self.g.nodes)):
            if _kind(node) == "permute" and id(node.outputs[0]) in self.held \
                    and self.held[id(node.outputs[0])][0] is not node.outputs[0] \
                    and not node.outputs[0].uses() and node.outputs[0] not in self.g.outputs:
                self.g.remove_node(node)
        if self.blockers:
            raise UnsupportedError(self.blockers, "layout planning")
        return self.plan

    def _visit(self, node: Node) -> None:
        schema = op_schema.get(node.op)
        layout = schema.layout if schema is not None else TERMINATE
        if layout.kind == "permute" and node.attrs.get("perm") is not None and node.inputs[0].shape is not None:
            phys, have = self.form(node.inputs[0])
            q = node.attrs["perm"]
            self.held[id(node.outputs[0])] = (phys, tuple(inverse(q)[a] for a in have))
            return
        if layout.kind == "shape":
            if node.outputs[0].shape == ():  # a size: the same in any layout
                node.set_input(0, self.form(node.inputs[0])[0])
                return
            if self._shape(node):
                return
        if layout.kind == "implicit" and "layout" in schema.attrs and schema.attrs["layout"].kind == "str":
            return self._implicit(node, schema)
        if layout.kind == "transparent":
            return self._transparent(node)
        if layout.kind == "attribute":
            if layout.rule is not None and self._attribute(node, layout):
                return
            return self.logical(node, f"{node.op}: its axes cannot follow this layout")
        if layout.reshapes and self._safe_reshape(node):
            return
        self.logical(node, f"{node.op} needs the source layout ({layout.kind} op)")

    # implicit ops
    def _implicit(self, node: Node, schema) -> None:
        x = node.inputs[0]
        own = node.attrs.get("layout", schema.attrs["layout"].default)
        if x is None or x.shape is None:
            return self.logical(node, "rank unknown")
        chosen = self._choose(own)
        if chosen not in self.target.layouts:
            only = ", ".join(self.target.layouts)
            self.blockers.append(Blocker(node.op, node.name, f"the target runs it only in {only}"))
            return self.logical(node, "")
        self.plan.ops[node.name] = chosen
        perm = between(own, chosen, len(x.shape))
        node.set_input(0, self.ask(x, perm, f"{node.op} runs in {chosen}"))
        self.logical(node, f"{node.op} reads its weights in the IR's layout", first=1)
        if schema.layout.operands is not None:
            schema.layout.operands(self, node, perm)
        node.attrs["layout"] = chosen
        for v in node.outputs:
            if v.shape is not None and len(v.shape) == len(perm):
                self.hold(v, perm)

    def _choose(self, own: str) -> str:
        """The layout an op now in `own` runs in (may be one the target lacks: the caller reports it)."""
        wanted = self.options.layout
        if wanted in ("nchw", "nhwc"):
            return wanted.upper()
        if wanted == "auto" or self.target.native is None:
            return own if own in self.target.layouts else self.target.layouts[0]
        return self.target.native

    # transparent ops
    def _transparent(self, node: Node) -> None:
        out = node.outputs[0]
        rank = len(out.shape) if out.shape is not None else None
        if rank is None or any(v is not None and v.shape is None for v in node.inputs):
            return self.logical(node, "rank unknown")
        perm = self._majority(node, rank)
        self._align_inputs(node, perm, rank, f"{node.op} follows its other input")
        for v in node.outputs:
            if v.shape is not None and len(v.shape) == rank:
                self.hold(v, perm)

    def _majority(self, node: Node, rank: int) -> tuple[int, ...]:
        votes = Counter(self.form(v)[1] for v in node.inputs
                        if v is not None and v.const is None and len(v.shape) == rank)
        if not votes:
            return tuple(range(rank))
        best = max(votes.values())
        tied = [p for p, n in votes.items() if n == best]
        return next((p for p in tied if not is_identity(p)), tied[0])

    def _align_inputs(self, node: Node, perm, rank: int, reason: str, indices=None) -> None:
        for i, v in enumerate(node.inputs):
            if v is None or (indices is not None and i not in indices):
                continue
            k = len(v.shape)
            if k == rank:
                node.set_input(i, self.ask(v, perm, reason))
            elif k < rank and not is_identity(perm) and not all(d == 1 for d in v.shape):
                node.set_input(i, self._broadcast_operand(v, perm, rank, reason))

    def _broadcast_operand(self, v: Value, perm, rank: int, reason: str) -> Value:
        """A lower-rank operand, aligned right as broadcasting does, in the full-rank form `perm`."""
        lead = rank - len(v.shape)
        key = (id(v), ("broadcast", *perm))
        if key in self.cache:
            return self.cache[key]
        if v.const is not None:
            arr = np.transpose(v.const.reshape((1,) * lead + v.const.shape), perm)
            while arr.ndim > 1 and arr.shape[0] == 1:
                arr = arr[0]
            out = self._derived(v, f"{v.name}.{_suffix(perm)}", np.ascontiguousarray(arr))
            self.plan.weights_permuted += 1
        else:
            axes = self.g.add_constant(f"{v.name}.axes", np.arange(lead, dtype=np.int64))
            node = self.g.add_node("Unsqueeze", [self.ask(v, range(len(v.shape)), reason), axes],
                                   name=f"{v.name}.rank{rank}", before=self.current)
            infer_node(node)
            out = self.ask(node.outputs[0], perm, reason)
        self.cache[key] = out
        return out

    # attribute ops
    def _attribute(self, node: Node, layout) -> bool:
        x = node.inputs[0]
        if x is None or x.shape is None or any(v.shape is None for v in node.outputs):
            return False
        rank = len(x.shape)
        perm = self._majority(node, rank) if layout.aligned else self.form(x)[1]
        reason = ""
        if node.op in self.target.last_axis_ops:
            axis = node.attrs.get("axis", -1) % rank
            if perm[-1] != axis:
                perm = tuple(p for p in perm if p != axis) + (axis,)
                reason = f"{node.op} runs over the last axis on this target"
        if is_identity(perm):
            self.logical(node, f"{node.op} follows its other inputs")
            return True
        if not (layout.places_inputs or layout.aligned):
            self.logical(node, f"{node.op} reads its other inputs in the source layout", first=1)
        result = layout.rule(self, node, perm, rank)
        if result is None:
            return False
        if layout.aligned:
            self._align_inputs(node, perm, rank, f"{node.op} follows its other inputs")
        else:
            node.set_input(0, self.ask(x, perm, reason))
        for v, p in zip(node.outputs, result if isinstance(result, list) else [result] * len(node.outputs)):
            self.hold(v, p)
        return True

    def const_input(self, node: Node, index: int) -> np.ndarray | None:
        v = node.input(index)
        return None if v is None or v.const is None else np.asarray(v.const)

    def set_const(self, node: Node, index: int, array, name: str) -> None:
        node.set_input(index, self.g.add_constant(f"{node.name}.{name}", np.asarray(array)))

    # terminate ops proven safe
    def _safe_reshape(self, node: Node) -> bool:
        x = node.inputs[0]
        phys, perm = self.form(x)
        if x.shape is None or phys.shape is None or is_identity(perm):
            return False
        logical = _logical_shape(phys.shape, perm)
        if node.op == "Reshape" and not self._reshape_target_fits(node, logical, phys.shape):
            return False
        if _moves_only_ones(logical, perm):
            node.set_input(0, phys)
            return True
        return self._flatten_into_head(node, phys, perm, logical)

    def _reshape_target_fits(self, node: Node, logical, physical) -> bool:
        """Make the Reshape's `0` entries (copy that input dim) independent of the input's layout."""
        target = self.const_input(node, 1)
        if target is None:
            return False
        target = target.reshape(-1).astype(np.int64)
        if node.attrs.get("allowzero", 0) or not any(
                d == 0 and i < len(logical) and logical[i] != physical[i] for i, d in enumerate(target)):
            return True
        for i, d in enumerate(target):
            if d == 0 and i < len(logical) and logical[i] != physical[i]:
                if not isinstance(logical[i], int):
                    return False
                target[i] = logical[i]
        self.set_const(node, 1, target, "shape")
        return True

    def _shape(self, node: Node) -> bool:
        """Shape of a permuted tensor: read the physical shape and gather it back into logical order."""
        phys, perm = self.form(node.inputs[0])
        if is_identity(perm) or node.attrs.get("start") or node.attrs.get("end") is not None:
            return False
        node.set_input(0, phys)
        out = node.outputs[0]
        order = self.g.add_constant(f"{node.name}.order", np.array(inverse(perm), np.int64))
        gather = self.g.add_node("Gather", [out, order], {"axis": 0}, name=f"{node.name}.logical", before=self.next)
        infer_node(gather)
        self.held[id(out)] = (gather.outputs[0], (0,))
        return True

    def _flatten_into_head(self, node: Node, phys: Value, perm, logical) -> bool:
        out = node.outputs[0]
        rows = logical[1:]
        if perm[0] != 0 or out.shape is None or len(out.shape) != 2 or out in self.g.outputs \
                or not all(isinstance(d, int) for d in rows) or out.shape[1] != int(np.prod(rows)):
            return False
        uses = out.uses()
        heads = []
        for user, i in uses:
            user_schema = op_schema.get(user.op)
            spec = user_schema.layout.head if user_schema is not None else None
            w = user.input(spec[0]) if spec is not None else None
            if spec is None or i != 0 or w is None or w.const is None or w.const.ndim != 2:
                return False
            axis = spec[1] if spec[1] is not None else (1 if user.attrs.get("transB", 0) else 0)
            heads.append((user, spec[0], w, axis))
        if not heads:
            return False
        order = np.arange(int(np.prod(rows))).reshape(rows).transpose([p - 1 for p in perm[1:]]).reshape(-1)
        for user, index, w, axis in heads:
            rows_first = np.take(w.const, order, axis=axis)
            user.set_input(index, self._derived(w, f"{w.name}.rows_{_suffix(perm)}", rows_first))
            self.plan.weights_permuted += 1
        node.set_input(0, phys)
        out.layout = "rows"  # the source's values, not in its element order: compared only where it is read
        return True

    # graph boundary
    def _inputs(self) -> None:
        forms = self.input_forms if self.input_forms is not None else \
            self._target_input_forms() if self.options.io_layout == "target" else {}
        for x in self.g.inputs:
            if x.shape is None:
                continue
            rank = len(x.shape)
            perm = None
            if x.name in self.options.pins:
                perm = between(self.source_layout, self.options.pins[x.name], rank)
            elif x.name in forms:
                perm = forms[x.name]
            if perm is not None and not is_identity(perm):
                self.hold(x, perm)
            self.plan.inputs[x.name] = perm or tuple(range(rank))

    def _target_input_forms(self) -> dict[str, tuple[int, ...]]:
        """For --io-layout target: each rank-4 input's channel order that leaves the fewest transposes,
        found by planning copies of the graph (the source's order is kept unless another one wins)."""
        from tensorbridge.ir.graph import clone

        def cost(forms) -> int:
            dry = Planner(clone(self.g), self.target, LayoutOptions(self.options.layout, "keep", self.options.pins))
            dry.input_forms = forms
            return len(dry.run().transposes)

        forms: dict[str, tuple[int, ...]] = {}
        for x in self.g.inputs:
            if x.shape is None or len(x.shape) != 4 or x.name in self.options.pins:
                continue
            best = cost(forms)
            for perm in channel_perms(4).values():
                if (n := cost({**forms, x.name: perm})) < best:
                    best, forms[x.name] = n, perm
        return forms

    def _pin(self, v: Value) -> None:
        name = v.name
        if name not in self.options.pins or v.shape is None:
            return
        perm = between(self.source_layout, self.options.pins[name], len(v.shape))
        self.held[id(v)] = (self.ask(v, perm, f"pinned to {self.options.pins[name]} by --pin-layout"), perm)

    def _outputs(self) -> None:
        outputs = []
        for o in self.g.outputs:
            name = o.name
            phys, have = self.form(o)
            rank = len(have)
            if name in self.options.pins:
                want = between(self.source_layout, self.options.pins[name], rank)
            elif self.options.io_layout == "target" and rank == 4 and have in channel_perms(4).values():
                want = have  # held in the target's layout
            else:
                want = tuple(range(rank))
            reason = "graph output keeps the source layout (--io-layout keep)" \
                if self.options.io_layout == "keep" else "graph output in its source layout"
            got = self.ask(o, want, reason) if rank else phys
            if got.name != name:
                holder = self.g.find_value(name)
                if holder is not None and holder is not got:
                    holder.name = self.g.unique_name(f"{name}.{_suffix(self.form(holder)[1]) or 'src'}")
                got.name = name
            outputs.append(got)
            self.plan.outputs[name] = want
        self.g.outputs = outputs

    def _captured(self) -> None:
        """Subgraphs (If/Loop bodies) read outer values in their logical form."""
        for node in self.g.nodes:
            for sub in node.subgraphs():
                for inner in sub.all_nodes():
                    for i, v in enumerate(inner.inputs):
                        if v is not None and id(v) in self.held and not is_identity(self.held[id(v)][1]):
                            self.current = node
                            inner.set_input(i, self.ask(v, range(len(v.shape)), "read by a subgraph"))
        self.current = None


def _kind(node: Node) -> str:
    schema = op_schema.get(node.op)
    return schema.layout.kind if schema is not None else "terminate"


def _moved_behind(v: Value) -> bool:
    """`v` is made by an op a permutation moves behind (a per-tensor or per-axis DequantizeLinear)."""
    producer = v.producer
    schema = op_schema.get(producer.op) if producer is not None else None
    return schema is not None and schema.layout.through and not producer.attrs.get("block_size", 0) \
        and producer.inputs[0].shape is not None and len(producer.inputs[0].shape) == len(v.shape)


def _logical_shape(phys_shape, perm):
    inv = inverse(perm)
    return tuple(phys_shape[inv[a]] for a in range(len(perm)))


def _dominant_layout(graph: Graph) -> str:
    counts = Counter(n.attrs.get("layout", "NCHW") for n in graph.nodes
                     if (s := op_schema.get(n.op)) is not None and s.layout.kind == "implicit"
                     and "layout" in s.attrs and s.attrs["layout"].kind == "str")
    return counts.most_common(1)[0][0] if counts else "NCHW"


def plan_layout(graph: Graph, target: LayoutTarget, options: LayoutOptions | None = None) -> LayoutPlan:
    """Rewrite `graph` in place for `target` and return the plan (subgraphs keep their I/O forms)."""
    plan = Planner(graph, target, options or LayoutOptions()).run()
    for node in graph.nodes:
        for sub in node.subgraphs():
            plan_layout(sub, target, LayoutOptions(options.layout if options else "native"))
    return plan

