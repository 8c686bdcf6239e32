"""TFLite backend: IR -> generated Keras model -> TensorFlow's own TFLite converter.

Going through the official converter (rather than writing the flatbuffer ourselves) gives
LiteRT's fused kernels, XNNPACK compatibility and the converter's float16 path for free;
docs/tflite.md explains the choice. `fp16=True` stores weights as float16. A quantized graph
(QuantizeLinear on activations) is written directly with int8 kernels instead (`integer.py`),
because the converter would not keep its scales and zero points.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from dataclasses import replace
from pathlib import Path

from tensorbridge.backends.keras import codegen as keras_codegen
from tensorbridge.backends.tflite import integer
from tensorbridge.backends.tflite.tensor_names import rename_layer_outputs
from tensorbridge.codegen.folder import read_signature
from tensorbridge.errors import BlockerReport, ModelError
from tensorbridge.formats.tflite_flatbuffer import with_metadata
from tensorbridge.ir import shapes
from tensorbridge.ir.graph import Graph
from tensorbridge.passes.layout import LayoutOptions
from tensorbridge.rules.tflite.converter import float_blocker
from tensorbridge.rules.tflite.nn import LAST_AXIS_ONLY

# TFLite's SOFTMAX/LOG_SOFTMAX work on the last axis only (the converter would add transposes of its own)
LAYOUT = replace(keras_codegen.LAYOUT, last_axis_ops=LAST_AXIS_ONLY)


def save(graph: Graph, dest, fp16: bool = False, layout: LayoutOptions | None = None, **_options) -> None:
    if integer.is_quantized(graph):
        if fp16:
            raise ModelError("--fp16 applies to float models; this one is quantized and keeps its integer types")
        Path(dest).write_bytes(integer.to_flatbuffer(graph, LAYOUT, layout))
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        keras_codegen.save(graph, folder, layout, target=LAYOUT, blocker=float_blocker, name="TFLite",
                           for_tflite=True)
        import keras

        model = keras.models.load_model(str(folder / "model.keras"), compile=False)
        _refuse_empty_outputs(model)
        converter = tf.lite.TFLiteConverter.from_keras_model(model)
        if fp16:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            converter.target_spec.supported_types = [tf.float16]
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # Keras's export lists the endpoints it saved
                flatbuffer = converter.convert()
        except Exception as e:  # noqa: BLE001 - the converter raises many error types
            traced = _keras_trace_failure(model)
            reason = f"TensorFlow could not trace the Keras model: {traced}" if traced else \
                _converter_reason(str(e), graph)
            raise ModelError(f"TensorFlow's TFLite converter failed: {reason}") from None
        flatbuffer = rename_layer_outputs(flatbuffer, model, keras_codegen.layer_values(folder))
        flatbuffer = with_metadata(flatbuffer, {"layouts": read_signature(folder).get("layouts", {})},
                                   inputs=[tensor.name for tensor in model.inputs])
    Path(dest).write_bytes(flatbuffer)


#: the converter's list of the TensorFlow ops it could not lower to LiteRT's own: "TF Select ops: Conv2D"
_UNLOWERED = re.compile(r"TF Select ops: ([^\n]*)")


def _converter_reason(message: str, graph: Graph) -> str:
    """The ops the converter could not lower (its first line is MLIR's location of the first, which names no
    reason), and, where the model has open dims, the option that may let them lower (a convolution whose input
    channels the converter's shape inference lost)."""
    unlowered = _UNLOWERED.search(message)
    if not unlowered:
        return message.splitlines()[0][:300]
    text = f"LiteRT has no kernel for TensorFlow's {unlowered.group(1).strip()} as the converter left them"
    opened = [v.name for v in graph.inputs if v.shape is not None and not shapes.is_static(v.shape[1:])]
    if opened:
        text += f" (the model's open dims reach it: fixing them with --input-shape ({', '.join(opened)}) may " \
                "let it lower)"
    return text


def _keras_trace_failure(model) -> str:
    """Why tracing the Keras model for export fails, or "": the converter hides that failure (it falls back to a
    Keras 2 path that fails with "'NoneType' object is not callable")."""
    import tensorflow as tf

    signature = [tf.TensorSpec(t.shape, t.dtype, t.name) for t in model.inputs]
    try:
        tf.function(lambda *args: model(list(args) if len(args) > 1 else args[0], training=False)) \
            .get_concrete_function(*signature)
    except Exception as e:  # noqa: BLE001 - whatever a layer's call raises
        lines = [re.sub(r"\x1b\[\d+m", "", line).strip() for line in str(e).splitlines()]
        lines = [line for line in lines if line and not line.startswith(("Arguments", "•", "File ", "in user code"))]
        called = next((i for i, line in enumerate(lines) if line.startswith("Exception encountered when calling")),
                      None)
        if called is not None and called + 1 < len(lines):  # Keras names the layer, then its error
            return f"{lines[called].removeprefix('Exception encountered when calling ').rstrip('.')}: " \
                   f"{lines[called + 1][:300]}"
        return lines[-1][:300] if lines else type(e).__name__
    return ""


def _refuse_empty_outputs(model) -> None:
    """An output with a dim of size 0 (a result folded to an empty constant): LiteRT allocates no empty tensor."""
    report = BlockerReport("export to TFLite", "TFLite")
    for out in model.outputs:
        if 0 in tuple(out.shape):
            report.add("output", out.name, "an empty output (a dim of size 0: LiteRT's interpreter allocates none)")
    report.raise_if_any()
