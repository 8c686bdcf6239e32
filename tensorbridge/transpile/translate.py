"""Model code of one framework -> the same classes written for another, statement by statement.

The walk (one `Translator` per module):

1. The module's imports say what each name means (imports.py); classes deriving from the source
   framework's module class (or from such a class of the same file) are model classes.
2. Each model class gets the target's skeleton (`nn.Module.__init__`/`forward` -> `keras.layers.Layer`'s
   `__init__`/`call`); its other methods and the module's helper functions are translated with it.
3. Every call is bound to its parameters with the signature its code row declares, read into an IR op
   (`OpCall`) by the source table and written by the target table; a layer class, a tensor function and a
   tensor method all go this way. Operators, slicing, Python built-ins and calls of the module's own
   classes and functions stay as they are.
4. Each local name carries a kind (tensor, module, python value) so that tensor methods are recognised,
   conditions on tensor values (data-dependent control flow) are refused, and in-place operations are
   checked for aliases the translation could not follow.

Everything the tables cannot prove is collected as a blocker with file:line, and raised all at once.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import sys
from dataclasses import dataclass, field

from tensorbridge.codegen import pyast as P
from tensorbridge.errors import BlockerReport
from tensorbridge.rules.code import (
    FRESH_TENSOR_OPS,
    NOT_LITERAL,
    NUMBER_FIRST,
    REQUIRED,
    SWITCHED_PER_CALL,
    OpCall,
    Refused,
    Signature,
    holds_number,
    is_empty_literal,
    known,
    makes_integers,
    mark_held,
    transposed_product,
)
from tensorbridge.transpile import init_argument
from tensorbridge.transpile.composite_subclass import spell_composite
from tensorbridge.transpile.container_subclass import hold_container
from tensorbridge.transpile.factory_arguments import drop_factory_arguments
from tensorbridge.transpile.framework_aliases import framework_hasattr, inline_framework_aliases
from tensorbridge.transpile.gradient_branch import guard_gradient_branches
from tensorbridge.transpile.held_settings import keep_held_settings
from tensorbridge.transpile.imports import FRAMEWORK_ROOTS, OTHER_FRAMEWORKS, Imports, Rows, resolve
from tensorbridge.transpile.layer_choice import spell_layer_choices
from tensorbridge.transpile.layer_subclass import hold_parent_layer
from tensorbridge.transpile.library_code import take_library_definitions
from tensorbridge.transpile.named_sequential import gather_named_layers
from tensorbridge.transpile.syntax import binds, is_self, is_self_attr, is_super_call, single_import
from tensorbridge.transpile.weight_tying import untie

TENSOR, MODULE, MODULES, PYTHON, UNKNOWN = "tensor", "module", "modules", "python", "unknown"
ARRAY = "array"  # a NumPy array the source computes (`np.concatenate(...)` in a helper)
DTYPE = "dtype"  # a tensor's dtype (`input_dtype = x.dtype`), which rows taking a dtype or a device must tell apart
#: operators whose result is a number when both operands are Python values (a tuple has none of them)
NUMERIC_OPERATORS = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
DEVICE = "device"  # a device (`x.device`, `torch.device("cuda")`): targets that place arrays themselves write None
OWN = "own"  # an instance of a model class of the module: a layer whose attributes keep their names
KEY = "random key"  # NNX's `key = rngs.params()` in __init__: the key of an initial value, which port_weights replaces
CLASS = "layer class"  # a framework layer class used as a value (`norm_layer=nn.LayerNorm`): calling it makes a layer
#: Python built-ins model code calls; they stay as written
BUILTINS = frozenset({"len", "range", "int", "float", "bool", "str", "min", "max", "abs", "sum", "tuple", "list",
                      "dict", "zip", "enumerate", "isinstance", "round", "reversed", "sorted", "any", "all", "super",
                      "print", "hasattr", "divmod", "pow", "map", "set", "slice", "type", "callable", "next",
                      "iter"})
#: builtins iterating their arguments (after the function for map)
ITERATING = {"zip": 0, "enumerate": 0, "list": 0, "tuple": 0, "map": 1, "sorted": 0, "reversed": 0}
#: libraries besides Python's own whose functions model code may call in any framework: they take every
#: framework's tensors (einops) or plain values
PORTABLE_LIBRARIES = frozenset({"einops", "numpy", "math"})
#: what a layer container has itself, so that `d.items` is never an entry named "items" (nn.ModuleDict's lookup)
CONTAINER_ATTRIBUTES = frozenset({"items", "keys", "values", "update", "pop", "clear", "get", "training", "forward",
                                  "append", "extend", "insert", "add_module", "parameters", "modules", "children",
                                  "to", "train", "eval", "state_dict", "apply", "cuda", "cpu", "type", "float",
                                  "double", "half", "zero_grad", "register_buffer", "register_parameter"})
#: methods of Python lists and dicts model code calls while building layers
PYTHON_METHODS = frozenset({"append", "extend", "insert", "items", "keys", "values", "get", "pop", "format",
                            "index", "count", "update", "copy"})
#: weight-initialisation helpers: what they set is replaced by the trained weights `port_weights` copies
#: Keras' `Layer.add_weight`, as a weight created in `__init__` is read (keyword arguments)
ADD_WEIGHT = Signature.parse("shape=None initializer=None dtype=None trainable=True autocast=True regularizer=None "
                             "constraint=None aggregation='none' overwrite_with_gradient=False name=None")
INIT_METHODS = frozenset({"_init_weights", "init_weights", "reset_parameters", "_reset_parameters",
                          "initialize_weights", "_initialize_weights", "weights_init"})


@dataclass
class ClassInfo:
    name: str
    attrs: dict = field(default_factory=dict)  # self.<name> -> kind
    inplace: set = field(default_factory=set)  # self.<name> layers that overwrite their input
    training: bool = False  # forward reads self.training
    deterministic: bool = False  # reads the target's `self.deterministic` (NNX's mode attribute)
    own_base: bool = False  # derives from another model class of the module (its __init__ takes arguments)
    sequential: bool = False  # derives from the framework's sequential container (torchvision's ConvBNReLU)
    none_slots: dict = field(default_factory=dict)  # self.<name> -> `self.<name> = None` assignments in __init__
    #: self.<name> -> its `self.<name> = []` / `{}` assignment in __init__, for sources whose plain containers hold
    #: layers (Keras): it becomes the target's layer container once a layer is put in it
    empty_containers: dict = field(default_factory=dict)
    #: self.<name> -> its assignment in __init__ of an empty sequential container (layers added to it later)
    empty_sequentials: dict = field(default_factory=dict)
    layer_rows: dict = field(default_factory=dict)  # self.<name> -> the code row of the framework layer it holds
    #: self.<name> -> (the layer's OpCall, the target's constructor written for it)
    written_layers: dict = field(default_factory=dict)
    weights_read: set = field(default_factory=set)  # self.<name> layers whose weights the code reads
    forward_state: set = field(default_factory=set)  # self.<name> set in the forward pass (`self.attn = p_attn`)
    forward_tensors: set = field(default_factory=set)  # those that may hold a tensor (not a Python value)
    #: self.<name> assigned by a method other than __init__ (read as of unknown kind where __init__ set a Python
    #: value: the tensor a forward pass keeps, `self.src_mask`)
    set_later: set = field(default_factory=set)
    methods: dict = field(default_factory=dict)  # name -> the class's own method
    method_kinds: dict = field(default_factory=dict)  # name -> what the method returns, where known beforehand
    dropped: set = field(default_factory=set)  # self.<name> bookkeeping left out (SourceSkeleton.bookkeeping)
    entries: dict = field(default_factory=dict)  # self.<name> dict of layers -> the kind of each entry by key
    own_classes: dict = field(default_factory=dict)  # self.<name> -> the module's class of the layer it holds
    #: method -> its parameters some call passes a framework layer class (`self.build(norm_layer)`)
    passed_classes: dict = field(default_factory=dict)


@dataclass
class Scope:
    mode: str  # "init", "forward", "helper"
    kinds: dict = field(default_factory=dict)
    groups: dict = field(default_factory=dict)  # name -> alias group id
    rest: list = field(default_factory=list)  # statements still to come, for "is it read later"
    returns: list = field(default_factory=list)  # kinds of the values returned
    functions: dict = field(default_factory=dict)  # nested function -> the kind of what it returns
    reads_training: bool = False  # the source's training flag is this function's parameter (Keras' `training`)
    constructed: dict = field(default_factory=dict)  # name -> the call that built it (`layer = nn.X(...)`)
    #: names whose assignment goes when nothing reads them: a layer read into the one that wraps it, a device
    folded: set = field(default_factory=set)
    #: parameters that default to None: called in `__init__`, one is a layer class passed (`norm_layer=None`)
    optional: set = field(default_factory=set)
    integers: set = field(default_factory=set)  # names bound to integer tensors (rules/code.makes_integers)
    numbers: set = field(default_factory=set)  # names bound to Python numbers (rules/code.holds_number)
    arguments: set = field(default_factory=set)  # the function's parameters
    no_grad: bool = False  # under a decorator that stops gradients (SourceSkeleton.no_grad_decorators)
    bound_once: set = field(default_factory=set)  # local names the function binds exactly once
    literals: dict = field(default_factory=dict)  # name -> the immutable literal it is bound to once (`pad = (0, 1)`)
    #: name -> the list or tuple display it is bound to once, of names bound once (or parameters never assigned),
    #: and only passed whole to the framework's functions (never changed): passed to one, the display is (rows read
    #: sizes and widths from its items)
    displays: dict = field(default_factory=dict)
    passed_whole: set = field(default_factory=set)  # names read only as whole arguments of the framework's functions
    stored: set = field(default_factory=set)  # names the function assigns anywhere
    #: name -> the call making the initializer object it is bound to (`initializer = ...truncated_normal(...)`)
    initializers: dict = field(default_factory=dict)
    entries: dict = field(default_factory=dict)  # name of a dict of layers -> the kind of each entry by key


class Translator:
    def __init__(self, source: str, filename: str, source_table, target, number_parameters: dict | None = None):
        #: module function (`name`) or class's forward method (`Class.forward`) -> the parameters every call in the
        #: module passes a Python value (found by an earlier translation: see transpile()): read as such, not as
        #: tensors (keras.io's `causal_attention_mask(batch_size, ...)`, Segformer's `ffn(x, height, width)`)
        self.number_parameters = number_parameters or {}
        self.passed_kinds: dict[str, dict[str, list]] = {}  # function -> parameter -> the kinds calls pass it
        self.filename = filename
        self.source_table = source_table
        self.target = target
        self.src, self.dst = source_table.source, target.skeleton
        self.report = BlockerReport(f"transpile {filename} -> {target.framework}", framework=target.framework)
        self.notes: list[str] = []
        self.roots = {source_table.framework, *self.src.roots}
        tree = parse(source, filename)
        self.layers = Rows(source_table.layers)
        self.functions = Rows(source_table.functions)
        notes, self.unread_library = take_library_definitions(
            tree, FRAMEWORK_ROOTS | OTHER_FRAMEWORKS | PORTABLE_LIBRARIES, self._has_row)
        self.notes += notes
        # a name the source imports as the target's code does (`from functools import partial`) keeps its name
        shared = {a.asname or a.name for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))
                  for a in s.names if any(ast.dump(single_import(s, a)) == ast.dump(i)
                                          for i in target.skeleton.imports)}
        imported = {(a.asname or a.name).split(".")[0] for s in ast.walk(tree)
                    if isinstance(s, (ast.Import, ast.ImportFrom)) for a in s.names}
        self.tree = _Rename(target.skeleton.reserved_names - shared, target.skeleton.reserved_attributes,
                            imported).visit(tree)
        if self.src.init_argument is not None:
            _DropArgument(self.src.init_argument).visit(self.tree)
        self.imports = Imports(self.tree)
        self.classes: dict[str, ClassInfo] = {}
        self.helpers: set[str] = set()
        self.container_subclasses: set[str] = set()  # refused (see _hold_container)
        self.held_containers: set[str] = set()  # container subclasses read as classes holding one (see _hold_container)
        #: the methods the module calls on any object (`cell.init_hidden(...)`), by name -> the calls (see
        #: _named_elsewhere)
        self.methods_called: dict[str, list] = self._methods_called(self.tree.body)
        self.helper_kinds: dict[str, str] = {}  # what a helper function returns (a layer: MODULE)
        self._group = 0
        self._temporaries = 0
        self.hoisted: list[ast.stmt] = []  # statements an expression needs first (see _once)
        self.initializers_left_out: list[int] = []  # lines of layers given initializers (see _without_initializers)
        #: framework layer classes used as values, by path -> the module-level function written for each
        #: (see _layer_class)
        self.factories: dict[str, ast.FunctionDef] = {}
        self.devices: set[str] = set()  # module-level names bound to a device (`device = torch.device(...)`)
        #: the module's classes and functions by name (the first of a name), and the names its classes derive from
        self.definitions: dict[str, ast.stmt] = {}
        for stmt in self.tree.body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef)):
                self.definitions.setdefault(stmt.name, stmt)
        self.subclassed = {b.id for c in self.tree.body if isinstance(c, ast.ClassDef) for b in c.bases
                           if isinstance(b, ast.Name)}
        #: module-level names bound to plain Python values (`_autowrap_functions = set()`, `_EXPORTABLE = False`):
        #: their methods are Python's (`.add` of a set is not a tensor's)
        self.plain_globals = {n for s in self.tree.body if isinstance(s, ast.Assign) and _is_plain_value(s.value)
                              for n in _bound(s)}

    # -- module ----------------------------------------------------------------------------------
    def module(self, only: str | None = None) -> tuple[list[ast.stmt], list[str]]:
        """The translated module body and the model class names."""
        if only is not None and only not in self.definitions and f"{only}_" in self.definitions:
            only += "_"  # a class named as one of the target's helpers, renamed (see _Rename)
        wanted = _reachable(self.tree, only) if only is not None else None
        for stmt in self.tree.body:
            parent = self._parent_layer(stmt) if isinstance(stmt, ast.ClassDef) else None
            if parent is not None and (wanted is None or stmt.name in wanted):
                self._hold_parent_layer(stmt, parent)
            if isinstance(stmt, ast.ClassDef) and (wanted is None or stmt.name in wanted):
                self._hold_container(stmt)
                self._spell_composite(stmt)
            if isinstance(stmt, ast.ClassDef) and self._is_model_class(stmt):
                self.classes[stmt.name] = ClassInfo(stmt.name)
                if wanted is None or stmt.name in wanted:
                    self._untie(stmt)
                    spell_layer_choices(stmt, lambda node: self._framework_path(node) is not None)
                    self.notes += guard_gradient_branches(stmt, self.src.autograd_attributes)
                    self.notes += inline_framework_aliases(stmt, self._framework_path, _has_attribute)
                    self.notes += drop_factory_arguments(stmt, self.src.factory_arguments)
                    self._gather_named_layers(stmt)
                    keep_held_settings(stmt, self._layer_row, lambda row: self.source_table.layer_settings.get(
                        row.path, {}))
            elif isinstance(stmt, ast.FunctionDef):
                self.helpers.add(stmt.name)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and (isinstance(stmt.value, ast.Lambda) or isinstance(stmt.value, ast.Call) and isinstance(
                        stmt.value.func, ast.Name) and stmt.value.func.id in self.helpers) and \
                    not self._uses_framework(stmt):
                # `pair = lambda x: x if isinstance(x, tuple) else (x, x)`; timm's `to_2tuple = _ntuple(2)`
                self.helpers.add(stmt.targets[0].id)
            elif isinstance(stmt, ast.ClassDef) and not self._uses_framework(stmt):
                self.helpers.add(stmt.name)  # a plain class (torchvision's InvertedResidualConfig): kept as written
                self.helper_kinds[stmt.name] = PYTHON
        self.factory_parameters = self._factory_parameters()
        self.methods_called = self._methods_called([s for s in self.tree.body if wanted is None or getattr(
            s, "name", None) in wanted])  # after the rewrites above
        containers = self.container_subclasses
        if not self.classes and not containers and only not in self.unread_library:
            self.report.add("no model class", self.filename,
                            f"no class derives from {' or '.join(sorted(self.src.module_classes))}")
        if only in self.unread_library:
            self.report.add("--class", self.filename, self.unread_library[only])
        elif only is not None and only not in self.classes and only not in containers:
            self.report.add("--class", self.filename, f"no model class named {only!r} (found: "
                                                      f"{', '.join(self.classes) or 'none'})")
        body, library = [], []
        for stmt in self.tree.body:
            if wanted is not None and isinstance(stmt, (ast.ClassDef, ast.FunctionDef)) and stmt.name not in wanted:
                continue
            if wanted is not None and isinstance(stmt, (ast.Assign, ast.AnnAssign)) and not (
                    set(_bound(stmt)) & wanted):
                continue
            if getattr(stmt, "from_library", False):  # kept below if the module's code uses it
                with self._own_report() as report:
                    out = self._top_level(stmt)
                library.append((len(body), stmt, out, report.blockers))
                continue
            out = self._top_level(stmt)
            if out is not None:
                body.append(out)
        body = self._used_library_code(body, library, only)
        body = [*self.factories.values(), *body]
        if self.initializers_left_out:
            lines = sorted(set(self.initializers_left_out))
            self.notes.append(f"line{'s' * (len(lines) > 1)} {', '.join(map(str, lines))}: the initializers given to "
                              "layers are not translated (initial values are not); port_weights copies the trained "
                              "weights")
        if self.dst.random_source is not None:
            self._pass_random_source(body)
        if self.dst.init_argument is not None:
            for fn in init_argument.thread(body, *self.dst.init_argument, self.dst.forward):
                self._block(fn, f"layer built in {fn.name}", f"{self.target.framework} layers are built in "
                                                             f"__init__, which receives {self.dst.init_argument[0]}")
        return body, list(self.classes)

    @contextlib.contextmanager
    def _own_report(self):
        """Blockers found inside go to a report of their own (yielded), not the translation's: for code kept only
        if it translates or is used."""
        report, self.report = self.report, BlockerReport("aside", framework=self.target.framework)
        try:
            yield self.report
        finally:
            self.report = report

    def _used_library_code(self, body: list, library: list, only: str | None) -> list:
        """`body` with the library definitions (see library_code) its code uses, directly or through each other,
        or `only` names, put back where they stood (`library`: (index in body, source statement, translation,
        blockers)); their blockers count only then. The others (`trunc_normal_`, which only initialises) are left
        out."""
        def names(stmts):
            return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name)}

        used, kept = names(body) | {only}, set()
        while grown := [k for k, (_, stmt, _, _) in enumerate(library) if k not in kept and binds(stmt) & used]:
            kept |= set(grown)
            used |= names([library[k][2] for k in grown if library[k][2] is not None])
        out, placed = [], 0  # placed: how many statements of body are in out
        for k, (index, _, written, blockers) in enumerate(library):
            out += body[placed:index]
            placed = max(placed, index)
            if k in kept:
                out += [written] if written is not None else []
                self.report.blockers.extend(blockers)  # a used definition left out is refused with its reason
        return out + body[placed:]

    def unused_functions(self) -> list[str]:
        """The module-level functions no model class uses, directly or through others (a training loop, `main`)."""
        used = set().union(*(_reachable(self.tree, name) for name in self.classes)) if self.classes else set()
        return [s.name for s in self.tree.body if isinstance(s, ast.FunctionDef) and s.name not in used]

    def _pass_random_source(self, body: list) -> None:
        """Functions that draw random numbers take the target's source of them (NNX: `rngs`); a class method
        calling one passes its own (`self.rngs`); a class whose methods draw from it keeps it."""
        name = self.dst.init_argument[0]
        drawing = _drawing_functions(body, name, set(self.dst.helpers))
        for cls in [c for c in body if isinstance(c, ast.ClassDef) and c.name in self.classes]:
            calls = [n for f in cls.body if isinstance(f, ast.FunctionDef) and f.name != "__init__"
                     for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                     and n.func.id in drawing and all(k.arg != name for k in n.keywords)]
            for call in calls:
                call.keywords.append(ast.keyword(name, P.name(self.dst.random_source)))
            cls.body = self._keep_random_source(cls, cls.body, self.classes[cls.name])

    def _is_layer_factory(self, node) -> bool:
        """A class of the module (`block=BasicBlock`) or a module function returning a layer (EDSR's
        `conv=default_conv`), named as a value."""
        if not isinstance(node, ast.Name):
            return False
        if node.id in self.classes:
            return True
        fn = self.definitions.get(node.id)
        returns = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return)] if isinstance(fn, ast.FunctionDef) \
            else []
        return bool(returns) and all(isinstance(r, ast.Call) and (
            self.layers.find(self.imports.path(r.func)) is not None or
            isinstance(r.func, ast.Name) and r.func.id in self.classes) for r in returns)

    def _factory_parameters(self) -> dict:
        """class name -> the `__init__` parameters some call of the class passes a layer factory (a layer class, a
        class of the module, a function returning a layer, or a parameter defaulting to one): calling them makes a
        layer (`ResBlock(conv, ...)` with EDSR's `conv=default_conv`)."""
        out: dict = {}
        for fn in [f for c in self.tree.body if isinstance(c, ast.ClassDef) for f in c.body
                   if isinstance(f, ast.FunctionDef)]:
            positional = fn.args.posonlyargs + fn.args.args
            defaults = dict(zip([a.arg for a in positional][::-1], fn.args.defaults[::-1]))
            defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
            # local names bound to a factory (`norm = partial(nn.BatchNorm2d, eps=0.001)`) pass one too
            defaults.update({n.targets[0].id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign) and
                             len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)})

            def factory(value, defaults=defaults):
                if isinstance(value, ast.Name) and value.id in defaults:
                    value = defaults[value.id]
                return self._makes_layers(value)
            for call in [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                         and n.func.id in self.classes]:
                init = self._init_of(call.func.id)
                if init is None:
                    continue
                names = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
                passed = [*zip(names, call.args), *[(k.arg, k.value) for k in call.keywords if k.arg]]
                out.setdefault(call.func.id, set()).update(n for n, v in passed if factory(v))
        return out

    def _init_of(self, class_name: str):
        """The `__init__` of the module's class, or of the nearest of its bases in the module that has one."""
        while class_name is not None:
            init = self._own_method(class_name, "__init__")
            if init is not None:
                return init
            cls = self.definitions.get(class_name)
            class_name = next((b.id for b in cls.bases if isinstance(b, ast.Name) and b.id in self.classes),
                              None) if isinstance(cls, ast.ClassDef) else None
        return None

    def _own_method(self, class_name: str | None, method: str) -> ast.FunctionDef | None:
        """The method `method` that the module's class `class_name` defines itself, else None."""
        cls = self.definitions.get(class_name)
        return next((m for m in reversed(cls.body) if isinstance(m, ast.FunctionDef) and m.name == method),
                    None) if isinstance(cls, ast.ClassDef) else None  # the last def of a name is the method

    def _note_passed_kinds(self, function: str, names: list, node: ast.Call, kinds: list) -> None:
        """Record the kinds of value `node`, a call of `function` (parameters `names`), passes each parameter."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return
        passed = [*zip(names, kinds), *((k.arg, kind) for k, kind in zip(node.keywords, kinds[len(node.args):]))]
        for name, kind in passed:
            self.passed_kinds.setdefault(function, {}).setdefault(name, []).append(kind)

    def numbers_passed(self) -> dict:
        """The number parameters (see number_parameters) this translation found, with those it was given; only
        new ones make it differ from them."""
        found = {fn: {p for p, kinds in params.items() if set(kinds) == {PYTHON}}
                 for fn, params in self.passed_kinds.items()}
        return {fn: found.get(fn, set()) | self.number_parameters.get(fn, set()) for fn in {*found,
                                                                                           *self.number_parameters}}

    def _passed_whole(self, fn: ast.FunctionDef) -> set:
        """The names `fn` reads only as whole arguments of the framework's functions (`tf.pad(x, widths)`), which
        leave a list given to them as it is: never a method's receiver (`outputs.append`), indexed or passed on."""
        parents = {id(child): node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
        passed: dict = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                parent = parents.get(id(n))
                call = parents.get(id(parent)) if isinstance(parent, ast.keyword) else parent
                whole = isinstance(call, ast.Call) and n is not call.func and \
                    self._framework_path(call.func) is not None
                passed[n.id] = passed.get(n.id, True) and whole
        return {name for name, whole in passed.items() if whole}

    def _methods_called(self, statements: list) -> dict[str, list]:
        """The methods `statements` call on any object (`cell.init_hidden(...)`), by name -> the calls."""
        out: dict[str, list] = {}
        for node in (n for s in statements for n in ast.walk(s)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    self.imports.path(node.func) is None:  # not a framework's function (`torch.device(...)`)
                out.setdefault(node.func.attr, []).append(node)
        return out

    def _named_elsewhere(self, name: str, fn: ast.FunctionDef, cls: ast.ClassDef) -> bool:
        """Whether the method `name` of `cls` is used outside `fn`: read as `self.<name>` in `cls` or a class it
        derives from or that derives from it, or called as `<any object>.<name>(...)` anywhere in the module."""
        inside = {id(n) for n in ast.walk(fn)}
        related = [c for c in self.tree.body if isinstance(c, ast.ClassDef) and (
            c is cls or c.name in {b.id for b in cls.bases if isinstance(b, ast.Name)} or
            cls.name in {b.id for b in c.bases if isinstance(b, ast.Name)})]
        return any(id(n) not in inside for n in self.methods_called.get(name, ())) or any(
            is_self_attr(n) and n.attr == name and id(n) not in inside for c in related for n in ast.walk(c))

    def _unused_method(self, cls: ast.ClassDef, fn: ast.FunctionDef, scope: Scope, info) -> list[ast.stmt]:
        """A method nothing in the module calls or reads (`extra_repr`, a `device` property): translated where it
        can be, else left out with its reasons in a note (it computes nothing the model returns)."""
        kept = set(info.forward_tensors)
        with self._own_report() as report:
            written = self._function(fn, scope, info, fn.name)
        blockers = report.blockers
        if not blockers:
            return [written]
        info.forward_tensors = kept  # what the method left out sets is set by nothing the translation keeps
        self.notes.append(f"line {fn.lineno}: {cls.name}.{fn.name}, which nothing in the module calls, is not "
                          f"translated ({'; '.join(f'{b.op}: {b.detail}' for b in blockers)})")
        return []

    def _passes_class(self, methods: dict, name: str, info: ClassInfo) -> bool:
        """Whether `__init__` may pass the method `name` a layer class (`norm_layer`): what the method makes then
        depends on what __init__'s translation notes, so it is translated after it."""
        init = methods.get("__init__")
        if init is None:
            return False
        defaults = dict(zip([a.arg for a in init.args.args][::-1], init.args.defaults[::-1]))
        classes = {a for a, d in defaults.items() if self._makes_layers(d)} | set(
            self.factory_parameters.get(info.name, ()))
        return any((isinstance(a, ast.Name) and a.id in classes) or self._framework_path(a) is not None
                   for call in ast.walk(init) if isinstance(call, ast.Call) and is_self_attr(call.func) and
                   call.func.attr == name for a in [*call.args, *(k.value for k in call.keywords)])

    def _base_path(self, cls: ast.ClassDef) -> str | None:
        """The framework path of the one class `cls` derives from, else None."""
        return self._framework_path(cls.bases[0]) if len(cls.bases) == 1 else None

    def _parent_layer(self, cls: ast.ClassDef):
        """The framework layer class `cls` derives from (`class LayerNorm(nn.LayerNorm)`), else None."""
        path = self._base_path(cls)
        return self.layers.find(path) if path and path not in self.src.module_classes and \
            path not in self.src.containers else None

    def _gather_named_layers(self, cls: ast.ClassDef) -> None:
        """Layers added by name to a sequential container after it is made (see named_sequential)."""
        for init in (m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"):
            gather_named_layers(init, self.src.add_child, self._is_sequential,
                                lambda node: self.imports.path(node) == "collections.OrderedDict")

    def _spell_composite(self, cls: ast.ClassDef) -> None:
        """A class deriving from a layer made of layers (`nn.Transformer`): see composite_subclass."""
        spelled = self.src.composite_layers.get(self._base_path(cls))
        if spelled is None:
            return
        module_class = min(self.src.module_classes, key=len)  # the public path (torch.nn.Module)
        why = spell_composite(cls, spelled, self.imports.expression, module_class)
        if why is not None:
            self._block(cls, f"class {cls.name}({ast.unparse(cls.bases[0])})", why)

    def _hold_container(self, cls: ast.ClassDef) -> None:
        """A class deriving from a list or dict container (torchvision's `_DenseBlock(nn.ModuleDict)`): read as a
        class holding one (see container_subclass), else refused with the reason."""
        kind = self.src.containers.get(self._base_path(cls))
        if kind not in ("list", "dict"):
            return
        why = hold_container(cls, self.src.add_child)
        if why is None:
            self.held_containers.add(cls.name)
        else:
            self._block(cls, f"class {cls.name}({ast.unparse(cls.bases[0])})", why)
            self.container_subclasses.add(cls.name)

    def _layer_row(self, call: ast.Call):
        """The code row of the framework layer a constructor call makes, else None."""
        path = self._framework_path(call.func)
        return self.layers.find(path) if path else None

    def _untie(self, cls: ast.ClassDef) -> None:
        """Weight tying by assignment, spelled out (see weight_tying)."""
        if not self.src.tied_layers:
            return
        notes, refusals = untie(cls, self.imports, self.src.tied_layers, "weight")
        self.notes += notes
        for why in refusals:
            self._block(cls, "weight tying by assignment", why)

    def _hold_parent_layer(self, cls: ast.ClassDef, row) -> None:
        """Read a subclass of a framework layer as a class holding that layer (see layer_subclass)."""
        try:
            params = self._variable_parameters(row)
        except Refused as e:
            self._block(cls, f"class {cls.name}({ast.unparse(cls.bases[0])})", str(e))
            return
        table = self.source_table
        reads = {n for n, _ in row.signature.params} | {
            a for attributes in [*table.weight_attributes.values(), *table.config_attributes.values()]
            for a in attributes}
        why = hold_parent_layer(cls, cls.bases[0], params, self.src.forward, row.call.params, reads,
                                self.src.base_options, table.layer_settings.get(row.path, {}), row.signature.params)
        if why is not None:
            self._block(cls, f"class {cls.name}({ast.unparse(cls.bases[0])})", why)

    def _is_model_class(self, cls: ast.ClassDef) -> bool:
        if self._parent_layer(cls) is not None:
            return True
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                return True
            if self.imports.path(base) in self.src.module_classes or self._is_sequential(base):
                return True
        return cls.name in self.held_containers

    def _is_sequential(self, node) -> bool:
        """Whether `node` names the framework's sequential container (a base class, a constructor called)."""
        return self.src.containers.get(self.imports.path(node)) == "sequential"

    def _top_level(self, stmt):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return None if self.imports.framework_of(stmt) else stmt
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return None  # the module docstring: the translation writes its own
        if isinstance(stmt, ast.ClassDef) and stmt.name in self.classes:
            return self._class(stmt)
        if isinstance(stmt, ast.ClassDef) and stmt.name in self.container_subclasses:
            return None  # refused
        if isinstance(stmt, ast.FunctionDef) and self._makes_initializers(stmt):
            self.notes.append(f"line {stmt.lineno}: {stmt.name} returns an initializer, which is not translated "
                              "(initial values are not); port_weights copies the trained weights")
            return None
        if isinstance(stmt, ast.FunctionDef):
            scope = Scope("helper")
            translated = self._function(stmt, scope, None, stmt.name)
            if scope.returns and len(set(scope.returns)) == 1:
                self.helper_kinds[stmt.name] = scope.returns[0]
            return translated
        if isinstance(stmt, ast.If) and _is_main_guard(stmt):
            self.notes.append(f"line {stmt.lineno}: the `if __name__ == \"__main__\"` block is not translated")
            return None
        return self._plain(stmt)

    def _makes_initializers(self, fn: ast.FunctionDef) -> bool:
        """Whether every value `fn` returns is made by the framework's initializers (keras.io's `kernel_init`,
        returning `keras.initializers.VarianceScaling(...)`)."""
        returns = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return)]
        return bool(returns) and all(self._initializer(r) is not None for r in returns)

    def _initializer(self, node):
        """(distribution, scale) of an initializer object `node` makes (`nnx.initializers.xavier_uniform()`,
        `jax.nn.initializers.normal(stddev=0.02)`; see SourceSkeleton.initializer_modules), else None; the scale is
        the `stddev=` or `scale=` given, else None."""
        path = self.imports.path(node.func) if isinstance(node, ast.Call) else None
        module, _, name = (path or "").rpartition(".")
        kind = self.src.initializer_modules.get(module, {}).get(name)
        if kind is None:
            return None
        scale = next((k.value for k in node.keywords if k.arg in ("stddev", "scale")), None)
        return kind, scale if scale is not None and not self._uses_framework(scale) else None

    def _plain(self, stmt):
        """A statement outside model code: kept when it does not use the source framework."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and \
                isinstance(stmt.value, ast.Call) and self._framework_path(stmt.value.func) in self.src.device_classes:
            self.devices.add(stmt.targets[0].id)
            self.notes.append(f"line {stmt.lineno}: `{stmt.targets[0].id} = {ast.unparse(stmt.value.func)}(...)` is "
                              f"not kept: {self.target.framework} places arrays itself")
            return None
        if isinstance(stmt, ast.ClassDef) and any(self._framework_path(b) for b in stmt.bases):
            self._block(stmt, f"class {stmt.name}({', '.join(ast.unparse(b) for b in stmt.bases)})",
                        "derives from a framework class that is neither a layer base class nor a layer with a "
                        "translation")
            return None
        asked = framework_hasattr(stmt.value, self._framework_path) if isinstance(stmt, ast.Assign) else None
        if asked is not None:  # timm's `_HAS_FUSED_ATTN = hasattr(torch.nn.functional, "scaled_dot_product_attention")`
            self.notes.append(f"line {stmt.lineno}: {ast.unparse(stmt.value)} is read as the installed framework "
                              f"answers it ({_has_attribute(*asked)})")
            return ast.copy_location(ast.Assign(stmt.targets, ast.Constant(_has_attribute(*asked))), stmt)
        if self._uses_framework(stmt):
            self._block(stmt, "module-level code using the framework",
                        "only model classes and their helper functions are translated")
            return None
        return stmt

    def _has_row(self, path: str) -> bool:
        """Whether the tables read the library name at `path` as it is (transformers' `Conv1D`, `ACT2FN`)."""
        return self.layers.find(path) is not None or self.functions.find(path) is not None or \
            path in self.src.activation_tables

    def _framework_path(self, node) -> str | None:
        path = self.imports.path(node)
        return path if path and _under(path, self.roots) else None

    def _block(self, node, construct: str, reason: str) -> None:
        self.report.add(construct, f"{self.filename}:{getattr(node, 'lineno', 0)}", reason)

    # -- classes ---------------------------------------------------------------------------------
    def _class(self, cls: ast.ClassDef) -> ast.ClassDef:
        info = self.classes[cls.name]
        info.sequential = any(self._is_sequential(b) for b in cls.bases[:1])
        # a subclass of the sequential container derives from the target's: the class its writer calls
        base = self.dst.sequential(ast.List([P.name("layer")], ast.Load())).func if info.sequential else \
            P.name(self.dst.layer_base)
        bases = [ast.Name(b.id, ast.Load()) if isinstance(b, ast.Name) and b.id in self.classes
                 else base for b in cls.bases[:1]]
        if info.sequential:
            self._gather_sequential_layers(cls)
            _SequentialLayers(self.src.sequential_layers).visit(cls)
        methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
        info.methods = methods
        info.set_later = {t.attr for m in methods.values() if m.name != "__init__" for n in ast.walk(m)
                          if isinstance(n, ast.Assign) for t in n.targets if is_self_attr(t)}
        info.own_base = any(isinstance(b, ast.Name) and b.id in self.classes for b in cls.bases)
        build = methods.get(self.src.build_method) if self.src.build_method else None
        if build is not None and all(_marks_built(s) or _is_docstring(s) for s in build.body):
            self.notes.append(f"line {build.lineno}: {cls.name}.{build.name} only marks the layer built or builds "
                              "the layers it holds")
            build, methods = None, {n: m for n, m in methods.items() if m is not build}
        built = self._build(build, methods.get(self.src.forward), info) if build is not None else None
        body = []
        init_only = _init_only_methods(methods)
        unused = {n for n, m in methods.items() if n not in ("__init__", self.src.forward) and
                  not n.startswith("__") and not self._named_elsewhere(n, m, cls)}
        early = {}  # functions of their arguments that __init__ calls: what they return is known to __init__
        for name in sorted(init_only - {"__init__", *INIT_METHODS}, key=list(methods).index):
            if not any(is_self(n) for n in ast.walk(methods[name])) and not self._passes_class(methods, name, info):
                scope = Scope("init")
                early[name] = self._function(methods[name], scope, info, name)
                if scope.returns and len(set(scope.returns)) == 1:
                    info.method_kinds[name] = scope.returns[0]
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and methods.get(stmt.name) is not stmt:
                continue  # not a method, or one a later def of the name replaces (TorchScript's overload stubs)
            if isinstance(stmt, ast.FunctionDef):
                if stmt.name in INIT_METHODS:
                    self._skip_initialisation(stmt, f"{cls.name}.{stmt.name}")
                    continue
                if stmt.name in self.src.config_methods:
                    self.notes.append(f"line {stmt.lineno}: {cls.name}.{stmt.name} (configuration or training, not "
                                      "what the layer computes) is not translated")
                    continue
                if stmt is build:
                    continue
                mode = "init" if stmt.name in init_only else "forward"
                name = self.dst.forward if stmt.name == self.src.forward else stmt.name
                if stmt.name in early:
                    body.append(early[stmt.name])
                elif stmt.name in unused:
                    body += self._unused_method(cls, stmt, Scope(mode), info)
                else:
                    body.append(self._function(stmt, Scope(mode), info, name))
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                body.append(stmt)  # docstring
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is None:
                continue  # an attribute's annotation (timm's `fused_attn: Final[bool]`), which the target needs not
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                    and self._uses_framework(stmt.value):
                body += self._class_layer(stmt, info)
            else:
                out = self._plain(stmt)
                if out is not None:
                    body.append(out)
        if self.src.forward not in methods and not info.own_base and not info.sequential and \
                cls.name not in self.subclassed and not any(  # a base class the others complete needs none
                    self._named_elsewhere(n, m, cls) for n, m in methods.items() if n != "__init__"):
            # nor a class whose other methods the module calls (Gemma's Embedder: `self.embedder.encode(x)`)
            self._block(cls, f"class {cls.name}", f"no {self.src.forward} method")
        if info.training:
            self._add_training_param(body)
        if info.deterministic:  # NNX: model.train() / model.eval() set it on every module that has it
            at = 1 if ast.get_docstring(cls) else 0
            body.insert(at, ast.Assign([ast.Name("deterministic", ast.Store())], ast.Constant(False), lineno=0))
        if built is not None:
            body = self.dst.first_call(bases, body, *built)
        if info.weights_read and self.dst.build_layer is not None:
            self._build_read_layers(body, info)
        if not info.own_base:
            _call_base_init(body)
        if self.dst.traced_forward:
            self._check_state_read_back(cls, info, init_only)
        for n in (n for f in body for n in ast.walk(f) if is_self_attr(n) and n.attr in info.dropped):
            self._block(n, f"self.{n.attr}", "training bookkeeping (a metric, a seed generator) used in what the "
                                             "layer computes")
            break
        for attr, assigns in info.none_slots.items():
            # a layer or weight slot left empty, then maybe filled; or a value the forward pass keeps there
            if info.attrs.get(attr) in (MODULE, MODULES, OWN, TENSOR) or attr in info.forward_state:
                for assign in assigns:
                    assign.value = self.dst.empty_layer(assign.value)
        return ast.ClassDef(cls.name, bases, [], body or [ast.Pass()], [])

    def _class_layer(self, stmt: ast.Assign, info: ClassInfo) -> list[ast.stmt]:
        """`default_act = nn.SiLU()` in a class body: a layer every instance shares, read as `self.default_act`."""
        name = stmt.targets[0].id
        value, kind = self.expr(stmt.value, Scope("init"), info)
        if kind != MODULE:
            self._block(stmt, f"class attribute {name}", "a class attribute using the framework is translated only "
                                                         "when it is a layer")
            return []
        if self.dst.init_argument and any(isinstance(n, ast.Name) and n.id == self.dst.init_argument[0]
                                          for n in ast.walk(value)):
            self._block(stmt, f"class attribute {name}", f"a layer made in the class body, where there are no "
                                                         f"{self.dst.init_argument[0]} to build it with")
            return []
        info.attrs[name] = MODULE
        return [ast.Assign([stmt.targets[0]], self.dst.class_layer(value), lineno=stmt.lineno)]

    def _keep_random_source(self, cls: ast.ClassDef, body: list, info: ClassInfo) -> list:
        """A class whose methods draw random numbers from the target's source (NNX's `self.rngs`) keeps it from its
        constructor's argument."""
        source = self.dst.random_source
        methods = [f for f in body if isinstance(f, ast.FunctionDef)]
        if not any(source in ast.unparse(f) for f in methods if f.name != "__init__"):
            return body
        keep = P.assign_attr(source, P.name(self.dst.init_argument[0]))
        init = next((f for f in methods if f.name == "__init__"), None)
        if init is None and info.own_base:
            self._block(cls, f"class {cls.name}", f"it draws random numbers, which needs its own __init__ to keep "
                                                  f"the {self.dst.init_argument[0]} it draws them from")
        elif init is None:
            body = [P.function("__init__", ["self"], [keep]), *body]
        elif not any(ast.dump(s) == ast.dump(keep) for s in init.body):
            init.body.append(keep)
        return body

    def _build_read_layers(self, body: list, info: ClassInfo) -> None:
        """After each `self.<layer> = ...` in `__init__` whose weights the code reads, the target's statement
        that creates them (Keras: `self.embed.build()`)."""
        init = next((f for f in body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        for attr in sorted(info.weights_read):
            at = next((i for i, st in enumerate(init.body if init else []) if isinstance(st, ast.Assign) and
                       is_self_attr(st.targets[0]) and st.targets[0].attr == attr), None)
            try:
                if at is None:
                    raise Refused("its weights are read, but it is not made in __init__'s own statements")
                init.body.insert(at + 1, self.dst.build_layer(P.name(f"self.{attr}"), info.written_layers[attr][0]))
            except Refused as e:
                self._block(init or body[0], f"self.{attr}", str(e))

    def _build(self, fn: ast.FunctionDef, forward: ast.FunctionDef | None, info: ClassInfo):
        """The source's method that creates weights from the input shapes on the first call (Keras' `build`),
        translated as `__init__` is: (the method, {its shape parameter: the forward parameter it is the shape of}),
        which the target's skeleton turns into its own way of building on the first call; None when refused."""
        shapes = [a.arg for a in fn.args.args[1:]]
        inputs = [a.arg for a in forward.args.args[1:]] if forward is not None else []
        if len(shapes) == 1 and inputs:  # one shape: the first input's, as Keras passes it
            given = {shapes[0]: inputs[0]}
        else:  # several: `<input>_shape` for each input named
            given = {s: s.removesuffix("_shape") for s in shapes if s.removesuffix("_shape") in inputs}
        if self.dst.first_call is None or len(given) != len(shapes) or not shapes or fn.args.vararg or \
                fn.args.kwonlyargs:
            reason = (f"{self.target.framework} code has no layer built on its first call" if
                      self.dst.first_call is None else "its parameters are not the shapes of the inputs of "
                                                       f"{self.src.forward} (one, or `<input>_shape` each)")
            self._block(fn, f"{info.name}.{fn.name}", reason)
            return None
        body = [s for s in fn.body if not _marks_built(s)]
        method = ast.FunctionDef(fn.name, fn.args, body, [], None, lineno=fn.lineno)
        return self._function(method, Scope("init"), info, fn.name), given

    def _add_training_param(self, body):
        for f in body:
            if isinstance(f, ast.FunctionDef) and f.name == self.dst.forward:
                if "training" not in [a.arg for a in f.args.args + f.args.kwonlyargs]:
                    f.args.kwonlyargs.append(ast.arg("training"))
                    f.args.kw_defaults.append(ast.Constant(None))

    # -- functions -------------------------------------------------------------------------------
    def _function(self, fn: ast.FunctionDef, scope: Scope, info: ClassInfo | None, name: str) -> ast.FunctionDef:
        for deco in fn.decorator_list:
            path = self._framework_path(deco if not isinstance(deco, ast.Call) else deco.func)
            if path in self.src.no_grad_decorators:
                scope.no_grad = True
            elif path in self.src.neutral_decorators:
                self.notes.append(f"line {deco.lineno}: @{ast.unparse(deco)} on {fn.name} is not kept (the "
                                  f"function computes the same without it)")
            elif path:
                self._block(deco, f"decorator {ast.unparse(deco)}", "framework decorators have no translation")
        args = copy.deepcopy(fn.args)
        params = args.posonlyargs + args.args + args.kwonlyargs
        defaults = dict(zip([a.arg for a in (args.posonlyargs + args.args)][::-1], args.defaults[::-1]))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        for a in params:
            tensor = a.annotation is not None and self.imports.path(a.annotation) in self.src.tensor_classes
            # `List[Tensor]`: a list, which the code may iterate, of values of unknown kind
            python = _is_python_annotation(a) and not self._uses_framework(a.annotation)
            listed = _is_python_annotation(a) and not python
            if a.annotation is not None and self._uses_framework(a.annotation):
                a.annotation = None
            if a.arg == "self":
                continue
            scope.arguments.add(a.arg)
            default = defaults.get(a.arg)
            if isinstance(default, ast.Constant) and default.value is None:
                scope.optional.add(a.arg)
            if tensor:  # `attn_mask: torch.Tensor = None`
                scope.kinds[a.arg] = TENSOR
            elif info is not None and (a.arg in info.passed_classes.get(fn.name, ()) or fn.name == "__init__" and
                                       a.arg in self.factory_parameters.get(info.name, ())):
                scope.kinds[a.arg] = CLASS
            elif default is not None and self._makes_layers(default):
                scope.kinds[a.arg] = CLASS
            elif scope.mode == "forward" and info is not None and fn.name != self.src.forward and \
                    _passed_numbers(info, fn.name, a.arg):
                scope.kinds[a.arg] = PYTHON  # `self._hour_glass_forward(self.depth, x)`, `(n - 1, low1)`
            elif scope.mode == "forward" and info is not None and a.arg in self.number_parameters.get(
                    f"{info.name}.{fn.name}", ()):
                scope.kinds[a.arg] = PYTHON  # the module's own layer called with numbers (`self.ffn(x, 4, 4)`)
            elif listed:
                scope.kinds[a.arg] = UNKNOWN
            elif scope.mode == "forward" and (default is None or known(default) is None) and not python:
                scope.kinds[a.arg] = TENSOR
            else:
                scope.kinds[a.arg] = PYTHON if scope.mode != "helper" or a.arg in self.number_parameters.get(
                    fn.name, ()) else UNKNOWN
            scope.groups[a.arg] = self._new_group()
        for a in (args.vararg, args.kwarg):
            if a is not None:
                a.annotation = None
                scope.kinds[a.arg] = UNKNOWN
        args.defaults = [self._default(d, info) for d in args.defaults]
        args.kw_defaults = [self._default(d, info) for d in args.kw_defaults]
        if scope.mode == "forward" and self._drops_training_argument() and self.src.training_parameter in scope.kinds:
            _remove_parameter(args, self.src.training_parameter)
            scope.reads_training = True
        returns = None if fn.returns is None or self._uses_framework(fn.returns) else fn.returns
        scope.bound_once = _bound_once(fn)
        scope.passed_whole = self._passed_whole(fn)
        scope.stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        body = self._statements(fn.body, scope, info)
        if scope.mode == "init" and args.kwarg is not None and _only_passed_to_super(fn, args.kwarg.arg) and \
                args.kwarg.arg not in {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name)}:
            args.kwarg = None  # the base layer's options (Keras' name, dtype), which the target's base does not take
        decorators = [d for d in fn.decorator_list if not self._framework_path(
            d if not isinstance(d, ast.Call) else d.func)]
        return ast.FunctionDef(name, args, body or [ast.Pass()], decorators, returns, lineno=fn.lineno)

    def _default(self, value, info):
        """A parameter's default, translated where it uses the framework (`act=nnx.gelu` -> the target's layer)."""
        if value is None or not self._uses_framework(value):
            return value
        return self.expr(value, Scope("init"), info)[0]

    def _drops_training_argument(self) -> bool:
        """Whether the source passes its training flag as an argument the target's layers do not take."""
        return self.src.training_parameter is not None and self.dst.training != "argument"

    def _uses_framework(self, node) -> bool:
        return any(self._framework_path(n) for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute)))

    def _new_group(self) -> int:
        self._group += 1
        return self._group

    # -- statements ------------------------------------------------------------------------------
    def _statements(self, stmts, scope: Scope, info) -> list[ast.stmt]:
        out = []
        for i, stmt in enumerate(stmts):
            saved, scope.rest = scope.rest, list(stmts[i + 1:]) + scope.rest
            translated = self._statement(stmt, scope, info)
            out.extend(self.hoisted)
            self.hoisted = []
            out.extend(translated)
            scope.rest = saved
        if scope.folded:  # `layer = ...; nn.TransformerEncoder(layer, 2)`; `device = x.device`
            read = {n.id for s in [*out, *scope.rest] for n in ast.walk(s) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Load)}
            out = [s for s in out if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                s.targets[0], ast.Name) and s.targets[0].id in scope.folded - read)]
        return out

    def _statement(self, stmt, scope: Scope, info) -> list[ast.stmt]:
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return [stmt]
            if self._is_init_only(stmt.value, scope, info):
                return []
            if isinstance(stmt.value, ast.Call) and is_self_attr(stmt.value.func) and \
                    stmt.value.func.attr == self.src.loss_method:
                self.notes.append(f"line {stmt.lineno}: `{ast.unparse(stmt.value)}` is not translated: it adds a "
                                  f"training-time term to {self.source_table.framework}'s losses, which the training "
                                  "loop must add instead")
                # what only the term reads is left out too (see _statements)
                scope.folded |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
                return []
            if isinstance(stmt.value, ast.Call) and self.imports.path(stmt.value.func) in self.src.assert_functions \
                    and 1 <= len(stmt.value.args) <= 2 and not stmt.value.keywords:
                return self._statement(ast.copy_location(ast.Assert(*stmt.value.args), stmt), scope, info)
            if is_super_call(stmt.value, "__init__") and info is not None and info.sequential:
                return [self._sequential_init(stmt.value, scope, info)]
            if is_super_call(stmt.value, "__init__") and not (info is not None and info.own_base):
                keywords = self.dst.base_init_keywords(info.name) if info is not None else []
                return [ast.Expr(ast.Call(ast.Attribute(ast.Call(ast.Name("super", ast.Load()), [], []), "__init__",
                                                        ast.Load()), [], keywords))]
            if scope.mode == "init" and _method_name(stmt.value) == "register_buffer":
                return self._buffer(stmt.value, scope, info)
            if scope.mode == "init" and _method_name(stmt.value) == "register_parameter" and \
                    is_self_attr(stmt.value.func):
                return self._registered_parameter(stmt.value, scope, info)
            inplace = self._inplace_statement(stmt, scope, info)
            if inplace is not None:
                return inplace
            value, _ = self.expr(stmt.value, scope, info)
            return [ast.Expr(value), *self._follow_inplace(stmt, scope)]
        if isinstance(stmt, ast.Assign):
            return self._assign(stmt, scope, info)
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                return []
            return self._assign(ast.Assign([stmt.target], stmt.value, lineno=stmt.lineno), scope, info)
        if isinstance(stmt, ast.AugAssign):
            return self._aug_assign(stmt, scope, info)
        if isinstance(stmt, ast.Return):
            value, kind = self.expr(stmt.value, scope, info) if stmt.value is not None else (None, PYTHON)
            scope.returns.append(kind)
            if scope.no_grad:
                value = self._no_grad(stmt, value, kind, scope)
            return [ast.Return(value)]
        if isinstance(stmt, (ast.If, ast.While)):
            test = self._condition(stmt.test, scope, info)
            body = self._statements(stmt.body, scope, info) or [ast.Pass()]
            orelse = self._statements(stmt.orelse, scope, info)
            return [type(stmt)(test, body, orelse)]
        if isinstance(stmt, ast.For):
            if self._is_init_loop(stmt):
                self._skip_initialisation(stmt, "the loop")
                return []
            frozen = self._freezing(stmt)
            if frozen is not None:
                return self._freeze(stmt, *frozen, scope, info)
            it, kind = self.expr(stmt.iter, scope, info)
            if kind == TENSOR and not self._init_tensors(scope):  # in __init__: a constant's values
                self._block(stmt, "for loop over a tensor", "iterating a tensor's values is data-dependent")
            for n in _names(stmt.target):
                scope.kinds[n] = MODULE if kind == MODULES else UNKNOWN if kind != PYTHON else PYTHON
                scope.groups[n] = self._new_group()
            body = self._statements(stmt.body, scope, info) or [ast.Pass()]
            return [ast.For(stmt.target, it, body, self._statements(stmt.orelse, scope, info), lineno=stmt.lineno)]
        if isinstance(stmt, (ast.Pass, ast.Break, ast.Continue)):
            return [stmt]
        if isinstance(stmt, ast.Raise):
            return [stmt] if not self._uses_framework(stmt) else []
        if isinstance(stmt, ast.Assert):
            if self._on_tensor_values(stmt.test, scope, info):  # a check of the data, not part of the computation
                self.notes.append(f"line {stmt.lineno}: `assert {ast.unparse(stmt.test)}` checks tensor values "
                                  "and is not kept (it computes nothing the model returns)")
                return []
            return [ast.Assert(self._condition(stmt.test, scope, info), stmt.msg)]
        if isinstance(stmt, ast.With) and all(self.imports.path(i.context_expr.func if isinstance(
                i.context_expr, ast.Call) else i.context_expr) in NEUTRAL_CONTEXTS for i in stmt.items):
            # `with warnings.catch_warnings():` (YOLOv5's SPPF): the body computes the same
            return [ast.With(stmt.items, self._statements(stmt.body, scope, info) or [ast.Pass()], lineno=stmt.lineno)]
        if isinstance(stmt, ast.With):
            self._block(stmt, "with statement", "context managers (torch.no_grad, autocast ...) change what the "
                                                "body computes or records; not translated")
            return []
        if isinstance(stmt, ast.FunctionDef):  # a nested function: it sees the names around it
            inner = Scope("init" if scope.mode == "init" else "helper", kinds=dict(scope.kinds),
                          functions=dict(scope.functions))
            written = self._function(stmt, inner, info, stmt.name)
            scope.functions[stmt.name] = inner.returns[0] if len(set(inner.returns)) == 1 else UNKNOWN
            scope.kinds.pop(stmt.name, None)
            return [written]
        if isinstance(stmt, ast.Try) and stmt.handlers and not stmt.orelse and not stmt.finalbody and all(
                h.body and isinstance(h.body[-1], ast.Raise) and not self._uses_framework(h) for h in stmt.handlers):
            # `try: ... except KeyError as e: raise ValueError(...) from e`: a clearer error; the body is what runs
            body = self._statements(stmt.body, scope, info) or [ast.Pass()]
            return [ast.Try(body, stmt.handlers, [], [])]
        if isinstance(stmt, ast.Delete) and all(isinstance(t, ast.Name) for t in stmt.targets):
            for t in stmt.targets:  # `del query`: the name is gone, as in the source
                scope.kinds.pop(t.id, None)
            return [stmt]
        self._block(stmt, type(stmt).__name__.lower() + " statement", "not translated")
        return []

    def _holds_sequential(self, node, info) -> bool:
        """Whether `node` is `self.<name>` that `__init__` sets to a sequential container."""
        init = self._own_method(info.name, "__init__") if info is not None and is_self_attr(node) else None
        return init is not None and any(
            _set_layer(s, None)[0] == node.attr and isinstance(s.value, ast.Call) and
            self._is_sequential(s.value.func) for s in ast.walk(init)
            if isinstance(s, ast.Assign))

    def _on_tensor_values(self, test, scope, info) -> bool:
        """Whether the condition `test` reads tensor values (a comparison of tensors reduced by .all())."""
        saved = (self.report, self.notes, self.hoisted)
        self.report, self.notes, self.hoisted = BlockerReport("probe", framework=self.target.framework), [], []
        try:
            return self._expr(test, copy.copy(scope), info)[1] == TENSOR
        finally:
            self.report, self.notes, self.hoisted = saved

    def _gather_sequential_layers(self, cls: ast.ClassDef) -> None:
        """A sequential container's subclass whose `__init__` calls `super().__init__()` and then sets its layers as
        attributes (`self.norm = nn.BatchNorm2d(...)`, `self.add_module("norm", ...)`, torchvision's _Transition),
        which it runs in that order: the layers passed to `super().__init__(...)` instead, in the same order."""
        init = self._own_method(cls.name, "__init__")
        calls = [i for i, s in enumerate(init.body if init else []) if isinstance(s, ast.Expr) and
                 is_super_call(s.value, "__init__")]
        if not calls or init.body[calls[0]].value.args or init.body[calls[0]].value.keywords:
            return
        at, layers, names = calls[0], [], []
        for stmt in init.body[at + 1:]:
            name, made = _set_layer(stmt, self.src.add_child)
            if made is not None and self._makes_layer(made) and not any(is_self(n) for n in ast.walk(made)):
                layers.append(made)
                names.append(name)
        if not layers:
            return
        read = [n.attr for n in ast.walk(cls) if is_self_attr(n) and n.attr in names and isinstance(n.ctx, ast.Load)]
        if read:
            self._block(init, f"self.{read[0]}", "a layer of a sequential container set as an attribute and read by "
                                                 "name (the target's container holds its layers in a list)")
            return
        init.body = [s for s in init.body if _set_layer(s, self.src.add_child)[0] not in names]
        init.body[at].value.args = layers

    def _makes_layer(self, call) -> bool:
        """Whether `call` makes a framework layer, a container or a layer of the module's own classes."""
        if not isinstance(call, ast.Call):
            return False
        path = self._framework_path(call.func)
        return isinstance(call.func, ast.Name) and call.func.id in self.classes or path is not None and (
            self.layers.find(path) is not None or path in self.src.containers)

    def _sequential_init(self, call: ast.Call, scope: Scope, info) -> ast.stmt:
        """`super().__init__(conv, bn, act)` of a sequential container's subclass: the target container's
        `super().__init__` with the layers as its constructor takes them."""
        (args, keywords), kinds = self._arguments(call, scope, info)
        args += [k.value for k in keywords if k.arg == "layers"]  # Keras: one list, maybe by keyword
        # a list the method filled (`super().__init__(*m)`), maybe by a factory passed in: its items are layers,
        # or the container raises
        listed = [isinstance(a, ast.Starred) and isinstance(a.value, ast.Name) for a in call.args]
        if [k for k in keywords if k.arg not in ("layers", "name")] or \
                any(k not in (MODULE, OWN, MODULES) and not (i < len(listed) and listed[i])
                    for i, k in enumerate(kinds)):
            self._block(call, "super().__init__(...) of a sequential container", "only layers are translated there")
        one = args[0] if len(args) == 1 else None
        items = one.value if isinstance(one, ast.Starred) else one if isinstance(one, (ast.List, ast.Tuple)) or (
            one is not None and isinstance(call.args[0] if call.args else None, ast.ListComp)) \
            else ast.List(args, ast.Load())  # Keras' one list, maybe made by a comprehension
        made = self.dst.sequential(items)
        return ast.Expr(P.method(P.call("super"), "__init__", *made.args, **{k.arg: k.value for k in made.keywords}))

    def _inplace_statement(self, stmt: ast.Expr, scope: Scope, info) -> list[ast.stmt] | None:
        """`t.div_(k)` as a statement, on a tensor no other name refers to: `t = t / k` (the method's out-of-place
        form); None for any other statement."""
        call = stmt.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and
                isinstance(call.func.value, ast.Name) and _is_inplace_method(call.func.attr) and
                scope.kinds.get(call.func.value.id) == TENSOR and
                f"Tensor.{call.func.attr[:-1]}" in self.source_table.functions):
            return None
        name = call.func.value.id
        outplace = ast.Call(ast.Attribute(call.func.value, call.func.attr[:-1], ast.Load()), call.args, call.keywords)
        if self._init_tensors(scope):  # NumPy writes the array itself, which the views of it see, as PyTorch does
            value, _ = self.expr(outplace, scope, info)
            everything = ast.Subscript(ast.Name(name, ast.Load()), ast.Constant(Ellipsis), ast.Store())
            return [ast.Assign([everything], value, lineno=stmt.lineno)]
        aliases = [n for n, g in scope.groups.items() if g == scope.groups.get(name) and n != name]
        if aliases:
            self._block(stmt, f"in-place `{ast.unparse(call)}`",
                        f"{', '.join(aliases)} refers to the same tensor and would change with it")
            return []
        return self._assign(ast.Assign([ast.Name(name, ast.Store())], outplace, lineno=stmt.lineno), scope, info)

    def _skip_initialisation(self, node, what: str) -> None:
        self.notes.append(f"line {node.lineno}: {what} (weight initialisation) is not translated; port_weights "
                          "copies the trained weights")

    def _is_init_only(self, call, scope: Scope, info=None) -> bool:
        """Weight-initialisation statements (`nn.init.*`, `self.apply(...)`, `self._init_weights()`, and in
        `__init__` an in-place method on a sublayer's weight: `self.head.weight.data.mul_(scale)`)."""
        if not isinstance(call, ast.Call):
            return False
        if scope.mode == "init" and info is not None and isinstance(call.func, ast.Attribute) and \
                _is_inplace_method(call.func.attr):
            root = _held_root(call.func.value)  # `self.fc_loc[2].weight.data.zero_()`
            if is_self_attr(root) and root is not call.func.value and \
                    info.attrs.get(root.attr) in (MODULE, OWN, MODULES):
                self._skip_initialisation(call, f"{ast.unparse(call.func)}(...)")
                return True
        path = self.imports.path(call.func) or ""
        if path.startswith(self.src.init_module):
            self._skip_initialisation(call, f"{ast.unparse(call.func)}(...)")
            return True
        name = _method_name(call)
        if is_self_attr(call.func) and (name in INIT_METHODS or name == "apply"):
            self._skip_initialisation(call, f"self.{name}(...)")
            return True
        return False

    def _is_init_loop(self, loop: ast.For) -> bool:
        """`for m in self.modules(): if isinstance(m, nn.Conv2d): nn.init...`, `for pn, p in self.named_parameters():
        ... nn.init.normal_(p, ...)` (initialisation inside)."""
        calls = [n for n in ast.walk(loop) if isinstance(n, ast.Call)]
        inits = [c for c in calls if (self.imports.path(c.func) or "").startswith(self.src.init_module)
                 or isinstance(c.func, ast.Attribute) and c.func.attr.endswith("_") and not c.func.attr.endswith("__")]
        return bool(inits) and isinstance(loop.iter, ast.Call) and _method_name(loop.iter) in (
            "modules", "named_modules", "parameters", "named_parameters", "children", "named_children")

    def _condition(self, test, scope, info):
        value, kind = self.expr(test, scope, info)
        if kind == TENSOR and not _is_none_check(test):
            self._block(test, f"condition `{ast.unparse(test)}`",
                        "it depends on a tensor's values (data-dependent control flow)")
        return value

    def _assign(self, stmt: ast.Assign, scope: Scope, info) -> list[ast.stmt]:
        if len(stmt.targets) != 1:
            self._block(stmt, "chained assignment", "not translated")
            return []
        target = stmt.targets[0]
        frozen = stmt.value if isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) and \
            stmt.value.func.attr == f"{self.src.trainable_attribute}_" and not stmt.value.keywords and \
            len(stmt.value.args) <= 1 and is_self_attr(target) and scope.mode == "init" else None
        if frozen is not None and isinstance(known(frozen.args[0]) if frozen.args else True, bool):
            # `self.conv = nn.Conv2d(...).requires_grad_(False)` (YOLOv8's DFL): the layer, then its flag
            made = self._assign(ast.copy_location(ast.Assign([target], frozen.func.value), stmt), scope, info)
            flag = known(frozen.args[0]) if frozen.args else True
            return made + self._freeze(stmt, ast.Attribute(target.value, target.attr, ast.Load()), flag, scope, info)
        if isinstance(target, ast.Attribute) and is_self_attr(target.value) and info is not None and \
                info.attrs.get(target.value.attr) in (MODULE, MODULES, OWN):
            self._block(stmt, f"assignment to self.{target.value.attr}.{target.attr}",
                        "setting a layer's weight or attribute (weight tying by assignment) is not translated")
            return []
        if isinstance(target, ast.Name) and self._initializer(stmt.value) is not None:
            scope.initializers[target.id] = stmt.value  # read where it draws an initial value (see _initial_value)
            return []
        if isinstance(target, ast.Name) and target.id in scope.bound_once and _is_immutable_literal(stmt.value):
            scope.literals[target.id] = stmt.value
            scope.folded.add(target.id)
        elif isinstance(target, ast.Name) and target.id in scope.bound_once & scope.passed_whole and isinstance(
                stmt.value, (ast.List, ast.Tuple)) and all(
                    n.id in scope.bound_once or n.id in scope.arguments - scope.stored for n in ast.walk(stmt.value)
                    if isinstance(n, ast.Name)):
            scope.displays[target.id] = stmt.value  # `padding = [[0, 0], [ph, ph], ...]`, of names bound once
            scope.folded.add(target.id)
        if scope.mode == "init" and self._sets_weight_values(target, info):
            self._skip_initialisation(stmt, f"{ast.unparse(target)} = ...")
            return []
        if scope.mode == "init" and isinstance(target, ast.Name) and self._draws_key(stmt.value):
            scope.kinds[target.id] = KEY  # `key = rngs.params()`: only an initial value's key (never translated)
            return []
        if scope.mode == "init" and is_self_attr(target) and info is not None and isinstance(stmt.value, ast.Call) \
                and _under(self._framework_path(stmt.value.func) or "", self.src.bookkeeping):
            self.notes.append(f"line {stmt.lineno}: self.{target.attr} = {ast.unparse(stmt.value.func)}(...) "
                              "(bookkeeping, not what the layer computes) is not translated")
            info.dropped.add(target.attr)
            return []
        moved = self._moved(stmt.value, scope, info) if scope.mode == "init" and is_self_attr(target) else None
        if moved is not None and self._is_parameter(moved):
            return self._parameter(target, moved, scope, info)
        if scope.mode == "init" and is_self_attr(target) and isinstance(stmt.value, ast.IfExp) and \
                any(self._is_parameter(b) for b in (stmt.value.body, stmt.value.orelse)):
            return self._optional_parameter(target, stmt.value, scope, info)
        value, kind = self.expr(stmt.value, scope, info)
        if isinstance(target, ast.Name) and isinstance(stmt.value, ast.Call):
            scope.constructed[target.id] = stmt.value
        if isinstance(target, ast.Subscript):
            _, target_kind = self.expr(target.value, scope, info)
            if target_kind == TENSOR and not self._init_tensors(scope):
                return self._slice_assignment(stmt, target, value, scope, info)
            if kind in (MODULE, OWN, MODULES):
                self._fill_container(target.value, info)
            return [ast.Assign([target], value, lineno=stmt.lineno)]
        if is_self_attr(target) and info is not None:
            passed = isinstance(stmt.value, ast.Name) and stmt.value.id in scope.arguments
            if kind == TENSOR and self._init_tensors(scope) and not passed:  # a tensor made here: a constant
                value = self.dst.constant(value)
            elif kind == ARRAY and scope.mode == "init" and self.dst.array_constant is not None:
                value = self.dst.array_constant(value)
            out = ast.Assign([target], value, lineno=stmt.lineno)
            if scope.mode == "init" and (self.src.plain_containers or self._is_data_wrapper(stmt.value) or (
                    kind == MODULES and isinstance(value, (ast.List, ast.ListComp)))):  # GAT's list of heads
                if kind == MODULES and isinstance(value, (ast.List, ast.ListComp, ast.Tuple)):
                    out.value = self.dst.module_list(value)
                elif kind == MODULES and isinstance(value, (ast.Dict, ast.DictComp)):
                    out.value = self.dst.module_dict(value)
                elif is_empty_literal(value):
                    info.empty_containers[target.attr] = out
            elif scope.mode == "init" and is_empty_literal(value):  # filled, then maybe wrapped (PSPNet's features)
                out.value = self.dst.empty_layer(value)
            if scope.mode == "init" and isinstance(stmt.value, ast.Call) and not stmt.value.args and \
                    self._is_sequential(stmt.value.func):
                info.empty_sequentials[target.attr] = out
            if getattr(value, "entry_kinds", None):
                info.entries[target.attr] = value.entry_kinds
            made = {n.func.id for n in ast.walk(stmt.value) if isinstance(n, ast.Call) and
                    isinstance(n.func, ast.Name) and n.func.id in self.classes}
            if kind in (OWN, MODULES) and len(made) == 1:  # `Block(...)`, `clones(Sublayer(...), 2)`: its class
                info.own_classes[target.attr] = made.pop()
            if scope.mode == "init":
                if known(value) is None:
                    info.none_slots.setdefault(target.attr, []).append(out)
                    kind = info.attrs.get(target.attr, kind)
                if kind in (TENSOR, ARRAY) and info.attrs.get(target.attr, TENSOR) not in (TENSOR, ARRAY, MODULE,
                                                                                         OWN, MODULES):
                    # `self.emb = <a number>` first: the array is the attribute's second kind of value
                    out.value = self.dst.array_data(out.value)
                info.attrs[target.attr] = kind
                if kind == MODULE and isinstance(stmt.value, ast.Call):
                    info.layer_rows[target.attr] = self.layers.find(self.imports.path(stmt.value.func))
                    if self._last_layer is not None and self._last_layer[1] is value:
                        info.written_layers[target.attr] = self._last_layer
                if self._last_inplace and self._changes_input(stmt.value, info.name):
                    info.inplace.add(target.attr)
            elif ast.dump(value) == ast.dump(ast.Attribute(P.name("self"), target.attr, ast.Load())):
                return []  # `self.n_ = self.n_.to(x.device)`: a device move, which the target does not make
            else:
                self._set_in_forward(stmt, target.attr, info, kind)
            return [out]
        names = [n for n in _names(target) if n != "self"]
        if scope.mode == "init" and isinstance(target, ast.Name) and kind in (TENSOR, ARRAY) and not any(
                isinstance(n, ast.Call) and is_self_attr(n.func) for n in ast.walk(stmt.value)):
            scope.folded.add(target.id)  # a constant's part that nothing reads (once initialisation is left out)
        if isinstance(target, ast.Name):  # a name bound to an integer tensor (`steps = torch.arange(n)`)
            (scope.integers.add if _is_integer_tensor(value, scope) else scope.integers.discard)(target.id)
            (scope.numbers.add if holds_number(value) else scope.numbers.discard)(target.id)
            if getattr(value, "entry_kinds", None):  # `m = self.mlp`: a dict of layers, its entries by key
                scope.entries[target.id] = value.entry_kinds
            else:
                scope.entries.pop(target.id, None)
        if scope.mode != "init" and info is not None:  # `x, self.attn = attention(...)`
            for attr in [t.attr for t in ast.walk(target) if is_self_attr(t)]:
                self._set_in_forward(stmt, attr, info, kind)
        base = _view_base(stmt.value)
        if base in scope.groups and scope.kinds.get(base) == TENSOR:
            for n in names:  # `identity = x`, `y = x.view(-1)`, `q, k = x.unbind(0)`: names of x's memory
                scope.groups[n] = scope.groups[base]
        else:
            for n in names:
                scope.groups[n] = self._new_group()
        if kind == DEVICE and isinstance(target, ast.Name):
            scope.folded.add(target.id)
        for n in names:
            scope.kinds[n] = kind if isinstance(target, ast.Name) else (TENSOR if kind in (TENSOR, "tensors")
                                                                        else PYTHON if kind == PYTHON else UNKNOWN)
        out = [ast.Assign([target], value, lineno=stmt.lineno)]
        if self._overwritten:
            out += self._follow_inplace(stmt, scope, target.id if isinstance(target, ast.Name) else None, value)
        return out

    def _tensors_first(self, node: ast.Call, call: ast.Call, kinds: list, own_class: str | None,
                       row=None) -> ast.Call:
        """A layer called with a value other than a tensor in a position after the first (the Annotated
        Transformer's `sublayer(x, lambda x: ...)`, a cell's state that starts as None), for targets whose layers
        take only tensors positionally (Keras): passed by the parameter's name when the layer is one of the
        module's classes or a framework layer with a row (`row`), else refused."""
        if not self.dst.tensors_first:
            return call
        late = [i for i, (a, k) in enumerate(zip(node.args, kinds)) if i and not isinstance(a, ast.Starred) and (
            isinstance(a, ast.Lambda) or k in (MODULE, OWN, MODULES, CLASS) or k == PYTHON and known(a) is not None)]
        if not late:
            return call
        names = self._forward_parameters(own_class) if row is None or row.call is None else row.call.names()
        if names is None or len(names) < len(node.args):
            self._block(node, f"positional argument {ast.unparse(node.args[late[0]])[:40]}",
                        f"{self.target.framework} layers take only tensors positionally, and the parameter's name "
                        "is not known here (the layer is not one of the module's classes held by name)")
            return call
        moved = [ast.keyword(names[i], call.args[i]) for i in range(late[0], len(call.args))]
        return ast.Call(call.func, call.args[:late[0]], moved + call.keywords)

    def _forward_parameters(self, class_name: str | None) -> list | None:
        """The parameter names (after self) of the forward method of the module's class `class_name`."""
        forward = self._own_method(class_name, self.src.forward)
        return [a.arg for a in forward.args.args[1:]] if forward is not None else None

    @staticmethod
    def _note_passed_classes(call: ast.Call, method: ast.FunctionDef, kinds: list, info: ClassInfo) -> None:
        """Record the parameters of `method` that `call` passes a layer class, so calling one makes a layer."""
        names = [a.arg for a in method.args.posonlyargs + method.args.args][1:]
        if len(kinds) != len(call.args) + len(call.keywords):  # an argument left out (the training flag)
            return
        passed = [*zip(names, kinds[:len(call.args)]), *[(k.arg, kind) for k, kind in zip(
            call.keywords, kinds[len(call.args):])]]
        info.passed_classes.setdefault(method.name, set()).update(n for n, kind in passed if kind == CLASS)

    def _freezing(self, loop: ast.For):
        """(layer, flag) of `for p in <layer>.parameters(): p.requires_grad = <flag>`, else None."""
        body, it = loop.body, loop.iter
        if not (len(body) == 1 and isinstance(body[0], ast.Assign) and isinstance(loop.target, ast.Name) and
                isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args and
                it.func.attr == self.src.parameters_method and not loop.orelse):
            return None
        target = body[0].targets[0]
        flag = known(body[0].value)
        if isinstance(target, ast.Attribute) and target.attr == self.src.trainable_attribute and \
                isinstance(target.value, ast.Name) and target.value.id == loop.target.id and isinstance(flag, bool):
            return it.func.value, flag
        return None

    def _freeze(self, where: ast.stmt, layer: ast.expr, flag: bool, scope: Scope, info) -> list[ast.stmt]:
        """Whether a layer's weights train, set for all of them (by the statement `where`): the target's flag, or a
        note where it has none."""
        written, kind = self.expr(layer, scope, info)
        if kind not in (MODULE, OWN) and not is_self(layer):
            self._block(where, ast.unparse(getattr(where, "iter", layer)),
                        "the parameters of something other than a layer")
            return []
        if self.dst.trainable_attribute is None:
            self.notes.append(f"line {where.lineno}: {ast.unparse(layer)}'s weights set {'' if flag else 'not '}"
                              f"to train: {self.target.framework} layers have no such flag (choose the weights an "
                              "optimizer updates instead)")
            return []
        if self.dst.trainable_note:
            self.notes.append(f"line {where.lineno}: {ast.unparse(layer)}'s weights frozen with "
                              f"`{self.dst.trainable_attribute}`: {self.dst.trainable_note}")
        return [ast.Assign([ast.Attribute(written, self.dst.trainable_attribute, ast.Store())], ast.Constant(flag),
                           lineno=where.lineno)]

    def _sets_weight_values(self, target, info) -> bool:
        """`self.conv.weight.data = ...` (or `.data[:] = ...`): the values of a layer's weight set (initialisation,
        in `__init__`)."""
        if isinstance(target, ast.Subscript):
            target = target.value
        if not (isinstance(target, ast.Attribute) and target.attr == self.src.weight_values):
            return False
        root = _held_root(target.value)
        return info is not None and is_self_attr(root) and info.attrs.get(root.attr) in (MODULE, OWN, MODULES)

    def _draws_key(self, value) -> bool:
        """`rngs.params()` / `rngs()`: a random key from the constructor argument every layer takes (NNX)."""
        func = value.func if isinstance(value, ast.Call) and not value.args and not value.keywords else None
        func = func.value if isinstance(func, ast.Attribute) else func
        return self.src.init_argument is not None and isinstance(func, ast.Name) and \
            func.id == self.src.init_argument

    def _no_grad(self, stmt: ast.Return, value, kind: str, scope: Scope):
        """What a function under `@torch.no_grad()` returns: its tensors with gradients stopped, as PyTorch's are
        (the values are the same)."""
        def stopped(v):
            return self._write(OpCall("StopGradient", [v]), stmt, scope)
        if kind == TENSOR:
            return stopped(value)
        if isinstance(value, ast.Tuple) and kind == "tensors":
            return ast.Tuple([stopped(v) for v in value.elts], ast.Load())
        if kind != PYTHON:
            self._block(stmt, "return under torch.no_grad()", "only tensors or a tuple of tensors are returned there")
        return value

    def _check_state_read_back(self, cls: ast.ClassDef, info: ClassInfo, init_only: set) -> None:
        """Refuse a value the forward pass keeps on the layer and reads (CLIP's `self.attn_mask = self.attn_mask.to(
        x.dtype)`), for targets that run the forward pass on symbolic values (TargetSkeleton.traced_forward)."""
        for m in cls.body:
            if not isinstance(m, ast.FunctionDef) or m.name in init_only:
                continue
            fresh = _set_before_read(m, info.forward_tensors)
            for n in ast.walk(m):
                if is_self_attr(n) and n.attr in info.forward_tensors - fresh and isinstance(n.ctx, ast.Load):
                    self._block(n, f"self.{n.attr} set and read in the forward pass",
                                f"{self.target.framework} runs it on symbolic values to build the model; a value it "
                                "keeps there is out of scope when a later call reads it")
                    return

    def _set_in_forward(self, stmt, attr: str, info: ClassInfo, kind: str) -> None:
        """`self.<attr> = ...` outside `__init__`: a value kept for inspection (a tensor's noted for
        _check_state_read_back); replacing a layer is refused."""
        if info.attrs.get(attr) in (MODULE, MODULES, OWN):
            self._block(stmt, f"assignment to self.{attr}", "replacing a layer in the forward pass")
        else:
            info.forward_state.add(attr)
            if kind != PYTHON:
                info.forward_tensors.add(attr)

    def _follow_inplace(self, stmt, scope, result: str | None = None, value=None) -> list[ast.stmt]:
        """After a statement holding an in-place operation on x: in the source x now holds its result. When the
        statement binds that result alone (`y = F.relu(x, inplace=True)`) x is bound to it too; a later read of x
        in any other case, another name for its tensor, or x read again in the statement, is refused."""
        extra = []
        for name, written, why in self._overwritten:
            if name == result:
                continue
            aliases = [n for n in _live_aliases(scope, name) if n != result]  # `y = h.add_(1)`: y is h's result
            if aliases:
                self._block(stmt, f"in-place operation on {name}",
                            f"{', '.join(aliases)} refers to the same tensor and would change with it")
            elif sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)) > 1:
                self._block(stmt, f"in-place operation on {name}", f"{name} is read again in the same statement")
            elif not _reads(scope.rest, name):
                continue
            elif why is None and result is not None and written is value:
                extra.append(ast.Assign([ast.Name(name, ast.Store())], ast.Name(result, ast.Load()), lineno=0))
                scope.groups[name] = scope.groups[result]
            else:
                self._block(stmt, f"in-place operation on {name}", why or (
                    f"{name} is read afterwards and holds the operation's result in the source; bind the result "
                    "to a name of its own"))
        self._overwritten = []
        return extra

    def _slice_assignment(self, stmt, target: ast.Subscript, value, scope: Scope, info) -> list[ast.stmt]:
        """`out[:, :-1, :fold] = x[:, 1:, :fold]` in a forward pass (the Temporal Shift Module): the name rebound
        to the target's update of the tensor (TargetSkeleton.slice_update), where the index holds slices with a step
        of one, integers and an Ellipsis, and no other name refers to the same tensor (it would change too)."""
        name = target.value.id if isinstance(target.value, ast.Name) else None
        items = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        aliases = _live_aliases(scope, name) if name else []
        why = (f"{self.target.framework} code writes none" if self.dst.slice_update is None else
               "only a name's items are assigned" if name is None else
               f"{', '.join(aliases)} refers to the same tensor and would change with it" if aliases else None)
        parts = []
        for item in items if why is None else []:
            if isinstance(item, ast.Slice) and item.step is not None and known(item.step) != 1:
                why = "a slice with a step"
                break
            part, kind = self._expr(item, scope, info)
            if kind not in (PYTHON, UNKNOWN) or isinstance(item, (ast.List, ast.Tuple)):
                why = "an index given by a tensor or a list (only slices, integers and ... are written)"
                break
            parts.append(part)
        if why is not None:
            self._block(stmt, "assignment into a tensor", why)
            return []
        index = ast.Tuple(parts, ast.Load()) if isinstance(target.slice, ast.Tuple) else parts[0]
        updated = self.dst.slice_update(ast.Name(name, ast.Load()), index, value)
        return [ast.Assign([ast.Name(name, ast.Store())], updated, lineno=stmt.lineno)]

    def _aug_assign(self, stmt: ast.AugAssign, scope: Scope, info) -> list[ast.stmt]:
        value, kind = self.expr(stmt.value, scope, info)
        target_value, target_kind = self.expr(stmt.target, scope, info)
        if target_kind == TENSOR and self._init_tensors(scope):
            return [ast.AugAssign(target_value, stmt.op, value)]  # the array updated in place, as the source's
        if target_kind == TENSOR:
            if not isinstance(stmt.target, ast.Name):
                self._block(stmt, "in-place update of a tensor", "only names are updated in place")
                return []
            aliases = _live_aliases(scope, stmt.target.id)
            if aliases:
                self._block(stmt, f"in-place `{ast.unparse(stmt)}`",
                            f"{', '.join(aliases)} refers to the same tensor and would change with it")
            scope.groups[stmt.target.id] = self._new_group()
            new = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, value)
            return [ast.Assign([ast.Name(stmt.target.id, ast.Store())], new, lineno=stmt.lineno)]
        return [ast.AugAssign(stmt.target, stmt.op, value)]

    def _is_data_wrapper(self, value) -> bool:
        return isinstance(value, ast.Call) and self.imports.path(value.func) in self.src.data_wrappers

    # -- parameters and buffers ------------------------------------------------------------------
    def _moved(self, value, scope, info):
        """What `<value>.to(<a device>)` moves (pytorch/examples' `nn.Parameter(...).to(self.device)`, the same
        parameter on the device it is on; targets place arrays themselves), else `value`."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "to" and \
                len(value.args) == 1 and not value.keywords and self._is_parameter(value.func.value):
            with self._own_report():
                kind = self.expr(value.args[0], scope, info)[1]
            if kind == DEVICE:
                return value.func.value
        return value

    def _is_parameter(self, value) -> bool:
        if not isinstance(value, ast.Call):
            return False
        if self.src.weight_method is not None and is_self_attr(value.func) and \
                value.func.attr == self.src.weight_method:
            return True
        return self.imports.path(value.func) in self.src.parameter_classes

    def _parameter(self, target, call: ast.Call, scope, info, trainable=None) -> list[ast.stmt]:
        if _method_name(call) == self.src.weight_method and is_self_attr(call.func):
            return self._added_weight(target, call, scope, info)
        trainable = self._trainable(call, trainable)
        data = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in (
            "data", "value", "initializer", "initial_value")), None)
        made = self._initial_value(data, scope, info) if data is not None else None
        if made is None and data is not None and trainable in (True, False):
            value, kind = self.expr(data, scope, info)
            # computed by the source's code: the same code with NumPy, or NumPy's own (a Keras layer's index table)
            if kind == TENSOR and self._init_tensors(scope) or kind == ARRAY:
                info.attrs[target.attr] = TENSOR
                weight = self.dst.constant_weight(value, trainable, target.attr)
                return [ast.Assign([target], weight, lineno=call.lineno)]
        if made is None or trainable not in (True, False):
            self._block(call, f"parameter self.{target.attr}",
                        "its initial value is not a float32 zeros/ones/randn/rand/empty(shape) (times a constant)")
            return []
        shape, init = made
        info.attrs[target.attr] = TENSOR
        weight = self.dst.add_weight(shape, *init, trainable, target.attr)
        return [ast.Assign([target], weight, lineno=call.lineno)]

    def _optional_parameter(self, target, choice: ast.IfExp, scope, info) -> list[ast.stmt]:
        """`self.gamma = nn.Parameter(...) if init_value > 0 else None`: the target's weight or None, on the same
        condition."""
        first = self._is_parameter(choice.body)
        made, other = (choice.body, choice.orelse) if first else (choice.orelse, choice.body)
        if not (isinstance(other, ast.Constant) and other.value is None):
            self._block(choice, f"parameter self.{target.attr}", "a choice between a parameter and something other "
                                                                "than None")
            return []
        condition = self._condition(choice.test, scope, info)
        weight = self._parameter(target, made, scope, info)
        if not weight:
            return []
        branches = (weight[0].value, other) if first else (other, weight[0].value)
        return [ast.Assign([target], ast.IfExp(condition, *branches), lineno=choice.lineno)]

    def _added_weight(self, target, call: ast.Call, scope, info) -> list[ast.stmt]:
        """`self.w = self.add_weight(shape=..., initializer=..., trainable=...)` (Keras) as the target's weight."""
        try:
            a = ADD_WEIGHT.bind(call)
            for name in ("regularizer", "constraint"):
                if known(a[name]) is not None:
                    raise Refused(f"{name}= (a training-time term) is not translated")
            if known(a["dtype"]) not in (None, "float32"):
                raise Refused("a weight dtype other than float32")
            trainable = known(a["trainable"])
            if trainable not in (True, False):
                raise Refused("trainable given by a variable")
            if known(a["shape"]) is None:
                raise Refused("a weight without a shape")
        except Refused as e:
            self._block(call, f"weight self.{target.attr}", str(e))
            return []
        initializer = known(a["initializer"])
        kind = {"zeros": "zeros", "ones": "ones", "random_normal": "normal", "random_uniform": "uniform"}.get(
            initializer if isinstance(initializer, str) else None)
        if kind is None:
            kind = "zeros"
            self.notes.append(f"line {call.lineno}: the initializer of self.{target.attr} is not translated (its "
                              "initial value is zeros); port_weights copies the trained weights")
        info.attrs[target.attr] = TENSOR
        shape = self.expr(a["shape"], scope, info)[0]
        weight = self.dst.add_weight(shape, kind, None, trainable, target.attr)
        return [ast.Assign([target], weight, lineno=call.lineno)]

    def _buffer(self, call: ast.Call, scope, info) -> list[ast.stmt]:
        if len(call.args) < 2 or not isinstance(known(call.args[0]), str):
            self._block(call, "register_buffer", "the buffer's name must be a string literal")
            return []
        name = known(call.args[0])
        target = ast.Attribute(ast.Name("self", ast.Load()), name, ast.Store())
        value = ast.copy_location(ast.Call(call.func, [call.args[1]], []), call)
        return self._parameter(target, value, scope, info, trainable=False)

    def _parameter_value(self, call: ast.Call, scope, info) -> ast.expr:
        """`nn.Parameter(data)` as a value (a member of `nn.ParameterList([...])`): the target's weight of the data."""
        trainable = self._trainable(call)
        value, kind = self.expr(call.args[0], scope, info)
        if kind != TENSOR or trainable not in (True, False):
            self._block(call, ast.unparse(call.func), "a parameter of a value that is not a tensor, or trainable "
                                                      "given by a variable")
        return self.dst.constant_weight(value, trainable, None)

    def _trainable(self, call: ast.Call, default=None):
        """Whether the parameter `call` makes is trained: its `requires_grad`, else `default`, else its class's."""
        for k in call.keywords:
            if k.arg in ("requires_grad", "trainable"):
                return known(k.value)
        return default if default is not None else self.src.parameter_classes.get(self.imports.path(call.func), True)

    def _registered_parameter(self, call: ast.Call, scope, info) -> list[ast.stmt]:
        """`self.register_parameter("bias", None)` (no such weight: the attribute is None) or with a parameter
        (`self.bias = nn.Parameter(...)`)."""
        if len(call.args) != 2 or not isinstance(known(call.args[0]), str):
            self._block(call, "register_parameter", "the parameter's name must be a string literal")
            return []
        target = ast.Attribute(ast.Name("self", ast.Load()), known(call.args[0]), ast.Store())
        return self._assign(ast.Assign([target], call.args[1], lineno=call.lineno), scope, info)

    def _initial_value(self, data, scope, info):
        """(shape expression, initializer) of `torch.zeros(shape)`-like data, scaled by a constant or not (also by
        a method: StyleGAN2's `torch.randn(n, m).div_(lr_mul)`, `torch.zeros(n).fill_(bias_init)`)."""
        method = data.func.attr if isinstance(data, ast.Call) and isinstance(data.func, ast.Attribute) else None
        given = {**dict(zip(("mean", "std"), data.args)), **{k.arg: k.value for k in data.keywords}} \
            if method == "normal_" else {}
        if method == "normal_" and len(data.args) <= 2 and set(given) <= {"mean", "std"} and \
                known(given.get("mean", 0)) == 0 and not any(self._uses_framework(v) for v in given.values()):
            # `torch.empty(1, n, d).normal_(std=0.02)` (torchvision's ViT), `torch.zeros(n, k).normal_(0, std)`
            # (Linformer's projections): drawn from a normal distribution
            inner = self._initial_value(data.func.value, scope, info)
            if inner is None or inner[1] != ("zeros", None):
                return None
            std = self.expr(given["std"], scope, info)[0] if "std" in given else None
            return inner[0], ("normal", std)
        if method in SCALING_METHODS and len(data.args) == 1 and not data.keywords and \
                not self._uses_framework(data.args[0]):
            inner = self._initial_value(data.func.value, scope, info)
            if inner is None or method == "fill_" and inner[1][0] != "zeros":
                return None
            (shape, (kind, scale)), value = inner, self.expr(data.args[0], scope, info)[0]
            if method == "fill_":
                return shape, ("ones", value)
            factor = value if method.startswith("mul") else P.binop(1.0, "/", value)
            return shape, (kind, factor if scale is None else P.binop(scale, "*", factor))
        if isinstance(data, ast.Call) and len(data.args) >= 2 and not data.keywords:
            # `initializer(rngs.params(), shape, dtype)`: an initializer object called with a key and a shape
            made = scope.initializers.get(data.func.id) if isinstance(data.func, ast.Name) else data.func
            drawn = self._initializer(made)
            if drawn is not None and (len(data.args) == 2 or self.imports.path(data.args[2]) in
                                      self.src.float_dtypes):
                return self.expr(data.args[1], scope, info)[0], drawn
        if isinstance(data, ast.Call) and not self.src.random_key:
            # `w_init(shape=(n, m), dtype="float32")`: an initializer object called with a shape (TensorFlow's)
            made = scope.initializers.get(data.func.id) if isinstance(data.func, ast.Name) else data.func
            drawn = self._initializer(made)
            given = dict(zip(("shape", "dtype"), data.args)) | {k.arg: k.value for k in data.keywords}
            if drawn is not None and "shape" in given and set(given) <= {"shape", "dtype"} and \
                    known(given.get("dtype")) in (None, "float32"):
                return self.expr(given["shape"], scope, info)[0], drawn
        scale = None
        if isinstance(data, ast.BinOp) and isinstance(data.op, ast.Mult):
            for tensor_side, other in ((data.left, data.right), (data.right, data.left)):
                if isinstance(tensor_side, ast.Call) and not self._uses_framework(other):
                    data, scale = tensor_side, self.expr(other, scope, info)[0]
                    break
        if not isinstance(data, ast.Call):
            return None
        kind = self.src.initializers.get(self.imports.path(data.func))
        if kind is None:
            return None
        for k in data.keywords:
            if k.arg == "dtype" and self.imports.path(k.value) not in self.src.float_dtypes or \
                    k.arg not in ("dtype", "requires_grad", "device", "size"):
                return None
        given = data.args[1:] if self.src.random_key and kind in ("normal", "uniform") else data.args
        given = given or [k.value for k in data.keywords if k.arg == "size"]  # `torch.empty(size=(n, m))`
        dims = [self.expr(a, scope, info)[0] for a in given]
        # torch.ones(dim) and torch.ones((a, b)) both work in torch; a tuple is written as one
        one_tuple = len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List))
        shape = dims[0] if one_tuple else ast.Tuple(dims, ast.Load())
        return shape, (kind, scale)

    # -- expressions -----------------------------------------------------------------------------
    _last_inplace = False
    _last_layer = None  # (OpCall, written constructor) of the last framework layer translated
    _overwritten: list = []

    def expr(self, node, scope: Scope, info) -> tuple[ast.expr, str]:
        """The translated expression and the kind of its value."""
        self._last_inplace, self._overwritten = False, []
        return self._expr(node, scope, info)

    def _expr(self, node, scope, info):
        if node is None:
            return None, PYTHON
        if isinstance(node, ast.Constant):
            return node, PYTHON
        if isinstance(node, ast.Name):
            if scope.reads_training and node.id == self.src.training_parameter:
                return self._training_flag(node, info), PYTHON
            if node.id == SEQUENTIAL_LAYERS:  # a slice of a torch Sequential makes one of the subclass: a list's
                return (ast.Attribute(P.name("self"), self.dst.sequential_layers, ast.Load())
                        if self.dst.sequential_layers else P.call("list", P.name("self"))
                        if getattr(node, "sliced", False) else P.name("self")), MODULES
            if node.id in scope.literals:  # written as its value, which rows taking only literals can read
                return copy.deepcopy(scope.literals[node.id]), PYTHON
            if scope.kinds.get(node.id) == KEY:
                self._block(node, node.id, "a random key used other than to draw a weight's initial value")
            if node.id in scope.entries:
                return _with_entries(node, scope.entries[node.id]), scope.kinds[node.id]
            if node.id in scope.kinds:
                return (mark_held(node, "number") if node.id in scope.numbers else node), scope.kinds[node.id]
            if node.id in self.classes or node.id in self.helpers or node.id in BUILTINS:
                return node, PYTHON
            if node.id in self.devices:
                return self._write(OpCall("Device", [node]), node, scope), DEVICE
            path = self._framework_path(node)
            if path in self.src.module_classes:
                return self._layer_base_class(node), PYTHON
            if node.id == self.src.init_argument:
                self._block(node, node.id, f"{node.id} used other than passed on to the layers (random numbers "
                                           "drawn outside weight initialisation are not translated)")
            elif path in self.src.tensor_classes:
                self._block(node, path, "the tensor class as a value (only isinstance(x, ...) is translated)")
            elif path and self.functions.find(path) is not None:
                return self._function_as_layer(node, path, [], [])
            elif path and self.layers.find(path) is not None:
                return self._layer_class(node, path)
            elif path:
                self._block(node, f"name {node.id}", "a framework object used as a value")
            elif node.id in self.plain_globals:
                return node, PYTHON
            return node, UNKNOWN
        if isinstance(node, ast.Attribute):
            return self._attribute(node, scope, info)
        if isinstance(node, ast.Call):
            return self._call(node, scope, info)
        if isinstance(node, ast.BinOp):
            left, lk = self._expr(node.left, scope, info)
            right, rk = self._expr(node.right, scope, info)
            integer = [_is_integer_tensor(v, scope) for v in (left, right)]
            promote = self.dst.promoting_arithmetic
            if promote is not None and any(integer) and (isinstance(node.op, ast.Div) or not all(integer)) and \
                    not any(isinstance(known(v), int) for v in (left, right)):
                # an integer tensor with a float: PyTorch promotes, TensorFlow's operators refuse
                written = promote(node.op, left, right)
                if written is not None:
                    return written, _combine(lk, rk)
            out = ast.BinOp(left, node.op, right)
            if all(integer) and not isinstance(node.op, ast.Div):
                out.integer_tensor = True
            if lk == rk == PYTHON and isinstance(node.op, NUMERIC_OPERATORS):
                mark_held(out, "number")
            return out, _combine(lk, rk)
        if isinstance(node, ast.UnaryOp):
            operand, k = self._expr(node.operand, scope, info)
            if isinstance(node.op, ast.Not) and isinstance(operand, ast.UnaryOp) and isinstance(operand.op, ast.Not):
                return operand.operand, k  # `not self.training` where the target reads `not self.deterministic`
            return ast.UnaryOp(node.op, operand), k
        if isinstance(node, ast.BoolOp):
            values = [self._expr(v, scope, info) for v in node.values]
            return ast.BoolOp(node.op, [v for v, _ in values]), _combine(*[k for _, k in values])
        if isinstance(node, ast.Compare):
            left, lk = self._expr(node.left, scope, info)
            rights = [self._expr(c, scope, info) for c in node.comparators]
            kind = PYTHON if all(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops) else \
                _combine(lk, *[k for _, k in rights])
            return ast.Compare(left, node.ops, [r for r, _ in rights]), kind
        if isinstance(node, ast.IfExp):
            test = self._condition(node.test, scope, info)
            body, bk = self._expr(node.body, scope, info)
            orelse, ok = self._expr(node.orelse, scope, info)
            return ast.IfExp(test, body, orelse), bk if bk == ok else _combine(bk, ok)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self._expr(e, scope, info) for e in node.elts]
            kinds = {k for _, k in items}
            kind = MODULES if kinds and kinds <= {MODULE, OWN} else "tensors" if kinds == {TENSOR} else PYTHON \
                if kinds <= {PYTHON} else UNKNOWN
            return type(node)([v for v, _ in items], ast.Load()), kind
        if isinstance(node, ast.Set):  # of Python values (`pool in {'cls', 'mean'}`)
            items = [self._expr(e, scope, info) for e in node.elts]
            return ast.Set([v for v, _ in items]), PYTHON if all(k == PYTHON for _, k in items) else UNKNOWN
        if isinstance(node, ast.Dict):
            items = [(self._expr(k, scope, info)[0] if k is not None else None, self._expr(v, scope, info))
                     for k, v in zip(node.keys, node.values)]
            kinds = {k for _, (_, k) in items}
            kind = MODULES if kinds and kinds <= {MODULE, OWN} else UNKNOWN
            return _with_entries(ast.Dict([k for k, _ in items], [v for _, (v, _) in items]), {
                known(k): kind for k, (_, kind) in items if isinstance(known(k), str)}), kind
        if isinstance(node, ast.Subscript) and self.imports.path(node.value) in self.src.activation_tables:
            return self._activation_table(node, self.src.activation_tables[self.imports.path(node.value)], scope,
                                          info)
        if isinstance(node, ast.Subscript):
            value, kind = self._expr(node.value, scope, info)
            key = node.slice  # `table[(x,)]` (Gemma's embedder) is `table[x]`
            one = isinstance(key, ast.Tuple) and len(key.elts) == 1 and not isinstance(key.elts[0], (ast.Slice,
                                                                                                   ast.Starred))
            index, ik = self._expr(key.elts[0] if one else key, scope, info)
            if kind == TENSOR and ik == TENSOR:  # one index tensor: the items it names along the first axis
                return self._write(OpCall("TensorIndex", [value, index]), node, scope), TENSOR
            out_kind = {MODULES: MODULE, TENSOR: TENSOR, "tensors": TENSOR, ARRAY: ARRAY}.get(
                kind, UNKNOWN if kind != PYTHON else PYTHON)
            item = _item(value, index)
            if _is_integer_tensor(value, scope) and ik != TENSOR:  # `torch.arange(n)[:, None]`: integers still
                item.integer_tensor = True
            return item, out_kind
        if isinstance(node, ast.Slice):
            parts = [self._expr(p, scope, info)[0] if p is not None else None
                     for p in (node.lower, node.upper, node.step)]
            return ast.Slice(*parts), PYTHON
        if isinstance(node, ast.Starred):
            value, kind = self._expr(node.value, scope, info)
            return ast.Starred(value, ast.Load()), kind
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node, scope, info)
        if isinstance(node, ast.JoinedStr):
            return node, PYTHON
        if isinstance(node, ast.Lambda):
            return self._lambda(node, scope, info)
        self._block(node, f"expression `{ast.unparse(node)}`", f"{type(node).__name__} is not translated")
        return node, UNKNOWN

    def _lambda(self, node: ast.Lambda, scope: Scope, info):
        """`lambda x: self.self_attn(x, x, x, mask)`: its body translated where it is written, its parameters
        values of the kind a forward pass's are."""
        inner = copy.copy(scope)
        inner.kinds = dict(scope.kinds)
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        inner.kinds.update({p: TENSOR if scope.mode == "forward" else UNKNOWN for p in params})
        if node.args.vararg or node.args.kwarg or node.args.defaults or any(node.args.kw_defaults):
            self._block(node, f"`{ast.unparse(node)}`", "a lambda with *args, **kwargs or defaults")
        body, _ = self._expr(node.body, inner, info)
        return ast.Lambda(node.args, body), UNKNOWN

    def _comprehension(self, node, scope, info):
        generators = []
        for gen in node.generators:
            it, kind = self._expr(gen.iter, scope, info)
            if kind == TENSOR and not self._init_tensors(scope):  # in __init__: a constant's values
                self._block(gen.iter, "comprehension over a tensor", "iterating a tensor's values is data-dependent")
            for n in _names(gen.target):
                scope.kinds[n] = MODULE if kind == MODULES else PYTHON if kind == PYTHON else UNKNOWN
            generators.append(ast.comprehension(gen.target, it, [self._condition(c, scope, info) for c in gen.ifs],
                                                gen.is_async))
        if isinstance(node, ast.DictComp):
            key = self._expr(node.key, scope, info)[0]
            value, kind = self._expr(node.value, scope, info)
            return ast.DictComp(key, value, generators), MODULES if kind in (MODULE, OWN) else UNKNOWN
        elt, kind = self._expr(node.elt, scope, info)
        out_kind = MODULES if kind in (MODULE, OWN) else "tensors" if kind == TENSOR else UNKNOWN
        return type(node)(elt, generators), out_kind

    def _attribute(self, node: ast.Attribute, scope, info):
        path = self._framework_path(node)
        if path in self.src.module_classes:
            return self._layer_base_class(node), PYTHON
        if path in self.src.dtypes:
            return ast.Constant(self.src.dtypes[path]), PYTHON
        if path in self.src.constants:
            return ast.Constant(self.src.constants[path]), PYTHON
        if path in self.src.tensor_classes:
            self._block(node, path, "the tensor class as a value (only isinstance(x, ...) is translated)")
            return node, UNKNOWN
        if path and self.functions.find(path) is not None:
            return self._function_as_layer(node, path, [], [])
        if path and self.layers.find(path) is not None:
            return self._layer_class(node, path)
        if path:
            self._block(node, path, "no translation for this framework attribute")
            return node, UNKNOWN
        if is_self(node.value):
            if node.attr == "training" and info is not None and scope.mode == "forward" and \
                    self.src.training_parameter is None:
                return self._training_flag(node, info), PYTHON
            if info is not None and node.attr in info.attrs:
                kind = info.attrs[node.attr]
                if kind == PYTHON and node.attr in info.set_later:  # `self.src_mask`: None, then a tensor
                    kind = UNKNOWN
                return (_with_entries(node, info.entries[node.attr]) if node.attr in info.entries else node), kind
            if node.attr in self.src.constant_attributes:
                value = self.src.constant_attributes[node.attr]
                self.notes.append(f"line {node.lineno}: self.{node.attr} is written as {value!r}, its value under "
                                  f"{self.source_table.framework}'s defaults")
                return ast.Constant(value), PYTHON
            return node, UNKNOWN
        if is_self_attr(node.value) and info is not None and node.value.attr in info.written_layers:
            return self._layer_weight(node, *info.written_layers[node.value.attr], info)
        value, kind = self._expr(node.value, scope, info)
        entries = getattr(value, "entry_kinds", None) or {}
        if kind == MODULES and node.attr in entries and node.attr not in CONTAINER_ATTRIBUTES:
            # an nn.ModuleDict's entry read as an attribute (a name the container itself has is the container's)
            return ast.Subscript(value, ast.Constant(node.attr), ast.Load()), entries[node.attr]
        if kind in (MODULE, MODULES):
            self._block(node, f"layer attribute .{node.attr}", "reading a layer's attributes or weights directly is "
                                                              "not translated (their names differ per framework)")
        if node.attr in self.src.autograd_attributes and kind not in (MODULE, MODULES, OWN):
            self._block(node, f".{node.attr}", f"autograd's record of a tensor: {self.target.framework} tensors carry "
                                               "none (gradients are taken outside the model's code)")
        if kind == "tensors" and node.attr in self.src.tuple_fields:
            return _item(value, ast.Constant(self.src.tuple_fields[node.attr])), TENSOR
        if kind == TENSOR:
            rows = self.src.tensor_attributes
            if node.attr in rows:
                kind = PYTHON if node.attr in ("shape", "ndim", "is_cuda") else \
                    node.attr if node.attr in (DTYPE, DEVICE) else TENSOR
                return self._write(rows[node.attr](value), node, scope), kind
            self._block(node, f"tensor attribute .{node.attr}", "no translation")
        return ast.Attribute(value, node.attr, ast.Load()), UNKNOWN if kind != PYTHON else PYTHON

    def _layer_base_class(self, node) -> ast.expr:
        """The source's layer base class as a value (`isinstance(act, nn.Module)`): the target's, when the layers
        of both are exactly the instances of their base class."""
        path = self._framework_path(node)
        if path not in self.src.layer_classes or self.dst.layer_class is None:
            who = self.target.framework if self.dst.layer_class is None else self.source_table.framework
            self._block(node, ast.unparse(node), f"{who} writes some layers as functions, so whether a value is a "
                                                 "layer is not a question of its class")
        return P.name(self.dst.layer_class or self.dst.layer_base)

    def _layer_weight(self, node: ast.Attribute, opcall, written, info):
        """`self.embed.weight` (a framework layer's weight, read): the target layer's weight of the same IR role,
        transposed where the two frameworks lay it out differently (a Linear's [out, in] and a Dense's [in, out])."""
        role = self.source_table.weight_attributes.get(opcall.op, {}).get(node.attr)
        held = {r: (name, t) for name, (r, t) in self.target.weight_attributes.get(opcall.op, {}).items()}
        path = _held_layer(written, self.dst.wrappers)
        setting = self.source_table.config_attributes.get(opcall.op, {}).get(node.attr)
        if role is None and setting is not None:
            return self._layer_setting(node, opcall, setting, path)
        if role is None or role[0] not in held or path is None:
            reason = ("reading a layer's attributes, or the weights of a layer other than an embedding, a dense layer "
                      "or a layer norm, is not translated (their names differ per framework)" if role is None else
                      f"{self.target.framework}'s layer has no weight of this role" if role[0] not in held else
                      "the target writes this layer together with others (a fused activation)")
            self._block(node, f"layer attribute .{node.attr}", reason)
            return node, UNKNOWN
        info.weights_read.add(node.value.attr)
        name, layout = held[role[0]]
        weight = _reach(P.name(f"self.{node.value.attr}"), [*path, name])
        perm = weight_permutation(layout, role[1], known(opcall.attrs.get("rank")))
        if perm == (1, 0):
            weight = self.target.function_writers["SwapAxes"].write(OpCall("SwapAxes", [weight], {"axis1": 0,
                                                                                                 "axis2": 1}))
        elif perm is not None:
            weight = self.target.function_writers["Transpose"].write(OpCall("Transpose", [weight],
                                                                            {"perm": P.lit(perm)}))
        return weight, TENSOR

    def _weight_product(self, node: ast.Call, info, scope):
        """`self.embed.attend(x)` (NNX): x times the transpose of the held layer's weight, written with the
        target's weight of that role (see SourceSkeleton.weight_products); else None."""
        func = node.func
        if not (is_self_attr(func.value) and info is not None and func.value.attr in info.written_layers and
                len(node.args) == 1 and not node.keywords):
            return None
        opcall, written = info.written_layers[func.value.attr]
        role = self.src.weight_products.get(opcall.op, {}).get(func.attr)
        name = next((n for n, (r, _) in self.source_table.weight_attributes.get(opcall.op, {}).items() if r == role),
                    None)
        if name is None:
            return None
        weight, _ = self._layer_weight(ast.Attribute(func.value, name, ast.Load()), opcall, written, info)
        x, _ = self._expr(node.args[0], scope, info)
        return transposed_product(self.target, x, weight)

    def _layer_setting(self, node: ast.Attribute, opcall, setting: str, path):
        """`self.drop.p`, `self.fc.out_features` (a framework layer's configuration, read): the target layer's
        attribute holding the same IR attribute (`self.drop.rate`, `self.fc.units`)."""
        held = {key: name for name, key in self.target.config_attributes.get(opcall.op, {}).items()}
        if setting not in held or path is None:
            reason = (f"{self.target.framework}'s layer does not keep this setting" if setting not in held else
                      "the target writes this layer together with others (a fused activation, a padding)")
            self._block(node, f"layer attribute .{node.attr}", reason)
            return node, UNKNOWN
        return _reach(P.name(f"self.{node.value.attr}"), [*path, held[setting]]), PYTHON

    def _training_flag(self, node, info) -> ast.expr:
        """The target's way of reading whether the layer trains (the source's `self.training` or `training`)."""
        if self.dst.training is None:
            self._block(node, ast.unparse(node), f"{self.target.framework} layers have no training flag to read "
                                                 "(they switch modes with model.train() / model.eval())")
            return node
        if self.dst.training == "attribute":
            return ast.Attribute(ast.Name("self", ast.Load()), "training", ast.Load())
        if self.dst.training == "deterministic":
            if info is not None:
                info.deterministic = True
            return ast.UnaryOp(ast.Not(), P.name("self.deterministic"))
        if info is not None:
            info.training = True
        return ast.Name("training", ast.Load())

    def _call(self, node: ast.Call, scope, info):
        func = node.func
        path = self.imports.path(func)
        if isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2 and \
                self.imports.path(node.args[1]) in self.src.tensor_classes and self.dst.is_tensor is not None:
            return self.dst.is_tensor(self._expr(node.args[0], scope, info)[0]), PYTHON
        if path in self.src.data_wrappers and len(node.args) == 1 and not node.keywords:
            return self._expr(node.args[0], scope, info)
        if path == "functools.partial" and node.args and self._is_layer_class(node.args[0]):
            (args, keywords), _ = self._arguments(node, scope, info)
            return ast.Call(node.func, args, self._factory_keywords(node, keywords)), CLASS
        if path == "functools.partial" and node.args and self._framework_path(node.args[0]):
            bound = ast.Call(node.func, node.args[1:], node.keywords)
            (args, keywords), _ = self._arguments(bound, scope, info)
            return self._function_as_layer(node, self._framework_path(node.args[0]), args, keywords)
        if path == "copy.deepcopy" and self.dst.deep_copy is not None and len(node.args) == 1:
            value, kind = self._expr(node.args[0], scope, info)
            return ast.Call(P.name(self.dst.deep_copy), [value], []), kind
        if path in self.src.appliers and node.args:  # `checkpoint(block, x)`, `data_parallel(self.main, x, ids)`
            count = self.src.appliers[path]
            given = node.args[1:] if count is None else node.args[1:1 + count]
            if count is None or len(given) == count and not any(isinstance(a, ast.Tuple) for a in given):
                return self._expr(ast.Call(node.args[0], given, [], lineno=node.lineno), scope, info)
        if path in self.src.constant_calls and not node.args and not node.keywords:
            return ast.Constant(self.src.constant_calls[path]), PYTHON
        if path is not None and _under(path, self.roots):
            return self._framework_call(node, path, scope, info)
        if isinstance(func, ast.Attribute) and not self.imports.path(func.value):
            if is_self(func.value) and info is not None and info.attrs.get(func.attr) in (MODULE, OWN):
                node = self._held_layer_call(node, scope, info.layer_rows.get(func.attr))
            receiver, kind = self._expr(func.value, scope, info)
            if func.attr == self.src.sequential_append and self._holds_sequential(func.value, info) and \
                    len(node.args) == 1 and not node.keywords:  # `self.body.add(layer)` (Keras), `.append` (torch)
                layer, _ = self._expr(node.args[0], scope, info)
                made = info.empty_sequentials.get(func.value.attr)
                if made is not None:  # made empty: as a container layers are added to (Keras calls no empty one)
                    made.value = self.dst.sequential(None)
                return self.dst.sequential_append(receiver, layer), PYTHON
            entries = getattr(receiver, "entry_kinds", None) or {}
            if kind == MODULES and entries.get(func.attr) in (MODULE, OWN) and func.attr not in CONTAINER_ATTRIBUTES:
                # `self.transformer.wte(idx)`
                self._check_mode_arguments(node)
                args, _ = self._arguments(node, scope, info)
                return ast.Call(ast.Subscript(receiver, ast.Constant(func.attr), ast.Load()), *args), TENSOR
            if not is_self(func.value) and (kind == TENSOR or (
                    kind == UNKNOWN and f"Tensor.{func.attr}" in self.source_table.functions
                    and func.attr not in PYTHON_METHODS)):
                method = func.attr
                if not _is_inplace_method(method):
                    return self._function_call(node, f"Tensor.{method}", scope, info, receiver=receiver)
                if self._is_fresh(func.value):  # on a tensor just made, which nothing else refers to: the same values
                    return self._function_call(node, f"Tensor.{method[:-1]}", scope, info, receiver=receiver)
                if isinstance(func.value, ast.Name) and f"Tensor.{method[:-1]}" in self.source_table.functions:
                    written = self._function_call(node, f"Tensor.{method[:-1]}", scope, info, receiver=receiver)
                    self._overwritten.append((func.value.id, written[0], None))  # `x.mul_(g)`: x holds the result after
                    return written
                return self._function_call(node, f"Tensor.{method}", scope, info, receiver=receiver)
            if not is_self(func.value) and kind != PYTHON and func.attr not in PYTHON_METHODS and (
                    _is_inplace_method(func.attr) or func.attr in self.src.tensor_methods):
                what = "in-place tensor method" if _is_inplace_method(func.attr) else "tensor method"
                self._block(node, f".{func.attr}()", f"no {self.target.framework} translation for this {what}")
            product = self._weight_product(node, info, scope)
            if product is not None:
                return product, TENSOR
            own_method = func.attr not in self.src.base_methods and any(
                func.attr in c.methods for c in self.classes.values())  # `self.cells[i].init_hidden(...)`
            if kind == MODULE and not is_self(func.value) and not own_method or \
                    kind == MODULES and func.attr not in PYTHON_METHODS:
                self._block(node, f"method .{func.attr}() of a layer", "only calling a layer is translated")
            if is_self(func.value) and func.attr == self.src.add_child and scope.mode == "init":
                (args, keywords), _ = self._arguments(node, scope, info)  # `self.add_module(name, layer)`
                return ast.Call(ast.Name("setattr", ast.Load()), [P.name("self"), *args], keywords), PYTHON
            if is_self(func.value) and func.attr in self.src.base_methods and not any(
                    func.attr in c.methods for c in self.classes.values()):
                self._block(node, f"self.{func.attr}()", f"a method of {self.source_table.framework}'s layer base "
                                                         "class: no translation")
            args, kinds = self._arguments(node, scope, info)
            if is_self(func.value) and info is not None and func.attr in info.methods:
                method = info.methods[func.attr]
                self._note_passed_kinds(f"{info.name}.{func.attr}", [a.arg for a in method.args.args[1:]], node,
                                        kinds)
                if CLASS in kinds:
                    self._note_passed_classes(node, method, kinds, info)
            result = ast.Call(ast.Attribute(receiver, func.attr, ast.Load()), *args)
            if func.attr in PYTHON_METHODS and {MODULE, OWN, MODULES} & set(kinds):
                self._fill_container(func.value, info)
            if is_self(func.value) and info is not None and info.attrs.get(func.attr) in (MODULE, OWN):
                self._check_mode_arguments(node)
                self._check_layer_call(node, info.layer_rows.get(func.attr))
                switched = self._training_call(node, result, info.layer_rows.get(func.attr))
                if switched is not None:
                    return switched, TENSOR
                own = info.own_classes.get(func.attr)
                forward_parameters = self._forward_parameters(own)
                if forward_parameters is not None:
                    self._note_passed_kinds(f"{own}.{self.src.forward}", forward_parameters, node, kinds)
                result = self._tensors_first(node, result, kinds, own, info.layer_rows.get(func.attr))
                self._note_inplace_layer(node, func.attr, result, info)
                self._note_changed_inputs(node, own)
                return result, TENSOR
            if is_self(func.value):
                return result, info.method_kinds.get(func.attr, UNKNOWN) if info is not None else UNKNOWN
            if kind == ARRAY:  # `.astype("float32")`, `.reshape(...)`
                return result, ARRAY
            return result, PYTHON if kind == PYTHON and func.attr in PYTHON_METHODS else UNKNOWN
        if isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2 and \
                self._framework_path(node.args[1]) in self.src.layer_classes and self.dst.layer_class is None and \
                self.dst.is_layer is not None:  # `isinstance(act, nn.Module)` where some layers are functions
            return self.dst.is_layer(self._expr(node.args[0], scope, info)[0]), PYTHON
        args, kinds = self._arguments(node, scope, info)
        callee, callee_kind = self._expr(func, scope, info)
        if isinstance(func, ast.Name) and func.id in self.classes:
            return ast.Call(callee, *args), OWN
        if isinstance(func, ast.Name) and func.id in self.helpers:
            fn = self.definitions.get(func.id)
            if isinstance(fn, ast.FunctionDef):
                self._note_passed_kinds(fn.name, [a.arg for a in fn.args.posonlyargs + fn.args.args], node, kinds)
            return ast.Call(callee, *args), self.helper_kinds.get(func.id, UNKNOWN)
        if isinstance(func, ast.Name) and func.id in scope.functions:
            return ast.Call(callee, *args), scope.functions[func.id]
        if isinstance(func, ast.Name) and func.id in BUILTINS:
            kind = PYTHON if func.id in ("len", "range", "int", "float", "bool", "str", "isinstance", "zip",
                                         "enumerate", "round", "divmod", "type", "callable") else \
                "tensors" if func.id in ("list", "tuple") and len(kinds) == 1 and kinds[0] in (TENSOR, "tensors") \
                else _combine(*kinds) if kinds else PYTHON
            if func.id in ITERATING and self.dst.unstack is not None:  # a weight iterated along its first axis
                first = ITERATING[func.id]
                args[0][first:] = [self.dst.unstack(a) if k == TENSOR and is_self_attr(n) else a
                                   for a, k, n in zip(args[0][first:], kinds[first:], node.args[first:])]
            call = ast.Call(callee, *args)
            if func.id == "dict" and not node.args:  # `dict(wte=nn.Embedding(...), h=nn.ModuleList(...))`
                call = _with_entries(call, {k.arg: kind for k, kind in zip(node.keywords, kinds)})
            return call, kind
        if callee_kind == CLASS or scope.mode == "init" and isinstance(func, ast.Name) and func.id in scope.optional:
            # `norm_layer(dim)`: a layer made by the class passed
            call = ast.Call(callee, *args)
            if self.dst.init_argument is not None:  # every layer factory takes it (NNX's rngs)
                name = self.dst.init_argument[0]
                call.keywords.append(ast.keyword(name, ast.Name(name, ast.Load())))
            return call, MODULE
        if callee_kind in (MODULE, OWN):
            self._check_mode_arguments(node)
            held = func.value if isinstance(func, ast.Subscript) else None  # `self.sublayer[0](x, ...)`
            own = info.own_classes.get(held.attr) if is_self_attr(held) and info is not None else None
            return self._tensors_first(node, ast.Call(callee, *args), kinds, own), TENSOR
        if isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and 2 <= len(node.args) <= 3 and \
                is_self(node.args[0]) and isinstance(known(node.args[1]), str) and not node.keywords:
            # `getattr(self, 'ln0', None)` (Set Transformer's optional norms): a name the translation keeps
            name = self.dst.attribute(known(node.args[1]))
            rest = [self._expr(a, scope, info)[0] for a in node.args[2:]]
            kind = PYTHON if func.id == "hasattr" else info.attrs.get(known(node.args[1]), UNKNOWN) if info else UNKNOWN
            return ast.Call(func, [node.args[0], ast.Constant(name), *rest], []), kind
        if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "eval", "exec"):
            self._block(node, f"{func.id}(...)", "dynamic attribute access or code cannot be translated")
        elif isinstance(func, ast.Name) and func.id not in scope.kinds and self.imports.path(func) is None:
            self._block(node, f"call of {func.id}", "not defined in this module nor imported from a known place")
        library = self.imports.path(func)
        root = library.split(".")[0] if library else None
        if root in (OTHER_FRAMEWORKS | FRAMEWORK_ROOTS) - self.roots:
            self._block(node, library, "a function of another framework than the source's (not translated)")
        elif root is not None and root not in PORTABLE_LIBRARIES and root not in sys.stdlib_module_names:
            unread = self.unread_library.get(func.id) if isinstance(func, ast.Name) else None
            self._block(node, library, f"a function of {root}, a library written for one framework's tensors "
                                       f"(not translated{': ' + unread if unread else ''})")
        if library is not None:  # a library's function (einops): it takes tensors, not weights
            args = ([self._weight_value(a, info) for a in args[0]],
                    [ast.keyword(k.arg, self._weight_value(k.value, info)) for k in args[1]])
        if TENSOR in kinds:
            return ast.Call(callee, *args), TENSOR
        return ast.Call(callee, *args), ARRAY if library and library.startswith("numpy.") else UNKNOWN

    def _is_fresh(self, node) -> bool:
        """Whether `node` makes a new tensor (`x.new_empty(shape)`, `torch.zeros(n)`), which nothing else refers to."""
        if not isinstance(node, ast.Call):
            return False
        path = self.imports.path(node.func)
        if path is None and isinstance(node.func, ast.Attribute):
            path = f"Tensor.{node.func.attr}"
        row = self.functions.find(path) if path else None
        return row is not None and row.op in FRESH_TENSOR_OPS

    def _weight_value(self, value, info):
        """A weight the class holds (`self.w`) as the target's tensor of its value, other values as they are."""
        if is_self_attr(value) and info is not None and info.attrs.get(value.attr) == TENSOR:
            return self.dst.weight_value(value)
        return value

    def _training_call(self, node: ast.Call, written: ast.Call, row):
        """The written call of a held layer given `training=` (see _held_layer_call) as the target's
        TargetSkeleton.training_call, for a target whose layers take no such argument; else None."""
        flag = next((k.value for k in written.keywords if k.arg == "training"), None)
        if flag is None or self.dst.training == "argument":
            return None
        switched = self.dst.training_call(written.func, row.op if row is not None else None, written.args, flag)
        if switched is None or len(written.keywords) > 1:
            self._block(node, "a training flag passed to a layer", f"{self.target.framework} cannot switch this "
                                                                   "layer per call")
        return switched

    def _switches_per_call(self) -> bool:
        """Whether the target can switch a layer's training behaviour per call: its layers take a `training`
        argument (Keras), or it writes the switched computation (TargetSkeleton.training_call)."""
        return self.dst.training == "argument" or self.dst.training_call is not None

    def _check_mode_arguments(self, node: ast.Call) -> None:
        for kw in node.keywords:
            if kw.arg in self.src.mode_arguments:
                self._block(node, f"{kw.arg}= in a layer call", "a per-call switch between training and inference "
                                                               "behaviour; switch the whole model with "
                                                               "model.train() / model.eval() instead")

    def _held_layer_call(self, node: ast.Call, scope, row) -> ast.Call:
        """A call of a held layer (of code row `row`, if a framework layer) without its neutral arguments (see
        SourceSkeleton.neutral_call_arguments); the mode argument of a dropout or batch norm given by the
        function's flag or a constant (`deterministic=not train`, `use_running_average=True`) is a `training=`
        argument, which Keras' layers take and other targets write with TargetSkeleton.training_call; other mode
        arguments stay (refused)."""
        kept = []
        for kw in node.keywords:
            if known(kw.value) in self.src.neutral_call_arguments.get(kw.arg, ()):
                continue
            negated = isinstance(kw.value, ast.UnaryOp) and isinstance(kw.value.op, ast.Not)
            flag = kw.value.operand if negated else kw.value
            given = (isinstance(flag, ast.Name) and flag.id in scope.arguments) or isinstance(known(flag), bool)
            if kw.arg in self.src.mode_arguments and given and self._switches_per_call() and row is not None and \
                    row.op in SWITCHED_PER_CALL:
                if isinstance(known(flag), bool):  # `use_running_average=True`: evaluation mode in this call
                    kw = ast.keyword("training", P.lit(known(flag) is negated))
                else:
                    kw = ast.keyword("training", flag if negated else ast.UnaryOp(ast.Not(), flag))
            kept.append(kw)
        return ast.copy_location(ast.Call(node.func, node.args, kept), node)

    def _check_layer_call(self, node: ast.Call, row) -> None:
        """A framework layer's call passes only the arguments its translation takes (`row.call`)."""
        if row is None:
            return
        written = ("training",) if self._switches_per_call() else ()  # the argument _held_layer_call writes
        passed = [kw for kw in node.keywords if kw.arg not in (self.src.training_parameter, *self.src.mode_arguments,
                                                               *written)]
        try:
            row.call.bind(ast.Call(node.func, node.args, passed))
        except Refused as e:
            self._block(node, f"call of {_short(row.path)}",
                        f"{e}: a call of this layer is translated with ({', '.join(row.call.names())}) only")

    def _fill_container(self, container, info) -> None:
        """A layer put into `self.<name>` (Keras: a plain list or dict): it becomes the target's layer container."""
        if not is_self_attr(container) or info is None or container.attr not in info.empty_containers:
            return
        assign = info.empty_containers.pop(container.attr)
        wrap = self.dst.module_dict if isinstance(assign.value, ast.Dict) or isinstance(assign.value, ast.Call) and \
            assign.value.func.id == "dict" else self.dst.module_list
        assign.value = wrap(assign.value)
        info.attrs[container.attr] = MODULES

    def _note_inplace_layer(self, node, attr, written, info):
        if attr in info.inplace:
            self._overwritten += [(a.id, written, None) for a in node.args[:1] if isinstance(a, ast.Name)]

    def _changes_input(self, made, class_name: str) -> bool:
        """Whether the layer `made` (holding an in-place layer) changes its input: the in-place layer itself, or a
        sequential container starting with one (`nn.Sequential(conv, nn.ReLU(True))` changes its conv's output)."""
        path = self.imports.path(made.func) if isinstance(made, ast.Call) else None
        if self.src.containers.get(path) != "sequential":
            return True
        first = made.args[0] if made.args else None
        if isinstance(first, ast.Call) and self.layers.find(self.imports.path(first.func)) is not None:
            return self._makes_inplace_layer(first)
        returned = self._returned_layers(first, class_name)
        if returned:  # made by the module's own function (`self.depthwise_conv(...)` returning nn.Conv2d(...))
            return any(self._makes_inplace_layer(r) for r in returned)
        return first is not None  # a layer of unknown kind first: as the in-place one may

    def _returned_layers(self, call, class_name: str) -> list:
        """The framework layer constructor calls that the module's own function or method called by `call`
        returns, or [] when any return is something else."""
        if not isinstance(call, ast.Call):
            return []
        if isinstance(call.func, ast.Name):
            function = self.definitions.get(call.func.id)
        elif isinstance(call.func, ast.Attribute) and is_self(call.func.value):
            function = self._own_method(class_name, call.func.attr)
        else:
            return []
        if not isinstance(function, ast.FunctionDef):
            return []
        returned = [r.value for r in ast.walk(function) if isinstance(r, ast.Return)]
        layers = [r for r in returned if isinstance(r, ast.Call) and isinstance(r.func, (ast.Name, ast.Attribute))
                  and self.layers.find(self.imports.path(r.func)) is not None]
        return layers if returned and len(layers) == len(returned) else []

    def _makes_inplace_layer(self, made) -> bool:
        """Whether the constructor call `made` makes a layer changing its input in place: a layer made with its
        row's in-place option true, or a sequential container starting with one."""
        path = self.imports.path(made.func) if isinstance(made, ast.Call) else None
        if path is None:
            return False
        if self.src.containers.get(path) == "sequential":
            return bool(made.args) and self._makes_inplace_layer(made.args[0])
        row = self.layers.find(path)
        if row is None or row.inplace is None:
            return False
        try:
            return known(row.signature.bind(made).get(row.inplace)) is True
        except (Refused, TypeError):
            return True

    def _note_changed_inputs(self, call: ast.Call, class_name: str | None) -> None:
        """A layer of the module's classes whose forward may change a tensor passed to it in place (timm's
        `LayerScale(inplace=True)`): the names passed there may not be read afterwards."""
        forward = self._own_method(class_name, self.src.forward)
        if forward is None:
            return
        layers = self._inplace_attributes(class_name)
        changed = changed_parameters(forward, lambda call: self._changes_first_argument(call, layers))
        params = [a.arg for a in forward.args.args[1:]]
        for param, arg in [*zip(params, call.args), *[(k.arg, k.value) for k in call.keywords]]:
            if param in changed and isinstance(arg, ast.Name):
                self._overwritten.append((arg.id, None, f"{class_name}.{self.src.forward} may change its input "
                                          f"{param} in place (line {changed[param]}); {arg.id} is read afterwards"))

    def _changes_first_argument(self, call: ast.Call, inplace_layers: set) -> bool:
        """Whether `call` may change its first argument in place: one of `inplace_layers` (`self.relu(x)`), or a
        function whose row's in-place option is not false (`F.relu(x, True)`; an `inplace=` keyword when the
        function has no row)."""
        if is_self_attr(call.func):
            return call.func.attr in inplace_layers
        row = self.functions.find(self.imports.path(call.func) or "")
        if row is None or row.inplace is None:
            return any(k.arg == "inplace" and known(k.value) is not False for k in call.keywords)
        try:
            return known(row.signature.bind(call).get(row.inplace)) is not False
        except (Refused, TypeError):
            return True

    def _inplace_attributes(self, class_name: str) -> set:
        """Attributes `__init__` of the module's class sets to a layer changing its input in place."""
        init = self._own_method(class_name, "__init__")
        return {t.attr for stmt in (init.body if init else []) if isinstance(stmt, ast.Assign)
                and self._makes_inplace_layer(stmt.value) for t in stmt.targets if is_self_attr(t)}

    def _arguments(self, node: ast.Call, scope, info):
        args, kinds = [], []
        for a in node.args:
            v, k = self._expr(a, scope, info)
            args.append(mark_held(v, k) if k in (DTYPE, DEVICE, TENSOR) else v)
            kinds.append(k)
        keywords = []
        for kw in node.keywords:
            if kw.arg == self.src.training_parameter and self._drops_training_argument():
                continue  # the target's layers read their own training flag
            v, k = self._expr(kw.value, scope, info)
            keywords.append(ast.keyword(kw.arg, mark_held(v, k) if k in (DTYPE, DEVICE) else v))
            kinds.append(k)
        return (args, keywords), kinds

    def _framework_call(self, node: ast.Call, path: str, scope, info):
        if path in self.src.reparametrizations:
            return self._reparametrized(node, path, scope, info)
        if path in self.src.containers:
            return self._container(node, self.src.containers[path], scope, info)
        row = self.layers.find(path)
        if row is not None and row.signature.varkw is None and any(k.arg is None for k in node.keywords):
            return self._layer_from_factory(node, path, scope, info), MODULE
        if row is not None:
            return self._layer_call(node, row, scope, info), MODULE
        row = self.functions.find(path)
        if row is not None:
            return self._function_call(node, row.path, scope, info)
        if path in self.src.parameter_classes and self._init_tensors(scope) and node.args:
            return self._parameter_value(node, scope, info), TENSOR
        if path in self.src.parameter_classes:
            self._block(node, path, "parameters are translated only as `self.name = nn.Parameter(...)` in __init__ "
                                    "or in a list of them")
        else:
            self._block(node, path, f"no {self.target.framework} translation for this call")
        return node, UNKNOWN

    def _reparametrized(self, node: ast.Call, path: str, scope, info):
        """`weight_norm(nn.Conv1d(...))`: the layer, holding the weight the re-expression computes."""
        signature, lost = self.src.reparametrizations[path]
        try:
            bound = signature.bind(node)
            if known(bound["name"]) != "weight":
                raise Refused(f"name={ast.unparse(bound['name'])} (only the layer's weight is translated)")
        except Refused as e:
            self._block(node, _short(path), str(e))
            return node, UNKNOWN
        self.notes.append(f"line {node.lineno}: {_short(path)}(...) is not kept: the layer holds the weight it "
                          f"computes, {lost}")
        return self._expr(bound["module"], scope, info)

    def _activation_table(self, node: ast.Subscript, table: dict, scope: Scope, info):
        """`ACT2FN["gelu"]` (transformers' activations by name): the target's layer for that name; by a name known
        only at run time (`ACT2FN[config.hidden_act]`), a dict of the target's layers for every name translated,
        indexed the same way (a name outside it is a KeyError)."""
        def layer(name):
            path, arguments = table[name]
            row = self.layers.find(path)
            call = ast.Call(ast.Name("layer", ast.Load()), [], [ast.keyword(k, ast.Constant(v))
                                                                 for k, v in arguments.items()])
            return self.target.write_layer(row.read(row.signature.bind(call)))
        key = known(node.slice)
        try:
            if key is not NOT_LITERAL:
                if key not in table:
                    raise Refused(f"{key!r} (translated: {', '.join(table)})")
                return layer(key), MODULE
            index, _ = self._expr(node.slice, scope, info)
            names = list(table)
            return ast.Subscript(ast.Dict([ast.Constant(n) for n in names], [layer(n) for n in names]), index,
                                 ast.Load()), MODULE
        except Refused as e:
            self._block(node, ast.unparse(node.value), str(e))
            return node, UNKNOWN

    def _factory_keywords(self, node: ast.Call, keywords: list) -> list:
        """The keywords `partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)` binds, for the written
        factory (see _layer_class): one it leaves out (taken only as a literal) goes when given its default, and is
        refused with any other value."""
        row = self.layers.find(self._framework_path(node.args[0]))
        try:
            kept = dict(self._variable_parameters(row))
        except Refused:
            return keywords
        defaults = dict(row.signature.params)
        out = []
        for k in keywords:
            if k.arg is None or k.arg in kept or k.arg not in defaults:
                out.append(k)
            elif known(k.value) != defaults[k.arg]:
                self._block(node, f"{_short(row.path)}({k.arg}=...) as a value",
                            f"the layer is translated with {k.arg}={defaults[k.arg]!r} only")
        return out

    def _makes_layers(self, node) -> bool:
        """Whether `node` is a framework layer class or a function of the module making layers, or a `partial` of
        one (`partial(SElayer, scale_activation=nn.Hardsigmoid)`)."""
        if isinstance(node, ast.Call) and self.imports.path(node.func) == "functools.partial" and node.args:
            node = node.args[0]
        return self._is_layer_class(node) or self._is_layer_factory(node)

    def _is_layer_class(self, node) -> bool:
        """A framework layer class (`nn.LayerNorm`) written as a value (a `partial` of one: see _makes_layers)."""
        path = self._framework_path(node)
        return path is not None and self.layers.find(path) is not None

    def _layer_class(self, node, path: str):
        """A framework layer class used as a value (`act_layer=nn.GELU`, later `act_layer()`): a module-level
        function of the class's parameters, named after it, that makes the target's layer. Parameters a row
        takes only as literals keep their defaults (passing them is then a TypeError, never a different layer)."""
        if path not in self.factories:
            name = path.split(".")[-1]
            taken = self.classes.keys() | self.helpers | self.dst.reserved_names | {
                f.name for f in self.factories.values()}
            while name in taken:
                name += "_"
            self.factories[path] = self._factory(node, self.layers.find(path), name, path)
        return ast.Name(self.factories[path].name, ast.Load()), CLASS

    def _layer_from_factory(self, node: ast.Call, path: str, scope, info) -> ast.Call:
        """`nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)` (torchvision's BasicConv2d): arguments known
        only when it runs, passed to the written function making the layer from the source's parameters (see
        _layer_class)."""
        factory, _ = self._layer_class(node.func, path)
        call = ast.Call(factory, [self._expr(a, scope, info)[0] for a in node.args],
                        [ast.keyword(k.arg, self._expr(k.value, scope, info)[0]) for k in node.keywords])
        if self.dst.init_argument is not None:
            name = self.dst.init_argument[0]
            call.keywords.append(ast.keyword(name, ast.Name(name, ast.Load())))
        return ast.copy_location(call, node)

    def _variable_parameters(self, row) -> list:
        """The (name, default) parameters of a layer row the target writes from variables: the required ones and
        the optional ones it also reads from a variable (the others only as literals: they keep their defaults)."""
        params = [(n, d) for n, d in row.signature.params if n not in ("device", "dtype")]
        variable = [n for n, d in params if d is REQUIRED]
        if row.signature.varargs or row.signature.varkw or row.layer_arguments:
            raise Refused("a layer class taking other layers or any arguments")
        for n, d in params:
            trial = {p: ast.Name(p, ast.Load()) if p == n or p in variable else d2 for p, d2 in params}
            try:
                self.target.write_layer(row.read(trial))
            except (Refused, KeyError, TypeError):
                continue
            if d is not REQUIRED:
                variable.append(n)
        return [(p, d) for p, d in params if p in variable]

    def _factory(self, node, row, name: str, path: str) -> ast.FunctionDef:
        try:
            kept = self._variable_parameters(row)
            written = self.target.write_layer(row.read({p: ast.Name(p, ast.Load()) if p in dict(kept) else d
                                                        for p, d in row.signature.params
                                                        if p not in ("device", "dtype")}))
        except Refused as e:
            self._block(node, f"{_short(path)} as a value", str(e))
            written, kept = ast.Constant(None), []
        args = ast.arguments([], [ast.arg(p) for p, _ in kept], None, [], [], None,
                             [P.lit(d) for _, d in kept if d is not REQUIRED])
        if self.dst.init_argument is not None and self.dst.init_argument[0] not in {
                n.id for n in ast.walk(written) if isinstance(n, ast.Name)}:  # taken by every factory, as called
            args.kwonlyargs.append(ast.arg(self.dst.init_argument[0], P.name(self.dst.init_argument[1])))
            args.kw_defaults.append(None)
        doc = ast.Expr(ast.Constant(f"{_short(path)}'s arguments -> the {self.target.framework} layer."))
        return ast.FunctionDef(name, args, [doc, ast.Return(written)], [], None, lineno=0)

    def _function_as_layer(self, node, path: str, args: list, keywords: list):
        """A tensor function used as a value (`nnx.Sequential(..., nnx.relu)`, `partial(nnx.gelu, ...)`, a
        default `act=nnx.gelu`): the target's layer computing it, with `args`/`keywords` bound after the input."""
        row = self.functions.find(path)
        if row is None or row.returns != "tensor":
            self._block(node, _short(path), "a framework object used as a value")
            return node, UNKNOWN
        x = ast.Name("__input", ast.Load())
        try:
            opcall = row.read(row.signature.bind(ast.Call(node, [x, *args], keywords)))
            if len(opcall.inputs) != 1 or opcall.inputs[0] is not x:
                raise Refused("a function of several tensors used as a layer")
            return self.target.write_layer(OpCall(opcall.op, [], opcall.attrs)), MODULE
        except Refused as e:
            self._block(node, _short(path), str(e))
            return node, UNKNOWN

    def _layer_call(self, node: ast.Call, row, scope, info) -> ast.expr:
        node = self._without_initializers(node, scope)
        for kw in node.keywords:  # `activation=keras.activations.gelu`: the function's name, as Keras reads it
            module, _, name = (self._framework_path(kw.value) or "").rpartition(".")
            if module and self.src.named_functions.get(kw.arg) == module:
                kw.value = ast.copy_location(ast.Constant(name), kw.value)
        try:
            if row.layer_arguments:
                bound = self._with_layer_arguments(node, row, scope, info)
            else:
                args, _ = self._arguments(node, scope, info)
                bound = row.signature.bind(ast.Call(node.func, *args))
            opcall = row.read(bound)
            written = self.target.write_layer(opcall)
            if row.inplace and known(bound.get(row.inplace)) is True:
                self._last_inplace = True
            self._last_layer = (opcall, written)
            return written
        except Refused as e:
            self._block(node, _short(row.path), str(e))
            return node

    def _without_initializers(self, node: ast.Call, scope) -> ast.Call:
        """The layer construction `node` without the initializers given to it (`kernel_init=nnx.initializers.
        xavier_uniform()`, or a name bound to one): initial values are not translated."""
        def given(value):
            return self._initializer(value) is not None or isinstance(value, ast.Name) and \
                value.id in scope.initializers
        kept = [k for k in node.keywords if k.arg is None or not given(k.value)]
        if len(kept) == len(node.keywords):
            return node
        self.initializers_left_out.append(node.lineno)
        return ast.copy_location(ast.Call(node.func, node.args, kept), node)

    def _with_layer_arguments(self, node: ast.Call, row, scope, info) -> dict:
        """The bound arguments of a layer that wraps another (`layer_arguments`): the wrapped layer's construction
        read by its own row into an OpCall, the other arguments translated."""
        bound = row.signature.bind(node)
        for name, value in bound.items():
            if name not in row.layer_arguments or known(value) is None:
                bound[name] = self._expr(value, scope, info)[0] if isinstance(value, ast.AST) else value
                continue
            if isinstance(value, ast.Name) and value.id in scope.constructed:
                scope.folded.add(value.id)
                value = scope.constructed[value.id]
            inner = self.layers.find(self.imports.path(value.func)) if isinstance(value, ast.Call) else None
            if inner is None:
                raise Refused(f"{name}= must be a layer constructed in place (one with a translation)")
            if inner.layer_arguments:  # `nnx.Bidirectional(nnx.RNN(nnx.LSTMCell(...)), ...)`
                bound[name] = inner.read(self._with_layer_arguments(value, inner, scope, info))
                continue
            args, _ = self._arguments(value, scope, info)
            bound[name] = inner.read(inner.signature.bind(ast.Call(value.func, *args)))
        return bound

    def _function_call(self, node: ast.Call, path: str, scope, info, receiver=None):
        row = self.functions.find(path)
        if row is None:
            method = path.split(".")[-1]
            what = "in-place tensor method" if _is_inplace_method(method) else "tensor method"
            self._block(node, f".{method}()", f"no {self.target.framework} translation for this {what}")
            return node, UNKNOWN
        (args, keywords), kinds = self._arguments(_displayed(node, scope.displays), scope, info)
        if receiver is not None:
            args = [receiver] + args
        try:
            bound = row.signature.bind(ast.Call(node.func, args, keywords))
            overwritten = bound[row.signature.names()[0]] if row.inplace and \
                known(bound.get(row.inplace)) is True else None
            opcall = row.read(bound)
            if isinstance(opcall, list):  # several values, each one op's (`torch.var_mean`)
                return ast.Tuple([self._write(o, node, scope) for o in opcall], ast.Load()), row.returns
            if self.dst.scalar_tensor and kinds and all(k == PYTHON for k in kinds) and receiver is None and \
                    opcall.op != "AsTensor":
                opcall.inputs = [i if isinstance(i, list) else self.dst.scalar_tensor(i) for i in opcall.inputs]
            elif self.dst.scalar_tensor and opcall.op in NUMBER_FIRST and kinds[:1] in ([UNKNOWN], [PYTHON]) and \
                    receiver is None:
                # `ops.cast(self.scale, q.dtype)`: a number, or a tensor, cast (as_tensor takes both)
                opcall.inputs = [self.dst.scalar_tensor(opcall.inputs[0]), *opcall.inputs[1:]]
            written = self._write(opcall, node, scope, python=row.returns == "python")
            if makes_integers(opcall):
                written.integer_tensor = True
            if isinstance(overwritten, ast.Name):
                self._overwritten.append((overwritten.id, written, None))
            return written, opcall.returns or row.returns
        except Refused as e:
            self._block(node, _short(row.path), str(e))
            return node, UNKNOWN

    def _init_tensors(self, scope: Scope) -> bool:
        """Whether tensor code in `scope` is written with the target's table for constants made in `__init__`."""
        return scope.mode == "init" and self.dst.init_tensors is not None

    def _write(self, opcall: OpCall, node, scope: Scope, python: bool = False) -> ast.expr:
        # in __init__, arrays are computed by the table for constants; other values (a regularizer) by the target's
        table = self.dst.init_tensors if self._init_tensors(scope) and not python else self.target
        writer = table.function_writers.get(opcall.op)
        try:
            if writer is None:
                raise Refused(f"{table.framework} has no function for {opcall.op}")
            # literals stay themselves, so that a writer can see a number (torch.maximum(x, 0.0) -> torch.clamp)
            placeholders = [v if isinstance(v, list) or isinstance(v, ast.AST) and known(v) is not NOT_LITERAL
                            else P.lit(v) if not isinstance(v, ast.AST)  # an optional input left out: None
                            else ast.Name(f"__input{i}", ast.Load()) for i, v in enumerate(opcall.inputs)]
            written = writer.write(OpCall(opcall.op, placeholders, opcall.attrs))
        except Refused as e:
            self._block(node, f"`{ast.unparse(node)}`", str(e))
            return node
        if scope.mode == "helper" and self.dst.random_source:  # a function draws from the source it is passed
            written = _Replace(self.dst.random_source, P.name(self.dst.init_argument[0])).visit(written)
        values = {p.id: v for p, v in zip(placeholders, self._once(opcall.inputs, written)) if isinstance(p, ast.Name)}
        return _Substitute(values).visit(written)

    def _once(self, inputs, written) -> list:
        """Inputs the written code reads more than once are computed once, into a name, first."""
        uses = [n.id for n in ast.walk(written) if isinstance(n, ast.Name)]
        out = []
        for i, value in enumerate(inputs):
            if uses.count(f"__input{i}") > 1 and not _is_plain(value):
                name = self._temporary()
                self.hoisted.append(ast.Assign([ast.Name(name, ast.Store())], value, lineno=0))
                value = ast.Name(name, ast.Load())
            out.append(value)
        return out

    def _temporary(self) -> str:
        self._temporaries += 1
        return f"t{self._temporaries}"

    def _container(self, node, kind, scope, info):
        (args, keywords), kinds = self._arguments(node, scope, info)
        if [k for k in keywords if k.arg != "name"]:  # a display name does not change what the container computes
            self._block(node, f"{kind} container", "keyword arguments")
        if kind == "sequential":
            items = args[0].elts if len(args) == 1 and isinstance(args[0], ast.List) else args
            if len(items) == 1 and isinstance(items[0], ast.Starred):
                return self.dst.sequential(items[0].value), MODULE
            made = scope.constructed.get(node.args[0].id) if len(node.args) == 1 and isinstance(
                node.args[0], ast.Name) else None
            if made is not None and not made.args and (self.imports.path(made.func) == "collections.OrderedDict" or (
                    isinstance(made.func, ast.Name) and made.func.id == "dict" and "dict" not in self.imports.bound)):
                # a dict of named layers filled before (torchvision's ViT)
                self.notes.append(f"line {node.lineno}: the layer names of Sequential({node.args[0].id}) are not "
                                  "kept; its layers are in order")
                return self.dst.sequential(P.call("list", ast.Call(ast.Attribute(args[0], "values", ast.Load()),
                                                                   [], []))), MODULE
            if len(args) == 1 and isinstance(args[0], ast.Call) and \
                    self.imports.path(args[0].func) == "collections.OrderedDict":
                items = _named_layers(args[0])
                if items is None:
                    self._block(node, "Sequential(OrderedDict(...))", "only a literal list of (name, layer) pairs "
                                                                      "is translated")
                    return node, MODULE
                self.notes.append(f"line {node.lineno}: the layer names of Sequential(OrderedDict(...)) are not "
                                  "kept; its layers are in order")
            return self.dst.sequential(ast.List(list(items), ast.Load())), MODULE
        if kind == "list":
            items = args[0] if args else ast.List([], ast.Load())
            if isinstance(items, ast.GeneratorExp):  # `nn.ModuleList(nn.Linear(n, k) for ...)`: a list, made once
                items = ast.ListComp(items.elt, items.generators)
            return self.dst.module_list(items), MODULES
        entries = getattr(args[0], "entry_kinds", {}) if args else {}
        return _with_entries(self.dst.module_dict(args[0] if args else ast.Dict([], [])), entries), MODULES


def _with_entries(value: ast.expr, kinds: dict) -> ast.expr:
    """`value` (a dict of layers) marked with the kind of each entry by key, for attribute access by key
    (`self.transformer.wte`, as nn.ModuleDict allows)."""
    value.entry_kinds = kinds
    return value


def _has_attribute(path: str, name: str) -> bool:
    """Whether the installed framework's object at `path` has the attribute `name`."""
    return hasattr(resolve(path), name)


def _is_integer_tensor(value: ast.expr, scope: Scope) -> bool:
    return getattr(value, "integer_tensor", False) or isinstance(value, ast.Name) and value.id in scope.integers


def _drawing_functions(body: list, name: str, helpers: set) -> set[str]:
    """Module-level functions that draw random numbers from their `name` argument (`rngs()`) and pass it only to
    others that do (never to a layer they build)."""
    functions = {f.name: f for f in body if isinstance(f, ast.FunctionDef)}
    drawing: set[str] = set()
    while new := {n for n, f in functions.items() if n not in drawing and _draws_only(f, name, drawing | helpers)}:
        drawing |= new
    return drawing


def _draws_only(fn: ast.FunctionDef, name: str, drawing: set) -> bool:
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)]
    draws = any(isinstance(c.func, ast.Name) and c.func.id == name for c in calls)
    passes = [c for c in calls if any(k.arg == name for k in c.keywords)]
    if any(not (isinstance(c.func, ast.Name) and c.func.id in drawing) for c in passes):
        return False
    return draws or bool(passes)


class _Replace(ast.NodeTransformer):
    """Every occurrence of the dotted name `dotted` (`self.rngs`) replaced by `by`."""

    def __init__(self, dotted: str, by: ast.expr):
        self.dotted, self.by = dotted, by

    def visit_Attribute(self, node):
        return self.by if ast.unparse(node) == self.dotted else self.generic_visit(node)


def _is_plain(value) -> bool:
    """A name, a constant or an attribute chain on a name (`self.token`): reading it twice costs nothing."""
    while isinstance(value, ast.Attribute):
        value = value.value
    return isinstance(value, (ast.Name, ast.Constant))


def _named_layers(call: ast.Call) -> list | None:
    """The layers of `OrderedDict([("name", layer), ...])`, in order; None unless it is such a literal."""
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], (ast.List, ast.Tuple)):
        return None
    pairs = call.args[0].elts
    if not all(isinstance(p, ast.Tuple) and len(p.elts) == 2 for p in pairs):
        return None
    return [p.elts[1] for p in pairs]


def _displayed(call: ast.Call, displays: dict) -> ast.Call:
    """`call` with each argument that names a display (see Scope.displays) given as that display."""
    def shown(value):
        return copy.deepcopy(displays[value.id]) if isinstance(value, ast.Name) and value.id in displays else value
    if not displays:
        return call
    return ast.copy_location(ast.Call(call.func, [shown(a) for a in call.args],
                                      [ast.keyword(k.arg, shown(k.value)) for k in call.keywords]), call)


def _reachable(tree: ast.Module, name: str) -> set[str]:
    """`name` and the module-level classes and functions it refers to, transitively."""
    defs = {s.name: s for s in tree.body if isinstance(s, (ast.ClassDef, ast.FunctionDef))}
    # module-level assignments (constants, `CONFIG = Config()`), by the names they bind
    defs.update({n: s for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign)) for n in _bound(s)})
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen or n not in defs:
            continue
        seen.add(n)
        todo += [x.id for x in ast.walk(defs[n]) if isinstance(x, ast.Name)]
    return seen


# -- small predicates --------------------------------------------------------------------------------
def parse(source: str, filename: str) -> ast.Module:
    from tensorbridge.errors import ModelError

    try:
        return ast.parse(source, filename=filename)
    except SyntaxError as e:
        raise ModelError(f"{filename}:{e.lineno}: not valid Python: {e.msg}") from None


def _short(path: str) -> str:
    for long, short in (("torch.nn.functional.", "F."), ("torch.nn.", "nn."), ("keras.layers.", "layers."),
                        ("keras.ops.", "ops."), ("flax.nnx.", "nnx."), ("jax.numpy.", "jnp.")):
        path = path.replace(long, short)
    return path


def _combine(*kinds) -> str:
    if TENSOR in kinds or "tensors" in kinds:
        return TENSOR
    if CLASS in kinds and all(k in (CLASS, PYTHON) for k in kinds):  # `norm_layer or partial(nn.LayerNorm, ...)`
        return CLASS
    if ARRAY in kinds and all(k in (ARRAY, PYTHON) for k in kinds):
        return ARRAY
    if all(k == PYTHON for k in kinds):
        return PYTHON
    return UNKNOWN


def _item(value: ast.expr, index: ast.expr) -> ast.expr:
    """`value[index]`; the item itself when `value` is a tuple written out (`x.max(dim)[0]` -> the max)."""
    if isinstance(value, ast.Tuple) and isinstance(index, ast.Constant) and isinstance(index.value, int) \
            and -len(value.elts) <= index.value < len(value.elts):
        return value.elts[index.value]
    return ast.Subscript(value, index, ast.Load())


def _method_name(call) -> str | None:
    return call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None


def _held_layer(written: ast.expr, wrappers) -> list | None:
    """The attributes (and list indices) from a written layer constructor to the layer holding the weights
    (`Lazy(...)` -> ["layer"], a Sequential of a padding and the layer -> ["layers", 1]); None when the
    constructor holds several layers (a Sequential of the layer and its activation)."""
    if isinstance(written, ast.Call) and isinstance(written.func, ast.Name) and written.func.id in wrappers:
        inner = _held_layer(written.args[0], wrappers) if written.args else None
        return None if inner is None else ["layer", *inner]
    if isinstance(written, ast.Call) and ast.unparse(written.func).endswith("Sequential"):
        items = written.args[0].elts if written.args and isinstance(written.args[0], ast.List) else written.args
        kept = [i for i, item in enumerate(items) if not (isinstance(item, ast.Call) and
                                                          "Padding" in ast.unparse(item.func))]
        return ["layers", kept[0]] if len(kept) == 1 and len(items) > 1 else None
    return []


def _reach(base: ast.expr, path: list) -> ast.expr:
    """`base` followed by `path`'s attributes and list indices."""
    for part in path:
        base = ast.Subscript(base, ast.Constant(part), ast.Load()) if isinstance(part, int) else \
            ast.Attribute(base, part, ast.Load())
    return base


def _under(path: str, roots) -> bool:
    """Whether dotted `path` is one of `roots` (packages, "torch", or modules, "einops.layers.torch") or inside one."""
    return any(path == r or path.startswith(r + ".") for r in roots)


def _bound_once(fn: ast.FunctionDef) -> set:
    """The local names `fn` binds exactly once (by any statement, loop, `with` or comprehension) and no function
    in it takes as a parameter."""
    counts: dict = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            counts[n.id] = counts.get(n.id, 0) + 1
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            counts[n.target.id] = counts.get(n.target.id, 0) + 1
    # parameters, also of lambdas and nested functions (which shadow the name), and names declared global
    shadowed = {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)} | {
        name for n in ast.walk(fn) if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
    return {name for name, count in counts.items() if count == 1 and name not in shadowed}


def _is_immutable_literal(value) -> bool:
    """A number, string, bool, None or a tuple of them, written as a literal."""
    if isinstance(value, ast.Tuple):
        return all(_is_immutable_literal(e) for e in value.elts)
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        return _is_immutable_literal(value.operand)
    return isinstance(value, ast.Constant) and not isinstance(value.value, bytes)


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _marks_built(stmt) -> bool:
    """`super().build(shape)` (or returned), `self.<layer>.build(shape)` or `self.built = True`: the source's
    bookkeeping of a layer built on its first call."""
    if isinstance(stmt, (ast.Expr, ast.Return)) and is_super_call(stmt.value, "build"):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute) \
            and stmt.value.func.attr == "build" and is_self_attr(stmt.value.func.value):
        return True  # `self.position_embeddings.build(input_shape)`: a held layer built (the targets' build theirs)
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and is_self_attr(stmt.targets[0]) and \
        stmt.targets[0].attr == "built"


def _call_base_init(body: list) -> None:
    """`super().__init__()` first in an `__init__` that does not call it (NNX modules need no call; the targets' do)."""
    for f in body:
        if isinstance(f, ast.FunctionDef) and f.name == "__init__" and not any(
                is_super_call(n, "__init__") for n in ast.walk(f)):
            at = 1 if f.body and isinstance(f.body[0], ast.Expr) and isinstance(f.body[0].value, ast.Constant) else 0
            f.body.insert(at, ast.Expr(P.method(P.call("super"), "__init__")))


def _remove_parameter(args: ast.arguments, name: str) -> None:
    """Drop parameter `name` (and its default) from a function's arguments."""
    positional = args.posonlyargs + args.args
    for i, a in enumerate(positional):
        if a.arg == name:
            first_default = len(positional) - len(args.defaults)
            if i >= first_default:
                del args.defaults[i - first_default]
            (args.posonlyargs if a in args.posonlyargs else args.args).remove(a)
            return
    for i, a in enumerate(args.kwonlyargs):
        if a.arg == name:
            del args.kwonlyargs[i], args.kw_defaults[i]
            return


def _init_only_methods(methods: dict) -> set:
    """`__init__` and the methods only it calls, directly or not (CLIP's build_attention_mask): they run when the
    layer is made, so their tensor code is written as __init__'s."""
    def called(names):
        out, todo = set(), list(names)
        while todo:
            fn = methods.get(todo.pop())
            for n in ast.walk(fn) if fn is not None else ():
                if isinstance(n, ast.Call) and is_self_attr(n.func) and n.func.attr in methods and \
                        n.func.attr not in out:
                    out.add(n.func.attr)
                    todo.append(n.func.attr)
        return out
    from_init = called(["__init__"])
    entries = [m for m in methods if m != "__init__" and m not in from_init]  # the forward pass, its callers
    return {"__init__"} | (from_init - called(entries) - set(entries))


def _only_passed_to_super(fn: ast.FunctionDef, name: str) -> bool:
    """Whether `**name` is used only as `super().__init__(**name)` in `fn`."""
    uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name]
    passed = [k for n in ast.walk(fn) if isinstance(n, ast.Call) and is_super_call(n, "__init__")
              for k in n.keywords if k.arg is None and isinstance(k.value, ast.Name) and k.value.id == name]
    return len(uses) == len(passed)


def _is_main_guard(stmt: ast.If) -> bool:
    t = stmt.test
    return isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"


def _is_none_check(test) -> bool:
    if isinstance(test, ast.Compare):
        return all(isinstance(o, (ast.Is, ast.IsNot)) for o in test.ops)
    if isinstance(test, ast.BoolOp):
        return all(_is_none_check(v) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_none_check(test.operand)
    return False


PYTHON_TYPES = frozenset({"int", "float", "bool", "str", "dict", "list", "tuple"})


def _is_python_annotation(arg: ast.arg) -> bool:
    """`int`, `Optional[dict]`, `dict | None`, `Optional[Dict[str, int]]`: a Python value, never a tensor."""
    def python(node) -> bool:
        if isinstance(node, ast.Subscript):  # Optional[X], Dict[K, V], typing.List[int]
            name = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            return name == "Optional" and python(node.slice) or name.lower() in PYTHON_TYPES
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return all(python(n) or isinstance(n, ast.Constant) and n.value is None for n in (node.left, node.right))
        return isinstance(node, ast.Name) and node.id in PYTHON_TYPES
    return arg.annotation is not None and python(arg.annotation)


def _is_inplace_method(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")


def _is_plain_value(node) -> bool:
    """A value of Python's own making: literals, displays of them and calls of the built-in types."""
    return all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Load, ast.UnaryOp,
                              ast.unaryop)) or
               isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in PYTHON_TYPES | {"set"} or
               isinstance(n, ast.Name) and n.id in PYTHON_TYPES | {"set"}
               for n in ast.walk(node))


def _bound(stmt: ast.Assign | ast.AnnAssign) -> list[str]:
    """The names a module-level assignment binds."""
    return [n for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) for n in _names(t)]


def _names(target) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def weight_permutation(held: bool | str, wanted: bool | str, rank: int | None) -> tuple | None:
    """The axes order taking a weight laid out as `held` to the layout `wanted` (None: the same), each layout one
    of CodeTable.weight_attributes': False the IR's, True its 2-D transpose, "spatial_first" a convolution
    kernel of `rank` spatial axes with its IR (out, in, *spatial) order as (*spatial, in, out)."""
    def to_ir(layout) -> tuple:
        if layout == "spatial_first":
            return (rank + 1, rank, *range(rank))
        return (1, 0) if layout else tuple(range(2 if rank is None else rank + 2))

    if held == wanted:
        return None
    into, out = to_ir(held), to_ir(wanted)
    back = tuple(out.index(i) for i in range(len(out)))  # the IR's order -> `wanted`
    perm = tuple(into[i] for i in back)
    return None if perm == tuple(range(len(perm))) else perm


def changed_parameters(function: ast.FunctionDef, changes_first) -> dict:
    """The parameters of `function` it may change in place before rebinding them (an in-place method, `+=` and
    the like, a call for which `changes_first(call)` says it changes its first argument), each with the line of
    the first change."""
    params = {a.arg for a in function.args.args[1:]}
    bound = {}
    for n in ast.walk(function):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bound[n.id] = min(n.lineno, bound.get(n.id, n.lineno))
    changed = {}
    for node in ast.walk(function):
        target = None
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            target = node.target
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                _is_inplace_method(node.func.attr) and isinstance(node.func.value, ast.Name):
            target = node.func.value
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and \
                changes_first(node):
            target = node.args[0]
        if target is not None and target.id in params and node.lineno <= bound.get(target.id, node.lineno):
            changed.setdefault(target.id, node.lineno)
    return changed


#: tensor methods whose result is a new tensor, never a view of (nor the same tensor as) the one they are called on
FRESH_METHODS = frozenset(
    "clone add sub mul div pow exp log sqrt rsqrt abs neg sigmoid tanh relu softmax log_softmax matmul bmm mm sum "
    "mean amax amin prod std var norm cumsum cumprod masked_fill clamp clip argmax argmin round floor ceil sign gather "
    "index_select repeat repeat_interleave flip roll tril triu new_zeros new_ones new_full new_empty new_tensor "
    "eq ne lt le gt ge logical_not".split())


def _view_base(node) -> str | None:
    """The name whose tensor `node` may share memory with: the base of a chain of indexing and tensor methods
    other than FRESH_METHODS (`x.view(-1)`, `x[:, 0]`, `x.transpose(1, 2)`, `x.float()`, which is x when it is
    float already), or a name itself; None for anything else (a layer's or a function's result)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr not in FRESH_METHODS:
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "real", "data"):
            node = node.value
        else:
            return None


def _live_aliases(scope, name: str) -> list[str]:
    """The other names of `name`'s tensor (or of a view of it) that later statements read: an in-place change of
    it would change them too."""
    return [n for n, g in scope.groups.items() if g == scope.groups.get(name) and n != name and _reads(scope.rest, n)]


def _reads(stmts, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               for s in stmts for n in ast.walk(s))


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict):
        self.values = values

    def visit_Name(self, node):
        return copy.deepcopy(self.values[node.id]) if node.id in self.values else node


class _DropArgument(ast.NodeTransformer):
    """The argument every constructor passes on (NNX's `rngs`), dropped from each function's parameters and from
    each call that passes it by keyword; any other use of it stays, to be refused."""

    def __init__(self, name: str):
        self.name = name

    def visit_FunctionDef(self, node):
        _remove_parameter(node.args, self.name)
        return self.generic_visit(node)

    def visit_Call(self, node):
        node.keywords = [k for k in node.keywords if not (k.arg == self.name and isinstance(k.value, ast.Name)
                                                          and k.value.id == self.name)]
        return self.generic_visit(node)


def _held_root(node):
    """The `self.<name>` a chain of attributes and items starts from (`self.fc_loc[2].weight.data`), else the node
    the chain ends at."""
    while isinstance(node, (ast.Attribute, ast.Subscript)) and not is_self_attr(node):
        node = node.value
    return node


def _set_before_read(fn: ast.FunctionDef, attrs: set) -> set:
    """The attributes among `attrs` that `fn` sets in a top-level statement before any statement reads them (SincNet's
    `self.filters = ...` then `F.conv1d(x, self.filters)`): each call reads its own value."""
    fresh, seen = set(), set()
    for stmt in fn.body:
        read = {n.attr for n in ast.walk(stmt) if is_self_attr(n) and isinstance(n.ctx, ast.Load)}
        seen |= read & attrs - fresh
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and is_self_attr(stmt.targets[0]):
            name = stmt.targets[0].attr
            if name in attrs and name not in seen and name not in read:
                fresh.add(name)
    return fresh


def _set_layer(stmt, add_child: str | None) -> tuple[str | None, ast.expr | None]:
    """(name, value) of `self.<name> = <value>` or `self.<add_child>("<name>", <value>)`, else (None, None)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and is_self_attr(stmt.targets[0]):
        return stmt.targets[0].attr, stmt.value
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if isinstance(call, ast.Call) and is_self_attr(call.func) and call.func.attr == add_child and \
            len(call.args) == 2 and isinstance(known(call.args[0]), str):
        return known(call.args[0]), call.args[1]
    return None, None


def _passed_numbers(info: ClassInfo, method: str, param: str) -> bool:
    """Whether every call of the class's method `method` passes `param` a Python value: a literal, an attribute
    of the class holding one, the parameter itself in a recursive call, arithmetic on those."""
    def number(node, recursive: bool) -> bool:
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return recursive and node.id == param
        if isinstance(node, ast.BinOp):
            return number(node.left, recursive) and number(node.right, recursive)
        if isinstance(node, ast.UnaryOp):
            return number(node.operand, recursive)
        return is_self_attr(node) and info.attrs.get(node.attr) == PYTHON
    function = info.methods[method]
    params = [a.arg for a in function.args.args[1:]]
    passed = []
    for caller in info.methods.values():
        for call in (n for n in ast.walk(caller) if isinstance(n, ast.Call) and is_self_attr(n.func)
                     and n.func.attr == method):
            given = dict(zip(params, call.args)) | {k.arg: k.value for k in call.keywords}
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return False
            passed.append(param in given and number(given[param], caller is function))
    return bool(passed) and all(passed)


#: tensor methods scaling an initial value by a number, or filling it (see _initial_value)
SCALING_METHODS = frozenset({"mul", "mul_", "div", "div_", "fill_"})
#: context managers that change nothing a model computes, kept as written
NEUTRAL_CONTEXTS = frozenset({"warnings.catch_warnings"})

SEQUENTIAL_LAYERS = "__sequential_layers__"


class _SequentialLayers(ast.NodeTransformer):
    """In a sequential container's subclass, its layers as the source reads them (`for layer in self`,
    `self[0]`, `len(self)`; Keras' and NNX's `self.layers`) become one name, which each target writes its way."""

    def __init__(self, attribute: str | None):
        self.attribute = attribute

    def _layers(self, node):
        if self.attribute is None and is_self(node) or self.attribute is not None and is_self_attr(node) and \
                node.attr == self.attribute:
            return ast.copy_location(ast.Name(SEQUENTIAL_LAYERS, ast.Load()), node)
        return node

    def visit_Attribute(self, node):
        return self._layers(self.generic_visit(node))

    def visit_For(self, node):
        self.generic_visit(node)
        node.iter = self._layers(node.iter)
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        node.value = self._layers(node.value)
        if isinstance(node.value, ast.Name) and node.value.id == SEQUENTIAL_LAYERS:
            node.value.sliced = isinstance(node.slice, ast.Slice)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("len", "enumerate", "reversed", "list", "iter"):
            node.args = [self._layers(a) for a in node.args]
        return node


class _Rename(ast.NodeTransformer):
    """Local names that the translation's imports take (`layers`, `ops`) and attribute names the target's
    layer class owns (`self.weights`) get a trailing underscore, everywhere in the module."""

    def __init__(self, names, attributes, imported):
        self.names, self.attributes, self.imported = frozenset(names), frozenset(attributes), frozenset(imported)

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(node.id + "_", node.ctx), node) if node.id in self.names else node

    def visit_arg(self, node):
        if node.arg in self.names:
            node.arg += "_"
        return self.generic_visit(node)

    def visit_FunctionDef(self, node, method=False):
        """A module's own function or class named as a helper the target writes (`channel_shuffle`); a method
        keeps its name (it is read as an attribute)."""
        if node.name in self.names and not method:
            node.name += "_"
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.ClassDef) and isinstance(child, ast.FunctionDef):
                self.visit_FunctionDef(child, method=True)
            else:
                self.visit(child)
        return node

    visit_ClassDef = visit_FunctionDef

    def visit_Call(self, node):
        """Keywords naming a renamed parameter, in calls of the module's own classes and functions."""
        self.generic_visit(node)
        root = node.func
        while isinstance(root, (ast.Attribute, ast.Call)):
            root = root.value if isinstance(root, ast.Attribute) else root.func
        if not (isinstance(root, ast.Name) and (root.id in self.imported or root.id != "super" and
                                                root.id in vars(builtins))):  # `dict(layers=2)` keeps its keys
            for k in node.keywords:
                if k.arg in self.names:
                    k.arg += "_"
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in self.attributes and is_self(node.value):
            node.attr += "_"
        return node

    def visit_Import(self, node):
        return node

    def visit_ImportFrom(self, node):
        return node
