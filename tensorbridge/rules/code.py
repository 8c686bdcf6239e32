"""Code rows: how a framework's layer classes and tensor functions, as people write them in model code, read
into IR ops and are written back. The transpiler (`tensorbridge/transpile/`) reads them both ways.

A row names the source callable by its import path ("torch.nn.Conv2d", "keras.ops.concatenate",
"Tensor.view" for a tensor method), declares its signature (checked against the real one by the tests),
and converts between the callable's bound arguments and an `OpCall`: the IR op with its attributes
(named as in the op catalogue) whose values are `ast` expressions, so an argument that is a variable
of the user's code passes through unchanged. A converter that needs the argument's value (padding=1 is
"same" only for a 3x3 kernel at stride 1) asks `known()` and writes the general form when the value is not
a literal. A layer row also says how its weights map to the IR op's weights (`to_ir` / `from_ir`).
"""

from __future__ import annotations

import ast
import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tensorbridge.codegen import pyast as P

REQUIRED = object()
#: the dtypes model code names, as NumPy spells them (the code carries a dtype as its name)
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
NOT_LITERAL = object()


class Refused(Exception):
    """A row cannot express this call; the message is the reason shown to the user."""


@dataclass
class OpCall:
    """An IR op with its tensor inputs and attributes, all as `ast` expressions (or plain literals)."""

    op: str
    inputs: list = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    #: what the call returns when it differs from its row's (`torch.max(x, y)`: one tensor, not (values, indices))
    returns: str | None = None


@dataclass(frozen=True)
class Signature:
    """Parameters in order: (name, default), REQUIRED for none; `varargs` names a `*args` parameter, which the
    first `leading` parameters come before (those after it are keyword-only)."""

    params: tuple[tuple[str, object], ...]
    varargs: str | None = None
    leading: int | None = None
    #: a `**kwargs` parameter: the keywords no other parameter takes, as a dict
    varkw: str | None = None

    @classmethod
    def parse(cls, text: str) -> Signature:
        """"in_channels out_channels stride=1 bias=True *dims", "*size dtype=None" or "pattern **sizes" (defaults
        are Python literals)."""
        params, varargs, leading, varkw = [], None, None, None
        for item in text.split():
            if item.startswith("**"):
                varkw = item[2:]
            elif item.startswith("*"):
                varargs, leading = item[1:], len(params)
            elif "=" in item:
                name, default = item.split("=", 1)
                params.append((name, ast.literal_eval(default)))
            else:
                params.append((item, REQUIRED))
        return cls(tuple(params), varargs, leading, varkw)

    def names(self) -> list[str]:
        return [n for n, _ in self.params]

    def bind(self, call: ast.Call) -> dict:
        """Every argument of `call` by parameter name (defaults made explicit as literals); `varargs` as a
        list. Raises Refused when the call cannot be bound statically."""
        names = self.names()
        bound: dict = {}
        positional = list(call.args)
        if any(isinstance(a, ast.Starred) for a in positional):
            if self.varargs is None:
                raise Refused("a *args call whose arguments cannot be bound statically")
        if self.varargs is not None:
            fixed = [a for a in positional[:self.leading] if not isinstance(a, ast.Starred)]
            rest = positional[len(fixed):]
            bound[self.varargs] = rest
            positional = fixed
        if len(positional) > len(names):
            raise Refused(f"{len(positional)} positional arguments, the signature has {len(names)}")
        for name, arg in zip(names, positional):
            bound[name] = arg
        if self.varkw is not None:
            bound[self.varkw] = {}
        for kw in call.keywords:
            if kw.arg is None:
                raise Refused("a **kwargs call whose arguments cannot be bound statically")
            if kw.arg == self.varargs and not bound[self.varargs]:  # torch's `zeros(size=(2, 3))`: the one item
                bound[self.varargs] = [kw.value]
                continue
            if kw.arg not in names and self.varkw is not None:
                bound[self.varkw][kw.arg] = kw.value
                continue
            if kw.arg not in names:
                raise Refused(f"unknown keyword argument {kw.arg!r}")
            if kw.arg in bound:
                raise Refused(f"argument {kw.arg!r} given twice")
            bound[kw.arg] = kw.value
        for name, default in self.params:
            if name not in bound:
                if default is REQUIRED:
                    raise Refused(f"missing argument {name!r}")
                bound[name] = default
        return bound


@dataclass(frozen=True)
class LayerRow:
    """A layer class <-> one IR op. `read(args) -> OpCall` (source side); `write(opcall) -> ast.expr`, the
    constructor expression (target side). `to_ir(weights, attrs)` / `from_ir(weights, attrs)` carry the
    trained weights: framework parameter names <-> IR weight roles, arrays transformed as needed."""

    path: str
    op: str
    signature: Signature
    read: Callable | None = None
    write: Callable | None = None
    to_ir: Callable | None = None
    from_ir: Callable | None = None
    #: the argument that makes a call of the layer overwrite its input ("inplace")
    inplace: str | None = None
    #: arguments that take a layer the row wraps (Keras' Bidirectional): read by the source's rows into an OpCall
    layer_arguments: tuple = ()
    #: the arguments a call of the layer may pass, which its translation takes as they are (one input by default)
    call: Signature = Signature.parse("input")


@dataclass(frozen=True)
class FunctionRow:
    """A tensor function or method <-> one IR op: `read(args) -> OpCall`; `write(opcall) -> ast.expr`.
    `returns` is "tensor" or "python" (shape queries), for the transpiler's value tracking."""

    path: str
    op: str
    signature: Signature
    read: Callable | None = None
    write: Callable | None = None
    returns: str = "tensor"
    inplace: str | None = None


class WeightSource(ABC):
    """How `port_weights` (transpile/weights.py) reads the weights of a source framework's model instances."""

    @abstractmethod
    def owns(self, obj) -> bool:
        """Whether `obj` is a model instance of this framework."""

    @abstractmethod
    def layer_weights(self, layer) -> dict[str, np.ndarray]:
        """The weights of a layer that has a code row, by the names its row's `to_ir` reads."""

    @abstractmethod
    def members(self, obj) -> list | None:
        """The layers of a sequence container (Sequential, ModuleList, a list of layers), else None."""

    @abstractmethod
    def mapping(self, obj) -> dict | None:
        """The layers of a dict container by key, else None."""

    @abstractmethod
    def own_weights(self, obj) -> dict[str, np.ndarray]:
        """The weights a model class holds itself (not through a sublayer), by attribute name."""

    @abstractmethod
    def children(self, obj) -> dict:
        """The sublayers and containers a model class holds, by attribute name."""

    def class_path(self, obj) -> str:
        """The path of `obj`'s class, by which its code row is found."""
        return f"{type(obj).__module__}.{type(obj).__qualname__}"

    def weight_array(self, obj) -> np.ndarray | None:
        """`obj`'s values when it is a weight itself (a member of PyTorch's ParameterList), else None."""
        return None

    def weight_ids(self, obj) -> list[int]:
        """The identities of every weight `obj` and its sublayers hold, a weight held twice (tied) listed twice."""
        return []

    def layer_attrs(self, layer) -> dict:
        """What a layer's row's `to_ir` needs to know of its configuration (Flax's transpose_kernel), by name."""
        return {}


@dataclass(frozen=True)
class SourceSkeleton:
    """How model code of a framework is recognised when it is read: the class model classes derive from, the
    containers, the parameter class, weight-initialisation module, initial-value functions, tensor attributes."""

    module_classes: frozenset
    containers: dict  # path -> "sequential" | "list" | "dict"
    parameter_classes: dict  # path -> whether the weight it makes is trained by default
    init_module: str
    initializers: dict  # path -> "zeros" | "ones" | "normal" | "uniform"
    tensor_attributes: dict  # attribute name -> (tensor expression -> OpCall)
    #: every method name the framework's tensors have: one without a row is refused, never left as written
    tensor_methods: frozenset = frozenset()
    #: modules whose functions make initializer objects (`nnx.initializers.xavier_uniform()`): given to a layer
    #: they are left out, as initial values are (port_weights copies the trained weights) -> the distribution
    #: ("normal", "uniform", "zeros", "ones") an initializer named so draws an initial value from, by name
    initializer_modules: dict = field(default_factory=dict)
    #: paths naming the float32 dtype (the only dtype weights created in `__init__` are translated with)
    float_dtypes: frozenset = frozenset()
    #: the name of the method that computes the layer's output
    forward: str = "forward"
    #: the forward method's parameter that says whether it trains (Keras' `training`), None when the layer has a
    #: `self.training` attribute instead
    training_parameter: str | None = None
    #: functions that re-express a layer's weight and return the layer (weight_norm, spectral_norm), translated as
    #: the layer holding the weight they compute in inference: path -> (the signature their calls are bound with,
    #: the layer first; what training no longer does, said in the translation's docstring)
    reparametrizations: dict = field(default_factory=dict)
    #: paths of the framework's tensor class (`isinstance(x, torch.Tensor)` asks "is x a tensor")
    tensor_classes: frozenset = frozenset()
    #: paths of the class every layer of the source is an instance of (`isinstance(x, nn.Module)` asks "is x a
    #: layer"); empty when the source writes some layers as functions (NNX's activations)
    layer_classes: frozenset = frozenset()
    #: whether plain lists and dicts of layers assigned to attributes are tracked as sublayers (Keras)
    plain_containers: bool = False
    #: the `self.<method>(...)` call that creates a weight in `__init__` (Keras' add_weight), if any
    weight_method: str | None = None
    #: layers made of other layers that model classes derive from (`class TransformerModel(nn.Transformer)`) ->
    #: the source of an `__init__` building what the layer holds from its parameters, with full paths
    #: (transpile/composite_subclass.py)
    composite_layers: dict = field(default_factory=dict)
    #: layer keyword arguments that name a function by a string -> the module whose functions they name
    #: (`activation=keras.activations.gelu` is `activation="gelu"`)
    named_functions: dict = field(default_factory=dict)
    #: the keys of a dict of arguments model code passes on to every layer it makes, which only place arrays or
    #: set their dtype (timm's `dd = {'device': device, 'dtype': dtype}`, `nn.Linear(..., **dd)`): left out
    factory_arguments: frozenset = frozenset()
    #: the `self.<method>(value)` call adding a training-time term to the model's losses (Keras' add_loss): left
    #: out with a note naming the value (it changes no output; the training loop adds it)
    loss_method: str | None = None
    #: the method that creates weights from the input shape on the first call (Keras' build), if any
    build_method: str | None = None
    #: methods that serialise or describe the layer, not what it computes: left out of the translation
    config_methods: frozenset = frozenset({"extra_repr", "__repr__"})
    #: how `port_weights` reads the weights of the source's instances
    weights: WeightSource | None = None
    #: top-level packages the framework's model code imports besides its own (Flax code calls `jax.numpy`)
    roots: frozenset = frozenset()
    #: the constructor argument every layer takes and the model passes on (NNX's `rngs`): dropped everywhere
    init_argument: str | None = None
    #: whether random initial values take a random key first (`jax.random.normal(key, shape)`)
    random_key: bool = False
    #: keyword arguments of a layer call that switch training behaviour (NNX's `deterministic`): refused, but for
    #: a dropout's given by a flag the function takes (`deterministic=not train`), which switches the target's too
    #: (see SWITCHED_PER_CALL)
    mode_arguments: frozenset = frozenset()
    #: keyword arguments of a layer call that change nothing at the values listed (NNX attention's `decode=False`)
    #: -> those values: left out
    neutral_call_arguments: dict = field(default_factory=dict)
    #: calls that only mark a value as the layer's data (`nnx.data(...)`): the value itself, a plain container
    data_wrappers: frozenset = frozenset()
    #: whether every layer's constructor takes the base layer's options as keywords (Keras' name, dtype): a
    #: subclass of a layer passing on `**kwargs` passes them to the base, not to the layer's own parameters
    base_options: bool = False
    #: the attribute of a weight holding its values, which `__init__` may set (`self.conv.weight.data = ...`):
    #: initialisation, replaced by the trained weights port_weights copies
    weight_values: str | None = None
    #: dicts of activation layers by name that model code indexes (transformers' `ACT2FN[config.hidden_act]`):
    #: path -> {name: (layer path, constructor keywords)}
    activation_tables: dict = field(default_factory=dict)
    #: the layer base class's method adding a sublayer by name (`self.add_module(name, layer)`): setattr
    add_child: str | None = None
    #: IR op -> {a layer method multiplying its argument by the transpose of one of the layer's weights: that
    #: weight's IR role} (NNX's `Embed.attend`, the output projection of a tied embedding)
    weight_products: dict = field(default_factory=dict)
    #: attributes of a tensor that autograd keeps (`x.requires_grad`, `x.grad`): refused on any value read
    autograd_attributes: frozenset = frozenset()
    #: the method adding a layer at the end of a sequential container (`add`, `append`)
    sequential_append: str | None = None
    #: the attribute of a sequential container holding its layers (`self.layers`); None: the container itself
    #: iterates and indexes them (`for layer in self`)
    sequential_layers: str | None = None
    #: methods of the framework's layer base class (`self.parameters()`, `self.modules()`): refused when called
    #: from model code (weight initialisation and the freezing loop excepted)
    base_methods: frozenset = frozenset()
    #: a layer's method listing its weights and each weight's flag saying it trains (`for p in
    #: self.backbone.parameters(): p.requires_grad = False`): written with the target's flag for a whole layer
    parameters_method: str | None = None
    trainable_attribute: str | None = None
    #: classes whose instances a layer keeps for training only (Keras' metrics, a seed generator): left out of
    #: `__init__`, refused where what the layer computes reads them (random draws ignore their seed argument)
    bookkeeping: frozenset = frozenset()
    #: functions calling their first argument on the next n positional arguments (None: all of them), which they
    #: compute -> n: gradient checkpointing (`checkpoint(block, x)`, which computes again while training to save
    #: memory) and `nn.parallel.data_parallel(layer, x, ...)` (on several devices; the same in evaluation mode, while
    #: training a batch norm normalises each device's share of the batch): the call itself
    appliers: dict = field(default_factory=dict)
    #: decorators that change how a function is compiled or exported, never what it computes: left out (noted)
    neutral_decorators: frozenset = frozenset()
    #: calls without arguments asking about compilation or export (`torch.jit.is_scripting()`) -> their value when
    #: the translation runs (eagerly, never scripted nor exported); `torch.cuda.is_available()` is False, as the
    #: devices the source picks with it are left out (targets place arrays themselves)
    constant_calls: dict = field(default_factory=dict)
    #: attributes of the layer base class holding one value under the framework's defaults (Keras'
    #: `self.compute_dtype`) -> that value
    constant_attributes: dict = field(default_factory=dict)
    #: decorators after which a function's results carry no gradient (`torch.no_grad()`): its tensors returned
    #: with gradients stopped
    no_grad_decorators: frozenset = frozenset()
    #: classes whose instances name a device (`torch.device`): a module-level one is not kept, as targets that
    #: place arrays themselves write every device as None
    device_classes: frozenset = frozenset()
    #: functions that are an assert statement (`torch._assert(condition, message)`): written as one
    assert_functions: frozenset = frozenset()
    #: layer classes whose call is a function of their weight alone, so a layer tied to another's weight by
    #: assignment is written as that function (transpile/weight_tying.py) -> (function path, {option: the value it
    #: must have}, the layer's other weights, passed after the tied one unless its option says it has none)
    tied_layers: dict = field(default_factory=dict)
    #: paths naming a constant (`tf.newaxis`) -> its value
    constants: dict = field(default_factory=dict)
    #: paths naming a dtype (`torch.long`) -> its name ("int64"), which the code carries as a string literal
    dtypes: dict = field(default_factory=dict)
    #: the fields of the named tuples some functions return (`x.max(dim).values`) -> their positions
    tuple_fields: dict = field(default_factory=dict)


class WeightPort(ABC):
    """How `port_weights` (transpile/weights.py) reaches the weights of a target framework's model instances."""

    @abstractmethod
    def owns(self, obj) -> bool:
        """Whether `obj` is a model instance of this framework."""

    @abstractmethod
    def variables(self, dst) -> dict[int, str]:
        """id(variable) -> its path, for every weight `dst` holds."""

    @abstractmethod
    def members(self, dst) -> list | None:
        """The layers of a container (the translation of a Sequential or ModuleList), else None."""

    @abstractmethod
    def holders(self, dst) -> list:
        """The layers inside `dst` that hold weights (itself, or the one layer of a wrapper)."""

    def unbuilt_hint(self, layer) -> str:
        """Why `layer` may lack a weight it will have (said after the error), or ""."""
        return ""

    @abstractmethod
    def is_weight(self, obj) -> bool:
        """Whether `obj` is one of the framework's weight variables."""

    @abstractmethod
    def shape(self, variable) -> tuple:
        """The shape of a weight variable."""

    @abstractmethod
    def assign(self, variable, array: np.ndarray) -> None:
        """Set a weight variable to `array` (cast to the variable's dtype)."""


@dataclass(frozen=True)
class TargetSkeleton:
    """How model code of a framework is written: the layer base class, the forward method's name, the
    imports, and builders for a sequential container and a weight created in `__init__`."""

    layer_base: str
    forward: str
    imports: tuple
    sequential: Callable  # list expression -> ast.expr (None: an empty container layers are added to later)
    add_weight: Callable  # (shape expr, initializer kind, scale expr or None, trainable, name) -> ast.expr
    #: module-level definitions the written code may refer to by name: name -> () -> ast.stmt
    helpers: dict = field(default_factory=dict)
    #: list / dict expression -> the target's container of layers (Keras tracks plain ones)
    module_list: Callable = staticmethod(lambda items: items)
    module_dict: Callable = staticmethod(lambda items: items)
    #: the attribute of a sequential container holding its layers; None: the container itself
    sequential_layers: str | None = None
    #: a one-argument lambda -> a layer computing it (Keras' Lambda layer; NNX holds the function), for an op with
    #: a function but no layer of the target; None where the target has no such layer
    function_layer: Callable | None = None
    #: `self.<layer> = None` written where the attribute may later hold a layer (NNX: `nnx.data(None)`)
    empty_layer: Callable = staticmethod(lambda none: none)
    #: an array set on an attribute that held a Python value before (NNX: `nnx.data(...)`, as NNX keeps the first
    #: kind of value an attribute holds)
    array_data: Callable = staticmethod(lambda value: value)
    #: a model class's name -> the keywords its `__init__` passes the base class's (Keras: a valid layer name
    #: for a class named with a leading underscore, which Keras' automatic name keeps and TensorFlow's name scopes
    #: refuse)
    base_init_keywords: Callable = staticmethod(lambda cls_name: [])
    #: (name, annotation) of a keyword-only argument every model class's `__init__` takes and passes on to each
    #: layer it builds (NNX's `rngs`), or None
    init_argument: tuple[str, str] | None = None
    #: how the forward method reads whether it trains: "argument" (Keras passes `training`), "attribute"
    #: (`self.training`, PyTorch), "deterministic" (NNX: `not self.deterministic`, the attribute model.train() and
    #: model.eval() set, False until then as a class attribute), None (refused)
    training: str | None = "argument"
    #: (the held layer, its code op or None for a model class of the module, the call's inputs, a training flag)
    #: -> the layer's computation switched by the flag, for a target whose layers follow the model's mode only
    #: (PyTorch: `F.dropout(x, layer.p, training=flag)`, `in_mode(layer, flag, x)`), or None where it cannot be
    #: written; None for targets whose layers take the flag
    training_call: Callable | None = None
    #: whether layers take only tensors (or None) as positional arguments after the first (Keras)
    tensors_first: bool = False
    #: the function written for `copy.deepcopy` where the framework's own does not copy layers of the module's
    #: classes (Keras copies through registered configs), or None
    deep_copy: str | None = None
    #: a layer's attribute saying whether its weights train (Keras' `trainable`), or None; what else it changes
    trainable_attribute: str | None = None
    trainable_note: str = ""
    #: whether the framework runs the forward method on symbolic values to build a model (Keras): a tensor the
    #: forward pass keeps on the layer and reads back later would be out of scope (refused)
    traced_forward: bool = False
    #: the object the written code draws random numbers from (NNX: `self.rngs`, kept by `__init__` from the
    #: argument in `init_argument`), or None when the target's random functions need none
    random_source: str | None = None
    #: how `port_weights` reaches the weights of the written classes' instances
    port: WeightPort | None = None
    #: names the written code's imports take; the source's own uses of them are renamed
    reserved_names: frozenset = frozenset()
    #: attributes the target's layer class owns (`weights`); a model's own attribute of that name is renamed
    reserved_attributes: frozenset = frozenset()
    #: how a layer that creates its weights from its inputs' shapes on the first call (Keras' `build`) is written:
    #: (class bases, class body, the translated build method, {its shape parameter: the forward parameter}) ->
    #: the class body; None when the target has no such layer
    first_call: Callable | None = None
    #: (a layer attribute `self.x`, its OpCall) -> the statement that creates the layer's weights in `__init__`,
    #: for a layer whose weights the code reads before or without calling it (Keras builds layers when first
    #: called); raises Refused when its sizes are unknown; None for targets whose layers are built when made
    build_layer: Callable | None = None
    #: helper classes that hold the layer they wrap as `.layer` (ChannelsLast, Lazy)
    wrappers: frozenset = frozenset()
    #: (layer, {"kernel" | "bias": regularizer expr}) -> the layer whose weights the source's regularizers
    #: penalise in the training loss (Keras' kernel_regularizer=...), or None when the target has no way to say it
    penalized: Callable | None = None
    #: a weight attribute (`self.w`) as a plain tensor of its value, for a library function that takes tensors
    #: only (einops): Keras' `self.w.value`, NNX's `self.w[...]`
    weight_value: Callable = staticmethod(lambda weight: weight)
    #: a Python number as the tensor a tensor function needs (`torch.sqrt(torch.as_tensor(2.0))`), or None when the
    #: target's functions take numbers
    scalar_tensor: Callable | None = None
    #: the code table writing the tensor code that runs in `__init__` (NumPy's, for targets whose tensors are not
    #: written in place: rules/numpy_constants.py), or None to write it as the forward's
    init_tensors: object | None = None
    #: (a value computed in `__init__`, by `init_tensors` or NumPy's own code, trainable, name) -> the weight holding
    #: it (a buffer or parameter the source computes: `self.register_buffer("pe", pe)`, `keras.Variable(index)`)
    constant_weight: Callable | None = None
    #: a value computed in `__init__` by `init_tensors` -> the target's tensor of it (a plain attribute)
    constant: Callable | None = None
    #: (an ast operator, left, right) -> the arithmetic written with functions that promote an integer tensor with a
    #: float as PyTorch does (Keras' `ops.multiply`: TensorFlow's operators refuse int32 * float), or None
    promoting_arithmetic: Callable | None = None
    #: a value -> the target's test of whether it is a tensor (`isinstance(x, torch.Tensor)`, `ops.is_tensor(x)`)
    is_tensor: Callable | None = None
    #: (tensor expr, index expr of slices, integers and an Ellipsis, value expr) -> the tensor with the indexed part
    #: replaced (PyTorch's in-place `x[1:, :k] = v`, written without changing x), or None where not written
    slice_update: Callable | None = None
    #: a NumPy array the source keeps as an attribute -> the target's tensor of it (PyTorch's tensors do not take
    #: part in arithmetic with arrays), or None where arrays mix with the target's tensors
    array_constant: Callable | None = None
    #: a layer assigned in a class body -> the class attribute every instance reads it by (NNX: `staticmethod`,
    #: as its activation layers are functions, which an instance would otherwise bind as methods)
    class_layer: Callable = staticmethod(lambda layer: layer)
    #: the class every layer the target writes is an instance of (`isinstance(act, nn.Module)`), or None when some
    #: layers are written as functions (NNX's activations)
    layer_class: str | None = None
    #: (container expr, layer expr) -> the call adding the layer at the end of a sequential container
    sequential_append: Callable = staticmethod(lambda container, layer: P.method(container, "append", layer))
    #: weight expr -> its items along the first axis, for a target whose weights do not iterate so (Keras' variables)
    unstack: Callable | None = None
    #: for a target without such a class: value expr -> the expression asking whether it is a layer as the target
    #: writes them (a module or a function)
    is_layer: Callable | None = None

    def attribute(self, name: str) -> str:
        """The translation's name for a source attribute `name`."""
        return name + "_" if name in self.reserved_attributes else name


class CodeTable:
    """A framework's code rows, by source path and by IR op."""

    def __init__(self, framework: str):
        self.framework = framework
        self.source: SourceSkeleton | None = None
        self.skeleton: TargetSkeleton | None = None
        self.layers: dict[str, LayerRow] = {}
        self.functions: dict[str, FunctionRow] = {}
        self.layer_writers: dict[str, LayerRow] = {}
        self.function_writers: dict[str, FunctionRow] = {}
        #: IR op -> {a layer's weight attribute: (its IR weight role, its layout: False the IR's, True transposed,
        #: "spatial_first" a convolution kernel's (*spatial, in, out) for the IR's (out, in, *spatial))},
        #: read both ways: a source's `self.embed.weight` is the target layer's attribute of the same role
        self.weight_attributes: dict[str, dict[str, tuple[str, bool | str]]] = {}
        #: IR op -> {a layer's configuration attribute: the IR attribute it holds}, read both ways: a source's
        #: `self.drop.p` is the target layer's attribute holding the same IR attribute (`self.drop.rate`)
        self.config_attributes: dict[str, dict[str, str]] = {}
        #: layer path -> {a setting the layer keeps as given: the rank of the tuple it keeps it as, or None}; a
        #: subclass of the layer reading one (`self.stride` in timm's Conv2dSame) keeps it itself (layer_subclass)
        self.layer_settings: dict[str, dict[str, int | None]] = {}

    def layer(self, path: str, op: str, signature: str, read=None, write=None, to_ir=None, from_ir=None,
              inplace=None, layer_arguments=(), call="input") -> LayerRow:
        row = LayerRow(path, op, Signature.parse(signature), read, write, to_ir, from_ir, inplace, layer_arguments,
                       Signature.parse(call))
        if read:
            self.layers[path] = row
        if write:
            assert op not in self.layer_writers, f"{self.framework}: two layer writers for {op}"
            self.layer_writers[op] = row
        return row

    def function(self, paths: str, op: str, signature: str, read=None, write=None, returns="tensor",
                 inplace=None) -> None:
        """Rows for each of the space-separated `paths` (aliases of one callable, e.g. "torch.relu
        torch.nn.functional.relu Tensor.relu"); the first path is the one written back."""
        for i, path in enumerate(paths.split()):
            row = FunctionRow(path, op, Signature.parse(signature), read, write if i == 0 else None, returns,
                              inplace)
            if read:
                self.functions[path] = row
            if write and i == 0:
                assert op not in self.function_writers, f"{self.framework}: two function writers for {op}"
                self.function_writers[op] = row

    def reads(self, paths: str, op: str, signature: str, inputs: str, returns: str = "tensor", inplace=None,
              check=None, **attrs) -> None:
        """Function rows (see `function`) reading IR op `op`: `inputs` (space-separated argument names) are its
        inputs; attrs: IR name=argument name, or a constant value; `check(args)` refuses what it cannot express."""
        def read(a):
            if check:
                check(a)
            return OpCall(op, [a[n] for n in inputs.split()],
                          {ir: a[arg] if isinstance(arg, str) and arg in a else arg for ir, arg in attrs.items()})
        self.function(paths, op, signature, read=read, returns=returns, inplace=inplace)

    def write_layer(self, opcall: OpCall) -> ast.expr:
        """The constructor of the target's layer computing `opcall` (whose inputs follow the layer's input): its
        layer row's, else its function applied in a `function_layer`."""
        row = self.layer_writers.get(opcall.op)
        layer = row.write(opcall) if row is not None else self.write_function_layer(opcall)
        penalties = opcall.attrs.get("penalties")
        if penalties:
            if self.skeleton.penalized is None:
                raise Refused(f"{', '.join(penalties)} regularizers ({self.framework} has no such penalties)")
            layer = self.skeleton.penalized(layer, penalties)
        return layer

    def write_function_layer(self, opcall: OpCall) -> ast.expr:
        """`opcall` as the target's function applied in a `function_layer`."""
        function = self.function_writers.get(opcall.op)
        if function is None or self.skeleton.function_layer is None:
            raise Refused(f"{self.framework} has no layer for {opcall.op}")
        given = [*opcall.inputs, *opcall.attrs.values()]
        return self.skeleton.function_layer(layer_lambda(
            lambda x: function.write(OpCall(opcall.op, [x, *opcall.inputs], opcall.attrs)), given))

    def writes(self, op: str, fn: str):
        """Decorator: the decorated `write(opcall) -> ast.expr` writes IR op `op` (as a call of `fn`)."""
        def register(write):
            self.function(fn, op, "", write=write)
            return write
        return register

    def writes_call(self, op: str, fn: str, *attr_order: str, **keyword_attrs: str) -> None:
        """IR op `op` written as `fn(*inputs, *attrs in attr_order, keyword=attr ...)`."""
        def write(c):
            args = list(c.inputs) + [c.attrs[a] for a in attr_order]
            return P.call(fn, *args, **{k: c.attrs[a] for k, a in keyword_attrs.items()})
        self.writes(op, fn)(write)


#: the code ops of layers whose training behaviour the translation switches per call (NNX's `deterministic=not
#: train`, Keras' `training=train`: see TargetSkeleton.training_call)
SWITCHED_PER_CALL = frozenset({"Dropout", "BatchNormalization"})

#: code ops whose first input may be a Python number the target makes a tensor first (`ops.cast(self.scale,
#: q.dtype)` -> `torch.as_tensor(self.scale).to(q.dtype)`)
NUMBER_FIRST = frozenset({"Cast"})

#: comparisons and logical operators of model code: IR op -> the NumPy-style name (keras.ops, jax.numpy) and
#: torch's; NotEqual is a code op (the IR writes Not(Equal))
COMPARISONS = {"Equal": ("equal", "eq"), "NotEqual": ("not_equal", "ne"), "Greater": ("greater", "gt"),
               "GreaterOrEqual": ("greater_equal", "ge"), "Less": ("less", "lt"), "LessOrEqual": ("less_equal", "le"),
               "And": ("logical_and", "logical_and"), "Or": ("logical_or", "logical_or")}


# -- what converters share ---------------------------------------------------------------------------
class Renamed:
    """Weight maps that only rename: a framework's weight names <-> the IR op's weight roles (`to_ir` /
    `from_ir` of a layer row); a weight the layer lacks (no bias) stays absent."""

    def __init__(self, **to_ir: str):
        self.names = to_ir
        self.back = {role: name for name, role in to_ir.items()}

    def to_ir(self, weights: dict, attrs) -> dict:
        return {self.names[n]: v for n, v in weights.items() if n in self.names}

    def from_ir(self, weights: dict, attrs) -> dict:
        return {self.back[r]: v for r, v in weights.items() if r in self.back}


def with_activation(table: CodeTable, layer: ast.expr, attrs, sequential: Callable) -> ast.expr:
    """`layer` followed by the activation op the source fuses into it (Keras' `activation=`), in the target's
    sequential container (`sequential(*layers)`)."""
    act = attrs.get("activation")
    if act is None:
        return layer
    writer = table.layer_writers.get(act.op)
    if writer is None:
        raise Refused(f"no {table.framework} layer for the fused activation {act.op}")
    return sequential(layer, writer.write(act))


#: Python's own types (`isinstance(size, int)`), never bound as a made layer's values
BUILTIN_TYPES = frozenset(n for n, v in vars(builtins).items() if isinstance(v, type))
#: the names written code reads modules by (its imports' and the common ones'), never bound as a layer's values
MODULE_NAMES = frozenset({"math", "np", "jnp", "jax", "ops", "keras", "layers", "torch", "nn", "F", "nnx", "einops",
                          "functools", "operator", "itertools"})


def layer_lambda(make: Callable[[ast.expr], ast.expr], given: list) -> ast.Lambda:
    """`lambda x, v=v: make(x)` for a layer made from the expressions `given`: its parameter named to hide none of
    their names, and the variables they read bound when the layer is made (a lambda reads a name when it runs, and a
    loop making layers, PSPNet's bins or `cfg.size` for each `cfg`, has moved it on by then); not `self`, Python's
    types and functions, nor a module read through (`math.ceil(...)`)."""
    given = [v for v in given if isinstance(v, ast.AST)]
    used = {n.id for v in given for n in ast.walk(v) if isinstance(n, ast.Name)}
    param = next(p for p in ("x", "inputs", "x_", "inputs_") if p not in used)
    modules = {n.value.id for v in given for n in ast.walk(v) if isinstance(n, ast.Attribute) and
               isinstance(n.value, ast.Name) and n.value.id in MODULE_NAMES}
    called = {n.func.id for v in given for n in ast.walk(v) if isinstance(n, ast.Call) and
              isinstance(n.func, ast.Name) and n.func.id in vars(builtins)}
    bound = sorted(used - modules - called - BUILTIN_TYPES - {"self"})
    made = P.lambda_([param, *bound], make(P.name(param)))
    made.args.defaults = [P.name(n) for n in bound]
    return made


def split_cuts(sizes) -> list | None:
    """The indices where NumPy's split cuts for parts of the given `sizes` (an ast list or tuple display, its
    items numbers or expressions: `[self.dim, self.dim, levels + 1]`), else None (a variable, or a -1 part)."""
    if not isinstance(sizes, (ast.List, ast.Tuple)) or any(known(s) == -1 for s in sizes.elts):
        return None
    cuts, total = [], None
    for size in sizes.elts[:-1]:
        total = size if total is None else ast.BinOp(total, ast.Add(), size)
        cuts.append(known(total) if isinstance(known(total), int) else total)
    return cuts


def write_matmul(table: CodeTable, fn: str) -> None:
    """MatMul written as `fn(a, b)`; a factor marked `transpose_a` / `transpose_b` (TensorFlow's tf.matmul) is
    swapped over its last two axes first, with `table`'s SwapAxes."""
    def write(c):
        factors = [table.function_writers["SwapAxes"].write(OpCall("SwapAxes", [x], {"axis1": -2, "axis2": -1}))
                   if c.attrs.get(flag) else x for x, flag in zip(c.inputs, ("transpose_a", "transpose_b"))]
        return P.call(fn, *factors)
    table.writes("MatMul", fn)(write)


def transposed_product(table: CodeTable, x: ast.expr, weight: ast.expr) -> ast.expr:
    """`x` times the transpose of the 2-D `weight`, written with `table`'s functions (NNX's `Embed.attend`)."""
    swapped = table.function_writers["SwapAxes"].write(OpCall("SwapAxes", [weight], {"axis1": 0, "axis2": 1}))
    return table.function_writers["MatMul"].write(OpCall("MatMul", [x, swapped]))


def l1l2_helper(ns: str) -> Callable[[], list[ast.stmt]]:
    """The `L1L2` helper class over namespace `ns` (torch, jnp): a Keras regularizer as the penalty it computes."""
    return definition(
        "class L1L2:\n"
        "    \"\"\"A Keras weight regularizer: the penalty l1 * sum(|w|) + l2 * sum(w ** 2).\"\"\"\n\n"
        "    def __init__(self, l1=0.0, l2=0.0):\n"
        "        self.l1 = l1\n"
        "        self.l2 = l2\n\n"
        "    def __call__(self, weight):\n"
        f"        return self.l1 * {ns}.abs(weight).sum() + self.l2 * {ns}.square(weight).sum()\n")


def definition(source: str) -> Callable[[], list[ast.stmt]]:
    """A helper class or function (or a class and the functions that go with it) written with a translation:
    () -> its parsed statements."""
    return lambda: ast.parse(source).body


def is_empty_literal(node) -> bool:
    """`[]` or `{}`, or `list()` / `dict()`."""
    return isinstance(node, ast.List) and not node.elts or isinstance(node, ast.Dict) and not node.keys or \
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "dict") and \
        not node.args and not node.keywords


def read_pad(a, x: str, widths: str, value: str, modes: dict) -> OpCall:
    """`ops.pad` / `tf.pad`: one (before, after) pair per axis, written out; `modes` maps theirs to NumPy's."""
    mode = known(a["mode"])
    if mode not in modes:
        raise Refused(f"mode={mode!r}" if mode is not NOT_LITERAL else "mode given by a variable")
    pairs_ = a[widths].elts if isinstance(a[widths], (ast.List, ast.Tuple)) else None
    if pairs_ is None or not all(isinstance(p, (ast.List, ast.Tuple)) and len(p.elts) == 2 for p in pairs_):
        raise Refused("pad widths given by a variable, or not one (before, after) pair per axis")
    return OpCall("Pad", [a[x]], {"trailing_pads": [ast.List(list(p.elts), ast.Load()) for p in pairs_],
                                  "value": a[value] if known(a[value]) is not None else 0.0, "mode": modes[mode]})


def range_bounds(attrs) -> list:
    """The positional (start, stop[, step]) of an arange (NumPy's, torch's) for a Range op's attributes, which
    read as NumPy-style arange(start, stop=None, step=None): one bound alone is the stop."""
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    bounds = [start] if known(stop) is None else [start, stop]
    if known(step) is not None and known(step) != 1:
        bounds = bounds + [step] if len(bounds) == 2 else [0, start, step]
    return bounds


def dtype_name(value):
    """A dtype argument's name, None when not given; Refused when it is neither."""
    name = known(value)
    if name is not None and name not in DTYPE_NAMES:
        raise Refused("dtype given by a variable or not a dtype")
    return name


def known(value):
    """The Python value of a literal argument (an `ast` literal or a plain value), else NOT_LITERAL."""
    if not isinstance(value, ast.AST):
        return value
    try:
        return ast.literal_eval(value)
    except ValueError:
        return NOT_LITERAL


def mark_held(node: ast.expr, what: str) -> ast.expr:
    """Mark an argument the translation knows holds a dtype, a device, a tensor or a number (`what`: a name bound to
    `x.dtype`, `x.device`, `k // 2`), for rows whose parameter takes several kinds of value (`x.to(input_dtype)`,
    `x.to(device)`, a pad's widths: one number or a tuple)."""
    setattr(node, f"holds_{what}", True)
    return node


def holds_dtype(node) -> bool:
    """Whether `node` is a dtype: marked by the translation, or another tensor's `.dtype`."""
    return getattr(node, "holds_dtype", False) or isinstance(node, ast.Attribute) and node.attr == "dtype"


def holds_number(node) -> bool:
    """Whether `node` is a Python number: a literal one, or marked by the translation (`kernel_size // 2`)."""
    return getattr(node, "holds_number", False) or isinstance(known(node), (int, float)) and \
        not isinstance(known(node), bool)


def holds_tensor(node) -> bool:
    """Whether `node` is a tensor, as the translation knows (marked on the arguments of a call)."""
    return getattr(node, "holds_tensor", False)


def holds_device(node) -> bool:
    """Whether `node` is a device: marked by the translation (a device the target does not name: None)."""
    return getattr(node, "holds_device", False)


def shrink_kind(c: OpCall) -> str | None:
    """"hard" (PyTorch's hardshrink: bias 0) or "soft" (softshrink: bias lambd) for a Shrink call, else None."""
    lambd, bias = c.attrs["lambd"], c.attrs["bias"]
    if known(bias) == 0:
        return "hard"
    if bias is lambd or known(bias) == known(lambd) != NOT_LITERAL:
        return "soft"
    return None


def only(args: dict, **supported) -> None:
    """Refuse a call whose arguments differ from the values the translation supports (name=value)."""
    for name, value in supported.items():
        v = known(args[name])
        if v is NOT_LITERAL or v != value:
            given = ast.unparse(args[name]) if isinstance(args[name], ast.AST) else repr(args[name])
            raise Refused(f"{name}={given} (only {value!r} is translated)")


def required(args: dict, *names) -> None:
    """Refuse a call that leaves out arguments the translation needs (NumPy's one-argument `where`)."""
    for name in names:
        if known(args[name]) is None:
            raise Refused(f"{name} is required by the translation")


def held_layers(attributes: dict, is_layer: Callable) -> dict:
    """The attributes that hold a layer, or a non-empty list, tuple or dict of layers (for WeightSource.children)."""
    def holds(v):
        if isinstance(v, dict):
            v = list(v.values())
        return is_layer(v) or isinstance(v, (list, tuple)) and v and all(is_layer(i) for i in v)

    return {n: v for n, v in attributes.items() if holds(v)}


def value_of(v):
    """A literal argument's Python value, else the expression itself (for writing it back)."""
    return known(v) if known(v) is not NOT_LITERAL else v


def norm_offset(attrs: dict):
    """Whether a norm learns an offset, from the IR's `affine` and `bias` flags (PyTorch's elementwise_affine and
    bias: an offset only with both): a bool, or the expression of the variables that say it."""
    affine, bias = value_of(attrs.get("affine", True)), value_of(attrs.get("bias", True))
    if affine is False or bias is False:
        return False
    if bias is True:
        return affine
    return bias if affine is True else ast.BoolOp(ast.And(), [affine, bias])


def read_gelu(a) -> OpCall:
    """A GELU call whose `approximate` is a bool (Keras, JAX) as the IR's "tanh" / "none"."""
    approximate = known(a["approximate"])
    if approximate not in (True, False):
        raise Refused("approximate given by a variable")
    return OpCall("Gelu", [a["x"]], {"approximate": "tanh" if approximate else "none"})


def softmax_axis(call: OpCall):
    """The axis of a (log-)softmax call; Refused when the source leaves it to PyTorch's rank-based default."""
    if known(call.attrs["axis"]) is None:
        raise Refused("softmax without dim (PyTorch picks the axis from the rank at run time)")
    return call.attrs["axis"]


def cast_first(c: OpCall, cast: Callable) -> ast.expr:
    """The op's input, cast first when the op carries a dtype to compute in (`softmax(x, dtype=...)`): `cast(x,
    dtype)` is the target's cast."""
    dtype = c.attrs.get("dtype")
    return c.inputs[0] if known(dtype) is None else cast(c.inputs[0], dtype)


def pairs(value, n: int):
    """An int-or-tuple argument as an n-tuple when it is a literal, else NOT_LITERAL."""
    v = known(value)
    if v is NOT_LITERAL:
        return NOT_LITERAL
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,) * n
    if isinstance(v, (list, tuple)) and len(v) == n and all(isinstance(i, int) for i in v):
        return tuple(v)
    return NOT_LITERAL


def is_default(value, default) -> bool:
    """Whether an argument is literally its default (an expression never is)."""
    v = known(value)
    return v is not NOT_LITERAL and type(v) is type(default) and v == default


def keywords(**given_and_defaults) -> dict:
    """Keyword arguments to write: name=(value, default); those literally equal to the default are left out."""
    return {k: v for k, (v, d) in given_and_defaults.items() if not is_default(v, d)}


def changed(attrs: dict, defaults: dict) -> dict:
    """The attributes named in `defaults` (name -> default) as keyword arguments of the same names, those
    literally equal to their default left out."""
    return keywords(**{name: (value_of(attrs[name]), default) for name, default in defaults.items()})


#: IR ops whose result is a new tensor: an in-place method on it (`x.new_empty(shape).bernoulli_(p)`) changes
#: nothing else, so its out-of-place form computes the same
FRESH_TENSOR_OPS = frozenset({"ConstantOfShape", "ConstantLike", "Range", "RandomUniform", "RandomNormal",
                              "RandomUniformLike", "RandomNormalLike", "Bernoulli"})


#: IR ops whose result is an integer tensor when no dtype is given (arange of integers, arg-max indices)
INTEGER_RESULTS = frozenset({"ArgMax", "ArgMin"})


def makes_integers(opcall: OpCall) -> bool:
    """Whether the code op's result is an integer tensor (an arange of integers, arg-max indices, a cast to an
    integer type): arithmetic with a float promotes it in PyTorch, which some targets must write out."""
    if opcall.op in INTEGER_RESULTS:
        return True
    if opcall.op == "Range":
        bounds = [known(opcall.attrs[k]) for k in ("start", "stop", "step")]
        return known(opcall.attrs.get("dtype")) in (None, "int32", "int64") and \
            not any(isinstance(b, float) for b in bounds)
    return opcall.op == "Cast" and known(opcall.attrs["to"]) in ("int32", "int64")
