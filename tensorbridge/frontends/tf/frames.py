"""TF1 control flow in frozen graphs: `tf.cond` written as Switch / Merge, as graphs made before TensorFlow 2 hold
it (a batch norm switched by an `is_training` placeholder with a default, say).

Where a Switch's predicate is a constant (a Const, or a PlaceholderWithDefault's default, through Identity ops)
the branch it does not take is dead, as TensorFlow's executor marks it: an op with a dead input, data or control,
is dead, and a Merge passes on its one live input. Dead ops are not read. A Switch whose predicate is known only
at run time is refused with the reason (a SavedModel keeps tf.cond as a functional If, which is read).
"""

from __future__ import annotations

import numpy as np

#: a whole op is dead (a Switch may have one dead output and one live)
DEAD = True


class Frames:
    """Which ops and outputs of a GraphDef (`nodes`: name -> NodeDef) are dead."""

    def __init__(self, nodes: dict):
        self.nodes = nodes
        self.dead_ports: dict[str, set | bool] = {}
        for name in _topological(nodes):
            self.dead_ports[name] = self._deadness(nodes[name])

    def predicate(self, ref: str) -> bool | None:
        """The constant value of a Switch's predicate `ref`, else None."""
        import tensorflow as tf

        node = self.nodes.get(ref.lstrip("^").split(":")[0])
        while node is not None and node.op in ("Identity", "PlaceholderWithDefault") and node.input:
            node = self.nodes.get(node.input[0].split(":")[0])
        if node is None or node.op != "Const":
            return None
        value = tf.make_ndarray(node.attr["value"].tensor)
        return bool(np.asarray(value).ravel()[0]) if value.size == 1 else None

    def taken(self, switch) -> int:
        """The output (1: true, 0: false) a Switch with a constant predicate passes its data to."""
        return int(self.predicate(switch.input[1]))

    def dead(self, ref: str) -> bool:
        """Whether the output `ref` ("node:port" or "node", or a "^node" control input) is dead."""
        name, _, port = ref.lstrip("^").partition(":")
        state = self.dead_ports.get(name, set())
        return state is DEAD or (not ref.startswith("^") and int(port or 0) in state)

    def node_dead(self, name: str) -> bool:
        return self.dead_ports.get(name) is DEAD

    def _deadness(self, node) -> set | bool:
        data = [i for i in node.input if not i.startswith("^")]
        control = [i for i in node.input if i.startswith("^")]
        if node.op == "Merge":
            return DEAD if data and all(self.dead(i) for i in data) else set()
        if any(self.dead(i) for i in data + control):
            return DEAD
        if node.op == "Switch" and len(data) == 2 and self.predicate(data[1]) is not None:
            return {1 - self.taken(node)}
        return set()


def _topological(nodes: dict) -> list[str]:
    """Every op after the ops it reads, data and control inputs alike (iteratively: graphs run deep)."""
    order, seen = [], set()
    for root in nodes:
        stack = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                order.append(name)
                continue
            if name in seen or name not in nodes:
                continue
            seen.add(name)
            stack.append((name, True))
            stack += [(i.lstrip("^").split(":")[0], False) for i in reversed(nodes[name].input)]
    return order
