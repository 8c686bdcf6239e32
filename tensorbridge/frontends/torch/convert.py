"""ATen -> IR converters that a table row cannot express (named in `rules/torch.py`).

Each takes (importer, fx_node, *aten_args, **aten_kwargs) with the ATen schema's argument
names and returns the IR value(s) for the node's output(s).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ir.value import Value
from tensorbridge.ops.infer import norm_axis


def _ints(v, n=None):
    if isinstance(v, int):
        return [v] * (n or 1)
    return [int(x) for x in v]


def _const_array(imp, arg):
    """The constant data behind an fx argument, or None."""
    if hasattr(arg, "name"):
        v = imp.env.get(arg.name)
        return getattr(v, "const", None)
    return None


# -- convolution and dense --------------------------------------------------------------------
def convolution(imp, node, input, weight, bias=None, stride=1, padding=0, dilation=1, *rest, **kw):
    name = node.target.__name__.split(".")[0]
    if name in ("convolution", "_convolution"):
        transposed, output_padding, groups = rest[0], rest[1], rest[2]
        if transposed:
            return conv_transpose(imp, node, input, weight, bias, stride, padding, output_padding, groups, dilation)
    else:
        groups = rest[0] if rest else kw.get("groups", 1)
    nsp = imp.rank(input) - 2
    attrs = {"strides": _ints(stride, nsp), "dilations": _ints(dilation, nsp), "group": int(groups)}
    if isinstance(padding, str):
        attrs["auto_pad"] = {"same": "SAME_UPPER", "valid": "VALID"}[padding]
    else:
        p = _ints(padding, nsp)
        attrs["pads"] = p + p
    inputs = [imp.value(input), imp.value(weight)] + ([imp.value(bias)] if bias is not None else [])
    return imp.emit("Conv", inputs, attrs)


def conv_transpose(imp, node, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                   dilation=1):
    nsp = imp.rank(input) - 2
    p = _ints(padding, nsp)
    attrs = {"strides": _ints(stride, nsp), "dilations": _ints(dilation, nsp), "group": int(groups),
             "pads": p + p, "output_padding": _ints(output_padding, nsp)}
    inputs = [imp.value(input), imp.value(weight)] + ([imp.value(bias)] if bias is not None else [])
    return imp.emit("ConvTranspose", inputs, attrs)


def linear(imp, node, input, weight, bias=None):
    w = _const_array(imp, weight)
    if w is not None and w.ndim == 2:
        wt = imp.graph.add_constant(imp.env[weight.name].name + ".T", np.ascontiguousarray(w.T))
        wt.meta["transposed_from"] = imp.env[weight.name].name
    else:
        wt = imp.emit("Transpose", [imp.value(weight)], {"perm": [1, 0]}, suffix="weight_t")
    inputs = [imp.value(input), wt] + ([imp.value(bias)] if bias is not None else [])
    return imp.emit("Dense", inputs)


def matmul(imp, node, a, b):
    return imp.emit("MatMul", [imp.value(a), imp.value(b)])


def addmm(imp, node, bias, m1, m2, beta=1, alpha=1):
    return imp.emit("Gemm", [imp.value(m1), imp.value(m2), imp.value(bias)], {"alpha": float(alpha),
                                                                            "beta": float(beta)})


def baddbmm(imp, node, base, b1, b2, beta=1, alpha=1):
    prod = imp.emit("MatMul", [imp.value(b1), imp.value(b2)], suffix="bmm")
    if alpha != 1:
        prod = imp.emit("Mul", [prod, imp.const(alpha, like=prod)], suffix="alpha")
    basev = imp.value(base)
    if beta != 1:
        basev = imp.emit("Mul", [basev, imp.const(beta, like=basev)], suffix="beta")
    return imp.emit("Add", [basev, prod])


def einsum(imp, node, equation, tensors, path=None):
    return imp.emit("Einsum", [imp.value(t) for t in tensors], {"equation": equation})


# -- normalisation -------------------------------------------------------------------------------
def _ones(imp, n, like):
    return imp.const(np.ones(n), like=like)


def batch_norm(imp, node, input, weight, bias, running_mean, running_var, *rest):
    name = node.target.__name__.split(".")[0]
    if name == "batch_norm":
        training, momentum, eps = rest[0], rest[1], rest[2]
        if training:
            raise ModelError(f"{node.name}: BatchNorm in training mode; call model.eval() before converting")
    else:  # _native_batch_norm_legit_no_training(input, weight, bias, mean, var, momentum, eps)
        momentum, eps = rest[0], rest[1]
    x = imp.value(input)
    c = imp.meta(input).shape[1]
    w = imp.value(weight) if weight is not None else _ones(imp, c, x)
    b = imp.value(bias) if bias is not None else imp.const(np.zeros(c), like=x)
    y = imp.emit("BatchNormalization", [x, w, b, imp.value(running_mean), imp.value(running_var)],
                 {"epsilon": float(eps), "momentum": 1.0 - float(momentum)})
    return y if name == "batch_norm" else (y, None, None)


def layer_norm(imp, node, input, normalized_shape, weight=None, bias=None, eps=1e-5, *rest):
    x = imp.value(input)
    n = len(normalized_shape)
    scale = imp.value(weight) if weight is not None else _ones(imp, list(normalized_shape), x)
    inputs = [x, scale] + ([imp.value(bias)] if bias is not None else [])
    y = imp.emit("LayerNormalization", inputs, {"axis": -n, "epsilon": float(eps)})
    return y if node.target.__name__.startswith("layer_norm") else (y, None, None)


def group_norm(imp, node, input, num_groups, weight=None, bias=None, eps=1e-5, *rest):
    x = imp.value(input)
    c = imp.meta(input).shape[1]
    w = imp.value(weight) if weight is not None else _ones(imp, c, x)
    b = imp.value(bias) if bias is not None else imp.const(np.zeros(c), like=x)
    return imp.emit("GroupNormalization", [x, w, b], {"num_groups": int(num_groups), "epsilon": float(eps)})


# -- activations ---------------------------------------------------------------------------------
def _clip(imp, x, lo, hi):
    xv = imp.value(x)
    lov = None if lo is None else imp.value(lo, like=x)
    hiv = None if hi is None else imp.value(hi, like=x)
    return imp.emit("Clip", [xv, lov, hiv])


def relu6(imp, node, x):
    return _clip(imp, x, 0.0, 6.0)


def hardtanh(imp, node, x, min_val=-1.0, max_val=1.0):
    return _clip(imp, x, min_val, max_val)


def clamp(imp, node, x, min=None, max=None):
    return _clip(imp, x, min, max)


def gelu(imp, node, x, approximate="none"):
    return imp.emit("Gelu", [imp.value(x)], {"approximate": approximate})


def hardsigmoid(imp, node, x):
    return imp.emit("HardSigmoid", [imp.value(x)], {"alpha": 1.0 / 6, "beta": 0.5})


def leaky_relu(imp, node, x, negative_slope=0.01):
    return imp.emit("LeakyRelu", [imp.value(x)], {"alpha": float(negative_slope)})


def elu(imp, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if scale != 1 or input_scale != 1:
        raise ModelError(f"{node.name}: elu with scale/input_scale is not supported")
    return imp.emit("Elu", [imp.value(x)], {"alpha": float(alpha)})


def rsqrt(imp, node, x):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", [imp.value(x)], suffix="sqrt")])


def softmax(imp, node, x, dim, *rest):
    op = "LogSoftmax" if "log" in node.target.__name__ else "Softmax"
    return imp.emit(op, [imp.value(x)], {"axis": int(dim)})


def not_equal(imp, node, a, b):
    return imp.emit("Not", [imp.emit("Equal", [imp.value(a, like=b), imp.value(b, like=a)], suffix="eq")])


def floor_divide(imp, node, a, b):
    q = imp.emit("Div", [imp.value(a, like=b), imp.value(b, like=a)], suffix="div")
    return q if np.issubdtype(q.dtype, np.integer) else imp.emit("Floor", [q])


def rsub(imp, node, a, b, alpha=1):
    bv = imp.value(b, like=a)
    av = imp.value(a)
    if alpha != 1:
        av = imp.emit("Mul", [av, imp.const(alpha, like=av)], suffix="alpha")
    return imp.emit("Sub", [bv, av])


# -- shape ---------------------------------------------------------------------------------------
def reshape(imp, node, x, *args):
    return imp.emit("Reshape", [imp.value(x), imp.out_shape()])


def expand(imp, node, x, *args, **kw):
    return imp.emit("Expand", [imp.value(x), imp.out_shape()])


def squeeze(imp, node, x, dim=None):
    if dim is None:
        return imp.emit("Squeeze", [imp.value(x)])
    dims = _ints(dim)
    shape = imp.meta(x).shape
    dims = [d for d in dims if shape[d] == 1]  # torch ignores non-1 dims
    if not dims:
        return imp.value(x)
    return imp.emit("Squeeze", [imp.value(x), imp.const(dims, dtype=np.int64)])


def unsqueeze(imp, node, x, dim):
    return imp.emit("Unsqueeze", [imp.value(x), imp.const([dim], dtype=np.int64)])


def permute(imp, node, x, dims):
    r = imp.rank(x)
    return imp.emit("Transpose", [imp.value(x)], {"perm": [norm_axis(d, r) for d in dims]})


def transpose(imp, node, x, dim0=0, dim1=1):
    r = imp.rank(x)
    if r < 2:
        return imp.value(x)
    perm = list(range(r))
    a, b = norm_axis(dim0, r), norm_axis(dim1, r)
    perm[a], perm[b] = perm[b], perm[a]
    return imp.emit("Transpose", [imp.value(x)], {"perm": perm})


def cat(imp, node, tensors, dim=0):
    vals = [imp.value(t) for t in tensors if 0 not in imp.meta(t).shape or len(tensors) == 1]
    return imp.emit("Concat", vals, {"axis": int(dim)})


def stack(imp, node, tensors, dim=0):
    r = imp.rank(tensors[0]) + 1
    axis = norm_axis(dim, r)
    parts = [imp.emit("Unsqueeze", [imp.value(t), imp.const([axis], dtype=np.int64)], suffix=f"unsqueeze{i}")
             for i, t in enumerate(tensors)]
    return imp.emit("Concat", parts, {"axis": axis})


def slice(imp, node, x, dim=0, start=None, end=None, step=1):
    start = 0 if start is None else start
    end = 2**63 - 1 if end is None else end
    if isinstance(start, int) and isinstance(end, int) and start == 0 and end >= 2**62 and step == 1:
        return imp.value(x)
    return imp.emit("Slice", [imp.value(x), _index_vec(imp, start), _index_vec(imp, end),
                              imp.const([dim], dtype=np.int64), imp.const([step], dtype=np.int64)])


def _index_vec(imp, v):
    if isinstance(v, int):
        return imp.const([v], dtype=np.int64)
    out = imp.value(v)
    return out if out.shape == (1,) else imp.emit("Reshape", [out, imp.const([1], dtype=np.int64)], suffix="idx")


def select(imp, node, x, dim, index):
    return imp.emit("Gather", [imp.value(x), imp.const(index, dtype=np.int64)], {"axis": int(dim)})


def index_select(imp, node, x, dim, index):
    return imp.emit("Gather", [imp.value(x), imp.value(index)], {"axis": int(dim)})


def embedding(imp, node, weight, indices, *rest):
    return imp.emit("Gather", [imp.value(weight), imp.value(indices)], {"axis": 0})


def gather(imp, node, x, dim, index, sparse_grad=False):
    return imp.emit("GatherElements", [imp.value(x), imp.value(index)], {"axis": int(dim)})


def repeat(imp, node, x, repeats):
    xv = imp.value(x)
    extra = len(repeats) - imp.rank(x)
    if extra > 0:
        xv = imp.emit("Unsqueeze", [xv, imp.const(list(range(extra)), dtype=np.int64)], suffix="align")
    return imp.emit("Tile", [xv, imp.shape_tensor(list(repeats))])


def pad(imp, node, x, pad, value=0.0, *rest):
    mode = "constant"
    if node.target.__name__.startswith("pad") and rest:
        mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[value]
        value = rest[0] if rest[0] is not None else 0.0
    r = imp.rank(x)
    pairs = [(0, 0)] * r
    for i in range(len(pad) // 2):
        pairs[r - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    pads = [b for b, _ in pairs] + [e for _, e in pairs]
    xv = imp.value(x)
    return imp.emit("Pad", [xv, imp.const(pads, dtype=np.int64), imp.const(value or 0, like=xv)], {"mode": mode})


def split(imp, node, x, split_size_or_sections, dim=0, *rest):
    outs = imp.meta()
    sizes = [int(o.shape[dim]) for o in outs]
    vals = imp.emit("Split", [imp.value(x), imp.const(sizes, dtype=np.int64)], {"axis": int(dim)},
                    outputs=len(sizes))
    return tuple(vals) if isinstance(vals, list) else (vals,)


def unbind(imp, node, x, dim=0):
    n = int(imp.meta(x).shape[dim])
    parts = imp.emit("Split", [imp.value(x), imp.const([1] * n, dtype=np.int64)], {"axis": int(dim)}, outputs=n)
    parts = parts if isinstance(parts, list) else [parts]
    return tuple(imp.emit("Squeeze", [p, imp.const([dim], dtype=np.int64)], suffix=f"item{i}")
                 for i, p in enumerate(parts))


def pixel_shuffle(imp, node, x, upscale_factor):
    return imp.emit("DepthToSpace", [imp.value(x)], {"blocksize": int(upscale_factor), "mode": "CRD"})


def upsample(imp, node, x, output_size=None, *rest):
    bilinear = "bilinear" in node.target.__name__
    out = [int(d) for d in imp.meta().shape]
    attrs = {"mode": "linear" if bilinear else "nearest"}
    if bilinear:
        align = rest[0] if rest else False
        attrs["coordinate_transformation_mode"] = "align_corners" if align else "pytorch_half_pixel"
    else:
        attrs.update({"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"})
    return imp.emit("Resize", [imp.value(x), None, None, imp.const(out, dtype=np.int64)], attrs)


def cumsum(imp, node, x, dim, dtype=None):
    return imp.emit("CumSum", [imp.value(x), imp.const(dim, dtype=np.int64)])


def trilu(imp, node, x, diagonal=0):
    upper = int(node.target.__name__.startswith("triu"))
    return imp.emit("Trilu", [imp.value(x), imp.const(diagonal, dtype=np.int64)], {"upper": upper})


# -- reductions ------------------------------------------------------------------------------------
_REDUCE = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin", "prod": "ReduceProd"}


def reduce(imp, node, x, dim=None, keepdim=False, *rest, **kw):
    op = _REDUCE[node.target.__name__.split(".")[0]]
    if isinstance(dim, int):
        dim = [dim]
    axes = [imp.value(x)] + ([imp.const(list(dim), dtype=np.int64)] if dim else [])
    return imp.emit(op, axes, {"keepdims": int(bool(keepdim))})


def max_min(imp, node, x, dim=None, keepdim=False):
    kind = node.target.__name__.split(".")[0]
    if hasattr(dim, "name"):  # max.other / min.other: elementwise with a tensor
        return imp.emit("Max" if kind == "max" else "Min", [imp.value(x), imp.value(dim)])
    if dim is None:
        return imp.emit("ReduceMax" if kind == "max" else "ReduceMin", [imp.value(x)], {"keepdims": 0})
    xv = imp.value(x)
    values = imp.emit("ReduceMax" if kind == "max" else "ReduceMin", [xv, imp.const([dim], dtype=np.int64)],
                      {"keepdims": int(keepdim)}, suffix="values")
    idx = imp.emit("ArgMax" if kind == "max" else "ArgMin", [xv], {"axis": int(dim), "keepdims": int(keepdim)},
                   suffix="indices")
    return (values, idx)


def arg(imp, node, x, dim=None, keepdim=False):
    op = "ArgMax" if node.target.__name__.startswith("argmax") else "ArgMin"
    xv = imp.value(x)
    if dim is None:
        xv = imp.emit("Reshape", [xv, imp.const([-1], dtype=np.int64)], suffix="flat")
        dim = 0
    return imp.emit(op, [xv], {"axis": int(dim), "keepdims": int(keepdim)})


def any_all(imp, node, x, dim=None, keepdim=False):
    as_int = imp.emit("Cast", [imp.value(x)], {"to": "int32"}, suffix="int")
    op = "ReduceMax" if node.target.__name__.startswith("any") else "ReduceMin"
    args = [as_int] + ([imp.const(_ints(dim), dtype=np.int64)] if dim is not None else [])
    red = imp.emit(op, args, {"keepdims": int(keepdim)}, suffix="reduce")
    return imp.emit("Cast", [red], {"to": "bool"})


# -- pooling ---------------------------------------------------------------------------------------
def adaptive_max_pool(imp, node, x, output_size):
    if any(o != 1 for o in _ints(output_size, imp.rank(x) - 2)):
        raise ModelError(f"{node.name}: adaptive_max_pool with an output size other than 1 is not supported")
    return (imp.emit("GlobalMaxPool", [imp.value(x)]), None)


def adaptive_avg_pool(imp, node, x, output_size):
    in_sp = imp.meta(x).shape[2:]
    out = _ints(output_size, len(in_sp))
    if all(o == 1 for o in out):
        return imp.emit("GlobalAveragePool", [imp.value(x)])
    if all(isinstance(i, int) and i % o == 0 for i, o in zip(in_sp, out)):
        k = [i // o for i, o in zip(in_sp, out)]
        return imp.emit("AveragePool", [imp.value(x)], {"kernel_shape": k, "strides": k})
    raise ModelError(f"{node.name}: adaptive_avg_pool with output {out} from {list(in_sp)} is not supported")


def avg_pool(imp, node, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    if divisor_override:
        raise ModelError(f"{node.name}: avg_pool with divisor_override is not supported")
    n = len(_ints(kernel_size))
    p = _ints(padding, n)
    return imp.emit("AveragePool", [imp.value(x)], {
        "kernel_shape": _ints(kernel_size, n), "strides": _ints(stride or kernel_size, n), "pads": p + p,
        "ceil_mode": int(ceil_mode), "count_include_pad": int(count_include_pad)})


def max_pool(imp, node, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    n = len(_ints(kernel_size))
    p = _ints(padding, n)
    attrs = {"kernel_shape": _ints(kernel_size, n), "strides": _ints(stride or kernel_size, n), "pads": p + p,
             "dilations": _ints(dilation, n), "ceil_mode": int(ceil_mode)}
    y = imp.emit("MaxPool", [imp.value(x)], attrs)
    if "with_indices" not in node.target.__name__:
        return y
    if any(u.args[1] == 1 for u in node.users):
        # torch counts argmax indices per channel plane, ONNX over the whole tensor
        raise ModelError(f"{node.name}: max_pool indices are not supported (only the pooled values)")
    return (y, None)


# -- attention and recurrent layers --------------------------------------------------------------------
def attention(imp, node, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    rank = imp.rank(q)
    vals = [imp.value(q), imp.value(k), imp.value(v)]
    if rank != 4:
        raise ModelError(f"{node.name}: scaled_dot_product_attention on rank-{rank} tensors is not supported")
    attrs = {"is_causal": int(bool(is_causal))}
    if scale is not None:
        attrs["scale"] = float(scale)
    if attn_mask is not None:
        vals.append(imp.value(attn_mask))
    return imp.emit("Attention", vals, attrs)


def _reorder(w, order, hidden):
    chunks = [w[i * hidden:(i + 1) * hidden] for i in range(len(order))]
    return np.concatenate([chunks[i] for i in order], axis=0)


def _recurrent(imp, node, op, order, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
               batch_first):
    """torch.nn.LSTM/GRU (all layers, both directions) as a chain of IR LSTM/GRU ops."""
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    arrays = [_const_array(imp, p) for p in params]
    if any(a is None for a in arrays):
        raise ModelError(f"{node.name}: recurrent weights must be constants")
    hidden = arrays[1].shape[1]
    x = imp.value(input)
    if batch_first:
        x = imp.emit("Transpose", [x], {"perm": [1, 0, 2]}, suffix="time_major")
    states = [imp.value(h) for h in (hx if isinstance(hx, (list, tuple)) else [hx])]
    finals: list[list] = [[] for _ in states]
    for layer in range(num_layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            base = (layer * dirs + d) * per
            w_ih, w_hh = arrays[base], arrays[base + 1]
            ws.append(_reorder(w_ih, order, hidden))
            rs.append(_reorder(w_hh, order, hidden))
            if has_biases:
                bs.append(np.concatenate([_reorder(arrays[base + 2], order, hidden),
                                          _reorder(arrays[base + 3], order, hidden)]))
        W = imp.graph.add_constant(imp.name(f"l{layer}.W"), np.stack(ws))
        R = imp.graph.add_constant(imp.name(f"l{layer}.R"), np.stack(rs))
        B = imp.graph.add_constant(imp.name(f"l{layer}.B"), np.stack(bs)) if has_biases else None
        zero_states = all(s.const is not None and not np.asarray(s.const).any() for s in states)
        init = [] if zero_states else [  # zero initial states are the IR default
            imp.emit("Slice", [s, imp.const([layer * dirs], dtype=np.int64),
                               imp.const([(layer + 1) * dirs], dtype=np.int64),
                               imp.const([0], dtype=np.int64)], suffix=f"l{layer}.state{i}")
            for i, s in enumerate(states)]
        n_out = 1 + len(states)
        attrs = {"hidden_size": int(hidden), "direction": "bidirectional" if bidirectional else "forward"}
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        outs = imp.emit(op, [x, W, R, B, None, *init], attrs, outputs=n_out, suffix=f"l{layer}")
        y = outs[0]  # [seq, dirs, batch, hidden]
        y = imp.emit("Transpose", [y], {"perm": [0, 2, 1, 3]}, suffix=f"l{layer}.seq_batch")
        x = imp.emit("Reshape", [y, imp.const([0, 0, -1], dtype=np.int64)], suffix=f"l{layer}.out")
        for i, f in enumerate(outs[1:]):
            finals[i].append(f)
    out = imp.emit("Transpose", [x], {"perm": [1, 0, 2]}, suffix="batch_major") if batch_first else x
    final = [imp.emit("Concat", f, {"axis": 0}, suffix=f"state{i}") if len(f) > 1 else f[0]
             for i, f in enumerate(finals)]
    return (out, *final)


def lstm(imp, node, input, hx, params, *rest):
    return _recurrent(imp, node, "LSTM", [0, 3, 1, 2], input, hx, params, *rest)  # i f g o -> i o f g


def gru(imp, node, input, hx, params, *rest):
    return _recurrent(imp, node, "GRU", [1, 0, 2], input, hx, params, *rest)  # r z n -> z r n


# -- PT2E quantization (quantized_decomposed ops) -----------------------------------------------
def _qparam(imp, arg, dtype, what: str) -> Value:
    """A scale or zero point (python number or constant tensor) as an IR constant of `dtype`."""
    if hasattr(arg, "name"):
        data = _const_array(imp, arg)
        if data is None:
            raise ModelError(f"{imp.node.name}: the {what} is computed at run time (dynamic quantization); "
                             "only static PT2E quantization is supported")
        return imp.const(np.asarray(data).astype(dtype))
    return imp.const(np.asarray(arg).astype(dtype))


def _storage(dtype) -> np.dtype:
    from tensorbridge.frontends.torch.importer import torch_dtype_name

    return np.dtype(torch_dtype_name(dtype))


def quantize(imp, node, input, scale, zero_point, *rest, **kw):
    """QuantizeLinear with the program's scale and zero point; a quant range narrower than the storage type
    is a Clip. (PT2E rounds x * (1 / scale), not x / scale; the PyTorch code generator keeps that.)"""
    axis, (quant_min, quant_max, dtype) = (rest[0], rest[1:4]) if "per_channel" in str(node.target) else (1, rest[:3])
    storage = _storage(dtype)
    y = imp.emit("QuantizeLinear", [imp.value(input), _qparam(imp, scale, np.float32, "scale"),
                                    _qparam(imp, zero_point, storage, "zero point")], {"axis": int(axis)})
    info = np.iinfo(storage)
    if (quant_min, quant_max) == (info.min, info.max):
        return y
    return imp.emit("Clip", [y, imp.const(quant_min, dtype=storage), imp.const(quant_max, dtype=storage)],
                    suffix="range")


def dequantize(imp, node, input, scale, zero_point, *rest, out_dtype=None, **kw):
    """(x - zero_point) * scale; PyTorch ignores quant_min/quant_max here, and so does the IR."""
    axis, dtype = (rest[0], rest[3]) if "per_channel" in str(node.target) else (1, rest[2])
    storage = _storage(dtype)
    zp = _qparam(imp, zero_point, storage, "zero point") if zero_point is not None else None
    inputs = [imp.value(input), _qparam(imp, scale, np.float32, "scale")] + ([zp] if zp is not None else [])
    y = imp.emit("DequantizeLinear", inputs, {"axis": int(axis)}, suffix="" if out_dtype is None else "dq")
    if out_dtype is None:
        return y
    return to(imp, node, y)


# -- dtype, selection, constants -------------------------------------------------------------------
def to(imp, node, x, *args, **kw):
    from tensorbridge.frontends.torch.importer import torch_dtype_name

    target = torch_dtype_name(imp.meta().dtype)
    src = imp.value(x)
    if src.dtype is not None and src.dtype == np.dtype(target if target != "bfloat16" else np.float32) \
            and target != "bfloat16":
        return src
    return imp.emit("Cast", [src], {"to": target})


def type_as(imp, node, x, other):
    return to(imp, node, x)


def where(imp, node, cond, a=None, b=None):
    if a is None:
        raise ModelError(f"{node.name}: torch.where(cond) (nonzero form) is not supported")
    return imp.emit("Where", [imp.value(cond), imp.value(a, like=b), imp.value(b, like=a)])


def masked_fill(imp, node, x, mask, value):
    xv = imp.value(x)
    return imp.emit("Where", [imp.value(mask), imp.value(value, like=x) if hasattr(value, "name")
                              else imp.const(value, like=xv), xv])


def _fill_value(node, args):
    name = node.target.__name__.split(".")[0]
    if name in ("zeros", "new_zeros", "zeros_like"):
        return 0
    if name in ("ones", "new_ones", "ones_like"):
        return 1
    return args[-1]


def fill(imp, node, *args, **kw):
    from tensorbridge.frontends.torch.importer import torch_dtype_name

    val = imp.meta()
    dt = np.dtype(torch_dtype_name(val.dtype)) if torch_dtype_name(val.dtype) != "bfloat16" else None
    value = _fill_value(node, args)
    shape = [imp.dim(d) for d in val.shape]
    if all(isinstance(d, int) for d in shape):
        return imp.const(np.full(shape, value), dtype=dt)
    return imp.emit("ConstantOfShape", [imp.out_shape()], {"value": np.array([value], dtype=dt)})


def fill_like(imp, node, x, *args, **kw):
    return fill(imp, node, *args, **kw) if node.target.__name__.startswith("full") else fill(imp, node)


def scalar_tensor(imp, node, s, **kw):
    from tensorbridge.frontends.torch.importer import torch_dtype_name

    return imp.const(s, dtype=np.dtype(torch_dtype_name(imp.meta().dtype)))


def arange(imp, node, *args, **kw):
    from tensorbridge.frontends.torch.importer import torch_dtype_name

    val = imp.meta()
    dt = np.dtype(torch_dtype_name(val.dtype))
    nums = [a for a in args if not hasattr(a, "name")]
    if len(nums) == len(args):
        if len(args) == 1:
            return imp.const(np.arange(args[0]), dtype=dt)
        return imp.const(np.arange(*args), dtype=dt)
    vals = [imp.value(a) if hasattr(a, "name") else imp.const([a], dtype=np.int64) for a in args]
    start, limit, delta = (imp.const(0, dtype=dt), vals[0], imp.const(1, dtype=dt)) if len(vals) == 1 else \
        (vals[0], vals[1], vals[2] if len(vals) > 2 else imp.const(1, dtype=dt))
    scal = [imp.emit("Reshape", [v, imp.const([], dtype=np.int64)], suffix=f"scalar{i}") if v.shape != () else v
            for i, v in enumerate((start, limit, delta))]
    scal = [imp.emit("Cast", [v], {"to": str(dt)}, suffix=f"cast{i}") for i, v in enumerate(scal)]
    return imp.emit("Range", scal)


def logic(imp, node, a, b):
    """Python `&`, `|`, `^`: logical on booleans, bitwise on integers."""
    kind = node.target.__name__.split(".")[0].strip("_")
    av, bv = imp.value(a, like=b), imp.value(b, like=a)
    boolean = av.dtype == np.bool_
    op = {"and": "And", "or": "Or", "xor": "Xor"}[kind] if boolean else \
        {"and": "BitwiseAnd", "or": "BitwiseOr", "xor": "BitwiseXor"}[kind]
    return imp.emit(op, [av, bv])


def index(imp, node, x, indices):
    """x[i0, i1, ...] advanced indexing: one tensor index -> Gather; leading adjacent ones -> GatherND."""
    present = [i for i, t in enumerate(indices) if t is not None]
    if any(imp.meta(indices[i]).dtype.is_floating_point or str(imp.meta(indices[i]).dtype) == "torch.bool"
           for i in present):
        raise ModelError(f"{node.name}: boolean-mask indexing is not supported")
    if len(present) == 1:
        return imp.emit("Gather", [imp.value(x), imp.value(indices[present[0]])], {"axis": present[0]})
    if present != list(range(len(present))):
        raise ModelError(f"{node.name}: advanced indexing on non-leading dims is not supported")
    out_shape = list(imp.meta().shape)
    k = len(present)
    batch = out_shape[:len(out_shape) - (imp.rank(x) - k)]
    target = imp.shape_tensor(batch)
    parts = []
    for i in present:
        iv = imp.emit("Expand", [imp.value(indices[i]), target], suffix=f"idx{i}")
        parts.append(imp.emit("Unsqueeze", [iv, imp.const([-1], dtype=np.int64)], suffix=f"idx{i}_last"))
    stacked = imp.emit("Concat", parts, {"axis": -1}, suffix="indices")
    return imp.emit("GatherND", [imp.value(x), stacked])
