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
    """Copy `src`'s weights into `dst` (a built instance of the translated class); returns the number of
    arrays copied."""
    import torch

    if not isinstance(src, torch.nn.Module):
        raise PortError(f"port_weights reads PyTorch modules (got {type(src).__name__})")
    from tensorbridge.rules.keras import REGISTRY as KERAS
    from tensorbridge.rules.torch import REGISTRY as TORCH
    from tensorbridge.transpile.imports import Rows

    porter = _Porter(Rows(TORCH.code.layers), KERAS.code)
    dst_vars = _keras_variables(dst)
    if not dst_vars and any(True for _ in src.parameters()):
        raise PortError("the target has no weights yet: call it once on an input to build it")
    porter.walk(src, dst, type(src).__name__)
    unset = [path for v, path in dst_vars.items() if v not in porter.assigned]
    if unset:
        raise PortError(f"{len(unset)} target weight(s) got no source weight: {', '.join(unset[:8])}")
    return len(porter.assigned)


class _Porter:
    def __init__(self, rows, target_table):
        self.rows = rows
        self.target = target_table
        self.assigned: set[int] = set()

    def walk(self, src, dst, path: str) -> None:
        import torch

        row = self.rows.find(f"{type(src).__module__}.{type(src).__qualname__}")
        if row is not None:
            return self.layer(src, dst, row, path)
        if isinstance(src, (torch.nn.Sequential, torch.nn.ModuleList)):
            children = list(src)
            targets = _items(dst, len(children), path)
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
        layer = _weighted_layer(dst, path)
        for name, array in target_arrays.items():
            variable = getattr(layer, name, None)
            if variable is None:
                unbuilt = "" if layer.built else " (it was never called, so Keras has not built it: call it once)"
                raise PortError(f"{path}: the target layer {type(layer).__name__} has no weight {name!r}{unbuilt}")
            self.assign(variable, array, f"{path} -> {layer.name}.{name}")

    def assign(self, variable, array: np.ndarray, path: str) -> None:
        if not hasattr(variable, "assign"):
            raise PortError(f"{path}: the target attribute is a {type(variable).__name__}, not a weight")
        if tuple(variable.shape) != tuple(array.shape):
            raise PortError(f"{path}: source shape {tuple(array.shape)}, target shape {tuple(variable.shape)}")
        variable.assign(array.astype(np.dtype(str(variable.dtype)), copy=False))
        self.assigned.add(id(variable))


def _items(dst, n: int, path: str) -> list:
    """The target's members of a source container with `n` members."""
    import keras

    if n == 0:
        return []
    if isinstance(dst, keras.Sequential):
        items = dst.layers
    elif isinstance(dst, (list, tuple)):
        items = list(dst)
    else:
        items = None
    if items is None or len(items) != n:
        raise PortError(f"{path}: {n} source layers, the target holds {type(dst).__name__}")
    return items


def _weighted_layer(dst, path: str):
    """The layer inside `dst` (itself, or the one member of a wrapper Sequential) that holds weights."""
    import keras

    if not isinstance(dst, keras.Sequential):
        return dst
    holders = [layer for layer in dst.layers if layer.weights]
    if len(holders) != 1:
        raise PortError(f"{path}: the target {type(dst).__name__} has {len(holders)} layers with weights")
    return holders[0]


def _keras_variables(layer) -> dict[int, str]:
    return {id(v): v.path for v in getattr(layer, "weights", [])}
