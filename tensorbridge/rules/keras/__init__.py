"""The Keras registry: layer classes, `keras.ops` calls and activation names <-> IR ops <-> generated Keras code.

`REGISTRY` is read by the Keras frontend (import rules), the Keras code generator (export rules,
also behind the TFLite backend's float path), the support matrix and the per-op corpus. Records
live in one module per op family, beside each other per IR op; `base.py` holds the registry
object and its row helpers.
"""

from tensorbridge.rules.keras import (  # noqa: F401 (registers)
    code,
    code_read,
    code_tensorflow,
    control,
    conv_recurrent,
    dynamic,
    elementwise,
    math,
    nn,
    ops_calls,
    ops_nn,
    preprocessing,
    reduce,
    shape,
    transformer,
    vision,
)
from tensorbridge.rules.keras.base import R as REGISTRY
from tensorbridge.rules.keras.base import tf_layer_scopes

__all__ = ["REGISTRY", "tf_layer_scopes"]
