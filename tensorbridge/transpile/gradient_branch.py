"""A branch taken under a setting only while tensors record gradients: torchvision DenseNet's `if
self.memory_efficient and self.any_requires_grad(features): <checkpointed> else: <plain>`. The targets' tensors
carry no such record, so the test cannot be translated; but when the setting is false the test is false whatever
the tensors record. Before translation, `if A and <reads autograd> ...: body else: rest` becomes `if A: raise
NotImplementedError(...)` followed by `rest`: the translation computes what the source does whenever `A` is false
and refuses to run otherwise, never guessing which path the source would take.
"""

from __future__ import annotations

import ast

from tensorbridge.transpile.syntax import is_self_attr


def guard_gradient_branches(cls: ast.ClassDef, autograd_attributes: frozenset) -> list[str]:
    """Rewrite, in place, each such `if` statement of `cls`; `autograd_attributes` are the tensor attributes
    autograd keeps (`requires_grad`). Returns a note per statement rewritten."""
    methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
    reading: set[str] = set()
    while True:  # the methods reading autograd's record, directly or through another method
        more = {n for n, m in methods.items() if n not in reading and _reads(m, autograd_attributes, reading)}
        if not more:
            break
        reading |= more
    rewriter = _Guard(lambda node: _reads(node, autograd_attributes, reading))
    rewriter.visit(cls)
    return rewriter.notes


def _reads(node, attributes: frozenset, methods: set) -> bool:
    """Whether `node` reads one of the tensor `attributes` or calls one of the class's `methods`."""
    return any((isinstance(n, ast.Attribute) and n.attr in attributes) or
               (isinstance(n, ast.Call) and is_self_attr(n.func) and n.func.attr in methods) for n in ast.walk(node))


class _Guard(ast.NodeTransformer):
    def __init__(self, reads):
        self.reads = reads
        self.notes: list[str] = []

    def visit_If(self, node):
        self.generic_visit(node)
        test = node.test
        if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
            return node
        first = next((i for i, v in enumerate(test.values) if self.reads(v)), None)
        if not first:  # none reads autograd's record, or the first operand does
            return node
        setting = test.values[0] if first == 1 else ast.BoolOp(ast.And(), test.values[:first])
        line = node.lineno
        message = f"{ast.unparse(setting)} (the source's line {line} branches on gradient recording)"
        raise_ = ast.Raise(ast.Call(ast.Name("NotImplementedError", ast.Load()), [ast.Constant(message)], []))
        guard = ast.copy_location(ast.If(setting, [raise_], []), node)
        self.notes.append(f"line {line}: with {ast.unparse(setting)} true the source branches on whether tensors "
                          f"record gradients ({ast.unparse(ast.BoolOp(ast.And(), test.values[first:]))}): the "
                          "translation raises NotImplementedError then, and otherwise computes what the source does")
        return [ast.fix_missing_locations(guard), *node.orelse]
