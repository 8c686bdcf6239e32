"""JAX frontend: a Flax NNX module, a jittable function, or a generated Flax code folder, traced to a jaxpr
(`jax.make_jaxpr`) and read into the IR equation by equation through the Flax registry's `jax` rules.

- An NNX module's state (parameters, batch statistics) enters the trace as arguments, so each becomes a
  weight named by its path (`conv.kernel`, `bn.mean`), not a constant folded into code; for a function,
  `params` (its first argument, any pytree) does the same. Constants the function closes over are weights too.
- NNX layers (Linear, Conv, BatchNorm in eval mode, LayerNorm, RMSNorm, Embed) and jax.nn activations are
  marked while tracing (`marks.py`) and read as one IR op each (Dense, Conv, BatchNormalization ...); other
  calls (`jit`, `custom_jvp_call`, `custom_vjp_call`) are inlined. A `scan` of static length is unrolled;
  `cond` and `while_loop` are read by their rules (If and Loop), whose bodies this importer reads on request
  (`inline`, `subgraph`).
- Every primitive without a rule, and every configuration a rule cannot read, is listed in one error.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from pathlib import Path

import numpy as np

from tensorbridge.errors import BlockerReport, InvariantError, ModelError
from tensorbridge.frontends.jax.marks import PREFIX, Marks
from tensorbridge.ir import dtypes
from tensorbridge.ir.builder import Builder
from tensorbridge.ir.graph import Graph
from tensorbridge.ir.value import Value
from tensorbridge.ops.control import UNROLL_LIMIT
from tensorbridge.passes.dce import eliminate_dead_code
from tensorbridge.passes.fold_constants import fold_constants
from tensorbridge.passes.infer_shapes import infer_shapes
from tensorbridge.passes.recover import recover_patterns
from tensorbridge.rules.flax import REGISTRY
from tensorbridge.rules.flax.jaxpr import scan, stack_steps

#: call primitives whose body is inlined, and the parameter that holds it
CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
         "remat": "jaxpr", "checkpoint": "jaxpr", "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
         "custom_vjp_call_jaxpr": "fun_jaxpr"}


def load(source, example_inputs=None, params=None, input_shapes=None, **_options) -> Graph:
    """Trace `source` (an nnx.Module, a function, or a generated Flax folder) on `example_inputs` (arrays, or
    ShapeDtypeStructs) into an IR graph. A function is called as fn(params, *inputs) when `params` is given. A
    folder is traced on its recorded input signature, open dims fixed by `input_shapes` ({name: dims})."""
    import jax
    from flax import nnx

    if isinstance(source, (str, os.PathLike)):
        source, specs = _folder(Path(source), input_shapes or {})
        example_inputs = specs if example_inputs is None else example_inputs
    if example_inputs is None:
        raise ModelError("a JAX source needs example_inputs (arrays or jax.ShapeDtypeStruct) to trace it on")
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if isinstance(source, nnx.Module):
        # random number state (keys, counters) is traced too, but read by nothing an output needs
        graphdef, rng_state, state = nnx.split(source, nnx.RngState, ...)
        fn, params = (lambda s, r, *xs: nnx.merge(graphdef, r, s)(*xs)), state
        names, extra = _argument_names(source.__call__), (rng_state,)
        name = type(source).__name__
    elif callable(source):
        fn = source if params is not None else (lambda _, *xs: source(*xs))
        names, extra = _argument_names(source)[1 if params is not None else 0:], ()
        name = getattr(source, "__name__", "jax_function")
    else:
        raise ModelError(f"cannot trace a {type(source).__name__}: pass an nnx.Module or a function")
    marks = Marks()
    try:
        with marks.installed():
            closed = jax.make_jaxpr(fn)(params, *extra, *inputs)
    except Exception as e:  # noqa: BLE001 - whatever the user's code raises while tracing
        raise ModelError(f"JAX could not trace {name}: {type(e).__name__}: {str(e).splitlines()[0][:300]}") \
            from None
    leaves = jax.tree_util.tree_flatten_with_path(params)[0] if params is not None else []
    weights = [(path_name(path), np.asarray(leaf)) for path, leaf in leaves]
    hidden = len(jax.tree_util.tree_leaves(extra))
    return JaxprImporter(name, marks).run(closed, weights, names, hidden)


def _folder(path: Path, input_shapes: dict):
    """A generated Flax folder's module (its code runs: trusted folders only) and the input signature it records,
    with `input_shapes` for the dims it leaves open."""
    import jax

    from tensorbridge.codegen.folder import load_model, read_signature

    specs = []
    for spec in read_signature(path)["inputs"]:
        shape = tuple(input_shapes.get(spec["name"], spec["shape"]))
        if not all(isinstance(d, int) for d in shape):
            dims = ",".join(str(d) if isinstance(d, int) else f"<{d}>" for d in shape)
            raise ModelError(f"{path}: input {spec['name']!r} has open dims ({dims}); fix them with "
                             f"--input-shape {spec['name']}=... (input_shapes)")
        specs.append(jax.ShapeDtypeStruct(shape, np.dtype(dtypes.dtype(spec["dtype"]))))
    return load_model(path), tuple(specs)


def _argument_names(fn) -> list[str]:
    try:
        return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in
                (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def path_name(path) -> str:
    """'conv.kernel' for a state path ['conv']['kernel'].value."""
    parts = []
    for key in path:
        part = getattr(key, "key", getattr(key, "idx", getattr(key, "name", None)))
        if part is not None and part != "value":
            parts.append(str(part))
    return ".".join(parts) or "param"


class JaxprImporter:
    def __init__(self, name: str, marks: Marks):
        self.marks = marks
        self.graph = Graph(name)
        self.build = Builder(self.graph)
        self.report = BlockerReport("JAX import", "flax")

    def run(self, closed, weights: list[tuple[str, np.ndarray]], input_names: list[str], hidden: int = 0) -> Graph:
        """The graph of `closed` (a ClosedJaxpr) whose leading arguments are the `weights`, then `hidden` ones
        no output may depend on (random number state), then the inputs."""
        jaxpr = closed.jaxpr
        self._preflight(jaxpr)
        self.report.raise_if_any("Nothing was written. A primitive needs an import rule (tensorbridge/rules/flax/).")
        arguments = [self.build.weight(name, arr) for name, arr in weights] + [None] * hidden
        for k, var in enumerate(jaxpr.invars[len(weights) + hidden:]):
            name = input_names[k] if k < len(input_names) else f"input_{k}"
            arguments.append(self.graph.add_input(name, dtypes.name(var.aval.dtype), tuple(var.aval.shape)))
        outputs = self._inline(jaxpr, self._consts(closed), arguments)
        self.report.raise_if_any("Nothing was written.")
        if any(v is None for v in outputs):
            raise ModelError("an output depends on the module's random number state (dropout or sampling in "
                             "training mode?): call model.eval() before converting")
        self.graph.outputs.extend(outputs)
        return self.finish()

    def finish(self) -> Graph:
        """The graph read, cleaned: what the program computes from literals folded (iota masks), dead code
        removed, patterns recovered, shapes inferred."""
        self.graph.metadata["source_framework"] = "jax"
        fold_constants(self.graph, keep_learned=True)
        eliminate_dead_code(self.graph)
        recover_patterns(self.graph)
        infer_shapes(self.graph)
        return self.graph

    def inline(self, body, arguments: list) -> list:
        """The values a closed jaxpr (a cond branch, a while loop's condition or body) computes from
        `arguments`, read into the graph being built."""
        return self._inline(body.jaxpr, self._consts(body), arguments)

    def subgraph(self, tag: str, inputs: list[tuple[str, object, tuple]], read) -> Graph:
        """A subgraph (an If branch, a Loop body) of the graph being built, with `inputs` ((name, dtype, shape)
        each), whose outputs are what `read(*input values)` returns as it emits into it. A value computed
        outside it, or an input passed through, is copied in by an Identity."""
        base = self.build.base
        graph = self.build.graph.subgraph(f"{base}.{tag}")
        values = [graph.add_input(f"{base}.{name}", dtype, shape) for name, dtype, shape in inputs]
        with self.building(graph):
            outputs = read(*values)
            if any(v is None for v in outputs):
                raise ModelError(f"the {tag} could not be read (its ops are listed)")
            graph.outputs = [v if v.producer is not None and v.producer.graph is graph else
                             self.emit("Identity", [v], suffix=f"{tag}.out{i}") for i, v in enumerate(outputs)]
        self.build.at(base)
        return graph

    @contextlib.contextmanager
    def building(self, graph: Graph):
        """Emit into `graph` (an If branch, a Loop body) for the duration, then into the graph before."""
        outer = self.build
        self.build = Builder(graph, outer.base, outer.meta)
        try:
            yield
        finally:
            self.build = outer

    # -- what converters call ----------------------------------------------------------------------
    def emit(self, op: str, inputs, attrs: dict | None = None, outputs: int = 1, suffix: str = ""):
        return self.build.emit(op, inputs, attrs, outputs, suffix)

    def const(self, array, dtype=None) -> Value:
        return self.build.const(array, dtype=dtype)

    def weight(self, name: str, array) -> Value:
        return self.build.weight(name, array)

    def permuted(self, v: Value, perm: list[int], tag: str) -> Value:
        """`v` with its axes in order `perm`: a weight nothing reads yet is permuted in place (it keeps its name),
        another is copied, and a computed value gets a Transpose."""
        if v.const is None:
            return self.emit("Transpose", [v], {"perm": perm}, suffix=tag)
        return self.rearranged(v, lambda a: np.transpose(a, perm), tag)

    def rearranged(self, v: Value, fn, tag: str) -> Value:
        """Constant `v` with `fn` applied to its array: a weight nothing reads yet in place (it keeps its name),
        another copied."""
        data = np.asarray(fn(v.const), order="C")
        if not v.uses() and v not in self.graph.outputs and v.meta.get("role") != "literal":
            v.const, v.shape = data, tuple(data.shape)
            return v
        return self.build.weight(f"{v.name}.{tag}", data)

    # -- the walk ------------------------------------------------------------------------------------
    def _preflight(self, jaxpr) -> None:
        """Every primitive without a rule, listed before anything is built."""
        for eqn in _live(jaxpr):
            name = eqn.primitive.name
            sub = _subjaxpr(eqn)
            if self._mark(eqn) is not None:
                continue
            if sub is not None:
                self._preflight(sub.jaxpr if hasattr(sub, "jaxpr") else sub)
            elif name == "cond":
                for branch in eqn.params["branches"]:
                    self._preflight(branch.jaxpr)
            elif name == "while":
                self._preflight(eqn.params["cond_jaxpr"].jaxpr)
                self._preflight(eqn.params["body_jaxpr"].jaxpr)
            elif REGISTRY.import_rule(name, "jax") is None and name != "scan":
                self.report.add(name, eqn.outvars[0].aval.str_short() if eqn.outvars else name,
                                f"no rule for the JAX primitive {name}")

    def _mark(self, eqn):
        """(import rule, call record) of a marked call the registry reads, else None."""
        name = str(eqn.params.get("name", "")) if eqn.primitive.name in ("jit", "pjit") else ""
        if not name.startswith(PREFIX) or name not in self.marks.calls:
            return None
        record = self.marks.calls[name]
        rule = REGISTRY.import_rule(record[0], "nnx")
        return (rule, record) if rule is not None else None

    def _inline(self, jaxpr, consts: list, arguments: list) -> list:
        env = {}
        for var, value in zip((*jaxpr.constvars, *jaxpr.invars), (*consts, *arguments)):
            env[var] = value
        for eqn in _live(jaxpr):
            operands = [self._read(env, a) for a in eqn.invars]
            if any(v is None for v in operands):  # an operand a refused equation (or random state) would give
                results = [None] * len(eqn.outvars)
            else:
                self.build.at(f"{eqn.primitive.name}_{len(self.graph.nodes)}")
                results = self._equation(eqn, operands)
            for var, value in zip(eqn.outvars, results):
                if type(var).__name__ != "DropVar":
                    env[var] = value
                if isinstance(value, Value) and value.shape is None:  # an op without a shape rule (Einsum)
                    value.shape, value.dtype = tuple(var.aval.shape), dtypes.dtype(dtypes.name(var.aval.dtype))
                elif isinstance(value, Value) and value.shape != tuple(var.aval.shape):
                    made = value.producer.op if value.producer is not None else "a constant"
                    raise InvariantError(f"{eqn.primitive.name} read as {made} of shape {value.shape}; the trace "
                                         f"says {tuple(var.aval.shape)}")
        return [self._read(env, a) for a in jaxpr.outvars]

    def _read(self, env, atom):
        if hasattr(atom, "val") and type(atom).__name__ == "Literal":
            return self._constant(np.asarray(atom.val, dtype=atom.aval.dtype), "literal", literal=True)
        return env.get(atom)

    def _consts(self, closed) -> list[Value]:
        """The constants a (closed) jaxpr carries, as IR constants; an open jaxpr carries none."""
        return [self._constant(c, f"const{i}") for i, c in enumerate(getattr(closed, "consts", ()))]

    def _constant(self, value, name: str, literal: bool = False) -> Value:
        arr = np.asarray(value)
        if literal or arr.dtype.kind != "f" or arr.size == 1:
            return self.build.const(arr)
        return self.build.weight(name, arr)

    def _equation(self, eqn, operands: list) -> list:
        name = eqn.primitive.name
        try:
            marked = self._mark(eqn)
            if marked is not None:
                rule, (kind, settings, tensors, layer) = marked
                operands = operands[len(operands) - len(tensors):]
                weights = [v for v in operands[1:] if v.const is not None and v.meta.get("role") != "literal"]
                if layer is not None and weights:  # named after the layer's path, as its weights are
                    path = ".".join(os.path.commonprefix([w.name.split(".")[:-1] for w in weights]))
                    self.build.at(path, {"module": path})
                else:
                    self.build.at(f"{kind}_{len(self.graph.nodes)}")
                value = rule.convert(self, eqn, settings, layer, *operands)
                if value is not None:
                    return list(value) if isinstance(value, (list, tuple)) else [value]
            sub = _subjaxpr(eqn)
            if sub is not None:
                inner = sub.jaxpr if hasattr(sub, "jaxpr") else sub
                return self._inline(inner, self._consts(sub), operands)
            if name == "scan":
                return self._scan(eqn, operands)
            rule = REGISTRY.import_rule(name, "jax")
            out = rule.convert(self, eqn, *operands)
            return list(out) if isinstance(out, (list, tuple)) else [out]
        except ModelError as e:
            self.report.add(name, self.build.base, str(e))
            return [None] * len(eqn.outvars)

    def _scan(self, eqn, operands: list) -> list:
        """A scan as an IR Scan over the leading axis of its xs (both directions reversed for reverse=True); one
        without xs, whose length a Scan could not count, unrolled."""
        p = eqn.params
        length, n_consts, n_carry = int(p["length"]), int(p["num_consts"]), int(p["num_carry"])
        body = p["jaxpr"]
        consts, carry, xs = operands[:n_consts], operands[n_consts:n_consts + n_carry], operands[n_consts + n_carry:]
        body_consts = self._consts(body)
        if xs:
            return scan(self, carry, xs, lambda *vals: self._inline(body.jaxpr, body_consts, [*consts, *vals]),
                        bool(p.get("reverse")), len(eqn.outvars))
        if length > UNROLL_LIMIT:
            raise ModelError(f"a scan of {length} steps without inputs (more than {UNROLL_LIMIT} are not unrolled)")
        ys: dict[int, list] = {}
        for t in range(length - 1, -1, -1) if p.get("reverse") else range(length):
            out = self._inline(body.jaxpr, body_consts, [*consts, *carry])
            carry, ys[t] = out[:n_carry], out[n_carry:]
        stacked = [stack_steps(self, [ys[t][k] for t in range(length)]) for k in range(len(eqn.outvars) - n_carry)]
        return [*carry, *stacked]

def _live(jaxpr) -> list:
    """The equations some output of `jaxpr` depends on (state updates and random number bookkeeping are not).
    Calls are kept whole: their operands are what a marked call's reader takes."""
    needed = {v for v in jaxpr.outvars if type(v).__name__ == "Var"}
    live = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in needed for v in eqn.outvars):
            live.append(eqn)
            needed |= {v for v in eqn.invars if type(v).__name__ == "Var"}
    return live[::-1]


def _subjaxpr(eqn):
    key = CALLS.get(eqn.primitive.name)
    return eqn.params.get(key) if key else None
