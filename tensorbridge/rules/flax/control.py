"""Flax code for control flow: If as `jax.lax.cond`, Loop as `jax.lax.while_loop`.

Each body becomes a nested function of `__call__` (`CodeEmitter.function`) reading the enclosing values as
a closure. JAX traces both branches and the loop body once, so their values must keep one shape and type;
what differs is refused with the reason (a Loop with a constant trip count and scan outputs is unrolled).
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.flax.base import R


def _same_types(a: list, b: list) -> bool:
    return all(x.shape is not None and y.shape is not None and tuple(x.shape) == tuple(y.shape) and x.dtype == y.dtype
               for x, y in zip(a, b))


def _if_blocker(node) -> str | None:
    if not _same_types(node.attrs["then_branch"].outputs, node.attrs["else_branch"].outputs):
        return "branches whose outputs differ in shape or type (jax.lax.cond needs them alike)"
    return None


@R.exports("If", check=_if_blocker)
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
    if not _same_types(body.inputs[2:], body.outputs[1:]):
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
