"""Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX semantics).

Class scores are [N, C, d1, ...]; targets [N, d1, ...]. `ignore_index` targets contribute
nothing and, with `mean` reduction, do not count in the denominator (which sums the
per-sample class weights).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir import shapes
from tensorbridge.ir.builder import Builder
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.schema import Attr, attrs_of, op, set_decomposition

F = "loss"
_ATTRS = {"reduction": Attr("str", "mean"), "ignore_index": Attr("int", None)}


def nll(log_prob, target, weight, reduction, ignore_index):
    c = log_prob.shape[1]
    t = target.astype(np.int64)
    ignored = np.zeros(t.shape, bool) if ignore_index is None else t == ignore_index
    safe = np.where(ignored, 0, t)
    picked = np.take_along_axis(log_prob, np.expand_dims(safe, 1), axis=1).squeeze(1)
    w = np.ones(c, log_prob.dtype) if weight is None else weight
    wt = np.where(ignored, 0, w[safe]).astype(log_prob.dtype)
    loss = -picked * wt
    if reduction == "none":
        return loss.astype(log_prob.dtype)
    if reduction == "sum":
        return np.array(loss.sum(), dtype=log_prob.dtype)
    denom = wt.sum()
    return np.array(loss.sum() / denom if denom else 0.0, dtype=log_prob.dtype)


@op("NegativeLogLikelihoodLoss", inputs="input target weight?", outputs="loss", family=F, layout=TERMINATE,
    attrs=_ATTRS, doc="Negative log-likelihood loss. Equivalents: nn.NLLLoss, keras sparse categorical (on log-probs).")
def negative_log_likelihood_loss(input, target, weight=None, *, reduction, ignore_index):
    return nll(input, target, weight, reduction, ignore_index)


@op("SoftmaxCrossEntropyLoss", inputs="scores labels weights?", outputs="output log_prob?", family=F,
    layout=TERMINATE, attrs=_ATTRS,
    doc="Cross entropy of softmax(scores) against class labels. Equivalents: nn.CrossEntropyLoss, keras SparseCategoricalCrossentropy.")
def softmax_cross_entropy_loss(scores, labels, weights=None, *, reduction, ignore_index):
    x = scores.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    log_prob = x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    loss = nll(log_prob, labels, None if weights is None else weights.astype(np.float64), reduction, ignore_index)
    return loss.astype(scores.dtype), log_prob.astype(scores.dtype)


def _nll_graph(b, log_prob, target, weight, reduction: str, ignore_index):
    """The NLL loss of `log_prob` built from Gather/GatherElements and reductions, as `nll` computes it."""
    dt = log_prob.dtype

    def const(name, v, dtype=dt):
        return b.const(np.array(v, dtype), b.name(name))

    t = b.op("Cast", target, to="int64", suffix="target")
    kept = None
    if ignore_index is not None:
        kept = b.op("Not", b.op("Equal", t, const("ignore_index", ignore_index, np.int64)), suffix="kept")
        t = b.op("Where", kept, t, const("class0", 0, np.int64), suffix="safe_target")
    picked = b.op("GatherElements", log_prob, b.op("Unsqueeze", t, const("class_axis", [1], np.int64)), axis=1,
                  suffix="picked")
    picked = b.op("Squeeze", picked, const("class_axis_", [1], np.int64), suffix="picked_squeezed")
    w = b.op("Gather", weight, t, axis=0, suffix="weight") if weight is not None else None
    if kept is not None:
        kept = b.op("Cast", kept, to=dt.name, suffix="kept_weight")
        w = kept if w is None else b.op("Mul", w, kept, suffix="weight_kept")
    loss = b.op("Neg", picked, suffix="neg") if w is None else b.op("Mul", b.op("Neg", picked, suffix="neg"), w)
    if reduction == "none":
        return loss
    total = b.op("ReduceSum", loss, keepdims=0, suffix="sum")
    if reduction == "sum":
        return total
    if w is not None:
        count = b.op("ReduceSum", w, keepdims=0, suffix="weight_sum")
    elif loss.shape is not None and shapes.is_static(loss.shape):
        count = const("count", float(np.prod(loss.shape)))
    else:
        count = b.op("Cast", b.op("ReduceProd", b.op("Shape", loss), keepdims=0), to=dt.name, suffix="count")
    zero = const("zero", 0.0)
    empty = b.op("Equal", count, zero, suffix="empty")
    return b.op("Where", empty, zero, b.op("Div", total, b.op("Where", empty, const("one", 1.0), count)))


def _decompose_loss(graph, node):
    """NLL of the log-probabilities: the input itself, or (SoftmaxCrossEntropyLoss) LogSoftmax of the scores over
    the classes (axis 1), which is then its second output."""
    x, target = node.inputs[:2]
    if x.dtype is None:
        return False
    a = attrs_of(node)
    b = Builder.replacing(node)
    log_prob = b.op("LogSoftmax", x, axis=1, suffix="log_prob") if node.op == "SoftmaxCrossEntropyLoss" else x
    loss = _nll_graph(b, log_prob, target, node.input(2), a["reduction"], a["ignore_index"])
    graph.replace_node(node, [loss, log_prob][:len(node.outputs)])
    return True


set_decomposition("NegativeLogLikelihoodLoss", _decompose_loss)
set_decomposition("SoftmaxCrossEntropyLoss", _decompose_loss)
