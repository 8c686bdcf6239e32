"""SavedModel directories loaded for inference, whatever trained them.

A SavedModel written by an older Keras (tf.keras with a legacy optimizer) records its optimizer's slot
variables (Adam's moments) as created through `Optimizer.add_slot`, and TensorFlow's loader cannot recreate
them without that optimizer class ("'_UserObject' object has no attribute 'add_slot'"). Inference does not
need the optimizer: such a SavedModel is loaded from a copy of its object graph in which the slots are plain
variables (the variables folder is linked, not copied).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tensorbridge.errors import ModelError


def load_saved_model(path):
    """The loaded SavedModel at `path` (a clear error for one TensorFlow cannot load)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    path = Path(path)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            return tf.saved_model.load(str(_without_optimizer_slots(path, Path(tmp))))
        except Exception as e:  # noqa: BLE001 - TF raises many types for a bad SavedModel
            raise ModelError(f"cannot load {path} as a SavedModel: {str(e).splitlines()[0][:300]}") from None


def _without_optimizer_slots(path: Path, tmp: Path) -> Path:
    """`path`, or a copy of it under `tmp` whose object graph has no optimizer slot references."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString((path / "saved_model.pb").read_bytes())
    except Exception:  # noqa: BLE001 - TensorFlow's own loader reports what is wrong with it
        return path
    nodes = [node for graph in proto.meta_graphs for node in graph.object_graph_def.nodes if node.slot_variables]
    if not nodes:
        return path
    for node in nodes:
        del node.slot_variables[:]
    copy = tmp / path.name
    copy.mkdir()
    (copy / "saved_model.pb").write_bytes(proto.SerializeToString())
    for part in ("variables", "assets"):
        if (path / part).exists():
            (copy / part).symlink_to((path / part).resolve())
    return copy
