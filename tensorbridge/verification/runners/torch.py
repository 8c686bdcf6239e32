"""Runs PyTorch models: a generated code folder (model.py + weights) or a `.pt2` program.

Loading a code folder imports its `model.py` and a TorchScript archive runs its code: both load only
when trusted (`tensorbridge.trust`).
"""

from __future__ import annotations

import numpy as np

from tensorbridge import trust
from tensorbridge.errors import ModelError
from tensorbridge.rules.torch.base import dtype_name, to_numpy, to_torch
from tensorbridge.verification.runners.generated import GeneratedModuleRunner, capture_locals


def _flatten(out) -> list:
    if isinstance(out, (list, tuple)):
        return [x for o in out for x in _flatten(o)]
    if isinstance(out, dict):
        return [x for o in out.values() for x in _flatten(o)]
    return [out]


class TorchModuleRunner(GeneratedModuleRunner):
    name = "PyTorch (generated module)"

    def __init__(self, source, **options):
        import torch

        super().__init__(source, **options)
        self._torch = torch

    def run(self, feeds):
        with self._torch.no_grad():
            out = self.module(*[to_torch(feeds[n]) for n, _, _ in self.inputs])
        return {n: to_numpy(t) for n, t in zip(self.outputs, _flatten(out))}

    def run_intermediates(self, feeds) -> dict[str, np.ndarray]:
        """Every value forward() computes, by IR value name (each op writes its own local)."""
        with self._torch.no_grad():
            frame_locals = capture_locals(self.module.forward, *[to_torch(feeds[n]) for n, _, _ in self.inputs],
                                          copy=_clone)
        return self.by_value_name(frame_locals, lambda t: isinstance(t, self._torch.Tensor), to_numpy)


class ExportedProgramRunner:
    name = "PyTorch (torch.export program)"

    def __init__(self, source, **_options):
        import torch

        from tensorbridge.frontends.torch.importer import load_program

        self.ep = load_program(source)
        sig = self.ep.graph_signature
        nodes = {n.name: n for n in self.ep.graph.nodes}

        self.inputs = []
        for name in sig.user_inputs:
            val = nodes[name].meta["val"]
            shape = tuple(d if isinstance(d, int) else None for d in val.shape)
            self.inputs.append((name, dtype_name(val.dtype), shape))
        self.outputs = list(sig.user_outputs)
        self.module = self.ep.module()
        self._torch = torch

    def run(self, feeds):
        with self._torch.no_grad():
            out = self.module(*[to_torch(feeds[n]) for n, _, _ in self.inputs])
        return {n: to_numpy(t) for n, t in zip(self.outputs, _flatten(out))}

    def output_steps(self) -> dict[str, float]:
        """Outputs a PT2E program dequantizes per tensor with a constant scale: name -> scale."""
        from tensorbridge.frontends.torch.importer import pt2e_name

        output = next(n for n in self.ep.graph.nodes if n.op == "output")
        steps = {}
        for name, node in zip(self.outputs, output.args[0]):
            if pt2e_name(getattr(node, "target", None)) == "dequantize_per_tensor" \
                    and isinstance(node.args[1], float):
                steps[name] = node.args[1]
        return steps


class TorchScriptRunner:
    """A TorchScript archive run by TorchScript's interpreter. It records no input shapes: verification takes
    them from the converted model (or --input-shape); dtypes are float32 unless `input_dtypes` says."""

    name = "PyTorch (TorchScript)"

    def __init__(self, source, input_dtypes: dict | None = None, **_options):
        import torch

        from tensorbridge.frontends.torch.torchscript import TORCHSCRIPT, argument_names

        trust.require(source, TORCHSCRIPT)
        try:
            self.module = torch.jit.load(str(source), map_location="cpu").eval()
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"cannot load {source} as a TorchScript archive: {str(e).splitlines()[0][:200]}") \
                from None
        self.inputs = [(n, (input_dtypes or {}).get(n), None) for n in argument_names(self.module)]
        self.outputs = ["output"]
        self._torch = torch

    def run(self, feeds):
        with self._torch.no_grad():
            out = _flatten(self.module(*[to_torch(feeds[n]) for n, _, _ in self.inputs]))
        if len(self.outputs) != len(out):
            self.outputs = [f"output_{i}" for i in range(len(out))] if len(out) > 1 else ["output"]
        return {n: to_numpy(t) for n, t in zip(self.outputs, out)}


def _clone(obj):
    """Generated code may overwrite a tensor in place (`F.relu(x, inplace=True)`): keep what it held."""
    import torch

    return obj.clone() if isinstance(obj, torch.Tensor) else obj
