"""Per-layer verification: name the first op whose output diverges.

The source is loaded into the IR and run by the reference interpreter, which keeps every
intermediate value (it is tested equal to the source runtime). The target runtime exposes
its intermediates under the same IR value names (ONNX: extra graph outputs; generated
PyTorch code: the local each op writes; Keras: every layer's output; TFLite: its tensors, named
after IR values by both TFLite writers; SavedModel: its ops, and each Keras layer's last op;
.tbir: the interpreter). A value the target holds in another layout (as its writer recorded in
the file: ONNX metadata, TFLite metadata, a code folder's tensorbridge.json) is compared after
transposing it back; a float source value is not compared with an integer target
tensor of the same name. Walking the source graph in order, the first value present on both
sides that fails the tolerance names the op, with its provenance in the source model.
Quantized values may differ by 1 LSB (a dequantized one by one step of its scale): frameworks
round requantization differently. The float value inside a quantized op (what its QuantizeLinear
reads) is not compared: integer kernels never hold it, and 1 LSB in its inputs moves it far.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import InputShapesNeeded, ModelError
from tensorbridge.ops.quant import inside_quantized_unit
from tensorbridge.verification.align import reorder
from tensorbridge.verification.compare import compare


def first_divergence(src, runner, feeds, target_feeds=None, rtol=None, atol=None, source_runner=None) -> dict:
    """The first diverging op as a dict (`op` is None when every compared value is close).

    `target_feeds` are the same inputs as the target takes them (another channel order), if they differ.
    A quantized source whose runner keeps its tensors (LiteRT) is its own reference: its integer tensors
    are compared, as its kernels computed them."""
    from tensorbridge.api import load
    from tensorbridge.reference.interpreter import run

    if not hasattr(runner, "run_intermediates"):
        raise ModelError(f"per-layer comparison is not available for {runner.name} targets")
    try:
        graph = load(src)
    except InputShapesNeeded:  # a source that records no input shapes is read with those of the inputs run
        graph = load(src, input_shapes={name: list(np.shape(a)) for name, a in feeds.items()})
    ref = _source_tensors(source_runner, graph, feeds)
    if ref is None:
        ref = run(graph, {v.name: feeds[v.name] for v in graph.inputs if v.name in feeds}, intermediates=True)
    got = runner.run_intermediates(feeds if target_feeds is None else target_feeds)
    checked, curve, first = 0, [], None
    layouts = runner.layouts() if hasattr(runner, "layouts") else {}
    for node in graph.all_nodes():
        for v in node.outputs:
            perm = layouts.get(v.name)
            if v.name not in ref or v.name not in got or inside_quantized_unit(v) or perm == "rows":
                continue
            a = np.asarray(ref[v.name])
            # a graph output converted with --io-layout target keeps its name in the target's channel order
            b = reorder(got[v.name], a.shape) if not perm else np.transpose(np.asarray(got[v.name]), np.argsort(perm))
            if b is None or a.dtype == object or (a.dtype.kind == "f") != (b.dtype.kind == "f"):
                continue
            checked += 1
            r = compare(v.name, v.name, a, b, rtol, atol if atol is not None else _one_step(node))
            curve.append({"node": node.name, "op": node.op, "value": v.name, "robust_rel": _finite(r.robust_rel),
                          "ok": r.ok})
            if not r.ok and first is None:
                meta = node.meta
                where = meta.get("module") or meta.get("source_name") or node.name
                first = {"op": node.op, "node": node.name, "value": v.name, "robust_rel": r.robust_rel,
                         "max_abs": r.max_abs, "source": f"{meta.get('framework', '?')} "
                         f"{meta.get('source_op', node.op)} {where!r}", "values_compared": checked}
    if not checked:
        raise ModelError(f"per-layer: no intermediate value of the target carries a source value's name "
                         f"({runner.name}; files written by other converters name their tensors their own way)")
    return {**(first or {"op": None}), "values_compared": checked, "curve": curve}


def _finite(x: float) -> float:
    return float(x) if np.isfinite(x) else 1e30


def _source_tensors(runner, graph, feeds) -> dict[str, np.ndarray] | None:
    """The quantized source's own integer tensors under IR value names (a TFLite tensor `t` is the IR's
    QuantizeLinear output `t.q`), or None when the source is not quantized or its runner cannot."""
    if runner is None or not hasattr(runner, "run_intermediates") or \
            not any(n.op == "QuantizeLinear" for n in graph.all_nodes()):
        return None
    got = runner.run_intermediates(feeds)
    own = {}
    for node in graph.all_nodes():
        for v in node.outputs:
            name = v.name if v.name in got else v.name.removesuffix(".q")
            if v.dtype is not None and v.dtype.kind in "iu" and name in got and np.asarray(got[name]).dtype == v.dtype:
                own[v.name] = got[name]
    return own


def _one_step(node) -> float | None:
    """A dequantized value may differ by one quantization step (1 LSB of its scale) between runtimes."""
    scale = node.input(1)
    if node.op == "DequantizeLinear" and scale is not None and scale.const is not None:
        return float(np.max(np.abs(scale.const))) * (1 + 1e-6)
    return None
