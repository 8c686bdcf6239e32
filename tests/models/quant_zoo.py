"""Quantized models made here on seeded data (no downloads): TFLite by TF's post-training quantizer, PyTorch
programs by torchao's PT2E flow."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def int8_application(name: str, path: Path, size: int = 64, io: str = "int8") -> Path:
    """keras.applications `name` (seeded weights) quantized to full integer; `io` int8 or uint8; the output is
    the pooled feature vector. Freshly initialised, these networks' activations fade to ~1e-11 (and would
    quantize to one value), so each BatchNormalization first gets the statistics of its seeded input."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3), include_top=False,
                                              pooling="avg")
    _calibrate_batch_norms(model, np.random.default_rng(1).standard_normal((4, size, size, 3)).astype(np.float32))
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(0)
    converter.representative_dataset = lambda: ([rng.standard_normal((1, size, size, 3)).astype(np.float32)]
                                                for _ in range(8))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = getattr(tf, io)
    path.write_bytes(converter.convert())
    return path


def int8_add_mean(path: Path, channels: int = 2048) -> Path:
    """Two int8 [1, 2, 2, channels] inputs added (fused ReLU6) and averaged over the 2x2 positions: TFLite ADD
    and MEAN kernels, whose rounding a float dequantize -> op -> quantize chain misses now and then."""
    import keras
    import tensorflow as tf

    a, b = keras.Input((2, 2, channels), name="a"), keras.Input((2, 2, channels), name="b")
    s = keras.layers.ReLU(max_value=6.0)(keras.layers.Add()([a, keras.layers.Rescaling(0.37)(b)]))
    model = keras.Model([a, b], [s, keras.layers.GlobalAveragePooling2D()(s)])
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(0)
    converter.representative_dataset = lambda: ([4 * rng.standard_normal((1, 2, 2, channels)).astype(np.float32)
                                                 for _ in range(2)] for _ in range(8))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    path.write_bytes(converter.convert())
    return path


def dynamic_range(path: Path) -> Path:
    """Conv (3x3, 8 -> 64) then two Dense layers, converted with TF's dynamic-range quantization: int8
    weights, float activations that LiteRT quantizes per row / per batch item at run time."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    x = keras.Input((16, 16, 8))
    h = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x))
    h = keras.layers.Dense(32)(keras.layers.Dense(128, activation="relu")(h))
    converter = tf.lite.TFLiteConverter.from_keras_model(keras.Model(x, h))
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    path.write_bytes(converter.convert())
    return path


def dynamic_range_separable(path: Path) -> Path:
    """A separable block as published mobile models have it (FER's emotion model): Conv 3x3, depthwise 3x3,
    pointwise 1x1, a strided 1x1, dynamic-range quantized: LiteRT quantizes a pointwise convolution's input per
    pixel, the others' per batch item."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    x = keras.Input((12, 12, 8))
    h = keras.layers.Conv2D(128, 3, padding="same", activation="relu")(x)
    h = keras.layers.DepthwiseConv2D(3, padding="same")(h)
    h = keras.layers.Conv2D(64, 1, activation="relu")(h)
    h = keras.layers.Conv2D(64, 1, strides=2)(h)
    h = keras.layers.Dense(10)(keras.layers.GlobalAveragePooling2D()(h))
    converter = tf.lite.TFLiteConverter.from_keras_model(keras.Model(x, h))
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    path.write_bytes(converter.convert())
    return path


def pt2e_program(module, args: tuple, path: Path, quantizer: str = "xnnpack") -> Path:
    """`module` quantized by torchao's PT2E flow, calibrated on seeded data, saved as a .pt2 program.
    "xnnpack": int8 everywhere (symmetric per-channel weights); "x86": uint8 inputs of convs and linears,
    float outputs (X86InductorQuantizer's default)."""
    import torch
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    if quantizer == "xnnpack":
        from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

        q = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    else:
        from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as x86

        q = x86.X86InductorQuantizer().set_global(x86.get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(torch.export.export(module.eval(), args).module(), q)
    rng = torch.Generator().manual_seed(1)
    for _ in range(8):
        prepared(*[torch.randn(a.shape, generator=rng) for a in args])
    torch.export.save(torch.export.export(convert_pt2e(prepared), args), str(path))
    return path


def _calibrate_batch_norms(model, x: np.ndarray) -> None:
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            a = np.asarray(keras.Model(model.inputs, layer.input)(x))
            layer.moving_mean.assign(a.mean(axis=(0, 1, 2)))
            layer.moving_variance.assign(a.var(axis=(0, 1, 2)) + 1e-3)


def quant_params(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every quantized tensor of a .tflite file: name -> (scales, zero points), read from the flatbuffer."""
    import tflite

    model = tflite.Model.GetRootAs(Path(path).read_bytes(), 0)
    sg = model.Subgraphs(0)
    out = {}
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        q = t.Quantization()
        if q is None or q.ScaleLength() == 0:
            continue
        out[t.Name().decode()] = (q.ScaleAsNumpy().astype(np.float32), q.ZeroPointAsNumpy().astype(np.int64))
    return out


def tflite_kernels(path) -> list[tuple[str, tuple[str, ...]]]:
    """(builtin, dtypes of its inputs) for every operator of a .tflite file."""
    import tflite

    model = tflite.Model.GetRootAs(Path(path).read_bytes(), 0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    types = {v: k.lower() for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
    sg = model.Subgraphs(0)
    found = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex()).BuiltinCode()
        found.append((names[code], tuple(types[sg.Tensors(int(t)).Type()] for t in op.InputsAsNumpy() if t >= 0)))
    return found


def quantized_inputs(graph, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded standard-normal images quantized with each input's own scale and zero point (what a quantized
    model is fed in use; raw small integers would sit at one end of its range)."""
    feeds = {}
    for v in graph.inputs:
        x = np.random.default_rng(seed).standard_normal([d if isinstance(d, int) else 1 for d in v.shape])
        info = np.iinfo(v.dtype)
        q = np.rint(x / float(v.quant.scale.reshape(-1)[0])) + int(v.quant.zero_point.reshape(-1)[0])
        feeds[v.name] = np.clip(q, info.min, info.max).astype(v.dtype)
    return feeds


def onnx_qdq(module, args, path: Path, per_channel: bool = False, activation: str = "int8") -> Path:
    """A torch module exported to ONNX and quantized by onnxruntime's `quantize_static` (QDQ, int8 weights,
    `activation` int8 or uint8) on seeded calibration data."""
    import torch
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    float_path = path.with_name(path.stem + "_float.onnx")
    torch.onnx.export(module, args, str(float_path), dynamo=False, opset_version=17, input_names=["x"],
                      output_names=["y"])
    rng = np.random.default_rng(0)
    batches = iter([{"x": rng.standard_normal(tuple(args[0].shape)).astype(np.float32)} for _ in range(8)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(batches, None)

    quantize_static(str(float_path), str(path), Reader(), quant_format=QuantFormat.QDQ, per_channel=per_channel,
                    activation_type=QuantType.QUInt8 if activation == "uint8" else QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    return path


def ops_net(size: int = 16):
    """A small CNN through the ops whose int8 TFLite kernels cannot rescale or have a fixed output scale:
    max pool with PyTorch's padding, average pool, sigmoid gate, tanh, channel concat, reshape and a softmax."""
    import torch
    from torch import nn

    class OpsNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, padding=1)
            self.gate = nn.Conv2d(8, 8, 1)
            self.pool = nn.MaxPool2d(3, 2, 1)
            self.avg = nn.AvgPool2d(2)
            self.head = nn.Linear(16 * (size // 4) ** 2, 10)

        def forward(self, x):
            x = torch.relu(self.stem(x))
            x = x * torch.sigmoid(self.gate(x))
            x = self.avg(self.pool(x))
            x = torch.cat([x, torch.tanh(x)], dim=1)
            return torch.softmax(self.head(x.reshape(x.shape[0], -1)), dim=-1)

    torch.manual_seed(0)
    return OpsNet().eval(), (torch.randn(1, 3, size, size),)
