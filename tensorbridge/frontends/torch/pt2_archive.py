"""`.pt2` archives read as data: nothing in the file is unpickled or run.

`torch.export.load` trusts its file. It unpickles tensors marked `use_pickle`, opaque and custom-object
constants and the sample inputs (retrying with `weights_only=False` when the safe load fails), loads
AOTInductor shared libraries, evaluates symbolic-shape strings with `sympy.sympify` (which calls `eval`),
resolves node targets by attribute lookup under `torch` (`torch.os.system` is one), and runs the program's
guard code when the program is turned into a module. So before torch sees the archive:

- the zip is checked (`formats.archive`),
- every place that would be unpickled or loaded as code is a listed blocker,
- every node target must be an operator (`torch.ops.<namespace>.<op>.<overload>`, a higher-order op, or
  an arithmetic function on sizes), every symbolic expression a plain arithmetic expression,
- the sample inputs are dropped and the guard code is cleared (tensorbridge makes its own inputs and checks
  their shapes itself),

and torch's archive reader is given the cleaned copy, never the fallback that reads older formats with pickle.
"""

from __future__ import annotations

import ast
import io
import json
import logging
import re
import zipfile

from tensorbridge.errors import BlockerReport, ModelError, reason
from tensorbridge.formats.archive import CheckedZip

_OPERATOR = re.compile(
    r"torch\.ops\.(aten|prims|quantized_decomposed|quantized)\.\w+\.\w+"
    r"|torch\.ops\.higher_order\.\w+"
    r"|_operator\.(getitem|add|sub|mul|floordiv|truediv|mod|neg|pow|eq|ne|lt|le|gt|ge|and_|or_|not_|abs)"
    r"|math\.(ceil|floor|trunc|sqrt)"
    r"|torch\.sym_(float|int|max|min|not|ite|sqrt|sum)"
    r"|torch\._sym_sqrt"
)
#: the sympy names a serialized program's size expressions use (torch prints them with sympy.srepr)
_SYMPY_NAMES = frozenset(
    "Symbol Integer Rational Float Add Mul Pow Mod Max Min Abs floor ceiling Eq Ne Lt Le Gt Ge StrictLessThan "
    "StrictGreaterThan LessThan GreaterThan Equality Unequality And Or Not BooleanTrue BooleanFalse true false "
    "oo zoo nan Piecewise ExprCondPair Tuple FloorDiv ModularIndexing Where PythonMod CleanDiv CeilToInt "
    "FloorToInt CeilDiv IntTrueDiv FloatTrueDiv PowByNatural FloatPow TruncToFloat TruncToInt RoundToInt "
    "RoundDecimal ToFloat Identity IsNonOverlappingAndDenseIndicator LShift RShift Infinity NegativeInfinity "
    "IntInfinity NegativeIntInfinity int_oo".split())
_SYMBOL = re.compile(r"[a-z]+\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")  # a Float's digits: Float('5.0', precision=53)
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.Name, ast.Constant,
          ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.keyword, ast.Tuple)


def load_program(path):
    """The `torch.export.ExportedProgram` of a `.pt2` file, read without running anything in it."""
    cleaned = clean_archive(path)
    from torch.export.pt2_archive._package import load_pt2

    torch_log = logging.getLogger("torch")
    level, torch_log.level = torch_log.level, logging.CRITICAL  # its own retries log tracebacks
    try:
        programs = load_pt2(io.BytesIO(cleaned)).exported_programs
    except Exception as e:  # noqa: BLE001 - torch raises many kinds for a bad archive
        raise ModelError(f"{path} is not a readable torch.export program (.pt2): {reason(e)}") from None
    finally:
        torch_log.level = level
    if len(programs) != 1:
        raise ModelError(f"{path} holds {len(programs)} programs; tensorbridge reads archives with exactly one")
    return next(iter(programs.values()))


def clean_archive(path) -> bytes:
    """The archive's bytes with its sample inputs dropped and its guard code cleared, once nothing in it would
    be unpickled or run; else every such place is listed (UnsupportedError)."""
    with CheckedZip(path, "torch.export program (.pt2)") as z:
        names = list(z.members)
        roots = {n.split("/", 1)[0] for n in names}
        if len(roots) != 1 or not all("/" in n for n in names):
            raise ModelError(f"{path} is not a torch.export program (.pt2): its members are not in one folder")
        root = roots.pop() + "/"
        records = {n[len(root):]: n for n in names}
        if records.keys() & {"version", "serialized_exported_program.json"} and "archive_format" not in records:
            raise ModelError(f"{path} is a .pt2 archive of PyTorch 2.7 or older, whose weights are pickled: "
                             "re-export it with this PyTorch (torch.export.save)")
        if "archive_format" not in records or z.read(records["archive_format"]) != b"pt2":
            raise ModelError(f"{path} is not a torch.export program (.pt2): no archive_format 'pt2' record")
        report = BlockerReport(f"reading {path}", "torch")
        _check_members(records, report)
        replaced = {}
        for record, member in records.items():
            if record.startswith("data/sample_inputs/"):
                replaced[member] = b""
            elif record.endswith("_config.json") and record.startswith(("data/weights/", "data/constants/")):
                _check_payloads(_json(z, member), record, report)
            elif record.startswith("models/") and record.endswith(".json"):
                program = _json(z, member)
                _check_program(program, record, report)
                if isinstance(program, dict) and program.get("guards_code"):
                    program["guards_code"] = []
                    replaced[member] = json.dumps(program).encode()
        report.raise_if_any("Nothing in the archive was run or unpickled.")
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as w:
            for member in names:
                w.writestr(member, replaced[member] if member in replaced else z.read(member))
        return out.getvalue()


def _check_members(records: dict[str, str], report: BlockerReport) -> None:
    for record in records:
        if record.startswith(("data/aotinductor/", "data/executorch/", "data/mtia")):
            report.add("compiled code", record, "an AOTInductor/ExecuTorch artifact: a shared library or program "
                       "that would be loaded and run")
        elif record.startswith(("data/weights/", "data/constants/")) and record.endswith(".pt"):
            report.add("pickle", record, "weights in the pre-2.8 pickled form")
        elif record.startswith("xl_model_weights/"):
            report.add("pickle", record, "externally stored weights (torch.load with pickle)")


def _check_payloads(config, record: str, report: BlockerReport) -> None:
    entries = config.get("config") if isinstance(config, dict) else None
    if not isinstance(entries, dict):
        raise ModelError(f"{record} is not a payload configuration")
    for fqn, meta in entries.items():
        if not isinstance(meta, dict):
            raise ModelError(f"{record}: entry {fqn!r} is not an object")
        file = str(meta.get("path_name", ""))
        if meta.get("use_pickle"):
            report.add("pickle", fqn, f"{record}: stored pickled ({file})")
        elif file.startswith(("custom_obj_", "opaque_obj_")):
            report.add("pickle", fqn, f"{record}: a pickled Python object ({file})")


def _check_program(program, record: str, report: BlockerReport) -> None:
    """Every node target an operator, every size expression arithmetic, no custom objects."""
    if not isinstance(program, dict):
        raise ModelError(f"{record} is not a serialized program")
    for key, value in _walk(program):
        if key == "target" and isinstance(value, str) and not _OPERATOR.fullmatch(value):
            report.add("target", value, "not an operator: running the program would call it")
        elif key == "expr_str" and isinstance(value, str) and not _arithmetic(value):
            report.add("expression", value[:80], "a size expression that is not arithmetic (sympy would eval it)")
        elif key in ("as_custom_obj", "custom_obj_values") and value:
            report.add("custom object", str(value)[:80], "a TorchBind object (pickled)")
    for name in (program.get("range_constraints") or {}):
        if not _arithmetic(str(name)):
            report.add("expression", str(name)[:80], "a symbol name that is not arithmetic")


def _walk(doc, depth: int = 0):
    """(key, value) of every object member, depth first."""
    if depth > 200:
        raise ModelError("the serialized program nests deeper than 200 levels")
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield k, v
            yield from _walk(v, depth + 1)
    elif isinstance(doc, list):
        for v in doc:
            yield from _walk(v, depth + 1)


def _arithmetic(text: str) -> bool:
    """Whether `text` is a sympy expression built only of numbers, size symbols and sympy's arithmetic."""
    if len(text) > 10_000:
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            return False
        if isinstance(node, ast.Name) and node.id not in _SYMPY_NAMES and not _SYMBOL.fullmatch(node.id):
            return False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _SYMPY_NAMES):
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and not (
                _SYMBOL.fullmatch(str(node.value)) or _NUMBER.fullmatch(str(node.value))):
            return False
    return True


def _json(z: CheckedZip, member: str):
    try:
        return json.loads(z.read(member))
    except (ValueError, RecursionError) as e:
        raise ModelError(f"{z.path}: {member} is not valid JSON ({reason(e)})") from None

