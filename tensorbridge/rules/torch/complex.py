"""PyTorch's complex tensors, read as the IR's (real, imaginary) pairs: a trailing axis of 2, as DFT takes and
gives them (tensorbridge/ops/signal.py).

An op with a complex operand or result is read by the rules of namespace `complex` here, never by its real rule
(which would compute on the pair as if it held two reals); an op without one is a blocker. FNet's token mixing
(`fftn(x).real`), Autoformer's autocorrelation (rfft, conj, a product, irfft) and Vocos-style decoders (polar,
irfft) are made of these ops. A model taking or returning a complex tensor is refused: no target's tensors are
complex; `torch.view_as_real` gives the pair.
"""

from __future__ import annotations

import functools

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.rules.torch.base import R
from tensorbridge.rules.torch.shape import index_vector

complex_aten = functools.partial(R.imports, kind="complex")
#: what a model taking or returning a complex tensor is told
BOUNDARY = "complex tensors at the model's boundary: no target holds them; take and return " \
           "torch.view_as_real(...) (the (real, imaginary) pair)"


def is_complex(arg) -> bool:
    """Whether an fx argument (or node) is a complex tensor."""
    val = getattr(arg, "meta", {}).get("val") if hasattr(arg, "op") else None
    return getattr(getattr(val, "dtype", None), "is_complex", False)


def touches_complex(node) -> bool:
    """Whether an fx call has a complex operand or result."""
    operands = [a for a in (*node.args, *node.kwargs.values()) for a in (a if isinstance(a, (list, tuple)) else [a])]
    return is_complex(node) or any(is_complex(a) for a in operands)


def real_view(array: np.ndarray) -> np.ndarray:
    """A weight as the IR holds it: a complex one as its pair."""
    return np.stack([array.real, array.imag], axis=-1) if np.iscomplexobj(array) else array


# -- the pair's parts ----------------------------------------------------------------------------------------------
def _last(imp):
    return imp.const([-1], np.int64)


def parts(imp, pair, tag: str = ""):
    """(real, imaginary) of a pair."""
    return tuple(imp.emit("Gather", [pair, imp.const(i, np.int64)], {"axis": -1}, suffix=f"{tag}{part}")
                 for i, part in enumerate(("real", "imag")))


def pair(imp, real, imag, tag: str = "pair"):
    """The pair of two real tensors of one shape."""
    return imp.emit("Concat", [imp.emit("Unsqueeze", [p, _last(imp)], suffix=f"{tag}_{i}")
                               for i, p in enumerate((real, imag))], {"axis": -1}, suffix=tag)


def _part_type(imp):
    """The type of the parts of the current op's complex result."""
    return np.float64 if imp.meta().dtype.itemsize == 16 else np.float32


def _conjugate(imp, pair_value, tag: str = "conj"):
    """The pair with its imaginary part negated."""
    return imp.emit("Mul", [pair_value, imp.const([1.0, -1.0], pair_value.dtype)], suffix=tag)


def _polar(imp, magnitude, angle):
    """magnitude * (cos(angle), sin(angle))."""
    return pair(imp, imp.emit("Mul", [magnitude, imp.emit("Cos", [angle], suffix="cos")], suffix="re"),
                imp.emit("Mul", [magnitude, imp.emit("Sin", [angle], suffix="sin")], suffix="im"))


def _operand(imp, arg):
    """An operand as a pair, or ("real", value) for a real tensor or Python number, given a last axis of 1 so that
    it broadcasts against a pair."""
    if is_complex(arg):
        return imp.value(arg)
    if isinstance(arg, complex):
        return imp.const([arg.real, arg.imag], dtype=_part_type(imp))
    if not hasattr(arg, "op"):
        return "real", imp.const([arg], dtype=_part_type(imp))
    return "real", imp.emit("Unsqueeze", [imp.value(arg), _last(imp)], suffix="widened")


def _as_pair(imp, operand):
    """A pair from an operand: a real one gains a zero imaginary part."""
    if not isinstance(operand, tuple):
        return operand
    real = operand[1]
    zero = imp.emit("Expand", [imp.const(np.zeros(1, real.dtype)), imp.emit("Shape", [real], suffix="shape")],
                    suffix="zero")
    return imp.emit("Concat", [real, zero], {"axis": -1}, suffix="as_pair")


# -- entering and leaving complex tensors ---------------------------------------------------------------------------
@complex_aten("_to_copy", "to", produces=("Cast", "Concat", "Unsqueeze", "Expand", "Shape"))
def read_to_complex(imp, node, x, *args, **kw):
    """A real tensor made complex gains a zero imaginary part; complex64 <-> complex128 casts the pair."""
    if not is_complex(node):
        raise ModelError(f"{node.name}: a complex tensor cast to a real type (PyTorch drops the imaginary part: "
                         "write .real to say so)")
    v = imp.value(x) if is_complex(x) else _as_pair(imp, _operand(imp, x))
    target = np.dtype(_part_type(imp))
    return v if v.dtype == target else imp.emit("Cast", [v], {"to": target.name}, suffix="cast")


@complex_aten("view_as_real", "view_as_complex", "clone", "contiguous", "alias", "detach", "lift_fresh_copy",
              "resolve_conj", "resolve_neg", produces=())
def read_pair_view(imp, node, x, *rest, **kw):
    """A view of the pair as it is: the IR's complex tensor is already its real view."""
    return imp.value(x)


@complex_aten("real", "imag", produces="Gather")
def read_part(imp, node, x):
    return parts(imp, imp.value(x))[node.target.__name__.startswith("imag")]


@complex_aten("complex", produces=("Concat", "Unsqueeze"))
def read_complex(imp, node, real, imag):
    return pair(imp, imp.value(real), imp.value(imag))


@complex_aten("polar", produces=("Cos", "Sin", "Mul", "Concat", "Unsqueeze"))
def read_polar(imp, node, magnitude, angle):
    return _polar(imp, imp.value(magnitude), imp.value(angle))


# -- arithmetic -------------------------------------------------------------------------------------------------------
@complex_aten("_conj", "conj", "conj_physical", produces="Mul")
def read_conj(imp, node, x):
    return _conjugate(imp, imp.value(x))


@complex_aten("neg", produces="Neg")
def read_neg(imp, node, x):
    return imp.emit("Neg", [imp.value(x)], suffix="neg")


@complex_aten("exp", produces=("Exp", "Cos", "Sin", "Mul", "Gather", "Concat", "Unsqueeze"))
def read_exp(imp, node, x):
    """exp(a + bi) = exp(a) (cos b + i sin b): `magnitude * torch.exp(1j * phase)`."""
    real, imag = parts(imp, imp.value(x))
    return _polar(imp, imp.emit("Exp", [real], suffix="exp"), imag)


def _norm(imp, x, keepdims: int):
    """|x|^2: the sum of the squared parts."""
    return imp.emit("ReduceSum", [imp.emit("Mul", [x, x], suffix="squares"), _last(imp)], {"keepdims": keepdims},
                    suffix="norm")


@complex_aten("abs", produces=("Mul", "ReduceSum", "Sqrt"))
def read_abs(imp, node, x):
    return imp.emit("Sqrt", [_norm(imp, imp.value(x), 0)])


@complex_aten("add", "sub", produces=("Add", "Sub", "Mul", "Concat", "Expand", "Shape"))
def read_add(imp, node, a, b, alpha=1):
    """Sums add parts; a real operand adds to the real part only."""
    left, right = (_as_pair(imp, _operand(imp, arg)) for arg in (a, b))
    if alpha != 1:
        right = imp.emit("Mul", [right, imp.const(np.float32(alpha))], suffix="alpha")
    return imp.emit("Sub" if node.target.__name__.startswith("sub") else "Add", [left, right], suffix="sum")


def _product(imp, left, right):
    """(a + bi)(c + di) = (ac - bd) + (ad + bc)i."""
    (ar, ai), (br, bi) = parts(imp, left, "a_"), parts(imp, right, "b_")
    real = imp.emit("Sub", [imp.emit("Mul", [ar, br], suffix="rr"), imp.emit("Mul", [ai, bi], suffix="ii")],
                    suffix="re")
    imag = imp.emit("Add", [imp.emit("Mul", [ar, bi], suffix="ri"), imp.emit("Mul", [ai, br], suffix="ir")],
                    suffix="im")
    return pair(imp, real, imag)


@complex_aten("mul", produces=("Mul", "Sub", "Add", "Gather", "Concat", "Unsqueeze"))
def read_mul(imp, node, a, b):
    """A complex product; a real factor scales both parts."""
    left, right = (_operand(imp, arg) for arg in (a, b))
    if isinstance(left, tuple) or isinstance(right, tuple):
        return imp.emit("Mul", [left[1] if isinstance(left, tuple) else left,
                                right[1] if isinstance(right, tuple) else right], suffix="scaled")
    return _product(imp, left, right)


@complex_aten("div", produces=("Div", "Mul", "Sub", "Add", "Gather", "Concat", "Unsqueeze", "ReduceSum", "Expand",
                               "Shape"))
def read_div(imp, node, a, b, rounding_mode=None):
    """A complex quotient, a * conj(b) / |b|^2; a real divisor divides both parts."""
    if rounding_mode is not None:
        raise ModelError(f"{node.name}: a rounded division of complex numbers has no meaning")
    left, right = _as_pair(imp, _operand(imp, a)), _operand(imp, b)
    if isinstance(right, tuple):
        return imp.emit("Div", [left, right[1]], suffix="quotient")
    return imp.emit("Div", [_product(imp, left, _conjugate(imp, right)), _norm(imp, right, 1)], suffix="quotient")


# -- Fourier transforms ------------------------------------------------------------------------------------------------
#: torch's `normalization` codes -> the power of 1/n it scales by: none, 1 / sqrt(n), 1 / n
_NORM_POWER = {0: 0.0, 1: 0.5, 2: 1.0}


def _dft(imp, signal, axis: int, inverse: bool = False, onesided: bool = False):
    return imp.emit("DFT", [signal, None, imp.const(axis, np.int64)],
                    {"inverse": int(inverse), "onesided": int(onesided)}, suffix=f"dft{axis}")


def _normalized(imp, y, sizes, normalization: int, inverse: bool):
    """`y` scaled from the DFT's convention (an inverse divides by n) to torch's `normalization` over the
    transformed sizes (ints or run-time sizes)."""
    power = _NORM_POWER[int(normalization)] - (1.0 if inverse else 0.0)
    if power == 0:
        return y
    if all(isinstance(s, int) for s in sizes):
        scale = imp.const(np.float32(float(np.prod(sizes)) ** -power))
    else:
        count = imp.value(sizes[0])
        for s in sizes[1:]:
            count = imp.emit("Mul", [count, imp.value(s)], suffix="count")
        count = imp.emit("Cast", [count], {"to": "float32"}, suffix="count_float")
        scale = imp.emit("Pow", [count, imp.const(np.float32(-power))], suffix="scale")
    return imp.emit("Mul", [y, scale], suffix="normalized")


def _sizes(x, dims):
    return [x.meta["val"].shape[d] for d in dims]


@complex_aten("_fft_r2c", produces=("DFT", "Unsqueeze", "Mul"))
def read_fft_r2c(imp, node, x, dim, normalization, onesided):
    """rfftn / fftn of a real tensor: the last transformed axis first (halved when onesided), then the others."""
    dims = [int(d) for d in dim]
    y = _dft(imp, imp.emit("Unsqueeze", [imp.value(x), _last(imp)], suffix="signal"), dims[-1],
             onesided=bool(onesided))
    for d in dims[:-1]:
        y = _dft(imp, y, d)
    return _normalized(imp, y, _sizes(x, dims), normalization, inverse=False)


@complex_aten("_fft_c2c", produces=("DFT", "Mul"))
def read_fft_c2c(imp, node, x, dim, normalization, forward):
    dims = [int(d) for d in dim]
    y = imp.value(x)
    for d in dims:
        y = _dft(imp, y, d, inverse=not forward)
    return _normalized(imp, y, _sizes(x, dims), normalization, inverse=not forward)


@complex_aten("_fft_c2r", produces=("DFT", "Gather", "Mul", "Concat"))
def read_fft_c2r(imp, node, x, dim, normalization, last_dim_size):
    """irfftn: inverse transforms of every axis but the last, then the last axis's n // 2 + 1 bins completed to
    n by Hermitian symmetry (bin n - k is bin k's conjugate) and inverted; the real part is the result (the
    imaginary parts of the first and middle bins drop out, as in torch)."""
    dims = [int(d) for d in dim]
    y = imp.value(x)
    for d in dims[:-1]:
        y = _dft(imp, y, d, inverse=True)
    n, last = last_dim_size, dims[-1]
    bins = _sizes(x, [last])[0]
    if not isinstance(n, int) or bins != n // 2 + 1:
        raise ModelError(f"{node.name}: an inverse real FFT of {n} samples from {bins} bins: only n // 2 + 1 bins "
                         "of a fixed n are read")
    mirrored = list(range((n + 1) // 2 - 1, 0, -1))
    if mirrored:
        tail = imp.emit("Gather", [y, imp.const(mirrored, np.int64)], {"axis": last}, suffix="mirrored")
        tail = _conjugate(imp, tail, "conjugated")
        y = imp.emit("Concat", [y, tail], {"axis": last}, suffix="spectrum")
    real = parts(imp, _dft(imp, y, last, inverse=True), "signal_")[0]
    return _normalized(imp, real, _sizes(x, dims[:-1]) + [n], normalization, inverse=True)


# -- moving complex tensors: the same op on the pair, its axes counted before the pair's last axis ----------------
def _axis(x, dim) -> int:
    return int(dim) % len(x.meta["val"].shape)


@complex_aten("slice", produces="Slice")
def read_slice(imp, node, x, dim=0, start=None, end=None, step=1):
    bounds = [index_vector(imp, b) for b in (0 if start is None else start, 2**63 - 1 if end is None else end)]
    return imp.emit("Slice", [imp.value(x), *bounds, imp.const([_axis(x, dim)], np.int64),
                              imp.const([step], np.int64)], suffix="slice")


@complex_aten("select", produces="Gather")
def read_select(imp, node, x, dim, index):
    return imp.emit("Gather", [imp.value(x), imp.const(index, np.int64)], {"axis": _axis(x, dim)}, suffix="select")


@complex_aten("unsqueeze", produces="Unsqueeze")
def read_unsqueeze(imp, node, x, dim):
    return imp.emit("Unsqueeze", [imp.value(x), imp.const([int(dim) % (imp.rank(x) + 1)], np.int64)],
                    suffix="unsqueeze")


@complex_aten("permute", "transpose", produces="Transpose")
def read_permute(imp, node, x, *dims):
    rank = imp.rank(x)
    if node.target.__name__.startswith("transpose"):
        perm = list(range(rank))
        a, b = _axis(x, dims[0]), _axis(x, dims[1])
        perm[a], perm[b] = perm[b], perm[a]
    else:
        perm = [_axis(x, d) for d in dims[0]]
    return imp.emit("Transpose", [imp.value(x)], {"perm": [*perm, rank]}, suffix="permute")


@complex_aten("view", "reshape", "_unsafe_view", produces="Reshape")
def read_reshape(imp, node, x, *args):
    shape = imp.emit("Concat", [imp.out_shape(), imp.const([2], np.int64)], {"axis": 0}, suffix="shape")
    return imp.emit("Reshape", [imp.value(x), shape], suffix="reshape")


@complex_aten("cat", produces="Concat")
def read_cat(imp, node, tensors, dim=0):
    if not all(is_complex(t) for t in tensors):
        raise ModelError(f"{node.name}: complex and real tensors concatenated")
    return imp.emit("Concat", [imp.value(t) for t in tensors], {"axis": _axis(tensors[0], dim)}, suffix="cat")
