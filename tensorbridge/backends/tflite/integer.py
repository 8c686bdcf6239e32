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

import numpy as np

from tensorbridge.errors import BlockerReport
from tensorbridge.formats.tflite_flatbuffer import ACTIVATIONS, TENSOR_TYPES, FlatbufferWriter, Quant
from tensorbridge.ir import dtypes, shapes
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.ops import schema as op_schema
from tensorbridge.ops.quant import int32_bias
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.fold_constants import fold_constants
from tensorbridge.passes.infer_shapes import set_input_shapes
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget, plan_layout
from tensorbridge.passes.pipeline import Pipeline
from tensorbridge.rules.tflite import REGISTRY
from tensorbridge.rules.tflite.kernel import (
    NotInteger,
    Rule,
    activation,
    activation_params,
    const_dq,
    const_params,
    dequantized,
    float_name,
    params,
    rule_accepts,
    unshifted,
)

NO_KERNEL = "no TFLite kernel written for it yet"
PLUMBING = {"QuantizeLinear", "DequantizeLinear"}  # the quantization itself, written where it is read


def is_quantized(graph: Graph) -> bool:
    """Whether activations are quantized (weight-only DQ folds to float and goes through the converter)."""
    return any(n.op == "QuantizeLinear" for n in graph.all_nodes())


def to_flatbuffer(graph: Graph, target: LayoutTarget, layout: LayoutOptions | None = None) -> bytes:
    """The .tflite bytes; unknown input dims (a free batch) are fixed at 1, as TFLite's own files have them."""
    return Lowering(pipeline(target, layout).run(clone(graph))).run()


def pipeline(target: LayoutTarget, layout: LayoutOptions | None = None) -> Pipeline:
    """Dead code out, free dims fixed at 1, layouts planned, ops without a kernel decomposed (an integer-op
    source's QLinearConv back to its QDQ unit), constants folded with quantized weights kept as QDQ."""
    return Pipeline("TFLite (integer kernels)").then("dead code", eliminate_dead_code) \
        .then("static shapes", _fix_free_dims).then("layout", lambda g: plan_layout(g, target, layout)) \
        .then("decompose", _decompose_unwritten).then("dead code", eliminate_dead_code) \
        .then("fold constants", lambda g: fold_constants(g, keep=frozenset({"DequantizeLinear"}))) \
        .then("dead code", eliminate_dead_code)


def _fix_free_dims(g: Graph) -> None:
    free = {v.name: [d if isinstance(d, int) else 1 for d in v.shape] for v in g.inputs
            if v.shape is not None and not shapes.is_static(v.shape)}
    if free:
        set_input_shapes(g, free)


def _decompose_unwritten(g: Graph) -> None:
    for node in list(g.nodes):
        schema = op_schema.get(node.op)
        if REGISTRY.export_rule(node.op) is None and node.op not in PLUMBING and schema.decompose is not None:
            schema.decompose(g, node)


def _storable(dtype: str) -> str:
    if dtype not in TENSOR_TYPES:
        raise NotInteger(f"TFLite has no {dtype} tensors")
    return dtype


class Lowering:
    def __init__(self, graph: Graph):
        self.g = graph
        self.w = FlatbufferWriter()
        self.ints: dict[Value, int] = {}  # int8 values (and int32 biases) -> tensor
        self.floats: dict[Value, int] = {}  # float (and index) values -> tensor
        self.skip: set[Node] = set()
        self.report = BlockerReport("export to TFLite (integer kernels)", "tflite")
        self.int8_of: dict[str, str] = {}  # int8 tensor -> the uint8 IR value it holds (zero point less 128)

    def run(self) -> bytes:
        inputs = []
        for v in self.g.inputs:
            try:
                inputs.append(self._graph_input(v))
            except NotInteger as e:
                self.report.add("input", v.name, str(e))
        blocked: set[Value] = set()  # outputs of ops that could not be written (their readers are not reported)
        for node in self.g.nodes:
            if blocked.intersection(node.inputs):
                blocked.update(node.outputs)
                if REGISTRY.export_rule(node.op) is None and node.op not in PLUMBING:
                    self.report.add(node.op, node.name, NO_KERNEL)
                continue
            if node in self.skip or node.op == "DequantizeLinear":
                continue  # a DQ is written only where a float reader needs it (`float_tensor`)
            try:
                self._node(node)
            except NotInteger as e:
                self.report.add(node.op, node.name, str(e))
                blocked.update(node.outputs)
        self.report.raise_if_any()
        outputs = [self._output(v) for v in self.g.outputs]
        self.report.raise_if_any()
        return self.w.finish(inputs, outputs, {"layouts": self.g.layouts(), "int8_of": self.int8_of})

    # --- tensors -------------------------------------------------------------------------------

    def _shape(self, v: Value) -> tuple[int, ...]:
        if v.shape is None or not shapes.is_static(v.shape):
            raise NotInteger(f"{v.name!r} has no static shape (give the input shapes with --input-shape)")
        return tuple(int(d) for d in v.shape)

    def _graph_input(self, v: Value) -> int:
        _storable(dtypes.name(v.dtype))
        if v.dtype is not None and dtypes.name(v.dtype) in ("int8", "uint8", "int16"):
            dq = next((n for n, _ in v.uses() if n.op == "DequantizeLinear"), None)
            q = params(dq) if dq is not None else None
            if dtypes.name(v.dtype) != "uint8" or q is None:
                return self.int_tensor(v, q)
            index = self.w.tensor(v.name, self._shape(v), "uint8", quant=unshifted(q))
            self.w.op("QUANTIZE", [index], [self.int_tensor(v, q)], version=2)
            return index
        index = self.w.tensor(v.name, self._shape(v), dtypes.name(v.dtype))
        self.floats[v] = index
        return index

    def _output(self, v: Value) -> int:
        try:
            if v in self.ints and dtypes.name(v.dtype) == "uint8":
                held = self.w.tensors[self.ints[v]]
                out = self.w.tensor(v.name, held.shape, "uint8", quant=unshifted(held.quant))
                self.w.op("QUANTIZE", [self.ints[v]], [out], version=2)
                return out
            return self.ints[v] if v in self.ints else self.float_tensor(v)
        except NotInteger as e:
            self.report.add("output", v.name, str(e))
            return -1

    def int_tensor(self, v: Value, quant: Quant | None, name: str | None = None) -> int:
        """The tensor of an integer value (created with `quant` the first time)."""
        if v not in self.ints:
            dtype = _storable(quant.dtype if quant is not None and quant.dtype else dtypes.name(v.dtype))
            held = dtype != dtypes.name(v.dtype)  # a uint8 value held as int8: not the source's numbers
            self.ints[v] = self.w.tensor(f"{name or v.name}.as_{dtype}" if held else name or v.name, self._shape(v),
                                         dtype, quant=quant)
            if held:
                self.int8_of[self.w.tensors[self.ints[v]].name] = name or v.name
        return self.ints[v]

    def float_tensor(self, v: Value) -> int:
        """The float form of `v`: its tensor, a constant, or a DEQUANTIZE of the int8 tensor behind a DQ."""
        if v in self.floats:
            return self.floats[v]
        dq = v.producer if v.producer is not None and v.producer.op == "DequantizeLinear" else None
        if v.const is not None or dq is not None and dq.inputs[0].const is not None:
            arr = np.asarray(v.const if v.const is not None else dequantized(dq))
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
        rule = REGISTRY.export_rule(node.op)
        rule = rule.write if rule is not None else None
        if rule is None:
            raise NotInteger(NO_KERNEL)
        if rule.passes_through:  # no kernel: the output is the input
            src = node.inputs[0]
            (self.ints if src in self.ints else self.floats)[node.outputs[0]] = self.data_input(src)
            return None
        ctx = self._integer(node, rule)
        if ctx is None:
            ctx = Context(self, node, None, None)
            out = self.w.tensor(node.outputs[0].name, self._shape(node.outputs[0]), float_name(node.outputs[0]))
            self.floats[node.outputs[0]] = out
            inputs, options = rule.write(ctx)
            self.w.op(ctx.builtin or rule.builtin, inputs, [out], options)
            return None
        return self._write_integer(node, rule, ctx)

    def _integer(self, node: Node, rule: Rule):
        """The integer context of `node` (its Q and fused activation), or None when it must run in float."""
        if rule.builtin in ("RESHAPE", "TRANSPOSE", "MAX_POOL_2D") and node.inputs[0] in self.ints:
            return Context(self, node, None, None, passthrough=True)
        data = range(len(node.inputs)) if rule.data is None else rule.data
        in_params = []
        for i in data:
            p = activation_params(node.input(i)) or const_params(node.input(i))
            if p is None:
                return None
            in_params.append(p)
        out, act, absorbed = node.outputs[0], None, []
        reader = self.g.only_reader(out)
        if rule.fuses and reader is not None and activation(reader) is not None:
            act, absorbed = activation(reader), [reader]
            reader = self.g.only_reader(reader.outputs[0])
        want = params(reader) if reader is not None and reader.op == "QuantizeLinear" else None
        if want is None or want.axis is not None or want.dtype != "int8":
            return None
        ctx = Context(self, node, reader, act, in_params=in_params, absorbed=absorbed + [reader], want=want)
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
        q_out, want = ctx.q.outputs[0], ctx.want
        own = Quant(np.float32([rule.fixed_out[0]]), np.int64([rule.fixed_out[1]])) if rule.fixed_out else \
            ctx.in_params[0] if rule.keeps_quant else None
        inputs, options = rule.write(ctx)
        if rule.uniform:
            inputs = [self._requantized(i, want) for i in inputs]
        builtin = ctx.builtin or rule.builtin
        if own is None or own.same(want):
            self.w.op(builtin, inputs, [self.int_tensor(q_out, want)], options, version=rule.int_version)
            return
        tmp = self.w.tensor(f"{node.outputs[0].name}.int8", self._shape(q_out), "int8", quant=own)
        self.w.op(builtin, inputs, [tmp], options, version=rule.int_version)
        self.w.op("QUANTIZE", [tmp], [self.int_tensor(q_out, want)], version=2)

    def _requantized(self, index: int, want: Quant) -> int:
        """Tensor `index` at the parameters `want` (a QUANTIZE int8 -> int8 when they differ)."""
        held = self.w.tensors[index]
        if held.quant is None or held.quant.same(want):
            return index
        out = self.w.tensor(f"{held.name}.requantized", held.shape, "int8", quant=want)
        self.w.op("QUANTIZE", [index], [out], version=2)
        return out

    def _quantize(self, node: Node) -> None:
        q = params(node)
        if q is None or q.axis is not None:
            raise NotInteger("only per-tensor QuantizeLinear of activations is written")
        x = node.inputs[0]
        dq = x.producer if x.producer is not None and x.producer.op == "DequantizeLinear" else None
        source = self.ints[dq.inputs[0]] if dq is not None and dq.inputs[0] in self.ints else self.float_tensor(x)
        self.w.op("QUANTIZE", [source], [self.int_tensor(node.outputs[0], q)], version=2)


class Context:
    """What an op's `write` reads: its inputs in the chosen form, weights, and the fused activation."""

    def __init__(self, lw: Lowering, node: Node, q: Node | None, act: str | None, in_params=(), absorbed=(),
                 passthrough: bool = False, want: Quant | None = None):
        self.lw, self.node, self.q, self.act, self.want = lw, node, q, act, want  # want: the Q's parameters
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
            return self.lw.int_tensor(dq.inputs[0], params(dq))
        return self.lw.float_tensor(v)

    def activation(self) -> int:
        return ACTIVATIONS[self.act]

    def const(self, i: int) -> np.ndarray | None:
        v = self.node.input(i)
        if v is None:
            return None
        if v.const is not None:
            return np.asarray(v.const)
        return dequantized(v.producer) if const_dq(v) is not None else None

    def index_const(self, name: str, values) -> int:
        return self.lw.constant(f"{self.node.name}.{name}", np.asarray(values, np.int32))

    def weight(self, i: int, perm) -> int:
        """Input `i` (a constant weight) permuted by `perm`: int8 with its per-channel axis moved along, or float."""
        v = self.node.inputs[i]
        dq = const_dq(v)
        if self.integer:
            q = params(dq)
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
        if self.integer and v.const is not None:
            x_scale, w_scale = self.in_params[0].scale, params(const_dq(self.node.inputs[1])).scale
            values, scale = int32_bias(v.const, x_scale, w_scale)
            quant = Quant(scale, np.zeros(scale.shape, np.int64), 0 if scale.size > 1 else None)
            return self.lw.constant(f"{v.name}.int32", values, quant)
        if self.integer:
            dq = const_dq(v)
            q = params(dq)
            quant = Quant(q.scale, np.zeros_like(q.zero_point, np.int64), 0 if q.axis is not None else None)
            return self.lw.constant(dq.inputs[0].name, np.asarray(dq.inputs[0].const, np.int32), quant)
        return self.lw.constant(v.name, self.const(i).astype(np.float32))

