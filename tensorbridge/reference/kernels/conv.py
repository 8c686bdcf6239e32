"""N-D convolution, transposed convolution and pooling kernels (channels-first).

Written for clarity first: windows come from `sliding_window_view`, and each group is a
batched matrix product, which is fast enough for ImageNet-size models in tests.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def resolve_pads(in_spatial, kernel, strides, dilations, pads, auto_pad, ceil_mode=False):
    """Explicit [begin..., end...] pads for ONNX `auto_pad` modes."""
    n = len(in_spatial)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for i in range(n):
            ek = (kernel[i] - 1) * dilations[i] + 1
            o = -(-in_spatial[i] // strides[i])
            total = max((o - 1) * strides[i] + ek - in_spatial[i], 0)
            small = total // 2
            out.append((small, total - small) if auto_pad == "SAME_UPPER" else (total - small, small))
        return [b for b, _ in out] + [e for _, e in out]
    if auto_pad == "VALID":
        return [0] * (2 * n)
    return list(pads) if pads else [0] * (2 * n)


def _compute_dtype(x):
    """Accumulate in float64: the oracle should be more exact than the runtimes it judges."""
    return np.float64


def conv(x, w, b=None, *, strides=None, pads=None, dilations=None, group=1, auto_pad="NOTSET"):
    """Cross-correlation: x [N, C, *S], w [M, C/group, *K], b [M]."""
    nsp = x.ndim - 2
    kernel = w.shape[2:]
    strides = strides or [1] * nsp
    dilations = dilations or [1] * nsp
    pads = resolve_pads(x.shape[2:], kernel, strides, dilations, pads, auto_pad)
    cdt = _compute_dtype(x)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp]) for i in range(nsp)])  # widened band by band
    ek = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    win = sliding_window_view(xp, ek, axis=tuple(range(2, 2 + nsp)))
    idx = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides) + \
        tuple(slice(None, None, d) for d in dilations)
    win = win[idx]  # N, C, *O, *K
    n, c = x.shape[:2]
    out_sp = win.shape[2:2 + nsp]
    m = w.shape[0]
    wmat = w.astype(cdt, copy=False).reshape(group, m // group, -1).transpose(0, 2, 1)
    out = np.empty((n, m, *out_sp), cdt)
    # the windows are copied into columns a band of output rows at a time, so a large input costs
    # COLUMN_ELEMENTS, not (output positions x kernel size) elements
    row = n * c * math.prod(kernel) * math.prod(out_sp[1:])
    band = max(1, COLUMN_ELEMENTS // max(row, 1))
    for start in range(0, out_sp[0], band):
        part = win[:, :, start:start + band]
        out[:, :, start:start + band] = _correlate(part, wmat, group, nsp)
    if b is not None:
        out = out + b.astype(cdt).reshape((1, m) + (1,) * nsp)
    return out.astype(x.dtype, copy=False)


#: elements of the window columns built at once by `conv`
COLUMN_ELEMENTS = 1 << 24


def _correlate(win, wmat, group: int, nsp: int):
    """win [N, C, *O, *K] windows, wmat [group, Cg*K, Mg] -> [N, M, *O], as one matrix product per group."""
    n, c = win.shape[:2]
    out_sp, kernel = win.shape[2:2 + nsp], win.shape[2 + nsp:]
    o, k = math.prod(out_sp), math.prod(kernel)
    cg, mg = c // group, wmat.shape[2]
    # (group, N*O, Cg*K) @ (group, Cg*K, Mg); the columns are copied and widened to wmat's type in one pass
    order = (1, 0, *range(3, 3 + nsp), 2, *range(3 + nsp, 3 + 2 * nsp))
    cols = win.reshape(n, group, cg, *out_sp, *kernel).transpose(order).astype(wmat.dtype)
    out = np.matmul(cols.reshape(group, n * o, cg * k), wmat)  # group, N*O, Mg
    return out.reshape(group, n, o, mg).transpose(1, 0, 3, 2).reshape(n, group * mg, *out_sp)


def conv_transpose(x, w, b=None, *, strides=None, pads=None, dilations=None, group=1,
                   auto_pad="NOTSET", output_padding=None, output_shape=None):
    """Transposed convolution: x [N, C, *S], w [C, M/group, *K]."""
    nsp = x.ndim - 2
    kernel = w.shape[2:]
    strides = strides or [1] * nsp
    dilations = dilations or [1] * nsp
    output_padding = output_padding or [0] * nsp
    in_sp = x.shape[2:]
    full = [(in_sp[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 + output_padding[i]
            for i in range(nsp)]
    if output_shape:
        total = [full[i] - output_shape[i] for i in range(nsp)]
        if auto_pad == "SAME_UPPER":
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            pads = [t - t // 2 for t in total] + [t // 2 for t in total]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        total = [full[i] - in_sp[i] * strides[i] for i in range(nsp)]
        if auto_pad == "SAME_UPPER":
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            pads = [t - t // 2 for t in total] + [t // 2 for t in total]
    else:
        pads = list(pads) if pads else [0] * (2 * nsp)
    cdt = _compute_dtype(x)
    n, c = x.shape[:2]
    cg = c // group
    mg = w.shape[1]
    out = np.zeros((n, mg * group, *full), dtype=cdt)
    xs = x.astype(cdt, copy=False)
    ws = w.astype(cdt, copy=False)
    for g in range(group):
        xg = xs[:, g * cg:(g + 1) * cg]
        for kk in np.ndindex(*kernel):
            contrib = np.einsum("nc...,cm->nm...", xg, ws[(slice(g * cg, (g + 1) * cg), slice(None)) + kk])
            target = (slice(None), slice(g * mg, (g + 1) * mg)) + tuple(
                slice(kk[i] * dilations[i], kk[i] * dilations[i] + (in_sp[i] - 1) * strides[i] + 1, strides[i])
                for i in range(nsp))
            out[target] += contrib
    # negative pads (output_shape larger than the natural size) extend with zeros
    grow = [(0, 0), (0, 0)] + [(max(-pads[i], 0), max(-pads[i + nsp], 0)) for i in range(nsp)]
    out = np.pad(out, grow)
    crop = (slice(None), slice(None)) + tuple(
        slice(max(pads[i], 0), out.shape[2 + i] - max(pads[i + nsp], 0)) for i in range(nsp))
    out = out[crop]
    if b is not None:
        out = out + b.astype(cdt).reshape((1, -1) + (1,) * nsp)
    return out.astype(x.dtype, copy=False)


def pool_windows(x, kernel, strides, pads, dilations, ceil_mode, fill, extra_fill=None):
    """Windows [N, C, *O, *K] over x padded with `fill` (`extra_fill` past the explicit pads)."""
    nsp = x.ndim - 2
    in_sp = x.shape[2:]
    ek = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    extra = []
    out_sp = []
    for i in range(nsp):
        span = in_sp[i] + pads[i] + pads[i + nsp] - ek[i]
        o = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (o - 1) * strides[i] >= in_sp[i] + pads[i]:
            o -= 1
        out_sp.append(o)
        need = (o - 1) * strides[i] + ek[i] - (in_sp[i] + pads[i] + pads[i + nsp])
        extra.append(max(need, 0))
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp] + extra[i]) for i in range(nsp)]
    if extra_fill is None or extra_fill == fill:
        xp = np.pad(x, width, constant_values=fill)
    else:
        xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp]) for i in range(nsp)], constant_values=fill)
        xp = np.pad(xp, [(0, 0), (0, 0)] + [(0, e) for e in extra], constant_values=extra_fill)
    win = sliding_window_view(xp, ek, axis=tuple(range(2, 2 + nsp)))
    idx = (slice(None), slice(None)) + tuple(slice(0, (out_sp[i] - 1) * strides[i] + 1, strides[i])
                                             for i in range(nsp)) + \
        tuple(slice(None, None, d) for d in dilations)
    return win[idx], width


def max_pool(x, kernel, strides, pads, dilations, ceil_mode, storage_order=0, want_indices=False):
    nsp = x.ndim - 2
    cdt = x.dtype if np.issubdtype(x.dtype, np.integer) or x.dtype == np.float64 else np.float32
    fill = np.iinfo(cdt).min if np.issubdtype(cdt, np.integer) else -np.inf
    win, width = pool_windows(x.astype(cdt, copy=False), kernel, strides, pads, dilations, ceil_mode, fill)
    flat = win.reshape(win.shape[:2 + nsp] + (-1,))
    y = flat.max(axis=-1).astype(x.dtype)
    if not want_indices:
        return y, None
    arg = flat.argmax(axis=-1)
    # map (output position, kernel offset) back to a flat index of the unpadded input
    k_off = np.unravel_index(arg, kernel)
    in_sp = x.shape[2:]
    coords = []
    for i in range(nsp):
        o_idx = np.arange(win.shape[2 + i]).reshape([-1 if j == i else 1 for j in range(nsp)])
        coords.append(o_idx * strides[i] + k_off[i] * dilations[i] - width[2 + i][0])
    n, c = x.shape[:2]
    base = (np.arange(n).reshape(-1, 1, *([1] * nsp)) * c + np.arange(c).reshape(1, -1, *([1] * nsp)))
    if storage_order:
        lin = sum(coords[i] * math.prod(in_sp[:i]) for i in range(nsp))  # column-major order
        lin = lin + base * math.prod(in_sp)
    else:
        lin = np.ravel_multi_index(tuple(np.clip(cd, 0, d - 1) for cd, d in zip(coords, in_sp)), in_sp) \
            if nsp else 0
        lin = lin + base * math.prod(in_sp)
    return y, lin.astype(np.int64)


def avg_pool(x, kernel, strides, pads, dilations, ceil_mode, count_include_pad):
    nsp = x.ndim - 2
    cdt = _compute_dtype(x)
    xf = x.astype(cdt, copy=False)
    win, width = pool_windows(xf, kernel, strides, pads, dilations, ceil_mode, 0)
    total = win.reshape(win.shape[:2 + nsp] + (-1,)).sum(axis=-1)
    # divisor: how many real (or explicitly padded, with count_include_pad) cells each window covers
    ones = np.ones((1, 1) + x.shape[2:], dtype=cdt)
    mwin, _ = pool_windows(ones, kernel, strides, pads, dilations, ceil_mode,
                           1 if count_include_pad else 0, extra_fill=0)
    count = mwin.reshape(mwin.shape[:2 + nsp] + (-1,)).sum(axis=-1)
    out = total / count
    return out.astype(x.dtype)


def lp_pool(x, kernel, strides, pads, dilations, ceil_mode, p):
    nsp = x.ndim - 2
    cdt = _compute_dtype(x)
    win, _ = pool_windows(np.abs(x.astype(cdt)) ** p, kernel, strides, pads, dilations, ceil_mode, 0)
    s = win.reshape(win.shape[:2 + nsp] + (-1,)).sum(axis=-1)
    return (s ** (1.0 / p)).astype(x.dtype)
