"""TFLite operator -> IR converters (named in `rules/tflite.py`).

Each takes (importer, input values, builtin options) and returns the output value(s).
Padding enum: SAME = 0 (pad more at the end, ONNX SAME_UPPER), VALID = 1.
"""

from __future__ import annotations

import numpy as np

from tensorbridge.errors import ModelError
from tensorbridge.ops.infer import norm_axis

NHWC = "NHWC"


def _i64(imp, v, suffix):
    """An index-like operand as int64 (TFLite uses int32): converted at import when constant."""
    if v.dtype == np.int64:
        return v
    if v.const is not None:
        return imp.const(np.asarray(v.const).astype(np.int64), np.int64)
    return imp.emit("Cast", [v], {"to": "int64"}, suffix=suffix)


def _pad_attrs(opts, attrs):
    if opts.Padding() == 0:
        attrs["auto_pad"] = "SAME_UPPER"
    return attrs


def _weight(imp, v, perm, name_suffix):
    """A filter in IR layout: permute the constant once (dequantizing float16 storage)."""
    if v.const is None:
        return imp.emit("Transpose", [v], {"perm": list(perm)}, suffix=name_suffix)
    arr = np.asarray(v.const)
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    out = imp.graph.add_constant(f"{v.name}.{name_suffix}", np.ascontiguousarray(np.transpose(arr, perm)))
    if v.quant is not None and v.quant.axis is not None:
        q = v.quant
        out.quant = type(q)(q.scale, q.zero_point, q.storage, list(perm).index(q.axis))
    else:
        out.quant = v.quant
    return out


def conv_2d(imp, ins, opts):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    attrs = _pad_attrs(opts, {"strides": [opts.StrideH(), opts.StrideW()],
                              "dilations": [opts.DilationHFactor(), opts.DilationWFactor()], "layout": NHWC})
    wt = _weight(imp, w, (0, 3, 1, 2), "oihw")  # OHWI -> OIHW
    cin = x.shape[-1] if x.shape is not None else None
    if isinstance(cin, int) and wt.shape is not None and wt.shape[1] != cin:
        attrs["group"] = cin // wt.shape[1]
    y = imp.emit("Conv", [x, wt] + ([b] if b is not None else []), attrs)
    return imp.fused(y, opts.FusedActivationFunction())


def depthwise_conv_2d(imp, ins, opts):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    cin = x.shape[-1]
    if not isinstance(cin, int):
        raise ModelError("DEPTHWISE_CONV_2D needs a static channel count")
    wt = _weight(imp, w, (3, 0, 1, 2), "oihw")  # [1, H, W, C*M] -> [C*M, 1, H, W]
    attrs = _pad_attrs(opts, {"strides": [opts.StrideH(), opts.StrideW()],
                              "dilations": [opts.DilationHFactor(), opts.DilationWFactor()], "group": int(cin),
                              "layout": NHWC})
    y = imp.emit("Conv", [x, wt] + ([b] if b is not None else []), attrs)
    return imp.fused(y, opts.FusedActivationFunction())


def transpose_conv(imp, ins, opts):
    output_shape, w, x = ins[0], ins[1], ins[2]
    b = ins[3] if len(ins) > 3 else None
    if output_shape.const is None:
        raise ModelError("TRANSPOSE_CONV needs a constant output shape")
    out = [int(d) for d in output_shape.const]
    wt = _weight(imp, w, (3, 0, 1, 2), "iohw")  # [out, H, W, in] -> [in, out, H, W]
    attrs = {"strides": [opts.StrideH(), opts.StrideW()], "output_shape": out[1:3], "layout": NHWC,
             "auto_pad": "SAME_UPPER" if opts.Padding() == 0 else "VALID"}
    if opts.Padding() == 1:
        attrs.pop("output_shape")
    y = imp.emit("ConvTranspose", [x, wt] + ([b] if b is not None else []), attrs)
    code = opts.FusedActivationFunction() if hasattr(opts, "FusedActivationFunction") else 0
    return imp.fused(y, code)


def fully_connected(imp, ins, opts):
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    wt = _weight(imp, w, (1, 0), "in_out")  # [out, in] -> [in, out]
    keep = opts.KeepNumDims() if opts is not None else False
    if x.shape is not None and len(x.shape) != 2 and not keep:
        x = imp.emit("Reshape", [x, imp.const([-1, wt.shape[0]], np.int64)], suffix="flatten")
    y = imp.emit("Dense", [x, wt] + ([b] if b is not None else []))
    return imp.fused(y, opts.FusedActivationFunction() if opts is not None else 0)


_BINARY = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div"}


def binary(imp, ins, opts):
    y = imp.emit(_BINARY[imp.op_name], ins)
    return imp.fused(y, opts.FusedActivationFunction() if opts is not None else 0)


def pool_2d(imp, ins, opts):
    op = "MaxPool" if imp.op_name == "MAX_POOL_2D" else "AveragePool"
    attrs = _pad_attrs(opts, {"kernel_shape": [opts.FilterHeight(), opts.FilterWidth()],
                              "strides": [opts.StrideH(), opts.StrideW()], "layout": NHWC})
    return imp.fused(imp.emit(op, [ins[0]], attrs), opts.FusedActivationFunction())


_REDUCE = {"MEAN": "ReduceMean", "SUM": "ReduceSum", "REDUCE_MAX": "ReduceMax", "REDUCE_MIN": "ReduceMin",
           "REDUCE_PROD": "ReduceProd"}


def reduce(imp, ins, opts):
    x, axes = ins
    axes = _i64(imp, axes, "axes")
    if axes.shape == ():
        axes = imp.emit("Reshape", [axes, imp.const([1], np.int64)], suffix="axes1")
    return imp.emit(_REDUCE[imp.op_name], [x, axes], {"keepdims": int(bool(opts.KeepDims()))})


def reshape(imp, ins, opts):
    x = ins[0]
    if len(ins) > 1 and ins[1] is not None:
        shape = _i64(imp, ins[1], "shape")
    else:
        shape = imp.const([int(d) for d in opts.NewShapeAsNumpy()], np.int64)
    return imp.emit("Reshape", [x, shape])


def softmax(imp, ins, opts):
    x = ins[0]
    beta = opts.Beta() if opts is not None else 1.0
    if beta != 1.0:
        x = imp.emit("Mul", [x, imp.const(beta)], suffix="beta")
    return imp.emit("Softmax", [x], {"axis": -1})


def log_softmax(imp, ins, opts):
    return imp.emit("LogSoftmax", [ins[0]], {"axis": -1})


def relu6(imp, ins, opts):
    return imp.emit("Clip", [ins[0], imp.const(0.0), imp.const(6.0)])


def relu_n1_to_1(imp, ins, opts):
    return imp.emit("Clip", [ins[0], imp.const(-1.0), imp.const(1.0)])


def leaky_relu(imp, ins, opts):
    return imp.emit("LeakyRelu", [ins[0]], {"alpha": float(opts.Alpha())})


def gelu(imp, ins, opts):
    return imp.emit("Gelu", [ins[0]], {"approximate": "tanh" if opts is not None and opts.Approximate() else "none"})


def pad(imp, ins, opts):
    x, paddings = ins[0], ins[1]
    if paddings.const is None:
        raise ModelError("PAD needs constant paddings")
    p = np.asarray(paddings.const).astype(np.int64)
    pads = list(p[:, 0]) + list(p[:, 1])
    mode = "constant"
    if imp.op_name == "MIRROR_PAD":
        mode = "reflect" if opts.Mode() == 0 else "edge"
        if opts.Mode() == 1:
            raise ModelError("MIRROR_PAD SYMMETRIC mode is not supported")
    args = [x, imp.const(pads, np.int64)]
    if imp.op_name == "PADV2" and len(ins) > 2:
        args.append(ins[2])
    return imp.emit("Pad", args, {"mode": mode})


def concatenation(imp, ins, opts):
    y = imp.emit("Concat", ins, {"axis": int(opts.Axis())})
    return imp.fused(y, opts.FusedActivationFunction())


def transpose(imp, ins, opts):
    perm = ins[1]
    if perm.const is None:
        raise ModelError("TRANSPOSE needs a constant permutation")
    return imp.emit("Transpose", [ins[0]], {"perm": [int(p) for p in perm.const]})


def squeeze(imp, ins, opts):
    dims = [int(d) for d in opts.SqueezeDimsAsNumpy()] if opts is not None and opts.SqueezeDimsLength() else []
    return imp.emit("Squeeze", [ins[0]] + ([imp.const(dims, np.int64)] if dims else []))


def expand_dims(imp, ins, opts):
    axis = _i64(imp, ins[1], "axis")
    if axis.shape == ():
        axis = imp.emit("Reshape", [axis, imp.const([1], np.int64)], suffix="axes")
    return imp.emit("Unsqueeze", [ins[0], axis])


def strided_slice(imp, ins, opts):
    x, begin, end, strides = ins
    if any(v.const is None for v in (begin, end, strides)):
        raise ModelError("STRIDED_SLICE needs constant begin/end/strides")
    if opts.EllipsisMask() or opts.NewAxisMask():
        raise ModelError("STRIDED_SLICE with ellipsis or new-axis masks is not supported")
    b, e, s = (np.asarray(v.const).astype(np.int64).tolist() for v in (begin, end, strides))
    n = len(b)
    big = 2**62
    for i in range(n):
        if opts.BeginMask() >> i & 1:
            b[i] = 0 if s[i] > 0 else big
        if opts.EndMask() >> i & 1:
            e[i] = big if s[i] > 0 else -big
    shrink = [i for i in range(n) if opts.ShrinkAxisMask() >> i & 1]
    for i in shrink:
        e[i] = b[i] + 1 if b[i] != -1 else big
        s[i] = 1
    y = imp.emit("Slice", [x, imp.const(b, np.int64), imp.const(e, np.int64), imp.const(list(range(n)), np.int64),
                           imp.const(s, np.int64)], suffix="slice" if shrink else "")
    if shrink:
        y = imp.emit("Squeeze", [y, imp.const(shrink, np.int64)])
    return y


def slice(imp, ins, opts):
    x, begin, size = ins
    if begin.const is None or size.const is None:
        raise ModelError("SLICE needs constant begin and size")
    b = np.asarray(begin.const).astype(np.int64)
    sz = np.asarray(size.const).astype(np.int64)
    e = np.where(sz == -1, 2**62, b + sz)
    return imp.emit("Slice", [x, imp.const(b, np.int64), imp.const(e, np.int64)])


def gather(imp, ins, opts):
    if opts is not None and opts.BatchDims():
        raise ModelError("GATHER with batch_dims is not supported")
    return imp.emit("Gather", ins, {"axis": int(opts.Axis()) if opts is not None else 0})


def shape(imp, ins, opts):
    y = imp.emit("Shape", [ins[0]], suffix="i64")
    return imp.emit("Cast", [y], {"to": "int32"})


def pack(imp, ins, opts):
    axis = int(opts.Axis())
    rank = len(ins[0].shape) + 1 if ins[0].shape is not None else None
    if axis < 0 and rank is None:
        raise ModelError("PACK with a negative axis needs the input rank")
    axis = norm_axis(axis, rank) if axis < 0 else axis
    parts = [imp.emit("Unsqueeze", [v, imp.const([axis], np.int64)], suffix=f"item{i}") for i, v in enumerate(ins)]
    return imp.emit("Concat", parts, {"axis": axis})


def unpack(imp, ins, opts):
    n, axis = int(opts.Num()), int(opts.Axis())
    parts = imp.emit("Split", [ins[0], imp.const([1] * n, np.int64)], {"axis": axis}, outputs=n, suffix="split")
    parts = parts if isinstance(parts, list) else [parts]
    return [imp.emit("Squeeze", [p, imp.const([axis], np.int64)], suffix=f"item{i}") for i, p in enumerate(parts)]


def split(imp, ins, opts):
    axis, x = ins
    n = int(opts.NumSplits())
    a = int(np.asarray(axis.const).ravel()[0])
    out = imp.emit("Split", [x], {"axis": a, "num_outputs": n}, outputs=n)
    return out if isinstance(out, list) else [out]


def split_v(imp, ins, opts):
    x, sizes, axis = ins
    n = int(opts.NumSplits())
    a = int(np.asarray(axis.const).ravel()[0])
    out = imp.emit("Split", [x, imp.const(np.asarray(sizes.const).astype(np.int64), np.int64)], {"axis": a},
                   outputs=n)
    return out if isinstance(out, list) else [out]


def resize(imp, ins, opts):
    x, size = ins
    if size.const is None:
        raise ModelError(f"{imp.op_name} needs a constant output size")
    h, w = (int(d) for d in size.const)
    align, half = bool(opts.AlignCorners()), bool(opts.HalfPixelCenters())
    if imp.op_name == "RESIZE_BILINEAR":
        ctm = "align_corners" if align else ("half_pixel" if half else "asymmetric")
        attrs = {"mode": "linear", "coordinate_transformation_mode": ctm}
    else:
        ctm = "align_corners" if align else ("tf_half_pixel_for_nn" if half else "asymmetric")
        if ctm == "tf_half_pixel_for_nn":
            attrs = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                     "nearest_mode": "round_prefer_ceil"}
        else:
            attrs = {"mode": "nearest", "coordinate_transformation_mode": ctm,
                     "nearest_mode": "round_prefer_ceil" if align else "floor"}
    attrs["layout"] = NHWC
    n, c = x.shape[0], x.shape[3]
    if not isinstance(n, int) or not isinstance(c, int):
        sizes = None
        scales = imp.const([1.0, h / x.shape[1], w / x.shape[2], 1.0])
        return imp.emit("Resize", [x, None, scales], attrs)
    sizes = imp.const([n, h, w, c], np.int64)
    return imp.emit("Resize", [x, None, None, sizes], attrs)


def batch_matmul(imp, ins, opts):
    a, b = ins
    if opts is not None and opts.AdjX():
        a = imp.emit("Transpose", [a], {"perm": _swap_last(a)}, suffix="adj_x")
    if opts is not None and opts.AdjY():
        b = imp.emit("Transpose", [b], {"perm": _swap_last(b)}, suffix="adj_y")
    return imp.emit("MatMul", [a, b])


def _swap_last(v):
    r = len(v.shape)
    return list(range(r - 2)) + [r - 1, r - 2]


def dequantize(imp, ins, opts):
    x = ins[0]
    if x.const is not None and x.const.dtype == np.float16:
        v = imp.graph.add_constant(f"{x.name}.float32", np.asarray(x.const, np.float32))
        return v
    q = x.quant
    if q is None:
        raise ModelError("DEQUANTIZE of a tensor without quantization parameters")
    scale = imp.const(q.scale if q.axis is not None else q.scale.reshape(()))
    zp = imp.const(q.zero_point if q.axis is not None else q.zero_point.reshape(()), q.storage)
    return imp.emit("DequantizeLinear", [x, scale, zp], {"axis": q.axis if q.axis is not None else 1})


def quantize(imp, ins, opts):
    x = ins[0]
    if x.dtype is not None and x.dtype.kind in "iu":  # a requantization (uint8 <-> int8 I/O): DQ, then Q
        x = imp._dequantized(x)
    out_t = imp.subgraph.Tensors(int(imp.op.OutputsAsNumpy()[0]))
    q = imp._quant(out_t)
    if q is None:
        raise ModelError("QUANTIZE output has no quantization parameters")
    scale = imp.const(q.scale if q.axis is not None else q.scale.reshape(()))
    zp = imp.const(q.zero_point if q.axis is not None else q.zero_point.reshape(()), q.storage)
    return imp.emit("QuantizeLinear", [x, scale, zp], {"axis": q.axis if q.axis is not None else 1})


def arg(imp, ins, opts):
    x, axis = ins
    a = int(np.asarray(axis.const).ravel()[0])
    y = imp.emit("ArgMax" if imp.op_name == "ARG_MAX" else "ArgMin", [x], {"axis": a, "keepdims": 0}, suffix="i64")
    out_t = imp.subgraph.Tensors(int(imp.op.OutputsAsNumpy()[0]))
    return imp.emit("Cast", [y], {"to": imp._dtype(out_t).name if imp._dtype(out_t) != np.int64 else "int64"})


def cast(imp, ins, opts):
    out_t = imp.subgraph.Tensors(int(imp.op.OutputsAsNumpy()[0]))
    from tensorbridge.ir import dtypes

    return imp.emit("Cast", [ins[0]], {"to": dtypes.name(imp._dtype(out_t))})


def fill(imp, ins, opts):
    dims, value = ins
    dims = _i64(imp, dims, "dims")
    if value.const is None:
        raise ModelError("FILL needs a constant value")
    return imp.emit("ConstantOfShape", [dims], {"value": np.asarray(value.const).reshape(1)})


def space_to_depth(imp, ins, opts):
    return imp.emit("SpaceToDepth", [ins[0]], {"blocksize": int(opts.BlockSize()), "layout": NHWC})


def depth_to_space(imp, ins, opts):
    return imp.emit("DepthToSpace", [ins[0]], {"blocksize": int(opts.BlockSize()), "mode": "DCR", "layout": NHWC})


def l2_norm(imp, ins, opts):
    return imp.emit("LpNormalization", [ins[0]], {"axis": -1, "p": 2})


def lrn(imp, ins, opts):
    r = int(opts.Radius())
    return imp.emit("LRN", [ins[0]], {"size": 2 * r + 1, "alpha": float(opts.Alpha()) * (2 * r + 1),
                                      "beta": float(opts.Beta()), "bias": float(opts.Bias()), "layout": NHWC})


def rsqrt(imp, ins, opts):
    return imp.emit("Reciprocal", [imp.emit("Sqrt", ins, suffix="sqrt")])


def square(imp, ins, opts):
    return imp.emit("Mul", [ins[0], ins[0]])


def squared_difference(imp, ins, opts):
    d = imp.emit("Sub", ins, suffix="diff")
    return imp.emit("Mul", [d, d])


def floor_div(imp, ins, opts):
    q = imp.emit("Div", ins, suffix="div")
    return q if q.dtype is not None and q.dtype.kind in "iu" else imp.emit("Floor", [q])


def zeros_like(imp, ins, opts):
    return imp.emit("Mul", [ins[0], imp.const(0, ins[0].dtype or np.float32)])


def _body(imp, graph, index, bound) -> list:
    """Subgraph `index` imported into `graph` with its inputs bound; every output produced inside it."""
    outs = imp.import_subgraph(index, graph, bound)
    return [v if v.producer is not None and v.producer.graph is graph else
            graph.add_node("Identity", [v], name=f"{graph.name}.out{i}").outputs[0] for i, v in enumerate(outs)]


def if_(imp, ins, opts):
    """IF: both branch subgraphs become If branches that read the operands from the enclosing graph."""
    cond, args = ins[0], ins[1:]
    base = imp._tensor_name(int(imp.op.OutputsAsNumpy()[0]))
    branches = {}
    for key, index in (("then_branch", opts.ThenSubgraphIndex()), ("else_branch", opts.ElseSubgraphIndex())):
        g = imp.graph.subgraph(f"{base}.{key.split('_')[0]}")
        g.outputs = _body(imp, g, index, args)
        branches[key] = g
    n = len(branches["then_branch"].outputs)
    if len(branches["else_branch"].outputs) != n:
        raise ModelError(f"IF {base!r}: its branches return {n} and {len(branches['else_branch'].outputs)} values")
    return imp.emit("If", [cond], branches, outputs=n)


def while_(imp, ins, opts):
    """WHILE: a Loop whose body runs the body subgraph, then the condition subgraph on its results; the
    first test runs the condition subgraph once before the loop."""
    base = imp._tensor_name(int(imp.op.OutputsAsNumpy()[0]))
    cond_index, body_index = opts.CondSubgraphIndex(), opts.BodySubgraphIndex()
    first, = imp.import_subgraph(cond_index, imp.graph, list(ins))
    body = imp.graph.subgraph(f"{base}.body")
    body.add_input(f"{base}.iteration", np.dtype(np.int64), ())
    body.add_input(f"{base}.cond", np.dtype(np.bool_), ())
    carried = [body.add_input(f"{base}.carried{i}", dt, shape)
               for i, (dt, shape) in enumerate(imp.input_types(body_index))]
    results = _body(imp, body, body_index, carried)
    again, = _body(imp, body, cond_index, results)
    body.outputs = [again] + results
    return imp.emit("Loop", [None, first, *ins], {"body": body}, outputs=len(ins))
