"""A Core ML neural network (the `neuralNetwork` of an `.mlmodel` spec) read into an IR `Graph`.

Layers come in order, each naming its input and output blobs; the model's description gives the inputs'
shapes and types. Every layer is checked before any is read, and every blocker is reported together.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import BlockerReport, ModelError, TensorbridgeError
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.rules.coreml import REGISTRY

#: ArrayFeatureType data types -> NumPy's
ARRAY_DTYPES = {65568: np.float32, 65600: np.float64, 131104: np.int32, 65552: np.float16}


def read_network(spec, graph: Graph) -> None:
    reader = NetworkReader(graph)
    for feature in spec.description.input:
        reader.values[feature.name] = graph.add_input(feature.name, *_array_type(feature))
    reader.run(spec.neuralNetwork.layers, [f.name for f in spec.description.output])


class NetworkReader:
    def __init__(self, graph: Graph):
        self.graph, self.b = graph, Builder(graph)
        self.values: dict[str, object] = {}
        self.params = None
        self.inputs: list = []

    @property
    def x(self):
        return self.inputs[0]

    def weight(self, suffix: str, array):
        return self.b.weight(self.b.name(suffix), np.asarray(array))

    def run(self, layers, outputs: list[str]) -> None:
        report = BlockerReport("reading the Core ML neural network", "coreml")
        for lay in layers:
            if REGISTRY.import_rule(lay.WhichOneof("layer") or "", "layer") is None:
                report.add(lay.WhichOneof("layer") or "(empty)", lay.name, "neural-network layer without a rule")
        report.raise_if_any()
        for lay in layers:
            kind = lay.WhichOneof("layer")
            if any(name not in self.values for name in lay.input):
                continue  # it reads a layer that could not be read (reported)
            self.params, self.inputs = getattr(lay, kind), [self.values[name] for name in lay.input]
            self.b.at(lay.output[0] if lay.output else lay.name,
                      {"framework": "coreml", "source_op": kind, "source_name": lay.name})
            try:
                results = REGISTRY.import_rule(kind, "layer").convert(self, lay)
            except TensorbridgeError as e:
                report.add(kind, lay.name, str(e))
                continue
            results = results if isinstance(results, list) else [results]
            if len(results) != len(lay.output):
                report.add(kind, lay.name, f"{len(lay.output)} outputs, read as {len(results)}")
                continue
            self.values.update(zip(lay.output, results))
        report.raise_if_any()
        missing = [name for name in outputs if name not in self.values]
        if missing:
            raise ModelError(f"no layer computes the model's output(s) {missing}")
        self.graph.outputs.extend(self.values[name] for name in outputs)
        eliminate_dead_code(self.graph)


def _array_type(feature) -> tuple[np.dtype, tuple]:
    if feature.type.WhichOneof("Type") != "multiArrayType":
        raise ModelError(f"input {feature.name!r} is a {feature.type.WhichOneof('Type')}, not a multi-array")
    t = feature.type.multiArrayType
    if t.dataType not in ARRAY_DTYPES:
        raise ModelError(f"input {feature.name!r} has array data type {t.dataType}")
    return np.dtype(ARRAY_DTYPES[t.dataType]), tuple(int(d) for d in t.shape)
