"""`tensorbridge batch`: convert and verify a whole model zoo, on a local process pool or a Ray cluster.

Each (source, target) of the manifest (batch/manifest.py) runs in its own process under a time and memory limit
(batch/worker.py). Finished jobs are kept in OUTDIR/results/<key>.json, so a rerun does only what is missing or
changed; the summary is written as OUTDIR/summary.json and OUTDIR/summary.html (batch/report.py). On Ray, a job
whose worker dies is retried by Ray (each job's result is recorded once); OUTDIR must be on a file system every
node shares.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from tensorbridge.batch import manifest, report
from tensorbridge.batch.worker import execute
from tensorbridge.errors import ModelError

#: times Ray runs a job again when the worker running it dies
RAY_RETRIES = 3


def run(manifest_path, outdir, targets: list[str] | None = None, ray_address: str | None = None,
        workers: int | None = None, progress: bool = True) -> list[dict]:
    """Run every job of the manifest not finished before; every job's record (also written to OUTDIR)."""
    jobs = manifest.read(manifest_path, targets)
    outdir = Path(outdir).resolve()  # Ray workers do not share the driver's working directory
    results = outdir / "results"
    results.mkdir(parents=True, exist_ok=True)
    done = {job.key: json.loads((results / f"{job.key}.json").read_text()) for job in jobs
            if (results / f"{job.key}.json").is_file()}
    todo = [job for job in jobs if job.key not in done]
    bar = Progress(len(jobs), len(done), enabled=progress)
    for record in (_on_ray(todo, outdir, ray_address) if ray_address else _locally(todo, outdir, workers)):
        staged = results / f"{record['key']}.tmp"
        staged.write_text(json.dumps(record))
        os.replace(staged, results / f"{record['key']}.json")
        done[record["key"]] = record
        bar.update(record)
    bar.close()
    records = [done[job.key] for job in jobs]
    report.write(records, outdir)
    return records


def _locally(jobs, outdir: Path, workers: int | None):
    with ThreadPoolExecutor(max_workers=workers or max(1, (os.cpu_count() or 2) // 2)) as pool:
        for future in as_completed([pool.submit(execute, job, outdir) for job in jobs]):
            yield future.result()


def _on_ray(jobs, outdir: Path, address: str):
    try:
        import ray
    except ImportError:
        raise ModelError("--ray needs Ray on this machine (pip install 'tensorbridge[ray]')") from None
    try:
        ray.init(address=address, log_to_driver=False, ignore_reinit_error=True)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ModelError(f"cannot join the Ray cluster at {address}: {e}") from None
    remote = ray.remote(num_cpus=1, max_retries=RAY_RETRIES)(execute)
    pending = {remote.remote(job, str(outdir)): job for job in jobs}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(ready[0])
            try:
                yield ray.get(ready[0])
            except ray.exceptions.RayError as e:  # the job's workers died more often than Ray retries
                yield {"source": job.source, "target": job.target, "key": job.key, "status": "crash",
                       "seconds": None, "max_rel_error": None, "reason": f"Ray: {type(e).__name__}"}
    finally:
        ray.shutdown()


class Progress:
    """A one-line progress bar on a terminal (a line per job otherwise)."""

    def __init__(self, total: int, done: int, enabled: bool = True):
        self.total, self.done, self.enabled = total, done, enabled
        self.counts: dict[str, int] = {}
        self.start = time.perf_counter()
        self.tty = sys.stderr.isatty()
        if enabled and done:
            print(f"{done} of {total} jobs already done (kept from an earlier run)", file=sys.stderr)

    def update(self, record: dict) -> None:
        self.done += 1
        self.counts[record["status"]] = self.counts.get(record["status"], 0) + 1
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // self.total
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts.items()))
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} ({counts}) "
                f"{Path(record['source']).name} -> {record['target']}: {record['status']}")
        print(f"\r{line[:150]:<150}" if self.tty else line, end="" if self.tty else "\n", file=sys.stderr,
              flush=True)

    def close(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr)
        if self.enabled:
            print(f"done in {time.perf_counter() - self.start:.1f} s", file=sys.stderr)
