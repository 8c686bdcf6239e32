"""Runs the ONNX backend node-test corpus through tensorbridge.

Path (a): ONNX -> IR -> reference interpreter. Path (b): ONNX -> IR -> ONNX -> onnxruntime,
counted over the cases onnxruntime passes with the original model. The corpus is generated
by the installed `onnx` package (`collect_testcases`), not written here.

    python -m tests.onnx_corpus.corpus            # print a summary
    python -m tests.onnx_corpus.corpus --write    # also regenerate docs/conformance.md
"""

from __future__ import annotations

import argparse
import collections
import io
import warnings
from dataclasses import dataclass

import numpy as np


@dataclass
class CaseResult:
    name: str
    family: str
    ref: str = "fail"          # pass / fail
    ref_error: str = ""
    ort_original: str = "fail"
    ort_roundtrip: str = "fail"
    rt_error: str = ""


def cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_cases = collect_testcases()
    return [c for c in all_cases if "_expanded" not in c.name]


def _close(expected, got, rtol, atol) -> bool:
    expected = np.asarray(expected)
    got = np.asarray(got)
    if expected.shape != got.shape:
        return False
    if expected.dtype == object or got.dtype == object:
        return expected.tolist() == got.tolist()
    if expected.dtype.kind not in "fc" and str(expected.dtype) not in ("bfloat16",) and \
            not str(expected.dtype).startswith("float"):
        return np.array_equal(expected.astype(np.int64) if expected.dtype.kind in "iub" else expected,
                              got.astype(np.int64) if got.dtype.kind in "iub" else got)
    e = expected.astype(np.float64)
    g = got.astype(np.float64)
    return bool(np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))


def _arrays(items):
    from onnx import TensorProto, numpy_helper

    return [numpy_helper.to_array(x) if isinstance(x, TensorProto) else np.asarray(x) for x in items]


def _compare(expected_list, got_list, rtol, atol) -> bool:
    if len(expected_list) != len(got_list):
        return False
    return all(_close(e, g, rtol, atol) for e, g in zip(expected_list, got_list))


def _family(case) -> str:
    from tensorbridge.ops import schema

    op = case.model.graph.node[0].op_type if case.model.graph.node else "?"
    s = schema.get(op)
    return s.family if s else "not in catalogue"


def _feeds(model, inputs):
    inputs = _arrays(inputs)
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    return dict(zip(names, inputs))


def run_case(case, with_ort: bool = True) -> CaseResult:
    import onnx

    import tensorbridge as tb
    from tensorbridge.backends.onnx.exporter import to_model
    from tensorbridge.errors import UnsupportedError

    res = CaseResult(case.name, _family(case))
    rtol, atol = case.rtol, case.atol
    graph = None
    try:
        graph = tb.load(case.model)
        ok = True
        for inputs, expected in case.data_sets:
            out = tb.run(graph, _feeds(case.model, inputs))
            got = [out[o.name] for o in graph.outputs]
            ok = ok and _compare(_arrays(expected), got, rtol, atol)
        res.ref = "pass" if ok else "fail"
        if not ok:
            res.ref_error = "numeric mismatch"
    except UnsupportedError as e:
        res.ref_error = "unsupported: " + "; ".join(sorted({f"{b.op} ({b.detail})" for b in e.blockers}))
    except Exception as e:  # noqa: BLE001 - the corpus reports every failure kind
        res.ref_error = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    if not with_ort:
        return res
    import onnxruntime as ort

    def run_ort(model):
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        buf = model.SerializeToString()
        sess = ort.InferenceSession(buf, opts, providers=["CPUExecutionProvider"])
        ok = True
        for inputs, expected in case.data_sets:
            feeds = _feeds(model, inputs)
            got = sess.run(None, feeds)
            ok = ok and _compare(_arrays(expected), got, rtol, atol)
        return ok

    try:
        model = onnx.ModelProto()
        model.CopyFrom(case.model)
        model.ir_version = min(model.ir_version, 13)
        res.ort_original = "pass" if run_ort(model) else "fail"
    except Exception:  # noqa: BLE001
        res.ort_original = "fail"
    if graph is not None:
        try:
            exported = to_model(graph)
            onnx.checker.check_model(exported)
            ok = run_ort(exported)
            res.ort_roundtrip = "pass" if ok else "fail"
            if not ok:
                res.rt_error = "numeric mismatch"
        except Exception as e:  # noqa: BLE001
            res.rt_error = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    else:
        res.rt_error = "import failed"
    return res


def run_all(with_ort: bool = True, names=None) -> list[CaseResult]:
    import logging
    logging.disable(logging.WARNING)
    out = []
    for c in cases():
        if names and c.name not in names:
            continue
        out.append(run_case(c, with_ort))
    return out


def summarize(results: list[CaseResult]) -> dict:
    total = len(results)
    ref_pass = sum(r.ref == "pass" for r in results)
    ort_base = [r for r in results if r.ort_original == "pass"]
    rt_pass = sum(r.ort_roundtrip == "pass" for r in ort_base)
    return {"total": total, "ref_pass": ref_pass, "ort_original_pass": len(ort_base), "roundtrip_pass": rt_pass}


def write_doc(results: list[CaseResult], path) -> None:
    import onnx
    import onnxruntime

    import tensorbridge
    s = summarize(results)
    fam = collections.defaultdict(lambda: [0, 0, 0, 0])
    for r in results:
        f = fam[r.family]
        f[0] += 1
        f[1] += r.ref == "pass"
        f[2] += r.ort_original == "pass"
        f[3] += r.ort_original == "pass" and r.ort_roundtrip == "pass"
    buf = io.StringIO()
    w = buf.write
    w("# ONNX conformance\n\n")
    w("Generated by `python -m tests.onnx_corpus.corpus --write` (checked by the test suite).\n\n")
    w(f"Corpus: the backend node-test cases generated by the installed onnx {onnx.__version__} "
      "(`onnx.backend.test.case.node.collect_testcases()`), without the `_expanded` variants. "
      f"onnxruntime {onnxruntime.__version__}, tensorbridge {tensorbridge.__version__}.\n\n")
    w("- **(a) reference**: ONNX → IR → reference interpreter, compared with the expected outputs "
      "using each case's own rtol/atol.\n")
    w("- **(b) round trip**: ONNX → IR → ONNX → onnxruntime, over the cases onnxruntime passes "
      "when given the original model (the others use ops, opsets or types beyond onnxruntime "
      f"{onnxruntime.__version__}, so they are excluded from (b)).\n\n")
    w("| path | passed | of | share |\n|---|---|---|---|\n")
    w(f"| (a) reference interpreter | {s['ref_pass']} | {s['total']} | {100 * s['ref_pass'] / s['total']:.1f}% |\n")
    w(f"| onnxruntime on the original model | {s['ort_original_pass']} | {s['total']} | "
      f"{100 * s['ort_original_pass'] / s['total']:.1f}% |\n")
    base = max(s['ort_original_pass'], 1)
    w(f"| (b) round trip in onnxruntime | {s['roundtrip_pass']} | {s['ort_original_pass']} | "
      f"{100 * s['roundtrip_pass'] / base:.1f}% |\n\n")
    w("## Per op family\n\n| family | cases | (a) pass | ort original | (b) pass |\n|---|---|---|---|---|\n")
    for name, (n, a, o, b) in sorted(fam.items()):
        w(f"| {name} | {n} | {a} | {o} | {b} |\n")
    w("\n## Known failures\n\nEvery failing case is listed with its reason in "
      "`tests/onnx_corpus/known_failures.txt`; the test suite fails on an unexpected pass as "
      "well as on a new failure.\n")
    reasons = collections.Counter()
    for r in results:
        if r.ref != "pass":
            reasons[_reason_class(r.ref_error)] += 1
    w("\n| why (a) fails | cases |\n|---|---|\n")
    for k, v in reasons.most_common():
        w(f"| {k} | {v} |\n")
    with open(path, "w") as f:
        f.write(buf.getvalue())


def _reason_class(err: str) -> str:
    if "custom or non-standard domain" in err:
        return "op of another domain (ai.onnx.ml, training, preview)"
    if "not in the IR op catalogue" in err:
        return "op not in the IR catalogue yet"
    if "is not supported" in err and "attribute" in err:
        return "an attribute the IR op does not support yet"
    if "only tensors are supported" in err:
        return "sequence/optional values (the IR holds tensors only)"
    if "numeric mismatch" in err:
        return "numeric mismatch (listed case by case)"
    return "import/run error: " + err.split(":")[0]


#: why a case with a numeric mismatch fails, by name prefix (the rest are not investigated yet)
MISMATCH_NOTES = {
    "test_training_dropout": "random output: training-mode Dropout draws its own mask",
    "test_attention_": "Attention variant (softcap / qk output mode / padded KV / bf16) not matched yet",
    "test_resize_downsample_scales_linear_align_corners": "onnxruntime disagrees with the expected output too",
    "test_resize_downsample_scales_cubic_align_corners": "onnxruntime disagrees with the expected output too",
}


def reason(r: CaseResult, path: str) -> str:
    err = r.ref_error if path == "ref" else (r.rt_error if r.ref == "pass" else r.ref_error)
    if "numeric mismatch" in err:
        note = next((v for k, v in MISMATCH_NOTES.items() if r.name.startswith(k)), "not investigated yet")
        return f"numeric mismatch: {note}"
    return err


def failures(results: list[CaseResult]) -> dict[tuple[str, str], str]:
    """(path, case) -> reason for every failing case of path (a) "ref" and (b) "roundtrip"."""
    out = {}
    for r in results:
        if r.ref != "pass":
            out[("ref", r.name)] = reason(r, "ref")
        if r.ort_original == "pass" and r.ort_roundtrip != "pass":
            out[("roundtrip", r.name)] = reason(r, "roundtrip")
    return out


KNOWN_FAILURES = "tests/onnx_corpus/known_failures.txt"


def read_known(path=KNOWN_FAILURES) -> dict[tuple[str, str], str]:
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, name, why = line.split(None, 2)
            out[(kind, name)] = why
    return out


def write_known(results, path=KNOWN_FAILURES) -> None:
    lines = ["# ONNX node-test corpus cases tensorbridge fails, with the reason.",
             "# path: ref = ONNX -> IR -> reference interpreter; roundtrip = ONNX -> IR -> ONNX -> onnxruntime",
             "# (roundtrip lists only cases onnxruntime passes with the original model).",
             "# Strict: tests/onnx_corpus/test_corpus.py fails on a new failure and on an unexpected pass.",
             "# Regenerate with: python -m tests.onnx_corpus.corpus --write", ""]
    for (kind, name), why in sorted(failures(results).items()):
        lines.append(f"{kind:<9} {name}  {why}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--failures", action="store_true", help="print failing cases")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    results = run_all(not a.no_ort, set(a.names) or None)
    print(summarize(results))
    if a.failures:
        for r in results:
            if r.ref != "pass" or (r.ort_original == "pass" and r.ort_roundtrip != "pass"):
                print(f"{r.name}: ref={r.ref} {r.ref_error} | ort={r.ort_original} rt={r.ort_roundtrip} {r.rt_error}")
    if a.write:
        write_doc(results, "docs/conformance.md")
        write_known(results)


if __name__ == "__main__":
    main()
