"""QDQ -> integer ops (`--quant-format qlinear`): a quantized Conv or MatMul as one QLinearConv / QLinearMatMul.

The IR's canonical quantized form is QDQ: DequantizeLinear on the int8/uint8 inputs, the float
op, QuantizeLinear on its output. Here every

    Q( [Relu | Clip]( Conv( DQ(x), DQ(w), [DQ(b_int32) | b_float] ) ) )      (likewise MatMul, no bias)

whose parameters an integer kernel can take becomes the integer op: x per tensor, w per tensor
or per output channel, the bias as int32 at scale x_scale * w_scale (reused as stored when the
source already has exactly that scale, as TFLite does), and an activation only when the output's
quantized range already implies it (TFLite's fused ReLU/ReLU6 after requantization). Scales and
zero points are passed through untouched; anything else keeps the QDQ form.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.graph import Graph
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.ops.infer import infer_node
from tensorbridge.ops.quant import int32_bias

CONV_ATTRS = ("strides", "pads", "dilations", "group", "auto_pad", "kernel_shape", "layout")


def to_qlinear(graph: Graph) -> int:
    """Rewrite the matching patterns in place; returns how many ops became integer ops."""
    count = 0
    for node in list(graph.nodes):
        if node.graph is None or node.op not in ("Conv", "MatMul"):
            continue
        match = _match(node, graph)
        if match is not None:
            _rewrite(graph, node, *match)
            count += 1
    return count


def _dq(v: Value | None, per_axis_ok: bool = False, const: bool = False) -> Node | None:
    dq = v.producer if v is not None else None
    if dq is None or dq.op != "DequantizeLinear" or dq.attrs.get("block_size", 0) or dq.input(2) is None:
        return None
    if const and dq.inputs[0].const is None:
        return None
    scale = dq.inputs[1]
    if scale.shape is None or (len(scale.shape) and scale.shape[0] != 1 and not per_axis_ok):
        return None
    return dq



def _match(node: Node, graph: Graph):
    x_dq = _dq(node.inputs[0])
    w_dq = _dq(node.inputs[1], per_axis_ok=node.op == "Conv", const=True)
    if x_dq is None or w_dq is None or x_dq.inputs[0].dtype not in (np.int8, np.uint8):
        return None
    if node.op == "Conv" and w_dq.inputs[1].shape and w_dq.inputs[1].shape[0] != 1 and w_dq.attrs.get("axis", 1) != 0:
        return None
    reader = graph.only_reader(node.outputs[0])
    act = None
    if reader is not None and reader.op in ("Relu", "Clip"):
        act, reader = reader, graph.only_reader(reader.outputs[0])
    q = reader
    if q is None or q.op != "QuantizeLinear":
        return None
    if q.input(2) is None or q.inputs[1].shape not in ((), (1,)) or (act is not None and not _implied(act, q)):
        return None
    if node.op == "MatMul" and (len(node.inputs[1].shape or ()) != 2):
        return None
    bias = None
    if node.op == "Conv" and node.input(2) is not None:
        bias = _bias(node, x_dq, w_dq)
        if bias is None:
            return None
    return x_dq, w_dq, bias, q


def _quantized(value: float, q: Node) -> float:
    scale = float(np.asarray(q.inputs[1].const).reshape(-1)[0])
    zp = int(np.asarray(q.inputs[2].const).reshape(-1)[0])
    return np.rint(value / scale) + zp


def _implied(act: Node, q: Node) -> bool:
    """The activation changes nothing after requantization: its bounds lie outside the output's range."""
    if q.inputs[1].const is None or q.inputs[2].const is None:
        return False
    info = np.iinfo(q.inputs[2].const.dtype)
    if act.op == "Relu":
        return _quantized(0.0, q) <= info.min
    lo, hi = act.input(1), act.input(2)
    if any(v is not None and v.const is None for v in (lo, hi)):
        return False
    low_ok = lo is None or _quantized(float(lo.const), q) <= info.min
    high_ok = hi is None or _quantized(float(hi.const), q) >= info.max
    return low_ok and high_ok


def _bias(node: Node, x_dq: Node, w_dq: Node) -> np.ndarray | None:
    """The int32 bias at scale x_scale * w_scale, or None when it cannot be had exactly."""
    b = node.input(2)
    if x_dq.inputs[1].const is None or w_dq.inputs[1].const is None:
        return None
    scale = np.asarray(x_dq.inputs[1].const, np.float64).reshape(-1) * \
        np.asarray(w_dq.inputs[1].const, np.float64).reshape(-1)
    b_dq = _dq(b, per_axis_ok=True, const=True)
    if b_dq is not None and b_dq.inputs[0].dtype == np.int32:
        stored = np.asarray(b_dq.inputs[1].const, np.float64).reshape(-1)
        zp = np.asarray(b_dq.inputs[2].const).reshape(-1)
        if np.allclose(stored, scale, rtol=1e-6, atol=0) and not zp.any():
            return np.asarray(b_dq.inputs[0].const, np.int32)
        return None
    if b.const is not None:
        return int32_bias(b.const, x_dq.inputs[1].const, w_dq.inputs[1].const)[0]
    return None


def _rewrite(graph: Graph, node: Node, x_dq: Node, w_dq: Node, bias, q: Node) -> None:
    inputs = [x_dq.inputs[0], x_dq.inputs[1], x_dq.inputs[2], w_dq.inputs[0], w_dq.inputs[1], w_dq.inputs[2],
              q.inputs[1], q.inputs[2]]
    if node.op == "Conv":
        if bias is not None:
            inputs.append(graph.add_constant(f"{node.name}.bias_int32", bias))
        attrs = {k: v for k, v in node.attrs.items() if k in CONV_ATTRS}
        op = "QLinearConv"
    else:
        attrs, op = {}, "QLinearMatMul"
    new = graph.add_node(op, inputs, attrs, name=f"{node.name}.qlinear", meta=node.meta, before=q)
    infer_node(new)
    out = q.outputs[0]
    new.outputs[0].dtype, new.outputs[0].shape, new.outputs[0].quant = out.dtype, out.shape, out.quant
    name = out.name
    graph.replace_all_uses(out, new.outputs[0])
    out.name = graph.unique_name(f"{name}.qdq")
    new.outputs[0].name = name
    graph.remove_node(q)  # the float op and its DQs are left for dead-code elimination
