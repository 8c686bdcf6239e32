"""Runs an IR graph (or a `.tbir` file) with the reference interpreter."""

from __future__ import annotations

from tensorbridge.ir.graph import Graph


class ReferenceRunner:
    name = "reference interpreter"

    def __init__(self, source, **load_options):
        from tensorbridge.api import load

        self.graph: Graph = source if isinstance(source, Graph) else load(source, **load_options)
        self.inputs = [(v.name, v.dtype, v.shape) for v in self.graph.inputs]
        self.outputs = [v.name for v in self.graph.outputs]

    def run(self, feeds, intermediates: bool = False):
        from tensorbridge.reference.interpreter import run

        return run(self.graph, feeds, intermediates=intermediates)

    def layouts(self) -> dict:
        return self.graph.layouts()

    def run_intermediates(self, feeds):
        return self.run(feeds, intermediates=True)
