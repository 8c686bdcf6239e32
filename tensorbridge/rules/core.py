"""`Registry`: one per framework, keyed by IR op and read both ways.

A framework's registry says, for every IR op it handles, how the framework's own op reads
into the IR (import rules, keyed by the source name) and how the IR op is written back
(export rules, keyed by the IR op). Its frontend, backend, the support matrix and the per-op
corpus read the same records, so what a framework can express is stated once.

- A *row* is a one-to-one record: source name <-> IR op (+ constant attributes) <-> the
  target's callable. Each framework's package has small row helpers (`unary(...)`) that add
  both directions at once.
- A decorated function covers the rest: `@R.imports("conv2d", produces="Conv")` for a source
  op that needs code, `@R.exports("Conv")` for an IR op.
- `R.refuses(op, reason)` records what the framework truly cannot express (shown in the matrix).

Source names live in namespaces (`kind`): ATen ops and Python operators for PyTorch, layer
classes, `keras.ops` classes and activation names for Keras, builtin and custom operators for
TFLite. Converters are plain functions; the registry never calls them itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tensorbridge.ir import dtypes

#: the IR ops on string tensors
STRING_OPS = ("RegexFullMatch", "StringConcat", "StringNormalizer", "StringSplit")


@dataclass(frozen=True)
class ImportRule:
    """How a framework op becomes IR: a row (`ir_op` + `attrs`) or a converter function."""

    kind: str
    names: tuple[str, ...]
    produces: tuple[str, ...]
    convert: Callable | None = None
    ir_op: str | None = None
    attrs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ExportRule:
    """How IR ops are written in the framework: `write(emitter, node)`; `shape_write` for the same op on
    small integer shape vectors where the target computes those as plain Python values; `check(node)` says
    why the writer cannot take a node's configuration (None: it can), so legalisation decomposes that node
    before the writer is reached."""

    ops: tuple[str, ...]
    write: Callable
    shape_write: Callable | None = None
    check: Callable | None = None


class Registry:
    def __init__(self, framework: str, variants: tuple[str, ...] = ("int_arithmetic",)):
        self.framework = framework
        self._imports: dict[tuple[str, str], ImportRule] = {}
        self._exports: dict[str, ExportRule] = {}
        self.refused: dict[str, str] = {}
        #: the framework's model-code rows (rules/code.py), for the transpiler; None where it has none
        self.code = None
        #: attribute variants (schema.set_lowering) the framework's writer carries out itself; `api.save` lowers
        #: the others before the writer sees the graph
        self.variants = frozenset(variants)
        #: `fn(node, dtype name) -> reason or None`: a tensor type the framework's writer cannot hold (see `holds`;
        #: node None: a tensor no op touches)
        self.dtype_reason: Callable | None = None

    # -- declaring ---------------------------------------------------------------------------------
    def add_import(self, rule: ImportRule) -> ImportRule:
        for name in rule.names:
            key = (rule.kind, name)
            if key in self._imports:
                raise RuntimeError(f"{self.framework}: {rule.kind} {name!r} has two import rules")
            self._imports[key] = rule
        return rule

    def add_export(self, ops, write: Callable, shape_write: Callable | None = None,
                   check: Callable | None = None) -> ExportRule:
        rule = ExportRule(tuple(ops), write, shape_write, check)
        for op in rule.ops:
            if op in self._exports:
                raise RuntimeError(f"{self.framework}: IR op {op} has two export rules")
            self._exports[op] = rule
        return rule

    def imports(self, *names: str, produces: str | tuple[str, ...], kind: str = "op"):
        """Decorator: `fn` converts the framework ops `names` (of namespace `kind`) into `produces`."""
        produced = (produces,) if isinstance(produces, str) else tuple(produces)

        def register(fn: Callable) -> Callable:
            self.add_import(ImportRule(kind, names or (fn.__name__,), produced, convert=fn))
            return fn
        return register

    def row(self, name: str | tuple[str, ...], ir_op: str, kind: str = "op", **attrs) -> ImportRule:
        """A one-to-one import: the framework op(s) `name` are the IR op `ir_op` with constant `attrs`."""
        names = (name,) if isinstance(name, str) else tuple(name)
        return self.add_import(ImportRule(kind, names, (ir_op,), ir_op=ir_op, attrs=attrs))

    def exports(self, *ops: str, shape_write: Callable | None = None, check: Callable | None = None):
        """Decorator: `fn(emitter, node)` writes the IR ops `ops` in this framework (`check`: see ExportRule)."""
        def register(fn: Callable) -> Callable:
            self.add_export(ops, fn, shape_write, check)
            return fn
        return register

    def refuses(self, op: str, reason: str) -> None:
        """The framework cannot express `op` at all (the support matrix shows `reason`)."""
        self.refused[op] = reason

    def holds(self, reason: Callable) -> None:
        """The writer takes no node reading or writing a tensor of a type for which `reason(node, dtype name)`
        gives a reason (checked before the op's own rule)."""
        self.dtype_reason = reason

    def holds_type(self, name: str) -> str | None:
        """Why the framework cannot hold a tensor of type `name` at all (None: it can, at least to move it)."""
        return self.dtype_reason(None, name) if self.dtype_reason is not None else None

    def refuses_strings(self, reason: str) -> None:
        """The framework has no string tensors: none of the IR's string ops."""
        for op in STRING_OPS:
            self.refuses(op, reason)

    # -- reading -----------------------------------------------------------------------------------
    def import_rule(self, name: str, kind: str = "op") -> ImportRule | None:
        return self._imports.get((kind, name))

    def export_rule(self, op: str) -> ExportRule | None:
        return self._exports.get(op)

    def blocker(self, node) -> str | None:
        """Why this framework's writer cannot take `node` (None: it can)."""
        rule = self._exports.get(node.op)
        if rule is None:
            return self.refused.get(node.op, f"{self.framework} has no rule for {node.op}")
        if self.dtype_reason is not None:
            for v in (*node.inputs, *node.outputs):
                why = self.dtype_reason(node, dtypes.name(v.dtype)) if v is not None and v.dtype is not None else None
                if why:
                    return why
        return rule.check(node) if rule.check is not None else None

    def import_rules(self, kind: str | None = None) -> list[ImportRule]:
        """Every import rule once (of one namespace, or all)."""
        seen: dict[int, ImportRule] = {}
        for (k, _), rule in self._imports.items():
            if kind is None or k == kind:
                seen.setdefault(id(rule), rule)
        return list(seen.values())

    def source_names(self, kind: str = "op") -> set[str]:
        return {name for (k, name) in self._imports if k == kind}

    def importable(self) -> set[str]:
        """IR ops some import rule produces (the frontend's claims)."""
        return {op for rule in self.import_rules() for op in rule.produces}

    def exportable(self) -> set[str]:
        """IR ops with an export rule (the backend's direct claims; decompositions add to them)."""
        return set(self._exports)

    def shape_ops(self) -> set[str]:
        """IR ops whose export rule can compute integer shape vectors as plain values."""
        return {op for op, rule in self._exports.items() if rule.shape_write is not None}


class TrackedAttrs:
    """A source op's attributes as plain values; `unread()` lists those no rule asked for (besides `ignored`, which
    only tune how the framework runs the op, and names starting with "__", set by the reader itself), so an option
    no rule reads is a blocker instead of a silently ignored one."""

    def __init__(self, raw: dict, ignored: frozenset = frozenset()):
        self.raw, self.ignored = raw, ignored
        self.read: set[str] = set()

    def get(self, key: str, default=None):
        self.read.add(key)
        return self.raw.get(key, default)

    def require(self, key: str):
        self.read.add(key)
        if key not in self.raw:
            from tensorbridge.errors import ModelError

            raise ModelError(f"attribute {key} is missing")
        return self.raw[key]

    def choice(self, key: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.get(key, default)
        if value not in allowed:
            from tensorbridge.errors import ModelError

            raise ModelError(f"{key}={value!r} (read: {', '.join(allowed)})")
        return value

    def unread(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.raw.items() if k not in self.read and k not in self.ignored
                and not k.startswith("__")]


def two_inputs(node) -> str | None:
    """The check of a writer for two operands, of an op the IR lets take more (Max, Min: their decomposition
    chains them)."""
    return None if len(node.inputs) == 2 else f"{node.op} of {len(node.inputs)} inputs"


def shift_in_range(node) -> str | None:
    """The check of a BitShift writer whose framework shifts by amounts in [0, bits) only (ONNX gives 0
    outside): a constant amount in range."""
    import numpy as np

    amount, bits = node.inputs[1].const, 8 * node.inputs[0].dtype.itemsize
    if amount is None or not np.all((amount >= 0) & (amount < bits)):
        return f"BitShift by an amount that is not a constant in [0, {bits})"
    return None
