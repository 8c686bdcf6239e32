"""Speed and memory of ONNX -> IR -> ONNX, side by side with plain `onnx` in the same run.

    python benchmarks/run.py            # writes docs/benchmarks.md
    python benchmarks/run.py --runs 5

Cases: the `light` ResNet-50 shipped in the onnx wheel (its weights are ConstantOfShape
nodes, so it is tiny), the same network with real seeded weights (~100 MB), and a synthetic
model with 1 GB of weights. Each measurement runs in a fresh process; wall time and peak
resident memory (VmHWM, which includes memory-mapped file pages the process touched)
are the medians of several runs. The comparison is `onnx.load` + `onnx.save` of the same
file, the round trip every ONNX-based converter performs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PEAK = r"""
import sys
sys.path.insert(0, "benchmarks")
from common import peak_mb
"""

CHILD = PEAK + r"""
import json, sys, time
mode, src, dst = sys.argv[1:4]
t = time.perf_counter()
if mode == "tensorbridge":
    import tensorbridge as tb
    tb.save(tb.load(src), dst)
else:
    import onnx
    m = onnx.load(src)
    onnx.save(m, dst)
wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "peak_mb": peak_mb()}))
"""

BASELINE = PEAK + r"""
import json
import onnx, numpy, tensorbridge, tensorbridge.frontends.onnx.importer, tensorbridge.backends.onnx.exporter
print(json.dumps({"peak_mb": peak_mb()}))
"""


def measure(mode: str, src: Path, dst: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(src), str(dst)], capture_output=True,
                         text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def synthetic_model(path: Path, total_bytes: int) -> None:
    """A chain of MatMul + Relu layers whose float32 weights add up to `total_bytes`."""
    from tensorbridge.backends.onnx.exporter import export
    from tensorbridge.ir.graph import Graph
    from tensorbridge.passes.infer_shapes import infer_shapes

    n = 4096
    layers = max(1, total_bytes // (n * n * 4))
    g = Graph("synthetic_1gb")
    x = g.add_input("x", "float32", (1, n))
    rng = np.random.default_rng(0)
    for i in range(layers):
        w = g.add_constant(f"layer{i}.weight", rng.standard_normal((n, n), dtype=np.float32) / np.float32(np.sqrt(n)))
        x = g.op("Relu", g.op("MatMul", x, w, name=f"layer{i}.matmul"), name=f"layer{i}.relu")
    g.outputs.append(x)
    infer_shapes(g)
    export(g, path)


def light_resnet(path: Path, random_weights: bool) -> None:
    import onnx

    from tests.conftest import LIGHT_DIR
    from tests.frontends.test_onnx_light_models import randomize_weights

    model = onnx.load(os.path.join(LIGHT_DIR, "light_resnet50.onnx"))
    onnx.save(randomize_weights(model) if random_weights else model, path)


def weight_bytes(path: Path) -> int:
    from tensorbridge.formats.onnx_proto import read_model

    return sum(int(a.nbytes) for a in read_model(path).weights.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tb-bench-") as tmp:
        work = Path(tmp)
        cases = [("light ResNet-50 (shipped, ConstantOfShape weights)", work / "r50_light.onnx",
                  lambda p: light_resnet(p, False)),
                 ("ResNet-50 with seeded real weights", work / "r50_weights.onnx", lambda p: light_resnet(p, True)),
                 ("synthetic, 1 GB of weights", work / "synthetic_1gb.onnx", lambda p: synthetic_model(p, 1 << 30))]
        base = json.loads(subprocess.run([sys.executable, "-c", BASELINE], capture_output=True, text=True,
                                         check=True, cwd=ROOT).stdout)["peak_mb"]
        rows = []
        for title, path, make in cases:
            print(f"building {title} ...", file=sys.stderr)
            make(path)
            wb = weight_bytes(path) / 2**20
            size = path.stat().st_size / 2**20
            for mode in ("tensorbridge", "onnx"):
                runs = [measure(mode, path, work / f"out_{mode}.onnx") for _ in range(args.runs)]
                wall = statistics.median(r["wall"] for r in runs)
                peak = statistics.median(r["peak_mb"] for r in runs)
                rows.append((title, mode, size, wb, wall, peak))
                print(f"  {mode:<13} {wall:7.2f} s  {peak:8.0f} MB", file=sys.stderr)
            path.unlink()
        write_report(Path(args.out), rows, base, args.runs)


def write_report(path: Path, rows, base_mb: float, runs: int) -> None:
    import onnx
    import onnxruntime

    import tensorbridge

    lines = ["# Benchmarks", "",
             f"Measured {datetime.date.today().isoformat()} by `make bench` (`python benchmarks/run.py`) on "
             f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"tensorbridge {tensorbridge.__version__}, onnx {onnx.__version__}, onnxruntime "
             f"{onnxruntime.__version__}, numpy {np.__version__}. Median of {runs} runs, each in a fresh process.",
             "", "## ONNX -> IR -> ONNX", "",
             "`tensorbridge` = `tb.save(tb.load(src), dst)` (import into the IR, export back). `onnx` = "
             "`onnx.save(onnx.load(src), dst)`, the plain protobuf round trip any ONNX-based converter "
             "starts from, measured in the same run. Peak memory is the process's peak resident set "
             f"(VmHWM), including the interpreter and libraries (importing them alone takes {base_mb:.0f} MB) "
             "and the pages of memory-mapped weight files that were touched.", "",
             "| model | tool | file MB | weight MB | wall s | peak MB | peak − imports, ÷ weight bytes |",
             "|---|---|---|---|---|---|---|"]
    for title, mode, size, wb, wall, peak in rows:
        ratio = f"{(peak - base_mb) / wb:.2f}×" if wb > 50 else "–"
        lines.append(f"| {title} | {mode} | {size:.1f} | {wb:.1f} | {wall:.2f} | {peak:.0f} | {ratio} |")
    lines += ["", "The target for large models is peak memory within 1.5× the weight bytes: weights are "
              "memory-mapped on import and streamed from the mapping on export, never copied.", ""]
    path.write_text("\n".join(lines))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
