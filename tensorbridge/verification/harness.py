"""Verification: run a source and a target model on the same inputs and compare outputs.

Runners come from the format registry, so any two supported formats can be compared.
Outputs are matched by name, and by position when the names differ. The source also runs on a
second, different input: an output that is the same for both, or has no spread at all, makes
agreement on it worthless, and the report says INCONCLUSIVE (with what to do) instead of PASS. Where the
two runtimes disagree, the reference interpreter arbitrates: when it sides with one runtime, the other's
arithmetic is the difference, not the conversion, and the report says INCONCLUSIVE, naming it; so it does
when the source runtime is itself beyond the tolerance from the model's float64 result (rounding amplified).
A runtime that fails on the inputs is a clear error naming the inputs' shapes, never a traceback.
"""

from __future__ import annotations

import functools
import logging
import math
import os

import numpy as np

from tensorbridge import frameworks
from tensorbridge.errors import ModelError, TensorbridgeError, reading, reason
from tensorbridge.ir import dtypes
from tensorbridge.ir.graph import Graph
from tensorbridge.ops.integer_range import index_limits
from tensorbridge.verification.align import reorder
from tensorbridge.verification.compare import Report, compare, conclusiveness
from tensorbridge.verification.inputs import LADDER, load_npz, make_inputs, open_dims, resolve_shapes, varied
from tensorbridge.verification.state import carried_state

log = logging.getLogger(__name__)
#: the largest size the search for an open dim's size tries when a runtime refuses smaller ones (the ladder's
#: top: openWakeWord's mel spectrogram as .pt2 asks at least 672 samples)
MOST_SEARCHED = LADDER[-1]


def runner_for(model, format: str | None = None, **options):
    """The runner of a model file (`format`: where its content and name do not tell)."""
    if isinstance(model, Graph):
        from tensorbridge.verification.runners.reference import ReferenceRunner
        return ReferenceRunner(model)
    if not isinstance(model, (str, os.PathLike)):
        raise ModelError(f"cannot run a {type(model).__name__}; pass a file path or an IR graph")
    if not os.path.exists(model):
        raise ModelError(f"no such file: {model}")
    fmt = frameworks.detect(model, format)
    if fmt.runner is None:
        raise ModelError(f"tensorbridge cannot run {fmt.name} models for verification")
    with reading(f"{model} cannot be run as a {fmt.name} model"):
        return frameworks.resolve(fmt.runner)(model, **options)


def _label(model) -> str:
    return str(model) if not isinstance(model, Graph) else f"<graph {model.name}>"


def _run(runner, feeds: dict, side: str, open_inputs: list, drawn: bool = True) -> dict:
    """The runner's outputs; a runtime's own failure becomes a clear error about the inputs (`drawn`: made up
    by the verification, not given)."""
    try:
        return runner.run(feeds)
    except TensorbridgeError:
        raise
    except Exception as e:  # noqa: BLE001 - each runtime raises its own kinds
        shapes = ", ".join(f"{k} {list(np.shape(v))}" for k, v in feeds.items())
        hint = f"; the open dims ({', '.join(f'{n} dim {a}' for n, a in open_inputs)}) may need other sizes: " \
               "give them with --input-shape NAME=d0,d1,..." if open_inputs else ""
        hint += "; the inputs were drawn at random: give valid ones with --inputs FILE.npz" if drawn else ""
        raise ModelError(f"the {side} model ({runner.name}) failed on inputs {shapes}: {type(e).__name__}: "
                         f"{str(e).splitlines()[0][:300] if str(e) else ''}{hint}") from None


def _index_limits(specs, source_graph) -> dict | None:
    """The rows each integer input indexes in the source (None: no integer input, or no graph to read it from)."""
    if not any(dt is not None and dtypes.dtype(dt).kind in "iu" for _, dt, _ in specs):
        return None
    try:
        return index_limits(source_graph())
    except TensorbridgeError:  # a source tensorbridge cannot read still runs in its own runtime
        return None


def _drawn(runner, seed: int, input_shapes, source_graph, open_inputs, target_runs) -> tuple[dict, dict, dict]:
    """Seeded inputs both models run on, and the source's and the target's outputs (`target_runs(feeds)`): the
    open dims' sizes the search picks, else, where a runtime refuses them (the source's, or the target's: an
    exported program asks a width of at least 13), the next larger ones both run (the first refusal is reported
    when none runs)."""
    limits, above, first = _index_limits(runner.inputs, source_graph), 0, None
    while True:
        try:
            shapes = resolve_shapes(runner.inputs, input_shapes, source_graph, above)
        except ModelError:
            if first is None:
                raise
            raise first from None  # no larger size the model's shapes allow: the first refusal says more
        feeds = make_inputs(runner.inputs, seed, shapes, limits)
        searched = [shapes[n][a] for n, a in open_inputs if n not in (input_shapes or {}) and shapes[n][a] > 1]
        try:
            ref = _run(runner, feeds, "source", open_inputs)
            return feeds, ref, target_runs(feeds)
        except ModelError as e:
            first = first or e
            if not searched or max(searched) >= MOST_SEARCHED:
                raise first from None
            above = max(searched)


def verify(src, dst, inputs=None, rtol=None, atol=None, seed: int = 0, input_shapes=None,
           per_layer: bool = False, src_format: str | None = None, input_dtypes: dict | None = None) -> Report:
    source_graph = functools.cache(lambda: _graph(src, src_format, input_shapes))
    _refuse_unrunnable(src, src_format, source_graph)
    a = runner_for(src, src_format, **({"input_dtypes": input_dtypes} if input_dtypes else {}))
    b = runner_for(dst)
    if any(shape is None for _, _, shape in a.inputs) and len(a.inputs) == len(b.inputs):
        # a source that records no input shapes (TorchScript) runs on the converted model's
        a.inputs = [(n, dt or b_dt, shape if shape is not None else b_shape)
                    for (n, dt, shape), (_, b_dt, b_shape) in zip(a.inputs, b.inputs)]
    open_inputs = open_dims(a.inputs)
    a_names = [n for n, _, _ in a.inputs]
    state = carried_state(a, b, source_graph)
    b_inputs, b_outputs = (b.inputs, b.outputs) if state is None else \
        (b.inputs[:len(a.inputs)], b.outputs[:len(a.outputs)])
    b_names = [n for n, _, _ in b_inputs]
    same = set(a_names) == set(b_names)
    if not same and len(b_names) != len(a_names):
        raise ModelError(f"source takes inputs {a_names} but target takes {b_names}")
    renamed = {n: n for n in b_names} if same else dict(zip(a_names, b_names))

    def target_feeds(source_feeds: dict) -> dict:
        # a target converted with --io-layout target takes its images in the other channel order
        named = {renamed[n]: v for n, v in source_feeds.items() if n in renamed}
        return {n: reorder(named[n], shape) for n, _, shape in b_inputs if n in named}

    def first_call(source_feeds: dict) -> dict:  # the target's inputs, with the state it starts from
        return target_feeds(source_feeds) | (state.first() if state else {})

    drawn = inputs is None
    if drawn:
        feeds, ref, got = _drawn(a, seed, input_shapes, source_graph, open_inputs,
                                 lambda f: _run(b, first_call(f), "target", open_inputs))
    else:
        feeds = load_npz(inputs) if isinstance(inputs, (str, os.PathLike)) else dict(inputs)
        missing = [n for n in a_names if n not in feeds]
        if missing:
            raise ModelError(f"inputs are missing {missing}; the model takes {a_names}")
        ref = _run(a, feeds, "source", open_inputs, drawn)
        got = _run(b, first_call(feeds), "target", open_inputs, drawn)
    b_feeds = first_call(feeds)
    other = varied(feeds, seed + 1)
    ref_other = _run(a, other, "source", open_inputs)
    if set(a.outputs) == set(b_outputs):
        pairs = [(n, n) for n in a.outputs]
    elif len(a.outputs) == len(b_outputs):
        pairs = list(zip(a.outputs, b_outputs))
    else:
        raise ModelError(f"source has outputs {a.outputs}, target has {b_outputs}")
    with reading(f"the source model ({a.name}) describes its outputs unreadably"):
        steps = a.output_steps() if hasattr(a, "output_steps") else {}
    reports, arrays = _compared(pairs, ref, got, ref_other, (rtol, atol), steps)
    if any(not r.ok for r in reports):
        a_feeds = feeds | (state.initial if state else {})
        _arbitrate(source_graph, dst, (a, b), (a_feeds, b_feeds), pairs, (ref, got), reports, rtol, atol, steps)
        _blame_compiler_fusion(b, b_feeds, pairs, ref, reports, (rtol, atol), steps)
    if state:  # the second call starts from the state the first left
        got_next = _run(b, target_feeds(other) | state.after(got), "target", open_inputs)
        more, more_arrays = _compared(pairs, ref_other, got_next, ref, (rtol, atol), steps, " (call 2)")
        reports, arrays = reports + more, arrays | more_arrays
    shown = {k: {"shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)} for k, v in feeds.items()}
    notes = [f"{side}: {r.note}" for side, r in (("source", a), ("target", b)) if getattr(r, "note", "")]
    notes += [state.note] if state else []
    report = Report(_label(src), _label(dst), reports, shown, notes=notes, arrays=arrays)
    if per_layer:
        from tensorbridge.verification.bisect import first_divergence

        report.first_divergence = first_divergence(src, b, feeds, b_feeds, rtol, atol, source_runner=a)
    return report


def _compared(pairs, ref: dict, got: dict, spread: dict, tolerance: tuple, steps: dict, label: str = ""):
    """A report per output pair (`label` after the name), its spread judged against the source's run on other
    inputs (`spread`); and the arrays compared, by report name."""
    reports, arrays = [], {}
    for an, bn in pairs:
        name, held = f"{an}{label}", reorder(got[bn], np.shape(ref[an]))
        report = compare(name, bn, ref[an], held, *tolerance, steps.get(an))
        report.inconclusive = conclusiveness(ref[an], spread[an], report.atol)
        reports.append(report)
        arrays[name] = (ref[an], held)
    return reports, arrays


#: the farthest (max|d|/max|y|) one runtime may be from the other and from the reference interpreter for its own
#: float32 arithmetic to be blamed: beyond it the difference is one of meaning (a model read or written wrong
#: agrees with the reference interpreter's run of that same reading), unless the model amplifies rounding
ROUNDING_LIMIT = 1e-3


def _arbitrate(source_graph, dst, runners, feeds: tuple[dict, dict], pairs, outputs: tuple[dict, dict],
               reports: list, rtol, atol, steps: dict) -> None:
    """Where the two runtimes disagree beyond the tolerance, ask the reference interpreter (float64 sums): when
    it runs the source model to what the target runtime computed, or the written model to what the source
    runtime computed, and the runtimes are no farther apart than float32 arithmetic goes (ROUNDING_LIMIT), the
    conversion is right and one runtime's arithmetic (a float32 sum over millions of elements) is not; the
    output's report says which (`runtime_differs`), and the verdict is INCONCLUSIVE."""
    from tensorbridge.verification.runners.reference import ReferenceRunner

    a, b = runners
    ref, got = outputs
    oracles = ((a, lambda: ReferenceRunner(source_graph()).run(feeds[0]), lambda an, bn: (an, got[bn]), "source"),
               (b, lambda: ReferenceRunner(dst).run(feeds[1]), lambda an, bn: (bn, ref[an]), "written"))
    runs = {}
    for odd, run_oracle, against, model in oracles:
        if isinstance(odd, ReferenceRunner) or all(r.ok or r.runtime_differs for r in reports):
            continue
        try:
            oracle = runs[model] = run_oracle()
        except Exception as e:  # noqa: BLE001 - no oracle for this model: the failure stands as measured
            log.debug("no reference run of the %s model: %s", model, reason(e))
            continue
        for (an, bn), r in zip(pairs, reports):
            name, other = against(an, bn)
            if r.ok or r.runtime_differs or name not in oracle or not r.robust_rel <= ROUNDING_LIMIT:
                continue
            check = compare(an, bn, oracle[name], reorder(other, np.shape(oracle[name])), rtol, atol, steps.get(an))
            if check.ok:
                r.runtime_differs = (f"{odd.name} is the odd one out: the reference interpreter runs the {model} "
                                     f"model to the other runtime's output (max|d|/max|y| = {check.robust_rel:.3g}); "
                                     f"the conversion is right, {odd.name}'s own arithmetic differs")
    if "source" in runs:
        _flag_rounding_amplified(source_graph, a, feeds[0], pairs, (ref, runs["source"], got), reports, rtol, atol,
                                 steps)


def _blame_compiler_fusion(b, feeds: dict, pairs, ref: dict, reports: list, tolerance: tuple, steps: dict) -> None:
    """Where the target differs and its runtime can compile without a library fusion known to compute wrongly
    (XLA CPU's, for JAX): when that compilation matches the source, the report names the compiler and the way
    around it (`runtime_differs`: INCONCLUSIVE, the written code kept), not the conversion."""
    failing = [(pair, r) for pair, r in zip(pairs, reports) if not (r.ok or r.runtime_differs)]
    rerun = getattr(b, "run_without_library_fusion", None)
    got = rerun(feeds) if failing and rerun else None
    for (an, bn), r in failing if got is not None else ():
        check = compare(an, bn, ref[an], reorder(got[bn], np.shape(ref[an])), *tolerance, steps.get(an))
        if check.ok:
            r.runtime_differs = b.library_fusion_fault(check.robust_rel)


def _flag_rounding_amplified(source_graph, a, feeds: dict, pairs, float32_runs: tuple[dict, dict, dict],
                             reports: list, rtol, atol, steps: dict) -> None:
    """Where both the source runtime and the reference interpreter's float32 run of the source are farther than
    the tolerance from the model's float64 result, the model amplifies float32 rounding on these inputs and no
    two float32 runtimes can be compared at the tolerance: the output's report says so (INCONCLUSIVE), and what
    to do, instead of blaming the conversion; so too where the source and the target runtimes both are, no farther
    than float32 arithmetic goes (ROUNDING_LIMIT), though the reference interpreter's float32 run (its sums in
    float64) is closer (MediaPipe's deep pose model). Where the target runtime's result is within the tolerance of
    the float64 result and the source runtime's no farther than ROUNDING_LIMIT, the source runtime's own
    arithmetic is the odd one out. (A source runtime alone far from it means the model was misread: the failure
    stands.)"""
    from tensorbridge.reference.interpreter import run_in_float64

    if all(r.ok or r.runtime_differs for r in reports):
        return
    try:
        exact = run_in_float64(source_graph(), feeds)
    except Exception as e:  # noqa: BLE001 - no float64 run of this model: the failure stands as measured
        log.debug("no float64 run of the source model: %s", reason(e))
        return
    ref, ref32, got = float32_runs
    for (an, bn), r in zip(pairs, reports):
        if r.ok or r.runtime_differs or an not in exact or an not in ref32:
            continue
        held = exact[an].astype(np.asarray(ref[an]).dtype)  # at the output's own tolerance, not float64's
        drift, own, written = (compare(an, an, held, reorder(run[name], held.shape), rtol, atol, steps.get(an))
                               for run, name in ((ref, an), (ref32, an), (got, bn)))
        if written.ok and not drift.ok and drift.robust_rel <= ROUNDING_LIMIT:
            r.runtime_differs = (f"{a.name} is the odd one out: the written model's result is {written.robust_rel:.3g} "
                                 f"(max|d|/max|y|) from the model's float64 result, {a.name}'s own "
                                 f"{drift.robust_rel:.3g}; the conversion is right, {a.name}'s float32 arithmetic "
                                 "drifts further")
            continue
        both_runtimes = not written.ok and max(drift.robust_rel, written.robust_rel) <= ROUNDING_LIMIT
        if not drift.ok and (not own.ok or both_runtimes):
            drifts = own if not own.ok else written
            r.runtime_differs = (f"this model amplifies float32 rounding on these inputs: {a.name}'s own result is "
                                 f"{drift.robust_rel:.3g} (max|d|/max|y|) from the model's float64 result, "
                                 f"{'the reference interpreter' if drifts is own else 'the target'}'s float32 run "
                                 f"{drifts.robust_rel:.3g}: beyond the tolerance, so no float32 runtime can be held "
                                 "to it; verify on inputs like the model's real data (--inputs)")


#: the largest tensor verification lets a model compute (a value of static shape, at the model's own sizes)
VALUE_LIMIT = 1 << 30


#: formats whose files hold their computation as data, read (and checked) before they are run
COMPUTATION_AS_DATA = ("onnx", "tbir", "tflite", "jaxexport")


def _refuse_unrunnable(src, src_format: str | None, source_graph) -> None:
    """A source whose file holds its computation as data (ONNX, tbir, TFLite, a jax.export artifact) is not run
    when it has a Loop that always runs more than ITERATION_LIMIT times (neither runtime would come back) or
    computes a tensor of more than VALUE_LIMIT bytes (a memory bomb, whichever runtime runs it). Reading it
    first also puts it through its loader's checks for damaged files."""
    from tensorbridge.ops.control import ITERATION_LIMIT, fixed_trip_count

    if isinstance(src, Graph) or frameworks.detect(src, src_format).name not in COMPUTATION_AS_DATA:
        return
    for node in source_graph().all_nodes():
        trips = fixed_trip_count(node)
        if trips is not None and trips > ITERATION_LIMIT:
            raise ModelError(f"cannot verify: Loop {node.name!r} always runs {trips:,} iterations (more than "
                             f"{ITERATION_LIMIT:,}), so running the model would not end")
        for v in node.outputs:
            if v.dtype is None or v.shape is None or not all(isinstance(d, int) for d in v.shape):
                continue
            size = math.prod(v.shape) * v.dtype.itemsize
            if size > VALUE_LIMIT:
                raise ModelError(f"cannot verify: {node.op} {node.name!r} computes a tensor of {size / 2**30:.1f} "
                                 f"GiB ({v.name!r}, shape {list(v.shape)}); convert with --no-verify if that is "
                                 "intended")


def _graph(src, src_format: str | None = None, input_shapes: dict | None = None) -> Graph:
    from tensorbridge.api import load

    return load(src, format=src_format, input_shapes=input_shapes)
