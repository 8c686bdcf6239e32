"""Verifying a source that keeps state inside (a TFLite streaming model's resource variables) against a
converted model that takes and returns it explicitly (tensorbridge/ir/state.py).

The target's state inputs start from the initial values the source's graph records, and the state it returns
feeds its next call, as a caller threads it; the source keeps its own. Two consecutive calls are compared, so
state written wrong shows in the second even where the first call's outputs agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorbridge.ir.state import initial_state


@dataclass
class CarriedState:
    inputs: list[str]  # the target's state inputs (its last inputs)
    outputs: list[str]  # the state outputs, in the same order (its last outputs)
    initial: dict[str, np.ndarray]  # by the source graph's names for the state inputs

    def first(self) -> dict[str, np.ndarray]:
        """The target's state feeds for the first call."""
        return dict(zip(self.inputs, self.initial.values()))

    def after(self, outputs: dict) -> dict[str, np.ndarray]:
        """The target's state feeds for the call after one that returned `outputs`."""
        return {i: outputs[o] for i, o in zip(self.inputs, self.outputs)}

    @property
    def note(self) -> str:
        return (f"state: the target's {', '.join(self.inputs)} started from the source's initial values and its "
                f"{', '.join(self.outputs)} fed a second call, compared as '(call 2)'")


def carried_state(a, b, source_graph) -> CarriedState | None:
    """The state target runner `b` takes and returns explicitly where source runner `a` keeps it, or None."""
    extra = len(b.inputs) - len(a.inputs)
    if extra <= 0 or len(b.outputs) - len(a.outputs) != extra:
        return None
    initial = initial_state(source_graph().metadata)
    if len(initial) != extra:
        return None
    return CarriedState([n for n, _, _ in b.inputs[len(a.inputs):]], list(b.outputs[len(a.outputs):]), initial)
