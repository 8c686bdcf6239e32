"""Recurrent layers: LSTM, GRU, RNN (ONNX gate orders: LSTM i o f c, GRU z r h), their NumPy references and
one decomposition for all three: the layer unrolled over a sequence of known length into the cell's matrix
products, gates and activations, which every target holds. Layer libraries take the common configurations
directly (`plain_rnn_blocker`); the decomposition carries the rest (custom activations, clip, peepholes,
coupled input-forget gates, sequence lengths, batch-major layout, a GRU resetting before its matmul).
"""

from __future__ import annotations

import numpy as np

from tensorbridge.ir.builder import Builder
from tensorbridge.ops.layout_classes import TERMINATE
from tensorbridge.ops.schema import Attr, op, set_decomposition

F = "transformer"


def _activation(name, alpha, beta):
    n = name.lower()
    table = {
        "relu": lambda x: np.maximum(x, 0),
        "tanh": np.tanh,
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x > alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.log1p(np.exp(x)),
    }
    return table[n]


_DEFAULT_ALPHA = {"leakyrelu": 0.01, "thresholdedrelu": 1.0, "hardsigmoid": 0.2, "elu": 1.0}
_DEFAULT_BETA = {"hardsigmoid": 0.5}


def activation_params(names, alphas, betas, per_dir, num_dir) -> list[list[tuple[str, float, float]]]:
    """Per direction, each activation's (lower-case name, alpha, beta): ONNX hands the alphas and betas out in
    order to the activations that take them, with per-function defaults."""
    out = []
    ai = bi = 0
    for name in names:
        n = name.lower()
        a = alphas[ai] if alphas and ai < len(alphas) else _DEFAULT_ALPHA.get(n, 1.0)
        b = betas[bi] if betas and bi < len(betas) else _DEFAULT_BETA.get(n, 0.0)
        if n in ("affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"):
            ai += 1
        if n in ("affine", "scaledtanh", "hardsigmoid"):
            bi += 1
        out.append((n, a, b))
    if len(out) < per_dir * num_dir:
        out = out * num_dir
    return [out[d * per_dir:(d + 1) * per_dir] for d in range(num_dir)]


def _activations(names, alphas, betas, per_dir, num_dir):
    return [[_activation(*p) for p in per] for per in activation_params(names, alphas, betas, per_dir, num_dir)]


def _rnn_infer(inputs, attrs):
    x, w = inputs[0], inputs[1]
    if x.shape is None or w.shape is None:
        return [(x.dtype, None)] * 3
    dirs = w.shape[0]
    hidden = attrs.get("hidden_size")
    if hidden is None and isinstance(w.shape[1], int):
        hidden = w.shape[1] // {"LSTM": 4, "GRU": 3, "RNN": 1}[attrs["_op"]]
    if attrs.get("layout"):
        batch, seq = x.shape[0], x.shape[1]
        return [(x.dtype, (batch, seq, dirs, hidden)), (x.dtype, (batch, dirs, hidden)), (x.dtype, (batch, dirs, hidden))]
    seq, batch = x.shape[0], x.shape[1]
    return [(x.dtype, (seq, dirs, batch, hidden)), (x.dtype, (dirs, batch, hidden)), (x.dtype, (dirs, batch, hidden))]


def _rnn_rule(op_name):
    def rule(inputs, attrs):
        return _rnn_infer(inputs, {**attrs, "_op": op_name})
    return rule


_RNN_ATTRS = {"activation_alpha": Attr("floats", None), "activation_beta": Attr("floats", None),
              "clip": Attr("float", None), "direction": Attr("str", "forward"),
              "hidden_size": Attr("int", None), "layout": Attr("int", 0)}


def _run_recurrent(X, sequence_lens, initial, direction, layout, step):
    """Shared driver: run `step(d, x_t, state) -> state` over time for each direction."""
    if layout:
        X = X.transpose(1, 0, 2)
        initial = [None if s is None else s.transpose(1, 0, 2) for s in initial]
    seq, batch = X.shape[:2]
    lens = np.full(batch, seq) if sequence_lens is None else sequence_lens.astype(np.int64)
    dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
    ys, finals = [], []
    for d, rev in enumerate(dirs):
        state = [s[d] for s in initial]
        y = np.zeros((seq, batch, state[0].shape[-1]), np.float64)
        for t_i in range(seq):
            t = seq - 1 - t_i if rev else t_i
            active = np.zeros(batch, bool)
            if rev:
                # reversed within each sequence's own length
                tt = lens - 1 - t_i
                valid = tt >= 0
                xt = X[np.clip(tt, 0, seq - 1), np.arange(batch)]
                active = valid
            else:
                valid = t < lens
                xt = X[t]
                active = valid
            new = step(d, xt, state)
            state = [np.where(active[:, None], n, s) for n, s in zip(new, state)]
            if rev:
                pos = np.clip(lens - 1 - t_i, 0, seq - 1)
                y[pos[active], np.arange(batch)[active]] = state[0][active]
            else:
                y[t, active] = state[0][active]
        ys.append(y)
        finals.append(state)
    Y = np.stack(ys, axis=1)  # seq, dirs, batch, hidden
    outs = [np.stack([f[i] for f in finals]) for i in range(len(finals[0]))]
    if layout:
        Y = Y.transpose(2, 0, 1, 3)
        outs = [o.transpose(1, 0, 2) for o in outs]
    return Y, outs


def _init_state(h, num_dir, batch, hidden, layout):
    if h is not None:
        return h.astype(np.float64)
    return np.zeros((batch, num_dir, hidden) if layout else (num_dir, batch, hidden))


def _clipf(c):
    return (lambda v: np.clip(v, -c, c)) if c else (lambda v: v)


@op("LSTM", inputs="X W R B? sequence_lens? initial_h? initial_c? P?", outputs="Y? Y_h? Y_c?", family=F,
    layout=TERMINATE, infer=_rnn_rule("LSTM"),
    attrs={**_RNN_ATTRS, "activations": Attr("strs", None), "input_forget": Attr("int", 0),
           "cell_clip": Attr("float", None)},
    doc="Long short-term memory layer (gates i, o, f, c; cell_clip bounds the cell state, as LiteRT's kernel). "
        "Equivalents: nn.LSTM, keras LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM.")
def lstm(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, *, activation_alpha,
         activation_beta, clip, direction, hidden_size, layout, activations, input_forget, cell_clip):
    num_dir, h4, _ = W.shape
    hid = h4 // 4
    batch = X.shape[0 if layout else 1]
    acts = _activations(activations or ["Sigmoid", "Tanh", "Tanh"], activation_alpha, activation_beta, 3, num_dir)
    B = np.zeros((num_dir, 8 * hid)) if B is None else B.astype(np.float64)
    P = np.zeros((num_dir, 3 * hid)) if P is None else P.astype(np.float64)
    cl, cell = _clipf(clip), _clipf(cell_clip)

    def step(d, x, state):
        h, c = state
        f_, g_, h_ = acts[d]
        gates = x @ W[d].T.astype(np.float64) + h @ R[d].T.astype(np.float64) + B[d, :4 * hid] + B[d, 4 * hid:]
        i, o, f, cc = np.split(gates, 4, axis=-1)
        pi, po, pf = np.split(P[d], 3)
        i = f_(cl(i + pi * c))
        f = (1 - i) if input_forget else f_(cl(f + pf * c))
        cc = g_(cl(cc))
        c_new = cell(f * c + i * cc)
        o = f_(cl(o + po * c_new))
        return [o * h_(c_new), c_new]

    h0 = _init_state(initial_h, num_dir, batch, hid, layout)
    c0 = _init_state(initial_c, num_dir, batch, hid, layout)
    Y, (yh, yc) = _run_recurrent(X.astype(np.float64), sequence_lens, [h0, c0], direction, layout, step)
    return Y.astype(X.dtype), yh.astype(X.dtype), yc.astype(X.dtype)


@op("GRU", inputs="X W R B? sequence_lens? initial_h?", outputs="Y? Y_h?", family=F, layout=TERMINATE,
    infer=_rnn_rule("GRU"),
    attrs={**_RNN_ATTRS, "activations": Attr("strs", None), "linear_before_reset": Attr("int", 0)},
    doc="Gated recurrent unit layer (gates z, r, h). Equivalents: nn.GRU (linear_before_reset=1), keras GRU.")
def gru(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha, activation_beta, clip,
        direction, hidden_size, layout, activations, linear_before_reset):
    num_dir, h3, _ = W.shape
    hid = h3 // 3
    batch = X.shape[0 if layout else 1]
    acts = _activations(activations or ["Sigmoid", "Tanh"], activation_alpha, activation_beta, 2, num_dir)
    B = np.zeros((num_dir, 6 * hid)) if B is None else B.astype(np.float64)
    cl = _clipf(clip)

    def step(d, x, state):
        (h,) = state
        f_, g_ = acts[d]
        w, r = W[d].astype(np.float64), R[d].astype(np.float64)
        wb, rb = B[d, :3 * hid], B[d, 3 * hid:]
        xw = x @ w.T + wb
        z = f_(cl(xw[:, :hid] + h @ r[:hid].T + rb[:hid]))
        rr = f_(cl(xw[:, hid:2 * hid] + h @ r[hid:2 * hid].T + rb[hid:2 * hid]))
        if linear_before_reset:
            hh = g_(cl(xw[:, 2 * hid:] + rr * (h @ r[2 * hid:].T + rb[2 * hid:])))
        else:
            hh = g_(cl(xw[:, 2 * hid:] + (rr * h) @ r[2 * hid:].T + rb[2 * hid:]))
        return [(1 - z) * hh + z * h]

    h0 = _init_state(initial_h, num_dir, batch, hid, layout)
    Y, (yh,) = _run_recurrent(X.astype(np.float64), sequence_lens, [h0], direction, layout, step)
    return Y.astype(X.dtype), yh.astype(X.dtype)


@op("RNN", inputs="X W R B? sequence_lens? initial_h?", outputs="Y? Y_h?", family=F, layout=TERMINATE,
    infer=_rnn_rule("RNN"),
    attrs={**_RNN_ATTRS, "activations": Attr("strs", None)},
    doc="Simple recurrent layer. Equivalents: nn.RNN, keras SimpleRNN.")
def rnn(X, W, R, B=None, sequence_lens=None, initial_h=None, *, activation_alpha, activation_beta, clip,
        direction, hidden_size, layout, activations):
    num_dir, hid, _ = W.shape
    batch = X.shape[0 if layout else 1]
    acts = _activations(activations or ["Tanh"], activation_alpha, activation_beta, 1, num_dir)
    B = np.zeros((num_dir, 2 * hid)) if B is None else B.astype(np.float64)
    cl = _clipf(clip)

    def step(d, x, state):
        (h,) = state
        return [acts[d][0](cl(x @ W[d].T + h @ R[d].T + B[d, :hid] + B[d, hid:]))]

    h0 = _init_state(initial_h, num_dir, batch, hid, layout)
    Y, (yh,) = _run_recurrent(X.astype(np.float64), sequence_lens, [h0], direction, layout, step)
    return Y.astype(X.dtype), yh.astype(X.dtype)


def plain_rnn_blocker(node, gru_reset: str) -> str | None:
    """Why an IR LSTM/GRU/RNN is not one the layer libraries hold (default activations, no sequence_lens, clip,
    peepholes, input_forget or batch-major layout, and a GRU with linear_before_reset; `gru_reset` says
    why the last matters), or None when it is."""
    a = node.attrs
    acts = [s.lower() for s in a.get("activations") or []]
    if node.op == "RNN":  # one nonlinearity for every direction
        defaults = acts[:1] if acts[:1] in (["tanh"], ["relu"]) else ["tanh"]
    else:
        defaults = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"]}[node.op]
    if acts != defaults * (len(acts) // len(defaults)) or node.input(4) is not None or a.get("clip") \
            or a.get("cell_clip") or a.get("layout") or a.get("input_forget") or \
            (node.op == "LSTM" and node.input(7) is not None):
        return f"{node.op} with custom activations, sequence_lens, clip, cell clip, peepholes or batch-major layout"
    if node.op == "GRU" and not a.get("linear_before_reset"):
        return f"GRU with linear_before_reset=0 ({gru_reset})"
    return None


# -- the decomposition: unrolled over time ------------------------------------------------------
#: op -> (gates, activations per direction, the default activations)
_CELLS = {"LSTM": (4, 3, ["Sigmoid", "Tanh", "Tanh"]), "GRU": (3, 2, ["Sigmoid", "Tanh"]), "RNN": (1, 1, ["Tanh"])}
_PLAIN_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu", "softsign": "Softsign",
                      "softplus": "Softplus"}


class _Unrolled:
    """Writes one recurrent node's steps with a builder: constants in the input's dtype, ops by name."""

    def __init__(self, node):
        self.node, self.b = node, Builder.replacing(node)
        self.dt = node.inputs[0].dtype
        a = node.attrs
        gates, per_dir, defaults = _CELLS[node.op]
        self.dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[a.get("direction") or "forward"]
        self.acts = activation_params(a.get("activations") or defaults, a.get("activation_alpha"),
                                      a.get("activation_beta"), per_dir, len(self.dirs))
        self.hid = node.inputs[1].shape[1] // gates
        self.clip = a.get("clip")
        self.weights: dict[tuple[int, str], object] = {}

    def const(self, array, name, dtype=None):
        return self.b.const(np.asarray(array, dtype or self.dt), self.b.name(name))

    def weight(self, d: int, name: str, array):
        """A direction's weight, one constant however many steps read it."""
        if (d, name) not in self.weights:
            self.weights[d, name] = self.const(array, name if len(self.dirs) == 1 else f"{name}_{d}")
        return self.weights[d, name]

    def axes(self, *axes):
        return self.const(axes, "axes", np.int64)

    def act(self, spec, v):
        n, alpha, beta = spec
        b = self.b
        if n in _PLAIN_ACTIVATIONS:
            return b.op(_PLAIN_ACTIVATIONS[n], v)
        if n == "affine":
            return b.op("Add", b.op("Mul", v, self.const(alpha, "alpha")), self.const(beta, "beta"))
        if n == "scaledtanh":
            return b.op("Mul", b.op("Tanh", b.op("Mul", v, self.const(beta, "beta"))), self.const(alpha, "alpha"))
        if n == "hardsigmoid":
            return b.op("HardSigmoid", v, alpha=alpha, beta=beta)
        return b.op({"leakyrelu": "LeakyRelu", "thresholdedrelu": "ThresholdedRelu", "elu": "Elu"}[n], v, alpha=alpha)

    def clipped(self, v):
        if not self.clip:
            return v
        return self.b.op("Clip", v, self.const(-self.clip, "clip_min"), self.const(self.clip, "clip_max"))

    def matmul(self, v, d: int, weight: np.ndarray, name: str):
        """v @ weight.T, or None when v is the zero initial state."""
        return None if v is None else self.b.op("MatMul", v, self.weight(d, name, weight.T))

    def add(self, *terms):
        terms = [t for t in terms if t is not None]
        out = terms[0]
        for t in terms[1:]:
            out = self.b.op("Add", out, t)
        return out

    def mul(self, a, b):
        return None if a is None or b is None else self.b.op("Mul", a, b)

    def gates(self, v, n: int):
        return self.b.emit("Split", [v, self.const([self.hid] * n, "gate_sizes", np.int64)], {"axis": -1}, outputs=n)


def _lstm_step(u: _Unrolled, d: int, xw, state, R, B, P):
    """One LSTM step: xw (x W^T + both biases) and state (h, c; None for zeros) -> (h, c)."""
    h, c = state
    f_, g_, h_ = u.acts[d]
    pi, po, pf = [None] * 3 if P is None else (u.weight(d, n, p) for p, n in zip(np.split(P[d], 3), ("pi", "po", "pf")))
    i, o, f, cc = u.gates(u.add(xw, u.matmul(h, d, R[d], "R")), 4)
    i = u.act(f_, u.clipped(u.add(i, u.mul(pi, c))))
    if u.node.attrs.get("input_forget"):
        f = u.b.op("Sub", u.const(1.0, "one"), i)
    else:
        f = u.act(f_, u.clipped(u.add(f, u.mul(pf, c))))
    c_new = u.add(u.mul(f, c), u.b.op("Mul", i, u.act(g_, u.clipped(cc))))
    bound = u.node.attrs.get("cell_clip")
    if bound:
        c_new = u.b.op("Clip", c_new, u.const(-bound, "cell_min"), u.const(bound, "cell_max"))
    o = u.act(f_, u.clipped(u.add(o, u.mul(po, c_new))))
    return [u.b.op("Mul", o, u.act(h_, c_new)), c_new]


def _gru_step(u: _Unrolled, d: int, xw, state, R, B, P):
    """One GRU step: xw (x W^T + W's bias) -> (h,); the recurrent bias of the candidate follows the reset gate
    when linear_before_reset."""
    (h,) = state
    f_, g_ = u.acts[d]
    hid = u.hid
    rb = B[d, 3 * hid:]
    xz, xr, xh = u.gates(xw, 3)
    z = u.act(f_, u.clipped(u.add(xz, u.matmul(h, d, R[d, :hid], "Rz"), u.weight(d, "Rbz", rb[:hid]))))
    r = u.act(f_, u.clipped(u.add(xr, u.matmul(h, d, R[d, hid:2 * hid], "Rr"), u.weight(d, "Rbr", rb[hid:2 * hid]))))
    rh_bias = u.weight(d, "Rbh", rb[2 * hid:])
    if u.node.attrs.get("linear_before_reset"):
        candidate = u.add(xh, u.mul(r, u.add(u.matmul(h, d, R[d, 2 * hid:], "Rh"), rh_bias)))
    else:
        candidate = u.add(xh, u.matmul(u.mul(r, h), d, R[d, 2 * hid:], "Rh"), rh_bias)
    hh = u.act(g_, u.clipped(candidate))
    keep = u.b.op("Sub", u.const(1.0, "one"), z)
    return [u.add(u.b.op("Mul", keep, hh), u.mul(z, h))]


def _rnn_step(u: _Unrolled, d: int, xw, state, R, B, P):
    (h,) = state
    return [u.act(u.acts[d][0], u.clipped(u.add(xw, u.matmul(h, d, R[d], "R"))))]


_STEPS = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN": _rnn_step}


def unroll(graph, node) -> bool:
    """LSTM/GRU/RNN over a sequence of known length with constant weights -> per step the cell's ops; the
    input's projection is one MatMul over the whole sequence. With sequence_lens a step past a sequence's end
    keeps the state and outputs zeros (Where), and the reverse direction runs over each sequence reversed
    within its own length (ReverseSequence), as the op defines."""
    x, w, r = node.inputs[:3]
    layout = node.attrs.get("layout") or 0
    seq_axis = 1 if layout else 0
    params = [node.input(i) for i in ((3, 7) if node.op == "LSTM" else (3,))]
    if x.shape is None or len(x.shape) != 3 or not isinstance(x.shape[seq_axis], int) or x.shape[seq_axis] < 1 \
            or x.dtype is None or any(v is not None and v.const is None for v in (w, r, *params)):
        return False
    u = _Unrolled(node)
    gates, hid, seq = _CELLS[node.op][0], u.hid, x.shape[seq_axis]
    W, R = (np.asarray(v.const, np.float64) for v in (w, r))
    B = np.zeros((len(u.dirs), 2 * gates * hid)) if params[0] is None else np.asarray(params[0].const, np.float64)
    P = None if node.op != "LSTM" or params[1] is None else np.asarray(params[1].const, np.float64)
    lens = node.input(4)
    if lens is not None and lens.dtype != np.int64:
        lens = u.b.op("Cast", lens, to=np.dtype(np.int64))
    state_axis = 1 if layout else 0  # of initial_h, Y_h, Y_c: [dirs, batch, hidden] or [batch, dirs, hidden]
    initial = [node.input(i) for i in ((5, 6) if node.op == "LSTM" else (5,))]
    emit = u.b.op
    ys, finals = [], []
    for d, reverse in enumerate(u.dirs):
        within_lengths = reverse and lens is not None
        xs = emit("ReverseSequence", x, lens, batch_axis=1 - seq_axis, time_axis=seq_axis) if within_lengths else x
        x_bias = B[d, :gates * hid] + (B[d, gates * hid:] if node.op != "GRU" else 0)
        xw_all = emit("Add", u.matmul(xs, d, W[d], "W"), u.weight(d, "bias", x_bias))
        state = [None if s is None else emit("Gather", s, u.const(d, "direction", np.int64), axis=state_axis)
                 for s in initial]
        outputs = [None] * seq
        for t in (range(seq - 1, -1, -1) if reverse and lens is None else range(seq)):
            xw = emit("Gather", xw_all, u.const(t, "step", np.int64), axis=seq_axis)
            new = _STEPS[node.op](u, d, xw, state, R, B, P)
            if lens is not None:  # a step past a sequence's end keeps its state and outputs zeros
                active = emit("Unsqueeze", emit("Less", u.const(t, "step", np.int64), lens), u.axes(1))
                zero = u.const(0.0, "zero")
                new = [emit("Where", active, n, zero if s is None else s) for n, s in zip(new, state)]
                outputs[t] = emit("Where", active, new[0], zero)
            else:
                outputs[t] = new[0]
            state = new
        y = emit("Concat", *(emit("Unsqueeze", o, u.axes(seq_axis)) for o in outputs), axis=seq_axis)
        if within_lengths:
            y = emit("ReverseSequence", y, lens, batch_axis=1 - seq_axis, time_axis=seq_axis)
        ys.append(emit("Unsqueeze", y, u.axes(seq_axis + 1)))  # the direction axis
        finals.append(state)
    results = [emit("Concat", *ys, axis=seq_axis + 1)]
    for i in range(len(node.outputs) - 1):
        results.append(emit("Concat", *(emit("Unsqueeze", f[i], u.axes(state_axis)) for f in finals), axis=state_axis))
    graph.replace_node(node, results[:len(node.outputs)])
    return True


for _name in _CELLS:
    set_decomposition(_name, unroll)
