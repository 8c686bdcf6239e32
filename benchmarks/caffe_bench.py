"""Caffe -> ONNX on VGG-16 (553 MB of weights): wall time and peak memory against the weight bytes.

    python benchmarks/caffe_bench.py            # replaces its section of docs/benchmarks.md
    python benchmarks/caffe_bench.py --runs 5

The model is tests/caffe/models.py's VGG-16 with seeded weights. Each measurement runs in a fresh process:
`tensorbridge` converts the prototxt + caffemodel to ONNX (reading, writing and onnx's checker on the file written,
no verification run); `protobuf` only parses the caffemodel into Caffe's NetParameter message, the first step
of every protobuf-based Caffe converter (MMdnn, caffe2onnx, Caffe's own Python), measured in the same run. The
target is peak memory, less what the interpreter and libraries take, within 1.5x the weight bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import replace_section  # noqa: E402

CHILD = r"""
import json, sys, time
sys.path.insert(0, "benchmarks")
from common import peak_mb
mode, src, dst = sys.argv[1:4]
import tensorbridge as tb
from tensorbridge.formats.caffe import messages
base = peak_mb()
t = time.perf_counter()
if mode == "tensorbridge":
    tb.save(tb.load(src), dst)
elif mode == "protobuf":
    with open(src.replace(".prototxt", ".caffemodel"), "rb") as f:
        messages().NetParameter.FromString(f.read())
wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "peak_mb": peak_mb(), "base_mb": base}))
"""


def measure(mode: str, src: Path, dst: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(src), str(dst)], capture_output=True, text=True,
                          cwd=ROOT)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    import google.protobuf

    import tensorbridge
    from tests.caffe.models import write

    with tempfile.TemporaryDirectory(prefix="tb-caffe-bench-") as tmp:
        prototxt = write("vgg16", Path(tmp) / "vgg16")
        weights = (Path(tmp) / "vgg16.caffemodel").stat().st_size / 2**20
        rows = []
        for mode in ("tensorbridge", "protobuf"):
            runs = [measure(mode, prototxt, Path(tmp) / "vgg16.onnx") for _ in range(a.runs)]
            wall = statistics.median(r["wall"] for r in runs)
            peak = statistics.median(r["peak_mb"] for r in runs)
            base = statistics.median(r["base_mb"] for r in runs)
            task = "prototxt + caffemodel → ONNX file" if mode == "tensorbridge" else "parse the caffemodel only"
            rows.append(f"| VGG-16 | {mode} | {task} | {weights:.0f} | {wall:.2f} | {peak:.0f} | "
                        f"{(peak - base) / weights:.2f}× |")
            print(rows[-1], flush=True)
    lines = [
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python benchmarks/caffe_bench.py` (part of `make bench`) on "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, tensorbridge "
        f"{tensorbridge.__version__}, protobuf {google.protobuf.__version__}. tests/caffe/models.py's VGG-16 with "
        f"seeded weights; each run in a fresh process, median of {a.runs}. `tensorbridge` reads the prototxt and "
        "caffemodel and writes the ONNX file (onnx's checker included, no verification run); `protobuf` is the "
        "first step of every protobuf-based Caffe converter, parsing the caffemodel into Caffe's NetParameter, in "
        "the same run. Peak memory is the process's peak resident set (VmHWM) including the memory-mapped weight "
        "pages touched; the last column subtracts what the process held before the conversion (interpreter and "
        "libraries). Target: within 1.5× the weight bytes.",
        "",
        "| model | tool | task | weight MB | wall s | peak MB | peak − start, ÷ weight bytes |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]
    if not a.no_write:
        replace_section(ROOT / "docs" / "benchmarks.md", "Caffe -> ONNX", lines)


if __name__ == "__main__":
    main()
