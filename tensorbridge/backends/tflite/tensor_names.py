"""IR value names for the tensors of a `.tflite` that TF's converter made from generated Keras code.

The converter names a tensor after the TF ops that wrote it, `model/layer_1/op`, and a fused
kernel's tensor lists all of them, `model/relu_1/Relu;model/conv_1/Conv2D`, the op that computes
the value first (Keras scopes a layer's ops `layer_1` when the model is traced again). The tensor
the last op of a layer writes is that layer's output. One exception: a BatchNormalization that is
the only reader of a convolution or Dense is folded into its weights, and the result keeps the
convolution's name; it is the BatchNormalization's output. Renaming these tensors after the IR
values lets per-layer verification find them.
"""

from __future__ import annotations

from tensorbridge.rules.keras import tf_layer_scopes
from tensorbridge.rules.keras.base import folded_batch_norms


def rename_layer_outputs(flatbuffer: bytes, model, values: dict[str, str]) -> bytes:
    """Name each Keras layer's output tensor in the main subgraph after its IR value (`values`: layer
    name -> IR value name, where they differ). Graph inputs and outputs keep their names."""
    from tensorflow.lite.tools import flatbuffer_utils

    ir_name = {layer.name: values.get(layer.name, layer.name) for layer in model.layers}
    ir_name.update({layer: ir_name[bn] for layer, bn in folded_batch_norms(model).items()})
    fb = flatbuffer_utils.convert_bytearray_to_object(bytearray(flatbuffer))
    sg = fb.subgraphs[0]
    boundary = {int(t) for t in sg.inputs} | {int(t) for t in sg.outputs}
    written = {}  # IR name -> the last tensor written under it
    for op in sg.operators:
        for t in (int(t) for t in op.outputs):
            layer = _layer(sg.tensors[t].name.decode("utf-8", "replace"), ir_name) if t >= 0 else None
            if layer is not None and t not in boundary:
                written[ir_name[layer]] = t
    for name, t in written.items():
        sg.tensors[t].name = name.encode()
    return bytes(flatbuffer_utils.convert_object_to_bytearray(fb))


def _layer(tensor_name: str, layers) -> str | None:
    return next((c for c in tf_layer_scopes(tensor_name) if c in layers), None)
