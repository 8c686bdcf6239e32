"""The fuzzing campaign: mutants of a seed model per source format, each run through `inspect` and `convert`.

    python -m tests.fuzz.campaign --mutants 1000 [--formats onnx,tbir,...] [--seed 0] [--doc]
    python -m tests.fuzz.campaign --from-results a.jsonl b.jsonl --doc   # parts run separately, one table
    python -m tests.fuzz.campaign --only tflite:462,h5:271                # re-run the mutants a run listed

Every run is classified; anything but `ok` is a failure of tensorbridge's promise (docs/security.md):

- ok: exit 0 with a valid output (onnx.checker's full check; onnxruntime loads it), or exit 2 with a message
  (exit 4, INCONCLUSIVE, with a valid output, is ok too)
- code execution: the mutant's payload ran (its marker file exists)
- crash: exit 3, a traceback, a signal
- hang: still running after `--timeout` seconds (20)
- memory: more than `--memory` GiB (4) of address space beyond the process's own
- partial output: a failed run left a file or a staging folder behind
- invalid output: exit 0 with a file that is not valid
- wrong: exit 1 (the conversion verified wrong)

Runs fork from a warm process per framework family (PyTorch/ONNX; TensorFlow), so a run costs the conversion,
not the imports; each child gets its own address-space limit, its output in a log file, and a time limit.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from tests.fuzz import mutate, seeds

ROOT = Path(__file__).resolve().parents[2]
BAD = ("code execution", "crash", "hang", "memory", "partial output", "invalid output", "wrong")


def run_family(family: str, cases: dict[str, list[int]], seed: int, timeout: float, memory_gib: float,
               work: Path, built: dict[str, Path]) -> list[dict]:
    """Run the mutants `cases` (format -> mutant numbers) of the family's seeds `built`; one record per run.
    This process only imports the frameworks (a TensorFlow that has run ops does not survive a fork)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import logging

    logging.disable(logging.WARNING)
    import tensorbridge.cli.main  # noqa: F401 - imported once here, before the children fork

    if family == "torch":
        import onnxruntime  # noqa: F401
        import torch  # noqa: F401
    else:
        import keras  # noqa: F401
        import tensorflow  # noqa: F401
    records = []
    for fmt, numbers in cases.items():
        for i in numbers:
            rng = random.Random(f"{seed}/{fmt}/{i}")
            case = work / f"{fmt}-{i}"
            case.mkdir()
            src = seeds.copy(built[fmt], case / built[fmt].name)
            marker = case / "PWNED"
            try:
                what = mutate.mutate(fmt, src, rng, marker) if i else "the seed itself"
            except Exception as e:  # noqa: BLE001 - a mutation that does not apply to this seed
                what = f"unmutated ({type(e).__name__})"
            for command in ("inspect", "convert"):
                record = run_one(fmt, command, src, case, marker, timeout, memory_gib)
                record.update(format=fmt, mutant=i, mutation=what)
                records.append(record)
            shutil.rmtree(case, ignore_errors=True)
        print(f"{family}/{fmt}: {len(numbers)} mutants done", file=sys.stderr, flush=True)
    return records


def run_one(fmt: str, command: str, src: Path, case: Path, marker: Path, timeout: float,
            memory_gib: float) -> dict:
    out_dir = case / f"out-{command}"
    out_dir.mkdir()
    log = case / f"{command}.log"
    argv = ["-q", command, str(src)]
    if command == "convert":
        argv += ["-o", str(out_dir / "out.onnx")]
    if fmt == "safetensors":
        argv.append("--trust-code")  # the folder's code is tensorbridge's own; its weights are the mutant
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        _child(argv, log, out_dir / "out.onnx", memory_gib)
    status, timed_out = _wait(pid, timeout)
    seconds = time.perf_counter() - started
    text = log.read_text(errors="replace") if log.exists() else ""
    result = _classify(status, timed_out, text, out_dir, expects_output=command == "convert")
    if marker.exists():
        result = "code execution"
    return {"command": command, "result": result, "seconds": round(seconds, 3),
            "message": _message(text)}


def _message(text: str) -> str:
    """The run's error line (the last line that says error), else its last line."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or [""])[-1][:400]


def _child(argv, log: Path, output: Path, memory_gib: float) -> None:
    """Run one command in the forked child and exit with its code (90: exit 0 but an invalid output)."""
    code = 70
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
        sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)
        limit = _address_space() + int(memory_gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        from tensorbridge.cli.main import main

        code = main(argv)
        if code in (0, 4) and argv[1] == "convert" and not _valid_onnx(output):
            code = 90
    except BaseException:  # noqa: BLE001 - anything escaping main is a crash; show it in the log
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _address_space() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _valid_onnx(path: Path) -> bool:
    import onnx

    try:
        onnx.checker.check_model(str(path), full_check=True)
        return True
    except onnx.shape_inference.InferenceError:
        import onnxruntime as ort

        try:
            ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            return True
        except Exception:  # noqa: BLE001
            return False
    except Exception:  # noqa: BLE001
        print(f"invalid output: {path}", file=sys.stderr)
        return False


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, False
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1], True
        time.sleep(0.01)


def _classify(status: int, timed_out: bool, text: str, out_dir: Path, expects_output: bool) -> str:
    if timed_out:
        return "hang"
    if "MemoryError" in text or "bad_alloc" in text or "Failed to allocate" in text:
        return "memory"
    if os.WIFSIGNALED(status) or "Traceback" in text:
        return "crash"
    code = os.WEXITSTATUS(status)
    left = list(out_dir.iterdir())
    if code in (0, 4):
        return "ok" if left or not expects_output else "crash"
    if left:
        return "partial output"
    if code == 2 and text.strip():
        return "ok"
    return {1: "wrong", 90: "invalid output"}.get(code, "crash")


def summarise(records: list[dict]) -> dict[str, dict[str, int]]:
    """format -> result -> runs."""
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in records:
        table[r["format"]][r["result"]] += 1
    return {fmt: dict(counts) for fmt, counts in table.items()}


def campaign(cases: dict[str, list[int]], seed: int = 0, timeout: float = 20, memory_gib: float = 4,
             work: Path | None = None) -> list[dict]:
    """Run the mutants `cases` (format -> mutant numbers), every family in its own process (a PyTorch process
    and a TensorFlow one never share a fork)."""
    import multiprocessing

    work = Path(work or tempfile.mkdtemp(prefix="tb-fuzz-"))
    families = collections.defaultdict(list)
    for fmt in cases:
        families[seeds.SEEDS[fmt][0]].append(fmt)
    records = []
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1, maxtasksperchild=1) as pool:  # a fresh process per task
        for family, fmts in families.items():
            (work / family).mkdir(parents=True, exist_ok=True)
            built = pool.apply(seeds.build, (work / family / "seeds", family))
            records += pool.apply(run_family, (family, {f: cases[f] for f in fmts}, seed, timeout, memory_gib,
                                               work / family, built))
    return records


def write_doc(summary: dict, mutants: int) -> None:
    import platform

    from benchmarks.common import replace_section

    classes = ["ok", *BAD]
    lines = ["", f"Measured {time.strftime('%Y-%m-%d')} by `make fuzz` ({mutants} mutants per format, each run "
             f"through `inspect` and `convert`, seed 0; {platform.machine()}, {os.cpu_count()} cores). Counts are "
             "runs.", "",
             "| format | " + " | ".join(classes) + " |", "|---" * (len(classes) + 1) + "|"]
    for fmt, counts in sorted(summary.items()):
        lines.append(f"| {fmt} | " + " | ".join(str(counts.get(c, 0)) for c in classes) + " |")
    replace_section(ROOT / "docs" / "security.md", "Campaign results", lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=1000)
    ap.add_argument("--formats", default=",".join(seeds.SEEDS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--memory", type=float, default=4, help="GiB of address space per run")
    ap.add_argument("--results", default="fuzz-results.jsonl")
    ap.add_argument("--doc", action="store_true", help="write the counts into docs/security.md")
    ap.add_argument("--from-results", nargs="+", metavar="FILE", help="summarise saved results instead of running")
    ap.add_argument("--only", metavar="FMT:N,...", help="run just these mutants (as a failing run lists them)")
    a = ap.parse_args()
    if a.from_results:
        records = [json.loads(line) for path in a.from_results for line in open(path)]
    else:
        records = campaign(_cases(a), a.seed, a.timeout, a.memory)
        with open(a.results, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    summary = summarise(records)
    print(json.dumps(summary, indent=1))
    if a.doc:
        write_doc(summary, max(r["mutant"] for r in records) + 1)
    bad = [r for r in records if r["result"] in BAD]
    for r in bad[:30]:
        print(f"{r['result']}: {r['format']}:{r['mutant']} {r['command']} ({r['mutation']}): {r['message']}")
    return 1 if bad else 0


def _cases(a) -> dict[str, list[int]]:
    if not a.only:
        return {fmt: list(range(a.mutants)) for fmt in a.formats.split(",")}
    cases = collections.defaultdict(list)
    for item in a.only.split(","):
        fmt, _, number = item.partition(":")
        cases[fmt].append(int(number))
    return dict(cases)


if __name__ == "__main__":
    sys.exit(main())
