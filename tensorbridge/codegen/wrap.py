"""Line wrapping for generated source: statements longer than the line length break at their calls'
and literals' brackets, as a formatter would (all arguments on one indented line when they fit, else one
per line with a trailing comma)."""

from __future__ import annotations

import ast

LINE_LENGTH = 120  # the project's own (pyproject's ruff line-length)
INDENT = 4


def wrap_long_lines(source: str, width: int = LINE_LENGTH) -> str:
    """`source` with each one-line simple statement longer than `width` broken at its brackets."""
    lines = source.splitlines()
    if all(len(line) <= width for line in lines):
        return source
    out = []
    for line in lines:
        out.append(_wrapped(line, width) if len(line) > width else line)
    return "\n".join(out) + ("\n" if source.endswith("\n") else "")


def _wrapped(line: str, width: int) -> str:
    """One long line broken at its brackets; unchanged unless it holds one simple statement."""
    text = line.lstrip()
    indent = len(line) - len(text)
    if text.startswith(("def ", "async def ")) and text.endswith(":"):
        return _def_head(text, indent, width) or line
    try:
        body = ast.parse(text).body
    except SyntaxError:  # the head of a compound statement
        return line
    if len(body) != 1:
        return line
    node = body[0]
    if isinstance(node, ast.Delete):
        return _delete(node, indent, width)
    if isinstance(node, (ast.Assign, ast.Expr, ast.Return)) and node.value is not None:
        return " " * indent + _statement(node, indent, width)
    return line


def _statement(node: ast.Assign | ast.Expr | ast.Return, indent: int, width: int) -> str:
    prefix = {ast.Assign: lambda: " = ".join(ast.unparse(t) for t in node.targets) + " = ",
              ast.Return: lambda: "return ", ast.Expr: lambda: ""}[type(node)]()
    return prefix + _expr(node.value, indent, width, indent + len(prefix))


def _def_head(text: str, indent: int, width: int) -> str | None:
    """A long `def f(...):` line with its parameters on one indented line when they fit, else one per line."""
    try:
        fn = ast.parse(text + " pass").body[0]
    except SyntaxError:
        return None
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = [_param(p, d) for p, d in zip(positional, defaults)]
    if a.posonlyargs:
        params.insert(len(a.posonlyargs), "/")
    if a.vararg is not None or a.kwonlyargs:
        params.append("*" + (_param(a.vararg, None) if a.vararg is not None else ""))
    params += [_param(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg is not None:
        params.append("**" + _param(a.kwarg, None))
    head = " " * indent + text[:text.index("(") + 1]
    tail = " " * indent + ")" + (f" -> {ast.unparse(fn.returns)}" if fn.returns is not None else "") + ":"
    inner = " " * (indent + INDENT)
    if len(inner) + len(", ".join(params)) <= width:
        return "\n".join([head, inner + ", ".join(params), tail])
    return "\n".join([head, *(inner + p + "," for p in params), tail])


def _param(arg: ast.arg, default) -> str:
    text = arg.arg + (f": {ast.unparse(arg.annotation)}" if arg.annotation is not None else "")
    if default is None:
        return text
    return text + (" = " if arg.annotation is not None else "=") + ast.unparse(default)


def _delete(node: ast.Delete, indent: int, width: int) -> str:
    """`del a, b, c` as several `del` lines, each within `width`."""
    lines, names = [], [ast.unparse(t) for t in node.targets]
    for name in names:
        if lines and indent + len(lines[-1]) + 2 + len(name) <= width:
            lines[-1] += ", " + name
        else:
            lines.append("del " + name)
    return "\n".join(" " * indent + line for line in lines)


def _expr(node: ast.expr, indent: int, width: int, column: int) -> str:
    """`node` starting at `column` of a line indented by `indent`, broken at brackets where it is too long."""
    flat = ast.unparse(node)
    if column + len(flat) <= width:
        return flat
    if isinstance(node, ast.Call):
        head = _expr(node.func, indent, width - 1, column)  # room for the call's "("
        items = [*node.args, *node.keywords]
        last_line = head.rsplit("\n", 1)[-1]
        flat_args = flat[len(ast.unparse(node.func)) :]
        if "\n" in head and len(last_line) + len(flat_args) <= width:
            return head + flat_args  # `)(x)` after a broken constructor call
        return head + _bracketed(items, "(", ")", indent, width, trailing_single=False)
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        brackets = "[]" if isinstance(node, ast.List) else "()"
        single = isinstance(node, ast.Tuple)
        if all(_is_literal(e) for e in node.elts):
            return _packed(node.elts, *brackets, indent, width, trailing_single=single)
        return _bracketed(node.elts, *brackets, indent, width, trailing_single=single)
    if isinstance(node, ast.Dict) and node.keys:
        return _bracketed(list(zip(node.keys, node.values)), "{", "}", indent, width, trailing_single=False)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Dict):  # `{...}[key]`: the dict broken
        index = flat[len(ast.unparse(node.value)):]  # `[key]` as written after the dict
        return _expr(node.value, indent, width - len(index), column) + index
    if indent + INDENT + len(flat) <= width:  # an operator expression: parenthesised on its own line
        return f"(\n{' ' * (indent + INDENT)}{flat}\n{' ' * indent})"
    if isinstance(node, ast.BinOp) and _GROUP.get(type(node.op)):  # `a + b - c * d`: one operand a line
        inner = indent + INDENT
        terms = _chain(node)
        group = _GROUP[type(node.op)]
        lines = [_operand(terms[0][1], group, inner, width, inner, first=True)] + [
            f"{op} {_operand(term, group, inner, width, inner + len(op) + 1)}" for op, term in terms[1:]]
        return _parenthesised(lines, indent)
    if isinstance(node, ast.IfExp):  # `a if test else b`: one part a line
        inner = indent + INDENT
        parts = [("", node.body, False), ("if ", node.test, False), ("else ", node.orelse, True)]
        return _parenthesised([word + _part(part, inner, width, inner + len(word), chained)
                               for word, part, chained in parts], indent)
    return flat


def _parenthesised(lines: list[str], indent: int) -> str:
    """`lines`, each indented one step more than `indent`, between parentheses."""
    return "(\n" + "\n".join(" " * (indent + INDENT) + line for line in lines) + f"\n{' ' * indent})"


def _part(node: ast.expr, indent: int, width: int, column: int, chained: bool) -> str:
    """A part of a conditional expression, parenthesised where it binds as loosely (a conditional other than
    the `else` part's chain, a lambda)."""
    if isinstance(node, ast.Lambda) or isinstance(node, ast.IfExp) and not chained:
        return "(" + _expr(node, indent, width - 1, column + 1) + ")"
    return _expr(node, indent, width, column)


#: binary operators a long expression breaks at, by precedence group (operands of the same group are chained)
_GROUP = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.FloorDiv: 2, ast.Mod: 2, ast.MatMult: 2}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.MatMult: "@"}


def _chain(node: ast.BinOp) -> list[tuple[str, ast.expr]]:
    """`a - b + c` as [("", a), ("-", b), ("+", c)]: the left-nested operations of `node`'s precedence group."""
    group = _GROUP[type(node.op)]
    if isinstance(node.left, ast.BinOp) and _GROUP.get(type(node.left.op)) == group:
        head = _chain(node.left)
    else:
        head = [("", node.left)]
    return head + [(_SYMBOL[type(node.op)], node.right)]


def _operand(node: ast.expr, group: int, indent: int, width: int, column: int, first: bool = False) -> str:
    """An operand in a chain of `group`, parenthesised unless it binds more tightly than the chain (the first
    one also when it binds as tightly: the chain took those in)."""
    looser = False
    if isinstance(node, ast.BinOp):
        binds = _GROUP.get(type(node.op), 3)
        looser = binds < group if first else binds <= group
    if looser or isinstance(node, (ast.BoolOp, ast.Compare, ast.IfExp, ast.Lambda)) or \
            isinstance(node, ast.UnaryOp) and not first:
        return "(" + _expr(node, indent, width - 1, column + 1) + ")"
    return _expr(node, indent, width, column)


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.operand, ast.Constant)
    return isinstance(node, ast.Constant)


def _packed(items: list, open_: str, close: str, indent: int, width: int, trailing_single: bool) -> str:
    """Literal items filled line by line, as numbers are in a table."""
    inner = indent + INDENT
    lines: list[str] = []
    for item in items:
        text = _expr(item, inner, width, inner)
        if "\n" not in text and lines and "\n" not in lines[-1] and inner + len(lines[-1]) + len(text) + 2 <= width:
            lines[-1] += " " + text + ","
        else:
            lines.append(text + ",")
    if not (trailing_single and len(items) == 1) and lines:
        lines[-1] = lines[-1][:-1] if len(items) > 1 or not trailing_single else lines[-1]
    body = "".join(" " * inner + line + "\n" for line in lines)
    return f"{open_}\n{body}{' ' * indent}{close}"


def _bracketed(items: list, open_: str, close: str, indent: int, width: int, trailing_single: bool) -> str:
    inner = indent + INDENT
    pad = " " * inner
    flat = [_item(i, inner, width, inner) for i in items]
    one_line = ", ".join(flat) + ("," if trailing_single and len(items) == 1 else "")
    if all("\n" not in f for f in flat) and inner + len(one_line) <= width:
        return f"{open_}\n{pad}{one_line}\n{' ' * indent}{close}"
    return open_ + "\n" + "".join(f"{pad}{f},\n" for f in flat) + " " * indent + close


def _item(item, indent: int, width: int, column: int) -> str:
    if isinstance(item, ast.keyword):
        prefix = "**" if item.arg is None else f"{item.arg}="
        return prefix + _expr(item.value, indent, width, column + len(prefix))
    if isinstance(item, tuple):  # a dict entry
        key, value = item
        if key is None:
            return "**" + _expr(value, indent, width, column + 2)
        prefix = ast.unparse(key) + ": "
        return prefix + _expr(value, indent, width, column + len(prefix))
    return _expr(item, indent, width, column)
