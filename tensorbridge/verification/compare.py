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
    runtime_differs: str = ""  # the target runtime misses, the written model run by the reference interpreter not


#: elements compared at a time: the metrics are sums and maxima over chunks, so comparing a large output
#: costs a few chunk-sized float64 buffers, not a dozen copies of the output
CHUNK = 1 << 20


def _chunks(*arrays: np.ndarray):
    """Flat float64 slices of the arrays (same size), CHUNK elements at a time."""
    flats = [a.reshape(-1) for a in arrays]
    for i in range(0, flats[0].size, CHUNK):
        yield [f[i:i + CHUNK].astype(np.float64) for f in flats]


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
    with np.errstate(invalid="ignore", over="ignore"):
        return _numeric_report(base, ref, got, rtol, atol)


def _numeric_report(base, ref: np.ndarray, got: np.ndarray, rtol, atol) -> OutputReport:
    nan_differs = False
    max_abs = ref_max = rel_sum = dot = y_sq = z_sq = 0.0
    rel_count = equal = 0
    for y, z in _chunks(ref, got):
        nan_y, nan_z = np.isnan(y), np.isnan(z)
        nan_differs |= not np.array_equal(nan_y, nan_z)
        both_inf = np.isinf(y) & np.isinf(z) & (np.sign(y) == np.sign(z))
        mask = ~(nan_y | nan_z) & ~both_inf
        diff, yabs = np.abs(z - y)[mask], np.abs(y)[mask]
        if diff.size:
            max_abs, ref_max = max(max_abs, float(diff.max())), max(ref_max, float(yabs.max()))
        nz = yabs > 0
        rel_sum += float((diff[nz] / yabs[nz]).sum())
        rel_count += int(nz.sum())
        yf, zf = np.where(mask, y, 0), np.where(mask, z, 0)
        dot, y_sq, z_sq = dot + float(yf @ zf), y_sq + float(yf @ yf), z_sq + float(zf @ zf)
        equal += int((y == z).sum())
    problem = "NaN positions differ" if nan_differs else ""
    mean_rel = rel_sum / rel_count if rel_count else 0.0
    robust = max_abs / ref_max if ref_max else (0.0 if max_abs == 0 else float("inf"))
    denom = float(np.sqrt(y_sq) * np.sqrt(z_sq))
    cosine = dot / denom if denom else (1.0 if max_abs == 0 else 0.0)
    ok = not problem and max_abs <= atol + rtol * ref_max
    topk = {}
    if dtypes.is_float(ref.dtype) and ref.ndim == 2 and ref.shape[1] >= 10:
        rows = max(1, CHUNK // ref.shape[1])
        for k in (5, 10):
            agree = 0
            for i in range(0, ref.shape[0], rows):
                a = np.argsort(-ref[i:i + rows], axis=1, kind="stable")[:, :k]
                b = np.argsort(-got[i:i + rows], axis=1, kind="stable")[:, :k]
                agree += sum(set(r) == set(s) for r, s in zip(a, b))
            topk[f"top{k}"] = agree / ref.shape[0] if ref.shape[0] else float("nan")
    exact = equal / ref.size if ref.dtype.kind in "iu" and ref.size else None
    return OutputReport(**base, max_abs=max_abs, mean_rel=mean_rel, robust_rel=robust, cosine=cosine,
                        ok=ok, topk=topk, problem=problem, exact=exact)


REMEDY = ("compare outputs that vary with the input: logits rather than a softmax of random weights "
          "(calibrate BatchNorm statistics on data first), or pass real inputs with --inputs")


def conclusiveness(ref: np.ndarray, other: np.ndarray, atol: float = 0.0) -> str:
    """Why agreeing on this output proves little, or "": the reference output is the same for two different
    inputs, has no spread (every element equal, like a uniform softmax), or lies within the absolute tolerance
    `atol` of 0 (any output that small agrees with it: a sigmoid of random weights' large negative logits)."""
    ref, other = np.asarray(ref), np.asarray(other)
    if ref.dtype == object or ref.size == 0:
        return ""
    same_shape = ref.shape == other.shape
    top = low = high = apart = 0.0
    with np.errstate(invalid="ignore"):
        for i, (y, *z) in enumerate(_chunks(ref, *([other] if same_shape else []))):
            finite = y[np.isfinite(y)]
            if finite.size:
                top = max(top, float(np.abs(finite).max()))
            low = float(np.nanmin(y)) if i == 0 else min(low, float(np.nanmin(y)))
            high = float(np.nanmax(y)) if i == 0 else max(high, float(np.nanmax(y)))
            if z:
                apart = max(apart, float(np.nanmax(np.abs(y - z[0]))))
    floor = 1e-6 * top if ref.dtype.kind == "f" else 0.0
    if ref.size > 1 and high - low <= floor:
        return f"every element is {float(ref.reshape(-1)[0]):.6g}: the output has no spread"
    if same_shape and apart <= floor:
        return "the output is the same for two different inputs"
    if ref.dtype.kind == "f" and top <= atol:
        return f"every element is within the absolute tolerance ({atol:g}) of 0: any output as small agrees"
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
        """Every output within tolerance (in the target runtime, or in the reference interpreter's run of the
        written model where the runtime's own arithmetic misses)."""
        return all(o.ok or o.runtime_differs for o in self.outputs)

    @property
    def conclusive(self) -> bool:
        """Some compared output varies with the input. Outputs that do not (a detector's constant anchors, a
        uniform softmax) are flagged one by one; when none varies, agreement proves nothing at all."""
        return any(not o.inconclusive for o in self.outputs)

    @property
    def proven(self) -> bool:
        """Within tolerance in the target runtime, on outputs that vary with the input."""
        return self.ok and self.conclusive and not any(o.runtime_differs for o in self.outputs)

    @property
    def status(self) -> str:
        return "FAIL" if not self.ok else "PASS" if self.proven else "INCONCLUSIVE"

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "ok": self.ok, "status": self.status,
                "inputs": self.inputs, "outputs": [asdict(o) for o in self.outputs],
                "first_divergence": self.first_divergence, "notes": self.notes}

    def summary(self) -> str:
        lines = [f"verify {self.source} -> {self.target}: {self.status}"]
        lines += [f"  note: {n}" for n in self.notes]
        width = max([24, *(len(o.name) for o in self.outputs)])
        lines.append(f"  {'output':<{width}} {'max|d|':>10} {'mean rel':>10} {'max|d|/max|y|':>14} "
                     f"{'cosine':>10} {'top-5':>6} {'top-10':>6}  result")
        for o in self.outputs:
            t5 = f"{o.topk['top5']:.0%}" if "top5" in o.topk else "-"
            t10 = f"{o.topk['top10']:.0%}" if "top10" in o.topk else "-"
            verdict = "ok" if o.ok else "runtime differs" if o.runtime_differs else \
                f"FAIL (tolerance rtol={o.rtol:g} atol={o.atol:g}) {o.problem}".rstrip()
            of = f" of {o.step:.3g}" if o.step else ""
            lsb = f" ({o.max_abs:.0f} LSB{of}, {o.exact:.2%} exact)" if o.exact is not None else ""
            lines.append(f"  {o.name:<{width}} {o.max_abs:>10.3g} {o.mean_rel:>10.3g} {o.robust_rel:>14.3g} "
                         f"{o.cosine:>10.6f} {t5:>6} {t10:>6}  {verdict}{lsb}")
        d = self.first_divergence
        if d and d["op"]:
            lines.append(f"  first diverging op: {d['op']} node {d['node']!r} (value {d['value']!r}, "
                         f"max|d|/max|y| = {d['robust_rel']:.3g}) source: {d.get('source', '')}")
        elif d:
            lines.append(f"  per-layer: all {d['values_compared']} intermediate values compared are within tolerance")
            if not all(o.ok for o in self.outputs):
                lines.append("  (a runtime that returns every intermediate value cannot fuse ops across them: a "
                             "difference only in the outputs points at a fused kernel)")
        for o in self.outputs:
            if o.runtime_differs:
                lines.append(f"  INCONCLUSIVE {o.name}: {o.runtime_differs}")
            if o.inconclusive:
                lines.append(f"  {'INCONCLUSIVE' if not self.conclusive else 'note'} {o.name}: {o.inconclusive}; "
                             "matching it proves little")
        if not self.conclusive:
            lines.append(f"  to make the check meaningful: {REMEDY}")
        return "\n".join(lines)
