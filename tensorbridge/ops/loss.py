"""Loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX semantics).

Class scores are [N, C, d1, ...]; targets [N, d1, ...]. `ignore_index` targets contribute
nothing and, with `mean` reduction, do not count in the denominator (which sums the
per-sample class weights).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.schema import Attr, op

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
