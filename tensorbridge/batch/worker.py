"""One batch job, in its own process: convert, verify, write the result.

    python -m tensorbridge.batch.worker JOB.json RESULT.json

`execute(job, outdir)` is the parent side: it starts that process (killed with its parent, in its own process
group), enforces the job's time and memory limits, and turns whatever happened into a result record:
pass / wrong (verified, outputs differ) / refused (tensorbridge declined, with its reason) / crash (the process
died or erred internally) / timeout, and unverified when this machine has no runtime for the source or target.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tensorbridge.batch.manifest import Job

POLL_SECONDS = 0.2
PAGE = os.sysconf("SC_PAGE_SIZE")


def destination(job: Job, outdir: Path) -> Path:
    """Where a job writes its converted model: a file with the target's extension, or a code folder."""
    from tensorbridge import frameworks

    fmt = frameworks.by_name(job.target)
    folder = outdir / "models" / job.name / job.target
    return folder if fmt.folder_marker else folder / f"model{fmt.extensions[0]}"


def execute(job: Job, outdir: Path) -> dict:
    """Run `job` in a child process under its limits; its result record."""
    outdir = Path(outdir)
    work = outdir / "jobs"
    logs = outdir / "logs"
    work.mkdir(parents=True, exist_ok=True)
    logs.mkdir(parents=True, exist_ok=True)
    spec, result_path = work / f"{job.key}.job.json", work / f"{job.key}.out.json"
    result_path.unlink(missing_ok=True)
    spec.write_text(json.dumps({"source": job.source, "target": job.target, "options": job.options,
                                "dest": str(destination(job, outdir))}))
    log = logs / f"{job.name}.{job.target}.log"
    timeout, memory = float(job.options["timeout"]), float(job.options["memory_gb"]) * 2**30
    scratch = work / f"{job.key}.tmp"  # the job's temporary files, removed however it ends (a killed job's too)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    start = time.perf_counter()
    try:
        with open(log, "w") as out:
            child = subprocess.Popen([sys.executable, "-m", "tensorbridge.batch.worker", str(spec), str(result_path)],
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_die_with_parent, env={**os.environ, "TMPDIR": str(scratch)})
            status = _watch(child, timeout, memory)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = round(time.perf_counter() - start, 2)
    record = {"source": job.source, "target": job.target, "key": job.key, "seconds": seconds,
              "max_rel_error": None, "reason": "", "log": str(log.relative_to(outdir))}
    if status is not None:
        return {**record, "status": status[0], "reason": status[1]}
    if result_path.is_file():
        return {**record, **json.loads(result_path.read_text()), "seconds": seconds}
    return {**record, "status": "crash", "reason": _last_line(log) or f"the worker ended with code {child.returncode}"}


def _die_with_parent() -> None:
    """The job's process ends when the process that started it does (a Ray worker killed mid-run)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _watch(child: subprocess.Popen, timeout: float, memory: float) -> tuple[str, str] | None:
    """Wait for the child; (status, reason) when it had to be stopped."""
    deadline = time.monotonic() + timeout
    while child.poll() is None:
        if time.monotonic() > deadline:
            _kill(child)
            return "timeout", f"did not finish in {timeout:.0f} s"
        if _resident(child.pid) > memory:
            _kill(child)
            return "crash", f"used more than {memory / 2**30:.1f} GiB of memory"
        time.sleep(POLL_SECONDS)
    return None


def _kill(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _resident(group: int) -> int:
    """Resident bytes of the processes of a process group (the job and whatever it started)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) != group:
                continue
            total += int((entry / "statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
    return total


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


# -- the child ----------------------------------------------------------------------------------------------
def run(spec: dict) -> dict:
    """Convert and verify one job in this process; its status, reason and largest relative error."""
    import tensorbridge as tb
    from tensorbridge import frameworks
    from tensorbridge.errors import TensorbridgeError, UnsupportedError

    options = spec["options"]
    source, dest = spec["source"], Path(spec["dest"])
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        tb.save(tb.load(source, format=options.get("format"), input_shapes=options.get("input_shapes")), dest,
                to=spec["target"])
        formats = (frameworks.detect(source, options.get("format")),
                   frameworks.detect(dest, spec["target"], source=False))
        missing = frameworks.unrunnable(*formats)
        if missing:
            return {"status": "unverified", "reason": "no runtime for " + "; ".join(missing)}
        report = tb.verify(source, dest, rtol=options.get("rtol"), atol=options.get("atol"),
                           input_shapes=options.get("input_shapes"), format=options.get("format"))
    except UnsupportedError as e:
        return {"status": "refused", "reason": _short(e)}
    except TensorbridgeError as e:
        return {"status": "refused" if e.exit_code == 2 else "crash", "reason": _short(e)}
    except Exception as e:  # noqa: BLE001 - an internal error is this job's crash, reported with its type
        return {"status": "crash", "reason": f"internal error: {type(e).__name__}: {str(e)[:200]}"}
    worst = max((o.robust_rel for o in report.outputs), default=0.0)
    failing = [f"{o.name}: {o.problem or f'max|d|/max|y| = {o.robust_rel:.3g}'}" for o in report.outputs if not o.ok]
    return {"status": "pass" if report.ok else "wrong", "max_rel_error": worst, "reason": "; ".join(failing)[:300]}


def _short(e: Exception) -> str:
    return " ".join(str(e).split())[:300]


def main(argv: list[str]) -> int:
    spec_path, result_path = argv
    spec = json.loads(Path(spec_path).read_text())
    result = run(spec)
    staged = Path(result_path).with_suffix(".tmp")
    staged.write_text(json.dumps(result))
    os.replace(staged, result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
