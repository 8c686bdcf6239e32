"""Verification: run a source and a target model on the same inputs and compare outputs.

Runners come from the format registry, so any two supported formats can be compared.
Outputs are matched by name, and by position when the names differ.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from tensorbridge import frameworks
from tensorbridge.errors import ModelError
from tensorbridge.ir.graph import Graph
from tensorbridge.verification.align import reorder
from tensorbridge.verification.compare import Report, compare
from tensorbridge.verification.inputs import load_npz, make_inputs

log = logging.getLogger(__name__)


def runner_for(model):
    if isinstance(model, Graph):
        from tensorbridge.verification.runners.reference import ReferenceRunner
        return ReferenceRunner(model)
    if not isinstance(model, (str, os.PathLike)):
        raise ModelError(f"cannot run a {type(model).__name__}; pass a file path or an IR graph")
    if not os.path.exists(model):
        raise ModelError(f"no such file: {model}")
    fmt = frameworks.detect(model)
    if fmt.runner is None:
        raise ModelError(f"tensorbridge cannot run {fmt.name} models for verification")
    return frameworks.resolve(fmt.runner)(model)


def _label(model) -> str:
    return str(model) if not isinstance(model, Graph) else f"<graph {model.name}>"


def verify(src, dst, inputs=None, rtol=None, atol=None, seed: int = 0, input_shapes=None,
           per_layer: bool = False) -> Report:
    a = runner_for(src)
    b = runner_for(dst)
    if isinstance(inputs, (str, os.PathLike)):
        feeds = load_npz(inputs)
    elif inputs is not None:
        feeds = dict(inputs)
    else:
        feeds = make_inputs(a.inputs, seed, input_shapes)
    missing = [n for n, _, _ in a.inputs if n not in feeds]
    if missing:
        raise ModelError(f"inputs are missing {missing}; the model takes {[n for n, _, _ in a.inputs]}")
    b_names = [n for n, _, _ in b.inputs]
    if set(b_names) != {n for n, _, _ in a.inputs}:
        if len(b_names) != len(a.inputs):
            raise ModelError(f"source takes inputs {[n for n, _, _ in a.inputs]} but target takes {b_names}")
        b_feeds = {bn: feeds[an] for bn, (an, _, _) in zip(b_names, a.inputs)}
    else:
        b_feeds = dict(feeds)
    # a target converted with --io-layout target takes its images in the other channel order
    b_feeds = {n: reorder(b_feeds[n], shape) for n, _, shape in b.inputs if n in b_feeds}
    ref = a.run(feeds)
    got = b.run(b_feeds)
    pairs = []
    if set(a.outputs) == set(b.outputs):
        pairs = [(n, n) for n in a.outputs]
    elif len(a.outputs) == len(b.outputs):
        pairs = list(zip(a.outputs, b.outputs))
    else:
        raise ModelError(f"source has outputs {a.outputs}, target has {b.outputs}")
    steps = a.output_steps() if hasattr(a, "output_steps") else {}
    reports = [compare(an, bn, ref[an], reorder(got[bn], np.shape(ref[an])), rtol, atol, steps.get(an))
               for an, bn in pairs]
    shown = {k: {"shape": list(np.shape(v)), "dtype": str(np.asarray(v).dtype)} for k, v in feeds.items()}
    report = Report(_label(src), _label(dst), reports, shown)
    if per_layer:
        from tensorbridge.verification.bisect import first_divergence

        report.first_divergence = first_divergence(src, b, feeds, b_feeds, rtol, atol, source_runner=a)
    return report

