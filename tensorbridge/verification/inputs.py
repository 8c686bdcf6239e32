"""Seeded inputs made from a model's input signature.

Floats are standard normal; integers are small non-negative values (safe as indices);
booleans are fair coin flips. Symbolic or unknown dims become 1 unless the user gives a
shape. `load_npz` reads user inputs without pickle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes


def make_inputs(specs, seed: int = 0, shapes: dict | None = None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, dt, shape in specs:
        if shapes and name in shapes:
            shape = tuple(shapes[name])
        shape = tuple(d if isinstance(d, int) and d >= 0 else 1 for d in (shape or ()))
        dt = dtypes.dtype(dt) if dt is not None else np.dtype(np.float32)
        if dtypes.is_float(dt):
            arr = rng.standard_normal(shape).astype(np.float32).astype(dt)
        elif dt == np.bool_:
            arr = rng.random(shape) < 0.5
        elif dtypes.name(dt) == "string":
            arr = np.array(["tensorbridge"] * int(np.prod(shape)), dtype=object).reshape(shape)
        else:
            arr = rng.integers(0, 8, size=shape).astype(dt)
        out[name] = arr
    return out


def load_npz(path) -> dict[str, np.ndarray]:
    path = Path(path)
    if not path.exists():
        raise ModelError(f"no such inputs file: {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (ValueError, OSError) as e:
        raise ModelError(f"cannot read inputs from {path}: {e}") from None
