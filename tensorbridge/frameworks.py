"""The format registry: one line per format — extensions, loader, saver, verify runner.

Entry points are "module:attribute" strings so a framework is imported only when used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from tensorbridge.errors import ModelError


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]
    loader: str | None
    saver: str | None
    runner: str | None
    extra: str  # pip extra that provides the framework ("" = core)
    description: str
    #: "module:attribute" of the framework's registry (rules/core.Registry), read both ways
    rules: str | None = None
    #: the format is a folder (recognised by this file inside it) rather than a file
    folder_marker: str | None = None
    #: top-level package of the in-memory objects this format's loader takes
    object_package: str | None = None
    #: the package its runner needs ("" when it needs none beyond tensorbridge), or "module:function" returning
    #: why the runtime is missing (None: present) for a runtime that is not a Python package
    runtime: str = ""


FORMATS: tuple[Format, ...] = (
    Format("onnx", (".onnx",), "tensorbridge.frontends.onnx.importer:load",
           "tensorbridge.backends.onnx.exporter:export",
           "tensorbridge.verification.runners.onnxruntime:OnnxRuntimeRunner",
           "onnx", "ONNX model (onnxruntime runs it)", "tensorbridge.rules.onnx:REGISTRY", object_package="onnx",
           runtime="onnxruntime"),
    Format("tbir", (".tbir",), "tensorbridge.ir.serde:load", "tensorbridge.backends.tbir:save",
           "tensorbridge.verification.runners.reference:ReferenceRunner", "",
           "tensorbridge IR: graph JSON + safetensors weights (reference interpreter runs it)"),
    Format("torch", (".pt", ".pth"), "tensorbridge.frontends.torch.importer:load",
           "tensorbridge.backends.torch.codegen:save", "tensorbridge.verification.runners.torch:TorchModuleRunner",
           "torch", "PyTorch: an nn.Module in memory, or a generated code folder (model.py + weights.safetensors)",
           "tensorbridge.rules.torch:REGISTRY", folder_marker="weights.safetensors", object_package="torch",
           runtime="torch"),
    Format("torchscript", (".ts", ".torchscript", ".ptl"), "tensorbridge.frontends.torch.torchscript:load", None,
           "tensorbridge.verification.runners.torch:TorchScriptRunner", "torch",
           "TorchScript archive (torch.jit.save; recognised by content, whatever its extension)",
           "tensorbridge.rules.torch:REGISTRY", runtime="torch"),
    Format("pt2", (".pt2",), "tensorbridge.frontends.torch.importer:load", "tensorbridge.backends.torch.pt2:save",
           "tensorbridge.verification.runners.torch:ExportedProgramRunner", "torch",
           "torch.export program (.pt2)", "tensorbridge.rules.torch:REGISTRY", runtime="torch"),
    Format("keras", (".keras", ".h5"), "tensorbridge.frontends.keras.importer:load",
           "tensorbridge.backends.keras.codegen:save", "tensorbridge.verification.runners.tf:KerasRunner", "tf",
           "Keras 3: .keras/.h5, in memory, or a generated code folder (model.py + model.keras)",
           "tensorbridge.rules.keras:REGISTRY", folder_marker="model.keras", object_package="keras", runtime="keras"),
    Format("flax", (), "tensorbridge.frontends.jax.importer:load", "tensorbridge.backends.flax.codegen:save",
           "tensorbridge.verification.runners.jax:FlaxRunner", "jax",
           "Flax NNX / JAX: an nnx.Module or jittable function in memory, or a generated code folder "
           "(model.py + weights.safetensors)", "tensorbridge.rules.flax:REGISTRY",
           folder_marker="weights.safetensors", object_package="flax", runtime="flax"),
    Format("jaxexport", (".jaxexport",), "tensorbridge.frontends.jax.stablehlo:load", None,
           "tensorbridge.verification.runners.jax:JaxExportRunner", "jax",
           "serialized jax.export artifact (StableHLO; jax runs it)", "tensorbridge.rules.flax:REGISTRY",
           object_package="jax", runtime="jax"),
    Format("savedmodel", (".pb",), "tensorbridge.frontends.tf.importer:load", None,
           "tensorbridge.verification.runners.tf:tensorflow_runner", "tf",
           "TensorFlow SavedModel folder (or a frozen GraphDef .pb)", "tensorbridge.rules.tf:REGISTRY",
           folder_marker="saved_model.pb", runtime="tensorflow"),
    Format("tflite", (".tflite",), "tensorbridge.frontends.tflite.importer:load",
           "tensorbridge.backends.tflite.export:save", "tensorbridge.verification.runners.tf:TFLiteRunner", "tf",
           "TFLite / LiteRT flatbuffer (LiteRT runs it)", "tensorbridge.rules.tflite:REGISTRY",
           runtime="ai_edge_litert"),
    Format("darknet", (".cfg", ".weights"), "tensorbridge.frontends.darknet.importer:load",
           "tensorbridge.backends.darknet.writer:save", "tensorbridge.verification.runners.darknet:DarknetRunner", "",
           "Darknet: a .cfg with its .weights beside it (libdarknet runs it)", "tensorbridge.rules.darknet:REGISTRY",
           runtime="tensorbridge.verification.runners.darknet:missing"),
    Format("caffe", (".prototxt", ".caffemodel"), "tensorbridge.frontends.caffe.importer:load",
           "tensorbridge.backends.caffe.writer:save", "tensorbridge.verification.runners.caffe:CaffeRunner", "caffe",
           "Caffe: a .prototxt with its .caffemodel beside it (Caffe 1.0 runs it)", "tensorbridge.rules.caffe:REGISTRY",
           runtime="tensorbridge.verification.runners.caffe:missing"),
    Format("mxnet", ("-symbol.json", ".params"), "tensorbridge.frontends.mxnet.importer:load",
           "tensorbridge.backends.mxnet.writer:save", "tensorbridge.verification.runners.mxnet:MXNetRunner", "",
           "MXNet 1.x: a PREFIX-symbol.json with its PREFIX-NNNN.params beside it (Gluon export; MXNet 1.9 runs it)",
           "tensorbridge.rules.mxnet:REGISTRY", runtime="tensorbridge.verification.runners.mxnet:missing"),
    Format("paddle", (".pdmodel", ".pdiparams"), "tensorbridge.frontends.paddle.importer:load",
           "tensorbridge.backends.paddle.writer:save",
           "tensorbridge.verification.runners.paddle:PaddleRunner", "",
           "PaddlePaddle: a model.json (PIR, Paddle 3) or model.pdmodel (ProgramDesc) with its model.pdiparams "
           "beside it (paddle.inference runs it)", "tensorbridge.rules.paddle:REGISTRY",
           runtime="tensorbridge.verification.runners.paddle:missing"),
    Format("cntk", (".model", ".cntk", ".dnn"), "tensorbridge.frontends.cntk.importer:load", None,
           "tensorbridge.verification.runners.cntk:CNTKRunner", "cntk",
           "CNTK 2.x model file (Function.save; recognised by content; its ONNX export is read as ONNX; CNTK 2.7 runs "
           "it)", "tensorbridge.rules.cntk:REGISTRY", runtime="tensorbridge.verification.runners.cntk:missing"),
    Format("coreml", (".mlpackage", ".mlmodel"), "tensorbridge.frontends.coreml.importer:load",
           "tensorbridge.backends.coreml.writer:save", "tensorbridge.verification.runners.coreml:CoreMLRunner",
           "coreml", "Core ML: an .mlpackage (ML Program) or .mlmodel (neural network); Core ML runs only on Apple "
           "platforms, so verification runs the file read back in the reference interpreter",
           "tensorbridge.rules.coreml:REGISTRY", folder_marker="Manifest.json", runtime="coremltools"),
)


def by_name(name: str) -> Format:
    for f in FORMATS:
        if f.name == name.lower():
            return f
    raise ModelError(f"unknown format {name!r}; known formats: {', '.join(f.name for f in FORMATS)}")


def for_object(obj) -> Format:
    """The format whose loader takes this in-memory object (by the package of its classes)."""
    packages = {cls.__module__.split(".")[0] for cls in type(obj).__mro__}
    for f in FORMATS:
        if f.object_package in packages:
            return f
    raise ModelError(f"cannot load a {type(obj).__name__}: pass a model file, an onnx.ModelProto or a "
                     "torch.nn.Module")


def detect(path: str | Path, explicit: str | None = None, source: bool = True) -> Format:
    """The format named by `explicit`; else, for a `source`, the one its content says (a folder's marker file,
    a file's magic bytes or zip members); else the one its extension names."""
    if explicit:
        return by_name(explicit)
    from tensorbridge.formats.sniff import looks_like_onnx, sniff

    if source:
        if Path(path).is_dir():
            from tensorbridge.codegen.folder import signed_framework

            signed = signed_framework(Path(path))
            if signed in {f.name for f in FORMATS if f.folder_marker}:
                return by_name(signed)
        for f in FORMATS:
            if f.folder_marker and (Path(path) / f.folder_marker).is_file():
                return f
        found = sniff(path) if Path(path).is_file() else None
        if found:
            return by_name(found)
    name, suffix = Path(path).name.lower(), Path(path).suffix.lower()
    for f in FORMATS:
        if any(name.endswith(ext) for ext in f.extensions):
            return f
    if source and Path(path).is_file() and looks_like_onnx(path):
        return by_name("onnx")
    known = ", ".join(e for f in FORMATS for e in f.extensions)
    option = "--from / format=" if source else "--to / to="
    raise ModelError(f"cannot tell the format of {str(path)!r} from its content or its extension "
                     f"{suffix or '(none)'!r}; known extensions: {known} (or pass {option})")


def unrunnable(*formats: Format) -> list[str]:
    """"name (why)" for each of `formats` this machine cannot run, for saying a conversion went unverified."""
    reasons = []
    for fmt in formats:
        why = "tensorbridge has no runner for it" if fmt.runner is None else missing_runtime(fmt)
        if why:
            reasons.append(f"{fmt.name} ({why})")
    return reasons


def missing_runtime(fmt: Format) -> str | None:
    """Why this machine cannot run the format's models (None: it can)."""
    import importlib.util

    if not fmt.runtime:
        return None
    if ":" in fmt.runtime:
        return resolve(fmt.runtime)()
    if importlib.util.find_spec(fmt.runtime) is None:
        extra = f" (pip install 'tensorbridge[{fmt.extra}]')" if fmt.extra else ""
        return f"{fmt.runtime} is not installed{extra}"
    return None


def registry(fmt: Format):
    """The format's registry (None for the IR's own format, which holds every op)."""
    return resolve(fmt.rules) if fmt.rules else None


def resolve(entry: str):
    """Import "module:attribute" lazily, with a clear message when the extra is missing."""
    module, _, attr = entry.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as e:
        fmt = next((f for f in FORMATS if entry in (f.loader, f.saver, f.runner)), None)
        extra = f" (pip install 'tensorbridge[{fmt.extra}]')" if fmt and fmt.extra else ""
        raise ModelError(f"{e.name} is needed for this{extra}") from None



def layout_target(fmt: Format):
    """The layouts the format's backend runs layout-carrying ops in (the `LAYOUT` of its module)."""
    if fmt.saver is None:
        raise ModelError(f"tensorbridge cannot write {fmt.name} models")
    return resolve(f"{fmt.saver.partition(':')[0]}:LAYOUT")
