"""PyTorch code for the IR's detection ops that torch itself has no call for (its NMS is torchvision's, which the
generated code does not depend on): a module-level function, as a person would write one."""

from __future__ import annotations

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.torch.base import R

NON_MAX_SUPPRESSION = '''
def non_max_suppression(boxes, scores, limit=0, iou_threshold=0.0, score_threshold=None, center_point_box=0):
    """ONNX's NonMaxSuppression: per batch and class, the boxes by descending score (above score_threshold),
    each kept unless its IoU with a kept one exceeds iou_threshold, at most `limit`; rows (batch, class, box)."""
    if center_point_box:  # (x, y, w, h) to (y1, x1, y2, x2)
        xy, wh = boxes[..., :2], boxes[..., 2:]
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], dim=-1)[..., [1, 0, 3, 2]]
    boxes = boxes.double()
    corners = torch.cat([torch.minimum(boxes[..., :2], boxes[..., 2:]), torch.maximum(boxes[..., :2], boxes[..., 2:])],
                        dim=-1)
    areas = (corners[..., 2] - corners[..., 0]) * (corners[..., 3] - corners[..., 1])
    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            kept = []
            for i in torch.argsort(-scores[b, c], stable=True).tolist():
                if len(kept) >= int(limit):
                    break
                if score_threshold is not None and scores[b, c, i] <= float(score_threshold):
                    continue
                lower = torch.maximum(corners[b, kept, :2], corners[b, i, :2])
                upper = torch.minimum(corners[b, kept, 2:], corners[b, i, 2:])
                overlap = (upper - lower).clamp(min=0).prod(dim=-1)
                union = areas[b, kept] + areas[b, i] - overlap
                iou = torch.where(union > 0, overlap / union, 0.0)
                if not bool((iou > float(iou_threshold)).any()):
                    kept.append(i)
            selected += [[b, c, i] for i in kept]
    return torch.tensor(selected, dtype=torch.int64).reshape(-1, 3)
'''


@R.exports("NonMaxSuppression")
def write_non_max_suppression(em, node):
    operands = [em.tensor(v) for v in node.inputs[:2]]
    operands += [P.lit(None) if v is None else P.lit(em.scalar(v)) if em.scalar(v) is not None else em.tensor(v)
                 for v in node.inputs[2:]]
    center = node.attrs.get("center_point_box", 0)
    em.out(node, P.call(em.helper(NON_MAX_SUPPRESSION), *operands, **({"center_point_box": center} if center else {})))
