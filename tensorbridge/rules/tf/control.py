"""TensorFlow GraphDef ops -> IR: functional control flow (While, If) and the tensor lists loops carry.

A While runs its body function while its condition function holds: an IR Loop whose body runs the body, then the
condition on its results (the first test runs the condition once before the loop). An If's branch functions
become the If's branches. A tensor list (TensorArray) is held as one dense tensor whose first axis indexes its
elements. A list reserved with element dims known only at run time (TensorFlow's Keras layers leave the batch
open even in a fixed-batch model) holds size-1 dims there until the first item written broadcasts them out: its
shape then changes inside the loop, which ONNX and PyTorch code carry and the traced targets refuse.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ops.infer import infer_node
from tensorbridge.passes.fold_constants import fold_value
from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.ir_spellings import as_int64
from tensorbridge.rules.tf.base import attr, const_data, dtype_attr, tf_op

#: control-flow ops -> the attributes naming the functions they run (the importer reads those functions too)
FUNCTIONS = {"While": ("cond", "body"), "StatelessWhile": ("cond", "body"), "If": ("then_branch", "else_branch"),
             "StatelessIf": ("then_branch", "else_branch"), "PartitionedCall": ("f",),
             "StatefulPartitionedCall": ("f",)}


def _function(imp, n, key):
    """Function `key` of node `n`, as what imports it into a graph with its arguments bound."""
    return lambda graph, bound: imp.import_function(n.attr[key].func.name, graph, bound)


@tf_op("While", "StatelessWhile", produces="Loop")
def read_while(imp, n, ins):
    outs, results = tf_semantics.while_loop(imp, n.name, ins, [(v.dtype, _open(v)) for v in ins],
                                            _function(imp, n, "cond"), _function(imp, n, "body"))
    if _reserve_as_filled(imp, outs[0].producer, results):
        for out in outs:
            out.shape = None
        infer_node(outs[0].producer)
    for out, outer, result in zip(outs, outs[0].producer.inputs[2:], results):  # what no shape rule gives
        out.dtype = out.dtype or outer.dtype
        if out.shape is None:
            out.shape = outer.shape if result.shape == outer.shape else _open(outer)
    return outs


def _reserve_as_filled(imp, loop, results) -> bool:
    """A list reserved with size-1 stand-ins for dims known only at run time, which the body's first write
    broadcasts to static sizes (a fixed batch): reserved at those sizes from the start when the loop surely runs
    (its first test is constant true), so the loop keeps its shapes and the traced targets take it. Whether any
    was."""
    if fold_value(loop.inputs[1]) is None or not bool(np.asarray(fold_value(loop.inputs[1])).ravel()[0]):
        return False
    widened = False
    for i, (start, result) in enumerate(zip(loop.inputs[2:], results)):
        fill = start.producer
        if fill is None or fill.op != "ConstantOfShape" or start.shape is None or result.shape is None or \
                len(start.shape) != len(result.shape) or not all(isinstance(d, int) for d in result.shape) or \
                tuple(start.shape) == tuple(result.shape) or \
                any(a not in (1, b) for a, b in zip(start.shape, result.shape)):
            continue
        filled = imp.emit("ConstantOfShape", [imp.const(list(result.shape))], dict(fill.attrs), suffix="filled")
        imp.graph.nodes.remove(filled.producer)  # computed before the loop that reads it
        imp.graph.nodes.insert(imp.graph.nodes.index(loop), filled.producer)
        loop.set_input(2 + i, filled)
        widened = True
    return widened


def _open(v):
    """A carried value's shape in the body: what a first item may broadcast (a size-1 dim of a list) is open."""
    if v.shape is None or v.producer is None or v.producer.op != "ConstantOfShape":
        return v.shape
    return (v.shape[0],) + tuple(None if d == 1 else d for d in v.shape[1:])


@tf_op("PartitionedCall", "StatefulPartitionedCall", produces=())
def read_call(imp, n, ins):
    """A call of a function the freezing left in place (a Keras layer's own tf.function): its ops, inlined."""
    return imp.import_function(n.attr["f"].func.name, imp.graph, list(ins))


@tf_op("If", "StatelessIf", produces="If")
def read_if(imp, n, ins):
    cond, args = ins[0], list(ins[1:])
    if cond.dtype != np.bool_:
        cond = imp.emit("Cast", [cond], {"to": "bool"}, suffix="truth")
    outs = tf_semantics.if_else(imp, n.name, n.name, cond, args, _function(imp, n, "then_branch"),
                                _function(imp, n, "else_branch"))
    node = outs[0].producer
    for out, then_out, else_out in zip(outs, node.attrs["then_branch"].outputs, node.attrs["else_branch"].outputs):
        out.dtype = out.dtype or then_out.dtype  # what no shape rule gives an If's results
        if out.shape is None and then_out.shape == else_out.shape:
            out.shape = then_out.shape
    return outs


# -- tensor lists ---------------------------------------------------------------------------------------------
@tf_op("TensorListFromTensor", produces=())
def read_list_from_tensor(imp, n, ins):
    return imp.emit("Identity", ins[:1])


@tf_op("TensorListReserve", produces="ConstantOfShape")
def read_list_reserve(imp, n, ins):
    """Zeros for `num_elements` items (a count known only at run time too); an element dim known only at run time
    is 1 until an item fills it."""
    element = [int(d) for d in np.atleast_1d(const_data(ins[0], "the element shape"))]
    dims = [1 if d < 0 else d for d in element]
    dtype = {"value": np.zeros(1, dtype_attr(n, "element_dtype"))}
    count = fold_value(ins[1])
    if count is not None:
        if int(count) < 0:
            raise ModelError(f"{n.name}: a tensor list of {int(count)} elements")
        return imp.emit("ConstantOfShape", [imp.const([int(count)] + dims)], dtype)
    count = imp.emit("Reshape", [as_int64(imp, ins[1], "index"), imp.const([1])], suffix="count")
    return imp.emit("ConstantOfShape", [imp.emit("Concat", [count, imp.const(dims)], {"axis": 0}, suffix="shape")],
                    dtype)


@tf_op("TensorListGetItem", produces="Gather")
def read_list_get_item(imp, n, ins):
    return imp.emit("Gather", [ins[0], as_int64(imp, ins[1], "index")], {"axis": 0})


@tf_op("TensorListSetItem", produces="ScatterND")
def read_list_set_item(imp, n, ins):
    """The list with item `index` replaced; size-1 element dims take the item's, and a list reserved with elements of
    unknown rank (keras_hub's RWKV-7 fills one in a Python loop) the item's rank."""
    items, index, item = ins[:3]
    if items.shape is not None and item.shape is not None and len(items.shape) != 1 + len(item.shape) and \
            all(d == 1 for d in items.shape[1:]):  # a list reserved with elements of unknown rank (ones until now)
        items = imp.emit("Reshape", [items, imp.const([0] + [1] * len(item.shape))], suffix="rank")
    known = items.shape is not None and item.shape is not None and all(
        isinstance(d, int) for d in (*items.shape[1:], *item.shape))
    if not known or tuple(items.shape[1:]) != tuple(item.shape):
        count = imp.emit("Slice", [imp.emit("Shape", [items], suffix="shape"), imp.const([0]), imp.const([1])],
                         suffix="count")
        full = imp.emit("Concat", [count, imp.emit("Shape", [item], suffix="item_shape")], {"axis": 0},
                        suffix="full")
        items = imp.emit("Expand", [items, full], suffix="spread")
    where = imp.emit("Reshape", [as_int64(imp, index, "index"), imp.const([1, 1])], suffix="where")
    return imp.emit("ScatterND", [items, where, imp.emit("Unsqueeze", [item, imp.const([0])], suffix="row")])


@tf_op("TensorListStack", produces=())
def read_list_stack(imp, n, ins):
    if attr(n, "num_elements", -1) not in (-1, None) and ins[0].shape is not None and \
            isinstance(ins[0].shape[0], int) and attr(n, "num_elements") != ins[0].shape[0]:
        raise ModelError(f"{n.name}: a stack of {attr(n, 'num_elements')} elements from a list of {ins[0].shape[0]}")
    return imp.emit("Identity", ins[:1])


@tf_op("TensorListLength", produces="Shape")
def read_list_length(imp, n, ins):
    length = imp.emit("Slice", [imp.emit("Shape", ins[:1], suffix="shape"), imp.const([0]), imp.const([1])],
                      suffix="length")
    return imp.emit("Cast", [imp.emit("Reshape", [length, imp.const(np.zeros(0, np.int64))], suffix="scalar")],
                    {"to": "int32"})


# -- TF1 control flow in frozen graphs (frontends/tf/frames.py marks the dead branches) ----------------------------
@tf_op("Switch", produces=())
def read_switch(imp, n, ins):
    """The data on the output the constant predicate takes (the other output is dead and never read)."""
    out = [None, None]
    out[imp.frames.taken(n)] = imp.emit("Identity", ins[:1])
    return out


@tf_op("Merge", produces=())
def read_merge(imp, n, ins):
    """The one live input (the importer passes only it) and its position among the Merge's inputs."""
    data = [i for i in n.input if not i.startswith("^")]
    live = [k for k, ref in enumerate(data) if not imp.frames.dead(ref)]
    if len(ins) != 1 or len(live) != 1:
        raise ModelError(f"{n.name}: a Merge with {len(live)} live inputs (one is read)")
    return [imp.emit("Identity", ins), imp.const(np.int32(live[0]), np.int32)]


@tf_op("PlaceholderWithDefault", produces=())
def read_placeholder_with_default(imp, n, ins):
    """Its default: a frozen graph's switch (`is_training`) is read as it runs when nothing is fed."""
    return imp.emit("Identity", ins[:1])
