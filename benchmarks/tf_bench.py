"""TensorFlow family <-> ONNX, side by side with tf2onnx and onnx2tf, in the same run.

    python benchmarks/tf_bench.py          # appends its section to docs/benchmarks.md

- Keras -> ONNX: tensorbridge against `tf2onnx.convert.from_keras`.
- TFLite -> ONNX: tensorbridge against `tf2onnx.convert.from_tflite`.
- ONNX -> TFLite: tensorbridge (through TF's own converter) against onnx2tf (its own venv), and
  TVM's ConvertLayout to NHWC (own venv; it yields a Relax module, so only its transposes count).

tensorbridge runs twice: keeping the source's I/O layout (default) and with `--io-layout target`;
tf2onnx likewise without and with `inputs_as_nchw`.

Models: keras.applications MobileNetV2 and ResNet50 at 224x224 with seeded random weights.
Each conversion runs in a fresh process: wall time, peak resident memory (VmHWM), output size,
the number of Transpose ops in the result, and the converted model's latency (onnxruntime
or LiteRT, median of 20 runs) next to the source model's own (Keras, LiteRT, onnxruntime).
A tool that fails is reported with its error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import fmt, latency_ms, median, peak_mb, replace_section  # noqa: E402

O2T = ROOT / ".venv-onnx2tf" / "bin" / "onnx2tf"
TVM_PY = ROOT / ".venv-tvm" / "bin" / "python"
MODELS = ("MobileNetV2", "ResNet50")
TOOLS = {"keras_to_onnx": ("tensorbridge", "tensorbridge:io-target", "tf2onnx", "tf2onnx:inputs-as-nchw"),
         "tflite_to_onnx": ("tensorbridge", "tensorbridge:io-target", "tf2onnx", "tf2onnx:inputs-as-nchw"),
         "onnx_to_tflite": ("tensorbridge", "tensorbridge:io-target", "onnx2tf", "tvm")}




def _ort(path):
    """A runner for an ONNX model on random input of its own (static) input shape."""
    import numpy as np
    import onnxruntime as ort

    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    i = s.get_inputs()[0]
    x = np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
    return lambda: s.run(None, {i.name: x})


def _lite(path):
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    d = it.get_input_details()[0]
    x = np.random.default_rng(0).standard_normal(d["shape"]).astype(np.float32)

    def run():
        it.set_tensor(d["index"], x)
        it.invoke()
    return run


def _transposes(path) -> int | None:
    if str(path).endswith(".onnx"):
        import onnx

        return sum(n.op_type == "Transpose" for n in onnx.load(str(path)).graph.node)
    import tflite

    m = tflite.Model.GetRootAs(Path(path).read_bytes(), 0)
    sg = m.Subgraphs(0)
    names = {v: k for k, v in vars(tflite.BuiltinOperator).items() if isinstance(v, int)}
    count = 0
    for i in range(sg.OperatorsLength()):
        code = m.OperatorCodes(sg.Operators(i).OpcodeIndex())
        count += names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode())) == "TRANSPOSE"
    return count


def worker(task: str, name: str, src: Path, out: Path) -> dict:
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np

    x = np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype(np.float32)  # Keras models: NHWC
    start = time.perf_counter()
    direction, tool = task.split(":", 1)
    if tool.startswith("tensorbridge"):
        import tensorbridge as tb

        layout = tb.LayoutOptions(io_layout="target") if tool.endswith("target") else None
        tb.save(tb.load(src), out, **({"layout": layout} if layout else {}))
    elif direction == "keras_to_onnx" and tool.startswith("tf2onnx"):
        import keras
        import tensorflow as tf
        import tf2onnx

        model = keras.models.load_model(str(src), compile=False)
        spec = (tf.TensorSpec((None, 224, 224, 3), tf.float32, name="input"),)
        nchw = {"inputs_as_nchw": ["input"]} if tool.endswith("nchw") else {}
        tf2onnx.convert.from_keras(model, input_signature=spec, opset=17, output_path=str(out), **nchw)
    elif direction == "tflite_to_onnx" and tool.startswith("tf2onnx"):
        import tf2onnx
        from ai_edge_litert.interpreter import Interpreter

        name = Interpreter(model_path=str(src)).get_input_details()[0]["name"]
        nchw = {"inputs_as_nchw": [name]} if tool.endswith("nchw") else {}
        tf2onnx.convert.from_tflite(str(src), opset=17, output_path=str(out), **nchw)
    else:
        raise SystemExit(f"unknown task {task}")
    wall = time.perf_counter() - start
    peak = peak_mb()
    latency = latency_ms(_ort(out) if str(out).endswith(".onnx") else _lite(out))
    if task.startswith("keras"):
        import keras

        model = keras.models.load_model(str(src), compile=False)
        source_latency = latency_ms(lambda: model(x, training=False))
    elif task.startswith("tflite"):
        source_latency = latency_ms(_lite(src))
    else:
        source_latency = latency_ms(_ort(src))
    return {"wall": wall, "peak_mb": peak, "size_mb": out.stat().st_size / 2**20, "latency_ms": latency,
            "source_latency_ms": source_latency, "transposes": _transposes(out)}


def run_onnx2tf(src: Path, work: Path) -> dict:
    """onnx2tf in its own venv; peak memory from GNU time's max RSS of the process."""
    import numpy as np

    if not O2T.exists():
        return {"error": "onnx2tf is not installed (run benchmarks/setup.sh)"}
    out_dir = work / "o2t_out"
    # onnx2tf downloads calibration images for image models unless this file is present
    np.save(work / "calibration_image_sample_data_20x128x128x3_float32.npy",
            np.random.default_rng(0).random((20, 128, 128, 3), dtype=np.float32))
    cmd = ["/usr/bin/time", "-f", "%M", str(O2T), "-i", str(src), "-o", str(out_dir), "-n"]
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    tfl = next(out_dir.glob("*float32.tflite"), None)
    if tfl is None:
        return {"error": "no float32 .tflite produced"}
    peak = int(p.stderr.strip().splitlines()[-1]) / 1024
    return {"wall": wall, "peak_mb": peak, "size_mb": tfl.stat().st_size / 2**20,
            "latency_ms": latency_ms(_lite(tfl)), "source_latency_ms": latency_ms(_ort(src)),
            "transposes": _transposes(tfl)}


TVM_SCRIPT = """
import json, sys, time
import onnx, tvm
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx
start = time.perf_counter()
mod = from_onnx(onnx.load(sys.argv[1]), keep_params_in_input=False)
passes = [relax.transform.ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]}), relax.transform.FoldConstant(),
          relax.transform.DeadCodeElimination()]
with tvm.transform.PassContext(opt_level=3):
    mod = tvm.transform.Sequential(passes)(mod)
wall = time.perf_counter() - start
peak = next(int(ln.split()[1]) / 1024 for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(json.dumps({"wall": wall, "peak_mb": peak,
                  "transposes": mod.script().count("R.permute_dims(")}))
"""


def run_tvm(src: Path) -> dict:
    """TVM's Relax ConvertLayout (convolutions to NHWC, the rest follows), counting permute_dims left."""
    if not TVM_PY.exists():
        return {"error": "TVM is not installed (run benchmarks/setup.sh)"}
    p = subprocess.run([str(TVM_PY), "-c", TVM_SCRIPT, str(src)], capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(task, name, src, out) -> dict:
    cmd = [sys.executable, __file__, "--worker", task, name, str(src), str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def prepare(name: str, work: Path) -> tuple[Path, Path, Path]:
    """The Keras and TFLite (TF's converter) sources, and an NCHW ONNX source of the same
    architecture exported by PyTorch (tests/models/torch_zoo.py), as an ONNX user would have it."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import warnings

    import keras
    import tensorflow as tf
    import torch

    sys.path.insert(0, str(ROOT))
    from tests.models.torch_zoo import ZOO

    keras.utils.set_random_seed(0)
    model = getattr(keras.applications, name)(weights=None, input_shape=(224, 224, 3))
    kpath = work / f"{name}.keras"
    model.save(kpath)
    lpath = work / f"{name}.tflite"
    lpath.write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    opath = work / f"{name}_torch.onnx"
    module, args, _ = ZOO[{"MobileNetV2": "mobilenet_v2", "ResNet50": "resnet50"}[name]](
        **({"size": 224, "batch": 1, "num_classes": 1000} if name == "MobileNetV2" else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(opath), dynamo=False, opset_version=17)
    return kpath, lpath, opath


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--worker", nargs=4)
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    if args.worker:
        task, name, src, out = args.worker
        print(json.dumps(worker(task, name, Path(src), Path(out))))
        return
    with tempfile.TemporaryDirectory(prefix="tb-tf-bench-") as tmp:
        work = Path(tmp)
        rows = []
        for name in MODELS:
            kpath, lpath, opath = prepare(name, work)
            plan = [*[(f"keras_to_onnx:{tool}", kpath, ".onnx") for tool in TOOLS["keras_to_onnx"]],
                    *[(f"tflite_to_onnx:{tool}", lpath, ".onnx") for tool in TOOLS["tflite_to_onnx"]],
                    *[(f"onnx_to_tflite:{tool}", opath, ".tflite") for tool in TOOLS["onnx_to_tflite"]]]
            for task, src, suffix in plan:
                results = []
                for i in range(args.runs):
                    if task.endswith("onnx2tf"):
                        r = run_onnx2tf(src, work)
                    elif task.endswith("tvm"):
                        r = run_tvm(src)
                    else:
                        r = measure(task, name, src, work / f"{name}_{task.replace(':', '_')}_{i}{suffix}")
                    results.append(r)
                    print(f"{name} {task} run {i}: {r}", file=sys.stderr)
                rows.append((name, task, results))
        write_section(Path(args.out), rows, args.runs)



def write_section(path: Path, rows, runs) -> None:
    import datetime

    import tensorflow as tf
    import tf2onnx

    o2t = subprocess.run([str(O2T.parent / "pip"), "show", "onnx2tf"], capture_output=True, text=True).stdout
    o2t_version = next((ln.split()[-1] for ln in o2t.splitlines() if ln.startswith("Version")), "not installed")
    intro = (f"Measured {datetime.date.today().isoformat()} by `python benchmarks/tf_bench.py` (part of "
             f"`make bench`); TensorFlow {tf.__version__}, tf2onnx {tf2onnx.__version__}, onnx2tf {o2t_version} "
             f"(own venv with its pinned TensorFlow); median of {runs} runs, each in a fresh process. "
             "keras.applications at 1x224x224x3 with seeded random weights; the ONNX source for ONNX -> TFLite is "
             "the same architecture written in PyTorch (tests/models/torch_zoo.py; its MobileNetV2 has 5 "
             "inverted-residual stages) exported by torch.onnx at opset 17, NCHW as ONNX users have it. "
             "Latency: median of 20 runs of the converted model "
             "(onnxruntime / LiteRT) next to the source in its own runtime. Transposes: Transpose/TRANSPOSE ops "
             "left in the converted model (for TVM: permute_dims left in the Relax module after ConvertLayout "
             "with convolutions in NHWC; it is not a .tflite, so it has no latency or size here). "
             "`io-target` converts with `--io-layout target` (the image input and output take the target's "
             "channel order; tf2onnx's `inputs_as_nchw` is its counterpart); without it the model keeps the "
             "source's I/O layout, which costs at most one transpose per image input and output. onnx2tf "
             "always changes the I/O layout to NHWC; TVM keeps it.")
    lines = ["", intro, "",
             "| model | direction | tool | wall s | peak MB | output MB | transposes | converted latency ms "
             "| source latency ms |", "|---|---|---|---|---|---|---|---|---|"]
    labels = {"keras_to_onnx": "Keras -> ONNX", "tflite_to_onnx": "TFLite -> ONNX", "onnx_to_tflite": "ONNX -> TFLite"}
    for name, task, results in rows:
        direction, tool = task.split(":", 1)
        tool = tool.replace(":", " ")
        errors = [r["error"] for r in results if "error" in r]
        if len(errors) == len(results):
            lines.append(f"| {name} | {labels[direction]} | {tool} | failed: {errors[0].replace('|', '/')} "
                         "| | | | | |")
            continue
        lines.append(f"| {name} | {labels[direction]} | {tool} | {fmt(median(results, 'wall'))} | "
                     f"{fmt(median(results, 'peak_mb'), 0)} | {fmt(median(results, 'size_mb'), 1)} | "
                     f"{fmt(median(results, 'transposes'), 0)} | {fmt(median(results, 'latency_ms'))} | "
                     f"{fmt(median(results, 'source_latency_ms'))} |")
    replace_section(path, "TensorFlow / Keras / TFLite <-> ONNX", lines)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
