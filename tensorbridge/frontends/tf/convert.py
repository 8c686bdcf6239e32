"""TensorFlow op -> IR converters: `convert_<op lower case>(importer, node_def, inputs)`.

Attributes are read from the NodeDef; axis-like operands must be constants. Data stays
channels-last; HWIO filters become the IR's OIHW once, at import.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError

NHWC = "NHWC"


def _attr(n, key, default=None):
    if key not in n.attr:
        return default
    a = n.attr[key]
    kind = a.WhichOneof("value")
    if kind == "list":
        return list(a.list.i) or [s.decode() for s in a.list.s] or list(a.list.f)
    if kind == "s":
        return a.s.decode()
    return getattr(a, kind)


def _const(v, what):
    if v.const is None:
        raise ModelError(f"{what} must be a constant")
    return np.asarray(v.const)


def _nhwc(n):
    fmt = _attr(n, "data_format", "NHWC")
    if fmt not in ("NHWC", "NWC"):
        raise ModelError(f"{n.name}: data_format {fmt} is not supported")


def _padding(n, attrs):
    pad = _attr(n, "padding", "VALID")
    if pad == "SAME":
        attrs["auto_pad"] = "SAME_UPPER"
    elif pad == "EXPLICIT":
        p = _attr(n, "explicit_paddings")
        attrs["pads"] = [p[2], p[4], p[3], p[5]]
    return attrs


def _weight(imp, v, perm, tag):
    arr = _const(v, "the filter")
    return imp.graph.add_constant(f"{v.name}.{tag}", np.ascontiguousarray(np.transpose(arr, perm)))


def convert_conv2d(imp, n, ins):
    _nhwc(n)
    s, d = _attr(n, "strides"), _attr(n, "dilations", [1, 1, 1, 1])
    w = _weight(imp, ins[1], (3, 2, 0, 1), "oihw")  # HWIO -> OIHW
    cin = ins[0].shape[-1] if ins[0].shape is not None else None
    attrs = _padding(n, {"strides": [s[1], s[2]], "dilations": [d[1], d[2]], "layout": NHWC})
    if isinstance(cin, int) and cin != w.shape[1]:
        attrs["group"] = cin // w.shape[1]
    return imp.emit("Conv", [ins[0], w], attrs)


def convert_depthwiseconv2dnative(imp, n, ins):
    _nhwc(n)
    s, d = _attr(n, "strides"), _attr(n, "dilations", [1, 1, 1, 1])
    dk = _const(ins[1], "the depthwise filter")  # [H, W, C, M]
    c = dk.shape[2]
    w = imp.graph.add_constant(f"{ins[1].name}.oihw", np.ascontiguousarray(
        dk.reshape(dk.shape[0], dk.shape[1], -1).transpose(2, 0, 1)[:, None]))
    attrs = _padding(n, {"strides": [s[1], s[2]], "dilations": [d[1], d[2]], "group": int(c), "layout": NHWC})
    return imp.emit("Conv", [ins[0], w], attrs)


def convert_matmul(imp, n, ins):
    a, b = ins
    if _attr(n, "transpose_a", False):
        a = imp.emit("Transpose", [a], {"perm": [1, 0]}, suffix="a_t")
    if b.const is not None and b.const.ndim == 2:
        w = np.asarray(b.const).T if _attr(n, "transpose_b", False) else np.asarray(b.const)
        kernel = imp.graph.add_constant(f"{b.name}.kernel", np.ascontiguousarray(w))
        bias = _bias_of(imp, n)
        return imp.emit("Dense", [a, kernel] + ([bias] if bias is not None else []))
    if _attr(n, "transpose_b", False):
        b = imp.emit("Transpose", [b], {"perm": [1, 0]}, suffix="b_t")
    return imp.emit("MatMul", [a, b])


def _bias_of(imp, n):
    """The constant of a BiasAdd that only consumes this MatMul, fused into the Dense (recovery)."""
    users = [u for u in imp.nodes.values() if any(i.split(":")[0] == n.name for i in u.input)]
    if len(users) != 1 or users[0].op != "BiasAdd":
        return None
    bias_ref = users[0].input[1]
    bias = imp.values.get(bias_ref if ":" in bias_ref else f"{bias_ref}:0")
    if bias is None or bias.const is None:
        return None
    imp.fused_bias = getattr(imp, "fused_bias", set()) | {users[0].name}
    return bias


def convert_batchmatmulv2(imp, n, ins):
    a, b = ins
    for flag, idx in (("adj_x", 0), ("adj_y", 1)):
        if _attr(n, flag, False):
            v = ins[idx]
            r = len(v.shape)
            t = imp.emit("Transpose", [v], {"perm": list(range(r - 2)) + [r - 1, r - 2]}, suffix=flag)
            a, b = (t, b) if idx == 0 else (a, t)
    return imp.emit("MatMul", [a, b])


def convert_fusedbatchnormv3(imp, n, ins):
    if _attr(n, "is_training", False):
        raise ModelError(f"{n.name}: FusedBatchNorm in training mode")
    _nhwc(n)
    y = imp.emit("BatchNormalization", ins[:5], {"epsilon": float(_attr(n, "epsilon", 1e-3)), "layout": NHWC})
    return [y]


convert_fusedbatchnorm = convert_fusedbatchnormv3


def _pool(imp, n, ins, op):
    _nhwc(n)
    k, s = _attr(n, "ksize"), _attr(n, "strides")
    attrs = _padding(n, {"kernel_shape": [k[1], k[2]], "strides": [s[1], s[2]], "layout": NHWC})
    return imp.emit(op, [ins[0]], attrs)


def convert_maxpool(imp, n, ins):
    return _pool(imp, n, ins, "MaxPool")


def convert_avgpool(imp, n, ins):
    return _pool(imp, n, ins, "AveragePool")


def _reduce(imp, n, ins, op):
    axes = _const(ins[1], "reduction axes").astype(np.int64).reshape(-1)
    return imp.emit(op, [ins[0], imp.const(axes)], {"keepdims": int(bool(_attr(n, "keep_dims", False)))})


def convert_mean(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceMean")


def convert_sum(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceSum")


def convert_max(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceMax")


def convert_min(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceMin")


def convert_prod(imp, n, ins):
    return _reduce(imp, n, ins, "ReduceProd")


def _i64(imp, v, tag):
    if v.const is not None:
        return imp.const(np.asarray(v.const).astype(np.int64))
    return imp.emit("Cast", [v], {"to": "int64"}, suffix=tag)


def convert_reshape(imp, n, ins):
    return imp.emit("Reshape", [ins[0], _i64(imp, ins[1], "shape")])


def convert_squeeze(imp, n, ins):
    dims = _attr(n, "squeeze_dims", []) or []
    return imp.emit("Squeeze", [ins[0]] + ([imp.const(dims)] if dims else []))


def convert_expanddims(imp, n, ins):
    axis = _const(ins[1], "the axis").astype(np.int64).reshape(-1)
    return imp.emit("Unsqueeze", [ins[0], imp.const(axis)])


def convert_concatv2(imp, n, ins):
    axis = int(_const(ins[-1], "the concat axis"))
    return imp.emit("Concat", ins[:-1], {"axis": axis})


def convert_pad(imp, n, ins):
    p = _const(ins[1], "paddings").astype(np.int64)
    args = [ins[0], imp.const(list(p[:, 0]) + list(p[:, 1]))]
    if n.op == "PadV2":
        args.append(ins[2])
    mode = "constant"
    if n.op == "MirrorPad":
        mode = "reflect" if _attr(n, "mode") == "REFLECT" else "symmetric"
        if mode == "symmetric":
            raise ModelError(f"{n.name}: MirrorPad SYMMETRIC is not supported")
    return imp.emit("Pad", args, {"mode": mode})


convert_padv2 = convert_mirrorpad = convert_pad


def convert_transpose(imp, n, ins):
    return imp.emit("Transpose", [ins[0]], {"perm": [int(p) for p in _const(ins[1], "the permutation")]})


def convert_relu6(imp, n, ins):
    return imp.emit("Clip", [ins[0], imp.const(0.0, np.float32), imp.const(6.0, np.float32)])


def convert_leakyrelu(imp, n, ins):
    return imp.emit("LeakyRelu", [ins[0]], {"alpha": float(_attr(n, "alpha", 0.2))})


def convert_softmax(imp, n, ins):
    return imp.emit("Softmax", [ins[0]], {"axis": -1})


def convert_logsoftmax(imp, n, ins):
    return imp.emit("LogSoftmax", [ins[0]], {"axis": -1})


def convert_rsqrt(imp, n, ins):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", ins[:1], suffix="sqrt")])


def convert_square(imp, n, ins):
    return imp.emit("Mul", [ins[0], ins[0]])


def convert_squareddifference(imp, n, ins):
    d = imp.emit("Sub", ins[:2], suffix="diff")
    return imp.emit("Mul", [d, d])


def convert_cast(imp, n, ins):
    import tensorflow as tf

    from tensorbridge.ir import dtypes

    dt = tf.as_dtype(n.attr["DstT"].type).as_numpy_dtype
    return imp.emit("Cast", [ins[0]], {"to": dtypes.name(np.dtype(dt))})


def convert_shape(imp, n, ins):
    import tensorflow as tf

    y = imp.emit("Shape", [ins[0]], suffix="i64")
    out = tf.as_dtype(n.attr["out_type"].type).as_numpy_dtype if "out_type" in n.attr else np.int32
    return imp.emit("Cast", [y], {"to": np.dtype(out).name})


def convert_stridedslice(imp, n, ins):
    x, begin, end, strides = ins
    b, e, s = (list(_const(v, "slice bounds").astype(np.int64)) for v in (begin, end, strides))
    if _attr(n, "ellipsis_mask", 0) or _attr(n, "new_axis_mask", 0):
        raise ModelError(f"{n.name}: StridedSlice with ellipsis/new-axis masks is not supported")
    big = 2**62
    for i in range(len(b)):
        if _attr(n, "begin_mask", 0) >> i & 1:
            b[i] = 0 if s[i] > 0 else big
        if _attr(n, "end_mask", 0) >> i & 1:
            e[i] = big if s[i] > 0 else -big
    shrink = [i for i in range(len(b)) if _attr(n, "shrink_axis_mask", 0) >> i & 1]
    for i in shrink:
        e[i], s[i] = (b[i] + 1 if b[i] != -1 else big), 1
    y = imp.emit("Slice", [x, imp.const(b), imp.const(e), imp.const(list(range(len(b)))), imp.const(s)],
                 suffix="slice" if shrink else "")
    return imp.emit("Squeeze", [y, imp.const(shrink)]) if shrink else y


def convert_pack(imp, n, ins):
    axis = int(_attr(n, "axis", 0))
    if axis < 0:
        axis += len(ins[0].shape) + 1
    parts = [imp.emit("Unsqueeze", [v, imp.const([axis])], suffix=f"item{i}") for i, v in enumerate(ins)]
    return imp.emit("Concat", parts, {"axis": axis})


def convert_gatherv2(imp, n, ins):
    axis = int(_const(ins[2], "the gather axis"))
    return imp.emit("Gather", ins[:2], {"axis": axis})


def convert_tile(imp, n, ins):
    return imp.emit("Tile", [ins[0], _i64(imp, ins[1], "multiples")])


def convert_select(imp, n, ins):
    return imp.emit("Where", ins[:3])


convert_selectv2 = convert_select


def convert_fill(imp, n, ins):
    return imp.emit("ConstantOfShape", [_i64(imp, ins[0], "dims")],
                    {"value": _const(ins[1], "the fill value").reshape(1)})


def convert_zeroslike(imp, n, ins):
    return imp.emit("Mul", [ins[0], imp.const(0, ins[0].dtype or np.float32)])


def convert_argmax(imp, n, ins):
    axis = int(_const(ins[1], "the axis"))
    return imp.emit("ArgMax", [ins[0]], {"axis": axis, "keepdims": 0})


def convert_split(imp, n, ins):
    axis, x = int(_const(ins[0], "the split axis")), ins[1]
    k = int(_attr(n, "num_split"))
    out = imp.emit("Split", [x], {"axis": axis, "num_outputs": k}, outputs=k)
    return out if isinstance(out, list) else [out]


def convert_splitv(imp, n, ins):
    x, sizes, axis = ins
    k = int(_attr(n, "num_split"))
    out = imp.emit("Split", [x, imp.const(_const(sizes, "split sizes").astype(np.int64))],
                   {"axis": int(_const(axis, "the split axis"))}, outputs=k)
    return out if isinstance(out, list) else [out]
