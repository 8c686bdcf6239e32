"""Generated code against hand-written code: latency of the model tensorbridge writes next to the original.

    python benchmarks/codegen_bench.py            # appends its section to docs/benchmarks.md
    python benchmarks/codegen_bench.py --runs 30

- PyTorch: the hand-written modules of tests/models/torch_zoo.py (ResNet-18, ResNet-50, MobileNetV2, and
  BERT and GPT-2 built by transformers from small configs) read by tensorbridge and written back as PyTorch
  code (`--to torch`); both run eager, in eval mode, under no_grad.
- Keras: keras.applications models (seeded weights) written back as Keras code (`--to keras`); both called
  on the same input, in inference mode.

The two are timed interleaved in one process (A, B, A, B ...), so load on the machine hits both alike, at 1
and at 2 threads; each figure is the median of the calls, after warm-up calls. The ratio is generated over
hand-written: at most 1.0 is the target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from common import TORCH_MODELS, replace_section, torch_model  # noqa: E402

KERAS_MODELS = {"MobileNetV2": (224, 224, 3), "ResNet50": (224, 224, 3)}


def interleaved(a, b, runs: int, warmup: int = 3) -> tuple[float, float, float]:
    """Median wall time (ms) of a() and b(), called alternately, and the median of the per-pair ratios b/a (each
    pair runs back to back, so a slow spell of the machine affects both sides of a ratio alike)."""
    for _ in range(warmup):
        a()
        b()
    ta, tb = [], []
    for _ in range(runs):
        for fn, out in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    ratio = statistics.median(y / x for x, y in zip(ta, tb))
    return statistics.median(ta) * 1000, statistics.median(tb) * 1000, ratio


def torch_rows(runs: int, tmp: Path) -> list[str]:
    import torch

    import tensorbridge as tb
    from tensorbridge.codegen.folder import load_folder
    rows = []
    for name in TORCH_MODELS:
        module, args, _ = torch_model(name)
        module.eval()
        graph = tb.load(module, example_inputs=args)
        folder = tb.save(graph, tmp / f"{name}_torch", to="torch")
        generated = load_folder(folder).load_model()
        for threads in (1, 2):
            torch.set_num_threads(threads)
            with torch.no_grad():
                hand, gen, ratio = interleaved(lambda m=module, a=args: m(*a), lambda m=generated, a=args: m(*a),
                                               runs)
            rows.append(f"| {name} | PyTorch | {threads} | {hand:.2f} | {gen:.2f} | {ratio:.2f} |")
            print(rows[-1], flush=True)
    return rows


def keras_rows(runs: int, tmp: Path) -> list[str]:
    import keras
    import numpy as np
    import tensorflow as tf

    import tensorbridge as tb
    from tensorbridge.codegen.folder import load_folder
    from tests.models.keras_zoo import calibrate_batch_norms

    rows = []
    for name, shape in KERAS_MODELS.items():
        keras.utils.set_random_seed(0)
        model = getattr(keras.applications, name)(weights=None, classifier_activation=None, input_shape=shape)
        calibrate_batch_norms(model, shape)
        src = tmp / f"{name}.keras"
        model.save(src)
        folder = tb.save(tb.load(src), tmp / f"{name}_keras", to="keras")
        generated = load_folder(folder).load_model()
        x = tf.constant(np.random.default_rng(0).standard_normal((1, *shape)).astype(np.float32))
        threads = os.environ.get("TB_BENCH_THREADS", "2")
        hand, gen, ratio = interleaved(
            lambda m=model, v=x: m(v, training=False), lambda m=generated, v=x: m(v, training=False), runs
        )
        rows.append(f"| {name} | Keras | {threads} | {hand:.2f} | {gen:.2f} | {ratio:.2f} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    import platform

    import tensorflow as tf
    import torch

    import tensorbridge

    with tempfile.TemporaryDirectory() as tmp:
        rows = torch_rows(a.runs, Path(tmp)) + keras_rows(a.runs, Path(tmp))
    lines = [
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python benchmarks/codegen_bench.py` (part of `make bench`) on "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, tensorbridge "
        f"{tensorbridge.__version__}, torch {torch.__version__}, TensorFlow {tf.__version__}. The model "
        "tensorbridge generates from a hand-written one, timed interleaved with it in one process: median of "
        f"{a.runs} calls each after warm-up, and the ratio as the median of the {a.runs} back-to-back pairs' "
        "ratios. PyTorch models at batch 1 (images 224x224, BERT and GPT-2 "
        "with 64 tokens, from small transformers configs); Keras applications at 1x224x224x3 (the Keras "
        "figures use TensorFlow's own thread pools: 2 cores).",
        "",
        "| model | framework | threads | hand-written ms | generated ms | generated / hand-written |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    if not a.no_write:
        replace_section(ROOT / "docs" / "benchmarks.md", "Generated code against hand-written code", lines)


if __name__ == "__main__":
    main()
