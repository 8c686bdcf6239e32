"""`.pt2` backend: the generated nn.Module, captured with `torch.export` for deployment.

Symbolic dims of the IR inputs become `torch.export.Dim`s, so the program stays dynamic.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge.backends.torch import codegen
from tensorbridge.errors import ModelError
from tensorbridge.ir import shapes
from tensorbridge.ir.graph import Graph
from tensorbridge.rules.torch.base import to_torch

LAYOUT = codegen.LAYOUT
#: sizes tried in turn for the example inputs' open dims: the first that torch.export traces (2 avoids its
#: specialising 0 and 1; a model may need more, such as a reflect pad wider than 2)
EXAMPLE_SIZES = (2, 16, 128, 1024)


def save(graph: Graph, dest, layout=None, **_options) -> None:
    import torch

    from tensorbridge.codegen.folder import load_folder

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        codegen.save(graph, folder, layout, exported=True)
        module = load_folder(folder).load_model()
        dims, named = [], {}
        for v in graph.inputs:
            spec = {}
            for axis, d in enumerate(v.shape or ()):
                if not isinstance(d, int):
                    key = str(d) if d is not None else f"{v.name}_{axis}"
                    named.setdefault(key, torch.export.Dim(_dim_name(key)))
                    spec[axis] = named[key]
            dims.append(spec or None)
        dynamic = tuple(dims) if named else None
        first, specialized = None, 0
        for size in EXAMPLE_SIZES if named else EXAMPLE_SIZES[:1]:
            examples = [to_torch(np.zeros([d if isinstance(d, int) else size for d in (v.shape or ())], v.dtype))
                        for v in graph.inputs]
            try:
                ep = torch.export.export(module, tuple(examples), dynamic_shapes=dynamic)
                break
            except Exception as e:  # noqa: BLE001
                first = first or e
                ep = _with_inferred_ranges(module, examples, dynamic)  # a dim the model bounds (positions <= 512)
                specialized = specialized + 1 if _SPECIALIZED.search(str(e)) else 0
                if ep is not None or specialized == 2:  # at two sizes (one may be too small for the model: a U-Net)
                    break
        if ep is None:
            fixed = _SPECIALIZED.search(str(first))
            if fixed:
                raise ModelError(f"torch.export cannot keep the open dim {fixed.group(1)!r} open: an op of the model "
                                 "runs at one size only once exported (nn.LSTM/GRU unroll their steps); give the dim "
                                 "a size with --input-shape, or write PyTorch code (--to torch), which runs any size") \
                    from None
            hint = "; the model's open dims may take only some sizes: give them with --input-shape " \
                f"({', '.join(v.name for v in graph.inputs if v.shape is None or not shapes.is_static(v.shape))})" \
                if named else ""
            raise ModelError(f"torch.export failed on the generated module: {type(first).__name__}: "
                             f"{str(first).splitlines()[0] if str(first) else ''}{hint}") from None
        torch.export.save(ep, str(dest))


def _with_inferred_ranges(module, examples, dynamic):
    """The program exported with its dynamic dims' ranges left to torch.export (`Dim.AUTO`): the model itself
    bounds some (a position table caps the sequence) or asks for multiples (a U-Net's of 32), which a Dim without
    bounds contradicts. Taken only if every such dim stays dynamic (AUTO would otherwise fix it to the example's
    size); else None."""
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
        if spec and not all(_ranged(shape[axis], ep.range_constraints) for axis in spec):
            return None
    return ep


def _ranged(size, ranges) -> bool:
    """Whether an input's size stays dynamic: a symbol with a range, or a multiple of ones (a U-Net's sizes are
    multiples of 32, its skips added to upsampled maps); a symbol without a range is guarded to the example's."""
    import torch

    if not isinstance(size, torch.SymInt):
        return False
    symbols = size.node.expr.free_symbols
    return bool(symbols) and symbols <= set(ranges)


_SPECIALIZED = re.compile(r"You marked (\w+) as dynamic but your code specialized it")


def _dim_name(key: str) -> str:
    name = re.sub(r"\W", "_", key)
    return name if name and not name[0].isdigit() else f"d_{name}"
