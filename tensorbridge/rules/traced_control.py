"""Control-flow writers shared by the code generators whose frameworks trace control flow into one computation
(Flax: jax.lax, Keras: keras.ops): If as a `cond` of two nested functions, Scan as a `scan` over the first axis.
What the traced forms cannot take is said by `ops.control`'s checks (branches_blocker, traced_scan_blocker)."""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P


def write_cond(em, node, cond: str, reshape: str) -> None:
    """`cond(reshape(flag, ()), then_branch, else_branch)`, each branch a nested function of the code."""
    branches = [P.name(em.function(node.attrs[key], f"{node.name}_{key}")) for key in ("then_branch", "else_branch")]
    chosen = P.call(cond, P.call(reshape, em.tensor(node.inputs[0]), ()), *branches)
    em.outs(node, chosen, len(node.outputs))


def write_scan(em, node, scan: str) -> None:
    """`scan(step, state, slices)` over the scan inputs' first axis: the step takes (state, slices) and returns
    (state, outputs); the final state and the stacked outputs are the node's outputs."""
    a = node.attrs
    n_state = len(node.inputs) - a["num_scan_inputs"]
    body = em.function(a["body"], f"{node.name}_body")
    step = em.namer.name(f"{node.name}_step", "step")
    out = P.name("out")
    em.body.append(P.function(step, ["state", "slices"], [
        P.assign(["out"], P.call(body, ast.Starred(P.name("state"), ast.Load()),
                                 ast.Starred(P.name("slices"), ast.Load()))),
        P.ret(ast.Tuple([P.subscript(out, P.slice_(None, n_state)), P.subscript(out, P.slice_(n_state))],
                        ast.Load()))]))
    reverse = {"reverse": True} if any(a.get("scan_input_directions") or ()) else {}
    state, slices = (ast.Tuple([em.tensor(v) for v in vs], ast.Load())
                     for vs in (node.inputs[:n_state], node.inputs[n_state:]))
    final, stacked = (em.namer.name(f"{node.name}_{tag}", tag) for tag in ("final", "stacked"))
    em.body.append(P.assign([final, stacked], P.call(scan, P.name(step), state, slices, **reverse)))
    em.outs(node, P.binop(P.name(final), "+", P.name(stacked)), len(node.outputs))
