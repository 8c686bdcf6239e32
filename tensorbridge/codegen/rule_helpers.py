"""What the code generators' emit rules share: the Unsupported signal, operand helpers and checks."""

from __future__ import annotations

import numpy as np


class Unsupported(Exception):
    """A node configuration the target framework cannot express (collected into one report)."""


def const_operand(v) -> np.ndarray:
    """The constant data of a weight operand (layers need weights as data)."""
    if v is None or v.const is None:
        raise Unsupported(f"{v.name if v is not None else 'weight'} must be a constant to become a layer weight")
    return np.asarray(v.const)


def same(values):
    """(3, 3) -> 3: layer constructors take one int for a square kernel, stride or padding."""
    values = tuple(int(v) for v in values)
    return values[0] if values and all(v == values[0] for v in values) else values


def check_plain_rnn(node, gru_reset: str) -> None:
    """An IR LSTM/GRU the layer libraries hold: default activations, no sequence_lens, clip, peepholes,
    input_forget or batch-major layout, and a GRU with linear_before_reset (`gru_reset` says why)."""
    a = node.attrs
    defaults = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"]}[node.op]
    acts = [s.lower() for s in a.get("activations") or []]
    if acts != defaults * (len(acts) // len(defaults)) or node.input(4) is not None or a.get("clip") \
            or a.get("layout") or a.get("input_forget") or (node.op == "LSTM" and node.input(7) is not None):
        raise Unsupported(f"{node.op} with custom activations, sequence_lens, clip, peepholes or batch-major layout")
    if node.op == "GRU" and not a.get("linear_before_reset"):
        raise Unsupported(f"GRU with linear_before_reset=0 ({gru_reset})")
