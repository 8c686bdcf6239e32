"""`Pipeline`: a backend's named sequence of passes, run in order, checked between passes when asked.

A backend declares its pipeline (which passes, in which order, with which options) instead of
calling passes by hand. With checking on (`--debug`, or `TENSORBRIDGE_CHECK_PASSES=1`, which
the test suite sets) the IR checker runs after every pass and names the pass that broke the graph.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from tensorbridge.errors import InvariantError
from tensorbridge.ir import checker
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.fold_constants import fold_constants, fold_keeping_quantization
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget, plan_layout

log = logging.getLogger(__name__)
CHECK_ENV = "TENSORBRIDGE_CHECK_PASSES"


def checking() -> bool:
    return os.environ.get(CHECK_ENV, "") not in ("", "0")


@dataclass
class Pipeline:
    """Passes run in order; each takes a graph and returns it (or None when it edits in place)."""

    name: str
    steps: list[tuple[str, Callable[[Graph], Graph | None]]] = field(default_factory=list)

    def then(self, name: str, fn: Callable[[Graph], Graph | None]) -> Pipeline:
        self.steps.append((name, fn))
        return self

    def run(self, graph: Graph, check: bool | None = None) -> Graph:
        check = checking() if check is None else check
        for name, fn in self.steps:
            log.debug("%s: %s", self.name, name)
            result = fn(graph)
            graph = result if isinstance(result, Graph) else graph
            if check:
                try:
                    checker.check(graph)
                except InvariantError as e:
                    raise RuntimeError(f"{self.name}: pass {name!r} left a malformed graph (a bug): {e}") from None
        return graph


def writer_pipeline(name: str, target: LayoutTarget, legalize: Callable[[Graph], Graph | None],
                    layout: LayoutOptions | None = None) -> Pipeline:
    """The pipeline of a backend that writes each node as framework ops: dead code out, the layout planned for
    `target` (constants folded first, so an If of a constant condition is its branch and the layout sees its
    shapes), constants folded, what the writer cannot take decomposed or reported (`legalize`), dead code out."""
    p = Pipeline(name).then("dead code", eliminate_dead_code).then("fold constants", fold_keeping_quantization)
    p.then("layout", lambda g: plan_layout(g, target, layout))
    p.then("fold constants", fold_constants)
    p.then("legalize", legalize)
    return p.then("dead code", eliminate_dead_code)
