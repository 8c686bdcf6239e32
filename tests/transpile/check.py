"""Translate one corpus class, run source and translation with the same weights, and say how it went."""

from __future__ import annotations

import importlib.util
import inspect
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tensorbridge.errors import UnsupportedError

CORPUS = Path(__file__).with_name("corpus_torch.py")
#: source framework -> the corpus of classes written in it
CORPORA = {"torch": CORPUS, "keras": Path(__file__).with_name("corpus_keras.py"),
           "flax": Path(__file__).with_name("corpus_flax.py")}
TOLERANCE = 1e-5


@dataclass
class Outcome:
    name: str
    status: str  # "equal", "refused", "wrong", "error"
    error: float | None = None
    detail: str = ""


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def calibrated(model):
    """Eval mode with BatchNorm statistics that are not the identity (seeded)."""
    import torch

    gen = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) * 2 - 1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 1.5 + 0.5)
        if isinstance(m, (torch.nn.GroupNorm, torch.nn.LayerNorm, torch.nn.RMSNorm)) and m.weight is not None:
            m.weight.data.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 1 and float(p.abs().max()) < 1e-3:  # LayerScale-like small init
                p.copy_(torch.rand(p.shape, generator=gen))
    return model.eval()


def calibrated_keras(model):
    """Built Keras model whose norm statistics, scales and zero-initialised weights are not the identity (seeded)."""
    rng = np.random.default_rng(1)
    for v in model.weights:
        value = _calibrated(v.name, np.asarray(v), rng, ("moving_mean", "beta", "bias"), ("moving_variance", "gamma"))
        if value is not None:
            v.assign(value)
    return model


def _calibrated(name: str, value: np.ndarray, rng, offsets, scales):
    """A seeded non-trivial value for a weight named as an offset (in [-1, 1]) or a scale (in [0.5, 2]), and for a
    small weight initialised to zeros or ones (LayerScale, class tokens); None to keep it."""
    if name in offsets:
        return rng.uniform(-1, 1, value.shape).astype("float32")
    if name in scales or (value.ndim <= 3 and not value.any()) or np.all(value == 1):
        return rng.uniform(0.5, 2.0, value.shape).astype("float32")
    return None


def calibrated_flax(model):
    """Eval mode with norm statistics, scales and zero-initialised weights that are not the identity (seeded)."""
    from flax import nnx

    rng = np.random.default_rng(1)
    for path, v in nnx.iter_graph(model):
        if not isinstance(v, nnx.Variable) or isinstance(v, nnx.RngState):
            continue
        value = _calibrated(path[-1], np.asarray(v.get_value()), rng, ("mean", "bias"), ("var", "scale", "std"))
        if value is not None:
            v.set_value(value)
    model.eval()
    return model


def inputs(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    shapes = shapes if isinstance(shapes, list) else [shapes]
    if dtype == "int64":
        return [rng.integers(1, 7, size=s).astype("int64") for s in shapes]
    return [rng.standard_normal(s).astype("float32") for s in shapes]


def _outputs(value):
    """The outputs as arrays; None (a loss not computed without targets) stays None."""
    values = value if isinstance(value, (tuple, list)) else [value]
    return [None if v is None else np.asarray(v) for v in values]


def build(module, name: str, args, to: str):
    """An instance of the translated class `name` (a Flax one gets `rngs` when its `__init__` takes them)."""
    cls = getattr(module, name)
    if to == "flax" and "rngs" in inspect.signature(cls.__init__).parameters:
        from flax import nnx

        return cls(*args, rngs=nnx.Rngs(0))
    return cls(*args)


def _source_outputs(source: str, model_cls, args, xs_sets):
    """The source model (seeded, calibrated, inference mode) and its outputs on each input set."""
    if source == "torch":
        import torch

        torch.manual_seed(0)
        src = calibrated(model_cls(*args))
        with torch.no_grad():  # copies: an in-place operation on an input changes the caller's tensor
            return src, [_outputs(src(*[torch.from_numpy(x.copy()) for x in xs])) for xs in xs_sets]
    if source == "flax":
        import jax.numpy as jnp
        from flax import nnx

        src = calibrated_flax(model_cls(*args, rngs=nnx.Rngs(0)))
        return src, [_outputs(src(*[jnp.asarray(x) for x in xs])) for xs in xs_sets]
    import keras

    keras.utils.set_random_seed(0)
    src = model_cls(*args)
    src(*xs_sets[0], training=False)
    calibrated_keras(src)
    return src, [_outputs(src(*xs, training=False)) for xs in xs_sets]


def _target_outputs(to: str, dst, xs):
    """`dst` built (Keras and torch's Lazy layers on a first call) in inference mode, and its outputs on `xs`."""
    if to == "torch":
        import torch

        with torch.no_grad():
            dst(*[torch.from_numpy(x.copy()) for x in xs])
        return dst.eval(), lambda: _outputs(_detached(dst(*[torch.from_numpy(x.copy()) for x in xs])))
    if to == "keras":
        dst(*xs)  # Keras builds its weights on the first call
    else:
        dst.eval()
        dst(*xs)  # the Lazy layers of a translation from Keras build theirs on the first call
    return dst, lambda: _outputs(dst(*xs))


def _detached(value):
    return [v.detach() for v in value] if isinstance(value, (tuple, list)) else value.detach()


def check(name: str, args=(), shapes=(1,), dtype="float32", source_module=None, workdir=None,
          to: str = "keras", source: str = "torch", corpus: Path | None = None) -> Outcome:
    import tensorbridge as tb

    corpus = corpus or CORPORA[source]
    source_module = source_module or load_module(corpus, f"corpus_{source}")
    try:
        text = tb.transpile(corpus.read_text(), to=to, cls=name, filename=corpus.name)
    except UnsupportedError as e:
        return Outcome(name, "refused", detail="; ".join(f"{b.op}: {b.detail}" for b in e.blockers))
    workdir = Path(workdir or tempfile.mkdtemp())
    path = workdir / f"{source}_{to}_{name}.py"
    path.write_text(text)
    try:
        translated = load_module(path, f"{source}_{to}_{name}")
        xs = inputs(shapes, dtype)
        src, (ref, other) = _source_outputs(source, getattr(source_module, name), args,
                                            [xs, inputs(shapes, dtype, seed=1)])
        if all(np.array_equal(a, b) for a, b in zip(ref, other)):
            return Outcome(name, "error", detail="degenerate: the source output does not depend on the input")
        dst, run = _target_outputs(to, build(translated, name, args, to), xs)
        tb.transpile.port_weights(src, dst)
        out = run()
    except Exception as e:  # a translation that does not run is reported, not raised: the benchmark counts it
        return Outcome(name, "error", detail=f"{type(e).__name__}: {e}"[:300])
    shapes = [[getattr(a, "shape", None) for a in values] for values in (out, ref)]
    if len(out) != len(ref) or shapes[0] != shapes[1]:
        return Outcome(name, "wrong", detail=f"shapes {shapes[0]} vs {shapes[1]}")
    err = max(float(np.abs(a - b).max()) / max(float(np.abs(b).max()), 1e-12) for a, b in zip(out, ref)
              if b is not None)
    return Outcome(name, "equal" if err <= TOLERANCE else "wrong", err)
