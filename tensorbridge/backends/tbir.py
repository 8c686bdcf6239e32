"""`.tbir` backend: the IR itself, re-planned for a layout when one is asked (the IR holds either)."""

from __future__ import annotations

from tensorbridge.ir import serde
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget, plan_layout

LAYOUT = LayoutTarget()


def save(graph: Graph, path, layout: LayoutOptions | None = None, **_options) -> None:
    if layout is not None:
        graph = clone(graph)
        plan_layout(graph, LAYOUT, layout)
        graph = eliminate_dead_code(graph)
    serde.save(graph, path)
