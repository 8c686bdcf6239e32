"""Flax code for control flow: If as `jax.lax.cond`, Loop as `jax.lax.while_loop`, Scan as `jax.lax.scan`.

Each body becomes a nested function of `__call__` (`CodeEmitter.function`) reading the enclosing values as
a closure. JAX traces both branches and the loop body once, so their values must keep one shape and type;
what differs is refused with the reason (a Loop with a constant trip count and scan outputs, or a Scan of
a static length, is then unrolled).
"""

from __future__ import annotations

import ast

from tensorbridge.codegen import pyast as P
from tensorbridge.ops.control import branches_blocker, traced_loop_blocker, traced_scan_blocker
from tensorbridge.rules import traced_control
from tensorbridge.rules.flax.base import R


@R.exports("If", check=branches_blocker)
def write_if(em, node):
    traced_control.write_cond(em, node, "jax.lax.cond", "jnp.reshape")


@R.exports("Loop", check=traced_loop_blocker)
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


@R.exports("Scan", check=traced_scan_blocker)
def write_scan(em, node):
    """jax.lax.scan over the scan inputs' first axis."""
    traced_control.write_scan(em, node, "jax.lax.scan")
