"""Core ML frontend: an `.mlpackage` or `.mlmodel` -> IR `Graph`, with coremltools' protobuf modules only (no
Core ML runtime, which exists only on Apple platforms).

An ML Program (`mlProgram`) is read op by op (program.py); a neural network (`neuralNetwork`, the `.mlmodel`
form before ML Programs) layer by layer (network.py). Pipelines, classifiers and the non-neural model kinds
are refused by name.
"""

from __future__ import annotations

from pathlib import Path

from tensorbridge.errors import ModelError
from tensorbridge.formats.coreml import read
from tensorbridge.frontends.coreml.network import read_network
from tensorbridge.frontends.coreml.program import read_program
from tensorbridge.ir.graph import Graph


def load(source, **_options) -> Graph:
    spec, folder = read(source)
    graph = Graph(Path(source).stem or "coreml")
    kind = spec.WhichOneof("Type")
    if kind == "mlProgram":
        read_program(spec, folder, graph)
    elif kind == "neuralNetwork":
        read_network(spec, graph)
    else:
        raise ModelError(f"a Core ML {kind} model: tensorbridge reads ML Programs and neural networks")
    graph.metadata["coreml"] = {"specification_version": spec.specificationVersion, "kind": kind}
    return graph
