"""A layer class chosen by its name: `getattr(nn, rnn_type)(ninp, nhid, ...)` under `if rnn_type in ['LSTM',
'GRU']:` (PyTorch's word-language-model example). Inside that test the name is one of those listed, so the
statement making the layer is rewritten, before translation, as one branch per name, each calling that class:
the tables read layer classes, not names held by variables, and every target can write the branches.
"""

from __future__ import annotations

import ast
import copy


def spell_layer_choices(cls: ast.ClassDef, is_module) -> None:
    """Rewrite, in place, each statement of `cls` that calls `getattr(<module>, <name>)` inside an `if <name> in
    [<strings>]` test; `is_module(node)` says whether a node names a module of the framework."""
    _Choices(is_module).visit(cls)


class _Choices(ast.NodeTransformer):
    def __init__(self, is_module):
        self.is_module = is_module
        self.choices: dict[str, list[str]] = {}  # variable -> the names the enclosing tests allow

    def visit_If(self, node):
        choice = _choice(node.test)
        saved = dict(self.choices)
        if choice is not None:
            self.choices[choice[0]] = choice[1]
        node.body = [out for stmt in node.body for out in self._statement(stmt)]
        self.choices = saved
        node.orelse = [out for stmt in node.orelse for out in self._statement(stmt)]
        return node

    def _statement(self, stmt) -> list[ast.stmt]:
        stmt = self.visit(stmt)
        chosen = [n for n in ast.walk(stmt) if self._chooses(n)]
        if not chosen:
            return [stmt]
        variable = chosen[0].args[1].id
        branches = [_Spelled(variable, name).visit(copy.deepcopy(stmt)) for name in self.choices[variable]]
        chain = [branches[-1]]  # the last name is what is left once the others are ruled out
        for name, branch in reversed(list(zip(self.choices[variable][:-1], branches[:-1]))):
            test = ast.Compare(ast.Name(variable, ast.Load()), [ast.Eq()], [ast.Constant(name)])
            chain = [ast.If(test, [branch], chain)]
        return [ast.copy_location(chain[0], stmt)]

    def _chooses(self, node) -> bool:
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and
                len(node.args) == 2 and not node.keywords and isinstance(node.args[1], ast.Name) and
                node.args[1].id in self.choices and self.is_module(node.args[0]))


class _Spelled(ast.NodeTransformer):
    """`getattr(nn, variable)` -> `nn.<name>`."""

    def __init__(self, variable: str, name: str):
        self.variable, self.name = variable, name

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) == 2 and \
                isinstance(node.args[1], ast.Name) and node.args[1].id == self.variable:
            return ast.copy_location(ast.Attribute(node.args[0], self.name, ast.Load()), node)
        return node


def _choice(test) -> tuple[str, list[str]] | None:
    """(variable, names) of `variable in [<string literals>]` (a list, tuple or set), else None."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In) and \
            isinstance(test.left, ast.Name) and isinstance(test.comparators[0], (ast.List, ast.Tuple, ast.Set)):
        names = [e.value for e in test.comparators[0].elts if isinstance(e, ast.Constant)]
        if names and len(names) == len(test.comparators[0].elts) and all(isinstance(n, str) for n in names):
            return test.left.id, names
    return None
