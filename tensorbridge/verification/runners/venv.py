"""Runtimes kept out of the main venv (`make runtimes` builds them under the runtime cache), run as child
processes that exchange npz files with the runner."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tensorbridge.errors import ModelError


def runtime_path(env_var: str, *parts: str) -> Path:
    """A runtime's folder: `env_var` when set, else under $XDG_CACHE_HOME/tensorbridge/runtimes."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(os.environ.get(env_var, cache.joinpath("tensorbridge", "runtimes", *parts)))


class Venv:
    """A framework's own venv: `package` importable from it, `setup` says how to make it."""

    def __init__(self, path: Path, package: str, framework: str, setup: str):
        self.path, self.package, self.framework, self.setup = path, package, framework, setup

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def missing(self) -> str | None:
        """Why the framework cannot run here (None: it can)."""
        if not self.python.is_file() or not list((self.path / "lib").glob(f"python3*/site-packages/{self.package}/"
                                                                          "__init__.py")):
            return f"the {self.framework} venv is not set up; {self.setup}"
        return None

    def run(self, args: list[str], model: str, seconds: int, env: dict | None = None) -> None:
        """The venv's python on `args`; its failure (or running past `seconds`) is a clean error naming
        `model` and the child's last error line."""
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"), **(env or {})}
        try:
            done = subprocess.run([str(self.python), *args], capture_output=True, text=True, errors="replace",
                                  timeout=seconds, env=env)
        except subprocess.TimeoutExpired:
            raise ModelError(f"{self.framework} did not finish running {model} in {seconds} s") from None
        if done.returncode:
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            error = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "")
            raise ModelError(f"{self.framework} could not run {model}: {error[:400]}")
