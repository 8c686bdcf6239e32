"""ONNX frontend: `.onnx` file or `ModelProto` -> IR `Graph`.

The walk has two phases. A pre-flight visits every node (subgraphs included) and collects
all blockers — unknown domains, ops the IR lacks, attributes it does not know — so one error
lists them all. Then nodes are imported, legacy opset forms normalised through
the ONNX registry (`rules/onnx/`), and weights attached as (memory-mapped) constants.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.formats.onnx_proto import read_model
from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import Value
from tensorbridge.ops import schema as op_schema
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.rules.onnx import base as rules
from tensorbridge.rules.onnx import history

log = logging.getLogger(__name__)
DEFAULT_DOMAINS = ("", "ai.onnx")


def check_text(message, where: str = "model") -> None:
    """Every text field of the model is text: protobuf hands a name that is not valid UTF-8 over as bytes, which
    nothing downstream expects."""
    from google.protobuf.descriptor import FieldDescriptor

    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_STRING:
            for s in (value if field.is_repeated else [value]):
                if not isinstance(s, str):
                    raise ModelError(f"the ONNX {where}'s {field.name} {s[:40]!r} is not valid UTF-8 text")
        elif field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.name != "TensorProto":
            for m in (value if field.is_repeated else [value]):
                check_text(m, field.name)


def load(source) -> Graph:
    """Import an ONNX model from a path or a `ModelProto`."""
    if isinstance(source, onnx.ModelProto):
        weights = {t.name: numpy_helper.to_array(t) for t in source.graph.initializer
                   if t.data_location != onnx.TensorProto.EXTERNAL}
        proto, name = source, source.graph.name
    else:
        loaded = read_model(source)
        proto, weights, name = loaded.proto, loaded.weights, Path(source).stem
    check_text(proto)
    # A model using only other domains declares no default opset: check it as current.
    opset = next((o.version for o in proto.opset_import if o.domain in DEFAULT_DOMAINS),
                 onnx.defs.onnx_opset_version())
    if opset < rules.MIN_IMPORT_OPSET:
        raise ModelError(f"ONNX opset {opset} is older than the oldest supported ({rules.MIN_IMPORT_OPSET})")
    importer = _Importer(opset, weights)
    importer.preflight(proto.graph)
    graph = importer.import_graph(proto.graph, Graph(proto.graph.name or name))
    graph.metadata.update({"source_framework": "onnx", "producer": proto.producer_name,
                           "producer_version": proto.producer_version, "onnx_opset": opset})
    infer_shapes(graph)
    return graph


class Context:
    """What a handler may touch: the graph being built and the ONNX name scope."""

    def __init__(self, importer, graph: Graph, scope: dict[str, Value]):
        self.importer = importer
        self.graph = graph
        self.scope = scope

    def const(self, name: str, array) -> Value:
        return self.graph.add_constant(name, np.asarray(array))

    def emit(self, op: str, inputs, attrs, output_names: list[str], name: str, meta: dict) -> list[Value]:
        """A node whose outputs take the ONNX output names (and enter the name scope)."""
        while inputs and inputs[-1] is None:
            inputs = inputs[:-1]
        last = max((i for i, n in enumerate(output_names) if n), default=-1)
        names = [n or f"{name}_unused{i}" for i, n in enumerate(output_names[:last + 1])]
        node = Builder(self.graph, name, meta).node(op, inputs, attrs, names or 1, name=name)
        for n, v in zip(output_names, node.outputs):
            if n:
                self.scope[n] = v
        return node.outputs

    def op(self, op: str, *inputs, name: str, meta: dict, **attrs) -> Value:
        return Builder(self.graph, name, meta).node(op, inputs, attrs, name=name).outputs[0]




def _value_type(vi: onnx.ValueInfoProto):
    t = vi.type
    if not t.HasField("tensor_type"):
        return None, None
    tt = t.tensor_type
    dt = rules.ir_dtype(tt.elem_type)
    if not tt.HasField("shape"):
        return dt, None
    dims = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:  # paddle2onnx writes -1 for a size it does not know
            dims.append(d.dim_value)
        elif d.HasField("dim_param") and d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dt, tuple(dims)


class _Importer:
    def __init__(self, opset: int, weights: dict[str, np.ndarray]):
        self.opset = opset
        self.weights = weights
        self.report = BlockerReport("ONNX import", "onnx")

    # -- pre-flight -------------------------------------------------------------------------
    def preflight(self, g: onnx.GraphProto) -> None:
        self._check_graph(g)
        self.report.raise_if_any(
            "Nothing was written. Ops outside the IR catalogue need support in tensorbridge "
            "(see `tensorbridge ops`).")

    def _check_graph(self, g: onnx.GraphProto) -> None:
        for vi in list(g.input) + list(g.output):
            kind = vi.type.WhichOneof("value")
            if kind not in ("tensor_type", None):
                self.report.add(f"{kind} value", vi.name, "only tensors are supported as graph inputs/outputs")
        for i, node in enumerate(g.node):
            name = node.name or f"{node.op_type}_{i}"
            op_type = node.op_type
            if node.domain not in DEFAULT_DOMAINS:
                if node.domain != rules.CONTRIB_DOMAIN or op_type not in rules.CHANNELS_LAST_CONTRIB:
                    self.report.add(f"{node.domain}.{node.op_type}", name, "custom or non-standard domain")
                    continue
                op_type = rules.CHANNELS_LAST_CONTRIB[op_type]
            rule = rules.find_rule(op_type, self.opset)
            ir_op = (rule.ir_op or op_type) if rule else op_type
            schema = op_schema.get(ir_op)
            if schema is None and not (rule and rule.special == "constant"):
                self.report.add(node.op_type, name, "not in the IR op catalogue")
                continue
            known = (set(schema.attrs) if schema else set()) | ({"channels_last"} if node.domain else set())
            if rule:
                known |= {a for a, _, _ in rule.attrs_to_inputs} | set(rule.drop_attrs)
                known |= history.EXTRA_ATTRS.get(rule.special, set())
            for a in node.attribute:
                if a.name not in known and not (rule and rule.special == "constant"):
                    self.report.add(node.op_type, name, f"attribute {a.name!r} is not supported")
                if a.type == onnx.AttributeProto.GRAPH:
                    self._check_graph(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        self._check_graph(sg)
                elif a.type in (onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.TYPE_PROTO):
                    self.report.add(node.op_type, name, f"attribute {a.name!r} of kind "
                                    f"{onnx.AttributeProto.AttributeType.Name(a.type)} is not supported")

    # -- import -----------------------------------------------------------------------------
    def import_graph(self, g: onnx.GraphProto, graph: Graph, scope: dict[str, Value] | None = None) -> Graph:
        scope = dict(scope or {})
        declared = {vi.name: vi for vi in list(g.value_info) + list(g.output)}
        init_names = {t.name for t in g.initializer}
        for t in g.initializer:
            arr = self.weights.get(t.name)
            if arr is None:
                arr = numpy_helper.to_array(t)
            if dtypes.name(arr.dtype) == "string" or arr.dtype.kind in "US":
                arr = arr.astype(object)
            scope[t.name] = graph.add_constant(t.name, arr)
        for vi in g.input:
            if vi.name in init_names:
                continue  # legacy models list initializers as inputs too
            dt, shape = _value_type(vi)
            scope[vi.name] = graph.add_input(vi.name, dt, shape)
        ctx = Context(self, graph, scope)
        for i, node in enumerate(g.node):
            self._import_node(ctx, node, node.name or f"{node.op_type}_{i}")
        for vi in g.output:
            if vi.name not in scope:
                raise ModelError(f"graph output {vi.name!r} is not produced by any node")
            v = scope[vi.name]
            dt, shape = _value_type(vi)
            if v.dtype is None and dt is not None:
                v.dtype = dtypes.dtype(dt)
            if v.shape is None and shape is not None:
                v.shape = shape
            graph.outputs.append(v)
        for name, vi in declared.items():
            v = scope.get(name)
            if v is not None and not v.is_constant:
                dt, shape = _value_type(vi)
                if v.dtype is None and dt:
                    v.dtype = dtypes.dtype(dt)
                if v.shape is None and shape is not None:
                    v.shape = shape
        return graph

    def _import_node(self, ctx: Context, node: onnx.NodeProto, name: str) -> None:
        attrs = {a.name: self._attr(a, ctx) for a in node.attribute}
        op_type = rules.contrib_as_ir(node.op_type, attrs) if node.domain == rules.CONTRIB_DOMAIN else node.op_type
        rule = rules.find_rule(op_type, self.opset)
        inputs = []
        for n in node.input:
            if not n:
                inputs.append(None)
            elif n not in ctx.scope:
                raise ModelError(f"node {name!r} ({node.op_type}) reads {n!r}, which nothing produces "
                                 "(dangling input or nodes out of order)")
            else:
                inputs.append(ctx.scope[n])
        meta = {"framework": "onnx", "source_op": node.op_type, "source_name": node.name}
        ir_op = op_type
        if rule:
            ir_op = rule.ir_op or op_type
            for a in rule.drop_attrs:
                attrs.pop(a, None)
            attrs.update(rule.set_attrs)
            for a, pos, dt in rule.attrs_to_inputs:
                if a in attrs:
                    while len(inputs) <= pos:
                        inputs.append(None)
                    like = inputs[0].dtype if inputs and inputs[0] is not None else None
                    inputs[pos] = ctx.const(f"{name}_{a}", rules.attr_array(attrs.pop(a), dt, like))
            if rule.special:
                handler = getattr(history, rule.special)
                outs = handler(ctx, ir_op, inputs, attrs, list(node.output), name, meta)
                for out_name, v in zip(node.output, outs):
                    if out_name and v is not None:
                        ctx.scope[out_name] = v
                return
        schema = op_schema.get(ir_op)
        for k, v in list(attrs.items()):
            if schema.attrs[k].kind == "dtype":
                attrs[k] = rules.ir_dtype(v) if v else None
        ctx.emit(ir_op, inputs, attrs, list(node.output), name, meta)

    def _attr(self, a: onnx.AttributeProto, ctx):
        if a.type == onnx.AttributeProto.GRAPH:
            return self.import_graph(a.g, ctx.graph.subgraph(a.g.name or a.name), ctx.scope)
        if a.type == onnx.AttributeProto.TENSOR:
            arr = numpy_helper.to_array(a.t)
            return arr.astype(object) if arr.dtype.kind in "US" else arr
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            return v.decode("utf-8")
        if isinstance(v, list) and v and isinstance(v[0], bytes):
            return [s.decode("utf-8") for s in v]
        return v
