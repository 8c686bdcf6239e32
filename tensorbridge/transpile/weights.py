"""`port_weights(src, dst)`: copy the trained weights of a model instance into its translation.

The two instances are walked side by side by attribute name (the translation keeps every attribute
name), containers by position. A source layer with a code row hands its weights to the IR op's roles
(`to_ir`) and the target's row for that op takes them (`from_ir`); a parameter or buffer the class holds
itself is copied as it is. Every shape is checked and every target weight must be set: any mismatch
raises `PortError` naming the parameter's path.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import TensorbridgeError


class PortError(TensorbridgeError):
    """The source and target instances do not correspond; the message names the parameter path."""


def port_weights(src, dst) -> int:
    """Copy `src`'s weights into `dst` (an instance of the translated class; a Keras one built by calling it
    once); returns the number of arrays copied."""
    import torch

    if not isinstance(src, torch.nn.Module):
        raise PortError(f"port_weights reads PyTorch modules (got {type(src).__name__})")
    from tensorbridge.rules.torch import REGISTRY as TORCH
    from tensorbridge.transpile.imports import Rows

    target = _target_table(dst)
    porter = _Porter(Rows(TORCH.code.layers), target)
    dst_vars = target.skeleton.port.variables(dst)
    if not dst_vars and any(True for _ in src.parameters()):
        raise PortError("the target has no weights yet: call it once on an input to build it")
    porter.walk(src, dst, type(src).__name__)
    unset = [path for v, path in dst_vars.items() if v not in porter.assigned]
    if unset:
        raise PortError(f"{len(unset)} target weight(s) got no source weight: {', '.join(unset[:8])}")
    return len(porter.assigned)


def _target_table(dst):
    """The code table of the framework `dst` is an instance of."""
    from tensorbridge.transpile import TARGETS, _table

    for framework in TARGETS:
        table = _table(framework)
        if table.skeleton.port.owns(dst):
            return table
    raise PortError(f"port_weights writes into {' or '.join(TARGETS)} model instances (got {type(dst).__name__})")


class _Porter:
    def __init__(self, rows, target_table):
        self.rows = rows
        self.target = target_table
        self.port = target_table.skeleton.port
        self.assigned: set[int] = set()

    def walk(self, src, dst, path: str) -> None:
        import torch

        row = self.rows.find(f"{type(src).__module__}.{type(src).__qualname__}")
        if row is not None:
            return self.layer(src, dst, row, path)
        if isinstance(src, (torch.nn.Sequential, torch.nn.ModuleList)):
            children = list(src)
            targets = self.port.members(dst) if children else []
            if targets is None or len(targets) != len(children):
                raise PortError(f"{path}: {len(children)} source layers, the target holds {type(dst).__name__}")
            for i, (s, d) in enumerate(zip(children, targets)):
                self.walk(s, d, f"{path}[{i}]")
            return
        if isinstance(src, torch.nn.ModuleDict):
            for key, s in src.items():
                if key not in dst:
                    raise PortError(f"{path}[{key!r}]: missing in the target")
                self.walk(s, dst[key], f"{path}[{key!r}]")
            return
        own = dict(src.named_parameters(recurse=False))
        own.update(dict(src.named_buffers(recurse=False)))
        for name, tensor in own.items():
            if tensor is None:
                continue
            target = getattr(dst, self.target.skeleton.attribute(name), None)
            if target is None:
                raise PortError(f"{path}.{name}: the target has no attribute {name!r}")
            self.assign(target, tensor.detach().cpu().numpy(), f"{path}.{name}")
        for name, child in src.named_children():
            attribute = self.target.skeleton.attribute(name)
            if not hasattr(dst, attribute):
                raise PortError(f"{path}.{name}: the target has no attribute {attribute!r}")
            self.walk(child, getattr(dst, attribute), f"{path}.{name}")

    def layer(self, src, dst, row, path: str) -> None:
        weights = {n: t.detach().cpu().numpy() for n, t in list(src.named_parameters(recurse=False))
                   + list(src.named_buffers(recurse=False)) if t is not None and n != "num_batches_tracked"}
        if not weights:
            return
        writer = self.target.layer_writers.get(row.op)
        if row.to_ir is None or writer is None or writer.from_ir is None:
            raise PortError(f"{path}: no weight mapping for {row.path} -> {row.op}")
        target_arrays = writer.from_ir(row.to_ir(weights, {}), {})
        holders = self.port.holders(dst)
        if len(holders) != 1:
            raise PortError(f"{path}: the target {type(dst).__name__} has {len(holders)} layers with weights")
        layer = holders[0]
        for name, array in target_arrays.items():
            variable = getattr(layer, name, None)
            if variable is None:
                raise PortError(f"{path}: the target layer {type(layer).__name__} has no weight {name!r}"
                                f"{self.port.unbuilt_hint(layer)}")
            self.assign(variable, array, f"{path} -> {type(layer).__name__}.{name}")

    def assign(self, variable, array: np.ndarray, path: str) -> None:
        if not self.port.is_weight(variable):
            raise PortError(f"{path}: the target attribute is a {type(variable).__name__}, not a weight")
        shape = self.port.shape(variable)
        if shape != tuple(array.shape):
            raise PortError(f"{path}: source shape {tuple(array.shape)}, target shape {shape}")
        self.port.assign(variable, array)
        self.assigned.add(id(variable))
