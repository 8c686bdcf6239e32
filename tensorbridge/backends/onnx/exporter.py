"""ONNX backend: IR `Graph` -> `.onnx` file that passes `onnx.checker` and loads in onnxruntime.

The graph is copied and legalised (IR-only ops such as Dense or SiLU are decomposed), then
written at `DEFAULT_EXPORT_OPSET`, or later where an op needs it: its introduction, or the version of its
definition at the source model's opset (a model at an opset newer than runtimes know is written at the oldest
opset where every op it uses means the same). Weights stream to disk (external data above 2 GB).
"""

from __future__ import annotations

import functools
import json
import logging

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.formats.onnx_proto import read_model, write_model
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph, clone
from tensorbridge.ir.node import Node
from tensorbridge.ir.value import Value
from tensorbridge.ops import schema as op_schema
from tensorbridge.ops.qlinear import to_qlinear
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.decompose import legalize
from tensorbridge.passes.layout import LayoutOptions, LayoutTarget, plan_layout
from tensorbridge.passes.lower import int_arithmetic_pass
from tensorbridge.passes.pipeline import Pipeline
from tensorbridge.passes.qdq_units import unshare_dequantize
from tensorbridge.rules.onnx import REGISTRY
from tensorbridge.rules.onnx import base as rules
from tensorbridge.rules.onnx.contrib import DOMAIN, lower_channels_last
from tensorbridge.rules.onnx.kernels import pad_before_max_pool, where_on_bytes

log = logging.getLogger(__name__)
LAYOUTS_KEY = "tensorbridge.layouts"
IR_VERSION = 13  # the newest onnxruntime 1.31 loads (onnx 1.23 would write 14)
#: IR attributes ONNX does not have, with the only value ONNX can express.
IR_ONLY_ATTRS = {"layout": "NCHW", "int_arithmetic": ""}
#: IR attributes ONNX cannot state, written as ONNX's own variant: QuantizeLinear always divides by the scale,
#: where a PT2E program multiplies by its float32 reciprocal (a tie may round 1 LSB apart, within verify's
#: quantized tolerance)
NEAREST_ONNX_FORM = {"rounding"}
LAYOUT = LayoutTarget(("NCHW",), native="NCHW")
#: `--layout nhwc`: quantized ops onnxruntime runs channels-last (channels_last.py)
CHANNELS_LAST = LayoutTarget(("NCHW", "NHWC"), native="NCHW")


def supports(op: str) -> bool:
    return REGISTRY.export_rule(op) is not None


def export(graph: Graph, dest, opset: int | None = None, external: bool | None = None,
           layout: LayoutOptions | None = None, quant_format: str = "qdq", int_arithmetic: str = "source") -> None:
    """Write `graph` as an ONNX model at `dest` (quantized ops as QDQ, or `quant_format="qlinear"`;
    `int_arithmetic="float"` keeps a .tflite's quantized Add/Mean as plain QDQ, see ops/litert.py)."""
    model, weights = to_proto(graph, opset, layout, quant_format, int_arithmetic)
    write_model(model, weights, dest, external=external)
    check_written(dest)


def check_written(path) -> None:
    """The file passes onnx.checker's full check (types and shapes inferred through the graph), or the
    conversion fails: an invalid file is never kept. onnx's shape inference is wrong about a few ops (STFT's
    one-sided bins, MeanVarianceNormalization's function body); a file that fails only on shapes is kept
    when onnxruntime, which infers shapes itself, loads it."""
    try:
        onnx.checker.check_model(_skeleton(path), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        message = str(e).strip()
        if "TypeInferenceError" in message or not isinstance(e, onnx.shape_inference.InferenceError) \
                or not _runtime_loads(path):
            raise ModelError(f"the ONNX model this conversion makes is invalid, so it was not written: "
                             f"{message.splitlines()[0][:400]}") from None
        log.debug("onnx's shape inference disagrees with %s, which onnxruntime loads: %s", path, message[:400])


def _skeleton(path) -> onnx.ModelProto:
    """The written model with its large weights as typed graph inputs instead of data: what the checker validates
    (types and shapes through the graph) without holding the weights in memory a second and third time (the
    checker parses the whole file into protobuf and copies it)."""
    loaded = read_model(path)
    graph = loaded.proto.graph
    inputs = {v.name for v in graph.input}
    kept = []
    for t in graph.initializer:
        inline = t.data_location != onnx.TensorProto.EXTERNAL and (t.raw_data or any(
            len(getattr(t, f)) for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                                         "string_data")))
        if inline or not t.dims:
            kept.append(t)
        elif t.name not in inputs:
            graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    graph.ClearField("initializer")
    graph.initializer.extend(kept)
    return loaded.proto


def _runtime_loads(path) -> bool:
    try:
        import onnxruntime as ort
    except ImportError:
        return False
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - whatever onnxruntime rejects
        return False
    return True


def pipeline(layout: LayoutOptions | None = None, quant_format: str = "qdq",
             int_arithmetic: str = "source") -> Pipeline:
    """Dead code out, layouts planned (channels-first, or channels-last quantized ops with `--layout nhwc`),
    LiteRT's integer arithmetic lowered (or dropped), QDQ units fused into QLinear ops when asked, one
    DequantizeLinear per reader, and every op ONNX lacks decomposed."""
    if quant_format not in ("qdq", "qlinear"):
        raise ModelError(f"--quant-format must be qdq or qlinear, not {quant_format!r}")
    channels_last = layout is not None and layout.layout == "nhwc"
    p = Pipeline("ONNX").then("dead code", eliminate_dead_code)
    p.then("layout", lambda g: plan_layout(g, CHANNELS_LAST if channels_last else LAYOUT, layout))
    p.then("integer arithmetic", int_arithmetic_pass(int_arithmetic))
    if quant_format == "qlinear" or channels_last:
        p.then("QLinear ops", to_qlinear)
    if channels_last:
        p.then("dead code", eliminate_dead_code).then("channels-last ops", lower_channels_last)
    p.then("one dequantize per reader", unshare_dequantize).then("dead code", eliminate_dead_code)
    p.then("Where on bool", where_on_bytes).then("Pad before MaxPool", pad_before_max_pool)
    return p.then("legalize", lambda g: legalize(g, REGISTRY.blocker, "ONNX"))


def to_proto(graph: Graph, opset: int | None = None, layout: LayoutOptions | None = None,
             quant_format: str = "qdq", int_arithmetic: str = "source",
             ) -> tuple[onnx.ModelProto, list[tuple[str, np.ndarray]]]:
    """The model without initializers, and the (name, array) weights to attach."""
    g = pipeline(layout, quant_format, int_arithmetic).run(clone(graph))
    report = BlockerReport("ONNX export", "onnx")
    opset = opset or _choose_opset(g)
    weights: list[tuple[str, np.ndarray]] = []
    gproto = _graph_proto(g, report, weights, top=True)
    report.raise_if_any()
    imports = [helper.make_opsetid("", opset)]
    if any(n.domain == DOMAIN for n in gproto.node):
        imports.append(helper.make_opsetid(DOMAIN, 1))
    model = helper.make_model(gproto, opset_imports=imports, producer_name="tensorbridge",
                              producer_version=_version())
    model.ir_version = IR_VERSION
    layouts = g.layouts()
    if layouts:  # for verify --per-layer: which values are held permuted
        helper.set_model_props(model, {LAYOUTS_KEY: json.dumps(layouts, separators=(",", ":"))})
    return model, weights


def to_model(graph: Graph, opset: int | None = None, layout: LayoutOptions | None = None) -> onnx.ModelProto:
    """Whole in-memory ModelProto (for small models and tests)."""
    model, weights = to_proto(graph, opset, layout)
    for name, arr in weights:
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(arr), name))
    return model


def _version() -> str:
    from tensorbridge import __version__
    return __version__


@functools.cache
def _introduced() -> dict[str, int]:
    """Opset in which each default-domain ONNX op first appeared."""
    out: dict[str, int] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            out[s.name] = min(out.get(s.name, s.since_version), s.since_version)
    return out


def _choose_opset(graph: Graph) -> int:
    source = graph.metadata.get("onnx_opset", 0)
    source = source if isinstance(source, int) else 0  # a malformed .tbir's note is not trusted
    need = rules.DEFAULT_EXPORT_OPSET
    for node in graph.all_nodes():
        need = max(need, _introduced().get(node.op, 1), _definition_for(node, source))
    return need


def _definition_for(node: Node, opset: int) -> int:
    """The oldest opset whose definition of the node's op still accepts the node as the definition at the
    source's `opset` does (its attributes, its tensor types); 0 without a source opset or an ONNX schema."""
    chain = _definitions(node.op, opset)
    if not chain:
        return 0
    for older, newer in zip(chain[1:], chain):
        lost = {a for a in chain[0].attributes if a not in older.attributes}
        if lost & set(node.attrs) or not (_accepts(older.inputs, node.inputs, older)
                                          and _accepts(older.outputs, node.outputs, older)):
            return newer.since_version
    return chain[-1].since_version


@functools.cache
def _definitions(op: str, opset: int) -> tuple:
    """The definitions of default-domain `op` in effect at or before `opset`, newest first."""
    chain = []
    while opset > 0:
        try:
            schema = onnx.defs.get_schema(op, opset, "")
        except onnx.defs.SchemaError:
            break
        chain.append(schema)
        opset = schema.since_version - 1
    return tuple(chain)


def _type_str(v: Value | None) -> str | None:
    if v is None or v.dtype is None:
        return None
    return f"tensor({onnx.TensorProto.DataType.Name(rules.onnx_dtype(v.dtype)).lower()})"


def _accepts(formals, values, schema) -> bool:
    """Whether every typed value fits its formal parameter's type constraint (a variadic last formal repeats)."""
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    for i, v in enumerate(values):
        if not formals:
            return False
        formal = formals[min(i, len(formals) - 1)]
        t = _type_str(v)
        if t is not None and formal.type_str in allowed and t not in allowed[formal.type_str]:
            return False
    return True


def _value_info(v: Value) -> onnx.ValueInfoProto:
    if v.dtype is None:
        raise ModelError(f"cannot export {v.name!r}: its element type is unknown")
    shape = None if v.shape is None else [d if d is not None else "" for d in v.shape]
    vi = helper.make_tensor_value_info(v.name, rules.onnx_dtype(v.dtype), shape)
    if v.shape is not None:
        for d, dim in zip(v.shape, vi.type.tensor_type.shape.dim):
            if d is None:
                dim.ClearField("dim_param")
    return vi


def _graph_proto(g: Graph, report: BlockerReport, weights: list, top: bool) -> onnx.GraphProto:
    nodes = []
    used = {id(v) for n in g.nodes for v in n.inputs if v is not None}
    for n in g.nodes:
        for sub in n.subgraphs():
            for inner in sub.all_nodes():
                used |= {id(v) for v in inner.inputs if v is not None}
    outputs_const = [v for v in g.outputs if v.is_constant]
    initializers = []
    for v in g.constants.values():
        if id(v) not in used:
            continue
        if top:
            weights.append((v.name, v.const))
        else:
            initializers.append(numpy_helper.from_array(np.asarray(v.const), v.name))
    for v in outputs_const:  # an output that is a constant becomes a Constant node
        nodes.append(helper.make_node("Constant", [], [v.name], value=numpy_helper.from_array(
            np.asarray(v.const), v.name)))
    for n in g.nodes:
        nodes.append(_node_proto(n, report, weights))
    outputs = [_value_info(v) for v in g.outputs]
    seen: set[str] = set()
    for k, info in enumerate(outputs):  # a value that is several outputs (a Scan's state and its step output) is
        if info.name in seen:           # each a name of its own: onnxruntime mis-runs a body with repeated ones
            copy = f"{info.name}.output{k}"
            nodes.append(helper.make_node("Identity", [info.name], [copy]))
            info.name = copy
        seen.add(info.name)
    return helper.make_graph(nodes, g.name, [_value_info(v) for v in g.inputs], outputs, initializer=initializers)


def _node_proto(n, report: BlockerReport, weights: list) -> onnx.NodeProto:
    schema = op_schema.get(n.op)
    domain, op, extra, dropped = REGISTRY.export_rule(n.op).write(n)
    attrs = []
    onnx_attrs = onnx.defs.get_schema(op).attributes if not domain and onnx.defs.has(op) else {}
    for k, val in n.attrs.items():
        if val is None or (domain and (k in IR_ONLY_ATTRS or k in dropped)) or k in NEAREST_ONNX_FORM:
            continue
        if k in IR_ONLY_ATTRS and k not in onnx_attrs:  # an LSTM's `layout` is ONNX's own (batch-major)
            if val != IR_ONLY_ATTRS[k]:
                report.add(n.op, n.name, f"{k}={val!r} cannot be expressed in ONNX "
                                         "(run the layout pass to convert it)")
            continue
        spec = schema.attrs.get(k)
        if spec is None:
            report.add(n.op, n.name, f"attribute {k!r} is not in the op schema")
            continue
        if spec.kind not in ("tensor", "graph") and not spec.required and _same(val, spec.default):
            continue
        attrs.append(_attr_proto(k, spec.kind, val, report, weights))
    inputs = [("" if v is None else v.name) for v in n.inputs]
    node = helper.make_node(op, inputs, [v.name for v in n.outputs], name=n.name, domain=domain or None, **extra)
    node.attribute.extend(attrs)
    return node


def _same(a, b) -> bool:
    try:
        return bool(a == b) if not isinstance(a, (list, tuple)) else list(a) == list(b or [])
    except (TypeError, ValueError):
        return False


_KIND_TYPES = {"int": onnx.AttributeProto.INT, "float": onnx.AttributeProto.FLOAT,
               "str": onnx.AttributeProto.STRING, "ints": onnx.AttributeProto.INTS,
               "floats": onnx.AttributeProto.FLOATS, "strs": onnx.AttributeProto.STRINGS}


def _attr_proto(name: str, kind: str, val, report, weights) -> onnx.AttributeProto:
    if kind == "tensor":
        return helper.make_attribute(name, numpy_helper.from_array(np.asarray(val)))
    if kind == "graph":
        return helper.make_attribute(name, _graph_proto(val, report, weights, top=False))
    if kind == "dtype":
        return helper.make_attribute(name, rules.onnx_dtype(dtypes.dtype(val)))
    if kind == "ints":
        val = [int(x) for x in val]
    elif kind == "floats":
        val = [float(x) for x in val]
    elif kind == "int":
        val = int(val)
    elif kind == "float":
        val = float(val)
    return helper.make_attribute(name, val, attr_type=_KIND_TYPES[kind])


