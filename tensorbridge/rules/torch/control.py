"""PyTorch code for control flow: If as `torch.cond`, which runs eagerly and exports (`.pt2`) alike.

Each branch becomes a nested function of `forward` (`CodeEmitter.function`) reading the enclosing values as
a closure; torch.cond traces both, so their outputs must keep one shape and type (refused otherwise).
"""

from __future__ import annotations

from tensorbridge.codegen import pyast as P
from tensorbridge.ops.control import branches_blocker
from tensorbridge.rules.torch.base import R


@R.exports("If", check=branches_blocker)
def write_if(em, node):
    branches = [P.name(em.function(node.attrs[key], f"{node.name}_{key}")) for key in ("then_branch", "else_branch")]
    chosen = P.call("torch.cond", P.method(em.tensor(node.inputs[0]), "reshape", ()), *branches)
    if len(node.outputs) == 1:
        em.out(node, P.subscript(chosen, 0))
    else:
        em.outs(node, chosen, len(node.outputs))
