"""einops in model code (rules/code.py). Its functions (`rearrange`, `reduce`, `repeat`, `einsum`, ...) take any
framework's tensors, so calls of them stay as written, with their imports. Its layers are per framework
(`einops.layers.torch.Rearrange`, `einops.layers.keras.Reduce`): read as code ops carrying the pattern, the
reduction and the axis sizes, and written as the target's einops layer, or, for a framework einops has no layer
for (Flax NNX), as the function the layer applies.
"""

from __future__ import annotations

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.code import CodeTable, OpCall

#: einops layer class -> (code op, its constructor's signature)
LAYERS = {"Rearrange": ("EinopsRearrange", "pattern **axes_lengths"),
          "Reduce": ("EinopsReduce", "pattern reduction **axes_lengths")}


def _arguments(c: OpCall) -> tuple[list, dict]:
    """The layer's constructor arguments: the pattern (and reduction), then the axis sizes by name."""
    given = [c.attrs["pattern"]] + ([c.attrs["reduction"]] if "reduction" in c.attrs else [])
    return given, c.attrs["axes_lengths"]


def _writer(callee: str, with_inputs: bool):
    def write(c: OpCall):
        args, sizes = _arguments(c)
        return P.call(callee, *(c.inputs if with_inputs else []), *args, **sizes)
    return write


def einops_layers(table: CodeTable, module: str) -> None:
    """Rows of `module`'s einops layers (einops.layers.torch), read and written by `table`."""
    for cls, (op, signature) in LAYERS.items():
        table.layer(f"{module}.{cls}", op, signature, read=lambda a, op=op: OpCall(op, attrs=dict(a)),
                    write=_writer(f"{module}.{cls}", with_inputs=False))


def einops_functions(table: CodeTable) -> None:
    """Writers of the einops layers as the functions they apply (`einops.rearrange(x, pattern, **sizes)`), for a
    target without einops layers: its layer is then the function in the target's function layer."""
    for cls, (op, _) in LAYERS.items():
        table.writes(op, f"einops.{cls.lower()}")(_writer(f"einops.{cls.lower()}", with_inputs=True))
