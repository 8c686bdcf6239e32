"""PyTorch model code -> IR ops, continued (see rules/torch/code.py): the tensor functions and methods beyond
arithmetic and shapes that model code calls: casts and constants, selections (max with its indices, top-k,
index_select), cumulative and statistical reductions, norms, repeats, flips and rolls, pads in every mode, and
the functional forms of layers (`F.linear`, `F.layer_norm`, `F.scaled_dot_product_attention`).
"""

from __future__ import annotations

import ast
from functools import partial

from tensorbridge.rules.code import (
    DTYPE_NAMES,
    NOT_LITERAL,
    OpCall,
    Refused,
    holds_device,
    holds_dtype,
    holds_tensor,
    known,
    only,
    split_cuts,
)
from tensorbridge.rules.torch.code import C, F

_fn = partial(C.reads, inputs="input")

#: the casting tensor methods -> the dtype they cast to
CAST_METHODS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16", "long": "int64",
                "int": "int32", "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool"}


def _dtype(a, name="dtype"):
    """The dtype argument as a dtype name (None when not given) or another tensor's dtype (`x.dtype`, a name bound
    to one); Refused when it is not one."""
    if holds_dtype(a[name]):
        return a[name]
    value = known(a[name])
    if value is not None and value not in DTYPE_NAMES:
        raise Refused(f"{name} given by a variable or not a dtype")
    return value


# -- casts and copies ----------------------------------------------------------------------------------
for _method, _dtype_name in CAST_METHODS.items():
    _fn(f"Tensor.{_method}", "Cast", "input memory_format=None", to=_dtype_name)


def _to(a):
    """`x.to(dtype)` casts; `x.to(device)` (a literal, `y.device`, a name bound to one) is the tensor itself;
    `x.to(y)` takes y's dtype."""
    args = [*a["args"], *([a["dtype"]] if known(a["dtype"]) is not None else [])]
    if args and holds_device(args[0]):
        args = args[1:]
    target = known(args[0]) if args else None
    if args and holds_tensor(args[0]):
        return OpCall("CastLike", [a["input"], args[0]])
    if not args or target in DTYPE_NAMES or holds_dtype(args[0]):  # `x.to(input_dtype)` after `input_dtype = x.dtype`
        return OpCall("Cast", [a["input"]], {"to": args[0]}) if args else OpCall("Identity", [a["input"]])
    if isinstance(target, str):  # a device named by a literal
        return OpCall("Identity", [a["input"]])
    raise Refused("a device or dtype given by a variable (only literal ones and those read from a tensor are "
                  "translated)")


C.function("Tensor.to", "Cast", "input *args dtype=None device=None non_blocking=False copy=False "
           "memory_format=None", read=_to)
C.function("torch.device", "Device", "type index=None", read=lambda a: OpCall("Device", [a["type"]]),
           returns="device")


def _type(a):
    if holds_dtype(a["dtype"]):  # `x.type(orig_type)` after `orig_type = x.dtype`
        return OpCall("Cast", [a["input"]], {"to": a["dtype"]})
    if _dtype(a) is None:
        raise Refused("type() without a dtype (it returns the type's name)")
    return OpCall("Cast", [a["input"]], {"to": _dtype(a)})


C.function("Tensor.type", "Cast", "input dtype=None non_blocking=False", read=_type)
_fn("Tensor.type_as", "CastLike", "input other", inputs="input other")
_fn("Tensor.clone torch.clone", "Identity", "input memory_format=None", copy="always")
_fn("Tensor.cpu", "Identity", "input memory_format=None")
_fn("Tensor.cuda", "Identity", "input device=None non_blocking=False memory_format=None")
_fn("torch.from_numpy", "AsTensor", "ndarray", inputs="ndarray")
_fn("Tensor.detach torch.detach", "StopGradient", "input")


# -- constants -------------------------------------------------------------------------------------------
def _sizes(items) -> list | ast.expr:
    """`torch.zeros(2, 3)` / `torch.zeros((2, 3))` / `torch.zeros(shape)`: the shape as one expression or a
    list of per-dim expressions."""
    if len(items) == 1 and not isinstance(known(items[0]), int):
        return items[0]
    return list(items)


def _filled(value):
    def read(a):
        fill = a["fill_value"] if value is None else value
        return OpCall("ConstantOfShape", [], {"shape": _sizes(a["size"]) if isinstance(a["size"], list)
                                              else a["size"], "value": fill, "dtype": _dtype(a)})
    return read


_CREATION = "dtype=None layout=None device=None requires_grad=False"
C.function("torch.zeros", "ConstantOfShape", f"*size out=None {_CREATION}", read=_filled(0.0))
C.function("torch.ones", "ConstantOfShape", f"*size out=None {_CREATION}", read=_filled(1.0))
C.function("torch.empty", "ConstantOfShape", f"*size out=None {_CREATION} pin_memory=False memory_format=None",
           read=_filled(0.0))  # its values are unset: any are PyTorch's, zeros are the targets'
C.function("torch.full", "ConstantOfShape", f"size fill_value out=None {_CREATION}", read=_filled(None))
for _name, _value in (("zeros_like", 0.0), ("ones_like", 1.0), ("full_like", None)):
    C.function(f"torch.{_name}", "ConstantLike", "input " + ("fill_value " if _value is None else "") + _CREATION
               + " memory_format=None", read=lambda a, v=_value: OpCall(
                   "ConstantLike", [a["input"]], {"value": a["fill_value"] if v is None else v, "dtype": _dtype(a)}))


# `x.fill_(v)`, `x.zero_()`: in-place methods are read by their out-of-place forms, written back to x
C.function("Tensor.fill", "ConstantLike", "input value", read=lambda a: OpCall(
    "ConstantLike", [a["input"]], {"value": a["value"], "dtype": None}))
C.function("Tensor.zero", "ConstantLike", "input", read=lambda a: OpCall(
    "ConstantLike", [a["input"]], {"value": 0.0, "dtype": None}))


def _arange(a):
    """torch.arange(end) / (start, end[, step]) as NumPy's arange(start, stop=None, step=None)."""
    return OpCall("Range", [], {"start": a["start"], "stop": a["end"], "step": a["step"], "dtype": _dtype(a)})


C.function("torch.arange", "Range", f"start end=None step=None out=None {_CREATION}", read=_arange)
C.function("torch.linspace", "Linspace", f"start end steps out=None {_CREATION}", read=lambda a: OpCall(
    "Linspace", [], {"start": a["start"], "stop": a["end"], "num": a["steps"], "dtype": _dtype(a) or "float32"}))
C.function("torch.finfo", "FInfo", "type=None", read=lambda a: OpCall("FInfo", [a["type"]]), returns="python")
C.function("Tensor.item", "Item", "input", read=lambda a: OpCall("Item", [a["input"]]), returns="python")


def _refuse(why: str):
    raise Refused(why)


def _tensor(a):
    """torch.tensor of literal values or of values computed at run time: without a dtype, Python floats are float32
    in torch as in Keras and JAX (NumPy's float64 constants made in __init__ are kept as float32: numpy_constants),
    integers each framework's default integer type."""
    return OpCall("Constant", [], {"value": a["data"], "dtype": _dtype(a)})


def _legacy_constructor(dtype):
    """`torch.FloatTensor(2, 3)` (a tensor of that shape, its values unset: zeros here) or `torch.FloatTensor([0.5])`
    (of those values)."""
    def read(a):
        given = a["args"]
        if len(given) == 1 and isinstance(given[0], (ast.List, ast.Tuple)):  # values, maybe computed at run time
            return OpCall("Constant", [], {"value": given[0], "dtype": dtype})
        if len(given) == 1 and not isinstance(given[0], ast.Starred) and not isinstance(known(given[0]), int):
            return OpCall("SizeOrValues", [given[0]], {"dtype": dtype})  # which one, the value says at run time
        return OpCall("ConstantOfShape", [], {"shape": _sizes(given), "value": 0.0, "dtype": dtype})
    return read


for _name, _dtype_name in (("Tensor", "float32"), ("FloatTensor", "float32"), ("LongTensor", "int64"),
                           ("BoolTensor", "bool")):
    C.function(f"torch.{_name}", "ConstantOfShape", "*args", read=_legacy_constructor(_dtype_name))


C.function("Tensor.new_tensor", "Constant", "input data dtype=None device=None requires_grad=False",
           read=lambda a: OpCall("Constant", [], {"value": a["data"], "dtype": _dtype(a) or ast.Attribute(
               a["input"], "dtype", ast.Load())}))  # the tensor's own dtype unless given
C.function("torch.tensor", "Constant", "data dtype=None device=None requires_grad=False pin_memory=False",
           read=_tensor)


def _new_filled(value):
    """`x.new_zeros(size)`, ...: a constant of x's dtype unless one is given (new_empty's values are any)."""
    def read(a):
        fill = a["fill_value"] if value is None else value
        dtype = _dtype(a) or ast.Attribute(a["input"], "dtype", ast.Load())
        return OpCall("ConstantOfShape", [], {"shape": _sizes(a["size"]) if isinstance(a["size"], list)
                                              else a["size"], "value": fill, "dtype": dtype})
    return read


_NEW = "dtype=None device=None requires_grad=False layout=None pin_memory=False"
C.function("Tensor.new_zeros", "ConstantOfShape", f"input *size {_NEW}", read=_new_filled(0.0))
C.function("Tensor.new_empty", "ConstantOfShape", f"input *size {_NEW}", read=_new_filled(0.0))
C.function("Tensor.new_ones", "ConstantOfShape", f"input *size {_NEW}", read=_new_filled(1.0))
C.function("Tensor.new_full", "ConstantOfShape", f"input size fill_value {_NEW}", read=_new_filled(None))


# -- random values (drawn in the forward pass: stochastic depth, noise) -------------------------------------
def _random(op):
    def read(a):
        only(a, generator=None)
        if op.endswith("Like"):
            return OpCall(op, [a["input"]], {"dtype": _dtype(a)})
        return OpCall(op, [], {"shape": _sizes(a["size"]), "dtype": _dtype(a)})
    return read


for _name, _op in (("rand", "RandomUniform"), ("randn", "RandomNormal")):
    C.function(f"torch.{_name}", _op, f"*size generator=None out=None {_CREATION} pin_memory=False",
               read=_random(_op))
    C.function(f"torch.{_name}_like", f"{_op}Like", f"input {_CREATION} memory_format=None generator=None",
               read=_random(f"{_op}Like"))


def _bernoulli(a):
    """`t.bernoulli()`: 1 with t's probabilities; `t.bernoulli(p)` (as `t.new_empty(shape).bernoulli_(p)` computes):
    1 with probability p, in t's shape and dtype."""
    only(a, generator=None)
    return OpCall("Bernoulli", [a["input"]], {"p": a["p"]})


C.function("Tensor.bernoulli torch.bernoulli", "Bernoulli", "input p=None generator=None", read=_bernoulli)


def _one_hot(a):
    if known(a["num_classes"]) == -1:
        raise Refused("num_classes=-1 (the largest value plus one: a size that depends on the data)")
    return OpCall("OneHot", [a["input"]], {"num_classes": a["num_classes"], "dtype": "int64"})


C.function(f"{F}one_hot", "OneHot", "input num_classes=-1", read=_one_hot)
def _sampling(a):
    """F.affine_grid / F.grid_sample: 2-D, bilinear, zeros outside (align_corners None is PyTorch's False)."""
    only(a, **({"mode": "bilinear", "padding_mode": "zeros"} if "mode" in a else {}))
    if known(a["align_corners"]) not in (None, False, True):
        raise Refused("align_corners given by a variable")
    corners = {"align_corners": bool(known(a["align_corners"]))}
    if "size" in a:
        return OpCall("AffineGrid", [a["theta"]], {"size": a["size"], **corners})
    return OpCall("GridSample", [a["input"], a["grid"]], corners)


C.function(f"{F}affine_grid", "AffineGrid", "theta size align_corners=None", read=_sampling)
C.function(f"{F}grid_sample", "GridSample", "input grid mode='bilinear' padding_mode='zeros' align_corners=None",
           read=_sampling)
_UNFOLD = ("kernel_size", "dilation", "padding", "stride")
C.function(f"{F}unfold", "Unfold", "input kernel_size dilation=1 padding=0 stride=1",  # the sliding blocks
           read=lambda a: OpCall("Unfold", [a["input"]], {k: a[k] for k in _UNFOLD}))
C.layer("torch.nn.Unfold", "Unfold", "kernel_size dilation=1 padding=0 stride=1",
        read=lambda a: OpCall("Unfold", attrs={k: a[k] for k in _UNFOLD}))


# -- selections --------------------------------------------------------------------------------------------
def _extremum(op):
    """`x.max()` (over everything), `x.max(dim)` ((values, indices)), `torch.max(x, y)` (elementwise)."""
    def read(a):
        dim = known(a["dim"])
        if holds_tensor(a["dim"]):  # the second positional argument is a tensor: `torch.min(x, y)`
            only(a, keepdim=False)
            return OpCall(op, [a["input"], a["dim"]], returns="tensor")
        if dim is None:
            only(a, keepdim=False)
            return OpCall(f"Reduce{op}", [a["input"]], {"axis": None, "keepdims": False})
        if isinstance(dim, int):
            return OpCall(f"{op}WithIndex", [a["input"]], {"axis": a["dim"], "keepdims": a["keepdim"]})
        raise Refused(f"a dim given by a variable, or a second tensor (write torch.{op.lower()}imum(x, y) for the "
                      "elementwise form)")
    return read


for _name, _op in (("max", "Max"), ("min", "Min")):
    C.function(f"torch.{_name} Tensor.{_name}", f"{_op}WithIndex", "input dim=None keepdim=False",
               read=_extremum(_op), returns="tensors")
    _fn(f"torch.{_name}imum Tensor.{_name}imum", _op, "input other", inputs="input other")
for _name, _op in (("argmax", "ArgMax"), ("argmin", "ArgMin")):
    _fn(f"torch.{_name} Tensor.{_name}", _op, "input dim=None keepdim=False", axis="dim", keepdims="keepdim")


def _topk(a):
    only(a, sorted=True)
    if not isinstance(known(a["dim"]), (int, type(None))) or not isinstance(known(a["largest"]), bool):
        raise Refused("a dim or largest= given by a variable")
    return OpCall("TopK", [a["input"]], {"k": a["k"], "axis": a["dim"] if known(a["dim"]) is not None else -1,
                                         "largest": a["largest"]})


C.function("torch.topk Tensor.topk", "TopK", "input k dim=None largest=True sorted=True", read=_topk,
           returns="tensors")
_fn("torch.index_select Tensor.index_select", "Take", "input dim index", inputs="input index", axis="dim")
def _scatter(a):
    """torch.scatter / Tensor.scatter(dim, index, src or a number); `scatter_` is read by it (in-place methods)."""
    only(a, reduce=None)
    return OpCall("ScatterElements", [a["input"], a["index"], a["src"]], {"axis": a["dim"]})


C.function("torch.scatter Tensor.scatter", "ScatterElements", "input dim index src reduce=None", read=_scatter)
_fn("torch.gather Tensor.gather", "GatherElements", "input dim index sparse_grad=False", inputs="input index",
    axis="dim", check=lambda a: only(a, sparse_grad=False))
_fn("torch.unbind Tensor.unbind", "Unstack", "input dim=0", axis="dim", returns="tensors")
RNN = "torch.nn.utils.rnn."
# a batch of padded sequences and their lengths, which the recurrent layers read (steps past a sequence's length
# skipped): written kept padded (the targets' pack_padded_sequence / pad_packed_sequence helpers)
C.function(f"{RNN}pack_padded_sequence", "PackPadded", "input lengths batch_first=False enforce_sorted=True",
           read=lambda a: OpCall("PackPadded", [a["input"], a["lengths"]], {"batch_first": a["batch_first"]}))
C.function(f"{RNN}pad_packed_sequence", "PadPacked", "sequence batch_first=False padding_value=0.0 total_length=None",
           read=lambda a: OpCall("PadPacked", [a["sequence"]], {k: a[k] for k in (
               "batch_first", "padding_value", "total_length")}), returns="tensors")
# the windows of `size` along `dim`, `step` apart, each window's entries along a new last axis (patches)
_fn("Tensor.unfold", "Windows", "input dimension size step", axis="dimension", size="size", step="step")


def _split(a):
    """torch.split by a chunk size (the chunks the sections count of NumPy's split) or by a list of sizes (the
    indices where NumPy's split cuts)."""
    sizes = known(a["split_size_or_sections"])
    if isinstance(sizes, int) or sizes is NOT_LITERAL and not isinstance(a["split_size_or_sections"], ast.List):
        # a variable: a chunk size (a list of sizes there fails where the target divides the dim by it)
        return OpCall("SplitSize", [a["tensor"]], {"size": a["split_size_or_sections"], "axis": a["dim"]})
    if isinstance(sizes, (list, tuple)) and all(isinstance(s, int) for s in sizes):
        cuts = [sum(sizes[:i + 1]) for i in range(len(sizes) - 1)]
        return OpCall("Split", [a["tensor"]], {"sections": cuts, "axis": a["dim"]})
    cuts = split_cuts(a["split_size_or_sections"])
    if cuts is None:
        raise Refused("split sizes given by a variable")
    return OpCall("Split", [a["tensor"]], {"sections": cuts, "axis": a["dim"]})


C.function("torch.split", "Split", "tensor split_size_or_sections dim=0", read=_split, returns="tensors")
C.function("Tensor.split", "Split", "input split_size dim=0", returns="tensors", read=lambda a: _split(
    {"tensor": a["input"], "split_size_or_sections": a["split_size"], "dim": a["dim"]}))


# -- elementwise and cumulative ------------------------------------------------------------------------------
_fn("torch.sign Tensor.sign", "Sign", "input")
_fn("torch.round Tensor.round", "Round", "input decimals=0", check=lambda a: only(a, decimals=0))
C.function("torch.cumsum Tensor.cumsum", "CumSum", "input dim dtype=None", read=lambda a: OpCall(
    "CumSum", [a["input"]], {"axis": a["dim"], "dtype": _dtype(a)}))
C.function("torch.cumprod Tensor.cumprod", "CumProd", "input dim dtype=None", read=lambda a: OpCall(
    "CumProd", [a["input"]], {"axis": a["dim"], "dtype": _dtype(a)}))
_fn("torch.argsort Tensor.argsort", "ArgSort", "input dim=-1 descending=False stable=False", axis="dim",
    descending="descending", check=lambda a: isinstance(known(a["descending"]), bool) or _refuse(
        "descending given by a variable"))
_fn("torch.triu Tensor.triu", "Triu", "input diagonal=0", k="diagonal")
_fn(f"{F}logsigmoid", "LogSigmoid", "input")
_fn(f"{F}softsign", "Softsign", "input")
_fn(f"{F}glu", "Glu", "input dim=-1", axis="dim")
_fn(f"{F}hardtanh", "Clip", "input min_val=-1.0 max_val=1.0 inplace=False", min="min_val", max="max_val",
    inplace="inplace")
_fn("torch.addmm torch.baddbmm Tensor.addmm Tensor.baddbmm", "AddMatMul", "input mat1 mat2 beta=1 alpha=1",
    inputs="input mat1 mat2", beta="beta", alpha="alpha")
_fn("torch.cdist", "CDist", "x1 x2 p=2.0 compute_mode='use_mm_for_euclid_dist_if_necessary'", inputs="x1 x2", p="p",
    check=lambda a: known(a["p"]) in (1, 2, 1.0, 2.0) or only(a, p=2.0))
_fn(f"{F}pixel_shuffle", "DepthToSpace", "input upscale_factor", blocksize="upscale_factor", mode="CRD")
_fn(f"{F}pixel_unshuffle", "SpaceToDepth", "input downscale_factor", blocksize="downscale_factor", mode="CRD")


def _flip(a):
    dims = a["dims"]
    if len(dims) == 1 and isinstance(known(dims[0]), (list, tuple)):
        dims = [ast.Constant(d) for d in known(dims[0])]
    if not all(isinstance(known(d), int) for d in dims):
        raise Refused("flip dims given by a variable")
    return OpCall("Flip", [a["input"]], {"axes": [known(d) for d in dims]})


C.function("Tensor.flip", "Flip", "input *dims", read=_flip)
# -- Fourier transforms (FNet's token mixing): complex results, which Flax holds and Keras' tensors do not --------
for _path, _dims in (("fft", "dim=-1"), ("fft2", "s=None dim=(-2,-1)"), ("fftn", "s=None dim=None")):
    _fn(f"torch.fft.{_path}", "FFT", f"input {'n=None ' if _path == 'fft' else ''}{_dims} norm=None",
        axes="dim", check=lambda a: only(a, **{k: None for k in ("n", "s", "norm") if k in a}))
_fn("torch.real", "Real", "input")
C.function("torch.flip", "Flip", "input dims", read=lambda a: _flip({**a, "dims": [a["dims"]]}))
_fn("torch.roll Tensor.roll", "Roll", "input shifts dims=None", shifts="shifts", axes="dims")
_fn("Tensor.repeat", "Tile", "input *repeats", repeats="repeats")
_fn("torch.repeat_interleave Tensor.repeat_interleave", "Repeat", "input repeats dim=None output_size=None",
    repeats="repeats", axis="dim")


# -- statistics and norms ---------------------------------------------------------------------------------
def _moment(op):
    """torch.var / torch.std: Bessel's correction from `correction` or, in the older form, `unbiased`."""
    def read(a):
        correction = known(a["correction"])
        if correction is None:
            unbiased = known(a["unbiased"])
            correction = 1 if unbiased in (None, True) else 0 if unbiased is False else NOT_LITERAL
        if correction not in (0, 1):
            raise Refused("a correction other than 0 or 1, or one given by a variable")
        return OpCall(op, [a["input"]], {"axis": a["dim"], "keepdims": a["keepdim"], "correction": correction})
    return read


for _name, _op in (("var", "ReduceVar"), ("std", "ReduceStd")):
    C.function(f"torch.{_name} Tensor.{_name}", _op, "input dim=None unbiased=None keepdim=False correction=None",
               read=_moment(_op))
for _name, _op in (("var", "ReduceVar"), ("std", "ReduceStd")):
    C.function(f"torch.{_name}_mean", _op, "input dim=None unbiased=None keepdim=False correction=None",
               read=lambda a, op=_op: [_moment(op)(a), OpCall("ReduceMean", [a["input"]], {
                   "axis": a["dim"], "keepdims": a["keepdim"]})], returns="tensors")


def _l2(order: str, matrix: bool = False):
    """The 2-norm of vectors (Frobenius' over two dims is the same sum); `matrix`: the function reads ord=2 over
    two dims as the spectral norm (torch.linalg.norm)."""
    def read(a):
        p = known(a[order])
        if p not in (None, 2, 2.0, "fro") or matrix and p in (2, 2.0) and isinstance(known(a["dim"]), (list, tuple)):
            raise Refused(f"{order}={p!r} (the 2-norm of vectors is translated)")
        only(a, dtype=None)
        return OpCall("ReduceL2", [a["input"]], {"axis": a["dim"], "keepdims": a["keepdim"]})
    return read


C.function("torch.norm", "ReduceL2", "input p='fro' dim=None keepdim=False out=None dtype=None", read=_l2("p"))
C.function("Tensor.norm", "ReduceL2", "input p='fro' dim=None keepdim=False dtype=None", read=_l2("p"))
C.function("torch.linalg.norm", "ReduceL2", "input ord=None dim=None keepdim=False dtype=None",
           read=_l2("ord", matrix=True))
C.function("torch.linalg.vector_norm", "ReduceL2", "input ord=2 dim=None keepdim=False dtype=None",
           read=_l2("ord"))


def _cross_entropy(a):
    """F.cross_entropy of class scores against class indices (not probabilities: a float target is refused by
    the written helper's indexing), without class weights or label smoothing."""
    only(a, weight=None, size_average=None, reduce=None, label_smoothing=0.0)
    return OpCall("CrossEntropy", [a["input"], a["target"]], {"ignore_index": a["ignore_index"],
                                                               "reduction": a["reduction"]})


C.function(f"{F}cross_entropy", "CrossEntropy", "input target weight=None size_average=None ignore_index=-100 "
           "reduce=None reduction='mean' label_smoothing=0.0", read=_cross_entropy)


# -- layers as functions ----------------------------------------------------------------------------------
def _linear(a):
    """F.linear; a bias that may be None at run time (`None if self.bias is None else self.bias`) adds 0 then."""
    bias = a["bias"]
    if isinstance(bias, ast.IfExp):
        bias = ast.IfExp(bias.test, *[ast.Constant(0.0) if known(b) is None else b for b in (bias.body, bias.orelse)])
    return OpCall("Linear", [a["input"], a["weight"], bias])


C.function(f"{F}linear", "Linear", "input weight bias=None", read=_linear)


def _embedding(a):
    """F.embedding: rows of the weight; padding_idx and the gradient options change only training, max_norm
    rewrites the weight in place (refused)."""
    only(a, max_norm=None)
    return OpCall("Take", [a["weight"], a["input"]], {"axis": 0})


C.function(f"{F}embedding", "Take", "input weight padding_idx=None max_norm=None norm_type=2.0 "
           "scale_grad_by_freq=False sparse=False", read=_embedding)


def _layer_norm(a):
    shape = known(a["normalized_shape"])
    if isinstance(shape, int):
        shape = (shape,)
    axes = len(shape) if isinstance(shape, (list, tuple)) else NOT_LITERAL
    if axes is NOT_LITERAL:
        axes = ast.Call(ast.Name("len", ast.Load()), [a["normalized_shape"]], [])
    return OpCall("LayerNormFn", [a["input"], a["weight"], a["bias"]], {"axes": axes, "epsilon": a["eps"]})


C.function(f"{F}layer_norm", "LayerNormFn", "input normalized_shape weight=None bias=None eps=1e-05",
           read=_layer_norm)


def _attention(a):
    only(a, enable_gqa=False)
    return OpCall("ScaledDotProductAttention", [a["query"], a["key"], a["value"], a["attn_mask"]],
                  {"dropout": a["dropout_p"], "is_causal": a["is_causal"], "scale": a["scale"]})


C.function(f"{F}scaled_dot_product_attention", "ScaledDotProductAttention", "query key value attn_mask=None "
           "dropout_p=0.0 is_causal=False scale=None enable_gqa=False", read=_attention)
