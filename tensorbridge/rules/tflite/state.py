"""TFLite resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE and CALL_ONCE.

A model's variables become explicit state inputs and outputs (frontends/tflite/state.py). Their operands are
handles, not tensors, so these converters get the operator's tensor indices (`RESOURCE_OPS`), not IR values.
"""

from __future__ import annotations

from tensorbridge.rules.tflite.base import builtin


def _output(imp) -> int:
    return int(imp.op.OutputsAsNumpy()[0])


@builtin("VAR_HANDLE", produces=())
def var_handle(imp, tensors, opts):
    """The variable `shared_name` (in `container`) names."""
    container, shared = (s.decode("utf-8", "replace") if s else "" for s in (opts.Container(), opts.SharedName()))
    imp.state.handle(_output(imp), "/".join(p for p in (container, shared) if p) or imp.tensor_name(_output(imp)))


@builtin("READ_VARIABLE", produces=())
def read_variable(imp, tensors, opts):
    imp.adopt(_output(imp), imp.state.read(tensors[0]))


@builtin("ASSIGN_VARIABLE", produces=())
def assign_variable(imp, tensors, opts):
    imp.state.assign(tensors[0], imp.value(tensors[1]))


@builtin("CALL_ONCE", produces=())
def call_once(imp, tensors, opts):
    """The first call's initialisation: the initial values of the variables it assigns."""
    imp.state.initialize(opts.InitSubgraphIndex())
