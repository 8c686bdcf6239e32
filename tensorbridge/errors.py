"""User-facing errors. Each carries everything needed for one clear message.

`UnsupportedError` collects *every* blocker of a model before it is raised, so a user sees
all unsupported ops at once. Exit codes of the CLI come from `exit_code`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass


def reason(e: BaseException, limit: int = 600) -> str:
    """A third-party exception as one line for a user: its type and its whole message (a framework's reason
    is often on a later line), whitespace collapsed, cut at `limit` characters."""
    text = " ".join(str(e).split())
    text = text if len(text) <= limit else text[:limit] + " ..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


#: exception types third-party parsers raise on malformed bytes (by name where the parser's module is optional)
MALFORMED_TYPES = (UnicodeError, EOFError, OverflowError, RecursionError, MemoryError)
MALFORMED_NAMES = frozenset({"BadZipFile", "LargeZipFile", "error", "DecodeError", "SafetensorError",
                             "InvalidProtobuf", "ParseError", "JSONDecodeError"})


def malformed(e: BaseException) -> bool:
    """Whether `e` is a parser's way of saying the bytes are not what they should be (not a bug of ours)."""
    return isinstance(e, MALFORMED_TYPES) or type(e).__name__ in MALFORMED_NAMES


@contextlib.contextmanager
def reading(what: str):
    """Within the block, a third-party parser's complaint about malformed bytes becomes a ModelError
    "`what`: the reason" (other exceptions are bugs and pass through)."""
    try:
        yield
    except Exception as e:
        if not malformed(e):
            raise
        raise ModelError(f"{what}: {reason(e)}") from None


class TensorbridgeError(Exception):
    """Base of all errors meant for users (exit code 2: bad input or unsupported model)."""

    exit_code = 2


class ModelError(TensorbridgeError):
    """The input is missing, malformed, or not a model we can read."""


class InputShapesNeeded(ModelError):
    """The model records no shape for some of its inputs: `input_shapes` (--input-shape) must give them.
    `inputs` names all the model's inputs, in order."""

    def __init__(self, message: str, inputs=()):
        super().__init__(message)
        self.inputs = list(inputs)


class InvariantError(TensorbridgeError):
    """A graph breaks a structural rule (cycle, dangling input, duplicate name, ...)."""


class VerificationError(TensorbridgeError):
    """Source and converted model disagree beyond tolerance (exit code 1)."""

    exit_code = 1

    def __init__(self, message: str, report=None):
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class Blocker:
    """One reason a model cannot be converted: an op (with its node name) or a feature."""

    op: str
    node: str = ""
    detail: str = ""
    framework: str = ""

    def __str__(self) -> str:
        where = f" (node {self.node!r})" if self.node else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.op}{where}{detail}"


class UnsupportedError(TensorbridgeError):
    """The model uses ops or features we cannot handle; lists all of them."""

    def __init__(self, blockers: list[Blocker], context: str = "", hint: str = ""):
        self.blockers = list(blockers)
        by_op: dict[str, list[Blocker]] = {}
        for b in self.blockers:
            by_op.setdefault(b.op, []).append(b)
        lines = [f"{context or 'conversion'}: {len(self.blockers)} unsupported item(s) "
                 f"across {len(by_op)} op type(s):"]
        for op, items in sorted(by_op.items()):
            nodes = ", ".join(repr(b.node) for b in items[:8] if b.node)
            more = f" and {len(items) - 8} more" if len(items) > 8 else ""
            details = sorted({b.detail for b in items if b.detail})
            shown = "; ".join(details[:3]) + (f"; and {len(details) - 3} more" if len(details) > 3 else "")
            why = f" — {shown}" if details else ""
            lines.append(f"  - {op}: {len(items)} node(s){': ' + nodes if nodes else ''}{more}{why}")
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines))


class BlockerReport:
    """Collects blockers while a model is walked; `raise_if_any` raises them all at once."""

    def __init__(self, context: str, framework: str = ""):
        self.context = context
        self.framework = framework
        self.blockers: list[Blocker] = []

    def add(self, op: str, node: str = "", detail: str = "") -> None:
        self.blockers.append(Blocker(op, node, detail, self.framework))

    def raise_if_any(self, hint: str = "") -> None:
        if self.blockers:
            raise UnsupportedError(self.blockers, self.context, hint)
