"""TorchScript archives (`torch.jit.save`) as a source.

The archive is read with `torch.jit.load` (TorchScript's own loader: its code is TorchScript, compiled,
never Python, and its data is read by its restricted unpickler, which builds tensors and TorchScript
types only) and turned into a `torch.export` program by PyTorch's TorchScript converter, which the
ATen import rules then read: a scripted `if` on tensor values becomes `torch.cond`, read as an If (a
data-dependent scripted loop is beyond that converter, and its error is reported). A trace's arithmetic on
sizes, recorded on 0-d tensors, is first rewritten as the int arithmetic it is (`sizes_as_ints`). An archive records no
input shapes, so the inputs come from `input_shapes` (the CLI's --input-shape NAME=d0,d1,...[:dtype];
float32 unless a dtype follows the dims).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from tensorbridge import trust
from tensorbridge.errors import ModelError

#: what a TorchScript archive is, for the --trust-code request
TORCHSCRIPT = "a TorchScript archive (it carries TorchScript code, which runs when it is loaded)"


def is_torchscript(path: Path) -> bool:
    """A zip holding TorchScript code (`<archive>/code/`), as torch.jit.save writes."""
    try:
        with zipfile.ZipFile(path) as z:
            return any("/code/" in name for name in z.namelist())
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return False


def argument_names(module) -> list[str]:
    """The names of forward()'s tensor arguments, as the scripted code declares them."""
    return [a.name for a in module.forward.schema.arguments[1:]]


def example_inputs(module, input_shapes: dict | None, input_dtypes: dict | None = None) -> tuple:
    """Seeded tensors of the given shapes (and dtypes) for forward()'s arguments; a clear error without them."""
    from tensorbridge.rules.torch.base import to_torch

    names = argument_names(module)
    missing = [n for n in names if not input_shapes or n not in input_shapes]
    if missing:
        example = " ".join(f"--input-shape {n}=1,3,224,224" for n in missing)
        raise ModelError(f"a TorchScript archive records no input shapes: give every input's, e.g. {example} "
                         f"(append :int64 for token ids); its inputs are {names}")
    out = []
    for name in names:
        dims = input_shapes[name]
        if not all(isinstance(d, int) and d > 0 for d in dims):
            raise ModelError(f"--input-shape {name}: a TorchScript source needs sizes, got {dims}")
        dtype = np.dtype((input_dtypes or {}).get(name, "float32"))
        rng = np.random.default_rng(0)
        arr = rng.standard_normal(dims).astype(dtype) if dtype.kind == "f" else rng.integers(0, 2, dims).astype(dtype)
        out.append(to_torch(arr))
    return tuple(out)


#: a trace's arithmetic on sizes held in 0-d tensors -> the int op computing it (aten::rsub swaps its operands)
INT_ARITHMETIC = {"aten::add": "aten::add", "aten::sub": "aten::sub", "aten::rsub": "aten::sub",
                  "aten::mul": "aten::mul", "aten::floor_divide": "aten::floordiv",
                  "aten::remainder": "aten::remainder"}


def sizes_as_ints(graph) -> None:
    """A trace records arithmetic on sizes (Swin's window padding, `H % window`) as ops on 0-d tensors between
    `prim::NumToTensor` and `aten::Int`; PyTorch's converter reads each `aten::Int` as a value taken from the data
    (`.item()`), which leaves sizes it cannot reason about. Each such chain is rewritten as the int arithmetic it
    records, so the sizes stay sizes (of the input dims); a chain of other ops is left as it is."""
    import torch

    made: dict = {}

    def as_int(v, before):
        if v.type().kind() == "IntType":
            return v
        if v.unique() in made:
            return made[v.unique()]
        node, found = v.node(), None
        if node.kind() == "prim::NumToTensor":
            found = node.input()
        elif node.kind() == "prim::Constant":
            value = v.toIValue()
            if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_floating_point():
                with graph.insert_point_guard(before):
                    found = graph.insertConstant(int(value))
        elif node.kind() in INT_ARITHMETIC:
            inputs = list(node.inputs())
            if len(inputs) == 3 and inputs[2].toIValue() != 1:  # a scaled sum (alpha)
                return None
            a, b = (as_int(x, before) for x in inputs[:2])
            if a is not None and b is not None:
                with graph.insert_point_guard(before):
                    found = graph.insert(INT_ARITHMETIC[node.kind()], [b, a] if node.kind() == "aten::rsub" else [a, b])
        made[v.unique()] = found
        return found

    for node in list(graph.nodes()):
        if node.kind() == "aten::Int":
            value = as_int(node.input(), node)
            if value is not None:
                node.output().replaceAllUsesWith(value)
    torch._C._jit_pass_dce(graph)


def load(source, input_shapes: dict | None = None, input_dtypes: dict | None = None, **_options):
    """Import a TorchScript archive (path) or ScriptModule into the IR."""
    import torch

    from tensorbridge.frontends.torch.importer import load as load_program

    if isinstance(source, (str, Path)):
        trust.require(source, TORCHSCRIPT)
        try:
            module = torch.jit.load(str(source), map_location="cpu")
        except Exception as e:  # noqa: BLE001 - TorchScript raises many kinds for a bad archive
            raise ModelError(f"{source} is not a readable TorchScript archive: {str(e).splitlines()[0][:200]}") \
                from None
    else:
        module = source
    module.eval()
    args = example_inputs(module, input_shapes, input_dtypes)
    from torch._export.converter import TS2EPConverter

    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            converter = TS2EPConverter(module, args)
            sizes_as_ints(converter.ts_graph)
            program = converter.convert()
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"PyTorch's TorchScript converter could not read the program: {type(e).__name__}: "
                         f"{str(e).splitlines()[0][:300] if str(e) else ''}") from None
    graph = load_program(program)
    for v, name in zip(graph.inputs, argument_names(module)):  # the scripted code's own argument names
        if v.name != name:
            v.name = graph.unique_name(name)
    graph.metadata["source_framework"] = "torchscript"
    return graph
