"""The ONNX registry: every ONNX op the catalogue holds, by identity, plus the opset history.

The IR's op names and semantics are ONNX's where ONNX has the op, so the identity rows are
generated here rather than written out; `base.py` holds the history table for older opsets
(`history.py` its code), `contrib.py` the com.microsoft channels-last ops onnxruntime runs.
"""

import onnx

from tensorbridge.ops.schema import all_op_names
from tensorbridge.rules.core import ImportRule
from tensorbridge.rules.onnx.base import RULES, beyond_onnx
from tensorbridge.rules.onnx.base import R as REGISTRY
from tensorbridge.rules.onnx.contrib import same_op

for _op in sorted(all_op_names()):
    if onnx.defs.has(_op):
        REGISTRY.add_import(ImportRule("op", (_op,), (_op,), ir_op=_op))
        if REGISTRY.export_rule(_op) is None:
            REGISTRY.add_export((_op,), same_op, check=beyond_onnx)
for _rule in RULES:
    if _rule.ir_op and REGISTRY.import_rule(_rule.onnx_op) is None:
        REGISTRY.add_import(ImportRule("op", (_rule.onnx_op,), (_rule.ir_op,), ir_op=_rule.ir_op))

__all__ = ["REGISTRY"]
