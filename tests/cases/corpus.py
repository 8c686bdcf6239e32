"""Runs the per-op corpus through every framework, both ways; its results are the support matrix's evidence.

For each case of each op (tests/cases/catalogue.py):
- **F out**: the one-op graph written by F's backend and run in F's own runtime (onnxruntime, PyTorch,
  Keras, LiteRT, the reference for .tbir) matches the reference's outputs;
- **F in**: that file read back by F's frontend holds the op (the frontend produces it) and computes
  the same; a SavedModel is made from the Keras code (`model.export`), as TensorFlow users make one, and a
  TorchScript archive from the PyTorch code (`torch.jit.trace` + `torch.jit.save`);
- **pairs** (`--pairs`): every F-in file converted to every G and run in G's runtime.

    python -m tests.cases.corpus                 # print the matrix of results
    python -m tests.cases.corpus --write         # also write tensorbridge/support_evidence.json, docs/support.md
    python -m tests.cases.corpus Conv Dense      # only these ops
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import tempfile
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

OUT = ("onnx", "torch", "pt2", "keras", "tflite", "flax", "darknet", "caffe", "mxnet", "paddle", "coreml", "tbir")
IN = ("onnx", "torch", "pt2", "keras", "tflite", "flax", "savedmodel", "torchscript", "jaxexport", "darknet", "caffe",
      "mxnet", "paddle", "coreml", "tbir")
#: formats read from a file another format's backend wrote: the format -> the one written first
DERIVED = {"savedmodel": "keras", "torchscript": "torch", "jaxexport": "flax"}
#: formats whose reading lowers ops into plain arithmetic (StableHLO): a case passes when the program read
#: computes the expected output, whichever ops it reads as
LOWERED = ("jaxexport",)
FAST = ("onnx", "torch", "tbir")  # what `make test` runs live; the rest is recorded evidence
#: formats tensorbridge reads but does not write, whose "in" evidence comes from models their own framework saved
#: (committed with that framework's outputs): the format -> "module:function" giving {op: [a status per model
#: read that holds the op]}
RECORDED = {"cntk": "tests.cntk.test_cntk:evidence"}
EVIDENCE = Path(__file__).resolve().parents[2] / "tensorbridge" / "support_evidence.json"


def _dest(tmp: Path, fmt: str) -> Path:
    return tmp / {"onnx": "m.onnx", "torch": "m_torch", "pt2": "m.pt2", "keras": "m_keras", "tflite": "m.tflite",
                  "flax": "m_flax", "darknet": "m.cfg", "caffe": "m.prototxt", "mxnet": "m-symbol.json",
                  "paddle": "m.pdmodel", "coreml": "m.mlpackage", "tbir": "m.tbir"}[fmt]


def _why(e: Exception) -> str:
    from tensorbridge.errors import UnsupportedError

    if isinstance(e, UnsupportedError):
        details = sorted({b.detail for b in e.blockers if b.detail}) or sorted({b.op for b in e.blockers})
        return "refused: " + "; ".join(details)[:200]
    message = re.sub(r"/tmp/\S+", "<file>", str(e).splitlines()[0] if str(e) else "")  # stable across runs
    return f"error: {type(e).__name__}: {message[:200]}"


def _matches(expected: list, got: list) -> str:
    from tensorbridge.verification.compare import compare

    if len(got) != len(expected):
        return f"fail: {len(got)} outputs, {len(expected)} expected"
    for i, (e, g) in enumerate(zip(expected, got)):
        r = compare(f"out{i}", f"out{i}", e, np.asarray(g))
        if not r.ok:
            return f"fail: output {i}: {r.problem or f'max|d|/max|y| = {r.robust_rel:.3g}'}"
    return "pass"


def _run_file(path, feeds: dict, expected: list) -> str:
    from tensorbridge.verification.harness import runner_for

    runner = runner_for(str(path))
    names = [n for n, _, _ in runner.inputs]
    named = {n: feeds[n] for n in names} if set(names) == set(feeds) else dict(zip(names, feeds.values()))
    out = runner.run(named)
    return _matches(expected, [out[n] for n in runner.outputs])


def run_out(case, fmt: str, tmp: Path) -> tuple[str, Path | None]:
    import tensorbridge as tb

    dest = _dest(tmp, fmt)
    try:
        tb.save(case.graph, dest, to=fmt)
        return _run_file(dest, case.feeds, case.expected), dest
    except Exception as e:  # noqa: BLE001 - every failure is a result
        return _why(e), None


def run_in(case, fmt: str, path: Path, tmp: Path) -> str:
    import tensorbridge as tb
    from tensorbridge.reference.interpreter import run

    try:
        shapes = dtypes = None
        if fmt == "savedmodel":
            path = _saved_model(path, tmp)
        if fmt == "torchscript":
            path = _torchscript(path, case.feeds, tmp)
            shapes = {n: list(np.shape(a)) for n, a in case.feeds.items()}
            dtypes = {n: str(np.asarray(a).dtype) for n, a in case.feeds.items()}
        if fmt == "jaxexport":
            path = _jax_export(path, case.feeds, tmp)
        # the TorchScript archive was traced here from our own code: its code may run
        graph = tb.load(str(path), format=fmt, input_shapes=shapes, input_dtypes=dtypes,
                        trust_code=fmt == "torchscript")
        if case.op not in graph.op_histogram() and fmt not in LOWERED:
            return f"fail: read back as {', '.join(graph.op_histogram()) or 'no op'}"
        names = [v.name for v in graph.inputs]  # by name where the file keeps the names, else by position
        feeds = case.feeds if set(names) == set(case.feeds) else dict(zip(names, case.feeds.values()))
        out = run(graph, {name: feeds[name] for name in names})
        return _matches(case.expected, [out[v.name] for v in graph.outputs])
    except Exception as e:  # noqa: BLE001
        return _why(e)


def _saved_model(keras_folder: Path, tmp: Path) -> Path:
    import keras

    model = keras.models.load_model(str(keras_folder / "model.keras"), compile=False)
    dest = tmp / "saved_model"
    with contextlib.redirect_stdout(io.StringIO()):
        model.export(str(dest), verbose=False)
    return dest


def _torchscript(torch_folder: Path, feeds: dict, tmp: Path) -> Path:
    import torch

    from tensorbridge.codegen.folder import load_folder

    module = load_folder(torch_folder).load_model()
    args = tuple(torch.from_numpy(np.asarray(a).copy()) for a in feeds.values())
    dest = tmp / "m.ts"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.trace(module, args), str(dest))
    return dest


def _jax_export(flax_folder: Path, feeds: dict, tmp: Path) -> Path:
    """The generated Flax module exported with jax.export (its parameters closed over), serialized."""
    import jax
    from flax import nnx

    from tensorbridge.codegen.folder import load_folder

    graphdef, state = nnx.split(load_folder(flax_folder).load_model())
    specs = [jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in feeds.values()]
    # the parameters closed over, traced: NNX transforms (nnx.RNN's scan) take only traced state
    exported = jax.export.export(jax.jit(lambda *xs: nnx.merge(graphdef, jax.tree.map(jax.lax.stop_gradient,
                                                                                      state))(*xs)))(*specs)
    dest = tmp / "m.jaxexport"
    dest.write_bytes(exported.serialize())
    return dest


def run_pair(case, src: Path, src_fmt: str, dst_fmt: str, tmp: Path) -> str:
    import tensorbridge as tb

    dest = _dest(tmp / f"{src_fmt}_to", dst_fmt)
    dest.parent.mkdir(exist_ok=True)
    try:
        tb.save(tb.load(str(src), format=src_fmt), dest, to=dst_fmt)
        return _run_file(dest, case.feeds, case.expected)
    except Exception as e:  # noqa: BLE001
        return _why(e)


def run_op(op: str, formats=None, pairs: bool = False, limit: int = 3) -> dict:
    """{"cases": [...], "out": {fmt: [result per case]}, "in": {...}, "pairs": {"A->B": [...]}} for one op."""
    from tests.cases.catalogue import cases

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    formats = formats or OUT + tuple(DERIVED)
    result = {"cases": [], "out": {}, "in": {}, "pairs": {}}
    for case in cases(op, limit):
        result["cases"].append(case.name)
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            written = {}
            for fmt in OUT:
                needed_by = [derived for derived, first in DERIVED.items() if first == fmt]
                if fmt not in formats and not set(needed_by) & set(formats):
                    continue
                (tmp / fmt).mkdir()
                status, path = run_out(case, fmt, tmp / fmt)
                if fmt in formats:
                    result["out"].setdefault(fmt, []).append(status)
                if status == "pass":
                    written[fmt] = path
            for fmt in IN:
                if fmt not in formats:
                    continue
                source = written.get(DERIVED.get(fmt, fmt))
                status = run_in(case, fmt, source, tmp) if source is not None else "untested: not written"
                result["in"].setdefault(fmt, []).append(status)
            if pairs:
                for src_fmt, path in written.items():
                    for dst in OUT:
                        if dst != src_fmt and dst in formats:
                            key = f"{src_fmt}->{dst}"
                            result["pairs"].setdefault(key, []).append(run_pair(case, path, src_fmt, dst, tmp))
    return result


def run_all(ops=None, formats=None, pairs: bool = False, workers: int = 2) -> dict:
    from tensorbridge.ops.schema import all_op_names

    ops = sorted(ops or all_op_names())
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(_run_op_quietly, [(op, formats, pairs) for op in ops]))
    return dict(zip(ops, results))


def _run_op_quietly(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return run_op(*args)


def write_gaps(results: dict) -> None:
    """known_gaps.txt: every op a registry claims without a passing case in that column, with the first reason."""
    from tensorbridge import frameworks

    lines = ["# Ops a framework's registry claims to read (in) or write (out) without a passing corpus case, with the",
             "# first case's reason. Strict: tests/cases/test_cases.py fails on a new gap and on a listed gap that",
             "# passes. Regenerated by: python -m tests.cases.corpus --write", ""]
    for fmt in frameworks.FORMATS:
        registry = frameworks.registry(fmt)
        if registry is None:
            continue
        for direction, claimed in (("in", registry.importable() if fmt.loader else set()),
                                   ("out", registry.exportable() if fmt.saver else set())):
            for op in sorted(claimed):
                statuses = results.get(op, {}).get(direction, {}).get(fmt.name, [])
                if not any(s == "pass" for s in statuses):
                    why = next((s for s in statuses if not s.startswith("untested")), statuses[0] if statuses
                               else "no case") if statuses else "no case"
                    lines.append(f"{direction:<4}{fmt.name:<13}{op:<28}{why}")
    Path(__file__).with_name("known_gaps.txt").write_text("\n".join(lines) + "\n")


def write_evidence(results: dict) -> None:
    import onnx
    import onnxruntime

    import tensorbridge

    versions = {"tensorbridge": tensorbridge.__version__, "onnx": onnx.__version__,
                "onnxruntime": onnxruntime.__version__}
    for module in ("torch", "tensorflow", "keras", "jax", "flax"):
        versions[module] = __import__(module).__version__
    EVIDENCE.write_text(json.dumps({"versions": versions, "ops": results}, indent=1, sort_keys=True) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ops", nargs="*")
    ap.add_argument("--write", action="store_true", help="write the evidence file and docs/support.md")
    ap.add_argument("--pairs", action="store_true", help="also convert every written file to every other format")
    ap.add_argument("--formats", help="comma-separated subset of " + ", ".join(OUT + tuple(DERIVED) + tuple(RECORDED)))
    a = ap.parse_args()
    chosen = a.formats.split(",") if a.formats else None
    written = [f for f in chosen if f not in RECORDED] if chosen else None
    results = run_all(a.ops or None, written, a.pairs) if written != [] else {}
    for fmt, where in RECORDED.items():
        if chosen is None or fmt in chosen:
            module, function = where.split(":")
            for op, statuses in getattr(__import__(module, fromlist=[function]), function)().items():
                if not a.ops or op in a.ops:
                    results.setdefault(op, {"cases": [], "out": {}, "in": {}, "pairs": {}})["in"][fmt] = statuses
    for op, r in results.items():
        cells = [f"{d} {f}: {sum(s == 'pass' for s in st)}/{len(st)}" for d in ("out", "in") for f, st in r[d].items()]
        print(op, "|", ", ".join(cells))
    if a.write:
        if a.ops or a.formats:
            merged = json.loads(EVIDENCE.read_text())["ops"] if EVIDENCE.is_file() else {}
            for op, r in results.items():
                merged.setdefault(op, {"cases": r["cases"], "out": {}, "in": {}, "pairs": {}})
                for d in ("out", "in", "pairs"):
                    merged[op].setdefault(d, {}).update(r.get(d, {}))
            results = merged
        write_evidence(results)
        write_gaps(results)
        from tensorbridge import support

        Path("docs/support.md").write_text(support.markdown())


if __name__ == "__main__":
    main()
