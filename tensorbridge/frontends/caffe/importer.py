"""Caffe frontend: a `.prototxt` and its `.caffemodel` -> IR `Graph`, without Caffe.

The prototxt says what the net computes (V1 nets are upgraded first); the caffemodel gives each layer's blobs
by layer name, as Caffe copies them. Layers are checked before any is read: a type without a rule or a layer
that reads a dataset is a blocker, and all are reported together. Layers are read in order by the registry's
converters, following Caffe's blob names (a layer may write its input's blob in place); a layer excluded from the
TEST phase or that only trains (losses, accuracy) is left out. The inputs are the net's declared inputs (`input`
+ `input_shape`/`input_dim`, or `Input` layers); the outputs are the blobs no layer reads, as in Caffe, unless
`outputs` names others. A BatchNorm followed by the Scale that is its affine part reads as one
BatchNormalization. `graph.metadata["caffe"]["blobs"]` maps each blob to the IR value it ends as, for
comparing with Caffe blob by blob.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError, TensorbridgeError
from tensorbridge.formats.caffe import read_prototxt, read_weights
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.rules.caffe import REGISTRY
from tensorbridge.rules.caffe.base import DATA, TRAINING, V1_TYPES
from tensorbridge.rules.caffe.layers import scale_fuses

TEST = 1  # caffe.Phase


def paths(source, weights=None) -> tuple[Path, Path]:
    """(prototxt, caffemodel) of a source naming either, the other beside it with the same stem."""
    path = Path(source)
    if path.suffix.lower() == ".caffemodel" and weights is None:
        path, weights = path.with_suffix(".prototxt"), path
        if not path.is_file():
            raise ModelError(f"{weights} needs its net: no {path.name} beside it")
    weights = Path(weights) if weights is not None else path.with_suffix(".caffemodel")
    if not weights.is_file():
        raise ModelError(f"{path} needs its weights: no {weights.name} beside it (pass weights=PATH)")
    return path, weights


def load(source, weights: str | Path | None = None, input_shapes: dict | None = None,
         outputs: list[str] | None = None) -> Graph:
    """Read a Caffe model: `source` is the `.prototxt` (or the `.caffemodel`, with the prototxt of the same name
    beside it); `weights` names a caffemodel elsewhere; `input_shapes` ({blob: dims}) replaces declared input
    shapes; `outputs` (blob names) cuts the net there, leaving out the layers after."""
    prototxt, caffemodel = paths(source, weights)
    net = read_net(prototxt)
    return Importer(net, read_weights(caffemodel), input_shapes or {}, outputs).run()


def read_net(path):
    """The prototxt's NetParameter in the V2 form."""
    return upgrade(read_prototxt(path))


def upgrade(net):
    """`net` with its V1 `layers` rewritten as V2 `layer` entries (in place)."""
    if not net.layers:
        return net
    if net.layer:
        raise ModelError("the net mixes V1 `layers` and V2 `layer` entries")
    for old in net.layers:
        if old.HasField("layer"):
            raise ModelError(f"layer {old.name!r} is in the V0 form (Caffe before 2014), which is not read")
        new = net.layer.add(name=old.name, bottom=old.bottom, top=old.top)
        kind = old.DESCRIPTOR.fields_by_name["type"].enum_type.values_by_number[old.type].name
        new.type = V1_TYPES.get(kind, kind)
        new.include.extend(old.include)
        new.exclude.extend(old.exclude)
        new.blobs.extend(old.blobs)
        for field, value in old.ListFields():
            if field.name.endswith("_param") and field.name in new.DESCRIPTOR.fields_by_name:
                getattr(new, field.name).CopyFrom(value)
    net.ClearField("layers")
    return net


def included(layer) -> bool:
    """Whether the layer takes part in the TEST phase (Caffe's include/exclude rules on the phase)."""
    if layer.include:
        return any(not rule.HasField("phase") or rule.phase == TEST for rule in layer.include)
    return not any(rule.HasField("phase") and rule.phase == TEST for rule in layer.exclude)


class Importer:
    def __init__(self, net, blobs: dict[str, list[np.ndarray]], input_shapes: dict, outputs: list[str] | None):
        self.net, self.weights, self.input_shapes = net, blobs, input_shapes
        self.layers = [lay for lay in net.layer if included(lay) and lay.type not in TRAINING]
        self.written = {top for lay in self.layers for top in lay.top}  # every blob some layer writes
        self.wanted = outputs
        self.graph = Graph(net.name or "caffe")
        self.b = Builder(self.graph)
        self.values: dict[str, object] = {}  # blob name -> its current IR value
        self.fused: set[int] = set()
        self.index = 0
        self.layer = None

    # -- what converters use -------------------------------------------------------------------------------
    @property
    def bottoms(self) -> list:
        return [self.values[name] for name in self.layer.bottom]

    @property
    def x(self):
        return self.bottoms[0] if self.layer.bottom else None

    @property
    def blobs(self) -> list[np.ndarray]:
        return self.blobs_of(self.layer)

    def blobs_of(self, layer) -> list[np.ndarray]:
        return self.weights.get(layer.name, [])

    def name(self, suffix: str) -> str:
        return self.b.name(suffix)

    def weight(self, suffix: str, array):
        return self.b.weight(self.name(suffix), np.asarray(array, np.float32))

    def fuse_next(self, kind: str):
        """The next layer when it is a `kind` that only transforms this layer's top (then read with it), or None."""
        if self.index + 1 >= len(self.layers):
            return None
        nxt, top = self.layers[self.index + 1], self.layer.top[0]
        if nxt.type != kind or list(nxt.bottom) != [top] or not scale_fuses(nxt, nxt.bottom):
            return None
        in_place = list(nxt.top) == [top]
        if not in_place and any(top in later.bottom for later in self.layers[self.index + 2:]):
            return None
        self.fused.add(self.index + 1)
        return nxt

    # -- reading -------------------------------------------------------------------------------------------
    def run(self) -> Graph:
        self._check()
        self._inputs()
        layers = self._needed()
        report = BlockerReport("reading the Caffe model", "caffe")
        for index, lay in enumerate(self.layers):
            self.index, self.layer = index, lay
            if lay.type == "Input" or self.index not in layers:
                continue
            if self.index in self.fused:  # read with the BatchNorm before it (unless that one was refused)
                if lay.bottom[0] in self.values:
                    self.values.update({top: self.values[lay.bottom[0]] for top in lay.top})
                continue
            if any(name not in self.values for name in lay.bottom):
                missing = [name for name in lay.bottom if name not in self.values]
                if all(name in self.written for name in missing):
                    continue  # it reads a layer that could not be read (reported)
                report.add(lay.type, lay.name, f"reads {', '.join(missing)}, which no layer before it writes")
                continue
            self.b.at(lay.name, {"framework": "caffe", "source_op": lay.type, "source_name": lay.name})
            try:
                tops = self._convert(lay)
            except TensorbridgeError as e:
                report.add(lay.type, lay.name, str(e))
                continue
            tops = tops if isinstance(tops, list) else [tops]
            if len(tops) != len(lay.top):
                report.add(lay.type, lay.name, f"has {len(lay.top)} tops; the layer computes {len(tops)}")
                continue
            self.values.update(zip(lay.top, tops))
        report.raise_if_any()
        self._outputs(layers)
        self.graph.metadata["caffe"] = {"name": self.net.name,
                                        "blobs": {blob: v.name for blob, v in self.values.items()}}
        return self.graph

    def _convert(self, lay):
        rule = REGISTRY.import_rule(lay.type, "layer")
        if rule.convert is not None:
            return rule.convert(self, lay)
        return self.b.op(rule.ir_op, self.x, **rule.attrs)

    def _check(self) -> None:
        report = BlockerReport("reading the Caffe net", "caffe")
        for lay in self.layers:
            if lay.type in DATA:
                report.add(lay.type, lay.name, "reads a dataset; convert the deploy prototxt, which declares an "
                                               "input instead")
            elif lay.type != "Input" and REGISTRY.import_rule(lay.type, "layer") is None:
                report.add(lay.type, lay.name, "Caffe layer type without a rule")
        report.raise_if_any()

    def _inputs(self) -> None:
        declared = []
        net = self.net
        if net.input:
            if net.input_shape:
                shapes = [list(s.dim) for s in net.input_shape]
            else:
                dims = list(net.input_dim)
                shapes = [dims[4 * i:4 * i + 4] for i in range(len(dims) // 4)]
            declared += list(zip(net.input, shapes + [None] * (len(net.input) - len(shapes))))
        for lay in self.layers:
            if lay.type == "Input":
                shapes = [list(s.dim) for s in lay.input_param.shape]
                declared += [(top, shapes[i] if i < len(shapes) else shapes[0] if shapes else None)
                             for i, top in enumerate(lay.top)]
        if not declared:
            raise ModelError("the net declares no input (an `input:` with its shape, or an Input layer)")
        unknown = sorted(set(self.input_shapes) - {name for name, _ in declared})
        if unknown:
            raise ModelError(f"input_shapes names {unknown}, which are not inputs of the net "
                             f"({[name for name, _ in declared]})")
        for name, shape in declared:
            shape = self.input_shapes.get(name, shape)
            if not shape:
                raise ModelError(f"input {name!r} has no shape; pass input_shapes={{{name!r}: [...]}}")
            self.values[name] = self.graph.add_input(name, np.float32, tuple(int(d) for d in shape))

    def _needed(self) -> set[int]:
        """The layers the outputs asked for depend on (all when none are asked for)."""
        if self.wanted is None:
            return set(range(len(self.layers)))
        missing = [name for name in self.wanted if name not in self.written and name not in self.values]
        if missing:
            raise ModelError(f"outputs names {missing}, which no layer writes")
        wanted, needed = set(self.wanted), set()
        for i in range(len(self.layers) - 1, -1, -1):
            lay = self.layers[i]
            if wanted & set(lay.top):
                needed.add(i)
                wanted |= set(lay.bottom)
        return needed

    def _outputs(self, layers: set[int]) -> None:
        if self.wanted is not None:
            self.graph.outputs.extend(self.values[name] for name in dict.fromkeys(self.wanted))
            return
        last_write = {}
        for i in sorted(layers):
            if self.layers[i].type != "Input":
                last_write.update(dict.fromkeys(self.layers[i].top, i))
        silenced = {name for lay in self.net.layer if lay.type == "Silence" and included(lay) for name in lay.bottom}
        unread = [name for name, i in sorted(last_write.items(), key=lambda item: item[1])
                  if name not in silenced and not any(name in self.layers[j].bottom for j in layers if j > i)]
        outputs = [self.values[name] for name in unread if name in self.values]
        if not outputs:
            raise ModelError("the net computes nothing (every blob it writes is read again)")
        self.graph.outputs.extend(dict.fromkeys(outputs))
