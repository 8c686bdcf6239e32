"""Per-layer verification: name the first op whose output diverges.

The source is loaded into the IR and run by the reference interpreter, which keeps every
intermediate value (it is tested equal to the source runtime). The target runtime exposes
its intermediates under the same IR value names (ONNX: extra graph outputs; generated
PyTorch code: the local each op writes; Keras: every layer's output; .tbir: the
interpreter); a target in the other channel order is compared after transposing back. Walking the source graph in
order, the first value present on both sides that fails the tolerance names the op, with
its provenance in the source model.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.verification.compare import compare


def first_divergence(src, runner, feeds, rtol=None, atol=None) -> dict:
    """The first diverging op as a dict (`op` is None when every compared value is close)."""
    from tensorbridge.api import load
    from tensorbridge.reference.interpreter import run

    if not hasattr(runner, "run_intermediates"):
        raise ModelError(f"per-layer comparison is not available for {runner.name} targets")
    graph = load(src)
    ref = run(graph, {v.name: feeds[v.name] for v in graph.inputs if v.name in feeds}, intermediates=True)
    got = runner.run_intermediates(feeds)
    checked = 0
    for node in graph.all_nodes():
        for v in node.outputs:
            # a layout-converted target keeps the value under "<name>.nhwc" / "<name>.nchw" (passes/to_layout)
            key = next((k for k in (v.name, f"{v.name}.nhwc", f"{v.name}.nchw") if k in got), None)
            if v.name not in ref or key is None:
                continue
            a, b = np.asarray(ref[v.name]), _align(np.asarray(ref[v.name]), np.asarray(got[key]))
            if b is None or a.dtype == object:
                continue
            checked += 1
            r = compare(v.name, v.name, a, b, rtol, atol)
            if not r.ok:
                meta = node.meta
                where = meta.get("module") or meta.get("source_name") or node.name
                return {"op": node.op, "node": node.name, "value": v.name, "robust_rel": r.robust_rel,
                        "max_abs": r.max_abs, "source": f"{meta.get('framework', '?')} {meta.get('source_op', node.op)}"
                        f" {where!r}", "values_compared": checked}
    return {"op": None, "values_compared": checked}


def _align(ref: np.ndarray, got: np.ndarray) -> np.ndarray | None:
    """`got` in `ref`'s layout: targets converted to the other channel order hold permuted values."""
    if got.shape == ref.shape:
        return got
    r = got.ndim
    if r >= 3 and r == ref.ndim:
        for perm in ([0, r - 1, *range(1, r - 1)], [0, *range(2, r), 1]):
            if tuple(got.shape[p] for p in perm) == ref.shape:
                return np.transpose(got, perm)
    return None
