"""Large models: weights stream from the memory-mapped source to the target one tensor at a time (peak memory
about the largest tensor, not the model), and code folders shard their weights as transformers does."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorbridge as tb
from tensorbridge.codegen import folder
from tests.models import synthetic_llm

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(vocab=300, hidden=64, intermediate=96, layers=2, heads=4, kv_heads=2)
#: 500 MB of float32 weights, the largest tensor (the embedding) 62.5 MB
MEDIUM = dict(vocab=32000, hidden=512, intermediate=1376, layers=32, heads=8, kv_heads=4)
OVERHEAD_MB = 64  # what a conversion holds besides weights: the graph, protobuf messages, generated code

CHILD = r"""
import json, sys
import tensorbridge as tb
import tensorbridge.backends.onnx.exporter, tensorbridge.backends.torch.codegen
def peak():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
src, dst, to = sys.argv[1:4]
base = peak()
tb.save(tb.load(src), dst, to=to)
print(json.dumps({"base": base, "peak": peak()}))
"""


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_sharded_code_folders_load_their_shards(dtype, tmp_path, monkeypatch):
    src = synthetic_llm.write(TINY, tmp_path / "source" / "model.onnx", dtype)
    graph = tb.load(src)
    assert {v.const.dtype.name for v in graph.constants.values() if v.learned} == {dtype}
    monkeypatch.setattr(folder, "SHARD_BYTES", 60_000)
    for target in ("torch", "flax"):
        dest = tb.save(graph, tmp_path / target, to=target)
        shards = sorted(p.name for p in dest.glob("*.safetensors"))
        assert len(shards) > 2 and all(re.fullmatch(rf"model-\d{{5}}-of-{len(shards):05d}\.safetensors", s)
                                       for s in shards), shards
        index = json.loads((dest / folder.SHARDS_INDEX).read_text())
        assert sorted(set(index["weight_map"].values())) == shards
        assert index["metadata"]["total_size"] == sum(a.nbytes for a in _shard_tensors(dest))
        if dtype == "float32":  # onnxruntime has no bfloat16 MatMul to run the source with
            report = tb.verify(src, dest)
            assert report.ok, report.summary()


def _shard_tensors(dest):
    from safetensors.numpy import load_file

    return [a for p in dest.glob("*.safetensors") for a in load_file(str(p)).values()]


def _convert_in_child(src: Path, dst: Path, to: str) -> float:
    p = subprocess.run([sys.executable, "-c", CHILD, str(src), str(dst), to], capture_output=True, text=True,
                       cwd=ROOT, check=True)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["peak"] - out["base"]


@pytest.mark.parametrize("target", ["onnx", "torch"])
def test_conversion_holds_about_one_tensor_not_the_model(target, tmp_path):
    src = synthetic_llm.write(MEDIUM, tmp_path / "source" / "model.onnx")
    weights_mb = sum(int(np.prod(s)) for _, s in synthetic_llm.weight_shapes(MEDIUM)) * 4 / 2 ** 20
    largest_mb = max(int(np.prod(s)) for _, s in synthetic_llm.weight_shapes(MEDIUM)) * 4 / 2 ** 20
    bound = 1.5 * largest_mb + OVERHEAD_MB
    assert weights_mb > 2 * bound, "the model must be larger than the bound, or the test proves nothing"
    added = _convert_in_child(src, tmp_path / ("model.onnx" if target == "onnx" else "model_torch"), target)
    assert added <= bound, f"{target}: the conversion added {added:.0f} MB; the bound is {bound:.0f} MB " \
                           f"(weights {weights_mb:.0f} MB, largest tensor {largest_mb:.0f} MB)"


def test_strided_views_are_written_in_c_order():
    """Transposed weights (a Linear's [in, out] -> [out, in]) are written from the view in tiles, never whole."""
    import io

    import ml_dtypes

    from tensorbridge.formats.streaming import write_array

    rng = np.random.default_rng(0)
    for arr in (rng.standard_normal((300, 700)).astype(np.float32).T, rng.standard_normal((5, 7, 9)).transpose(2, 0, 1),
                rng.standard_normal(1000)[::3], rng.standard_normal((600, 513)).astype(ml_dtypes.bfloat16).T,
                np.zeros((0, 4)).T):
        f = io.BytesIO()
        write_array(f, arr)
        assert f.getvalue() == np.ascontiguousarray(arr).tobytes(), arr.shape
