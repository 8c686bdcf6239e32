"""Flax code for control flow: If as `jax.lax.cond`, Loop as `jax.lax.while_loop`, Scan as `jax.lax.scan`.

Each body becomes a nested function of `__call__` (`CodeEmitter.function`) reading the enclosing values as
a closure. JAX traces both branches and the loop body once, so their values must keep one shape and type;
what differs is refused with the reason (a Loop with a constant trip count and scan outputs, or a Scan of
a static length, is then unrolled).
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.ops.control import branches_blocker, values_alike
from tensorbridge.rules.flax.base import R


@R.exports("If", check=branches_blocker)
def write_if(em, node):
    branches = [P.name(em.function(node.attrs[key], f"{node.name}_{key}")) for key in ("then_branch", "else_branch")]
    chosen = P.call("jax.lax.cond", P.call("jnp.reshape", em.tensor(node.inputs[0]), ()), *branches)
    if len(node.outputs) == 1:
        em.out(node, P.subscript(chosen, 0))
    else:
        em.outs(node, chosen, len(node.outputs))


def _loop_blocker(node) -> str | None:
    body = node.attrs["body"]
    carried = len(node.inputs) - 2
    if len(body.outputs) != 1 + carried:
        return "a Loop with scan outputs and no constant trip count (jax.lax.while_loop only carries values)"
    if not values_alike(body.inputs[2:], body.outputs[1:]):
        return "values the loop carries with a changing shape or type (jax.lax.while_loop keeps them)"
    return None


@R.exports("Loop", check=_loop_blocker)
def write_loop(em, node):
    """state = (iteration, go on, *carried): the test reads the first two, a step runs the body once."""
    trips, flag = node.input(0), node.input(1)
    body = em.function(node.attrs["body"], f"{node.name}_body")
    state = P.name("state")
    going = P.call("jnp.reshape", P.subscript(state, 1), ())
    if trips is not None:
        going = P.call("jnp.logical_and", going, P.binop(P.subscript(state, 0), "<", em.tensor(trips)))
    test, step = (em.namer.name(f"{node.name}_{tag}", tag) for tag in ("test", "step"))
    em.body.append(P.function(test, ["state"], [P.ret(going)]))
    stepped = ast.Tuple([P.binop(P.subscript(state, 0), "+", 1),
                         ast.Starred(P.call(body, ast.Starred(state, ast.Load())), ast.Load())], ast.Load())
    em.body.append(P.function(step, ["state"], [P.ret(stepped)]))
    start = [P.call("jnp.array", 0, dtype=P.name("jnp.int32")),
             em.tensor(flag) if flag is not None else P.call("jnp.array", True),
             *(em.tensor(v) for v in node.inputs[2:])]
    final = P.call("jax.lax.while_loop", P.name(test), P.name(step), ast.Tuple(start, ast.Load()))
    em.outs(node, final, len(node.outputs), discarded=2)


def _scan_blocker(node) -> str | None:
    a = node.attrs
    n_scan = a["num_scan_inputs"]
    n_state = len(node.inputs) - n_scan
    n_out = len(a["body"].outputs) - n_state
    axes = (a.get("scan_input_axes") or [0] * n_scan) + (a.get("scan_output_axes") or [0] * n_out)
    directions = set((a.get("scan_input_directions") or [0] * n_scan) + (a.get("scan_output_directions") or
                                                                         [0] * n_out))
    if any(axis != 0 for axis in axes) or len(directions) > 1 or not n_scan:
        return "a Scan over other axes than the first, or with mixed directions (jax.lax.scan takes one)"
    if not values_alike(a["body"].inputs[:n_state], a["body"].outputs[:n_state]):
        return "state whose shape or type changes from step to step (jax.lax.scan keeps it)"
    return None


@R.exports("Scan", check=_scan_blocker)
def write_scan(em, node):
    """jax.lax.scan over the scan inputs' first axis: the step takes (state, slices) and returns (state, outputs)."""
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
    em.body.append(P.assign([final, stacked], P.call("jax.lax.scan", P.name(step), state, slices, **reverse)))
    em.outs(node, P.binop(P.name(final), "+", P.name(stacked)), len(node.outputs))
