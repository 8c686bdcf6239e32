"""The `tensorbridge` command: convert, inspect, verify, ops.

Exit codes: 0 success, 1 verification failed, 2 bad input or unsupported model, 3 internal
error, 4 verification inconclusive (the outputs compared do not vary with the input). User
errors print one clear message (every blocker at once), without a traceback unless `--debug` is
given. Progress goes to stderr; results to stdout. The frameworks' own log lines (TensorFlow's
absl and oneDNN notices, Keras warnings) are silenced unless `--debug`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path

from tensorbridge import frameworks
from tensorbridge.errors import ModelError, TensorbridgeError, UnsupportedError
from tensorbridge.passes.pipeline import CHECK_ENV
from tensorbridge.transpile import TARGETS as TRANSPILE_TARGETS

EXIT_INCONCLUSIVE = 4


def _shapes(items: list[str] | None) -> dict[str, list] | None:
    """--input-shape NAME=d0,d1,...[:dtype] -> {name: dims}."""
    return _input_specs(items)[0]


def _dtypes(items: list[str] | None) -> dict[str, str] | None:
    """The dtypes given after the dims of --input-shape (NAME=1,16:int64) -> {name: dtype}."""
    return _input_specs(items)[1]


def _input_specs(items: list[str] | None) -> tuple[dict | None, dict | None]:
    if not items:
        return None, None
    shapes, kinds = {}, {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name:
            raise ModelError(f"--input-shape wants NAME=d0,d1,...[:dtype], got {item!r}")
        dims, _, dtype = spec.partition(":")
        if dtype:
            from tensorbridge.ir import dtypes

            try:
                kinds[name] = dtypes.name(dtypes.dtype(dtype))
            except Exception:  # noqa: BLE001
                raise ModelError(f"--input-shape {item!r}: unknown dtype {dtype!r}") from None
        shapes[name] = [int(d) if d.strip().lstrip("-").isdigit() else d.strip()
                        for d in (dims.split(",") if dims.strip() else ())]  # NAME=:int64 is a scalar
    return shapes, kinds or None


def _layout(args):
    """LayoutOptions from --layout/--io-layout/--pin-layout, or None when all are left at their defaults."""
    from tensorbridge.passes.layout import LayoutOptions

    pins = {}
    for item in args.pin_layout or []:
        name, sep, layout = item.rpartition("=")
        if not sep or not name:
            raise ModelError(f"--pin-layout wants TENSOR=NCHW or TENSOR=NHWC, got {item!r}")
        pins[name] = layout
    if args.layout is None and args.io_layout == "keep" and not pins:
        return None
    return LayoutOptions(layout=args.layout or "native", io_layout=args.io_layout, pins=pins)


def _layout_flags(parser) -> None:
    parser.add_argument("--layout", choices=["nchw", "nhwc", "auto"],
                        help="layout of convolutions, pools and norms (default: the target's native one; "
                             "auto: keep the source's where the target allows it)")
    parser.add_argument("--io-layout", choices=["keep", "target"], default="keep",
                        help="keep: the model takes and returns tensors as the source does (one transpose at each "
                             "image input/output); target: rank-4 image inputs/outputs change to the target layout")
    parser.add_argument("--pin-layout", action="append", metavar="TENSOR=NHWC",
                        help="hold one tensor (input, output or inside) in a given layout (repeatable)")


class _Progress:
    """One line per step on stderr with its duration (quiet with --quiet)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def step(self, text: str):
        progress = self

        class _Step:
            def __enter__(self):
                self.t = time.perf_counter()
                if not progress.quiet:
                    print(f"... {text}", file=sys.stderr, flush=True)

            def __exit__(self, *exc):
                if not progress.quiet and exc[0] is None:
                    print(f"    done in {time.perf_counter() - self.t:.2f}s", file=sys.stderr, flush=True)

        return _Step()


def _available_memory() -> int | None:
    """Bytes of memory the system can give without swapping (MemAvailable), None where /proc does not say."""
    try:
        with open("/proc/meminfo") as f:
            line = next(line for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) * 1024


def cmd_convert(args, progress: _Progress) -> int:
    import tensorbridge as tb

    shapes, kinds = _input_specs(args.input_shape)
    with progress.step(f"loading {args.src}"):
        graph = tb.load(args.src, format=args.from_format, input_shapes=shapes, input_dtypes=kinds)
    with progress.step(f"writing {args.output}"):
        options = {"fp16": True} if args.fp16 else {}
        if args.quant_format != "qdq":
            options["quant_format"] = args.quant_format
        if args.int_arithmetic != "source":
            options["int_arithmetic"] = args.int_arithmetic
        layout = _layout(args)
        if layout is not None:
            options["layout"] = layout
        try:
            tb.save(graph, args.output, to=args.to, **options)
        except UnsupportedError as e:
            if args.report:
                from tensorbridge.verification.html import write_report

                write_report(None, args.report, blockers=e.blockers)
                print(f"report: {args.report}", file=sys.stderr)
            raise
    print(f"converted {args.src} -> {args.output} ({len(graph.nodes)} nodes, "
          f"{graph.weight_bytes() / 1e6:.1f} MB of weights)")
    state = graph.metadata.get("state")
    if state:
        print(f"state kept between calls is carried explicitly: {', '.join(s['input'] for s in state)} in, "
              f"{', '.join(s['output'] for s in state)} out; feed each call's outputs back as the next call's "
              "state, starting from the initial values (`tensorbridge inspect` shows them; docs/tflite.md)")
    if args.no_verify:
        return 0
    formats = (frameworks.detect(args.src, args.from_format), frameworks.detect(args.output, args.to, source=False))
    missing = frameworks.unrunnable(*formats)
    if missing:
        print(f"not verified: no runtime for {', '.join(missing)} on this machine")
        return 0
    memory, needed = _available_memory(), 2 * graph.weight_bytes()  # both runtimes hold the weights to verify
    if memory is not None and needed > memory:
        print(f"not verified: running source and result side by side needs about "
              f"{needed / 1e9:.1f} GB, this machine has {memory / 1e9:.1f} GB available; "
              f"run `tensorbridge verify {args.src} {args.output}` where there is room")
        return 0
    try:
        with progress.step("verifying"):
            report = tb.verify(args.src, args.output, inputs=args.inputs, input_shapes=shapes, rtol=args.rtol,
                               atol=args.atol, format=args.from_format, input_dtypes=kinds)
    except BaseException:  # unproven is not written (exit 2, or whatever stopped it), unless asked to keep it
        if not args.keep_failed:
            _remove(args.output)
            print(f"the conversion could not be verified: {args.output} was removed (--keep-failed keeps it, "
                  "--no-verify skips the check)", file=sys.stderr)
        raise
    print(report.summary())
    if _write_report(args, report, _plan(graph, args)):
        print(f"report: {args.report}")
    if not report.ok:
        if not args.keep_failed:
            _remove(args.output)
            print(f"the conversion did not verify: {args.output} was removed (--keep-failed keeps it)")
        return 1
    return 0 if report.proven else EXIT_INCONCLUSIVE


def _remove(path) -> None:
    import shutil
    from pathlib import Path

    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif p.exists():
        p.unlink()


def _write_report(args, report, layout_plan: dict | None = None) -> bool:
    if not getattr(args, "report", None):
        return False
    from tensorbridge.verification.html import write_report

    write_report(report, args.report, layout_plan)
    return True


def _plan(graph, args) -> dict | None:
    """The layout plan the conversion made (for the report), or None for a target without one."""
    from tensorbridge.ir.graph import clone
    from tensorbridge.passes.dce import eliminate_dead_code
    from tensorbridge.passes.layout import LayoutOptions, plan_layout

    if not args.report:
        return None
    fmt = frameworks.detect(args.output, args.to, source=False)
    try:
        target = frameworks.layout_target(fmt)
    except (TensorbridgeError, AttributeError):
        return None
    return plan_layout(eliminate_dead_code(clone(graph)), target, _layout(args) or LayoutOptions()).to_dict()


def cmd_inspect(args, progress: _Progress) -> int:
    import tensorbridge as tb
    from tensorbridge.ir import printer, serde

    with progress.step(f"loading {args.src}"):
        shapes, kinds = _input_specs(args.input_shape)
        graph = tb.load(args.src, format=args.from_format, input_shapes=shapes, input_dtypes=kinds)
    if args.layout_plan:
        return _print_layout_plan(graph, args, progress)
    if args.json:
        doc = {"summary": {"name": graph.name, "nodes": len(graph.nodes), "ops": graph.op_histogram(),
                           "inputs": [serde.value_to_json(v) for v in graph.inputs],
                           "outputs": [serde.value_to_json(v) for v in graph.outputs],
                           "weight_bytes": graph.weight_bytes()},
               "graph": serde.graph_to_json(graph, {})}
        print(json.dumps(doc, indent=1, default=str))
    else:
        print(printer.summary(graph))
        print()
        print(printer.print_graph(graph))
    return 0


def _print_layout_plan(graph, args, progress: _Progress) -> int:
    from tensorbridge import frameworks
    from tensorbridge.ir.graph import clone
    from tensorbridge.passes.dce import eliminate_dead_code
    from tensorbridge.passes.layout import LayoutOptions, plan_layout

    if not args.to:
        raise ModelError("--layout-plan needs --to FORMAT (the target whose layouts are planned for)")
    target = frameworks.layout_target(frameworks.by_name(args.to))
    with progress.step(f"planning layouts for {args.to}"):
        plan = plan_layout(eliminate_dead_code(clone(graph)), target, _layout(args) or LayoutOptions())
    print(json.dumps(plan.to_dict(), indent=1) if args.json else plan.describe())
    return 0


def cmd_verify(args, progress: _Progress) -> int:
    import tensorbridge as tb

    with progress.step(f"running {args.src} and {args.dst}"):
        report = tb.verify(args.src, args.dst, inputs=args.inputs, rtol=args.rtol, atol=args.atol,
                           seed=args.seed, input_shapes=_shapes(args.input_shape), per_layer=args.per_layer,
                           format=args.from_format, input_dtypes=_dtypes(args.input_shape))
    print(json.dumps(report.to_dict(), indent=1) if args.json else report.summary())
    if _write_report(args, report):
        print(f"report: {args.report}")
    return 1 if not report.ok else 0 if report.proven else EXIT_INCONCLUSIVE


def cmd_batch(args, progress: _Progress) -> int:
    from tensorbridge import batch
    from tensorbridge.batch.report import totals

    targets = [t.strip() for t in args.to.split(",") if t.strip()] if args.to else None
    for target in targets or ():
        frameworks.by_name(target)  # an unknown target is refused before anything runs
    records = batch.run(args.manifest, args.output, targets, args.ray, args.workers, progress=not progress.quiet)
    counts = totals(records)
    print(f"{len(records)} conversions: {', '.join(f'{n} {s}' for s, n in counts.items())}; "
          f"summary: {Path(args.output) / 'summary.html'}")
    return 0 if counts.get("pass", 0) == len(records) else 1


def cmd_transpile(args, progress: _Progress) -> int:
    from tensorbridge import transpile

    try:
        text = Path(args.src).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as e:
        raise ModelError(f"{args.src}: cannot read it as Python source ({e})") from None
    with progress.step(f"translating {args.src} to {args.to}"):
        out = transpile.transpile(text, to=args.to, cls=args.cls, filename=args.src)
    Path(args.output).write_text(out, encoding="utf-8")
    print(f"wrote {args.output}; carry trained weights over with tensorbridge.transpile.port_weights(src, dst)")
    return 0


def cmd_ops(args, progress: _Progress) -> int:
    from tensorbridge import support

    print(support.markdown() if args.markdown else support.text(args.from_fw, args.to_fw))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tensorbridge", description="Convert models between frameworks, "
                                "and prove the result computes the same function.")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    # the same two flags are accepted after the subcommand too
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--quiet", "-q", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", required=True)

    source = argparse.ArgumentParser(add_help=False)
    source.add_argument("--from", dest="from_format", metavar="FORMAT",
                        help="the source's format, where its content and extension do not tell "
                             f"({', '.join(f.name for f in frameworks.FORMATS if f.loader)})")
    source.add_argument("--trust-code", action="store_true",
                        help="allow sources that are code (a generated code folder, a TorchScript archive): "
                             "loading them runs the code they hold")
    source.add_argument("--input-shape", action="append", metavar="NAME=d0,d1,...[:dtype]",
                        help="fix or name an input's dims (repeatable); a TorchScript source needs every input's, "
                             "with :int64 (or another dtype) for inputs other than float32 (NAME=:int64: a scalar)")

    c = sub.add_parser("convert", help="convert SRC into another format", parents=[common, source])
    c.add_argument("src")
    c.add_argument("-o", "--output", required=True, help="destination file (format from its extension)")
    c.add_argument("--to", help=f"output format ({', '.join(f.name for f in frameworks.FORMATS if f.saver)}); "
                   "default: from the extension")
    c.add_argument("--fp16", action="store_true", help="tflite: store weights as float16")
    c.add_argument("--quant-format", choices=["qdq", "qlinear"], default="qdq",
                   help="onnx: quantized ops as QuantizeLinear/DequantizeLinear pairs around float ops (qdq), "
                        "or as QLinearConv/QLinearMatMul where onnxruntime has them (qlinear)")
    c.add_argument("--int-arithmetic", choices=["source", "float"], default="source",
                   help="onnx, torch: a .tflite's quantized Add and Mean in LiteRT's integer arithmetic, bit-exact "
                        "with it (source), or as plain dequantize -> float op -> quantize (float)")
    c.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)  # the default; kept for old scripts
    c.add_argument("--no-verify", action="store_true",
                   help="do not run SRC and the result to compare them (by default they are, where both "
                        "runtimes are installed)")
    c.add_argument("--inputs", metavar="FILE.npz", help="verify on these inputs, by name (default: seeded random; "
                   "give them where only some values are valid, such as a sample rate)")
    c.add_argument("--keep-failed", action="store_true", help="keep the output when verification fails")
    c.add_argument("--report", metavar="REPORT.html", help="also write the verification as a self-contained HTML page")
    c.add_argument("--rtol", type=float)
    c.add_argument("--atol", type=float)
    _layout_flags(c)
    c.set_defaults(func=cmd_convert)

    i = sub.add_parser("inspect", help="print the IR, op histogram, inputs and outputs", parents=[common, source])
    i.add_argument("src")
    i.add_argument("--json", action="store_true")
    i.add_argument("--layout-plan", action="store_true",
                   help="show the layout plan for --to FORMAT: each op's layout and every transpose left, with why")
    i.add_argument("--to", metavar="FORMAT", help="with --layout-plan: the target format")
    _layout_flags(i)
    i.set_defaults(func=cmd_inspect)

    v = sub.add_parser("verify", help="run two models on the same inputs and compare", parents=[common, source])
    v.add_argument("src")
    v.add_argument("dst")
    v.add_argument("--inputs", metavar="FILE.npz", help="inputs by name (default: seeded random)")
    v.add_argument("--rtol", type=float)
    v.add_argument("--atol", type=float)
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--per-layer", action="store_true",
                   help="also compare every intermediate value and name the first op that diverges")
    v.add_argument("--json", action="store_true")
    v.add_argument("--report", metavar="REPORT.html", help="also write a self-contained HTML page (with --per-layer, "
                                                           "the error curve along the graph)")
    v.set_defaults(func=cmd_verify)

    o = sub.add_parser("ops", help="the support matrix (which formats read and write each op)", parents=[common])
    o.add_argument("--from", dest="from_fw", metavar="FW")
    o.add_argument("--to", dest="to_fw", metavar="FW")
    o.add_argument("--markdown", action="store_true")
    o.set_defaults(func=cmd_ops)

    t = sub.add_parser("transpile", help="translate model code: PyTorch nn.Module classes into Keras 3 or Flax NNX "
                       "code, Keras layers into PyTorch code, Flax NNX modules into PyTorch or Keras code "
                       "(docs/transpile.md)", parents=[common])
    t.add_argument("src", help="a Python module with model classes")
    t.add_argument("--to", required=True, choices=list(TRANSPILE_TARGETS), help="the target framework")
    t.add_argument("-o", "--output", required=True, help="the translated module (.py)")
    t.add_argument("--class", dest="cls", metavar="NAME", help="only this class and what it uses")
    t.set_defaults(func=cmd_transpile)

    b = sub.add_parser("batch", help="convert and verify every model of a manifest (docs/batch.md)", parents=[common])
    b.add_argument("manifest", help="YAML or JSON manifest, or a text file with one source path per line")
    b.add_argument("-o", "--output", required=True, help="folder for the models, logs and summary")
    b.add_argument("--to", help="targets, comma-separated (default: the manifest's)")
    b.add_argument("--ray", metavar="ADDRESS", help="run on this Ray cluster (e.g. 127.0.0.1:6379) instead of a "
                                                     "local process pool")
    b.add_argument("--workers", type=int, help="local jobs at once (default: half the cores)")
    b.set_defaults(func=cmd_batch)
    return p


class _Escaped:
    """A text stream that shows control characters and Unicode format characters (ESC, CR, bidi overrides,
    zero-width marks) as escapes: a name in a model file cannot rewrite the user's terminal."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(escape(text))

    def __getattr__(self, name):
        return getattr(self.stream, name)


def escape(text: str) -> str:
    """`text` with every control or format character but newline and tab written as a Python escape."""
    import unicodedata

    if text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "".join(c if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf") else
                   ascii(c)[1:-1] for c in text)


@contextlib.contextmanager
def _escaped_output():
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaped(sys.stdout), _Escaped(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _quiet_frameworks():
    """The frameworks' own chatter off: TensorFlow's C++ logs, written to file descriptor 2 before its logging is
    set up, go to /dev/null while tensorbridge's messages keep the real stderr; their Python loggers and
    warnings are off too. Restored on exit (the command may run inside a longer process)."""
    import warnings

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name in ("tensorflow", "absl", "keras", "h5py", "jax", "torch", "onnx", "onnxruntime"):
        logging.getLogger(name).setLevel(logging.CRITICAL)  # their errors that matter reach us as exceptions
    saved_stderr = sys.stderr
    with warnings.catch_warnings():
        for module in ("keras", "tensorflow", "absl", "google.protobuf", "tflite", "ai_edge_litert", "jax", "flax"):
            warnings.filterwarnings("ignore", module=module)
        try:
            attached = sys.stderr.fileno() == 2
        except (AttributeError, OSError, ValueError):  # stderr is captured by the caller (a test, a notebook)
            attached = False
        if not attached:
            yield
            return
        real = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        sys.stderr = os.fdopen(os.dup(real), "w", buffering=1)
        try:
            yield
        finally:
            sys.stderr.flush()
            sys.stderr.close()
            os.dup2(real, 2)
            os.close(real)
            sys.stderr = saved_stderr


def _terminated(signum, _frame):
    """SIGTERM/SIGHUP end the command like Ctrl-C does, through every cleanup (staged output is removed)."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _terminated)
    args = build_parser().parse_args(argv)
    if args.debug:  # the IR checker runs after every pass of a backend's pipeline
        os.environ[CHECK_ENV] = "1"
    with contextlib.nullcontext() if args.debug else _quiet_frameworks(), _escaped_output():
        logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s", force=True)
        return _run(args)


def _run(args) -> int:
    from tensorbridge import trust

    try:
        with trust.trusting(getattr(args, "trust_code", False)):
            return args.func(args, _Progress(args.quiet))
    except TensorbridgeError as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - last resort: a short message instead of a traceback
        if args.debug:
            raise
        print(f"internal error: {type(e).__name__}: {e}\n(re-run with --debug for the traceback, "
              "and please report it)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
