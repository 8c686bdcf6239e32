"""Lint of generated code: ruff with the project's line length, import order and whitespace rules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

RUFF = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))


def ruff_check(folder) -> subprocess.CompletedProcess:
    cmd = [RUFF, "check", "--isolated", "--line-length", "120", "--extend-select", "E501,W,I", str(folder)]
    return subprocess.run(cmd, capture_output=True, text=True)
