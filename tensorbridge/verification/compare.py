"""Metrics comparing a target output z with a reference output y.

- max_abs: max |z - y|
- mean_rel: mean over elements of |z - y| / |y| (MMdnn's definition; elements with y == 0
  are left out, since the ratio is undefined there)
- robust_rel: max |z - y| / max |y|
- cosine: cosine similarity of the flattened tensors
- top-k agreement (k = 5, 10): for outputs that look like class scores (float, 2-D, at
  least 10 classes), the share of rows whose top-k index sets agree.
- for quantized (integer) outputs, max_abs is in LSBs and `exact` is the share of elements
  that are equal; a float output the source dequantizes per tensor (`step`, its scale) is
  compared the same way, in units of that scale.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from tensorbridge.ir import dtypes
from tensorbridge.verification.tolerance import ONE_LSB, default_tolerance


@dataclass
class OutputReport:
    name: str
    target_name: str
    shape: list
    dtype: str
    max_abs: float
    mean_rel: float
    robust_rel: float
    cosine: float
    rtol: float
    atol: float
    ok: bool
    topk: dict = field(default_factory=dict)
    problem: str = ""
    exact: float | None = None
    step: float | None = None  # the scale a dequantized float output was compared in
    inconclusive: str = ""  # why matching here proves little (the output does not vary with the input ...)


def _float(a: np.ndarray) -> np.ndarray:
    if a.dtype == object:
        return a
    return a.astype(np.float64)


def compare(name: str, target_name: str, ref: np.ndarray, got: np.ndarray,
            rtol: float | None = None, atol: float | None = None, step: float | None = None) -> OutputReport:
    ref, got = np.asarray(ref), np.asarray(got)
    if step and dtypes.is_float(ref.dtype) and ref.shape == got.shape:
        report = compare(name, target_name, np.rint(ref / step).astype(np.int64),
                         np.rint(got.astype(np.float64) / step).astype(np.int64),
                         ONE_LSB[0] if rtol is None else rtol, ONE_LSB[1] if atol is None else atol)
        report.dtype, report.step = dtypes.name(ref.dtype), float(step)
        return report
    d_rtol, d_atol = default_tolerance(ref.dtype) if ref.dtype != object else (0.0, 0.0)
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    base = dict(name=name, target_name=target_name, shape=list(ref.shape),
                dtype=dtypes.name(ref.dtype) if ref.dtype != object else "string", rtol=rtol, atol=atol)
    if ref.shape != got.shape:
        return OutputReport(**base, max_abs=float("inf"), mean_rel=float("inf"), robust_rel=float("inf"),
                            cosine=0.0, ok=False, problem=f"shape {list(got.shape)} != {list(ref.shape)}")
    if ref.dtype == object or got.dtype == object:
        same = ref.tolist() == got.tolist()
        return OutputReport(**base, max_abs=0.0 if same else float("inf"), mean_rel=0.0, robust_rel=0.0,
                            cosine=1.0, ok=same, problem="" if same else "strings differ")
    y, z = _float(ref), _float(got)
    with np.errstate(invalid="ignore", over="ignore"):
        return _numeric_report(base, y, z, ref, rtol, atol)


def _numeric_report(base, y, z, ref, rtol, atol) -> OutputReport:
    nan_y, nan_z = np.isnan(y), np.isnan(z)
    problem = ""
    if not np.array_equal(nan_y, nan_z):
        problem = "NaN positions differ"
    finite = ~(nan_y | nan_z)
    both_inf = np.isinf(y) & np.isinf(z) & (np.sign(y) == np.sign(z))
    mask = finite & ~both_inf
    diff = np.abs(z - y)[mask]
    yabs = np.abs(y)[mask]
    max_abs = float(diff.max()) if diff.size else 0.0
    ref_max = float(yabs.max()) if yabs.size else 0.0
    nz = yabs > 0
    mean_rel = float((diff[nz] / yabs[nz]).mean()) if nz.any() else 0.0
    robust = max_abs / ref_max if ref_max else (0.0 if max_abs == 0 else float("inf"))
    yf, zf = np.where(mask, y, 0).ravel(), np.where(mask, z, 0).ravel()
    denom = float(np.linalg.norm(yf) * np.linalg.norm(zf))
    cosine = float(yf @ zf / denom) if denom else (1.0 if max_abs == 0 else 0.0)
    ok = not problem and max_abs <= atol + rtol * ref_max
    topk = {}
    if dtypes.is_float(ref.dtype) and ref.ndim == 2 and ref.shape[1] >= 10:
        for k in (5, 10):
            a = np.argsort(-y, axis=1, kind="stable")[:, :k]
            b = np.argsort(-z, axis=1, kind="stable")[:, :k]
            topk[f"top{k}"] = float(np.mean([set(r) == set(s) for r, s in zip(a, b)]))
    exact = float(np.mean(y == z)) if ref.dtype.kind in "iu" and y.size else None
    return OutputReport(**base, max_abs=max_abs, mean_rel=mean_rel, robust_rel=robust, cosine=cosine,
                        ok=ok, topk=topk, problem=problem, exact=exact)


REMEDY = ("compare outputs that vary with the input: logits rather than a softmax of random weights "
          "(calibrate BatchNorm statistics on data first), or pass real inputs with --inputs")


def conclusiveness(ref: np.ndarray, other: np.ndarray) -> str:
    """Why agreeing on this output proves little, or "": the reference output is the same for two different
    inputs, or has no spread (every element equal, like a uniform softmax)."""
    ref, other = np.asarray(ref), np.asarray(other)
    if ref.dtype == object or ref.size == 0:
        return ""
    y, z = ref.astype(np.float64), other.astype(np.float64)
    with np.errstate(invalid="ignore"):
        scale = float(np.nanmax(np.abs(y))) if np.isfinite(y).any() else 0.0
        floor = 1e-6 * scale if ref.dtype.kind == "f" else 0.0
        if y.size > 1 and float(np.nanmax(y) - np.nanmin(y)) <= floor:
            return f"every element is {y.ravel()[0]:.6g}: the output has no spread"
        if y.shape == z.shape and float(np.nanmax(np.abs(y - z))) <= floor:
            return "the output is the same for two different inputs"
    return ""


@dataclass
class Report:
    source: str
    target: str
    outputs: list[OutputReport]
    inputs: dict
    first_divergence: dict | None = None
    notes: list[str] = field(default_factory=list)  # how each side was run, where it matters
    #: the outputs compared, by source output name (kept for the caller, not serialized)
    arrays: dict = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """Every output within tolerance."""
        return all(o.ok for o in self.outputs)

    @property
    def conclusive(self) -> bool:
        """Some compared output varies with the input. Outputs that do not (a detector's constant anchors, a
        uniform softmax) are flagged one by one; when none varies, agreement proves nothing at all."""
        return any(not o.inconclusive for o in self.outputs)

    @property
    def status(self) -> str:
        return "FAIL" if not self.ok else "PASS" if self.conclusive else "INCONCLUSIVE"

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "ok": self.ok, "status": self.status,
                "inputs": self.inputs, "outputs": [asdict(o) for o in self.outputs],
                "first_divergence": self.first_divergence, "notes": self.notes}

    def summary(self) -> str:
        lines = [f"verify {self.source} -> {self.target}: {self.status}"]
        lines += [f"  note: {n}" for n in self.notes]
        lines.append(f"  {'output':<24} {'max|d|':>10} {'mean rel':>10} {'max|d|/max|y|':>14} "
                     f"{'cosine':>10} {'top-5':>6} {'top-10':>6}  result")
        for o in self.outputs:
            t5 = f"{o.topk['top5']:.0%}" if "top5" in o.topk else "-"
            t10 = f"{o.topk['top10']:.0%}" if "top10" in o.topk else "-"
            verdict = "ok" if o.ok else f"FAIL (tolerance rtol={o.rtol:g} atol={o.atol:g}) {o.problem}".rstrip()
            of = f" of {o.step:.3g}" if o.step else ""
            lsb = f" ({o.max_abs:.0f} LSB{of}, {o.exact:.2%} exact)" if o.exact is not None else ""
            lines.append(f"  {o.name:<24} {o.max_abs:>10.3g} {o.mean_rel:>10.3g} {o.robust_rel:>14.3g} "
                         f"{o.cosine:>10.6f} {t5:>6} {t10:>6}  {verdict}{lsb}")
        d = self.first_divergence
        if d and d["op"]:
            lines.append(f"  first diverging op: {d['op']} node {d['node']!r} (value {d['value']!r}, "
                         f"max|d|/max|y| = {d['robust_rel']:.3g}) source: {d.get('source', '')}")
        elif d:
            lines.append(f"  per-layer: all {d['values_compared']} intermediate values compared are within tolerance")
        for o in self.outputs:
            if o.inconclusive:
                lines.append(f"  {'INCONCLUSIVE' if not self.conclusive else 'note'} {o.name}: {o.inconclusive}; "
                             "matching it proves little")
        if not self.conclusive:
            lines.append(f"  to make the check meaningful: {REMEDY}")
        return "\n".join(lines)
