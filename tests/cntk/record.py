"""Records the CNTK fixtures `make test` checks against, from real CNTK 2.7 (needs `make runtimes`; run with the CNTK
venv's Python 3.6, so keep this file Python 3.6):

    LD_LIBRARY_PATH=~/.cache/tensorbridge/runtimes/cntk/mpi \\
        ~/.cache/tensorbridge/runtimes/cntk/venv/bin/python -m tests.cntk.record

For each model of tests/cntk/models.py: `data/<name>.model`, the model as CNTK saves it (weights included),
`data/<name>.onnx`, its ONNX export (CNTK's own exporter: IR 4, opset 9, batch of one), and in
`data/<name>.cntk.npz` the inputs and the outputs CNTK computes from the `.model`. The per-op models go to
`data/ops/`, their inputs and outputs to `data/ops.cntk.npz` (`<probe>/<input>`, `<probe>/output`). Batch
normalisation is calibrated first: each layer's running statistics are those of its own input on a calibration batch,
its scale and shift drawn as trained nets have them, so no layer is degenerate.
"""

import importlib.util
import os
import sys
import tempfile

import cntk as C
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from tests.cntk.models import ARCHITECTURES, PROBES  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "cntk_child", os.path.join(os.path.dirname(os.path.dirname(HERE)), "tensorbridge", "verification", "runners",
                               "cntk_child.py"))
child = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(child)


def calibrate(model, feeds) -> None:
    """Each BatchNormalization's running statistics from its own input: one pass over the layers per layer, so
    that whatever order the graph search lists them in, each ends with the statistics of the input the layers
    before it, calibrated, give it."""
    rng = np.random.RandomState(21)
    blocks = C.logging.graph.depth_first_search(
        model, lambda f: isinstance(f, C.Function) and f.is_block and f.op_name == "BatchNormalization", depth=-1)
    calibration = {a: np.concatenate([feeds[a.name], rng.uniform(0, 1, feeds[a.name].shape).astype(np.float32)])
                   for a in model.arguments}
    # a block's inputs are plain Variables, whose `value` cannot be set: the model's own Parameters and Constants
    settable = {v.uid: v for v in [*model.parameters, *model.constants]}
    for block in blocks:
        scale, bias = (settable[v.uid] for v in block.inputs[:2])
        scale.value = rng.uniform(0.5, 1.5, scale.shape).astype(np.float32)
        bias.value = rng.uniform(0.5, 1.0, bias.shape).astype(np.float32)
    for _ in blocks:
        for block in blocks:
            x = block.inputs[-1]
            mean, var = (settable[v.uid] for v in block.inputs[2:4])
            data = C.combine([x]).eval({a: calibration[a] for a in C.combine([x]).arguments})
            spatial = block.block_root.attributes["spatial"]
            axes = (0,) + tuple(range(2, data.ndim)) if spatial else (0,)
            mean.value = data.mean(axis=axes).reshape(mean.shape).astype(np.float32)
            var.value = data.var(axis=axes).reshape(var.shape).astype(np.float32)


def saved_outputs(model, folder: str, name: str, feeds: dict):
    """Save the model, and what CNTK computes from the file saved."""
    path = os.path.join(folder, name + ".model")
    model.save(path)
    loaded = C.load_model(path)
    return path, child.outputs(loaded, {a.uid: feeds[a.name] for a in loaded.arguments})


def export_onnx(model, path: str) -> bool:
    try:
        model.save(path, format=C.ModelFormat.ONNX)
        return True
    except Exception as e:  # noqa: BLE001 - CNTK's exporter refuses what it cannot write; the fixture says so
        print("  no ONNX export:", str(e).splitlines()[0][:160])
        return False


def record_architectures() -> None:
    for name, build in sorted(ARCHITECTURES.items()):
        model, feeds = build()
        calibrate(model, feeds)
        _, outputs = saved_outputs(model, DATA, name, feeds)
        export_onnx(model, os.path.join(DATA, name + ".onnx"))
        np.savez_compressed(os.path.join(DATA, name + ".cntk.npz"), **feeds,
                            **{f"output{i}": out for i, out in enumerate(outputs)})
        print("recorded", name, [o.shape for o in outputs])


def record_probes() -> None:
    folder = os.path.join(DATA, "ops")
    os.makedirs(folder, exist_ok=True)
    arrays = {}
    for name, build in sorted(PROBES.items()):
        model, feeds = build()
        calibrate(model, feeds)
        _, outputs = saved_outputs(model, folder, name, feeds)
        with tempfile.TemporaryDirectory() as tmp:
            if export_onnx(model, os.path.join(tmp, "m.onnx")):
                os.replace(os.path.join(tmp, "m.onnx"), os.path.join(folder, name + ".onnx"))
        arrays.update({name + "/" + k: v for k, v in feeds.items()})
        arrays[name + "/output"] = outputs[0]
        print("recorded", name, outputs[0].shape)
    np.savez_compressed(os.path.join(DATA, "ops.cntk.npz"), **arrays)


if __name__ == "__main__":
    C.cntk_py.set_fixed_random_seed(1)
    C.device.try_set_default_device(C.device.cpu())
    record_architectures()
    record_probes()
