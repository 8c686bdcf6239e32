"""Keras code for the IR's detection ops that keras.ops has no call for: a module-level function of `keras.ops`
calls, as a person would write one, run in a layer class of its own (its result's size is the data's to say)."""

from __future__ import annotations

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.keras.base import R

NON_MAX_SUPPRESSION = '''
def non_max_suppression(boxes, scores, limit=0, iou_threshold=0.0, score_threshold=None, center_point_box=0):
    """ONNX's NonMaxSuppression: per batch and class, the box of highest score left (above score_threshold) is
    kept and the boxes whose IoU with it exceeds iou_threshold are dropped, at most `limit` times; rows
    (batch, class, box) in that order."""
    if center_point_box:  # (x, y, w, h) to (y1, x1, y2, x2)
        xy, wh = boxes[..., :2], boxes[..., 2:]
        boxes = ops.take(ops.concatenate([xy - wh / 2, xy + wh / 2], axis=-1), [1, 0, 3, 2], axis=-1)
    boxes = ops.cast(boxes, "float32")
    corners = ops.expand_dims(ops.concatenate(
        [ops.minimum(boxes[..., :2], boxes[..., 2:]), ops.maximum(boxes[..., :2], boxes[..., 2:])], axis=-1), 1)
    areas = (corners[..., 2] - corners[..., 0]) * (corners[..., 3] - corners[..., 1])
    scores = ops.cast(scores, "float32")
    batches, classes, count = ops.shape(scores)
    positions = ops.arange(count)
    alive = ops.ones_like(areas, dtype="bool")  # broadcast as the steps broadcast it (a batch dim may be open)
    alive = ops.logical_and(alive, scores > score_threshold if score_threshold is not None else True)
    picks = ops.full_like(alive, -1, dtype="int32")

    def select(step, state):
        alive, picks = state
        candidates = ops.where(alive, scores, float("-inf"))  # the first highest (ops.argmax bitcasts on TensorFlow)
        highest = ops.max(candidates, axis=-1, keepdims=True)
        best = ops.min(ops.where(candidates == highest, positions, count), axis=-1)
        found = ops.any(alive, axis=-1)
        chosen = ops.expand_dims(positions, 0) == ops.expand_dims(best, -1)
        box = ops.sum(ops.where(ops.expand_dims(chosen, -1), corners, 0.0), axis=2, keepdims=True)
        lower = ops.maximum(corners[..., :2], box[..., :2])
        upper = ops.minimum(corners[..., 2:], box[..., 2:])
        overlap = ops.prod(ops.maximum(upper - lower, 0.0), axis=-1)
        union = areas + ops.sum(ops.where(chosen, areas, 0.0), axis=-1, keepdims=True) - overlap
        iou = ops.where(union > 0, overlap / ops.where(union > 0, union, 1.0), 0.0)
        alive = ops.logical_and(ops.logical_and(alive, iou <= iou_threshold), ops.logical_not(chosen))
        picked = ops.where(found, best, -1)
        picks = ops.where(positions == step, ops.expand_dims(picked, -1), picks)
        return alive, picks

    _, picks = ops.fori_loop(0, ops.minimum(ops.cast(limit, "int32"), count), select, (alive, picks))
    batch_index = ops.broadcast_to(ops.reshape(ops.arange(batches), (-1, 1, 1)), ops.shape(picks))
    class_index = ops.broadcast_to(ops.reshape(ops.arange(classes), (1, -1, 1)), ops.shape(picks))
    rows = ops.reshape(ops.stack([batch_index, class_index, picks], axis=-1), (-1, 3))
    picked = ops.reshape(picks, (-1,)) >= 0  # a prefix of each (batch, class) block: kept in their order
    order = ops.arange(ops.shape(picked)[0])
    first = ops.argsort(ops.where(picked, order, order + ops.shape(picked)[0]))
    kept = ops.slice(first, (0,), ops.reshape(ops.sum(ops.cast(picked, "int32")), (1,)))
    return ops.cast(ops.take(rows, kept, axis=0), "int64")
'''


@R.exports("NonMaxSuppression")
def write_non_max_suppression(em, node):
    em.in_own_layer(node, _write_non_max_suppression)


def _write_non_max_suppression(em, node):
    operands = [em.tensor(v) for v in node.inputs[:2]]
    optional = list(node.inputs[2:])
    while optional and optional[-1] is None:
        optional.pop()
    for v in optional:
        number = None if v is None else em.scalar(v)
        operands.append(P.lit(number) if v is None or number is not None
                        else P.call("ops.reshape", em.tensor(v), ()))
    center = node.attrs.get("center_point_box", 0)
    em.out(node, P.call(em.helper(NON_MAX_SUPPRESSION), *operands,
                        **({"center_point_box": center} if center else {})))
