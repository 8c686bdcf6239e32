"""A batch manifest: which sources to convert to which targets, with what options.

YAML or JSON:

    defaults: {targets: [onnx, torch], rtol: 1e-4, timeout: 600, memory_gb: 8}
    models:
      - source: zoo/*.onnx              # a path or a glob, relative to the manifest
        targets: [onnx, tflite]
        input_shapes: {x: [1, 3, 224, 224]}
      - zoo/resnet50.keras              # a bare path: the defaults

or a plain text file with one source path (or glob) per line (`#` starts a comment). Every (source, target) is
one `Job`; its key hashes the source's bytes, the options and the target, so a finished job is not redone.
"""

from __future__ import annotations

import glob
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from tensorbridge.errors import ModelError

#: options a model entry may set (the rest of an entry is refused, listing the unknown keys)
OPTIONS = ("targets", "input_shapes", "rtol", "atol", "timeout", "memory_gb", "format")
DEFAULTS = {"timeout": 900.0, "memory_gb": 8.0}


@dataclass(frozen=True)
class Job:
    source: str
    target: str
    options: dict = field(default_factory=dict, hash=False)
    key: str = ""

    @property
    def name(self) -> str:
        """A file-system-safe name for the source, unique per path."""
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(self.source).name)
        return f"{stem}-{hashlib.sha256(self.source.encode()).hexdigest()[:8]}"


def read(path: str | Path, targets: list[str] | None = None) -> list[Job]:
    """The jobs of a manifest; `targets` (from --to) replaces the manifest's default targets."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"cannot read the manifest {path}: {e}") from None
    data = _parse(text, path)
    defaults = {**DEFAULTS, **data.get("defaults", {})}
    if targets:
        defaults["targets"] = targets
    jobs, problems = [], []
    for i, entry in enumerate(data.get("models", [])):
        entry = {"source": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or "source" not in entry:
            problems.append(f"entry {i + 1}: give a path, or a mapping with `source`")
            continue
        unknown = sorted(set(entry) - {"source", *OPTIONS})
        if unknown:
            problems.append(f"entry {i + 1} ({entry['source']}): unknown keys {unknown} (known: {list(OPTIONS)})")
            continue
        options = {**defaults, **{k: v for k, v in entry.items() if k != "source"}}
        sources = _expand(str(entry["source"]), path.parent)
        if not sources:
            problems.append(f"entry {i + 1}: {entry['source']} matches no file")
        if not options.get("targets"):
            problems.append(f"entry {i + 1} ({entry['source']}): no targets (give --to, or targets in the manifest)")
            continue
        rest = {k: v for k, v in options.items() if k != "targets"}
        for source in sources:
            content = content_hash(Path(source))  # once per source: a large model's bytes are read once
            jobs += [Job(source, target, rest, _key(content, target, rest)) for target in options["targets"]]
    if problems:
        raise ModelError(f"the manifest {path} has problems:\n  " + "\n  ".join(problems))
    if not jobs:
        raise ModelError(f"the manifest {path} lists no models")
    return list({job.key: job for job in jobs}.values())


def _parse(text: str, path: Path) -> dict:
    stripped = text.lstrip()
    if path.suffix.lower() == ".json" or stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ModelError(f"the manifest {path} is not valid JSON: {e}") from None
    elif path.suffix.lower() in (".yaml", ".yml") or stripped.startswith(("models:", "defaults:")):
        try:
            import yaml
        except ImportError:
            raise ModelError("a YAML manifest needs PyYAML (pip install pyyaml), or write it as JSON") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ModelError(f"the manifest {path} is not valid YAML: {e}") from None
    else:
        lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
        data = {"models": [line for line in lines if line]}
    if not isinstance(data, dict) or not isinstance(data.get("models", []), list) or \
            not isinstance(data.get("defaults", {}), dict):
        raise ModelError(f"the manifest {path} must hold `models` (a list) and optionally `defaults` (a mapping)")
    return data


def _expand(pattern: str, base: Path) -> list[str]:
    full = Path(pattern) if Path(pattern).is_absolute() else base / pattern
    if glob.has_magic(str(full)):
        return sorted(str(Path(p).resolve()) for p in glob.glob(str(full)))
    return [str(full.resolve())] if full.exists() else []


def _key(content: str, target: str, options: dict) -> str:
    digest = hashlib.sha256()
    digest.update(content.encode())
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    digest.update(target.encode())
    return digest.hexdigest()[:20]


def content_hash(path: Path) -> str:
    """SHA-256 of a file, or of a folder's files (names and bytes, in order)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        digest.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        with open(f, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
