"""The registries are the one place an op meets a framework.

- Outside the op catalogue (`tensorbridge/ops/`) and the framework registries (`tensorbridge/rules/`),
  no module names an IR op, except the few the machinery itself builds: the layout planner's
  Transpose/Reshape/Unsqueeze/Gather, and QuantizeLinear/DequantizeLinear, the IR's form of
  quantization that writers and verification read (and TensorFlow's own `Identity` op type).
- Every registry record names catalogue ops, and every framework's registry is reachable from the
  format registry.
"""

from __future__ import annotations

import re
from pathlib import Path

from tensorbridge import frameworks
from tensorbridge.ops.schema import all_op_names

PACKAGE = Path(__file__).resolve().parents[1] / "tensorbridge"
MACHINERY = {"Transpose", "Reshape", "Unsqueeze", "Gather", "QuantizeLinear", "DequantizeLinear", "Identity"}


def test_ops_are_named_only_in_the_catalogue_and_the_registries():
    ops = all_op_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("ops/", "rules/")):
            continue
        named = set(re.findall(r'"(\w+)"', path.read_text())) & ops - MACHINERY
        found += [f"{rel}: {', '.join(sorted(named))}"] if named else []
    assert not found, "ops named outside their catalogue entry and registry records:\n" + "\n".join(found)


def test_registry_records_name_catalogue_ops():
    ops = all_op_names()
    for fmt in frameworks.FORMATS:
        registry = frameworks.registry(fmt)
        if registry is None:
            continue
        assert registry.importable() <= ops, (fmt.name, registry.importable() - ops)
        assert registry.exportable() <= ops, (fmt.name, registry.exportable() - ops)
        assert set(registry.refused) <= ops, (fmt.name, set(registry.refused) - ops)
