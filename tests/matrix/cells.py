"""One source model through every target: convert, run the result in the target's own runtime, compare with the
source's own runtime on the same seeded input.

A cell is one of:
- pass: every output within RTOL of the source runtime's (max|d|/max|y|), or within NOISE of it and either no
  farther from the float64 truth (the source model run in float64: a PyTorch module made double, a Keras model
  rebuilt with float64 dtypes; else the IR run in float64 by the reference interpreter) than the source runtime
  is, x2, or the written model, read back and run in float64, within EXACT of that truth or no farther from it
  than the source runtime (deep networks amplify float32 rounding differently in each runtime); and the
  source's outputs vary with the input (a second input gives different outputs), so the comparison means
  something;
- inconclusive: the source's outputs do not vary, or the source runtime is itself farther than NOISE from the
  float64 truth (random weights that make activations explode: every float32 run is rounding noise);
- refused: tensorbridge listed blockers and wrote nothing (the reasons are recorded);
- wrong: the converted model runs and computes something else, or its outputs do not match in number or shape;
- error: a clean error other than a refusal (the target runtime rejected the file, ...);
- crash: an exception that is not tensorbridge's own: an internal error.

    python -m tests.matrix.cells timm_resnet18 --targets onnx,torch   # prints the cells as JSON
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

TARGETS = ("onnx", "torch", "pt2", "keras", "tflite", "flax")
RTOL = 1e-4  # max|d|/max|y|; float32 runtimes of deep networks differ by ~5e-5 among themselves
NOISE = 1e-2  # beyond RTOL and up to this, the float64 truth decides
EXACT = 1e-9  # the written model run in float64 this close to the source's float64 result computes its function
_DEST = {"onnx": "model.onnx", "torch": "model_torch", "pt2": "model.pt2", "keras": "model_keras",
         "tflite": "model.tflite", "flax": "model_flax"}


def source_outputs(model, feeds: list[np.ndarray]) -> list[np.ndarray]:
    """The source model's outputs in its own runtime."""
    if isinstance(model, (str, os.PathLike)) and str(model).endswith(".keras"):
        import keras

        loaded = keras.models.load_model(str(model), compile=False)
        out = loaded(feeds if len(feeds) > 1 else feeds[0], training=False)
        return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    if isinstance(model, (str, os.PathLike)):  # a file another writer made: run by its own runtime
        from tensorbridge.trust import trusting
        from tensorbridge.verification.harness import runner_for

        with trusting():  # the matrix's own TorchScript archives
            runner = runner_for(str(model))
        out = runner.run({name: f for (name, _, _), f in zip(runner.inputs, feeds)})
        return [np.asarray(out[n]) for n in runner.outputs]
    import torch

    with torch.no_grad():
        out = model(*[torch.from_numpy(f) for f in feeds])
    return [o.detach().numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def source_float64(model, feeds: list[np.ndarray]) -> list[np.ndarray] | None:
    """The source model's own outputs in float64 (a copy of a PyTorch module or a Keras model run in double
    precision), or None where the source cannot run so. The truth a comparison falls back on: the IR's float64
    result is only a second choice, since an IR that misreads the source would be judged by itself."""
    if isinstance(model, (str, os.PathLike)) and str(model).endswith(".keras"):
        return _keras_float64(model, feeds)
    try:
        import torch
    except ImportError:
        return None
    if not isinstance(model, torch.nn.Module):
        return None
    try:
        double = copy.deepcopy(model).double()
        with torch.no_grad():
            out = double(*[torch.from_numpy(f.astype(np.float64) if f.dtype.kind == "f" else f) for f in feeds])
    except Exception:  # noqa: BLE001 - a module that does not run in float64 (a hard-coded float32 cast)
        return None
    return [o.detach().numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def _widened(config):
    """A Keras config with every float32 dtype (and dtype policy) float64."""
    if isinstance(config, dict):
        if config.get("class_name") == "DTypePolicy" and config.get("config", {}).get("name") == "float32":
            return {**config, "config": {**config["config"], "name": "float64"}}
        return {k: "float64" if k in ("dtype", "compute_dtype") and v == "float32" else _widened(v)
                for k, v in config.items()}
    return [_widened(v) for v in config] if isinstance(config, list) else config


def _keras_float64(path, feeds: list[np.ndarray]) -> list[np.ndarray] | None:
    """A Keras model rebuilt from its config with float64 dtypes, its weights widened, run on the feeds; None when
    it does not rebuild or gives other than float64 (a layer that casts to float32 itself)."""
    import keras

    try:
        model = keras.models.load_model(str(path), compile=False)
        double = keras.saving.deserialize_keras_object(_widened(keras.saving.serialize_keras_object(model)))
        double.set_weights([w.astype(np.float64) if w.dtype == np.float32 else w for w in model.get_weights()])
        wide = [f.astype(np.float64) if f.dtype == np.float32 else f for f in feeds]
        out = double(wide if len(wide) > 1 else wide[0], training=False)
    except Exception:  # noqa: BLE001 - a model whose layers do not rebuild in float64
        return None
    out = [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
    return out if all(o.dtype == np.float64 for o in out) else None


def second_input(feeds: list[np.ndarray]) -> list[np.ndarray]:
    """Other inputs of the same kind: float inputs redrawn, integer ids shifted."""
    rng = np.random.default_rng(11)
    out = []
    for f in feeds:
        if f.dtype.kind == "f":
            lo, hi = float(f.min()), float(f.max())
            out.append(rng.uniform(lo, hi, f.shape).astype(f.dtype) if lo >= 0 else
                       rng.standard_normal(f.shape).astype(f.dtype))
        else:
            out.append(((f + 7) % max(int(f.max()) + 1, 2)).astype(f.dtype))
    return out


def load_graph(model, feeds):
    import tensorbridge as tb

    if isinstance(model, (str, os.PathLike)) and str(model).endswith(".pt"):  # TorchScript records no shapes
        import torch

        names = [a.name for a in torch.jit.load(str(model)).forward.schema.arguments[1:]]
        return tb.load(str(model), input_shapes={n: list(f.shape) for n, f in zip(names, feeds)},
                       input_dtypes={n: str(f.dtype) for n, f in zip(names, feeds) if f.dtype != np.float32},
                       trust_code=True)
    if isinstance(model, (str, os.PathLike)) and str(model).endswith(".keras"):  # open dims: the feeds' sizes
        import keras

        inputs = keras.models.load_model(str(model), compile=False).inputs
        if any(None in t.shape[1:] for t in inputs):  # (every input named in these sources)
            return tb.load(str(model), input_shapes={t.name: list(f.shape) for t, f in zip(inputs, feeds)})
    if isinstance(model, (str, os.PathLike)):
        return tb.load(str(model))
    import torch

    return tb.load(model, example_inputs=tuple(torch.from_numpy(f) for f in feeds))


def run_cell(graph, target: str, feeds: list[np.ndarray], expected: list[np.ndarray], workdir: Path,
             truth=None) -> dict:
    """One target's cell; `truth()` gives the float64 outputs when a comparison needs them."""
    import tensorbridge as tb
    from tensorbridge.errors import ModelError, UnsupportedError
    from tensorbridge.verification.harness import runner_for

    dest = workdir / target / _DEST[target]
    dest.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        tb.save(graph, dest, to=target)
        runner = runner_for(str(dest))
        out = runner.run({name: f for (name, _, _), f in zip(runner.inputs, feeds)})
        got = [np.asarray(out[n]) for n in runner.outputs]
    except UnsupportedError as e:
        reasons = sorted({f"{b.op}: {b.detail}" if b.detail else b.op for b in e.blockers})
        return {"status": "refused", "detail": "; ".join(reasons)[:400]}
    except ModelError as e:
        return {"status": "error", "detail": str(e).splitlines()[0][:400] if str(e) else type(e).__name__}
    except Exception as e:  # noqa: BLE001 - anything else is an internal error, recorded with where it happened
        where = traceback.extract_tb(e.__traceback__)[-1]
        return {"status": "crash", "detail": f"{type(e).__name__}: {str(e)[:300]} ({Path(where.filename).name}:"
                                             f"{where.lineno})"}
    seconds = round(time.perf_counter() - start, 1)
    if len(got) != len(expected):
        return {"status": "wrong", "detail": f"{len(got)} outputs, the source has {len(expected)}"}
    worst = 0.0
    for i, (y, z) in enumerate(zip(expected, got)):
        if tuple(y.shape) != tuple(z.shape):
            return {"status": "wrong", "detail": f"output {i}: shape {list(z.shape)}, the source's {list(y.shape)}"}
        y64, z64 = y.astype(np.float64), z.astype(np.float64)
        scale = float(np.abs(y64).max()) or 1.0
        worst = max(worst, float(np.abs(z64 - y64).max()) / scale)
    cell = {"status": "pass" if worst <= RTOL else "wrong", "rel": worst, "seconds": seconds}
    if worst > RTOL and truth is not None:
        exact = truth()
        source = max(_rel(y, t) for y, t in zip(expected, exact))
        target_error = max(_rel(z, t) for z, t in zip(got, exact))
        cell["truth"] = {"source": source, "target": target_error}
        if source > NOISE:  # the source's own float32 run is not its function: nothing can be compared with it
            cell.update(status="inconclusive", detail=f"the source runtime is itself {source:.1e} from the model's "
                        "float64 result (this model amplifies rounding), so no comparison with it proves anything")
        elif worst <= NOISE and target_error <= 2 * max(source, 1e-6):
            cell["status"] = "pass"
        elif worst <= NOISE:
            written = _written_exactness(dest, feeds, exact)
            cell["truth"]["written_float64"] = written
            if written is not None and written <= max(source, EXACT):
                cell["status"] = "pass"
    return cell


def _written_exactness(dest: Path, feeds, exact) -> float | None:
    """How far the written model, read back and run in float64, is from the source's float64 result. Within
    EXACT (or no farther than the source runtime is: weights folded in float32 round too), the written model
    computes the source's function, and the target runtime's distance is its own float32 rounding in a model
    that amplifies rounding. None where the written model cannot be read back."""
    import tensorbridge as tb
    from tests.models.faithful import float64_truth

    try:
        from tensorbridge.codegen.folder import read_signature

        names = [i["name"] for i in read_signature(dest)["inputs"]] if dest.is_dir() else []
        back = tb.load(str(dest), trust_code=True, input_shapes={n: f.shape for n, f in zip(names, feeds)})
        out = float64_truth(back, dict(zip([v.name for v in back.inputs], feeds)))
    except Exception:  # noqa: BLE001 - no second opinion: the measured verdict stands
        return None
    return max(_rel(out[v.name].reshape(np.shape(t)), t) for v, t in zip(back.outputs, exact))


def _rel(a, exact) -> float:
    exact = np.asarray(exact, np.float64)
    return float(np.abs(np.asarray(a, np.float64) - exact).max() / (np.abs(exact).max() or 1.0))


def run_source(name: str, targets=TARGETS) -> dict:
    """{"targets": {target: cell}, "note": ...} for one source."""
    from tests.matrix.sources import all_sources

    source = next(s for s in all_sources() if s.name == name)
    with tempfile.TemporaryDirectory(prefix="tb-matrix-") as tmp:
        workdir = Path(tmp)
        model, feeds = source.build(workdir)
        expected = source_outputs(model, feeds)
        other = source_outputs(model, second_input(feeds))
        varies = any(not np.allclose(a, b, rtol=1e-6, atol=0) for a, b in zip(expected, other))
        result = {"family": source.family, "targets": {}}
        if not varies:
            result["note"] = "the source's outputs do not vary with the input: comparisons would prove nothing"
        try:
            graph = load_graph(model, feeds)
        except Exception as e:  # noqa: BLE001
            cell = run_failure(e)
            result["targets"] = {t: dict(cell) for t in targets}
            return result
        exact = {}

        def truth():
            if "outputs" not in exact:
                from tests.models.faithful import float64_truth

                exact["outputs"] = source_float64(model, feeds)
                if exact["outputs"] is None:
                    out = float64_truth(graph, dict(zip([v.name for v in graph.inputs], feeds)))
                    exact["outputs"] = [out[v.name] for v in graph.outputs]
            return exact["outputs"]

        for target in targets:
            cell = run_cell(graph, target, feeds, expected, workdir, truth)
            if cell["status"] == "pass" and not varies:
                cell = {"status": "inconclusive", "detail": result["note"]}
            result["targets"][target] = cell
    return result


def run_failure(e: Exception) -> dict:
    """The cell every target gets when the source itself cannot be read."""
    from tensorbridge.errors import ModelError, UnsupportedError

    if isinstance(e, UnsupportedError):
        reasons = sorted({f"{b.op}: {b.detail}" if b.detail else b.op for b in e.blockers})
        return {"status": "refused", "detail": "import: " + "; ".join(reasons)[:400]}
    if isinstance(e, ModelError):
        return {"status": "error", "detail": "import: " + str(e).splitlines()[0][:400]}
    where = traceback.extract_tb(e.__traceback__)[-1]
    return {"status": "crash", "detail": f"import: {type(e).__name__}: {str(e)[:300]} "
                                         f"({Path(where.filename).name}:{where.lineno})"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--targets", default=",".join(TARGETS))
    a = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    warnings.simplefilter("ignore")
    import logging

    logging.disable(logging.WARNING)
    result = run_source(a.source, a.targets.split(","))
    sys.stdout.write("\nRESULT " + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
