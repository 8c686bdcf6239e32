"""Marks in the trace: NNX layer calls and jax.nn activations traced as named calls, so the importer reads
`nnx.BatchNorm` as one BatchNormalization and `jax.nn.gelu` as one Gelu instead of their arithmetic.

While `Marks.installed()` is active, each marked callable runs as `jax.jit(fn)` under a unique name
(`tensorbridge_mark_<n>`); the jaxpr then holds a `jit` equation of that name whose last operands are the
call's tensors (input, then the layer's parameters), and `Marks.calls` says what was called with which
settings. A configuration a mark does not describe (BatchNorm in training mode, softmax over several axes)
is traced unmarked, as plain arithmetic.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect

#: jax.nn activations marked, with the keyword settings their IR op keeps
ACTIVATIONS = {"relu": (), "relu6": (), "silu": (), "swish": (), "sigmoid": (), "gelu": ("approximate",),
               "softmax": ("axis",), "log_softmax": ("axis",), "hard_swish": (), "hard_sigmoid": (),
               "leaky_relu": ("negative_slope",), "elu": ("alpha",)}
#: functions of (x, fixed settings...) marked with every argument after x as a setting: module -> names
FUNCTIONS = {"flax.nnx": ("max_pool", "avg_pool"), "jax.numpy": ("mean",)}
#: NNX layers marked, and the parameters passed as the call's tensors (in this order, absent ones skipped)
LAYERS = dict(zip("Linear Conv BatchNorm LayerNorm RMSNorm Embed".split(),  # nnx class names
                  (("kernel", "bias"), ("kernel", "bias"), ("scale", "bias", "mean", "var"), ("scale", "bias"),
                   ("scale",), ("embedding",))))
PREFIX = "tensorbridge_mark_"


class Marks:
    def __init__(self):
        #: marked call name -> (kind, settings, names of the call's tensors, the layer or None)
        self.calls: dict[str, tuple[str, dict, tuple[str, ...], object]] = {}
        self.originals: dict[str, object] = {}  # jax.nn activations as they were before marking

    def _named(self, kind: str, settings: dict, tensors: tuple[str, ...], layer, fn):
        import jax

        name = f"{PREFIX}{len(self.calls)}"
        self.calls[name] = (kind, settings, tensors, layer)
        fn.__name__ = fn.__qualname__ = name
        return jax.jit(fn)

    @contextlib.contextmanager
    def installed(self):
        import jax
        from flax import nnx

        saved = []
        try:
            self.originals = {kind: getattr(jax.nn, kind) for kind in ACTIVATIONS}
            for kind in ACTIVATIONS:
                for module in (jax.nn, nnx):
                    original = getattr(module, kind, None)
                    if original is not None:
                        saved.append((module, kind, original))
                        setattr(module, kind, self._function(kind, original, ACTIVATIONS[kind]))
            for module_name, names in FUNCTIONS.items():
                module = importlib.import_module(module_name)
                for kind in names:
                    original = getattr(module, kind)
                    saved.append((module, kind, original))
                    setattr(module, kind, self._function(kind, original))
            for kind, tensors in LAYERS.items():
                cls = getattr(nnx, kind)
                saved.append((cls, "__call__", cls.__call__))
                cls.__call__ = self._layer(kind, tensors, cls.__call__)
            saved.append((nnx.RNN, "__call__", nnx.RNN.__call__))
            nnx.RNN.__call__ = self._rnn(nnx.RNN.__call__)
            saved.append((nnx.MultiHeadAttention, "__call__", nnx.MultiHeadAttention.__call__))
            nnx.MultiHeadAttention.__call__ = self._attention(nnx.MultiHeadAttention.__call__)
            yield self
        finally:
            for owner, attr, original in reversed(saved):
                setattr(owner, attr, original)

    def _function(self, kind: str, original, kept: tuple[str, ...] | None = None):
        """`original(x, ...)` marked, its other arguments recorded as settings by name; with `kept`, calls passing
        settings outside it (or an axis that is not one int) run unmarked."""
        parameters = list(inspect.signature(original).parameters)[1:]

        @functools.wraps(original)
        def call(x, *args, **kwargs):
            settings = {**dict(zip(parameters, args)), **kwargs}
            if kept is not None and (set(settings) - set(kept) or not isinstance(settings.get("axis", -1), int)):
                return original(x, *args, **kwargs)
            return self._named(kind, settings, ("x",), None, lambda v: original(v, *args, **kwargs))(x)
        return call

    def _layer(self, kind: str, tensors: tuple[str, ...], original):
        @functools.wraps(original)
        def call(layer, x, *args, **kwargs):
            if args or kwargs or (kind == "BatchNorm" and not layer.use_running_average):
                return original(layer, x, *args, **kwargs)
            present = tuple(t for t in tensors if getattr(layer, t, None) is not None)
            values = [getattr(layer, t)[...] for t in present]
            return self._named(kind, {}, ("x", *present), layer, lambda v, *_: original(layer, v))(x, *values)
        return call

    def _rnn(self, original):
        """nnx.RNN over an nnx.LSTMCell with the standard gates, called on a sequence (and an initial carry)."""
        import jax
        from flax import nnx

        @functools.wraps(original)
        def call(rnn, x, *args, initial_carry=None, **kwargs):
            cell = rnn.cell
            plain = isinstance(cell, nnx.LSTMCell) and cell.gate_fn is self.originals["sigmoid"] and \
                cell.activation_fn in (jax.numpy.tanh, jax.nn.tanh) and not args and \
                set(kwargs) <= {"time_major", "reverse", "keep_order", "return_carry"}
            if not plain:
                return original(rnn, x, *args, initial_carry=initial_carry, **kwargs)
            settings = {k: kwargs.get(k, getattr(rnn, k)) for k in ("time_major", "reverse", "keep_order",
                                                                      "return_carry")}
            gates = [getattr(cell, g) for g in LSTM_GATES]
            tensors = [x] + (list(initial_carry) if initial_carry is not None else []) + \
                [layer.kernel[...] for layer in gates] + [layer.bias[...] for layer in gates[4:]]
            names = ("x", *(("c0", "h0") if initial_carry is not None else ()), *LSTM_GATES, *LSTM_GATES[4:])
            def body(v, *ts):  # the cell's arithmetic over the explicit tensors (nnx.scan cannot run in here)
                return _lstm(v, ts, initial_carry is not None, cell.hidden_features, settings)

            return self._named(type(rnn).__name__, settings, names, rnn, body)(*tensors)
        return call

    def _attention(self, original):
        """nnx.MultiHeadAttention on query (, key (, value)), with a mask and `is_causal` at most: not decoding,
        without dropout, query/key normalisation, grouped key/value heads or another attention function."""
        from flax.nnx.nn.attention import dot_product_attention

        @functools.wraps(original)
        def call(layer, inputs_q, inputs_k=None, inputs_v=None, *, mask=None, is_causal=False, **kwargs):
            plain = not layer.decode and not kwargs.get("decode") and not kwargs.get("sow_weights") \
                and layer.dropout_rate == 0 and not layer.normalize_qk and layer.attention_fn is dot_product_attention \
                and layer.num_kv_heads in (None, layer.num_heads) and inputs_q.ndim == 3
            if not plain:
                return original(layer, inputs_q, inputs_k, inputs_v, mask=mask, is_causal=is_causal, **kwargs)
            key = inputs_q if inputs_k is None else inputs_k
            params = [(f"{p}.{w}", getattr(getattr(layer, p), w)) for p in ("query", "key", "value", "out")
                      for w in ("kernel", "bias") if getattr(getattr(layer, p), w, None) is not None]
            masks = [mask] if mask is not None else []
            names = ("query", "key", "value", *(n for n, _ in params), *(("mask",) if masks else ()))
            settings = {"num_heads": layer.num_heads, "is_causal": bool(is_causal)}

            def body(q, k, v, *rest):
                return original(layer, q, k, v, mask=rest[-1] if masks else None, is_causal=is_causal)

            operands = (inputs_q, key, key if inputs_v is None else inputs_v, *(p[...] for _, p in params), *masks)
            return self._named(type(layer).__name__, settings, names, layer, body)(*operands)
        return call


#: nnx.LSTMCell's input-side then hidden-side dense layers, in the IR's gate order (i o f c)
LSTM_GATES = ("ii", "io", "if_", "ig", "hi", "ho", "hf", "hg")


def _lstm(x, tensors, has_carry: bool, hidden: int, settings: dict):
    """What nnx.RNN(nnx.LSTMCell) computes, from the call's tensors (x, [c0, h0], 8 kernels, 4 biases)."""
    import jax
    import jax.numpy as jnp

    (c, h), rest = (tensors[:2], tensors[2:]) if has_carry else ((None, None), tensors)
    kernels, biases = rest[:8], rest[8:]
    xs = x if settings["time_major"] else jnp.swapaxes(x, 0, 1)
    if c is None:
        c = h = jnp.zeros((*xs.shape[1:-1], hidden), x.dtype)

    def step(carry, x_t):
        c, h = carry
        i, o, f, g = (x_t @ kernels[k] + h @ kernels[k + 4] + biases[k] for k in range(4))
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (c, h), h

    carry, ys = jax.lax.scan(step, (c, h), xs, reverse=settings["reverse"])
    if settings["reverse"] and not settings["keep_order"]:
        ys = jnp.flip(ys, 0)
    ys = ys if settings["time_major"] else jnp.swapaxes(ys, 0, 1)
    return (carry, ys) if settings["return_carry"] else ys
