"""Flax NNX code target: conversion of ResNet-50 to Flax, and the generated model against native Flax code.

    python benchmarks/flax_bench.py            # appends its section to docs/benchmarks.md
    python benchmarks/flax_bench.py --runs 50

- Conversion: tests/models/torch_zoo.py's ResNet-50 (seeded weights, 1x3x224x224) read from the nn.Module and
  written as Flax code with `--io-layout target` (channels-last in and out); wall time and peak resident memory
  of a fresh process each time, median of `--conversions` runs.
- Latency: the generated module against benchmarks/flax_resnet.py, the same architecture written natively in
  Flax NNX, both in eval mode under `nnx.jit`, on the same 1x224x224x3 input; timed interleaved in one process
  (A, B, A, B ...), median of the calls after warm-up, and the ratio as the median of the back-to-back pairs'
  ratios. At most 1.0 is the target.
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
from codegen_bench import interleaved  # noqa: E402
from common import peak_mb, replace_section  # noqa: E402

MODEL = {"num_classes": 1000, "batch": 1, "size": 224}


def convert_once(out: Path) -> dict:
    """Run in a fresh process: ResNet-50 -> Flax code; wall seconds and peak MB."""
    import warnings

    import tensorbridge as tb
    from tensorbridge.passes.layout import LayoutOptions
    from tests.models.torch_zoo import resnet50

    warnings.simplefilter("ignore")
    module, args, _ = resnet50(**MODEL)
    start = time.perf_counter()
    tb.save(tb.load(module, example_inputs=args), out, to="flax", layout=LayoutOptions(io_layout="target"))
    return {"wall": time.perf_counter() - start, "peak_mb": peak_mb()}


def conversions(count: int, tmp: Path) -> list[dict]:
    results = []
    for i in range(count):
        out = tmp / f"resnet50_flax_{i}"
        p = subprocess.run([sys.executable, __file__, "--convert-once", str(out)], capture_output=True, text=True,
                           check=True)
        results.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return results


def latency(folder: Path, runs: int) -> tuple[float, float, float]:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx
    from flax_resnet import ResNet50

    from tensorbridge import trust
    from tensorbridge.codegen.folder import load_folder

    with trust.trusting(True):
        generated = load_folder(folder).load_model()
    native = ResNet50(rngs=nnx.Rngs(0))
    native.eval()
    x = jnp.asarray(np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype(np.float32))
    run_native = nnx.jit(lambda m, v: m(v))
    run_generated = nnx.jit(lambda m, v: m(v))
    return interleaved(lambda: jax.block_until_ready(run_native(native, x)),
                       lambda: jax.block_until_ready(run_generated(generated, x)), runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--conversions", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--convert-once", metavar="OUT", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.convert_once:
        print(json.dumps(convert_once(Path(a.convert_once))))
        return
    import flax
    import jax

    import tensorbridge

    with tempfile.TemporaryDirectory() as tmp:
        made = conversions(a.conversions, Path(tmp))
        native, generated, ratio = latency(Path(tmp) / "resnet50_flax_0", a.runs)
    wall = statistics.median(r["wall"] for r in made)
    peak = statistics.median(r["peak_mb"] for r in made)
    rows = [f"| ResNet-50 → Flax | {wall:.2f} s | {peak:.0f} MB | {native:.2f} | {generated:.2f} | {ratio:.2f} |"]
    print(rows[0], flush=True)
    lines = [
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python benchmarks/flax_bench.py` (part of `make bench`) on "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, tensorbridge "
        f"{tensorbridge.__version__}, jax {jax.__version__}, flax {flax.__version__}. Conversion: PyTorch "
        "ResNet-50 (1x3x224x224, seeded weights) read and written as Flax NNX code with `--io-layout target`, "
        f"each in a fresh process, median of {a.conversions}. Latency: the generated module against "
        "benchmarks/flax_resnet.py (the same architecture written natively in Flax NNX), both under `nnx.jit` "
        f"on 1x224x224x3, timed interleaved: median of {a.runs} calls each after warm-up, ratio the median of "
        "the back-to-back pairs' ratios.",
        "",
        "| conversion | wall | peak memory | native Flax ms | generated ms | generated / native |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    if not a.no_write:
        replace_section(ROOT / "docs" / "benchmarks.md", "Flax code against native Flax code", lines)


if __name__ == "__main__":
    main()
