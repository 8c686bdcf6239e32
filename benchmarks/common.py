"""Helpers shared by the benchmark scripts: the PyTorch models, peak memory, latency, medians, report sections."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

#: the PyTorch models the torch benchmarks run: tests/models/torch_zoo.py builders and their arguments
TORCH_MODELS = {
    "resnet18": {"size": 224, "batch": 1, "num_classes": 1000},
    "resnet50": {"size": 224, "batch": 1, "num_classes": 1000},
    "mobilenet_v2": {"size": 224, "batch": 1, "num_classes": 1000},
    "bert": {"batch": 1, "seq": 64},
    "gpt2": {"batch": 1, "seq": 64},
}


def torch_model(name: str):
    """(module, example inputs, ...) of one of TORCH_MODELS, seeded; the repository root must be on sys.path."""
    from tests.models.torch_zoo import ZOO

    return ZOO[name](**TORCH_MODELS[name])


def peak_mb() -> float:
    """This process's peak resident memory. VmHWM, not ru_maxrss: Linux carries ru_maxrss over
    from the parent across fork + exec, so a child would report its parent's peak."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def latency_ms(fn, runs: int = 20) -> float:
    """Median wall time of `fn()` over `runs` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def median(results: list[dict], key: str):
    vals = [r[key] for r in results if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(value, places: int = 2) -> str:
    return "–" if value is None else f"{value:.{places}f}"


def replace_section(path: Path, title: str, lines: list[str]) -> None:
    """Write `lines` as the section `## title` of the report, replacing an older one."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    marker = f"\n## {title}\n"
    if marker in text:
        start = text.index(marker)
        nxt = text.find("\n## ", start + len(marker))
        text = text[:start] + (text[nxt:] if nxt >= 0 else "")
    path.write_text(text.rstrip("\n") + "\n\n" + f"## {title}\n" + "\n".join(lines) + "\n")
