"""State a model keeps between calls, carried explicitly by the IR.

A source with hidden state (a TFLite streaming model's resource variables) becomes a graph with one input per
state tensor (what the call starts from) and one output (what it leaves for the next call); every target then
carries the state the same way, and the caller threads it. `graph.metadata["state"]` lists these pairs in input
order with their initial values, so verification can run the converted model call after call as the source ran.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import dtypes


def state_entry(input_name: str, output_name: str, initial: np.ndarray) -> dict:
    """The metadata of one state tensor; its initial value as JSON: one `fill` when every element is the same
    (the usual zeros), else every value."""
    flat = initial.reshape(-1)
    entry = {"input": input_name, "output": output_name,
             "dtype": dtypes.name(initial.dtype), "shape": list(initial.shape)}
    if flat.size and np.all(flat == flat[0]):
        return {**entry, "fill": flat[0].item()}
    return {**entry, "values": flat.tolist()}


def initial_state(metadata: dict) -> dict[str, np.ndarray]:
    """State input name -> its initial value, from a graph's metadata."""
    values = {}
    for s in metadata.get("state", []):
        dtype = dtypes.dtype(s["dtype"])
        flat = np.full(int(np.prod(s["shape"])), s["fill"], dtype) if "fill" in s else np.asarray(s["values"], dtype)
        values[s["input"]] = flat.reshape(s["shape"])
    return values
