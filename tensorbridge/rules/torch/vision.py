"""PyTorch code for the IR's detection ops that torch itself has no call for (its NMS is torchvision's, which the
generated code does not depend on): a module-level function, as a person would write one."""

from __future__ import annotations

from tensorbridge.codegen import pyast as P
from tensorbridge.rules.torch.base import R

#: the boxes as corners (y1, x1, y2, x2) in float64, and their areas: how both selections below begin
_CORNERS = '''    if center_point_box:  # (x, y, w, h) to (y1, x1, y2, x2)
        xy, wh = boxes[..., :2], boxes[..., 2:]
        boxes = torch.cat([xy - wh / 2, xy + wh / 2], dim=-1)[..., [1, 0, 3, 2]]
    boxes = boxes.double()
    corners = torch.cat([torch.minimum(boxes[..., :2], boxes[..., 2:]), torch.maximum(boxes[..., :2], boxes[..., 2:])],
                        dim=-1)
    areas = (corners[..., 2] - corners[..., 0]) * (corners[..., 3] - corners[..., 1])
'''

NON_MAX_SUPPRESSION = '''
def non_max_suppression(boxes, scores, limit=0, iou_threshold=0.0, score_threshold=None, center_point_box=0):
    """ONNX's NonMaxSuppression: per batch and class, the boxes by descending score (above score_threshold),
    each kept unless its IoU with a kept one exceeds iou_threshold, at most `limit`; rows (batch, class, box)."""
''' + _CORNERS + '''    selected = []
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


#: the same selection for torch.export, which traces a Python loop over scores away: each class's boxes visited in a
#: torch.while_loop (the batch and class loops run over static counts, unrolled when exported)
EXPORTED_NON_MAX_SUPPRESSION = '''
def non_max_suppression(boxes, scores, limit=0, iou_threshold=0.0, score_threshold=None, center_point_box=0):
    """ONNX's NonMaxSuppression: per batch and class, the boxes by descending score (above score_threshold),
    each kept unless its IoU with a kept one exceeds iou_threshold, at most `limit`; rows (batch, class, box).
    The boxes of a class are visited in a torch.while_loop, which torch.export keeps."""
''' + _CORNERS + '''    limit = torch.as_tensor(limit).reshape(())
    selected = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            order = torch.argsort(-scores[b, c], stable=True)
            count = order.shape[0]

            def unfinished(step, kept, taken):
                return (step < count) & (taken < limit)

            def visit(step, kept, taken):
                box = order.index_select(0, step.reshape(1))
                lower = torch.maximum(corners[b, :, :2], corners[b].index_select(0, box)[:, :2])
                upper = torch.minimum(corners[b, :, 2:], corners[b].index_select(0, box)[:, 2:])
                overlap = (upper - lower).clamp(min=0).prod(dim=-1)
                union = areas[b] + areas[b].index_select(0, box) - overlap
                iou = torch.where(union > 0, overlap / union, 0.0)
                keep = ~((iou > iou_threshold) & kept).any()
                if score_threshold is not None:
                    keep = keep & (scores[b, c].index_select(0, box).reshape(()) > score_threshold)
                return step + 1, kept | ((torch.arange(count) == box) & keep), taken + keep.long()

            start = (torch.tensor(0), torch.zeros(count, dtype=torch.bool), torch.tensor(0))
            _, kept, _ = torch.while_loop(unfinished, visit, start)
            chosen = order[kept[order]]
            selected.append(torch.stack([torch.full_like(chosen, b), torch.full_like(chosen, c), chosen], dim=1))
    return torch.cat(selected).reshape(-1, 3)
'''


def exported_blocker(node) -> str | None:
    """torch.export unrolls the batch and class loops: their counts must be known."""
    boxes, scores = node.inputs[:2]
    if boxes.shape is None or scores.shape is None or not isinstance(boxes.shape[0], int) or \
            not isinstance(scores.shape[1], int):
        return "NonMaxSuppression of a run-time number of images or classes (PyTorch code, --to torch, loops over them)"
    return None


@R.exports("NonMaxSuppression")
def write_non_max_suppression(em, node):
    operands = [em.tensor(v) for v in node.inputs[:2]]
    operands += [P.lit(None) if v is None else P.lit(em.scalar(v)) if em.scalar(v) is not None else em.tensor(v)
                 for v in node.inputs[2:]]
    center = node.attrs.get("center_point_box", 0)
    helper = em.helper(EXPORTED_NON_MAX_SUPPRESSION if em.exported else NON_MAX_SUPPRESSION)
    em.out(node, P.call(helper, *operands, **({"center_point_box": center} if center else {})))
