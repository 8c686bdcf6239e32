"""PyTorch control flow: `torch.cond` (in exported programs, and what TorchScript's converter makes of a scripted
`if`) reads as If, `torch.while_loop` as Loop. PyTorch code writes If as `torch.cond`, which runs eagerly and
exports (`.pt2`) alike, and a Loop as a Python `while` loop, as a person writes one; code for `.pt2` writes it as
`torch.while_loop` (torch.export traces a Python loop away), its scan outputs rows of a buffer sized by the trip
count, cut to the steps run.

Each body becomes a nested function of `forward` (`CodeEmitter.function`) reading the enclosing values as
a closure; torch.cond traces both branches, so their outputs must keep one shape and type: where they do not, eager
code calls one branch in a Python conditional and `.pt2` refuses the If.
"""

from __future__ import annotations

import ast

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.ir import dtypes
from tensorbridge.ops.control import branches_blocker, computed_in
from tensorbridge.rules.torch.base import TORCH_DTYPES, R, higher_order
from tensorbridge.rules.torch.vision import exported_blocker as nms_exported_blocker


@higher_order("cond", produces="If")
def read_cond(imp, node, pred, true_fn, false_fn, operands, *_):
    """The branches' graphs become If branches reading the operands from the enclosing graph."""
    args = [imp.value(v) for v in operands]
    branches = {key: imp.branch(fn, key, args) for key, fn in (("then_branch", true_fn), ("else_branch", false_fn))}
    outputs = imp.build.node("If", [imp.value(pred)], branches, len(branches["then_branch"].outputs)).outputs
    return [imp.typed(out, val) for out, val in zip(outputs, imp.meta())]


@R.exports("If")
def write_if(em, node):
    """`torch.cond` where the branches give alike results (eager and exported code alike); otherwise, in eager
    code, a Python conditional calling one branch (eager PyTorch takes results of any shape from either)."""
    traced = branches_blocker(node) is None
    branches = []
    for key in ("then_branch", "else_branch"):
        branches.append(P.name(em.function(node.attrs[key], f"{node.name}_{key}")))
        if traced:
            _fresh_results(em.body[-1])
    cond = P.method(em.tensor(node.inputs[0]), "reshape", ())
    chosen = P.call("torch.cond", cond, *branches) if traced else \
        ast.IfExp(P.call("bool", cond), P.call(branches[0]), P.call(branches[1]))
    em.outs(node, chosen, len(node.outputs))


def _fresh_results(branch: ast.FunctionDef) -> None:
    """torch.cond's branches may not return a tensor they did not compute (an enclosing value, a parameter of
    the branch, a module buffer): those are returned as copies."""
    computed = {n.id for n in ast.walk(branch) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def handed_on(e: ast.expr) -> bool:
        return isinstance(e, ast.Attribute) or isinstance(e, ast.Name) and e.id not in computed

    returned = branch.body[-1].value
    returned.elts = [P.method(e, "clone") if handed_on(e) else e for e in returned.elts]


def exported_blocker(node) -> str | None:
    """What `.pt2` cannot hold of what PyTorch code writes: a Loop torch.while_loop cannot carry, a window of a
    computed size (decomposed instead), NMS over a run-time number of images or classes."""
    if node.op == "Loop":
        return _while_loop_blocker(node) or R.blocker(node)
    if node.op == "If":
        return branches_blocker(node) or R.blocker(node)
    if node.op == "NonMaxSuppression":
        return nms_exported_blocker(node) or R.blocker(node)
    if node.op == "MelWeightMatrix":  # a constant one is folded before code is written
        return "torch.export cannot size a tensor by its inputs' values (PyTorch code, --to torch, computes it)"
    if node.op.endswith("Window") and node.inputs[0].const is None:
        return "torch.export cannot trace torch's window functions on a computed size (they take an int)"
    return R.blocker(node)


def _while_loop_blocker(node) -> str | None:
    """Why torch.while_loop cannot hold a Loop: it carries values of one shape and type from step to step, and a
    scan output needs a buffer sized by a trip count and a step of known shape."""
    body = node.attrs["body"]
    n_carried = len(node.inputs) - 2
    for start, after in zip(node.inputs[2:], body.outputs[1:1 + n_carried]):
        if not _alike(start, after):
            return "torch.while_loop carries values of one shape and type, and this Loop's may change from step " \
                   "to step (PyTorch code, --to torch, writes it as a Python while loop)"
    scanned = body.outputs[1 + n_carried:]
    if scanned and node.input(0) is None:
        return "a Loop with scan outputs and no count of steps fixed before it starts (torch.while_loop carries " \
               "values of one shape; PyTorch code, --to torch, writes it as a Python while loop)"
    if any(_step_shape(node, v) is None for v in scanned):
        return "a scan output whose step has run-time dims (PyTorch code, --to torch, stacks it)"
    trips = node.input(0)
    if scanned and trips is not None and trips.const is not None and int(np.asarray(trips.const).max()) >= 2 ** 31:
        return "a scan output of a Loop whose trip count is unbounded (its buffer would be sized by it; PyTorch " \
               "code, --to torch, stacks the steps run)"
    return None


def _step_shape(loop, item) -> tuple | None:
    """The static shape of a scan output's step: its own, or where the IR does not know it (a dynamic slice in the
    body), that of the carried value it is (through Identity), which keeps the shape the loop starts from."""
    if item.shape is not None and all(isinstance(d, int) for d in item.shape):
        return tuple(item.shape)
    while item.producer is not None and item.producer.op == "Identity":
        item = item.producer.inputs[0]
    body, n_carried = loop.attrs["body"], len(loop.inputs) - 2
    for start, after in zip(loop.inputs[2:], body.outputs[1:1 + n_carried]):
        if after is item and start.shape is not None and all(isinstance(d, int) for d in start.shape):
            return tuple(start.shape)
    return None


def _alike(a, b) -> bool:
    """Whether two values may be of one shape and type (dims unknown to the IR are torch.export's to check)."""
    if a.dtype != b.dtype or a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return False
    return all(x == y or not isinstance(x, int) or not isinstance(y, int) for x, y in zip(a.shape, b.shape))


@R.exports("Loop")
def write_loop(em, node):
    """A Python `while` loop, as a person writes one in `forward`: eager PyTorch runs any trip count, and the
    carried values may change shape from one iteration to the next. Scan outputs are stacked after it. In code for
    torch.export, `torch.while_loop` (`_write_while_loop`)."""
    if em.exported:
        _write_while_loop(em, node)
        return
    trips, flag = node.input(0), node.input(1)
    n_carried = len(node.inputs) - 2
    body_graph = node.attrs["body"]
    body = em.function(body_graph, f"{node.name}_body")
    carried = [em.local(v) for v in node.outputs[:n_carried]]
    scanned = node.outputs[n_carried:]
    steps = [em.namer.name(f"{v.name}_steps", "steps") for v in scanned]
    items = [em.namer.name(f"{v.name}_step", "step") for v in scanned]
    counted = trips is not None or body_graph.inputs[0].uses()  # else the iteration number is not read
    index, going = (em.namer.name(f"{node.name}_{tag}", tag) for tag in ("index", "going"))
    for name, v in zip(carried, node.inputs[2:]):
        em.body.append(P.assign([name], em.tensor(v)))
    em.body.append(P.assign([going], em.tensor(flag) if flag is not None else P.lit(True)))
    em.body += [P.assign([index], P.lit(0))] if counted else []
    em.body += [P.assign([s], ast.List([], ast.Load())) for s in steps]
    test = P.name(going) if trips is None else \
        ast.BoolOp(ast.And(), [P.name(going), ast.Compare(P.name(index), [ast.Lt()], [em.arg(trips)])])
    iteration = P.call("torch.tensor", P.name(index)) if counted else P.lit(None)
    once = [P.assign([going, *carried, *items], P.call(body, iteration, P.name(going), *map(P.name, carried)))]
    once += [P.expr_stmt(P.method(P.name(s), "append", P.name(item))) for s, item in zip(steps, items)]
    once += [ast.AugAssign(ast.Name(index, ast.Store()), ast.Add(), P.lit(1))] if counted else []
    em.body.append(ast.While(test, once, []))
    for v, name in zip(node.outputs, carried):
        em.var[id(v)] = P.name(name)
    for i, (s, step) in enumerate(zip(steps, body_graph.outputs[1 + n_carried:])):
        em.out(node, _stacked(s, step), n_carried + i)


def _stacked(steps: str, step) -> ast.expr:
    """The scan output collected in list `steps`, one `step` value per iteration; where the step's shape is static,
    an empty tensor of that shape when no iteration ran."""
    stacked = P.call("torch.stack", P.name(steps))
    if step.shape is None or not all(isinstance(d, int) for d in step.shape):
        return stacked
    empty = P.call("torch.empty", ast.Tuple([P.lit(0), *map(P.lit, step.shape)], ast.Load()),
                   dtype=P.name(TORCH_DTYPES[dtypes.name(step.dtype)]))
    return ast.IfExp(P.name(steps), stacked, empty)


def _write_while_loop(em, node):
    """`torch.while_loop` over (step index, going, *carried, *buffers): the test reads the going flag and the trip
    count, the step runs the body, and each scan output's item is written into its buffer's row (a buffer of
    trip-count rows, made before the loop); after it, the buffers are cut to the steps run."""
    trips, flag = node.input(0), node.input(1)
    n_carried = len(node.inputs) - 2
    body_graph = node.attrs["body"]
    body = em.function(body_graph, f"{node.name}_body")
    _fresh_results(em.body[-1])  # torch.while_loop's body may not hand on an input as it is
    scanned = body_graph.outputs[1 + n_carried:]
    name = lambda hint, fallback: em.namer.name(f"{node.name}_{hint}", fallback)  # noqa: E731
    index, going, test_fn, step_fn = (name(tag, tag) for tag in ("index", "going", "test", "step"))
    carried = [name(f"carried{i}", "carried") for i in range(n_carried)]
    buffers = [name(f"steps{i}", "steps") for i in range(len(scanned))]
    items = [name(f"step{i}", "step") for i in range(len(scanned))]
    state = [index, going, *carried, *buffers]
    limit = P.method(em.tensor(trips), "reshape", ()) if trips is not None else None
    if scanned:
        rows = name("rows", "rows")
        em.body += [P.assign([rows], P.method(limit, "item")),
                    P.expr_stmt(P.call("torch._check", P.binop(P.name(rows), ">=", 0)))]
    test = P.method(P.name(going), "clone") if limit is None else \
        ast.BinOp(P.name(going), ast.BitAnd(), P.binop(P.name(index), "<", limit))  # (the test may not return an input)
    em.body.append(P.function(test_fn, state, [P.ret(test)]))
    step = [P.assign([going, *carried, *items], P.call(body, P.name(index), P.name(going), *map(P.name, carried)))]
    written = [P.method(P.name(b), "index_copy", 0, P.method(P.name(index), "reshape", 1),
                        P.method(P.name(item), "unsqueeze", 0)) for b, item in zip(buffers, items)]
    step.append(P.ret(ast.Tuple([P.binop(P.name(index), "+", P.lit(1)), P.method(P.name(going), "reshape", ()),
                                 *map(P.name, carried), *written], ast.Load())))
    em.body.append(P.function(step_fn, state, step))
    start = [P.call("torch.tensor", 0),
             P.method(em.tensor(flag), "reshape", ()) if flag is not None else P.call("torch.tensor", True),
             *(em.tensor(v) for v in node.inputs[2:]),
             *(P.call("torch.zeros", ast.Tuple([P.name(rows), *map(P.lit, _step_shape(node, v))], ast.Load()),
                      dtype=P.name(TORCH_DTYPES[dtypes.name(v.dtype)])) for v in scanned)]
    em.body.append(P.assign(state, P.call("torch.while_loop", P.name(test_fn), P.name(step_fn),
                                          ast.Tuple(start, ast.Load()))))
    for v, ident in zip(node.outputs, carried):
        em.var[id(v)] = P.name(ident)
    if scanned:
        ran = name("ran", "ran")
        em.body += [P.assign([ran], P.method(P.name(index), "item")),
                    P.expr_stmt(P.call("torch._check", P.binop(P.name(ran), "<=", P.name(rows))))]
        for i, b in enumerate(buffers):
            em.out(node, P.subscript(P.name(b), P.slice_(None, P.name(ran))), n_carried + i)


@higher_order("while_loop", produces="Loop")
def read_while_loop(imp, node, cond_fn, body_fn, carried, additional=()):
    """torch.while_loop as a Loop without a trip count: the test run on the values the loop starts from gives its
    first condition, and the body is the step followed by the test on what the step gives."""
    start, extra = [imp.value(v) for v in carried], [imp.value(v) for v in additional]
    going = imp.inline(cond_fn, start + extra)[0]
    body = imp.graph.subgraph(f"{imp.name()}.body")
    with imp.inside(body):
        body.add_input(f"{body.name}.iteration", np.dtype(np.int64), ())
        body.add_input(f"{body.name}.going", np.dtype(bool), ())
        params = [body.add_input(f"{body.name}.carried{i}", v.dtype, v.shape) for i, v in enumerate(start)]
        stepped = imp.inline(body_fn, params + extra)
        test = imp.inline(cond_fn, stepped + extra)[0]
        body.outputs = [computed_in(body, v, f"{body.name}.out") for v in (test, *stepped)]
    outputs = imp.build.node("Loop", [None, going, *start], {"body": body}, len(start)).outputs
    return [imp.typed(out, val) for out, val in zip(outputs, imp.meta())]
