"""`tensorbridge batch` on the local process pool and on a Ray cluster, same zoo, same run.

    python benchmarks/batch_bench.py            # replaces its section of docs/benchmarks.md
    python benchmarks/batch_bench.py --runs 1

The zoo is tests/batch/test_batch.py's: 30 small seeded ONNX models and a broken file, each to ONNX, PyTorch code
and .tbir with verification (94 jobs with the Darknet one). Local: `--workers 2`. Ray: a head node started here
with 2 CPUs (`ray start --head`), the same machine. Each run starts from an empty output folder; wall time of the
whole command, median of `--runs`.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
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

RAY = Path(sys.executable).parent / "ray"


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tensorbridge", "batch", *args, "-q"], capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    import ray

    import tensorbridge
    from tests.batch.test_batch import _zoo

    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    with tempfile.TemporaryDirectory(prefix="tbb", dir="/tmp") as tmp:
        manifest = _zoo(Path(tmp) / "zoo", 30)
        subprocess.run([str(RAY), "start", "--head", "--port=6479", "--num-cpus=2", "--include-dashboard=false",
                        f"--temp-dir={tmp}/ray"], check=True, capture_output=True, env=env)
        try:
            walls = {"local pool (2 workers)": [], "Ray (head node, 2 CPUs)": []}
            for run in range(a.runs):
                for mode, extra in zip(walls, (["--workers", "2"], ["--ray", "127.0.0.1:6479"])):
                    out = Path(tmp) / f"out{run}{len(walls[mode])}{mode[:3]}"
                    walls[mode].append(timed([str(manifest), "-o", str(out), *extra]))
                    shutil.rmtree(out)
                    print(mode, f"{walls[mode][-1]:.1f} s", flush=True)
        finally:
            subprocess.run([str(RAY), "stop", "--force"], capture_output=True, env=env)
    rows = [f"| {mode} | 94 | {statistics.median(w):.1f} | {94 / statistics.median(w):.2f} |"
            for mode, w in walls.items()]
    lines = [
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `python benchmarks/batch_bench.py` (part of `make bench`) on "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, tensorbridge "
        f"{tensorbridge.__version__}, Ray {ray.__version__}. The zoo of tests/batch/test_batch.py: 30 seeded ONNX "
        "models and a broken file, each to ONNX, PyTorch code and .tbir, one to Darknet: 94 jobs, each converted "
        "and verified in its own process. Wall time of `tensorbridge batch` from an empty output folder, median "
        f"of {a.runs}; both modes in the same run on the same machine (Ray: a local head node).",
        "",
        "| mode | jobs | wall s | jobs / s |",
        "|---|---|---|---|",
        *rows,
    ]
    if not a.no_write:
        replace_section(ROOT / "docs" / "benchmarks.md", "batch: local pool and Ray", lines)


if __name__ == "__main__":
    main()
