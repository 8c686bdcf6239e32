"""`port_weights(src, dst)`: copy the trained weights of a model instance into its translation.

The two instances are walked side by side by attribute name (the translation keeps every attribute
name), containers by position; the source framework's WeightSource reads them and the target's WeightPort
writes them (rules/code.py). A source layer with a code row hands its weights to the IR op's roles
(`to_ir`) and the target's row for that op takes them (`from_ir`); a weight the class holds itself is
copied as it is. Every shape is checked and every target weight must be set: any mismatch
raises `PortError` naming the parameter's path.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import TensorbridgeError
from tensorbridge.transpile.imports import resolve
from tensorbridge.transpile.layer_subclass import held_layer_name


class PortError(TensorbridgeError):
    """The source and target instances do not correspond; the message names the parameter path."""


def port_weights(src, dst) -> int:
    """Copy `src`'s weights into `dst` (an instance of the translated class, built: Keras and PyTorch's Lazy
    layers build their weights on the first call); returns the number of arrays copied."""
    from tensorbridge.transpile import SOURCES, TARGETS
    from tensorbridge.transpile.imports import Rows

    source = _table_owning(src, SOURCES, lambda t: t.source.weights, "reads")
    target = _table_owning(dst, TARGETS, lambda t: t.skeleton.port, "writes into")
    porter = _Porter(source, Rows(source.layers), target, src)
    dst_vars = target.skeleton.port.variables(dst)
    if (not dst_vars or target.skeleton.port.unbuilt_hint(dst)) and _holds_weights(source.source.weights, src):
        raise PortError("the target has no weights yet: call it once on an input to build it")
    porter.walk(src, dst, type(src).__name__)
    unset = [path for v, path in dst_vars.items() if v not in porter.assigned]
    if unset:
        raise PortError(f"{len(unset)} target weight(s) got no source weight: {', '.join(unset[:8])}")
    return len(porter.assigned)


def _table_owning(obj, frameworks, port, verb: str):
    """The code table of the framework (one of `frameworks`) whose model instances `obj` is one of."""
    from tensorbridge.transpile import _table

    for framework in frameworks:
        table = _table(framework)
        if port(table).owns(obj):
            return table
    raise PortError(f"port_weights {verb} {' or '.join(frameworks)} model instances (got {type(obj).__name__})")


def _holds_weights(source, obj) -> bool:
    if source.layer_weights(obj) or source.own_weights(obj):
        return True
    inner = source.members(obj) or list((source.mapping(obj) or {}).values()) or list(source.children(obj).values())
    return any(_holds_weights(source, c) for c in inner if source.owns(c) or isinstance(c, (list, tuple, dict)))


class _Porter:
    def __init__(self, source_table, rows, target_table, root):
        self.source = source_table.source.weights
        ids = self.source.weight_ids(root)
        self.tied = {i for i in ids if ids.count(i) > 1}  # weights two layers hold (weight tying)
        self.rows = rows
        #: the list and dict container classes (by id)
        self.containers = {id(resolve(p)) for p, kind in source_table.source.containers.items()
                           if kind in ("list", "dict")}
        self.target = target_table
        self.port = target_table.skeleton.port
        self.assigned: set[int] = set()

    def walk(self, src, dst, path: str) -> None:
        array = self.source.weight_array(src)
        if array is not None:  # a member of a list of weights
            return self.assign(dst, array, path)
        row = self.rows.find(self.source.class_path(src))
        if row is not None:
            return self.layer(src, dst, row, path)
        parent = self._parent_layer(src)
        if parent is not None:  # a class deriving from a framework layer: its translation holds that layer
            row, name = parent
            if not hasattr(dst, name):
                raise PortError(f"{path}: the target holds no {name!r} (the layer {type(src).__name__} derives from)")
            # weights and layers the subclass adds are attributes of the translation itself
            own = {n for n in [*self.source.own_weights(src), *self.source.children(src)]
                   if hasattr(dst, self.target.skeleton.attribute(n))}
            self.layer(src, getattr(dst, name), row, f"{path}.{name}", exclude=own)
            return self._attributes(src, dst, path, keep=own)
        held = self._held_container(src)
        if held is not None:  # a class deriving from a list or dict container: its translation holds one
            if not hasattr(dst, held):
                raise PortError(f"{path}: the target holds no {held!r} (the container {type(src).__name__} "
                                "derives from)")
            dst, path = getattr(dst, held), f"{path}.{held}"
        children = self.source.members(src)
        if children is not None:
            targets = self.port.members(dst) if children else []
            if targets is None or len(targets) != len(children):
                raise PortError(f"{path}: {len(children)} source layers, the target holds {type(dst).__name__}")
            for i, (s, d) in enumerate(zip(children, targets)):
                self.walk(s, d, f"{path}[{i}]")
            return
        mapping = self.source.mapping(src)
        if mapping is not None:
            for key, s in mapping.items():
                if key not in dst and self._tied_away(s):
                    continue
                if key not in dst:
                    raise PortError(f"{path}[{key!r}]: missing in the target")
                self.walk(s, dst[key], f"{path}[{key!r}]")
            return
        self._attributes(src, dst, path)

    def _attributes(self, src, dst, path: str, keep=None) -> None:
        """The weights and sublayers `src` holds as attributes (those named in `keep`, when given)."""
        for name, array in self.source.own_weights(src).items():
            if keep is not None and name not in keep:
                continue
            target = getattr(dst, self.target.skeleton.attribute(name), None)
            if target is None:
                raise PortError(f"{path}.{name}: the target has no attribute {name!r}")
            self.assign(target, array, f"{path}.{name}")
        for name, child in self.source.children(src).items():
            if keep is not None and name not in keep:
                continue
            attribute = self.target.skeleton.attribute(name)
            if not hasattr(dst, attribute) and self._tied_away(child):
                continue
            if not hasattr(dst, attribute):
                raise PortError(f"{path}.{name}: the target has no attribute {attribute!r}")
            self.walk(child, getattr(dst, attribute), f"{path}.{name}")

    def _tied_away(self, layer) -> bool:
        """Whether `layer` holds only weights tied to another layer's (the translation writes it as a function
        of that layer's weight: transpile/weight_tying.py)."""
        ids = self.source.weight_ids(layer)
        return bool(ids) and set(ids) <= self.tied

    def _parent_layer(self, src):
        """(row, attribute holding it) of the framework layer class `src`'s class derives from, else None."""
        for cls in type(src).__mro__[1:]:
            row = self.rows.find(f"{cls.__module__}.{cls.__qualname__}")
            if row is not None:
                return row, held_layer_name(cls.__name__)
        return None

    def _held_container(self, src) -> str | None:
        """The attribute holding the list or dict container `src`'s class derives from, else None."""
        for cls in type(src).__mro__[1:]:
            if id(cls) in self.containers:
                return held_layer_name(cls.__name__)
        return None

    def layer(self, src, dst, row, path: str, exclude=frozenset()) -> None:
        weights = {n: w for n, w in self.source.layer_weights(src).items() if n.split(".")[0] not in exclude}
        if not weights:
            return
        writer = self.target.layer_writers.get(row.op)
        if row.to_ir is None or writer is None or writer.from_ir is None:
            raise PortError(f"{path}: no weight mapping for {row.path} -> {row.op}")
        target_arrays = writer.from_ir(row.to_ir(weights, self.source.layer_attrs(src)), {})
        # one dict of weights per target layer holding them, in order (several for a layer written as several)
        parts = target_arrays if isinstance(target_arrays, list) else [target_arrays]
        holders = self.port.holders(dst)
        if len(holders) != len(parts):
            raise PortError(f"{path}: the target {type(dst).__name__} has {len(holders)} layers with weights, "
                            f"{len(parts)} expected{self.port.unbuilt_hint(dst) if not holders else ''}")
        for layer, arrays in zip(holders, parts):
            for name, array in arrays.items():
                variable = _find(layer, name)
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


def _find(layer, path: str):
    """The attribute at a dotted `path` ("stack.0.cell.kernel": list items by index) of `layer`, else None."""
    for part in path.split("."):
        if part.isdigit() and hasattr(layer, "__getitem__"):
            layer = layer[int(part)] if int(part) < len(layer) else None
        else:
            layer = getattr(layer, part, None)
        if layer is None:
            return None
    return layer
