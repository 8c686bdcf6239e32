"""Run in the CNTK venv (Python 3.6) by the CNTK runner and the fixture recorder: a CNTK v2 model's outputs as
CNTK 2.7 computes them on the CPU.

    python cntk_child.py MODEL FEEDS.npz OUT.npz [OUTPUT_UID ...]

FEEDS.npz holds an array per input, named by the input's uid (a batch; a sequence input as (batch, steps, ...),
every sequence of one length); OUT.npz gets the model's outputs in CNTK's order (o0, o1, ...), or the outputs named
by uid (functions outside blocks, and blocks), sequences stacked.
"""

import sys
import warnings

warnings.filterwarnings("ignore")

import cntk  # noqa: E402
import numpy as np  # noqa: E402


def outputs(model, feeds, wanted=None):
    """The values of `wanted` (output variables; default: the model's outputs), in that order."""
    wanted = list(model.outputs) if wanted is None else wanted
    model = cntk.combine(wanted)
    args = {a: feeds[a.uid] for a in model.arguments}
    results = model.eval(args, outputs=wanted) if len(wanted) > 1 else {wanted[0]: model.eval(args)}
    return [np.stack(results[o]) if isinstance(results[o], list) else np.asarray(results[o]) for o in wanted]


def by_uid(model, uids):
    """The output variables of the given uids, among the functions outside blocks (and the blocks)."""
    found = {}
    for f in cntk.logging.graph.depth_first_search(model, lambda f: isinstance(f, cntk.Function), depth=0):
        for out in f.outputs:
            found[out.uid] = out
    return [found[uid] for uid in uids]


if __name__ == "__main__":
    model_file, feeds_file, out_file = sys.argv[1:4]
    cntk.device.try_set_default_device(cntk.device.cpu())
    model = cntk.load_model(model_file)
    with np.load(feeds_file) as given:
        feeds = {k: given[k] for k in given.files}
    wanted = by_uid(model, sys.argv[4:]) if sys.argv[4:] else None
    np.savez(out_file, **{f"o{i}": out for i, out in enumerate(outputs(model, feeds, wanted))})
