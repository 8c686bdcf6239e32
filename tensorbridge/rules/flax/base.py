"""The Flax registry object, its row helpers, and what its export rules share.

Export writers take (emitter, ir_node) and add statements through the emitter (`em.out`, `em.layer`,
`em.tensor`), raising `Unsupported` with a reason for configurations Flax NNX cannot express. Layers are
NNX modules built in `__init__` (`nnx.Conv`, `nnx.Linear`, `nnx.BatchNorm` ...); everything else is a
`jax.numpy` / `jax.nn` / `jax.lax` call in `__call__`. Flax is channels-last: layout-carrying ops reach the
writers planned NHWC.
"""

from __future__ import annotations

from tensorbridge.codegen import pyast as P
from tensorbridge.codegen.rule_helpers import Unsupported, int_operand
from tensorbridge.rules.core import Registry

R = Registry("flax")
R.refuses_strings("JAX has no string arrays")
R.holds(lambda node, name: "JAX has no string arrays" if name == "string" else None)
#: ops whose output's size is the data's to say (a constant MelWeightMatrix is folded at conversion)
for _op in ("NonZero", "Unique", "Compress", "NonMaxSuppression", "MelWeightMatrix"):
    R.refuses(_op, "under jax.jit an array's shape is fixed before the data is seen")

#: IR dtype name -> the jax.numpy dtype the generated code names: JAX computes in 32 bits unless
#: `jax_enable_x64` is set, so 64-bit types are written as their 32-bit counterparts
JAX_DTYPES = {"float32": "jnp.float32", "float64": "jnp.float32", "float16": "jnp.float16",
              "bfloat16": "jnp.bfloat16", "int64": "jnp.int32", "int32": "jnp.int32", "int16": "jnp.int16",
              "int8": "jnp.int8", "uint8": "jnp.uint8", "uint16": "jnp.uint16", "uint32": "jnp.uint32",
              "bool": "jnp.bool_"}


def unary(ir_op: str, fn: str, **kwargs) -> None:
    """`ir_op` written as `fn(x, **kwargs)`."""
    R.add_export((ir_op,), lambda em, node: em.out(node, P.call(fn, em.tensor(node.inputs[0]), **kwargs)))


def binary(ir_op: str, write: str, shape_write=None) -> None:
    """`ir_op` written as the Python operator `write` ("+") or the call `write` ("jnp.maximum"); on shape values
    as `shape_write` says (rules/shape_values.py)."""
    def emit(em, node):
        a, b = node.inputs
        if write in P.OPERATORS:
            return em.out(node, P.binop(em.arg(a), write, em.arg(b)))
        em.out(node, P.call(write, em.tensor(a), em.tensor(b)))
    R.add_export((ir_op,), emit, shape_write)


def require_nhwc(node) -> None:
    x = node.inputs[0]
    if node.attrs.get("layout", "NCHW") != "NHWC" and not (x.shape is not None and len(x.shape) <= 2):
        raise Unsupported("channels-first layout reached the Flax backend (run the layout pass first)")


def static_shape(v) -> tuple[int, ...]:
    if v.shape is None or not all(isinstance(d, int) for d in v.shape):
        raise Unsupported(f"{v.name!r} needs a static shape")
    return tuple(v.shape)


def input_rank(node) -> int:
    """The rank of the node's first input (writers that index axes need it)."""
    x = node.inputs[0]
    if x.shape is None:
        raise Unsupported(f"{node.op} needs the input rank")
    return len(x.shape)


def axes_of(node, index: int, rank: int) -> list[int] | None:
    """Normalised axes from the node's operand `index` (None: the operand is absent)."""
    v = node.input(index)
    if v is None:
        return None
    return [a % rank for a in int_operand(v)]


def explicit_padding(node, nsp: int, kernel) -> str | list[tuple[int, int]]:
    """Flax's padding argument for a window op: "SAME" (TF's, which ONNX calls SAME_UPPER), "VALID" or
    ((begin, end), ...) pairs."""
    auto_pad = node.attrs.get("auto_pad", "NOTSET")
    if auto_pad == "SAME_UPPER":
        return "SAME"
    if auto_pad == "VALID":
        return "VALID"
    if auto_pad == "SAME_LOWER":
        from tensorbridge.reference.kernels.conv import resolve_pads

        spatial = static_shape(node.inputs[0])[1:1 + nsp]
        pads = resolve_pads(spatial, kernel, node.attrs.get("strides") or [1] * nsp,
                            node.attrs.get("dilations") or [1] * nsp, None, auto_pad)
    else:
        pads = node.attrs.get("pads") or [0] * (2 * nsp)
    if not any(pads):
        return "VALID"
    return [(int(pads[i]), int(pads[i + nsp])) for i in range(nsp)]
