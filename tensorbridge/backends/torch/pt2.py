"""`.pt2` backend: the generated nn.Module, captured with `torch.export` for deployment.

Symbolic dims of the IR inputs become `torch.export.Dim`s, so the program stays dynamic.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.backends.torch import codegen
from tensorbridge.errors import ModelError
from tensorbridge.ir.graph import Graph
from tensorbridge.rules.torch.base import to_torch

LAYOUT = codegen.LAYOUT


def save(graph: Graph, dest, layout=None, **_options) -> None:
    import torch

    from tensorbridge.codegen.folder import load_folder

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        codegen.save(graph, folder, layout, exported=True)
        module = load_folder(folder).load_model()
        examples, dims = [], {}
        named = {}
        for v in graph.inputs:
            shape = [d if isinstance(d, int) else 2 for d in (v.shape or ())]
            examples.append(to_torch(np.zeros(shape, dtype=v.dtype)))
            spec = {}
            for axis, d in enumerate(v.shape or ()):
                if not isinstance(d, int):
                    key = str(d) if d is not None else f"{v.name}_{axis}"
                    named.setdefault(key, torch.export.Dim(_dim_name(key)))
                    spec[axis] = named[key]
            dims[len(dims)] = spec or None
        dynamic = tuple(dims[i] for i in range(len(examples))) if named else None
        try:
            ep = torch.export.export(module, tuple(examples), dynamic_shapes=dynamic)
        except Exception as e:  # noqa: BLE001
            ep = _with_inferred_ranges(module, examples, dynamic)  # a dim the model bounds (positions <= 512)
            if ep is None:
                raise ModelError(f"torch.export failed on the generated module: {type(e).__name__}: {e}") from None
        torch.export.save(ep, str(dest))


def _with_inferred_ranges(module, examples, dynamic):
    """The program exported with its dynamic dims' ranges left to torch.export (`Dim.AUTO`): the model itself
    bounds some (a position table caps the sequence), which a Dim without bounds contradicts. Taken only if every
    such dim stays dynamic (AUTO would otherwise fix it to the example's size); else None."""
    import torch

    if dynamic is None:
        return None
    auto = tuple({axis: torch.export.Dim.AUTO for axis in spec} if spec else None for spec in dynamic)
    try:
        ep = torch.export.export(module, tuple(examples), dynamic_shapes=auto)
    except Exception:  # noqa: BLE001 - the first failure is the one reported
        return None
    inputs = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in ep.graph_signature.user_inputs]
    for node, spec in zip(inputs, dynamic):
        shape = node.meta["val"].shape
        if spec and any(isinstance(shape[axis], int) for axis in spec):
            return None
    return ep


def _dim_name(key: str) -> str:
    import re

    name = re.sub(r"\W", "_", key)
    return name if name and not name[0].isdigit() else f"d_{name}"
