"""PyTorch control flow: `torch.cond` (in exported programs, and what TorchScript's converter makes of a scripted
`if`) reads as If. PyTorch code writes If as `torch.cond`, which runs eagerly and exports (`.pt2`) alike, and a
Loop as a Python `while` loop (PyTorch code only: `torch.export` has no public loop, so `.pt2` refuses it).

Each body becomes a nested function of `forward` (`CodeEmitter.function`) reading the enclosing values as
a closure; torch.cond traces both branches, so their outputs must keep one shape and type (refused otherwise).
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.ir import dtypes
from tensorbridge.ops.control import branches_blocker
from tensorbridge.rules.torch.base import TORCH_DTYPES, R, higher_order


@higher_order("cond", produces="If")
def read_cond(imp, node, pred, true_fn, false_fn, operands, *_):
    """The branches' graphs become If branches reading the operands from the enclosing graph."""
    args = [imp.value(v) for v in operands]
    branches = {key: imp.branch(fn, key, args) for key, fn in (("then_branch", true_fn), ("else_branch", false_fn))}
    outputs = imp.build.node("If", [imp.value(pred)], branches, len(branches["then_branch"].outputs)).outputs
    return [imp.typed(out, val) for out, val in zip(outputs, imp.meta())]


@R.exports("If", check=branches_blocker)
def write_if(em, node):
    branches = []
    for key in ("then_branch", "else_branch"):
        branches.append(P.name(em.function(node.attrs[key], f"{node.name}_{key}")))
        _fresh_results(em.body[-1])
    chosen = P.call("torch.cond", P.method(em.tensor(node.inputs[0]), "reshape", ()), *branches)
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
    """What `.pt2` cannot hold of what PyTorch code writes: a Loop (torch.export traces a Python loop instead of
    keeping it, and torch's while_loop is private API; a Loop of constant trip count is unrolled instead), a
    window of a computed size (decomposed instead), NMS's data-dependent loop."""
    if node.op == "Loop":
        return "torch.export keeps no loop (PyTorch code, --to torch, writes it as a Python while loop)"
    if node.op == "NonMaxSuppression":
        return "torch.export cannot trace the selection loop, whose steps depend on the scores (PyTorch code, " \
               "--to torch, writes it as a Python loop)"
    if node.op == "MelWeightMatrix":  # a constant one is folded before code is written
        return "torch.export cannot size a tensor by its inputs' values (PyTorch code, --to torch, computes it)"
    if node.op.endswith("Window") and node.inputs[0].const is None:
        return "torch.export cannot trace torch's window functions on a computed size (they take an int)"
    return R.blocker(node)


@R.exports("Loop")
def write_loop(em, node):
    """A Python `while` loop, as a person writes one in `forward`: eager PyTorch runs any trip count, and the
    carried values may change shape from one iteration to the next. Scan outputs are stacked after it."""
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
