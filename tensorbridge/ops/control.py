"""Control flow: If, Loop, Scan. Bodies are IR subgraphs held in `graph` attributes; they
may read values of the enclosing graph. The reference runs them through `_run_graph`.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir.builder import Builder
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.schema import Attr, op, set_decomposition

F = "control"
#: the most iterations a loop may run for tensorbridge to run the model (to verify it or fold it)
ITERATION_LIMIT = 10_000_000
#: the most steps a Scan is unrolled into for a target without loops
UNROLL_LIMIT = 4096


def _branch_types(inputs, attrs):
    """Each output has its branches' dtype, and their shape where they agree."""
    return [(a.dtype, a.shape if a.shape == b.shape else None)
            for a, b in zip(attrs["then_branch"].outputs, attrs["else_branch"].outputs)]


@op("If", inputs="cond", outputs="outputs*", family=F, foldable=False, layout=TERMINATE,
    attrs={"then_branch": Attr("graph"), "else_branch": Attr("graph")}, infer=_branch_types,
    doc="Run one of two subgraphs. Equivalents: torch.cond, tf.cond, IF.")
def if_(cond, *, then_branch, else_branch, _run_graph):
    return tuple(_run_graph(then_branch if bool(np.asarray(cond).ravel()[0]) else else_branch, []))


def inline_chosen_branch(graph, node) -> bool:
    """An If whose condition is a constant replaced by the branch it takes: that branch's nodes and constants move
    into `graph` before it (moved, not copied, so bodies nested in them keep reading the same values). False for
    any other node."""
    if node.op != "If":
        return False
    cond = node.inputs[0]
    if cond.const is None or np.asarray(cond.const).size != 1:
        return False
    branch = node.attrs["then_branch" if bool(np.asarray(cond.const).ravel()[0]) else "else_branch"]
    moved = list(branch.nodes)
    for inner in moved:
        branch.nodes.remove(inner)
        inner.graph = graph
        graph.nodes.insert(graph.nodes.index(node), inner)
        for sub in inner.subgraphs():
            sub.parent = graph
    graph.constants.update(branch.constants)
    branch.constants = {}
    made = {id(v) for inner in moved for v in inner.outputs}
    b = Builder.replacing(node)  # a result the branch hands on (an outer value) keeps its own name
    graph.replace_node(node, [v if id(v) in made else b.op("Identity", v) for v in branch.outputs])
    return True


def _loop_types(inputs, attrs):
    """Each carried value keeps its start's dtype, and the dims where the start and the body's result agree; each
    scan output is the body's item with the steps before it."""
    starts, results = inputs[2:], attrs["body"].outputs[1:]
    carried = [(v.dtype, _agreed(v.shape, r.shape)) for v, r in zip(starts, results)]
    scanned = [(r.dtype, (None, *r.shape) if r.shape is not None else None) for r in results[len(starts):]]
    return carried + scanned


def _agreed(a, b):
    """The dims two shapes agree on (None where they differ), or None if either is unknown or the ranks differ."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


@op("Loop", inputs="M? cond? v_initial*", outputs="v_final_and_scan_outputs*", family=F, foldable=False, layout=TERMINATE,
    attrs={"body": Attr("graph")}, infer=_loop_types, doc="Loop with carried values and scan outputs. Equivalents: tf.while_loop, WHILE.")
def loop(M=None, cond=None, *v_initial, body, _run_graph):
    trips = int(np.asarray(M).ravel()[0]) if M is not None else None
    keep = bool(np.asarray(cond).ravel()[0]) if cond is not None else True
    carried = list(v_initial)
    n_carried = len(carried)
    scans: list[list] = [[] for _ in range(len(body.outputs) - 1 - n_carried)]
    i = 0
    while keep and (trips is None or i < trips):
        if i == ITERATION_LIMIT:
            raise ModelError(f"a Loop ran {ITERATION_LIMIT:,} iterations without ending; the reference interpreter "
                             "stops there")
        outs = _run_graph(body, [np.array(i, np.int64), np.array(keep)] + carried)
        keep = bool(np.asarray(outs[0]).ravel()[0])
        carried = list(outs[1:1 + n_carried])
        for s, v in zip(scans, outs[1 + n_carried:]):
            s.append(v)
        i += 1
    return tuple(carried) + tuple(np.stack(s) if s else np.zeros((0,), np.float32) for s in scans)


def _scan_types(inputs, attrs):
    """The final states as the body's state outputs; each scan output the body's step output with the number of
    steps (the scanned axis of the scan inputs) inserted at its axis."""
    body, n_scan = attrs["body"], attrs["num_scan_inputs"]
    n_state = len(inputs) - n_scan
    in_axes = attrs.get("scan_input_axes") or [0] * n_scan
    lengths = {x.shape[axis] if x is not None and x.shape is not None else None
               for x, axis in zip(inputs[n_state:], in_axes)}
    steps = lengths.pop() if len(lengths) == 1 else None
    outs = body.outputs[n_state:]
    out_axes = attrs.get("scan_output_axes") or [0] * len(outs)
    scanned = [(v.dtype, None if v.shape is None else (*v.shape[:axis], steps, *v.shape[axis:]))
               for v, axis in zip(outs, out_axes)]
    return [(v.dtype, v.shape) for v in body.outputs[:n_state]] + scanned


@op("Scan", inputs="initial_state_and_scan_inputs*", outputs="final_state_and_scan_outputs*", family=F, foldable=False,
    layout=TERMINATE, infer=_scan_types,
    attrs={"body": Attr("graph"), "num_scan_inputs": Attr("int"), "scan_input_axes": Attr("ints", None),
           "scan_input_directions": Attr("ints", None), "scan_output_axes": Attr("ints", None),
           "scan_output_directions": Attr("ints", None)},
    doc="Iterate a body over slices of scan inputs with carried state. Equivalents: jax.lax.scan, tf.scan.")
def scan(*initial_state_and_scan_inputs, body, num_scan_inputs, scan_input_axes, scan_input_directions,
         scan_output_axes, scan_output_directions, _run_graph):
    args = list(initial_state_and_scan_inputs)
    n_state = len(args) - num_scan_inputs
    state, xs = args[:n_state], args[n_state:]
    in_axes = scan_input_axes or [0] * num_scan_inputs
    in_dirs = scan_input_directions or [0] * num_scan_inputs
    xs = [np.moveaxis(x, a, 0) for x, a in zip(xs, in_axes)]
    xs = [x[::-1] if d else x for x, d in zip(xs, in_dirs)]
    steps = xs[0].shape[0] if xs else 0
    n_scan_out = len(body.outputs) - n_state
    outs: list[list] = [[] for _ in range(n_scan_out)]
    for t in range(steps):
        res = _run_graph(body, state + [x[t] for x in xs])
        state = list(res[:n_state])
        for o, v in zip(outs, res[n_state:]):
            o.append(v)
    out_axes = scan_output_axes or [0] * n_scan_out
    out_dirs = scan_output_directions or [0] * n_scan_out
    stacked = []
    for o, a, d in zip(outs, out_axes, out_dirs):
        s = np.stack(o)
        s = s[::-1] if d else s
        stacked.append(np.moveaxis(s, 0, a))
    return tuple(state) + tuple(stacked)


def _decompose_scan(graph, node) -> bool:
    """A Scan of static length, unrolled for targets without loops: the body's nodes copied once per step, each
    step reading its slice of the scan inputs (Gather) and its step outputs stacked (Unsqueeze + Concat)."""
    a = node.attrs
    body, n_scan = a["body"], a["num_scan_inputs"]
    n_state = len(node.inputs) - n_scan
    state, xs = list(node.inputs[:n_state]), list(node.inputs[n_state:])
    in_axes = a.get("scan_input_axes") or [0] * n_scan
    lengths = {x.shape[axis] if x.shape is not None else None for x, axis in zip(xs, in_axes)}
    if not xs or len(lengths) != 1 or not isinstance(length := lengths.pop(), int) or length > UNROLL_LIMIT \
            or any(next(n.subgraphs(), None) for n in body.nodes):
        return False
    in_dirs = a.get("scan_input_directions") or [0] * n_scan
    n_out = len(body.outputs) - n_state
    out_axes, out_dirs = a.get("scan_output_axes") or [0] * n_out, a.get("scan_output_directions") or [0] * n_out
    b = Builder.replacing(node)
    constants = _outer_constants(graph, body)
    steps: list[list] = []
    for t in range(length):
        sliced = [b.op("Gather", x, b.const(np.array(length - 1 - t if d else t, np.int64), b.name(f"step{t}")),
                      axis=axis) for x, axis, d in zip(xs, in_axes, in_dirs)]
        out = _inline(graph, node, body, state + sliced, constants)
        state, step = out[:n_state], out[n_state:]
        steps.append(step)
    stacked = [_stack(b, [s[k] for s in (steps[::-1] if d else steps)], axis)
               for k, (axis, d) in enumerate(zip(out_axes, out_dirs))]
    graph.replace_node(node, [*state, *stacked])
    return True


def _outer_constants(graph, body) -> dict:
    """`body`'s constants as constants of `graph` (the same arrays), once for every copy of the body."""
    out = {}
    for v in body.constants.values():
        copy = out[id(v)] = graph.add_constant(v.name, v.const)
        copy.meta = dict(v.meta)
    return out


def _stack(b, values: list, axis: int):
    """The step values stacked along a new `axis`."""
    parts = [b.op("Unsqueeze", v, b.const(np.array([axis], np.int64), b.name("axis"))) for v in values]
    return b.op("Concat", *parts, axis=axis) if len(parts) > 1 else parts[0]


def _inline(graph, before, body, arguments: list, constants: dict) -> list:
    """`body`'s nodes copied into `graph` before node `before`, reading `arguments` for its inputs and `constants`
    (`_outer_constants`) for its constants: the values its outputs take."""
    env = {**constants, **{id(v): a for v, a in zip(body.inputs, arguments)}}
    for n in body.nodes:
        new = graph.add_node(n.op, [None if v is None else env.get(id(v), v) for v in n.inputs], dict(n.attrs),
                             outputs=len(n.outputs), name=n.name, meta=n.meta, before=before)
        for old, out in zip(n.outputs, new.outputs):
            out.dtype, out.shape = old.dtype, old.shape
            env[id(old)] = out
    return [env.get(id(v), v) for v in body.outputs]


set_decomposition("Scan", _decompose_scan)


def _decompose_loop(graph, node) -> bool:
    """A Loop that runs a constant number of times (`fixed_trip_count`), unrolled for targets without loops: the
    body copied once per iteration, its scan outputs stacked."""
    trips, body = fixed_trip_count(node), node.attrs["body"]
    if trips is None or trips > UNROLL_LIMIT or any(next(n.subgraphs(), None) for n in body.nodes):
        return False
    carried = list(node.inputs[2:])
    n_carried = len(carried)
    if trips == 0 and len(body.outputs) > 1 + n_carried:  # empty scan outputs: their shapes are not known here
        return False
    b = Builder.replacing(node)
    keep = b.const(np.array(True), b.name("keep"))
    constants = _outer_constants(graph, body)
    scans: list[list] = [[] for _ in range(len(body.outputs) - 1 - n_carried)]
    for i in range(trips):
        iteration = b.const(np.array(i, np.int64), b.name(f"iteration{i}"))
        out = _inline(graph, node, body, [iteration, keep, *carried], constants)
        carried = out[1:1 + n_carried]
        for s, v in zip(scans, out[1 + n_carried:]):
            s.append(v)
    graph.replace_node(node, [*carried, *(_stack(b, s, 0) for s in scans)])
    return True


set_decomposition("Loop", _decompose_loop)


def specialize_carried(loop, infer_shapes) -> None:
    """Give a Loop body's carried inputs the static shapes of the values the loop starts from, where the body
    declared them less known (a batch left open when the source was read, fixed since), if the body then gives
    back values of those same shapes: by induction every step keeps them. Otherwise the body is left as it was.
    `infer_shapes` infers a graph's shapes (passes/infer_shapes.py, which calls this for every node with bodies)."""
    if loop.op != "Loop":
        return
    body = loop.attrs["body"]
    starts, carried = loop.inputs[2:], body.inputs[2:2 + len(loop.inputs) - 2]
    if not all(v is not None and v.shape is not None and all(isinstance(d, int) for d in v.shape) for v in starts) \
            or all(b.shape is not None and tuple(b.shape) == tuple(v.shape) for b, v in zip(carried, starts)):
        return
    values = [*body.inputs, *(v for n in body.all_nodes() for v in n.outputs)]
    saved = [(v, v.shape, v.dtype, v.meta.get("elements")) for v in values]
    for b, v in zip(carried, starts):
        b.shape = tuple(v.shape)
    for node in body.all_nodes():
        for v in node.outputs:
            v.shape = None
            v.meta.pop("elements", None)
    infer_shapes(body)
    if all(r.shape is not None and tuple(r.shape) == tuple(v.shape) for r, v in zip(body.outputs[1:], starts)):
        return
    for v, shape, dtype, elements in saved:  # the shapes change from step to step after all: as declared
        v.shape, v.dtype = shape, dtype
        if elements is not None:
            v.meta["elements"] = elements


def values_alike(a: list, b: list) -> bool:
    """Whether two lists of values have the same static shapes and types, pairwise (what traced control flow,
    jax.lax.cond or torch.cond, needs of two branches' outputs or of a loop's carried values)."""
    return all(x.shape is not None and y.shape is not None and tuple(x.shape) == tuple(y.shape) and None not in x.shape
               and x.dtype == y.dtype for x, y in zip(a, b))


def branches_blocker(node) -> str | None:
    """Why an If's branches cannot be traced as one computation: outputs that differ in shape or type."""
    if not values_alike(node.attrs["then_branch"].outputs, node.attrs["else_branch"].outputs):
        hint = "; its condition reads tensor sizes: with them fixed by --input-shape it is decided at conversion" \
            if _reads_sizes(node.inputs[0]) else ""
        return f"branches whose outputs differ in shape or type (a traced cond needs them alike{hint})"
    return None


def _reads_sizes(v, limit: int = 64) -> bool:
    """Whether `v` is computed from a tensor's shape (Shape, Size), looking at most `limit` ops back."""
    todo, seen = [v], set()
    while todo and len(seen) < limit:
        p = todo.pop().producer
        if p is None or id(p) in seen:
            continue
        if p.op in ("Shape", "Size"):
            return True
        seen.add(id(p))
        todo.extend(u for u in p.inputs if u is not None)
    return False


def traced_loop_blocker(node) -> str | None:
    """Why a Loop cannot be one traced while loop (jax.lax.while_loop, keras.ops.while_loop): scan outputs (such a
    loop only carries values; a writer takes first the loops it can unroll or scan over a count fixed before they
    start), or carried values that change shape or type."""
    body = node.attrs["body"]
    if len(body.outputs) != 1 + len(node.inputs) - 2:
        return "a Loop with scan outputs and no count of steps fixed before it starts (a traced while loop only " \
            "carries values)"
    if not values_alike(node.inputs[2:], body.outputs[1:]):
        return "values the loop carries with a changing shape or type (a traced while loop keeps them; where a " \
            "shape changes only because an input dim is open, --input-shape with that dim fixed may keep it)"
    return None


def traced_scan_blocker(node) -> str | None:
    """Why a Scan cannot be one traced scan (jax.lax.scan, keras.ops.scan: over the first axis, one direction,
    state of one shape and type)."""
    a = node.attrs
    n_scan = a["num_scan_inputs"]
    n_state = len(node.inputs) - n_scan
    n_out = len(a["body"].outputs) - n_state
    axes = (a.get("scan_input_axes") or [0] * n_scan) + (a.get("scan_output_axes") or [0] * n_out)
    directions = set((a.get("scan_input_directions") or [0] * n_scan) + (a.get("scan_output_directions") or
                                                                         [0] * n_out))
    if any(axis != 0 for axis in axes) or len(directions) > 1 or not n_scan:
        return "a Scan over other axes than the first, or with mixed directions (a traced scan takes one)"
    if not values_alike(node.inputs[:n_state], a["body"].outputs[:n_state]):
        return "state whose shape or type changes from step to step (a traced scan keeps it)"
    return None


def counted(node) -> bool:
    """Whether a Loop runs exactly its trip count (given; a constant or computed): its condition never changes
    (constant-true, or passed through the body unchanged)."""
    if not gated_count(node):
        return False
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    return cond is None or cond.const is not None and bool(np.asarray(cond.const).ravel()[0])


def gated_count(node) -> bool:
    """Whether a Loop runs its trip count or, where its first condition is false, not at all: a trip count is given
    and the body never changes the condition (constant-true, or passed through unchanged)."""
    if node.op != "Loop" or not node.inputs or node.inputs[0] is None:
        return False
    body = node.attrs["body"]
    out = body.outputs[0]
    while out.producer is not None and out.producer.op == "Identity":
        out = out.producer.inputs[0]
    constant_true = out.const is not None and bool(np.asarray(out.const).ravel()[0])
    return constant_true or (len(body.inputs) > 1 and out is body.inputs[1])


def fixed_trip_count(node) -> int | None:
    """The iterations of a `counted` Loop whose trip count is a constant, else None."""
    if not counted(node) or node.inputs[0].const is None:
        return None
    return int(np.asarray(node.inputs[0].const).ravel()[0])


def computed_in(graph, v, name: str):
    """`v` as a value `graph` computes itself, for its outputs: `v`, or `passed_on` as `name` where it reads `v`
    from elsewhere (an input, a constant, an enclosing graph's value)."""
    from tensorbridge.ops.elementwise import passed_on

    return v if v.producer is not None and v.producer.graph is graph else passed_on(graph, v, name)
