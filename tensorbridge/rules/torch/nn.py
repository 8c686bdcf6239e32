"""PyTorch <-> IR: Convolutions, dense layers, normalisation, softmax, pooling, resizing.

Each IR op's import converters (ATen -> IR) and export writer (IR -> torch code) sit together.
"""
from __future__ import annotations

import ast
import operator

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, const_operand, same
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ops.infer import norm_axis
from tensorbridge.ops.nn import indices_read, plane_starts
from tensorbridge.rules.torch.base import (
    TORCH_DTYPES,
    R,
    aten,
    const_data,
    explicit_pads,
    ints,
    non_default,
    pre_pad,
    require_nchw,
    same_at_run_time,
    same_padded,
    torch_momentum,
)
from tensorbridge.rules.torch.elementwise import write_identity


@aten("conv1d", "conv2d", "conv3d", "convolution", "_convolution", produces=("Conv", "ConvTranspose"))
def read_convolution(imp, node, input, weight, bias=None, stride=1, padding=0, dilation=1, *rest, **kw):
    name = node.target.__name__.split(".")[0]
    if name in ("convolution", "_convolution"):
        transposed, output_padding, groups = rest[0], rest[1], rest[2]
        if transposed:
            return read_conv_transpose(imp, node, input, weight, bias, stride, padding, output_padding, groups,
                                       dilation)
    else:
        groups = rest[0] if rest else kw.get("groups", 1)
    nsp = imp.rank(input) - 2
    attrs = {"strides": ints(stride, nsp), "dilations": ints(dilation, nsp), "group": int(groups)}
    if isinstance(padding, str):
        attrs["auto_pad"] = {"same": "SAME_UPPER", "valid": "VALID"}[padding]
    else:
        p = ints(padding, nsp)
        attrs["pads"] = p + p
    inputs = [imp.value(input), imp.value(weight)] + ([imp.value(bias)] if bias is not None else [])
    return imp.emit("Conv", inputs, attrs)


@R.exports("Conv")
def write_conv(em, node):
    require_nchw(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    nsp = len(w.shape) - 2 if w.shape is not None else -1
    if nsp not in (1, 2, 3):
        raise Unsupported(f"{nsp}-D convolution")
    xe = em.tensor(x)
    if same_at_run_time(node):
        xe, padding = same_padded(em, node, nsp, xe), [0] * nsp
    else:
        begin, end = explicit_pads(node, nsp)
        padding = begin
        if begin != end:
            xe, padding = pre_pad(em, xe, begin, end), [0] * nsp
    group = node.attrs.get("group", 1)
    options = {"stride": (same(node.attrs.get("strides") or [1] * nsp), 1), "padding": (same(padding), 0),
               "dilation": (same(node.attrs.get("dilations") or [1] * nsp), 1), "groups": (group, 1)}
    if w.const is None:  # a kernel computed in the model (CondConv's per-sample mixture): the functional call
        bias = em.tensor(b) if b is not None else P.lit(None)
        em.out(node, P.call(f"F.conv{nsp}d", xe, em.tensor(w), bias, **non_default(**options)))
        return
    wa = const_operand(w)
    weights = {"weight": wa}
    if b is not None:
        weights["bias"] = const_operand(b)
    dtype = P.name(TORCH_DTYPES["float64"]) if wa.dtype == np.float64 else None  # integer-exact (litert_arithmetic)
    layer = em.layer(node, f"nn.Conv{nsp}d", [wa.shape[1] * group, wa.shape[0], same(wa.shape[2:])], non_default(
        **options, bias=(b is not None, True), dtype=(dtype, None)), weights)
    em.out(node, P.call(layer, xe))


@aten("conv_transpose1d", "conv_transpose2d", "conv_transpose3d", produces="ConvTranspose")
def read_conv_transpose(imp, node, input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                        dilation=1):
    nsp = imp.rank(input) - 2
    p = ints(padding, nsp)
    attrs = {"strides": ints(stride, nsp), "dilations": ints(dilation, nsp), "group": int(groups),
             "pads": p + p, "output_padding": ints(output_padding, nsp)}
    inputs = [imp.value(input), imp.value(weight)] + ([imp.value(bias)] if bias is not None else [])
    return imp.emit("ConvTranspose", inputs, attrs)


def _conv_transpose_check(node) -> str | None:
    from tensorbridge.ops.nn import pads_implied  # imported here: the catalogue's families load first

    if pads_implied(node):
        return "output_shape/auto_pad on ConvTranspose"
    pads = node.attrs.get("pads") or []
    return "asymmetric ConvTranspose pads" if pads[:len(pads) // 2] != pads[len(pads) // 2:] else None


@R.exports("ConvTranspose", check=_conv_transpose_check)
def write_conv_transpose(em, node):
    require_nchw(node)
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = const_operand(w)
    nsp = wa.ndim - 2
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    group = node.attrs.get("group", 1)
    weights = {"weight": wa}
    if b is not None:
        weights["bias"] = const_operand(b)
    layer = em.layer(node, f"nn.ConvTranspose{nsp}d", [wa.shape[0], wa.shape[1] * group, same(wa.shape[2:])],
                     non_default(stride=(same(node.attrs.get("strides") or [1] * nsp), 1),
                                 padding=(same(pads[:nsp]), 0),
                                 output_padding=(same(node.attrs.get("output_padding") or [0] * nsp), 0),
                                 groups=(group, 1), dilation=(same(node.attrs.get("dilations") or [1] * nsp), 1),
                                 bias=(b is not None, True)), weights)
    em.out(node, P.call(layer, em.tensor(x)))


@aten("linear", produces="Dense")
def read_linear(imp, node, input, weight, bias=None):
    w = const_data(imp, weight)
    if w is not None and w.ndim == 2:
        wt = imp.graph.add_constant(imp.env[weight.name].name + ".T", np.ascontiguousarray(w.T))
        wt.meta["transposed_from"] = imp.env[weight.name].name
    else:
        wt = imp.emit("Transpose", [imp.value(weight)], {"perm": [1, 0]}, suffix="weight_t")
    inputs = [imp.value(input), wt] + ([imp.value(bias)] if bias is not None else [])
    return imp.emit("Dense", inputs)


@R.exports("Dense")
def write_dense(em, node):
    x, w = node.inputs[0], node.inputs[1]
    b = node.input(2)
    wa = const_operand(w)
    if wa.ndim != 2:
        raise Unsupported("Dense weight must be 2-D")
    weights = {"weight": wa.T}
    if b is not None:
        weights["bias"] = const_operand(b)
    layer = em.layer(node, "nn.Linear", [wa.shape[0], wa.shape[1]], non_default(bias=(b is not None, True)), weights)
    em.out(node, P.call(layer, em.tensor(x)))


@aten("matmul", "mm", "bmm", produces="MatMul")
def read_matmul(imp, node, a, b):
    return imp.emit("MatMul", [imp.value(a), imp.value(b)])


@R.exports("MatMul")
def write_matmul(em, node):
    a, b = node.inputs
    if b.const is not None and np.asarray(b.const).ndim == 2 and dtypes.is_float(b.const.dtype) and a.const is None:
        wa = np.asarray(b.const)
        kwargs = {"bias": False, **({"dtype": P.name(TORCH_DTYPES["float64"])} if wa.dtype == np.float64 else {})}
        layer = em.shared_layer(b, node, "nn.Linear", [wa.shape[0], wa.shape[1]], kwargs, {"weight": wa.T})
        return em.out(node, P.call(layer, em.tensor(a)))
    em.out(node, P.binop(em.tensor(a), "@", em.tensor(b)))


@aten("addmm", produces="Gemm")
def read_addmm(imp, node, bias, m1, m2, beta=1, alpha=1):
    return imp.emit("Gemm", [imp.value(m1), imp.value(m2), imp.value(bias)], {"alpha": float(alpha),
                                                                              "beta": float(beta)})


@R.exports("Gemm")
def write_gemm(em, node):
    a, b = node.inputs[0], node.inputs[1]
    c = node.input(2)
    at = node.attrs
    if at.get("transA", 0) == 0 and at.get("alpha", 1.0) == 1.0 and at.get("beta", 1.0) == 1.0\
            and b.const is not None and (c is None or c.const is not None and np.asarray(c.const).ndim <= 1):
        wa = np.asarray(b.const)
        weight = wa if at.get("transB", 0) else wa.T
        weights = {"weight": weight}
        if c is not None:
            weights["bias"] = np.broadcast_to(np.asarray(c.const), (weight.shape[0],))
        layer = em.layer(node, "nn.Linear", [weight.shape[1], weight.shape[0]], non_default(bias=(c is not None, True)),
                         weights)
        return em.out(node, P.call(layer, em.tensor(a)))
    ae, be = em.tensor(a), em.tensor(b)
    if at.get("transA", 0):
        ae = P.method(ae, "t")
    if at.get("transB", 0):
        be = P.method(be, "t")
    y = P.binop(P.binop(ae, "@", be), "*", at.get("alpha", 1.0)) if at.get("alpha", 1.0) != 1.0 else\
        P.binop(ae, "@", be)
    if c is not None:
        ce = em.tensor(c)
        y = P.binop(y, "+", P.binop(ce, "*", at.get("beta", 1.0)) if at.get("beta", 1.0) != 1.0 else ce)
    em.out(node, y)


@aten("baddbmm", produces="MatMul")
def read_baddbmm(imp, node, base, b1, b2, beta=1, alpha=1):
    prod = imp.emit("MatMul", [imp.value(b1), imp.value(b2)], suffix="bmm")
    if alpha != 1:
        prod = imp.emit("Mul", [prod, imp.const(alpha, like=prod)], suffix="alpha")
    basev = imp.value(base)
    if beta != 1:
        basev = imp.emit("Mul", [basev, imp.const(beta, like=basev)], suffix="beta")
    return imp.emit("Add", [basev, prod])


def _ones(imp, n, like):
    return imp.const(np.ones(n), like=like)


@aten("batch_norm", "_native_batch_norm_legit_no_training", produces="BatchNormalization")
def read_batch_norm(imp, node, input, weight, bias, running_mean, running_var, *rest):
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


@aten("_native_batch_norm_legit", produces=("ReduceMean", "Sub", "Mul", "Add", "Sqrt", "Reciprocal"))
def read_batch_norm_batch_statistics(imp, node, input, weight, bias, *rest):
    """Batch norm over the batch's own statistics (training=True; NFNet's weight standardisation calls it on
    weights, where it folds to constants): (y, mean, 1/std) over every axis but 1, variance biased."""
    training, eps = (rest[2], rest[4]) if len(rest) == 5 else (rest[0], rest[2])  # with / without running stats
    if not training:
        raise ModelError(f"{node.name}: _native_batch_norm_legit without training is not an op torch emits")
    x = imp.value(input)
    rank = imp.rank(input)
    axes = imp.const([a for a in range(rank) if a != 1], dtype=np.int64)
    mean = imp.emit("ReduceMean", [x, axes], {"keepdims": 1}, suffix="mean")
    centered = imp.emit("Sub", [x, mean], suffix="centered")
    var = imp.emit("ReduceMean", [imp.emit("Mul", [centered, centered], suffix="square"), axes], {"keepdims": 1},
                   suffix="var")
    rstd = imp.emit("Reciprocal", [imp.emit("Sqrt", [imp.emit("Add", [var, imp.const(float(eps), like=x)],
                                                            suffix="eps")], suffix="std")], suffix="rstd")
    y = imp.emit("Mul", [centered, rstd], suffix="normalized")
    channel = [-1] + [1] * (rank - 2)
    if weight is not None:
        y = imp.emit("Mul", [y, imp.emit("Reshape", [imp.value(weight), imp.const(channel, dtype=np.int64)],
                                         suffix="weight")], suffix="scaled")
    if bias is not None:
        y = imp.emit("Add", [y, imp.emit("Reshape", [imp.value(bias), imp.const(channel, dtype=np.int64)],
                                         suffix="bias")], suffix="shifted")
    flat = imp.const([-1], dtype=np.int64)
    return (y, imp.emit("Reshape", [mean, flat], suffix="save_mean"), imp.emit("Reshape", [rstd, flat],
                                                                              suffix="save_rstd"))


@R.exports("BatchNormalization", check=lambda node: "training-mode BatchNormalization" if
           node.attrs.get("training_mode") else None)
def write_batch_norm(em, node):
    require_nchw(node)
    x, scale, bias, mean, var = node.inputs
    rank = len(x.shape) if x.shape is not None else 4
    kind = {2: 1, 3: 1, 4: 2, 5: 3}.get(rank)
    if kind is None:
        raise Unsupported(f"BatchNormalization on rank {rank}")
    c = const_operand(scale).shape[0]
    momentum = torch_momentum(node.attrs.get("momentum", 0.9))
    layer = em.layer(node, f"nn.BatchNorm{kind}d", [c],
                     non_default(eps=(node.attrs.get("epsilon", 1e-5), 1e-5), momentum=(momentum, 0.1)),
                     {"weight": const_operand(scale), "bias": const_operand(bias), "running_mean": const_operand(mean),
                      "running_var": const_operand(var), "num_batches_tracked": np.array(0, np.int64)})
    em.out(node, P.call(layer, em.tensor(x)))


@R.exports("InstanceNormalization")
def write_instance_norm(em, node):
    require_nchw(node)
    x, scale, bias = node.inputs
    rank = len(x.shape) if x.shape is not None else 4
    c = const_operand(scale).shape[0]
    layer = em.layer(node, f"nn.InstanceNorm{max(rank - 2, 1)}d", [c],
                     {**non_default(eps=(node.attrs.get("epsilon", 1e-5), 1e-5)), "affine": True},
                     {"weight": const_operand(scale), "bias": const_operand(bias)})
    em.out(node, P.call(layer, em.tensor(x)))


@aten("layer_norm", "native_layer_norm", produces="LayerNormalization")
def read_layer_norm(imp, node, input, normalized_shape, weight=None, bias=None, eps=1e-5, *rest):
    x = imp.value(input)
    n = len(normalized_shape)
    scale = imp.value(weight) if weight is not None else _ones(imp, list(normalized_shape), x)
    inputs = [x, scale] + ([imp.value(bias)] if bias is not None else [])
    y = imp.emit("LayerNormalization", inputs, {"axis": -n, "epsilon": float(eps)})
    return y if node.target.__name__.startswith("layer_norm") else (y, None, None)


@R.exports("LayerNormalization")
def write_layer_norm(em, node):
    x, scale = node.inputs[0], node.inputs[1]
    b = node.input(2)
    if len(node.outputs) > 1 and any(v.uses() for v in node.outputs[1:]):
        raise Unsupported("LayerNormalization mean/inv-std outputs")
    sa = const_operand(scale)
    if x.shape is None:
        raise Unsupported("LayerNormalization needs the input rank")
    axis = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    shape = tuple(x.shape[axis:])
    if not all(isinstance(d, int) for d in shape):
        raise Unsupported("LayerNormalization over dynamic dims")
    weights = {"weight": np.broadcast_to(sa, shape)}
    if b is not None:
        weights["bias"] = np.broadcast_to(const_operand(b), shape)
    layer = em.layer(node, "nn.LayerNorm", [shape[0] if len(shape) == 1 else shape],
                     non_default(eps=(node.attrs.get("epsilon", 1e-5), 1e-5), bias=(b is not None, True)), weights)
    em.out(node, P.call(layer, em.tensor(x)))


@aten("group_norm", produces="GroupNormalization")
def read_group_norm(imp, node, input, num_groups, weight=None, bias=None, eps=1e-5, *rest):
    x = imp.value(input)
    c = imp.meta(input).shape[1]
    w = imp.value(weight) if weight is not None else _ones(imp, c, x)
    b = imp.value(bias) if bias is not None else imp.const(np.zeros(c), like=x)
    return imp.emit("GroupNormalization", [x, w, b], {"num_groups": int(num_groups), "epsilon": float(eps)})


@aten("native_group_norm", produces="GroupNormalization")
def read_native_group_norm(imp, node, input, weight, bias, n, c, hw, num_groups, eps):
    """The core ATen group norm (output, mean, rstd): only the output is read."""
    return (read_group_norm(imp, node, input, num_groups, weight, bias, eps), None, None)


@R.exports("GroupNormalization")
def write_group_norm(em, node):
    require_nchw(node)
    x, scale, bias = node.inputs
    c = const_operand(scale).shape[0]
    layer = em.layer(node, "nn.GroupNorm", [node.attrs["num_groups"], c],
                     non_default(eps=(node.attrs.get("epsilon", 1e-5), 1e-5)),
                     {"weight": const_operand(scale), "bias": const_operand(bias)})
    em.out(node, P.call(layer, em.tensor(x)))


@R.exports("LRN")
def write_lrn(em, node):
    require_nchw(node)
    size = node.attrs["size"]
    if size % 2 == 0:
        raise Unsupported("LRN with an even size (PyTorch centres the window differently)")
    layer = em.layer(node, "nn.LocalResponseNorm", [size], non_default(
        alpha=(node.attrs.get("alpha", 1e-4), 1e-4), beta=(node.attrs.get("beta", 0.75), 0.75),
        k=(node.attrs.get("bias", 1.0), 1.0)), {})
    em.out(node, P.call(layer, em.tensor(node.inputs[0])))


@R.exports("RMSNormalization")
def write_rms_norm(em, node):
    x, scale = node.inputs
    if x.shape is None:
        raise Unsupported("RMSNormalization needs the input rank")
    axis = norm_axis(node.attrs.get("axis", -1), len(x.shape))
    shape = tuple(x.shape[axis:])
    layer = em.layer(node, "nn.RMSNorm", [shape], {"eps": node.attrs.get("epsilon", 1e-5)},
                     {"weight": np.broadcast_to(const_operand(scale), shape)})
    em.out(node, P.call(layer, em.tensor(x)))


@aten("softmax", "_softmax", "log_softmax", "_log_softmax", produces=("Softmax", "LogSoftmax"))
def read_softmax(imp, node, x, dim, *rest):
    op = "LogSoftmax" if "log" in node.target.__name__ else "Softmax"
    return imp.emit(op, [imp.value(x)], {"axis": int(dim)})


@R.exports("Softmax", "LogSoftmax")
def write_softmax(em, node):
    fn = {"Softmax": "torch.softmax", "LogSoftmax": "torch.log_softmax"}[node.op]
    em.out(node, P.call(fn, em.tensor(node.inputs[0]), node.attrs.get("axis", -1)))


@aten("max_pool1d", "max_pool2d", "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices",
      produces="MaxPool")
def read_max_pool(imp, node, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    n = len(ints(kernel_size))
    p = ints(padding, n)
    attrs = {"kernel_shape": ints(kernel_size, n), "strides": ints(stride or kernel_size, n), "pads": p + p,
             "dilations": ints(dilation, n), "ceil_mode": int(ceil_mode)}
    with_indices = "with_indices" in node.target.__name__
    if not with_indices or not any(u.args[1] == 1 for u in node.users):
        y = imp.emit("MaxPool", [imp.value(x)], attrs)
        return (y, None) if with_indices else y
    y, flat = imp.emit("MaxPool", [imp.value(x)], attrs, outputs=2)
    return (imp.typed(y, imp.meta()[0]), imp.emit("Mod", [flat, imp.const(_plane_size(imp, node, x), dtype=np.int64)],
                                                  suffix="plane_index"))


def _plane_size(imp, node, x) -> int:
    """The number of positions in one channel plane of `x` (PyTorch's pooling indices count within a plane,
    ONNX's over the whole tensor)."""
    spatial = [imp.dim(d) for d in imp.meta(x).shape[2:]]
    if not all(isinstance(d, int) for d in spatial):
        raise ModelError(f"{node.name}: max pooling indices of an input whose spatial size is known only at run time")
    return int(np.prod(spatial))


@aten("max_unpool2d", "max_unpool3d", produces=("Add", "MaxUnpool"))
def read_max_unpool(imp, node, x, indices, output_size, *_stride_padding):
    """Values scattered to the positions of their plane that `indices` name (as max_pool's return_indices
    gives them), into zeros of `output_size`."""
    shape = [imp.dim(d) for d in imp.meta().shape]
    if not all(isinstance(d, int) for d in shape):
        raise ModelError(f"{node.name}: max_unpool to a size known only at run time")
    flat = imp.emit("Add", [imp.value(indices), imp.const(plane_starts(shape), dtype=np.int64)], suffix="flat_index")
    rank = len(shape) - 2
    return imp.emit("MaxUnpool", [imp.value(x), flat, imp.const(shape, dtype=np.int64)],
                    {"kernel_shape": [1] * rank})  # the output's size is given: the kernel plays no part


def _pool_common(em, node, fill):
    require_nchw(node)
    k = node.attrs["kernel_shape"]
    nsp = len(k)
    xe = em.tensor(node.inputs[0])
    if same_at_run_time(node):
        return same_padded(em, node, nsp, xe, fill), k, node.attrs.get("strides") or [1] * nsp, None, nsp
    begin, end = explicit_pads(node, nsp)
    padding = begin
    if begin != end or any(b > kk // 2 for b, kk in zip(begin, k)):  # torch pads symmetrically, up to k/2
        xe, padding = pre_pad(em, xe, begin, end, fill), None
    return xe, k, node.attrs.get("strides") or [1] * nsp, padding, nsp


def _max_pool_check(node) -> str | None:
    """F.max_pool's own indices (`return_indices=True`) where it pads as the node does, on a float input of known
    shape; other pools with indices decompose (the catalogue computes ONNX's indices from the window)."""
    if not indices_read(node):
        return None
    x, k = node.inputs[0], node.attrs["kernel_shape"]
    begin, end = explicit_pads(node, len(k))
    if x.shape is None or not all(isinstance(d, int) for d in x.shape) or x.dtype is None or x.dtype.kind != "f" \
            or begin != end or any(b > kk // 2 for b, kk in zip(begin, k)) or node.attrs.get("storage_order"):
        return "MaxPool indices of this pool (F.max_pool's indices need symmetric padding and a float input)"
    return None


@R.exports("MaxPool", check=_max_pool_check)
def write_max_pool(em, node):
    xe, k, s, p, nsp = _pool_common(em, node, float("-inf"))
    dt = node.inputs[0].dtype
    integer = dt is not None and dt.kind in "iu"  # torch pools floats only; a max of int8 values is exact in float
    options = non_default(dilation=(same(node.attrs.get("dilations") or [1] * nsp), 1),
                          ceil_mode=(bool(node.attrs.get("ceil_mode", 0)), False))
    if indices_read(node):
        values, plane = em.namer.name(node.outputs[0].name, "values"), em.namer.name(node.outputs[1].name, "plane")
        em.body.append(P.assign([values, plane], P.call(f"F.max_pool{nsp}d", xe, same(k), same(s), same(p or [0] * nsp),
                                                        **options, return_indices=True)))
        em.out(node, P.name(values), 0)  # ONNX's indices count over the whole tensor, PyTorch's within a plane
        em.out(node, P.binop(P.name(plane), "+", _plane_starts(node.inputs[0].shape)), 1)
        return
    y = P.call(f"F.max_pool{nsp}d", P.method(xe, "float") if integer else xe, same(k), same(s),
               same(p or [0] * nsp), **options)
    em.out(node, P.method(y, "to", P.name(TORCH_DTYPES[dtypes.name(dt)])) if integer else y)


def _plane_starts(shape) -> ast.expr:
    """`torch.arange(N * C).reshape(N, C, 1, ...) * plane`: where each channel plane of a tensor of static `shape`
    starts in its flat order (ONNX's pooling indices count over the whole tensor, PyTorch's within a plane)."""
    rows = P.method(P.call("torch.arange", shape[0] * shape[1]), "reshape", *shape[:2], *[1] * (len(shape) - 2))
    return P.binop(rows, "*", int(np.prod(shape[2:])))


def _max_unpool_check(node) -> str | None:
    x, y = node.inputs[0], node.outputs[0]
    if y.shape is None or not all(isinstance(d, int) for d in y.shape) or len(y.shape) not in (3, 4, 5):
        return "MaxUnpool of a size known only at run time (F.max_unpool takes it as numbers)"
    if x.dtype is None or x.dtype.kind != "f":
        return "MaxUnpool of integers (F.max_unpool takes floats)"
    return None


@R.exports("MaxUnpool", check=_max_unpool_check)
def write_max_unpool(em, node):
    """F.max_unpool to the output's size, the indices counted within each plane (F.max_unpool refuses one that
    points into another plane, which ONNX's would allow, rather than scatter it there)."""
    shape, nsp = node.outputs[0].shape, len(node.outputs[0].shape) - 2
    kernel, strides, pads = _unpool_window(node.inputs[0].shape[2:], shape[2:], node.attrs)
    indices = P.binop(em.tensor(node.inputs[1]), "-", _plane_starts(shape))
    em.out(node, P.call(f"F.max_unpool{nsp}d", em.tensor(node.inputs[0]), indices, same(kernel), same(strides),
                        **non_default(padding=(same(pads), 0)), output_size=list(shape[2:])))


def _unpool_window(sizes, out, attrs):
    """The node's window where it makes the output's size (F.max_unpool checks output_size against it), else one
    that does: the scatter follows the indices, whatever the window (PyTorch's max_unpool gives no window)."""
    nsp = len(out)
    kernel, strides = list(attrs["kernel_shape"]), list(attrs.get("strides") or [1] * nsp)
    pads = list(attrs.get("pads") or [0] * (2 * nsp))
    if pads[:nsp] == pads[nsp:] and all((n - 1) * s + k - 2 * p == o for n, s, k, p, o in
                                        zip(sizes, strides, kernel, pads, out)):
        return kernel, strides, pads[:nsp]
    strides = [max(1, o // n) for n, o in zip(sizes, out)]
    return [o - (n - 1) * s for n, o, s in zip(sizes, out, strides)], strides, [0] * nsp


@aten("avg_pool1d", "avg_pool2d", "avg_pool3d", produces="AveragePool")
def read_avg_pool(imp, node, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
    if divisor_override:
        raise ModelError(f"{node.name}: avg_pool with divisor_override is not supported")
    n = len(ints(kernel_size))
    p = ints(padding, n)
    return imp.emit("AveragePool", [imp.value(x)], {
        "kernel_shape": ints(kernel_size, n), "strides": ints(stride or kernel_size, n), "pads": p + p,
        "ceil_mode": int(ceil_mode), "count_include_pad": int(count_include_pad)})


def _undilated(node) -> str | None:
    return "dilated AveragePool" if any(d != 1 for d in node.attrs.get("dilations") or []) else None


@R.exports("AveragePool", check=_undilated)
def write_avg_pool(em, node):
    cip = bool(node.attrs.get("count_include_pad", 0))
    xe, k, s, p, nsp = _pool_common(em, node, 0.0)
    ceil = bool(node.attrs.get("ceil_mode", 0))
    fn = f"F.avg_pool{nsp}d"
    if p is None and not cip:
        # padding was applied by F.pad: divide the window sums by the count of real cells
        ones = P.call("torch.ones_like", em.tensor(node.inputs[0]))
        ones = same_padded(em, node, nsp, ones) if same_at_run_time(node) else pre_pad(em, ones, *explicit_pads(
            node, nsp), 0.0)
        total = P.call(fn, xe, same(k), same(s), **non_default(ceil_mode=(ceil, False)))
        count = P.call(fn, ones, same(k), same(s), **non_default(ceil_mode=(ceil, False)))
        return em.out(node, P.binop(total, "/", count))
    em.out(node, P.call(fn, xe, same(k), same(s), same(p or [0] * nsp), **non_default(
        ceil_mode=(ceil, False), count_include_pad=(cip, True))))


@aten("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d",
      "_adaptive_avg_pool3d", produces=("GlobalAveragePool", "AveragePool"))
def read_adaptive_avg_pool(imp, node, x, output_size):
    in_sp = imp.meta(x).shape[2:]
    out = ints(output_size, len(in_sp))
    if all(o == 1 for o in out):
        return imp.emit("GlobalAveragePool", [imp.value(x)])
    if all(isinstance(i, int) and i % o == 0 for i, o in zip(in_sp, out)):
        k = [i // o for i, o in zip(in_sp, out)]
        return imp.emit("AveragePool", [imp.value(x)], {"kernel_shape": k, "strides": k})
    if not all(isinstance(i, int) for i in in_sp):
        raise ModelError(f"{node.name}: adaptive_avg_pool with output {out} from {list(in_sp)} is not supported")
    return _adaptive_average(imp, imp.value(x), list(in_sp), out)


def _adaptive_bins(n: int, o: int) -> list[tuple[int, int]]:
    """The [start, end) each of `o` adaptive-pooling outputs covers of `n` inputs, as PyTorch draws them."""
    return [((i * n) // o, -(-(i + 1) * n // o)) for i in range(o)]


def _adaptive_average(imp, y, in_sp: list, out: list):
    """Adaptive average pooling where the bins overlap or differ in size (64 -> 7): along each spatial dim, a product
    with the matrix averaging each output's bin [floor(i * n / o), ceil((i + 1) * n / o))."""
    rank = 2 + len(in_sp)
    for axis, (n, o) in enumerate(zip(in_sp, out), start=2):
        if n == o:
            continue
        bins = np.zeros((o, n), np.float32)
        for i, (start, end) in enumerate(_adaptive_bins(n, o)):
            bins[i, start:end] = 1.0 / (end - start)
        weights = imp.const(bins if axis < rank - 1 else bins.T, like=y)
        if axis == rank - 1:
            y = imp.emit("MatMul", [y, weights], suffix=f"bins{axis}")
        elif axis == rank - 2:
            y = imp.emit("MatMul", [weights, y], suffix=f"bins{axis}")
        else:  # a leading spatial dim (3-D pooling's depth): moved next to last for the product
            perm = list(range(rank))
            perm[axis], perm[rank - 2] = rank - 2, axis
            moved = imp.emit("MatMul", [weights, imp.emit("Transpose", [y], {"perm": perm}, suffix=f"to{axis}")],
                             suffix=f"bins{axis}")
            y = imp.emit("Transpose", [moved], {"perm": perm}, suffix=f"from{axis}")
    return imp.emit("Identity", [y])


@aten("adaptive_max_pool1d", "adaptive_max_pool2d", produces=("GlobalMaxPool", "MaxPool", "Slice", "ReduceMax",
                                                                 "Concat"))
def read_adaptive_max_pool(imp, node, x, output_size):
    """The maxima of each output's bin [floor(i * n / o), ceil((i + 1) * n / o)) (the positions, a second output,
    are not read): global or equal bins as a pool; bins that overlap or differ in size one slice each, per axis."""
    if any(user.target is operator.getitem and user.args[1] == 1 and user.users for user in node.users):
        raise ModelError(f"{node.name}: the positions adaptive_max_pool returns are not read")
    in_sp = imp.meta(x).shape[2:]
    out = ints(output_size, len(in_sp))
    y = imp.value(x)
    if all(o == 1 for o in out):
        return (imp.emit("GlobalMaxPool", [y]), None)
    if all(isinstance(i, int) and i % o == 0 for i, o in zip(in_sp, out)):
        k = [i // o for i, o in zip(in_sp, out)]
        return (imp.emit("MaxPool", [y], {"kernel_shape": k, "strides": k}), None)
    if not all(isinstance(i, int) for i in in_sp):
        raise ModelError(f"{node.name}: adaptive_max_pool with output {out} from {list(in_sp)} is not supported")
    for axis, (n, o) in enumerate(zip(in_sp, out), start=2):
        if n == o:
            continue
        bins = []
        for i, (start, end) in enumerate(_adaptive_bins(n, o)):
            window = imp.emit("Slice", [y, imp.const([start], dtype=np.int64), imp.const([end], dtype=np.int64),
                                        imp.const([axis], dtype=np.int64)], suffix=f"bin{axis}_{i}")
            bins.append(imp.emit("ReduceMax", [window, imp.const([axis], dtype=np.int64)], {"keepdims": 1},
                                 suffix=f"max{axis}_{i}"))
        y = imp.emit("Concat", bins, {"axis": axis}, suffix=f"bins{axis}")
    return (y, None)


@R.exports("GlobalAveragePool", "GlobalMaxPool")
def write_global_pool(em, node):
    require_nchw(node)
    x = node.inputs[0]
    if x.shape is None:
        raise Unsupported("global pooling needs the input rank")
    nsp = len(x.shape) - 2
    if nsp not in (1, 2, 3):
        raise Unsupported(f"global pooling over {nsp} spatial dims")
    kind = "avg" if node.op == "GlobalAveragePool" else "max"
    em.out(node, P.call(f"F.adaptive_{kind}_pool{nsp}d", em.tensor(x), 1))


@aten("upsample_nearest2d", "upsample_bilinear2d", "upsample_bicubic2d", "_upsample_bilinear2d_aa",
      "_upsample_bicubic2d_aa", produces="Resize")
def read_upsample(imp, node, x, output_size=None, *rest):
    """F.interpolate as Resize. Given scale factors, torch's linear and cubic modes map coordinates with them
    (not with the sizes' ratio): the Resize then takes them as its scales, as ONNX maps coordinates with them.
    (Nearest keeps the sizes: there, torch's rounding of 1/scale and ONNX's of x/scale differ at exact
    boundaries whichever is given.)"""
    kind = node.target.__name__.split(".")[0]  # "_upsample_bicubic2d_aa.vec" -> "_upsample_bicubic2d_aa"
    out = [int(d) for d in imp.meta().shape]
    factors = []
    if "nearest" in kind:
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    else:
        align = rest[0] if rest else False
        # torch's (x + 0.5) / scale - 0.5 is ONNX's half_pixel; pytorch_half_pixel differs where a size is 1
        ctm = "align_corners" if align else "pytorch_half_pixel" if min(out[2:]) > 1 else "half_pixel"
        attrs = {"mode": "cubic" if "bicubic" in kind else "linear", "coordinate_transformation_mode": ctm}
        if kind.endswith("_aa"):  # PIL's filters: taps past the edge dropped and the rest renormalised, a = -0.5
            attrs.update(antialias=1, exclude_outside=1, **({"cubic_coeff_a": -0.5} if "bicubic" in kind else {}))
        factors = list(rest[1:])
    if factors and isinstance(factors[0], (list, tuple)):  # the .vec overloads: one list
        factors = factors[0]
    factors = [f for f in factors if f is not None]
    given = len(factors) == len(out) - 2 and attrs["coordinate_transformation_mode"] != "align_corners"
    if given and [int(d * f) for d, f in zip(imp.meta(x).shape[2:], factors)] == out[2:]:
        scales = imp.const([1.0, 1.0, *[float(f) for f in factors]], dtype=np.float32)
        return imp.emit("Resize", [imp.value(x), None, scales], attrs)
    return imp.emit("Resize", [imp.value(x), None, None, imp.const(out, dtype=np.int64)], attrs)


def _no_size_one(node) -> bool:
    """No resized spatial size is 1 (where ONNX's pytorch_half_pixel samples 0 and torch the middle)."""
    out = node.outputs[0].shape
    return out is not None and all(isinstance(d, int) and d > 1 for d in out[2:])


def _interpolate_mode(node) -> tuple[str | None, str]:
    """(F.interpolate's mode, or None, and the reason when there is none) for a Resize node."""
    a = node.attrs
    mode, ctm = a.get("mode", "nearest"), a.get("coordinate_transformation_mode", "half_pixel")
    if a.get("antialias") or a.get("exclude_outside"):
        return None, "Resize with antialias or exclude_outside"
    if mode == "nearest" and ctm == "asymmetric" and a.get("nearest_mode") == "floor":
        return "nearest", ""
    corners = ctm in ("half_pixel", "align_corners") or (ctm == "pytorch_half_pixel" and _no_size_one(node))
    if mode == "linear" and corners:
        return "bilinear", ""
    if mode == "cubic" and corners and a.get("cubic_coeff_a", -0.75) == -0.75:
        return "bicubic", ""
    return None, f"Resize mode={mode} coordinate_transformation_mode={ctm}"


def resize_blocker(node) -> str | None:
    x = node.inputs[0]
    if x.shape is None or len(x.shape) != 4:
        return "Resize of a non-4-D tensor"
    sizes, scales = node.input(3), node.input(2)
    if (sizes is None or sizes.const is None) and (scales is None or scales.const is None):
        return "Resize to sizes computed at run time"
    axes = node.attrs.get("axes")
    if axes and sorted(a % 4 for a in axes) != [2, 3]:
        return "Resize of batch or channel dims"
    if not axes and sizes is None and [float(s) for s in np.asarray(scales.const).ravel()][:2] != [1.0, 1.0]:
        return "Resize of batch or channel dims"
    return _interpolate_mode(node)[1] or None


def _spatial(node, operand) -> list:
    """A Resize's sizes or scales for the two spatial axes (the operand lists every axis, or the node's axes)."""
    values = const_operand(operand).ravel().tolist()
    axes = node.attrs.get("axes")
    if not axes:
        return values[2:]
    by_axis = dict(zip((a % 4 for a in axes), values))
    return [by_axis[2], by_axis[3]]


@R.exports("Resize", check=resize_blocker)
def write_resize(em, node):
    require_nchw(node)
    reason = resize_blocker(node)
    if reason:
        raise Unsupported(reason)
    x = node.inputs[0]
    sizes, scales = node.input(3), node.input(2)
    kw = {}
    if sizes is not None:
        kw["size"] = tuple(int(s) for s in _spatial(node, sizes))
    else:
        kw["scale_factor"] = tuple(float(s) for s in _spatial(node, scales))
    kw["mode"] = _interpolate_mode(node)[0]
    if kw["mode"] != "nearest":
        kw["align_corners"] = node.attrs.get("coordinate_transformation_mode") == "align_corners"
    em.out(node, P.call("F.interpolate", em.tensor(x), **kw))


@aten("pixel_shuffle", produces="DepthToSpace")
def read_pixel_shuffle(imp, node, x, upscale_factor):
    return imp.emit("DepthToSpace", [imp.value(x)], {"blocksize": int(upscale_factor), "mode": "CRD"})


@R.exports("DepthToSpace", check=lambda node: None if node.attrs.get("mode", "DCR") == "CRD" else
           "DepthToSpace DCR mode")
def write_depth_to_space(em, node):
    require_nchw(node)
    em.out(node, P.call("F.pixel_shuffle", em.tensor(node.inputs[0]), node.attrs["blocksize"]))


@R.exports("Dropout")
def write_dropout(em, node):
    write_identity(em, node)
    if len(node.outputs) > 1 and (node.outputs[1].uses() or node.outputs[1] in node.graph.outputs):
        em.out(node, P.call("torch.ones_like", em.tensor(node.inputs[0]), dtype=P.name("torch.bool")), 1)


# -- sampling ------------------------------------------------------------------------------------------
#: GridSample's modes (ONNX 20 names, and the older ones) -> F.grid_sample's
_GRID_MODES = {"linear": "bilinear", "bilinear": "bilinear", "nearest": "nearest", "cubic": "bicubic",
               "bicubic": "bicubic"}


def _grid_sample_check(node) -> str | None:
    x = node.inputs[0]
    mode = node.attrs.get("mode", "linear")
    if x.shape is None or len(x.shape) not in (4, 5):
        return "GridSample other than 2-D or 3-D"
    if len(x.shape) == 5 and _GRID_MODES.get(mode) == "bicubic":
        return "cubic GridSample in 3-D (F.grid_sample has no bicubic volumes)"
    return None if mode in _GRID_MODES else f"GridSample mode {mode!r}"


#: grid_sampler_2d's integer modes (torch's enums) -> GridSample's
_ATEN_GRID_MODES = ("linear", "nearest", "cubic")
_ATEN_GRID_PADDING = ("zeros", "border", "reflection")


@aten("grid_sampler_2d", "grid_sampler", produces="GridSample")
def read_grid_sampler(imp, node, input, grid, interpolation_mode, padding_mode, align_corners):
    return imp.emit("GridSample", [imp.value(input), imp.value(grid)], {
        "mode": _ATEN_GRID_MODES[int(interpolation_mode)], "padding_mode": _ATEN_GRID_PADDING[int(padding_mode)],
        "align_corners": int(bool(align_corners))})


@R.exports("GridSample", check=_grid_sample_check)
def write_grid_sample(em, node):
    x, grid = node.inputs
    mode = _GRID_MODES[node.attrs.get("mode", "linear")]
    em.out(node, P.call("F.grid_sample", em.tensor(x), em.tensor(grid), mode=mode,
                        padding_mode=node.attrs.get("padding_mode", "zeros"),
                        align_corners=bool(node.attrs.get("align_corners", 0))))


@R.exports("AffineGrid")
def write_affine_grid(em, node):
    theta, size = node.inputs
    em.out(node, P.call("F.affine_grid", em.tensor(theta), em.pylist(size),
                        align_corners=bool(node.attrs.get("align_corners", 0))))


def _col2im_check(node) -> str | None:
    pads = node.attrs.get("pads")
    if pads and pads[:len(pads) // 2] != pads[len(pads) // 2:]:
        return "Col2Im with uneven pads (F.fold pads both sides alike)"
    if node.inputs[1].const is None or node.inputs[2].const is None:
        return "Col2Im with a computed image or block shape"
    if np.asarray(node.inputs[2].const).size != 2:
        return "Col2Im of other than 2-D images (F.fold folds only those)"
    return None


@R.exports("Col2Im", check=_col2im_check)
def write_col2im(em, node):
    """F.fold: the columns of each block summed back into the image."""
    x, image, block = node.inputs
    nsp = len(np.asarray(block.const).ravel())
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    em.out(node, P.call("F.fold", em.tensor(x), output_size=em.pylist(image), kernel_size=em.pylist(block),
                        dilation=list(node.attrs.get("dilations") or [1] * nsp), padding=list(pads[:nsp]),
                        stride=list(node.attrs.get("strides") or [1] * nsp)))
