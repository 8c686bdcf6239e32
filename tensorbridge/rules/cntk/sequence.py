"""CNTK's sequence ops: delays, recurrences, and the selections `sequence.first`, `sequence.last` and
`sequence.slice` are made of.

A sequence value is (batch, sequence, static...) in the IR. A delay outside a loop shifts along the sequence axis,
filling with its initial value; delays inside a loop are a recurrence, read by `recurrence` as one Scan (the importer
finds the loops). `sequence.slice(x, begin, end)` and its first/last forms are stored as a selection: a mask made
from constants spread over the sequence (ReconcileDynamicAxis) and shifted by delays, turned into step indices
(Where), then packed indices (PackedIndex), then the steps gathered (GatherPacked). The mask depends only on the
sequence's length, so `Where` evaluates it for lengths 1 to 16 and reads the steps it keeps as a slice whose ends are
fixed or counted from the end (a Gather when the selection keeps one step and drops the sequence axis); a mask that
depends on the data, or keeps steps no slice describes, is a blocker.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.formats.cntk import output_uid, producer
from tensorbridge.reference.interpreter import run_node
from tensorbridge.rules.cntk.base import BATCH_AXIS, NAMES, op, static_shape

#: sequence lengths a selection mask is evaluated at to read which steps it keeps
LENGTHS = range(1, 17)


@dataclass(frozen=True)
class Selection:
    """Steps of a sequence kept by a Where: [start, stop) (negative: counted from the end, None: to the end),
    and whether the sequence axis is dropped (one step per sequence)."""

    start: int
    stop: int | None
    drop: bool


def _sequence(imp, x, what: str):
    if imp.dynamic(x) != 2:
        raise ModelError(f"{what} of a value that is not a sequence")
    return x


def _spread(imp, like, value, dims: list[int]):
    """`value` (a constant or a per-sequence value) spread to (batch, *dims), the batch of `like`."""
    if imp.dynamic(value) == 2:
        raise ModelError("a delay's initial value that is itself a sequence")
    batch = imp.emit("Slice", [imp.emit("Shape", [like], suffix="shape"), imp.ints([0]), imp.ints([1])],
                     suffix="batch")
    shape = imp.emit("Concat", [batch, imp.ints(dims)], {"axis": 0}, suffix="spread_shape")
    return imp.emit("Expand", [value, shape], suffix="spread")


@op("PastValue", "FutureValue", produces=("Concat", "Slice", "Expand", "Shape", "Unsqueeze"))
def delay(imp, f):
    """A delay outside a loop: the sequence shifted by `offset` steps (later for PastValue, earlier for
    FutureValue), the steps shifted in holding the initial value."""
    x, initial = imp.inputs
    offset = int(imp.attrs.get("offset", 1))
    _sequence(imp, x, "a delay")
    if offset < 1:
        raise ModelError(f"a delay by {offset} steps")
    if imp.dynamic(initial) == 1:
        initial = imp.emit("Unsqueeze", [initial, imp.ints([1])], suffix="initial")
    filler = _spread(imp, x, initial, [offset, *static_shape(imp, x)])
    if NAMES[f.op] == "PastValue":  # [fill, x][:L]
        joined = imp.emit("Concat", [filler, x], {"axis": 1}, suffix="shifted")
        return imp.emit("Slice", [joined, imp.ints([0]), imp.ints([-offset]), imp.ints([1])])
    joined = imp.emit("Concat", [x, filler], {"axis": 1}, suffix="shifted")
    return imp.emit("Slice", [joined, imp.ints([offset]), imp.ints([2 ** 62]), imp.ints([1])])


@op("ReconcileDynamicAxis", produces=("Expand", "Shape", "Slice", "Concat"))
def reconcile(imp, f):
    """A value spread over the dynamic axes of another (a constant made a sequence of it)."""
    x, like = imp.inputs
    if imp.dynamic(x) == imp.dynamic(like):
        return x
    if imp.dynamic(x) != 0:
        raise ModelError("ReconcileDynamicAxis of a value with dynamic axes of its own")
    dynamic = imp.dynamic(like)
    lead = imp.emit("Slice", [imp.emit("Shape", [like], suffix="shape"), imp.ints([0]), imp.ints([dynamic])],
                    suffix="dynamic")
    shape = imp.emit("Concat", [lead, imp.ints(list(x.shape))], {"axis": 0}, suffix="spread_shape")
    return imp.result(imp.emit("Expand", [x, shape]), dynamic)


@op("Where", produces=())
def where(imp, f):
    """The steps a mask keeps, read by evaluating the mask (see the module's doc)."""
    (mask,) = imp.inputs
    a = imp.attrs
    axes = a.get("newDynamicAxes") or []
    a.get("newSequenceAxisLengthAdditiveFactor")
    a.get("newSequenceAxisLengthScalingFactor")
    _sequence(imp, mask, "Where")
    if [x.name for x in axes] == [BATCH_AXIS]:
        drop = True
    elif len(axes) == 2 and axes[1].name == BATCH_AXIS:
        drop = False
    else:
        raise ModelError(f"a Where making dynamic axes {[x.name for x in axes]}")
    if len(static_shape(imp, mask)) > 1 or static_shape(imp, mask) not in ((), (1,)):
        raise ModelError("a Where of a mask with several values per step")
    kept = {}
    for length in _lengths(mask):
        steps = np.flatnonzero(np.asarray(_evaluate(mask, length)).reshape(length))
        kept[length] = list(steps)
    return _as_slice(kept, drop)


@op("PackedIndex", produces=())
def packed_index(imp, f):
    x, selection = imp.inputs
    if not isinstance(selection, Selection):
        raise ModelError("a PackedIndex of indices that are not a selection of steps")
    _sequence(imp, x, "PackedIndex")
    return selection


@op("GatherPacked", produces=("Gather", "Slice"))
def gather_packed(imp, f):
    x, selection = imp.inputs
    if not isinstance(selection, Selection):
        raise ModelError("a GatherPacked of indices that are not a selection of steps")
    _sequence(imp, x, "GatherPacked")
    if selection.drop:
        return imp.result(imp.emit("Gather", [x, imp.ints(selection.start)], {"axis": 1}), 1)
    stop = 2 ** 62 if selection.stop is None else selection.stop
    return imp.result(imp.emit("Slice", [x, imp.ints([selection.start]), imp.ints([stop]), imp.ints([1])]), 2)


@op("UnpackSequence", produces=("Expand", "Shape", "Slice"))
def unpack(imp, f):
    """The sequence axis made the first static axis (sequences of one length need no padding); the mask, all
    ones, as its second output."""
    x, *_ = imp.inputs
    a = imp.attrs
    a.get("sequenceUnpackPaddingValue")
    _sequence(imp, x, "UnpackSequence")
    if a.get("sequenceUnpackSuppressMaskOutput", False):
        return imp.result(x, 1)
    lead = imp.emit("Slice", [imp.emit("Shape", [x], suffix="shape"), imp.ints([0]), imp.ints([2])], suffix="steps")
    return [imp.result(x, 1), imp.result(imp.emit("Expand", [imp.const(np.ones((), x.dtype)), lead],
                                                  suffix="mask"), 1)]


# -- selections ----------------------------------------------------------------------------------------------
def _lengths(mask) -> list[int]:
    """The sequence lengths to evaluate a mask at: LENGTHS, or the one length a fixed input shape gives."""
    fixed = mask.shape[1]
    return [fixed] if isinstance(fixed, int) else list(LENGTHS)


def _evaluate(value, length: int) -> np.ndarray:
    """A value computed from the sequence's shape alone, for a sequence of `length` steps and a batch of one; a
    value that depends on the data is a blocker."""
    known: dict[int, np.ndarray] = {}

    def value_of(v):
        if id(v) in known:
            return known[id(v)]
        if v.const is not None:
            return v.const
        node = v.producer
        if node is None:
            raise ModelError("a selection of steps that depends on the data (Where of a computed mask)")
        if node.op == "Shape":
            (source,) = node.inputs
            dims = [1 if i == 0 else length if i == 1 else d for i, d in enumerate(source.shape)]
            if not all(isinstance(d, int) for d in dims):
                raise ModelError("a selection of steps from a value of unknown shape")
            results = run_node(node, [np.zeros(dims, np.float32)])
        else:
            results = run_node(node, [None if i is None else value_of(i) for i in node.inputs])
        for out, r in zip(node.outputs, results):
            known[id(out)] = np.asarray(r)
        return known[id(v)]

    return value_of(value)


def _as_slice(kept: dict[int, list[int]], drop: bool) -> Selection:
    """The slice of steps that keeps `kept[length]` at every length evaluated (ends fixed or counted from the
    end); the lengths too short for the selection (nothing kept) are left out, as CNTK rejects them."""
    runs = {n: steps for n, steps in kept.items() if steps}
    if not runs or any(steps != list(range(steps[0], steps[-1] + 1)) for steps in runs.values()):
        raise ModelError("a selection of steps that is not one run of steps")
    for start in _ends([(n, steps[0]) for n, steps in runs.items()]):
        for stop in _ends([(n, steps[-1] + 1) for n, steps in runs.items()], stop=True):
            chosen = Selection(start, stop, drop)
            if all(_kept(chosen, n) == steps for n, steps in runs.items()):
                if drop and any(len(steps) != 1 for steps in runs.values()):
                    raise ModelError("a selection of one step per sequence that keeps several")
                return chosen
    raise ModelError("a selection of steps that no slice with fixed ends keeps at every length")


def _ends(points: list[tuple[int, int]], stop: bool = False) -> list:
    """The ways to write an end that is at `position` for each (length, position): fixed, or from the end."""
    options = []
    fixed = {p for _, p in points}
    if len(fixed) == 1:
        options.append(fixed.pop())
    back = {p - n for n, p in points}
    if len(back) == 1:
        offset = back.pop()
        options.append(None if stop and offset == 0 else offset)
    return options


def _kept(selection: Selection, length: int) -> list[int]:
    return list(range(length))[slice(selection.start, selection.stop)]


# -- recurrences (the importer finds the loops) -------------------------------------------------------------
def recurrence(imp, group, inside: set[str], delays, backwards: bool) -> None:
    """The functions of one loop through delays (`group`) read as a Scan along the sequence axis: each delay's
    value is a state, the sequences read from outside are scanned, and the values read after the loop are the
    scan's outputs, stacked along the sequence axis."""
    state_of = {}
    for d in delays:
        if int(d.attrs.get("offset", 1)) != 1:
            raise ModelError(f"a recurrence through a delay of {d.attrs.get('offset')} steps (read: 1)")
        made = producer(imp.resolved_inputs(d)[0])
        if made is None or made[0] not in inside:
            raise ModelError("a delay in a loop that delays a value from outside it")
        state_of[d.uid] = imp.resolved_inputs(d)[0]
    outside = []
    for f in group:
        for uid in imp.resolved_inputs(f)[:1 if f.uid in state_of else None]:
            made = producer(uid)
            if (made is None or made[0] not in inside) and uid not in outside and imp.values.get(uid) is not None \
                    and imp.dynamic(imp.values[uid]) == 2:
                outside.append(uid)
    if not outside:
        raise ModelError("a recurrence that reads no sequence")
    results = imp.used_after(inside)
    initial = []
    for d in delays:
        init = imp.values.get(imp.resolved_inputs(d)[1])
        if init is None:
            raise ModelError("a delay whose initial value could not be read")
        imp.b.at(d.name or d.uid, {"framework": "cntk", "source_op": "Recurrence", "source_name": d.name or d.uid})
        initial.append(imp.result(_spread(imp, imp.values[outside[0]], init, list(imp.state_shape(d))), 1))
    saved = {uid: imp.values[uid] for uid in outside}

    def body_reads(*values):
        states, steps = values[:len(delays)], values[len(delays):]
        for d, s in zip(delays, states):
            imp.values[output_uid(d.uid)] = imp.result(s, 1)
        for uid, s in zip(outside, steps):
            imp.values[uid] = imp.result(s, 1)
        imp.read_group(group, inside)
        return [imp.values[state_of[d.uid]] for d in delays] + [imp.values[uid] for uid in results]

    inputs = [(f"state{i}", v.dtype, v.shape) for i, v in enumerate(initial)] + \
        [(f"step{i}", saved[uid].dtype, (saved[uid].shape[0], *saved[uid].shape[2:])) for i, uid in enumerate(outside)]
    try:
        body = imp.subgraph("recurrence", inputs, body_reads)
    finally:
        imp.values.update(saved)
    attrs = {"body": body, "num_scan_inputs": len(outside), "scan_input_axes": [1] * len(outside),
             "scan_output_axes": [1] * len(results)}
    if backwards:
        attrs.update(scan_input_directions=[1] * len(outside), scan_output_directions=[1] * len(results))
    out = imp.emit("Scan", [*initial, *(saved[uid] for uid in outside)], attrs, outputs=len(delays) + len(results))
    out = out if isinstance(out, list) else [out]
    for uid, value in zip(results, out[len(delays):]):
        imp.values[uid] = imp.result(value, 2)
