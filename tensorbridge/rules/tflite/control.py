"""TFLite <-> IR: IF and WHILE, with their subgraphs.

Each IR op's import converter (builtin operator -> IR) and its integer kernel (IR -> int8 builtin, for
quantized graphs; float graphs go through the Keras registry and TensorFlow's converter) sit together.
"""

from __future__ import annotations

from tensorbridge.rules import tensorflow_semantics as tf_semantics
from tensorbridge.rules.tflite.base import builtin


def _subgraph(imp, index):
    """Subgraph `index`, as what imports it into a graph with its inputs bound."""
    return lambda graph, bound: imp.import_subgraph(index, graph, bound)


@builtin("IF", produces="If")
def read_if(imp, ins, opts):
    """IF: both branch subgraphs become If branches that read the operands from the enclosing graph."""
    cond, args = ins[0], ins[1:]
    base = imp.tensor_name(int(imp.op.OutputsAsNumpy()[0]))
    return tf_semantics.if_else(imp, base, f"IF {base!r}", cond, args, _subgraph(imp, opts.ThenSubgraphIndex()),
                                _subgraph(imp, opts.ElseSubgraphIndex()))


@builtin("WHILE", produces="Loop")
def read_while(imp, ins, opts):
    """WHILE: a Loop whose body runs the body subgraph, then the condition subgraph on its results; the
    first test runs the condition subgraph once before the loop."""
    base = imp.tensor_name(int(imp.op.OutputsAsNumpy()[0]))
    body_index = opts.BodySubgraphIndex()
    outs, _ = tf_semantics.while_loop(imp, base, ins, imp.input_types(body_index),
                                      _subgraph(imp, opts.CondSubgraphIndex()), _subgraph(imp, body_index))
    return outs
