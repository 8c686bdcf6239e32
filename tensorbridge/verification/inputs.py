"""Inputs for verification: seeded ones made from a model's input signature, or the user's.

Floats are standard normal; integers are small non-negative values (safe as indices, below the rows of a table
an input indexes: a token-type embedding of 2); booleans
are fair coin flips. Dims the model leaves open take the user's `--input-shape`, else a size the
model itself allows: a batch dim is 1, and the other open dims take the smallest of 8, 16, 32, ...
for which the model's shape inference gives every value a non-empty shape (so pools and strided
convolutions have something to work on), or, where the source's runtime refuses that size (a detector's
upsampled features concatenated with finer ones need a multiple of 32), the next that it runs (the harness
asks); when none does, the user is asked for `--input-shape`, naming the input and the dim. `load_npz` reads user
inputs without pickle.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes

BATCH_NAMES = {"batch", "batch_size", "n", "N", "b", "B"}
LADDER = (8, 16, 32, 64, 128, 256, 512, 1024)


def make_inputs(specs, seed: int = 0, shapes: dict | None = None, limits: dict | None = None) -> dict[str, np.ndarray]:
    """Seeded inputs for (name, dtype, shape) specs; `limits`: an integer input's values stay below its limit."""
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
            arr = rng.integers(0, max(1, min(8, (limits or {}).get(name, 8))), size=shape).astype(dt)
        out[name] = arr
    return out


def varied(feeds: dict, seed: int) -> dict[str, np.ndarray]:
    """Other inputs like `feeds`: floats, booleans and strings drawn afresh; integers the given values shuffled
    (integer inputs are often lengths, indices or token ids, whose valid range only the given values respect)."""
    rng = np.random.default_rng(seed)
    fresh = make_inputs([(n, np.asarray(v).dtype, np.shape(v)) for n, v in feeds.items()], seed)
    out = {}
    for name, value in feeds.items():
        value = np.asarray(value)
        integer = value.dtype.kind in "iu"
        out[name] = rng.permutation(value.ravel()).reshape(value.shape) if integer else fresh[name]
    return out


def open_dims(specs) -> list[tuple[str, int]]:
    return [(name, axis) for name, _, shape in specs for axis, d in enumerate(shape or ())
            if not isinstance(d, int) or d < 0]


def resolve_shapes(specs, user: dict | None, graph_of, above: int = 0) -> dict[str, list[int]]:
    """Concrete shapes for inputs with open dims: the user's, else sizes the model allows (see the module
    doc), larger than `above`. `graph_of()` loads the model into the IR, only when a size must be searched for."""
    shapes = {name: list(user[name]) for name, _, _ in specs if user and name in user}
    todo = [(n, a) for n, a in open_dims(specs) if n not in shapes]
    if not todo:
        return shapes
    sized = {n: [d if isinstance(d, int) and d >= 0 else None for d in shape] for n, _, shape in specs
             if n not in shapes and any(t[0] == n for t in todo)}
    free = []
    for name, axis in todo:
        symbol = dict((n, s) for n, _, s in specs)[name][axis]
        if axis == 0 and (symbol is None or str(symbol) in BATCH_NAMES):
            sized[name][axis] = 1
        else:
            free.append((name, axis))
    if free:
        size = _smallest_valid(graph_of, shapes, sized, free, above)
        if size is None:
            where = ", ".join(f"{n} dim {a}" for n, a in free)
            example = " ".join(f"--input-shape {n}=" + ",".join("?" if d is None else str(d) for d in sized[n])
                               for n in dict.fromkeys(n for n, _ in free))
            raise ModelError(f"cannot choose sizes for the open dims of the inputs ({where}) that the model "
                             f"accepts: give them, e.g. {example} (with ? replaced by sizes)")
        for name, axis in free:
            sized[name][axis] = size
    shapes.update(sized)
    return shapes


def _smallest_valid(graph_of, fixed, sized, free, above: int = 0) -> int | None:
    """The smallest size on LADDER above `above` that, given to every free dim, leaves every value of the model
    non-empty."""
    ladder = [size for size in LADDER if size > above]
    try:
        graph = graph_of()
    except Exception:  # noqa: BLE001 - a model we cannot read into the IR still runs: take the first size
        return ladder[0] if ladder else None
    from tensorbridge.ir.graph import clone
    from tensorbridge.passes.infer_shapes import set_input_shapes

    for size in ladder:
        candidate = {**fixed, **{n: [size if (n, a) in free else d for a, d in enumerate(dims)]
                                 for n, dims in sized.items()}}
        g = clone(graph)
        try:
            set_input_shapes(g, {k: v for k, v in candidate.items() if k in {x.name for x in g.inputs}})
        except Exception:  # noqa: BLE001 - a size the shape rules reject
            continue
        if all(v.shape is None or all(not isinstance(d, int) or d > 0 for d in v.shape)
               for node in g.all_nodes() for v in node.outputs):
            return size
    return None


def load_npz(path) -> dict[str, np.ndarray]:
    path = Path(path)
    if not path.exists():
        raise ModelError(f"no such inputs file: {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (ValueError, OSError) as e:
        raise ModelError(f"cannot read inputs from {path}: {e}") from None
