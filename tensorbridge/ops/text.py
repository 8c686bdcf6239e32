"""String ops: StringConcat, StringSplit, RegexFullMatch, StringNormalizer.

String tensors are NumPy object arrays of Python `str`.
"""

from __future__ import annotations

import re

import numpy as np

from tensorbridge.ops.infer import broadcast_rule
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.schema import Attr, op

F = "text"


@op("StringConcat", inputs="X Y", outputs="Z", family=F, layout=TERMINATE, infer=broadcast_rule(),
    doc="Elementwise string concatenation with broadcasting.")
def string_concat(X, Y):
    return np.asarray(np.frompyfunc(lambda a, b: str(a) + str(b), 2, 1)(X, Y), dtype=object)


@op("StringSplit", inputs="X", outputs="Y Z", family=F, layout=TERMINATE,
    attrs={"delimiter": Attr("str", None), "maxsplit": Attr("int", None)},
    doc="Split each string; pads to the longest split. Equivalents: tf.strings.split.")
def string_split(X, delimiter, maxsplit):
    parts = []
    for s in X.ravel():
        s = str(s)
        if delimiter:
            p = s.split(delimiter, maxsplit if maxsplit is not None else -1)
        else:
            p = s.split(None, maxsplit if maxsplit is not None else -1)
        parts.append(p)
    width = max((len(p) for p in parts), default=0)
    y = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        y[i, :len(p)] = p
    z = np.array([len(p) for p in parts], dtype=np.int64).reshape(X.shape)
    return y.reshape(X.shape + (width,)), z


@op("RegexFullMatch", inputs="X", outputs="Y", family=F, layout=TERMINATE, attrs={"pattern": Attr("str")},
    doc="Whether each string fully matches a regular expression. Equivalents: tf.strings.regex_full_match.")
def regex_full_match(X, pattern):
    rx = re.compile(pattern)
    return np.array([rx.fullmatch(str(s)) is not None for s in X.ravel()], dtype=bool).reshape(X.shape)


@op("StringNormalizer", inputs="X", outputs="Y", family=F, layout=TERMINATE,
    attrs={"case_change_action": Attr("str", "NONE"), "is_case_sensitive": Attr("int", 0),
           "locale": Attr("str", ""), "stopwords": Attr("strs", None)},
    doc="Remove stop words and change case of a 1-D (or [1, C]) string tensor.")
def string_normalizer(X, case_change_action, is_case_sensitive, locale, stopwords):
    flat = [str(s) for s in X.ravel()]
    stop = set(stopwords or [])
    if is_case_sensitive:
        kept = [s for s in flat if s not in stop]
    else:
        low = {w.lower() for w in stop}
        kept = [s for s in flat if s.lower() not in low]
    if case_change_action == "LOWER":
        kept = [s.lower() for s in kept]
    elif case_change_action == "UPPER":
        kept = [s.upper() for s in kept]
    if not kept:
        kept = [""]
    out = np.array(kept, dtype=object)
    return out.reshape(1, -1) if X.ndim == 2 else out
