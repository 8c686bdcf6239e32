"""Run in the CNTK venv (Python 3.6) by the CNTK runner and the fixture recorder: a CNTK v2 model's outputs as
CNTK 2.7 computes them on the CPU.

    python cntk_child.py MODEL FEEDS.npz OUT.npz

FEEDS.npz holds an array per input, named by the input's uid (a batch; a sequence input as (batch, steps, ...),
every sequence of one length); OUT.npz gets the model's outputs in CNTK's order (o0, o1, ...), sequences stacked.
"""

import sys
import warnings

warnings.filterwarnings("ignore")

import cntk  # noqa: E402
import numpy as np  # noqa: E402


def outputs(model, feeds):
    args = {a: feeds[a.uid] for a in model.arguments}
    results = model.eval(args, outputs=list(model.outputs)) if len(model.outputs) > 1 else \
        {model.outputs[0]: model.eval(args)}
    return [np.stack(results[o]) if isinstance(results[o], list) else np.asarray(results[o]) for o in model.outputs]


if __name__ == "__main__":
    model_file, feeds_file, out_file = sys.argv[1:4]
    cntk.device.try_set_default_device(cntk.device.cpu())
    model = cntk.load_model(model_file)
    with np.load(feeds_file) as given:
        feeds = {k: given[k] for k in given.files}
    np.savez(out_file, **{f"o{i}": out for i, out in enumerate(outputs(model, feeds))})
