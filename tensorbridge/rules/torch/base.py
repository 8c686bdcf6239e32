"""The PyTorch registry object, its row helpers, and what its import and export rules share.

Import converters take (importer, fx_node, *aten_args, **aten_kwargs) with the ATen schema's
argument names and return the IR value(s) of the node's output(s). Export writers take
(emitter, ir_node) and add statements through the emitter (`em.out`, `em.layer`, `em.tensor`),
raising `Unsupported` with a reason for configurations PyTorch cannot express.

Namespaces of source names: `aten` (ATen overload packets as `torch.export` emits them),
`pt2e` (the `quantized_decomposed` ops a PT2E program holds), `python` (operators on symbolic
sizes that `torch.export` leaves in the graph), `library` (ops libraries register with torch.library, by
"namespace.name": transformers' grouped matmul).
"""

from __future__ import annotations

import ast
import functools

import numpy as np

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported
from tensorbridge.errors import ModelError
from tensorbridge.ir import dtypes
from tensorbridge.ops.elementwise import LOGICAL
from tensorbridge.rules.core import ImportRule, Registry
from tensorbridge.rules.ir_spellings import floor_divide

STRINGS = "PyTorch has no string tensors"
R = Registry("torch")
R.refuses_strings(STRINGS)
aten = functools.partial(R.imports, kind="aten")
pt2e = functools.partial(R.imports, kind="pt2e")
python_op = functools.partial(R.imports, kind="python")
higher_order = functools.partial(R.imports, kind="higher_order")  # torch.ops.higher_order: control flow
library_op = functools.partial(R.imports, kind="library")  # a library's torch.library op: "namespace.name"

#: ATen ops no conversion should hold, with the reason a refusal gives
RANDOM = "the model draws random numbers when it runs (ViTMAE's masking, say), so its output differs on every " \
         "run and no conversion of it can be checked; a model meant for inference draws none in eval mode"
UNCONVERTIBLE = dict.fromkeys(("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                               "normal", "uniform", "bernoulli", "multinomial", "exponential", "poisson"), RANDOM)

TORCH_DTYPES = {"float32": "torch.float32", "float64": "torch.float64", "float16": "torch.float16",
                "bfloat16": "torch.bfloat16", "int64": "torch.int64", "int32": "torch.int32",
                "int16": "torch.int16", "int8": "torch.int8", "uint8": "torch.uint8", "bool": "torch.bool"}


#: ops that only move or reinterpret elements: all that torch's wide unsigned types have kernels for
_MOVES = {"Cast", "CastLike", "BitCast", "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"}


def _held(node, name: str) -> str | None:
    """Why PyTorch code cannot compute `node` on a tensor of type `name` (None: it can)."""
    if name in TORCH_DTYPES:
        return None
    if name == "string":
        return STRINGS
    if name in ("uint16", "uint32", "uint64"):
        return None if node is None or node.op in _MOVES else \
            f"torch's {name} tensors have kernels only to cast and move them"
    return f"PyTorch code holds no {name} tensors"


R.holds(_held)


def dtype_name(dt) -> str:
    """The IR dtype name of a torch dtype."""
    name = str(dt).removeprefix("torch.")
    if name not in TORCH_DTYPES:
        raise ModelError(f"torch dtype {dt} is not supported")
    return name


def to_torch(arr):
    """A NumPy array as a torch tensor (bfloat16 kept through its bits)."""
    import torch

    arr = np.asarray(arr)
    dense = np.asarray(arr, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    if str(arr.dtype) == "bfloat16":
        return torch.from_numpy(dense.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(dense)


def to_numpy(t) -> np.ndarray:
    """A torch tensor as a NumPy array (bfloat16 kept through ml_dtypes)."""
    import torch

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(dtypes.dtype("bfloat16"))
    return t.numpy()


# -- rows: one ATen op <-> one IR op <-> one torch callable ------------------------------------------
#: IR ops whose torch code returns a new tensor that autograd does not keep for the backward pass: a later op may
#: write its result into it (`F.relu(x, inplace=True)`, `out.add_(identity)`)
OVERWRITABLE_RESULTS = frozenset({"Conv", "ConvTranspose", "BatchNormalization", "Add", "Gemm", "MatMul"})


def unary(names: str | None, ir_op: str, call: str | None = None) -> None:
    """ATen unary op(s) `names` (space-separated) read as `ir_op`; written back as `call(x)`."""
    if names:
        R.add_import(ImportRule("aten", tuple(names.split()), (ir_op,), convert=_read_unary(ir_op)))
    if call:
        R.add_export((ir_op,), _write_call(call))


def binary(names: str | None, ir_op: str, write: str | None = None, attrs: dict | None = None,
           shape_write=None) -> None:
    """ATen binary op(s) (tensor or scalar operands, `alpha` for add/sub) read as `ir_op`; written back as the
    Python operator `write` ("+") or the call `write` ("torch.eq")."""
    if names:
        R.add_import(ImportRule("aten", tuple(names.split()), (ir_op,), convert=_read_binary(ir_op, attrs or {})))
    if write:
        R.add_export((ir_op,), _write_operator(write) if write in P.OPERATORS else _write_call(write, binary=True),
                     shape_write)


def _read_unary(ir_op):
    def convert(imp, node, x, *rest, **kw):
        return imp.emit(ir_op, [as_dtype(imp, x, np.dtype(bool)) if ir_op in LOGICAL else imp.value(x)])
    return convert


#: IR ops of PyTorch's arithmetic, whose operands PyTorch promotes to the result's dtype (an int tensor times 0.5,
#: true division of ints, a float plus a bool mask)
PROMOTING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod"})


def as_dtype(imp, x, dtype):
    """An operand (fx node or Python number) as an IR value of `dtype`, cast where it holds another."""
    if isinstance(x, (bool, int, float)):
        return imp.const(x, dtype=dtype)
    v = imp.value(x)
    return v if v.dtype == dtype else imp.emit("Cast", [v], {"to": dtypes.name(dtype)}, suffix="promoted")


#: comparisons, which PyTorch makes in its operands' common type (a bool mask compared with 0 in int64)
COMPARING = frozenset({"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})


def _compared_dtype(imp, ir_op: str, a, b) -> np.dtype:
    """The type PyTorch compares `a` and `b` in (fx nodes or Python numbers): their common type; booleans are
    ordered as int32 (the IR's order comparisons take numbers)."""
    import torch

    symbolic = {torch.SymInt: 0, torch.SymFloat: 0.0, torch.SymBool: False}  # a size: its Python type is its type

    def operand(x):
        meta = imp.meta(x) if hasattr(x, "op") else x
        return meta if isinstance(meta, torch.Tensor) else symbolic.get(type(meta), meta)

    common = torch.result_type(operand(a), operand(b))
    if common == torch.bool:
        return np.dtype(bool) if ir_op == "Equal" else np.dtype(np.int32)
    return np.dtype(dtypes.dtype(dtype_name(common)))


def _read_binary(ir_op, attrs):
    def convert(imp, node, a, b, *rest, **kw):
        out = imp.meta()
        if ir_op in PROMOTING and hasattr(out, "dtype") and str(out.dtype).removeprefix("torch.") in TORCH_DTYPES:
            result = np.dtype(dtypes.dtype(dtype_name(out.dtype)))
            av, bv = as_dtype(imp, a, result), as_dtype(imp, b, result)
        elif ir_op in LOGICAL:
            av, bv = as_dtype(imp, a, np.dtype(bool)), as_dtype(imp, b, np.dtype(bool))
        elif ir_op in COMPARING:
            common = _compared_dtype(imp, ir_op, a, b)
            av, bv = as_dtype(imp, a, common), as_dtype(imp, b, common)
        else:
            av, bv = imp.value(a, like=b), imp.value(b, like=a)
        alpha = kw.get("alpha", rest[0] if rest else 1)
        if alpha != 1 and ir_op in ("Add", "Sub"):
            bv = imp.emit("Mul", [bv, imp.const(alpha, like=bv)], suffix="alpha")
        if ir_op == "Div" and kw.get("rounding_mode") == "floor":
            return floor_divide(imp, av, bv)
        if ir_op == "Div" and kw.get("rounding_mode") == "trunc" and av.dtype is not None and av.dtype.kind == "f":
            raise ModelError(f"{node.name}: float division with rounding_mode='trunc' has no IR op yet")
        return imp.emit(ir_op, [av, bv], attrs or None)
    return convert


def _write_call(fn: str, binary: bool = False):
    def write(em, node):
        if binary:
            a, b = node.inputs
            return em.out(node, P.call(fn, em.tensor(a), operand(em, b, a)))
        em.out(node, P.call(fn, em.tensor(node.inputs[0])))
    return write


def _write_operator(sym: str):
    def write(em, node):
        a, b = node.inputs
        em.out(node, P.binop(operand(em, a, b), sym, operand(em, b, a)))
    return write


# -- what import converters share -------------------------------------------------------------------
def ints(v, n=None):
    """An int or a list of ints as a list (an int repeated `n` times)."""
    if isinstance(v, int):
        return [v] * (n or 1)
    return [int(x) for x in v]


def const_data(imp, arg):
    """The constant data behind an fx argument, or None."""
    if hasattr(arg, "name"):
        v = imp.env.get(arg.name)
        return getattr(v, "const", None)
    return None


# -- what export writers share ----------------------------------------------------------------------
def non_default(**given_and_defaults):
    """Keep only the keyword arguments that differ from PyTorch's defaults: name=(value, default)."""
    return {k: v for k, (v, d) in given_and_defaults.items() if v != d}


def torch_momentum(ir_momentum: float) -> float:
    return float(f"{1 - ir_momentum:.12g}")  # IR keeps the running-average factor, torch its complement


def operand(em, v, other):
    """Scalars stay Python numbers (torch keeps the tensor's dtype), unless both sides are constant."""
    if other.const is not None and v.const is not None:
        return em.tensor(v)
    return em.arg(v)


def require_nchw(node):
    if node.attrs.get("layout", "NCHW") != "NCHW":
        raise Unsupported("channels-last layout (run the layout pass first)")


SAME_PADDING = '''def same_padding(sizes, kernel, stride, dilation, upper=True):
    """F.pad's list for SAME padding of spatial axes of these sizes: each padded to hold ceil(size / stride)
    windows, the odd pixel at the end (upper) or at the start."""
    pads = []
    for size, k, s, d in zip(reversed(sizes), reversed(kernel), reversed(stride), reversed(dilation)):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        pads += [total // 2, total - total // 2] if upper else [total - total // 2, total // 2]
    return pads
'''


def same_at_run_time(node) -> bool:
    """Whether a window op's SAME padding depends on spatial sizes known only when the model runs."""
    x = node.inputs[0]
    return node.attrs.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER") and \
        (x.shape is None or not all(isinstance(d, int) for d in x.shape[2:]))


def same_padded(em, node, nsp: int, xe: ast.expr, fill: float = 0.0) -> ast.expr:
    """`xe` padded as the node's SAME padding asks at the sizes it has when the model runs (same_padding)."""
    k = node.attrs.get("kernel_shape") or list(node.inputs[1].shape[2:])
    sizes = P.call("list", P.subscript(ast.Attribute(xe, "shape", ast.Load()), P.slice_(2, None)))
    pads = P.call(em.helper(SAME_PADDING), sizes, list(k), node.attrs.get("strides") or [1] * nsp,
                  node.attrs.get("dilations") or [1] * nsp,
                  **({} if node.attrs["auto_pad"] == "SAME_UPPER" else {"upper": False}))
    return P.call("F.pad", xe, pads, **({"value": fill} if fill else {}))


def explicit_pads(node, nsp):
    """(begin, end) pads of a window op, SAME padding resolved on static spatial dims (see same_padded)."""
    pads = node.attrs.get("pads") or [0] * (2 * nsp)
    ap = node.attrs.get("auto_pad", "NOTSET")
    if ap not in ("NOTSET", "VALID", None):
        x = node.inputs[0]
        if same_at_run_time(node):
            raise Unsupported(f"auto_pad={ap} needs static spatial dims")
        from tensorbridge.reference.kernels.conv import resolve_pads

        k = node.attrs.get("kernel_shape") or list(node.inputs[1].shape[2:])
        pads = resolve_pads(x.shape[2:], k, node.attrs.get("strides") or [1] * nsp,
                            node.attrs.get("dilations") or [1] * nsp, None, ap)
    return list(pads[:nsp]), list(pads[nsp:])


def pre_pad(em, x_expr, begin, end, value=0.0):
    """F.pad for asymmetric padding (torch pad lists run from the last dim backwards)."""
    flat = []
    for b, e in zip(reversed(begin), reversed(end)):
        flat += [b, e]
    return P.call("F.pad", x_expr, flat, value=value)
