"""PyTorch <-> ONNX, side by side with the tools users would pick instead, in the same run.

    python benchmarks/torch_bench.py            # appends its section to docs/benchmarks.md
    python benchmarks/torch_bench.py --runs 5

- PyTorch -> ONNX: tensorbridge (`tb.load(module)` + `tb.save(..., ".onnx")`) against
  `torch.onnx.export(..., dynamo=True)`.
- ONNX -> PyTorch: tensorbridge (`tb.save(tb.load(onnx), dir, to="torch")` + `load_model()`)
  against `onnx2torch.convert`.

Models: ResNet-18, ResNet-50 and MobileNetV2 (224x224), BERT and GPT-2 built from small random
configs (no downloads). Each conversion runs in a fresh process: wall time and peak resident memory
(VmHWM) are medians of several runs (each tool's modules imported before the clock, from compiled
bytecode as when installed), output size is the bytes written, and latency is the
median of 20 forward passes of the converted model (onnxruntime for ONNX, PyTorch eager for
modules) next to the source model's own latency.
"""

from __future__ import annotations

import argparse
import compileall
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import TORCH_MODELS, fmt, latency_ms, median, peak_mb, replace_section, torch_model  # noqa: E402

SHIMS = Path(__file__).resolve().parents[1] / "tests" / "shims"  # the torchvision stand-in





def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size





def _ort_latency(path, feeds) -> float:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    f = dict(zip(names, feeds))
    return latency_ms(lambda: sess.run(None, f))


#: what each tool's conversion imports (its output's own imports included): loaded before the clock starts
TOOL_MODULES = {
    "tensorbridge": ("tensorbridge.frontends.onnx.importer", "tensorbridge.frontends.torch.importer",
                     "tensorbridge.backends.onnx.exporter", "tensorbridge.backends.torch.codegen",
                     "tensorbridge.formats.sniff", "tensorbridge.ir.serde", "tensorbridge.reference.interpreter",
                     "safetensors.torch"),
    "torch.onnx": ("torch.onnx",),
    "onnx2torch": ("onnx2torch",),
}


def worker(task: str, name: str, out: Path, onnx_src: Path | None) -> dict:
    import warnings

    import torch

    warnings.simplefilter("ignore")
    torch.set_num_threads(os.cpu_count() or 1)
    if task.startswith("to_onnx"):
        module, args, _ = torch_model(name)
        feeds = [a.numpy() for a in args]
    else:  # the inputs the ONNX source was exported with: no need to build the model (or import its library)
        with np.load(onnx_src.with_suffix(".npz")) as saved:
            feeds = [saved[k] for k in sorted(saved.files, key=int)]
        args = tuple(torch.from_numpy(f) for f in feeds)
    for module in TOOL_MODULES[task.split(":")[1]]:  # imported before the clock: the figure is the conversion
        importlib.import_module(module)
    start = time.perf_counter()
    if task == "to_onnx:tensorbridge":
        import tensorbridge as tb

        tb.save(tb.load(module, example_inputs=args), out)
    elif task == "to_onnx:torch.onnx":
        torch.onnx.export(module, args, str(out), dynamo=True, external_data=False)
    elif task == "from_onnx:tensorbridge":
        import tensorbridge as tb
        from tensorbridge.codegen.folder import load_folder

        tb.save(tb.load(onnx_src), out, to="torch")
        converted = load_folder(out).load_model()
    elif task == "from_onnx:onnx2torch":
        import onnx2torch

        converted = onnx2torch.convert(str(onnx_src)).eval()
        torch.save(converted.state_dict(), str(out))
    else:
        raise SystemExit(f"unknown task {task}")
    wall = time.perf_counter() - start
    peak = peak_mb()
    with torch.no_grad():
        if task.startswith("to_onnx"):
            latency = _ort_latency(out, feeds)
            source_latency = latency_ms(lambda: module(*args))
        else:
            latency = latency_ms(lambda: converted(*args))
            source_latency = _ort_latency(onnx_src, feeds)
    return {"wall": wall, "peak_mb": peak, "size_mb": _size(out) / 2**20, "latency_ms": latency,
            "source_latency_ms": source_latency}


def measure(task, name, out, onnx_src=None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both tools run from compiled bytecode, as installed packages do
    if task.endswith("onnx2torch"):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SHIMS), env.get("PYTHONPATH")]))
    cmd = [sys.executable, __file__, "--worker", task, name, str(out)] + ([str(onnx_src)] if onnx_src else [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--worker", nargs="+")
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    if args.worker:
        task, name, out, *rest = args.worker
        print(json.dumps(worker(task, name, Path(out), Path(rest[0]) if rest else None)))
        return
    compileall.compile_dir(ROOT / "tensorbridge", quiet=1)  # what installing the package does
    with tempfile.TemporaryDirectory(prefix="tb-torch-bench-") as tmp:
        work = Path(tmp)
        suffix = {"to_onnx:tensorbridge": ".onnx", "to_onnx:torch.onnx": ".onnx", "from_onnx:tensorbridge": "",
                  "from_onnx:onnx2torch": ".pt"}
        rows = []
        for name in TORCH_MODELS:
            src = work / f"{name}.onnx"
            make_onnx_source(name, src)
            for task in suffix:
                results = []
                for i in range(args.runs):
                    out = work / f"{name}_{task.replace(':', '_').replace('.', '_')}_{i}{suffix[task]}"
                    r = measure(task, name, out, src if task.startswith("from") else None)
                    results.append(r)
                    print(f"{name} {task} run {i}: {r}", file=sys.stderr)
                rows.append((name, task, results))
        write_section(Path(args.out), rows, args.runs)


def make_onnx_source(name: str, path: Path) -> None:
    """The ONNX model for the ONNX -> PyTorch direction: PyTorch's classic exporter at opset 17,
    the kind of file onnx2torch is built for."""
    import warnings

    import torch

    module, args, _ = torch_model(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), dynamo=False, opset_version=17)
    np.savez(path.with_suffix(".npz"), **{str(i): a.numpy() for i, a in enumerate(args)})



def write_section(path: Path, rows, runs) -> None:
    import datetime

    import onnxruntime
    import torch

    intro = (f"Measured {datetime.date.today().isoformat()} by `python benchmarks/torch_bench.py` (part of "
             f"`make bench`); torch {torch.__version__}, onnxruntime {onnxruntime.__version__}; median of {runs} "
             "runs, each in a fresh process with each tool's modules (and its output's imports) loaded before the "
             "clock, from compiled bytecode as when installed. ResNet-18, ResNet-50 and MobileNetV2 at "
             "1x3x224x224, BERT and GPT-2 "
             "(2 layers, hidden 64, sequence 64) built by transformers from small configs; seeded weights. "
             "Latency: median of 20 forward passes of the converted model, next to "
             "the source model in its own runtime (PyTorch eager for PyTorch -> ONNX, onnxruntime for "
             "ONNX -> PyTorch).")
    lines = ["", intro, " The wall ratio is tensorbridge's wall time over the other tool's, same model and direction.",
             "", "| model | direction | tool | wall s | wall ratio | peak MB | output MB | converted latency ms | "
             "source latency ms |", "|---|---|---|---|---|---|---|---|---|"]
    walls = {(name, task.split(":")[0], task.split(":")[1]): median(results, "wall")
             for name, task, results in rows if any("error" not in r for r in results)}
    for name, task, results in rows:
        direction, tool = task.split(":")
        other = next((w for (n, d, t), w in walls.items() if n == name and d == direction and t != tool), None)
        ratio = walls[(name, direction, tool)] / other if tool == "tensorbridge" and other else None
        label = "PyTorch -> ONNX" if direction == "to_onnx" else "ONNX -> PyTorch"
        errors = [r["error"] for r in results if "error" in r]
        if errors and len(errors) == len(results):
            lines.append(f"| {name} | {label} | {tool} | failed: {errors[0]} | | | | | |")
            continue
        lines.append(f"| {name} | {label} | {tool} | {fmt(median(results, 'wall'), 3)} | {fmt(ratio)} | "
                     f"{fmt(median(results, 'peak_mb'), 0)} | {fmt(median(results, 'size_mb'), 1)} | "
                     f"{fmt(median(results, 'latency_ms'))} | {fmt(median(results, 'source_latency_ms'))} |")
    replace_section(path, "PyTorch <-> ONNX", lines)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
