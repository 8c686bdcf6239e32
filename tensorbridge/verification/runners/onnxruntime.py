"""Runs an ONNX model with onnxruntime (CPU)."""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError

_ORT_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
              "tensor(bfloat16)": "bfloat16", "tensor(int8)": "int8", "tensor(int16)": "int16",
              "tensor(int32)": "int32", "tensor(int64)": "int64", "tensor(uint8)": "uint8",
              "tensor(uint16)": "uint16", "tensor(uint32)": "uint32", "tensor(uint64)": "uint64",
              "tensor(bool)": "bool", "tensor(string)": "string"}


class OnnxRuntimeRunner:
    name = "onnxruntime"

    def __init__(self, source, **_options):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        try:
            arg = source.SerializeToString() if hasattr(source, "SerializeToString") else str(source)
            self.session = ort.InferenceSession(arg, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
            raise ModelError(f"onnxruntime cannot load the model: {str(e).splitlines()[0]}") from None
        self.inputs = [(i.name, _ORT_TYPES.get(i.type, "float32"),
                        tuple(d if isinstance(d, int) else None for d in i.shape))
                       for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]

    def run(self, feeds):
        feed = {name: np.asarray(feeds[name]) for name, _, _ in self.inputs}
        values = self.session.run(None, feed)
        return dict(zip(self.outputs, values))
