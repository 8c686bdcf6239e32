"""What a PyTorch program computes from constants alone, computed by PyTorch when it is read.

The IR's folding computes such values with NumPy, whose float32 kernels (exp, sin, pow) round some results one
ulp away from PyTorch's. Most models do not notice; one that amplifies a constant does: a diffusion model's
timestep embedding multiplies its frequencies (exp of a range) by the timestep and by 1000 before a sine, where
one ulp of a frequency moves the sine by 1e-2. Evaluated with the source's own kernels, the IR's constants are
the source's, bit for bit.

Parameters stay weights (what is computed from them stays ops a generated module trains), quantized weights keep
their (de)quantization, random and uninitialised results are not constants, and results are bounded as the IR's
folding bounds them (tensorbridge/passes/fold_constants.py), before anything is computed.
"""

from __future__ import annotations

from tensorbridge.passes.fold_constants import FREE_BYTES, GROWTH_BUDGET

#: ATen ops whose result is not determined by their operands (memory left as it was)
UNINITIALISED = ("empty", "new_empty", "empty_like", "empty_strided", "empty_permuted")


def fold_in_torch(ep) -> dict:
    """{fx node name: tensor} for the program's call nodes computed from buffers and literals only."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map

    sig = ep.graph_signature
    state = {**ep.state_dict, **getattr(ep, "constants", {})}
    fixed = {**sig.inputs_to_buffers, **getattr(sig, "inputs_to_lifted_tensor_constants", {})}
    written = set(getattr(sig, "buffers_to_mutate", {}).values())
    known = {n.name: state[fixed[n.name]] for n in ep.graph.nodes
             if n.op == "placeholder" and fixed.get(n.name) in state and fixed[n.name] not in written}
    folded, budget = {}, GROWTH_BUDGET
    for node in ep.graph.nodes:
        if node.op != "call_function" or not _pure(node.target):
            continue
        operands = [a for a in tree_flatten((node.args, node.kwargs))[0] if isinstance(a, torch.fx.Node)]
        result = node.meta.get("val")
        if any(a.name not in known for a in operands) or not _static_real(result):
            continue
        growth = _bytes(result) - 8 * sum(_bytes(known[a.name]) for a in operands)
        if growth > min(FREE_BYTES, budget):
            continue
        args, kwargs = tree_map(lambda a: known[a.name] if isinstance(a, torch.fx.Node) else a,
                                (node.args, node.kwargs))
        try:
            out = node.target(*args, **kwargs)
        except Exception:  # noqa: BLE001 - left to the op's rule, which reports what it cannot read
            continue
        if isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(result.shape) and out.dtype == result.dtype:
            budget -= max(growth, 0)
            known[node.name] = folded[node.name] = out
    return folded


def _pure(target) -> bool:
    import torch

    if getattr(target, "namespace", None) != "aten" or not hasattr(target, "_schema"):
        return False  # quantize/dequantize (kept), control flow, Python and library calls
    if target._schema.is_mutable or torch.Tag.nondeterministic_seeded in getattr(target, "tags", ()):
        return False
    return target.__name__.split(".")[0] not in UNINITIALISED


def _static_real(val) -> bool:
    import torch

    return isinstance(val, torch.Tensor) and not val.is_complex() and all(isinstance(d, int) for d in val.shape)


def _bytes(t) -> int:
    return t.numel() * t.element_size()
