"""`tensorbridge batch`: a zoo converted on a local process pool and on a real Ray cluster (a head node started
here), resumed, with a worker killed mid-run, and reported as JSON and HTML."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

ONNX_TARGETS = "onnx,torch,tbir"


def _model(path: Path, seed: int) -> None:
    """A small CNN or MLP (which one and its sizes vary with the seed), seeded weights, as an ONNX file."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    c, k = 2 + seed % 3, 3 + 2 * (seed % 2)
    w = numpy_helper.from_array(rng.standard_normal((4, c, k, k)).astype(np.float32), "conv.w")
    fc = numpy_helper.from_array(rng.standard_normal((4, 3 + seed % 5)).astype(np.float32), "fc.w")
    nodes = [helper.make_node("Conv", ["x", "conv.w"], ["a"], pads=[k // 2] * 4),
             helper.make_node(["Relu", "Tanh", "Sigmoid"][seed % 3], ["a"], ["b"]),
             helper.make_node("GlobalAveragePool", ["b"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("MatMul", ["f", "fc.w"], ["y"])]
    graph = helper.make_graph(nodes, f"m{seed}", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                              [1, c, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3 + seed % 5])], [w, fc])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())


def _zoo(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        _model(folder / f"m{i:02d}.onnx", i)
    (folder / "broken.onnx").write_bytes(b"not a model")
    manifest = folder / "zoo.yaml"
    manifest.write_text(f"defaults: {{targets: [{ONNX_TARGETS}], timeout: 300}}\nmodels:\n  - '*.onnx'\n"
                        "  - source: m00.onnx\n    targets: [darknet]\n")
    return manifest


def _batch(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "tensorbridge", "batch", *map(str, args)], capture_output=True,
                          text=True, **kwargs)


def _statuses(outdir: Path) -> dict:
    return {(Path(r["source"]).name, r["target"]): (r["status"], r["key"])
            for r in json.loads((outdir / "summary.json").read_text())}


def test_a_zoo_runs_on_the_local_pool_and_resumes(tmp_path):
    manifest = _zoo(tmp_path / "zoo", 3)
    done = _batch(manifest, "-o", tmp_path / "out")
    assert done.returncode == 1, done.stderr  # not everything passes: a broken file, a refused target
    got = _statuses(tmp_path / "out")
    assert len(got) == 4 * 3 + 1
    assert {got[(f"m0{i}.onnx", t)][0] for i in range(3) for t in ONNX_TARGETS.split(",")} == {"pass"}
    assert {got[("broken.onnx", t)][0] for t in ONNX_TARGETS.split(",")} == {"refused"}
    assert got[("m00.onnx", "darknet")][0] == "refused"  # a classifier of vectors: no Darknet layers for it
    records = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert all(r["seconds"] > 0 and r["reason"] for r in records if r["status"] != "pass")
    assert all(r["max_rel_error"] is not None and r["max_rel_error"] < 1e-5 for r in records if r["status"] == "pass")
    assert (tmp_path / "out" / records[0]["log"]).is_file()
    page = (tmp_path / "out" / "summary.html").read_text()
    assert "broken.onnx" in page and "refused" in page and page.count("<tr>") == 1 + 4
    again = _batch(manifest, "-o", tmp_path / "out")  # resumed: nothing is redone
    assert "13 of 13 jobs already done" in again.stderr and _statuses(tmp_path / "out") == got
    _model(tmp_path / "zoo" / "m01.onnx", 7)  # a changed source is converted again
    again = _batch(manifest, "-o", tmp_path / "out")
    assert "10 of 13 jobs already done" in again.stderr


def test_jobs_keep_their_temporary_files_to_themselves(tmp_path):
    """TensorFlow leaves files in the temporary folder, and a killed job leaves its own: each job gets a scratch
    folder of its own, removed however the job ends."""
    _model(tmp_path / "m.onnx", 0)
    (tmp_path / "m.yaml").write_text("models: [m.onnx, {source: m.onnx, targets: [keras], timeout: 1}]\n")
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    done = _batch(tmp_path / "m.yaml", "-o", tmp_path / "out", "--to", "tflite",
                  env={**os.environ, "TMPDIR": str(system_tmp)})
    statuses = {status for status, _ in _statuses(tmp_path / "out").values()}
    assert done.returncode == 1 and statuses == {"pass", "timeout"}, done.stderr
    assert not list(system_tmp.iterdir()) and not list((tmp_path / "out" / "jobs").glob("*.tmp"))


def test_bad_manifests_are_refused_with_every_problem(tmp_path):
    (tmp_path / "m.yaml").write_text("models:\n  - source: nothing*.onnx\n  - source: x.onnx\n    colour: red\n")
    done = _batch(tmp_path / "m.yaml", "-o", tmp_path / "out", "--to", "onnx")
    assert done.returncode == 2 and "nothing*.onnx matches no file" in done.stderr and "colour" in done.stderr
    done = _batch(tmp_path / "m.yaml", "-o", tmp_path / "out", "--to", "onnx,sparkle")
    assert done.returncode == 2 and "sparkle" in done.stderr


@pytest.fixture
def ray_head():
    if shutil.which("ray", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("Ray is not installed (pip install 'tensorbridge[ray]')")
    ray = str(Path(sys.executable).parent / "ray")
    port = 6400 + os.getpid() % 500
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    temp = tempfile.mkdtemp(prefix="tbray", dir="/tmp")  # Ray's socket paths must stay under 108 bytes
    started = subprocess.run([ray, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                              f"--temp-dir={temp}"], capture_output=True, text=True, env=env)
    assert started.returncode == 0, started.stderr
    yield f"127.0.0.1:{port}"
    subprocess.run([ray, "stop", "--force"], capture_output=True, env=env)
    shutil.rmtree(temp, ignore_errors=True)


def _kill_a_busy_worker(outdir: Path, after: int) -> list[int]:
    """SIGKILL one Ray worker process while it runs a job, once `after` jobs have finished."""
    results = outdir / "results"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if results.is_dir() and len(list(results.glob("*.json"))) >= after:
            for proc in Path("/proc").iterdir():
                try:
                    title = (proc / "cmdline").read_bytes().split(b"\0")[0]
                except OSError:
                    continue
                if proc.name.isdigit() and title.startswith(b"ray::execute"):
                    os.kill(int(proc.name), signal.SIGKILL)
                    return [int(proc.name)]
        time.sleep(0.1)
    return []


@pytest.mark.parametrize("count", [4, pytest.param(30, marks=pytest.mark.slow)])
def test_a_ray_worker_killed_mid_run_still_gives_the_whole_report(tmp_path, ray_head, count):
    manifest = _zoo(tmp_path / "zoo", count)
    killed = []
    killer = threading.Thread(target=lambda: killed.extend(_kill_a_busy_worker(tmp_path / "ray_out", 2)))
    killer.start()
    done = _batch(manifest, "-o", tmp_path / "ray_out", "--ray", ray_head)
    killer.join()
    assert killed, "no Ray worker was running a job to kill"
    assert done.returncode == 1, done.stderr
    on_ray = _statuses(tmp_path / "ray_out")
    assert len(on_ray) == (count + 1) * 3 + 1
    assert len(list((tmp_path / "ray_out" / "results").glob("*.json"))) == len(on_ray)  # each job recorded once
    local = _batch(manifest, "-o", tmp_path / "local_out")
    assert local.returncode == 1
    assert _statuses(tmp_path / "local_out") == on_ray
