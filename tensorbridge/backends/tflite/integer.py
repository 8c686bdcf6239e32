"""Quantized IR -> TFLite with int8 kernels, keeping every given scale and zero point.

TensorFlow's converter cannot take a quantized model as it is: it recalibrates from a
representative dataset, or re-derives scales in float32 from fake-quant min/max, so the source's
parameters are not guaranteed to survive. A graph with QuantizeLinear in it is therefore written
here, directly (`flatbuffer.py`), after planning it channels-last.

Every float op N is written as TFLite's int8 kernel when
- each of its data inputs is DequantizeLinear(x) of an int8 tensor quantized per tensor,
- its weights are int8 constants behind a DequantizeLinear with zero point 0 (per tensor or per
  output channel) and its bias an int32 constant at scale x_scale * w_scale, and
- its only reader is a per-tensor int8 QuantizeLinear, directly or through a ReLU/ReLU6/Clip(-1, 1)
  that becomes the kernel's fused activation.
The kernel then reads the int8 tensors behind the DQs and writes the Q's int8 tensor, under the
Q's name, scale and zero point. A uint8 activation is held as int8 with its zero point less 128 (the
same reals; TFLite's int8 kernels take int8 weights, its uint8 ones do not), converted back to
uint8 only at a graph input or output of that type. Kernels that cannot rescale (pools, reshapes, pads, transposes)
or that have a fixed output scale (LOGISTIC, SOFTMAX, TANH) write at their own parameters and a
requantizing QUANTIZE follows. Any other op is written as its float kernel with DEQUANTIZE and
QUANTIZE at the seams, so the file computes what the graph says even where no integer kernel applies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tensorbridge.backends.tflite.flatbuffer import ACTIVATIONS, SAME, VALID, FlatbufferWriter, Quant
from tensorbridge.errors import BlockerReport
from tensorbridge.ir import dtypes, shapes
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.fold_constants import fold_constants
from tensorbridge.passes.infer_shapes import set_input_shapes
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget, plan_layout
from tensorbridge.reference.interpreter import run_node


def is_quantized(graph: Graph) -> bool:
    """Whether activations are quantized (weight-only DQ folds to float and goes through the converter)."""
    return any(n.op == "QuantizeLinear" for n in graph.all_nodes())


def to_flatbuffer(graph: Graph, target: LayoutTarget, layout: LayoutOptions | None = None) -> bytes:
    """The .tflite bytes; unknown input dims (a free batch) are fixed at 1, as TFLite's own files have them."""
    g = eliminate_dead_code(clone(graph))
    free = {v.name: [d if isinstance(d, int) else 1 for d in v.shape] for v in g.inputs
            if v.shape is not None and not shapes.is_static(v.shape)}
    if free:
        set_input_shapes(g, free)
    plan_layout(g, target, layout)
    g = eliminate_dead_code(fold_constants(eliminate_dead_code(g), keep=frozenset({"DequantizeLinear"})))
    return Lowering(g).run()


class NotInteger(Exception):
    """The op's operands do not fit an integer kernel: it is written in float instead."""


@dataclass
class Rule:
    """How one IR op becomes one TFLite builtin: `write(ctx)` returns its inputs and options."""

    builtin: str
    write: Callable
    data: tuple[int, ...] | None = (0,)  # activation inputs (None: all)
    keeps_quant: bool = False  # the int8 kernel cannot rescale: output at the input's parameters
    fixed_out: tuple[float, int] | None = None  # the int8 kernel's fixed output scale and zero point
    fuses: bool = False  # takes a fused activation
    int_version: int = 2


class Lowering:
    def __init__(self, graph: Graph):
        self.g = graph
        self.w = FlatbufferWriter()
        self.ints: dict[Value, int] = {}  # int8 values (and int32 biases) -> tensor
        self.floats: dict[Value, int] = {}  # float (and index) values -> tensor
        self.skip: set[Node] = set()
        self.report = BlockerReport("export to TFLite (integer kernels)", "tflite")

    def run(self) -> bytes:
        inputs = []
        for v in self.g.inputs:
            try:
                inputs.append(self._graph_input(v))
            except NotInteger as e:
                self.report.add("input", v.name, str(e))
        for node in self.g.nodes:
            if node in self.skip or node.op == "DequantizeLinear":
                continue  # a DQ is written only where a float reader needs it (`float_tensor`)
            try:
                self._node(node)
            except NotInteger as e:
                self.report.add(node.op, node.name, str(e))
        outputs = [self._output(v) for v in self.g.outputs]
        self.report.raise_if_any()
        return self.w.finish(inputs, outputs)

    # --- tensors -------------------------------------------------------------------------------

    def _shape(self, v: Value) -> tuple[int, ...]:
        if v.shape is None or not shapes.is_static(v.shape):
            raise NotInteger(f"{v.name!r} has no static shape (give the input shapes with --input-shape)")
        return tuple(int(d) for d in v.shape)

    def _graph_input(self, v: Value) -> int:
        if v.dtype is not None and dtypes.name(v.dtype) in ("int8", "uint8", "int16"):
            dq = next((n for n, _ in v.uses() if n.op == "DequantizeLinear"), None)
            q = _params(dq) if dq is not None else None
            if dtypes.name(v.dtype) != "uint8" or q is None:
                return self.int_tensor(v, q)
            index = self.w.tensor(v.name, self._shape(v), "uint8", quant=_unshifted(q))
            self.w.op("QUANTIZE", [index], [self.int_tensor(v, q, f"{v.name}.int8")], version=2)
            return index
        index = self.w.tensor(v.name, self._shape(v), dtypes.name(v.dtype))
        self.floats[v] = index
        return index

    def _output(self, v: Value) -> int:
        try:
            if v in self.ints and dtypes.name(v.dtype) == "uint8":
                held = self.w.tensors[self.ints[v]]
                held.name = f"{held.name}.int8"
                out = self.w.tensor(v.name, held.shape, "uint8", quant=_unshifted(held.quant))
                self.w.op("QUANTIZE", [self.ints[v]], [out], version=2)
                return out
            return self.ints[v] if v in self.ints else self.float_tensor(v)
        except NotInteger as e:
            self.report.add("output", v.name, str(e))
            return -1

    def int_tensor(self, v: Value, quant: Quant | None, name: str | None = None) -> int:
        """The tensor of an integer value (created with `quant` the first time)."""
        if v not in self.ints:
            dtype = quant.dtype if quant is not None and quant.dtype else dtypes.name(v.dtype)
            self.ints[v] = self.w.tensor(name or v.name, self._shape(v), dtype, quant=quant)
        return self.ints[v]

    def float_tensor(self, v: Value) -> int:
        """The float form of `v`: its tensor, a constant, or a DEQUANTIZE of the int8 tensor behind a DQ."""
        if v in self.floats:
            return self.floats[v]
        dq = v.producer if v.producer is not None and v.producer.op == "DequantizeLinear" else None
        if v.const is not None or dq is not None and dq.inputs[0].const is not None:
            arr = np.asarray(v.const if v.const is not None else _dequantized(dq))
            self.floats[v] = self.constant(v.name, arr)
        elif dq is not None:
            source = self.data_input(dq.inputs[0])
            self.floats[v] = self.w.tensor(v.name, self._shape(v), "float32")
            self.w.op("DEQUANTIZE", [source], [self.floats[v]], version=2)
        else:
            raise NotInteger(f"{v.name!r} is read before it is written")
        return self.floats[v]

    def data_input(self, v: Value) -> int:
        return self.ints[v] if v in self.ints else self.float_tensor(v)

    def constant(self, name: str, arr: np.ndarray, quant: Quant | None = None) -> int:
        arr = np.asarray(arr)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64:
            arr = arr.astype(np.int32)
        return self.w.tensor(name, arr.shape, dtypes.name(arr.dtype), arr.ravel(), quant)

    # --- nodes ---------------------------------------------------------------------------------

    def _node(self, node: Node) -> None:
        if node.op == "QuantizeLinear":
            return self._quantize(node)
        if node.op in ("Identity", "Dropout"):
            src = node.inputs[0]
            (self.ints if src in self.ints else self.floats)[node.outputs[0]] = self.data_input(src)
            return None
        rule = RULES.get(node.op)
        if rule is None:
            raise NotInteger("no TFLite kernel written for it yet")
        ctx = self._integer(node, rule)
        if ctx is None:
            ctx = Context(self, node, None, None)
            out = self.w.tensor(node.outputs[0].name, self._shape(node.outputs[0]), _float_name(node.outputs[0]))
            self.floats[node.outputs[0]] = out
            inputs, options = rule.write(ctx)
            self.w.op(ctx.builtin or rule.builtin, inputs, [out], options)
            return None
        return self._write_integer(node, rule, ctx)

    def _integer(self, node: Node, rule: Rule):
        """The integer context of `node` (its Q and fused activation), or None when it must run in float."""
        if rule.builtin in ("RESHAPE", "TRANSPOSE") and node.inputs[0] in self.ints:
            return Context(self, node, None, None, passthrough=True)
        data = range(len(node.inputs)) if rule.data is None else rule.data
        params = []
        for i in data:
            p = _activation_params(node.input(i)) or _const_params(node.input(i))
            if p is None:
                return None
            params.append(p)
        out, act, absorbed = node.outputs[0], None, []
        reader = _only_reader(out, self.g)
        if rule.fuses and reader is not None and _activation(reader) is not None:
            act, absorbed = _activation(reader), [reader]
            reader = _only_reader(reader.outputs[0], self.g)
        want = _params(reader) if reader is not None and reader.op == "QuantizeLinear" else None
        if want is None or want.axis is not None or want.dtype != "int8":
            return None
        ctx = Context(self, node, reader, act, in_params=params, absorbed=absorbed + [reader])
        if not rule_accepts(ctx, rule):
            return None
        return ctx

    def _write_integer(self, node: Node, rule: Rule, ctx: Context) -> None:
        if ctx.passthrough:
            src = node.inputs[0]
            out = self.int_tensor(node.outputs[0], self.w.tensors[self.ints[src]].quant)
            inputs, options = rule.write(ctx)
            self.w.op(ctx.builtin or rule.builtin, inputs, [out], options, version=rule.int_version)
            return
        self.skip.update(ctx.absorbed)
        q_out = ctx.q.outputs[0]
        want = _params(ctx.q)
        own = Quant(np.float32([rule.fixed_out[0]]), np.int64([rule.fixed_out[1]])) if rule.fixed_out else \
            ctx.in_params[0] if rule.keeps_quant else None
        inputs, options = rule.write(ctx)
        builtin = ctx.builtin or rule.builtin
        if own is None or own.same(want):
            self.w.op(builtin, inputs, [self.int_tensor(q_out, want)], options, version=rule.int_version)
            return
        tmp = self.w.tensor(f"{node.outputs[0].name}.int8", self._shape(q_out), "int8", quant=own)
        self.w.op(builtin, inputs, [tmp], options, version=rule.int_version)
        self.w.op("QUANTIZE", [tmp], [self.int_tensor(q_out, want)], version=2)

    def _quantize(self, node: Node) -> None:
        q = _params(node)
        if q is None or q.axis is not None:
            raise NotInteger("only per-tensor QuantizeLinear of activations is written")
        x = node.inputs[0]
        dq = x.producer if x.producer is not None and x.producer.op == "DequantizeLinear" else None
        source = self.ints[dq.inputs[0]] if dq is not None and dq.inputs[0] in self.ints else self.float_tensor(x)
        self.w.op("QUANTIZE", [source], [self.int_tensor(node.outputs[0], q)], version=2)


class Context:
    """What an op's `write` reads: its inputs in the chosen form, weights, and the fused activation."""

    def __init__(self, lw: Lowering, node: Node, q: Node | None, act: str | None, in_params=(), absorbed=(),
                 passthrough: bool = False):
        self.lw, self.node, self.q, self.act = lw, node, q, act
        self.builtin: str | None = None  # when the op's builtin depends on its attributes
        self.in_params, self.absorbed, self.passthrough = list(in_params), list(absorbed), passthrough

    @property
    def integer(self) -> bool:
        return self.q is not None or self.passthrough

    def x(self, i: int = 0) -> int:
        v = self.node.inputs[i]
        if self.passthrough:
            return self.lw.ints[v]
        if self.integer:
            dq = v.producer
            return self.lw.int_tensor(dq.inputs[0], _params(dq))
        return self.lw.float_tensor(v)

    def activation(self) -> int:
        return ACTIVATIONS[self.act]

    def const(self, i: int) -> np.ndarray | None:
        v = self.node.input(i)
        if v is None:
            return None
        if v.const is not None:
            return np.asarray(v.const)
        return _dequantized(v.producer) if _const_dq(v) is not None else None

    def index_const(self, name: str, values) -> int:
        return self.lw.constant(f"{self.node.name}.{name}", np.asarray(values, np.int32))

    def weight(self, i: int, perm, channel_axis: int) -> int:
        """Input `i` (a constant weight) permuted by `perm`: int8 with its per-channel axis, or float."""
        v = self.node.inputs[i]
        dq = _const_dq(v)
        if self.integer:
            q = _params(dq)
            arr = np.transpose(np.asarray(dq.inputs[0].const), perm)
            if q.axis is not None:
                q = Quant(q.scale, q.zero_point, list(perm).index(q.axis))
            return self.lw.constant(dq.inputs[0].name, arr, q)
        arr = self.const(i)
        if arr is None:
            raise NotInteger(f"TFLite takes its weights as constants; {v.name!r} is computed")
        return self.lw.constant(v.name, np.transpose(arr, perm).astype(np.float32))

    def bias(self, i: int) -> int:
        v = self.node.input(i)
        if v is None:
            return -1
        if self.integer:
            dq = _const_dq(v)
            q = _params(dq)
            quant = Quant(q.scale, np.zeros_like(q.zero_point, np.int64), 0 if q.axis is not None else None)
            return self.lw.constant(dq.inputs[0].name, np.asarray(dq.inputs[0].const, np.int32), quant)
        return self.lw.constant(v.name, self.const(i).astype(np.float32))


def rule_accepts(ctx: Context, rule: Rule) -> bool:
    """Integer kernels need int8 per-tensor data, zero-point-0 int8 weights and an int32 bias at x*w scale."""
    if any(p.axis is not None or p.dtype != "int8" for p in ctx.in_params):
        return False
    check = _WEIGHT_CHECKS.get(ctx.node.op)
    return check is None or check(ctx)


def _weighted(ctx: Context, w_index: int = 1, b_index: int | None = 2) -> bool:
    node = ctx.node
    dq = _const_dq(node.input(w_index))
    if dq is None or dq.inputs[0].dtype != np.int8 or np.any(np.asarray(_params(dq).zero_point) != 0):
        return False
    if b_index is None or node.input(b_index) is None:
        return True
    bq = _const_dq(node.input(b_index))
    if bq is None or bq.inputs[0].dtype != np.int32:
        return False
    expect = np.float64(ctx.in_params[0].scale).ravel() * np.asarray(_params(dq).scale, np.float64).ravel()
    got = np.asarray(_params(bq).scale, np.float64).ravel()
    return got.size in (1, expect.size) and bool(np.allclose(got, expect, rtol=1e-6, atol=0))


def _fc_ok(ctx: Context) -> bool:
    node = ctx.node
    if node.op == "Gemm":
        return _gemm_plain(node) and _weighted(ctx, 1, 2)
    return _weighted(ctx, 1, 2 if node.op == "Dense" else None)


_WEIGHT_CHECKS = {"Conv": _weighted, "Gemm": _fc_ok, "Dense": _fc_ok, "MatMul": _fc_ok}


# --- helpers over the IR -----------------------------------------------------------------------

def _params(node: Node | None) -> Quant | None:
    """Scale / zero point / axis of a Q or DQ node with constant parameters."""
    if node is None or node.input(1) is None or node.input(1).const is None or node.attrs.get("block_size", 0):
        return None
    scale = np.asarray(node.inputs[1].const, np.float32)
    zp_v = node.input(2)
    storage = node.inputs[0].dtype if node.op == "DequantizeLinear" else node.outputs[0].dtype
    zp = np.asarray(zp_v.const if zp_v is not None else np.zeros(scale.shape), np.int64)
    if zp_v is not None and zp_v.const is None:
        return None
    axis = None
    if scale.size > 1 or scale.ndim == 1 and node.op == "DequantizeLinear" and node.inputs[0].const is not None:
        rank = len(node.inputs[0].shape)
        axis = node.attrs.get("axis", 1) % rank
    storage = dtypes.name(storage) if storage is not None else None
    if storage == "uint8" and (node.op == "QuantizeLinear" or node.inputs[0].const is None):
        return Quant(scale.ravel(), zp.ravel() - 128, axis, "int8")  # the same reals, held as int8 (see below)
    return Quant(scale.ravel(), zp.ravel(), axis, storage)


def _unshifted(q: Quant) -> Quant:
    return Quant(q.scale, q.zero_point + 128, q.axis, "uint8")


def _activation_params(v: Value | None) -> Quant | None:
    """Per-tensor int8 parameters when `v` is DequantizeLinear of a computed int8 tensor."""
    dq = v.producer if v is not None else None
    if dq is None or dq.op != "DequantizeLinear" or dq.inputs[0].const is not None:
        return None
    q = _params(dq)
    return q if q is not None and q.axis is None else None


def _const_params(v: Value | None) -> Quant | None:
    """Per-tensor parameters of a quantized constant operand (the other side of an int8 ADD or MUL)."""
    dq = _const_dq(v)
    q = _params(dq) if dq is not None else None
    return q if q is not None and q.axis is None else None


def _const_dq(v: Value | None) -> Node | None:
    dq = v.producer if v is not None else None
    if dq is not None and dq.op == "DequantizeLinear" and dq.inputs[0].const is not None and _params(dq) is not None:
        return dq
    return None


def _dequantized(dq: Node) -> np.ndarray:
    return np.asarray(run_node(dq, [None if v is None else v.const for v in dq.inputs])[0], np.float32)


def _only_reader(v: Value, graph: Graph) -> Node | None:
    uses = v.uses()
    return uses[0][0] if len(uses) == 1 and v not in graph.outputs else None


def _activation(node: Node) -> str | None:
    if node.op == "Relu":
        return "RELU"
    if node.op == "Clip":
        lo, hi = (_scalar(node.input(i)) for i in (1, 2))
        return {(0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, None): "RELU"}.get((lo, hi))
    return None


def _scalar(v: Value | None):
    return None if v is None or v.const is None else float(np.asarray(v.const).ravel()[0])


def _float_name(v: Value) -> str:
    return dtypes.name(v.dtype) if v.dtype is not None else "float32"


def _gemm_plain(node: Node) -> bool:
    a = node.attrs
    return a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0 and not a.get("transA", 0)


# --- op writers ---------------------------------------------------------------------------------

def _padding(ctx: Context, in_shape, kernel, strides, dilations, out_shape) -> tuple[int, list[int] | None]:
    """TFLite padding of the NHWC spatial dims: SAME, VALID, or VALID after explicit pads [top, left, bottom, right]."""
    a = ctx.node.attrs
    auto = a.get("auto_pad", "NOTSET")
    if auto == "SAME_UPPER":
        return SAME, None
    if auto == "VALID":
        return VALID, None
    if auto not in ("NOTSET", None):
        raise NotInteger(f"auto_pad {auto} has no TFLite padding")
    pads = list(a.get("pads") or [0] * 4)
    if not any(pads):
        return VALID, None
    same = []
    for size, k, s, d, o in zip(in_shape[1:3], kernel, strides, dilations, out_shape[1:3]):
        total = max((o - 1) * s + (k - 1) * d + 1 - size, 0)
        same.append((total // 2, total - total // 2))
    if pads == [same[0][0], same[1][0], same[0][1], same[1][1]] and \
            all(-(-size // s) == o for size, s, o in zip(in_shape[1:3], strides, out_shape[1:3])):
        return SAME, None
    return VALID, pads


def _explicit_pad(ctx: Context, x: int, pads: list[int], fill: float | None) -> int:
    """PAD (zero; an int8 tensor pads with its zero point) or PADV2 with `fill` before a VALID window op."""
    lw = ctx.lw
    src = lw.w.tensors[x]
    shape = list(src.shape)
    shape[1] += pads[0] + pads[2]
    shape[2] += pads[1] + pads[3]
    out = lw.w.tensor(f"{ctx.node.name}.padded", shape, src.dtype, quant=src.quant)
    paddings = ctx.index_const("paddings", [[0, 0], [pads[0], pads[2]], [pads[1], pads[3]], [0, 0]])
    if fill is None:
        lw.w.op("PAD", [x, paddings], [out], version=2 if ctx.integer else 1)
    else:
        value = np.asarray([np.iinfo(np.dtype(src.dtype)).min if ctx.integer else np.finfo(np.float32).min],
                           np.dtype(src.dtype))
        lw.w.op("PADV2", [x, paddings, lw.constant(f"{ctx.node.name}.fill", value.reshape(()), src.quant)], [out],
                version=2 if ctx.integer else 1)
    return out


def _window(ctx: Context, kernel, fill=None):
    node = ctx.node
    if node.attrs.get("layout") != "NHWC" or len(node.inputs[0].shape) != 4:
        raise NotInteger("only 2-D windows in NHWC are written")
    a = node.attrs
    strides = list(a.get("strides") or [1, 1])
    dilations = list(a.get("dilations") or [1, 1])
    x = ctx.x(0)
    padding, pads = _padding(ctx, node.inputs[0].shape, kernel, strides, dilations, node.outputs[0].shape)
    if pads is not None:
        if fill == "refuse":
            raise NotInteger(f"pads {pads} exclude padding from the average only when they equal SAME")
        x = _explicit_pad(ctx, x, pads, fill)
    return x, padding, strides, dilations


def _conv(ctx: Context):
    node = ctx.node
    w_shape = node.inputs[1].shape
    x, padding, strides, dil = _window(ctx, w_shape[2:])
    opts = {"Padding": padding, "StrideW": strides[1], "StrideH": strides[0], "DilationWFactor": dil[1],
            "DilationHFactor": dil[0], "FusedActivationFunction": ctx.activation()}
    group = node.attrs.get("group", 1)
    if group == 1:
        return [x, ctx.weight(1, (0, 2, 3, 1), 0), ctx.bias(2)], ("Conv2DOptions", opts)
    if group == node.inputs[0].shape[-1] and w_shape[1] == 1:
        opts["DepthMultiplier"] = w_shape[0] // group
        ctx.builtin = "DEPTHWISE_CONV_2D"
        return [x, ctx.weight(1, (1, 2, 3, 0), 3), ctx.bias(2)], ("DepthwiseConv2DOptions", opts)
    raise NotInteger(f"grouped convolution (group={group}) is not written")


def _fc(ctx: Context):
    node = ctx.node
    if node.op == "Gemm":
        if not _gemm_plain(node):
            raise NotInteger("Gemm with alpha/beta/transA is not written")
        perm, bias = ((0, 1) if node.attrs.get("transB", 0) else (1, 0)), 2
    elif node.op == "Dense":
        perm, bias = (1, 0), 2
    else:
        if node.inputs[1].shape is None or len(node.inputs[1].shape) != 2:
            raise NotInteger("MatMul is written as FULLY_CONNECTED only with a 2-D constant right operand")
        perm, bias = (1, 0), None
    weight = ctx.weight(1, perm, 0)
    opts = {"FusedActivationFunction": ctx.activation(), "KeepNumDims": len(node.inputs[0].shape) > 2}
    return [ctx.x(0), weight, ctx.bias(bias) if bias is not None else -1], ("FullyConnectedOptions", opts)


def _binary(table: str):
    def write(ctx: Context):
        return [_operand(ctx, 0), _operand(ctx, 1)], (table, {"FusedActivationFunction": ctx.activation()})
    return write


def _operand(ctx: Context, i: int) -> int:
    v = ctx.node.inputs[i]
    if ctx.integer and _const_dq(v) is not None:
        dq = _const_dq(v)
        return ctx.lw.constant(dq.inputs[0].name, np.asarray(dq.inputs[0].const), _params(dq))
    return ctx.x(i)


def _pool(fill):
    def write(ctx: Context):
        k = ctx.node.attrs["kernel_shape"]
        if ctx.node.attrs.get("ceil_mode", 0) or list(ctx.node.attrs.get("dilations") or [1, 1]) != [1, 1]:
            raise NotInteger("ceil_mode and dilated pooling are not written")
        pad_fill = fill if fill != "average" else (0.0 if ctx.node.attrs.get("count_include_pad") else "refuse")
        x, padding, strides, _ = _window(ctx, k, None if pad_fill == 0.0 else pad_fill)
        return [x], ("Pool2DOptions", {"Padding": padding, "StrideW": strides[1], "StrideH": strides[0],
                                       "FilterWidth": k[1], "FilterHeight": k[0],
                                       "FusedActivationFunction": ctx.activation()})
    return write


def _global(ctx: Context):
    if ctx.node.attrs.get("layout") != "NHWC":
        raise NotInteger("global pooling is written in NHWC only")
    rank = len(ctx.node.inputs[0].shape)
    return [ctx.x(0), ctx.index_const("axes", list(range(1, rank - 1)))], ("ReducerOptions", {"KeepDims": True})


def _reduce(ctx: Context):
    node = ctx.node
    rank = len(node.inputs[0].shape)
    axes = ctx.const(1) if node.input(1) is not None else node.attrs.get("axes")
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in np.asarray(axes).ravel()]
    keep = bool(node.attrs.get("keepdims", 1))
    return [ctx.x(0), ctx.index_const("axes", axes)], ("ReducerOptions", {"KeepDims": keep})


def _reshape(ctx: Context):
    return [ctx.x(0), ctx.index_const("shape", ctx.lw._shape(ctx.node.outputs[0]))], None


def _transpose(ctx: Context):
    perm = ctx.node.attrs.get("perm") or list(reversed(range(len(ctx.node.inputs[0].shape))))
    return [ctx.x(0), ctx.index_const("perm", perm)], None


def _concat(ctx: Context):
    rank = len(ctx.node.outputs[0].shape)
    inputs = [ctx.x(i) for i in range(len(ctx.node.inputs))]
    return inputs, ("ConcatenationOptions", {"Axis": ctx.node.attrs["axis"] % rank,
                                             "FusedActivationFunction": ctx.activation()})


def _pad(ctx: Context):
    node = ctx.node
    if node.attrs.get("mode", "constant") != "constant" or node.input(3) is not None:
        raise NotInteger("only constant Pad over all axes is written")
    pads = ctx.const(1)
    value = ctx.const(2)
    if pads is None or value is not None and float(np.asarray(value).ravel()[0]) != 0.0:
        raise NotInteger("Pad is written with constant pads and a zero fill")
    rank = len(node.inputs[0].shape)
    pads = np.asarray(pads, np.int64).ravel()
    return [ctx.x(0), ctx.index_const("paddings", np.stack([pads[:rank], pads[rank:]], 1))], None


def _unary(ctx: Context):
    return [ctx.x(0)], None


def _activation_op(ctx: Context):
    ctx.builtin = _activation(ctx.node)
    if ctx.builtin is None:
        raise NotInteger("Clip is written only as ReLU, ReLU6 or ReLU(-1, 1)")
    return [ctx.x(0)], None


def _softmax(ctx: Context):
    rank = len(ctx.node.inputs[0].shape)
    if ctx.node.attrs.get("axis", -1) % rank != rank - 1:
        raise NotInteger("SOFTMAX works on the last axis only")
    return [ctx.x(0)], ("SoftmaxOptions", {"Beta": 1.0})


def _leaky(ctx: Context):
    return [ctx.x(0)], ("LeakyReluOptions", {"Alpha": float(ctx.node.attrs.get("alpha", 0.01))})


RULES: dict[str, Rule] = {
    "Conv": Rule("CONV_2D", _conv, fuses=True, int_version=3),
    "Gemm": Rule("FULLY_CONNECTED", _fc, fuses=True, int_version=4),
    "Dense": Rule("FULLY_CONNECTED", _fc, fuses=True, int_version=4),
    "MatMul": Rule("FULLY_CONNECTED", _fc, fuses=True, int_version=4),
    "Add": Rule("ADD", _binary("AddOptions"), data=None, fuses=True),
    "Sub": Rule("SUB", _binary("SubOptions"), data=None, fuses=True),
    "Mul": Rule("MUL", _binary("MulOptions"), data=None, fuses=True),
    "MaxPool": Rule("MAX_POOL_2D", _pool("lowest"), keeps_quant=True, fuses=True),
    "AveragePool": Rule("AVERAGE_POOL_2D", _pool("average"), keeps_quant=True, fuses=True),
    "GlobalAveragePool": Rule("MEAN", _global),
    "GlobalMaxPool": Rule("REDUCE_MAX", _global, keeps_quant=True),
    "ReduceMean": Rule("MEAN", _reduce),
    "ReduceMax": Rule("REDUCE_MAX", _reduce, keeps_quant=True),
    "Reshape": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Flatten": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Squeeze": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Unsqueeze": Rule("RESHAPE", _reshape, keeps_quant=True, int_version=1),
    "Transpose": Rule("TRANSPOSE", _transpose, keeps_quant=True),
    "Concat": Rule("CONCATENATION", _concat, data=None),
    "Pad": Rule("PAD", _pad, keeps_quant=True),
    "Relu": Rule("RELU", _activation_op),
    "Clip": Rule("RELU6", _activation_op),
    "Sigmoid": Rule("LOGISTIC", _unary, fixed_out=(1 / 256, -128)),
    "Tanh": Rule("TANH", _unary, fixed_out=(1 / 128, 0)),
    "Softmax": Rule("SOFTMAX", _softmax, fixed_out=(1 / 256, -128)),
    "HardSwish": Rule("HARD_SWISH", _unary),
    "LeakyRelu": Rule("LEAKY_RELU", _leaky),
}
