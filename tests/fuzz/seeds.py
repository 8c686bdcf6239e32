"""Seed models for the fuzzing campaign: one small, valid model per source format tensorbridge reads.

Each seed is built from code here (nothing downloaded) into a folder; the campaign mutates copies of them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

#: format -> (family of the process that runs it, file or folder name of its seed)
SEEDS = {
    "onnx": ("torch", "model.onnx"),
    "tbir": ("torch", "model.tbir"),
    "pt2": ("torch", "model.pt2"),
    "safetensors": ("torch", "code_folder"),  # a code folder's weights; its model.py is tensorbridge's own
    "tflite": ("tf", "model.tflite"),
    "keras": ("tf", "model.keras"),
    "h5": ("tf", "model.h5"),
    "savedmodel": ("tf", "saved_model"),
}


def onnx_model():
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv.w")
    fw = numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "fc.w")
    nodes = [helper.make_node("Conv", ["x", "conv.w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "fc.w"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], [w, fw])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def build(folder: Path, family: str) -> dict[str, Path]:
    """Write the seeds of one family ("torch": ONNX, .tbir, .pt2, code folder; "tf": the TensorFlow formats)."""
    import onnx

    import tensorbridge as tb

    folder.mkdir(parents=True, exist_ok=True)
    seeds = {}
    if family == "torch":
        import torch

        onnx.save(onnx_model(), folder / "model.onnx")
        seeds["onnx"] = folder / "model.onnx"
        graph = tb.load(seeds["onnx"])
        seeds["tbir"] = tb.save(graph, folder / "model.tbir")
        seeds["safetensors"] = tb.save(graph, folder / "code_folder", to="torch")
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 8 * 8, 5))
        batch = torch.export.Dim("batch", min=1, max=16)
        program = torch.export.export(net, (torch.randn(2, 3, 8, 8),), dynamic_shapes=({0: batch},))
        torch.export.save(program, str(folder / "model.pt2"))
        seeds["pt2"] = folder / "model.pt2"
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import keras

        keras.utils.set_random_seed(0)
        inputs = keras.Input((8, 8, 3), name="x")
        x = keras.layers.Conv2D(4, 3, padding="same", activation="relu", name="conv")(inputs)
        x = keras.layers.GlobalAveragePooling2D(name="pool")(x)
        model = keras.Model(inputs, keras.layers.Dense(5, name="fc")(x), name="seed")
        model.save(folder / "model.keras")
        model.save(folder / "model.h5")
        model.export(str(folder / "saved_model"), verbose=False)
        seeds.update(keras=folder / "model.keras", h5=folder / "model.h5", savedmodel=folder / "saved_model")
        seeds["tflite"] = tb.save(tb.load(folder / "model.keras"), folder / "model.tflite")
    return seeds


def copy(seed: Path, dest: Path) -> Path:
    if seed.is_dir():
        shutil.copytree(seed, dest)
    else:
        shutil.copyfile(seed, dest)
    return dest
