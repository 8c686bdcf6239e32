"""TFLite <-> IR: IF and WHILE, with their subgraphs.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ops.control import computed_in
from tensorbridge.rules.tflite.base import builtin


def _body(imp, graph, index, bound) -> list:
    """Subgraph `index` imported into `graph` with its inputs bound; every output produced inside it."""
    outs = imp.import_subgraph(index, graph, bound)
    return [computed_in(graph, v, f"{graph.name}.out{i}") for i, v in enumerate(outs)]


@builtin("IF", produces="If")
def read_if(imp, ins, opts):
    """IF: both branch subgraphs become If branches that read the operands from the enclosing graph."""
    cond, args = ins[0], ins[1:]
    base = imp.tensor_name(int(imp.op.OutputsAsNumpy()[0]))
    branches = {}
    for key, index in (("then_branch", opts.ThenSubgraphIndex()), ("else_branch", opts.ElseSubgraphIndex())):
        g = imp.graph.subgraph(f"{base}.{key.split('_')[0]}")
        g.outputs = _body(imp, g, index, args)
        branches[key] = g
    n = len(branches["then_branch"].outputs)
    if len(branches["else_branch"].outputs) != n:
        raise ModelError(f"IF {base!r}: its branches return {n} and {len(branches['else_branch'].outputs)} values")
    return imp.emit("If", [cond], branches, outputs=n)


@builtin("WHILE", produces="Loop")
def read_while(imp, ins, opts):
    """WHILE: a Loop whose body runs the body subgraph, then the condition subgraph on its results; the
    first test runs the condition subgraph once before the loop."""
    base = imp.tensor_name(int(imp.op.OutputsAsNumpy()[0]))
    cond_index, body_index = opts.CondSubgraphIndex(), opts.BodySubgraphIndex()
    first, = imp.import_subgraph(cond_index, imp.graph, list(ins))
    body = imp.graph.subgraph(f"{base}.body")
    body.add_input(f"{base}.iteration", np.dtype(np.int64), ())
    body.add_input(f"{base}.cond", np.dtype(np.bool_), ())
    carried = [body.add_input(f"{base}.carried{i}", dt, shape)
               for i, (dt, shape) in enumerate(imp.input_types(body_index))]
    results = _body(imp, body, body_index, carried)
    again, = _body(imp, body, cond_index, results)
    body.outputs = [again] + results
    return imp.emit("Loop", [None, first, *ins], {"body": body}, outputs=len(ins))
