"""The Python API: `load`, `save`, `convert`, `verify`, `run`.

Outputs are written atomically: into a temporary folder beside the destination first, then
moved into place, so a failed conversion never leaves a partial file behind.
"""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from tensorbridge import frameworks, trust
from tensorbridge.errors import InvariantError, ModelError, VerificationError, reading
from tensorbridge.ir.checker import check
from tensorbridge.ir.graph import Graph

log = logging.getLogger(__name__)


def load(source, format: str | None = None, input_shapes: dict | None = None, input_dtypes: dict | None = None,
         trust_code: bool = False, **options) -> Graph:
    """Load a model (path or in-memory object) into an IR `Graph`.

    `input_shapes` ({name: [dims]}) fixes or names input dims (a TorchScript archive, which records none,
    needs them, with `input_dtypes` ({name: dtype}) for inputs other than float32); `options` go to the
    frontend (PyTorch: `example_inputs`, `dynamic_shapes`). Sources that are code (a generated code folder, a
    TorchScript archive) load only with `trust_code=True`: loading them runs what they hold.
    """
    with trust.trusting(trust_code):
        return _load(source, format, input_shapes, input_dtypes, **options)


def _load(source, format, input_shapes, input_dtypes, **options) -> Graph:
    if isinstance(source, Graph):
        return source
    if not isinstance(source, (str, os.PathLike)):
        fmt = frameworks.by_name(format) if format else frameworks.for_object(source)
    else:
        path = Path(source)
        if not path.exists():
            raise ModelError(f"no such file: {path}")
        fmt = frameworks.detect(path, format)
    if fmt.loader is None:
        raise ModelError(f"tensorbridge cannot read {fmt.name} models yet")
    loader = frameworks.resolve(fmt.loader)
    accepted = inspect.signature(loader).parameters
    for key, value in (("input_shapes", input_shapes), ("input_dtypes", input_dtypes)):
        if value and key in accepted:
            options[key] = value
    with reading(f"{source} is not a readable {fmt.name} model"):
        graph = loader(source, **options)
    if input_shapes:
        from tensorbridge.passes.infer_shapes import set_input_shapes

        set_input_shapes(graph, input_shapes)
    try:
        check(graph)  # a malformed source is refused here, before any pass or backend reads it
    except InvariantError as e:
        if not input_shapes:
            raise
        given = " ".join(f"--input-shape {k}={','.join(map(str, v))}" for k, v in input_shapes.items())
        raise ModelError(f"with {given} (input_shapes): {e}") from None
    return graph


def save(graph: Graph, dest, to: str | None = None, **options) -> Path:
    """Write `graph` to `dest` in format `to` (default: from the extension)."""
    dest = Path(dest)
    fmt = frameworks.detect(dest, to, source=False)
    if fmt.saver is None:
        raise ModelError(f"tensorbridge cannot write {fmt.name} models yet")
    saver = frameworks.resolve(fmt.saver)
    check(graph)
    graph = _lowered_for(graph, fmt)
    parent = dest.parent if str(dest.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=parent))
    try:
        saver(graph, staging / dest.name, **options)
        for item in staging.iterdir():
            target = parent / item.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(item, target)
            if target.is_dir():
                trust.written_by_us(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def _lowered_for(graph: Graph, fmt: frameworks.Format) -> Graph:
    """The graph with the attribute variants the target's writer does not carry out itself lowered to plain ops
    (a copy: the caller's graph is left as it is)."""
    from tensorbridge.passes.lower import has_variants, lower_variants

    registry = frameworks.registry(fmt)
    if registry is None or not has_variants(graph, registry.variants):
        return graph
    from tensorbridge.ir.graph import clone

    return lower_variants(clone(graph), registry.variants)


def convert(src, dst, to: str | None = None, verify: bool = False, input_shapes=None,
            rtol: float | None = None, atol: float | None = None, inputs=None, seed: int = 0, layout=None,
            format: str | None = None, trust_code: bool = False):
    """Convert `src` (in `format`, where its content and name do not tell) to `dst`; with `verify=True` run
    both and return the `Report`.

    `layout` is a `tensorbridge.passes.layout.LayoutOptions` (--layout, --io-layout, --pin-layout);
    `trust_code` as for `load`.
    """
    graph = load(src, format=format, input_shapes=input_shapes, trust_code=trust_code)
    save(graph, dst, to=to, **({"layout": layout} if layout is not None else {}))
    if not verify:
        return None
    return globals()["verify"](src, dst, inputs=inputs, rtol=rtol, atol=atol, seed=seed,
                               input_shapes=input_shapes, format=format, trust_code=trust_code)


def verify(src, dst, inputs=None, rtol: float | None = None, atol: float | None = None, seed: int = 0,
           input_shapes=None, per_layer: bool = False, raise_on_failure: bool = False, format: str | None = None,
           input_dtypes: dict | None = None, trust_code: bool = False):
    """Run `src` and `dst` on the same inputs and compare every output (`format`: the source's, where its
    content and name do not tell).

    With `per_layer=True`, also name the first op whose output diverges (`report.first_divergence`);
    `trust_code` as for `load`.
    """
    from tensorbridge.verification.harness import verify as _verify

    with trust.trusting(trust_code):
        report = _verify(src, dst, inputs=inputs, rtol=rtol, atol=atol, seed=seed, input_shapes=input_shapes,
                         per_layer=per_layer, src_format=format, input_dtypes=input_dtypes)
    if raise_on_failure and not report.ok:
        raise VerificationError(report.summary(), report)
    return report


def run(graph: Graph, inputs: dict[str, np.ndarray], intermediates: bool = False) -> dict[str, np.ndarray]:
    """Run a graph with the NumPy reference interpreter."""
    from tensorbridge.reference.interpreter import run as _run

    return _run(load(graph), inputs, intermediates=intermediates)
