"""Runs an ONNX model with onnxruntime (CPU)."""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError

#: the newest ONNX IR version onnxruntime 1.31 loads
MAX_IR_VERSION = 13
_ORT_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
              "tensor(bfloat16)": "bfloat16", "tensor(int8)": "int8", "tensor(int16)": "int16",
              "tensor(int32)": "int32", "tensor(int64)": "int64", "tensor(uint8)": "uint8",
              "tensor(uint16)": "uint16", "tensor(uint32)": "uint32", "tensor(uint64)": "uint64",
              "tensor(bool)": "bool", "tensor(string)": "string"}


def session_options():
    """Quiet, and int8 QDQ fused as on ARM: by default x86 builds fuse an int8 DequantizeLinear -> Conv ->
    QuantizeLinear only after converting it to uint8, which they cannot where a tensor has several
    readers, and those convolutions then run in float and round differently from an integer kernel."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.qdqisint8allowed", "1")
    opts.enable_cpu_mem_arena = False
    return opts


class OnnxRuntimeRunner:
    name = "onnxruntime"

    def __init__(self, source, **_options):
        import onnxruntime as ort

        self.source = source
        self.note = ""
        self.session = None
        opts = session_options()
        try:
            arg = source.SerializeToString() if hasattr(source, "SerializeToString") else str(source)
            self.session = ort.InferenceSession(arg, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
            if "IR version" not in str(e):
                raise ModelError(f"onnxruntime cannot load the model: {str(e).splitlines()[0]}") from None
            self.session = self._lowered_ir(source, ort, opts)
        if self.session is None:  # a newer IR than onnxruntime reads, in use: the reference interpreter runs it
            from tensorbridge.verification.runners.reference import ReferenceRunner

            self.reference = ReferenceRunner(source)
            self.inputs, self.outputs = self.reference.inputs, self.reference.outputs
            return
        self.inputs = [(i.name, _ORT_TYPES.get(i.type, "float32"),
                        tuple(d if isinstance(d, int) else None for d in i.shape))
                       for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]

    def _lowered_ir(self, source, ort, opts):
        """A model of a newer IR version than onnxruntime reads: loaded with the IR version it reads, when its
        opsets are ones a release of that IR version carries (nothing of the newer IR is then in use); else
        None, and the reference interpreter runs it."""
        import onnx

        model = source if isinstance(source, onnx.ModelProto) else onnx.load(str(source))
        readable = max(v[1] for v in onnx.helper.VERSION_TABLE if v[1] <= MAX_IR_VERSION)
        if model.ir_version <= readable:
            raise ModelError(f"onnxruntime cannot load the model (IR version {model.ir_version})")
        newest_opset = max(v[2] for v in onnx.helper.VERSION_TABLE if v[1] <= readable)
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
        if opset > newest_opset:
            self.note = (f"onnxruntime reads IR version <= {readable} and the model uses opset {opset} of IR "
                         f"{model.ir_version}: the reference interpreter ran it instead")
            return None
        lowered = onnx.ModelProto()
        lowered.CopyFrom(model)
        lowered.ir_version = readable
        self.source = lowered
        self.note = (f"onnxruntime reads IR version <= {readable}: the model's IR version {model.ir_version} "
                     f"was lowered to {readable} in memory (its opset {opset} is an IR-{readable} opset)")
        return ort.InferenceSession(lowered.SerializeToString(), opts, providers=["CPUExecutionProvider"])

    def run(self, feeds):
        if self.session is None:
            return self.reference.run(feeds)
        feed = {name: np.asarray(feeds[name]) for name, _, _ in self.inputs}
        values = self.session.run(None, feed)
        return dict(zip(self.outputs, values))

    def layouts(self) -> dict:
        """IR value name -> layout, for values tensorbridge's exporter wrote permuted (its metadata)."""
        import json

        import onnx

        model = self.source if isinstance(self.source, onnx.ModelProto) else \
            onnx.load(str(self.source), load_external_data=False)
        props = {p.key: p.value for p in model.metadata_props}
        return json.loads(props.get("tensorbridge.layouts", "{}"))

    def output_steps(self) -> dict[str, float]:
        """Outputs made by a DequantizeLinear with one constant scale: name -> scale."""
        import onnx
        from onnx import numpy_helper

        model = self.source if isinstance(self.source, onnx.ModelProto) else \
            onnx.load(str(self.source), load_external_data=False)
        scales = {i.name: i for i in model.graph.initializer if not i.external_data and i.dims in ([], [1])}
        steps = {}
        for n in model.graph.node:
            if n.op_type == "DequantizeLinear" and n.output[0] in self.outputs and n.input[1] in scales:
                steps[n.output[0]] = float(numpy_helper.to_array(scales[n.input[1]]).ravel()[0])
        return steps

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every value with a known type, exposed as an extra graph output (of a quantized op, only its result)."""
        import onnx
        import onnxruntime as ort

        from tensorbridge.api import load
        from tensorbridge.backends.onnx.exporter import _value_info
        from tensorbridge.ops.quant import inside_quantized_unit

        model = self.source if isinstance(self.source, onnx.ModelProto) else onnx.load(str(self.source))
        graph = load(model)
        have = {o.name for o in model.graph.output}
        for node in graph.nodes:
            if node.op == "DequantizeLinear":  # exposing it, or the float inside a quantized op, unfuses the op
                continue
            for v in node.outputs:
                if v.dtype is not None and v.name not in have and v.uses() and not inside_quantized_unit(v):
                    model.graph.output.append(_value_info(v))
        session = ort.InferenceSession(model.SerializeToString(), session_options(), providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        values = session.run(None, {name: np.asarray(feeds[name]) for name, _, _ in self.inputs})
        return dict(zip(names, values))
